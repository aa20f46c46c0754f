#!/usr/bin/env bash
# make bench's `remote` rows (run.sh calls it): far memory on a memcached server on loopback
# (--far memcached:) against the floor measured in the same runs on the same server (mcfloor.c):
# a re-fetch all-in against one 4 KiB get round trip, eviction batched against one set per page,
# the encryption's share per page; and the floor of items holding 16 pages each (not what the runtime
# does). Prints its table on stdout; times are never pass/fail.
# Environment (from run.sh): ROOT, B (build dir), FLTRACE, BENCH_BIN, RUNS, TMP, FS_MB, TIMEOUT.
set -u
say() { printf '%s\n' "$*" >&2; }
MC="python3 $ROOT/test/memcached.py"
if ! command -v memcached > /dev/null; then
	say "bench: remote: memcached is not installed (deps.sh installs it); skipped"
	exit 0
fi
cc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -I"$ROOT/inc" -o "$BENCH_BIN/mcfloor" \
	"$ROOT/test/bench/mcfloor.c" "$ROOT/src/common/memcache.c" -lsodium || exit 1
dir=$TMP/remote.d
mkdir -p "$dir"
trap '$MC stop "$dir/mc"' EXIT
srv=$($MC start "$dir/mc" 1 -m 4096) || exit 1
L=$((FS_MB / 4))

stat_of() { tail -1 "$1"/fltrace-data-stats-*.out | tr , '\n' | sed -n "s/^$2://p" | head -1; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

: > "$dir/rows"
for ((r = 1; r <= RUNS; r++)); do
	say "bench: remote run $r/$RUNS (fillscan $FS_MB MB at -L $L, mcfloor against $srv)"
	"$BENCH_BIN/mcfloor" "$srv" 4096 3 > "$dir/floor" || { say "bench: remote: mcfloor failed"; exit 1; }
	for far in mem "memcached:$srv"; do
		out=$dir/run-${far%%:*}
		rm -rf "$out"
		t0=$(date +%s.%N)
		timeout "$TIMEOUT" "$FLTRACE" record -L "$L" -M 1024 --policy fifo --far "$far" -o "$out" -- \
			"$B/progs/fillscan" "$FS_MB" 3 > "$out.stdout" 2> "$out.stderr" || say "bench: remote: $far run failed"
		t1=$(date +%s.%N)
		echo "$far $(echo "$t1 - $t0" | bc)" >> "$dir/times"
	done
	m=$dir/run-memcached
	gets=$(stat_of "$m" far_gets) puts=$(stat_of "$m" far_puts)
	tget=$(stat_of "$m" t_far_get_ns) tput=$(stat_of "$m" t_far_put_ns) tseal=$(stat_of "$m" t_far_seal_ns)
	refetch=$(stat_of "$m" faults_refetch)
	tmc=$(awk '$1 ~ /^memcached/ { t = $2 } END { print t }' "$dir/times")
	tmem=$(awk '$1 == "mem" { t = $2 } END { print t }' "$dir/times")
	awk -v f="$dir/floor" -v gets="$gets" -v puts="$puts" -v tget="$tget" -v tput="$tput" -v tseal="$tseal" \
		-v refetch="$refetch" -v tmc="$tmc" -v tmem="$tmem" 'BEGIN {
		while ((getline l < f) > 0) { split(l, a, " "); fl[a[1]] = a[2] }
		get_all = tget / gets / 1000; put_page = tput / puts / 1000; seal_page = tseal / (gets + puts) / 1000
		printf "%s %s %s %s %s %s %s %s %s %s %s %s %s %s\n", fl["get"], get_all, fl["batched"], fl["single"], put_page,
			fl["seal"], fl["open"], seal_page, 100 * tseal / (tget + tput), (tmc - tmem) * 1e6 / refetch,
			fl["getmean"], fl["packed"], fl["getpacked"], fl["lanes"]
	}' >> "$dir/rows"
done
col() { awk -v c="$1" '{ print $c }' "$dir/rows" | median; }
get=$(col 1) get_all=$(col 2) batched=$(col 3) single=$(col 4) put_page=$(col 5)
seal=$(col 6) open=$(col 7) seal_page=$(col 8) share=$(col 9) extra=$(col 10) getmean=$(col 11)
packed=$(col 12) getpacked=$(col 13) lanes=$(col 14)
awk -v lanes="$lanes" -v packed="$packed" -v getpacked="$getpacked" -v get="$get" -v get_all="$get_all" -v batched="$batched" -v single="$single" -v put_page="$put_page" -v getmean="$getmean" \
	-v seal="$seal" -v open="$open" -v seal_page="$seal_page" -v share="$share" -v extra="$extra" \
	-v runs="$RUNS" -v mb="$FS_MB" 'BEGIN {
	printf "\nremote: --far memcached: on one server on loopback, fillscan %d MB at a quarter, medians of %d runs\n", mb, runs
	printf "  re-fetch  %8.1f us from the server all in, mean (get round trip, opening, dispatch) / %.1f us one 4 KiB get round trip, mean = %.2fx (goal <= 1.5); against the get'"'"'s median %.1f us: %.2fx\n", get_all, getmean, get_all / getmean, get, get_all / get
	printf "            %8.1f us per re-fetch fault more than --far mem, all in (its eviction share included)\n", extra
	printf "  eviction  %8.2f us per page batched (64 quiet sets + a no-op) / %.2f us one set and its answer per page: %.1fx (goal >= 10); as the runtime sends them, halves on two connections, %.2f us: %.1fx; in the run %.2f us per page written (sealed, sent, answered): %.1fx\n", batched, single, single / batched, lanes, single / lanes, put_page, single / put_page
	printf "  packing   %8.2f us per page if an item held 16 pages (4 per request; the runtime keeps a page per item) / %.2f one set per page: %.1fx; reading one page out of such an item %.1f us (median) against %.1f\n", packed, single, single / packed, getpacked, get
	printf "  seal      %8.2f us per page sealed, %.2f opened (mcfloor, the AEAD the runtime picks); in the run %.2f us per page = %.1f%% of the backend'"'"'s time\n", seal, open, seal_page, share
}'
