# record --alloc-sample / report --by alloc / visualize: faults by the allocation site of the memory
# they hit, on a program with three objects made at known lines and touched in known proportions.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_allocs "userfaultfd is not available to this user"
	exit 0
fi

# row_of CSV SITE_SUFFIX COLUMN: a column (by header name) of the report row whose alloc_site ends so
row_of() {
	awk -F, -v site="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ n = length(site); if (substr($1, length($1) - n + 1) == site) { print $c[col]; exit } }' "$1"
}

prog=$PROGS/allocsites
# Ample memory: every page of each object is touched first once (a, b with memset, c by a scan).
# the traced run (the second) leaves the pages each object spans in $ALLOCSITES_SPANS
export ALLOCSITES_SPANS=$TMP/spans
if same_output allocs_ample "-L 64 -M 512" "$prog" 1; then
	dir=$TMP/allocs_ample
	read -r pa pb pc < "$ALLOCSITES_SPANS"
	"$FLTRACE" report -i "$dir" --by alloc > /dev/null 2> "$dir/rerr"
	csv=$dir/fltrace-data-report-alloc-all.out
	got="$(row_of "$csv" allocsites.c:50 kind) $(row_of "$csv" allocsites.c:50 zero) $(row_of "$csv" allocsites.c:50 bytes)"
	expect_eq allocs_malloc_line "malloc at allocsites.c:50: kind, first touches, bytes" "malloc $pa 8388608" "$got"
	got="$(row_of "$csv" allocsites.c:51 kind) $(row_of "$csv" allocsites.c:51 zero) $(row_of "$csv" allocsites.c:51 bytes)"
	expect_eq allocs_mmap_line "mmap at allocsites.c:51" "mmap $pb 4194304" "$got"
	got="$(row_of "$csv" allocsites.c:52 kind) $(row_of "$csv" allocsites.c:52 zero) $(row_of "$csv" allocsites.c:52 objects)"
	expect_eq allocs_calloc_line "calloc at allocsites.c:52 (its first 2 MB scan: 512 pages)" "malloc 512 1" "$got"
	# the code that faulted on each object: the program's memset lines and the scan, not libc
	got="$(row_of "$csv" allocsites.c:50 fault_code | sed 's/@.*\//@/') $(row_of "$csv" allocsites.c:52 fault_code | sed 's/@.*\//@/')"
	expect_eq allocs_fault_lines "faulting lines of a and c" "$pa@allocsites.c:55 512@allocsites.c:24" "$got"
	# -o FILE takes the CSV (and - sends it to stdout); --raw and --files are refused with it
	"$FLTRACE" report -i "$dir" --by alloc -o "$dir/alloc.csv" > /dev/null 2>&1
	if cmp -s "$csv" "$dir/alloc.csv" && "$FLTRACE" report -i "$dir" --by alloc -o - 2> /dev/null |
		cmp -s "$csv" -; then
		pass allocs_output_option
	else
		fail allocs_output_option "--by alloc -o FILE / -o - did not write the CSV it writes by default"
	fi
	"$FLTRACE" report -i "$dir" --by alloc --raw > /dev/null 2> "$dir/rawerr"
	expect_eq allocs_raw_refused "--by alloc --raw: exit status and message" \
		"2 1" "$? $(grep -c -- '--by alloc groups by allocation site only' "$dir/rawerr")"
	top=$("$FLTRACE" report -i "$dir" --by alloc --top 3 2>&1)
	if printf '%s\n' "$top" | sed -n 3p | grep -q "allocsites.c:50 (malloc)" &&
		printf '%s\n' "$top" | sed -n 4p | grep -q "allocsites.c:51 (mmap)"; then
		pass allocs_top_order
	else
		fail allocs_top_order "rows not in fault order: $top"
	fi
	if "$FLTRACE" visualize -i "$dir" > /dev/null 2>&1 &&
		xmllint --noout "$dir"/fltrace-data-flamegraph-allocsite-*.svg 2> /dev/null &&
		grep -q 'allocsites.c:51 (1024 faults' "$dir"/fltrace-data-flamegraph-allocsite-*.svg; then
		pass allocs_flamegraph
	else
		fail allocs_flamegraph "no well-formed allocation-site flamegraph with the mmap's 1024 faults"
	fi
fi

# -L 1 with fifo: every touch after the first re-fetches (each scan touches more pages than fit),
# so the re-fetches are in the program's proportions: a 1 scan, b 2, c 3 per pass, 2 passes.
if same_output allocs_small "-L 1 -M 512 --policy fifo" "$prog" 2; then
	dir=$TMP/allocs_small
	"$FLTRACE" report -i "$dir" --by alloc > /dev/null 2>&1
	csv=$dir/fltrace-data-report-alloc-all.out
	got="$(row_of "$csv" allocsites.c:50 refetch) $(row_of "$csv" allocsites.c:51 refetch) $(row_of "$csv" allocsites.c:52 refetch)"
	expect_eq allocs_refetch_proportions "re-fetches of a, b, c" "4096 4096 3072" "$got"
	# the allocation-site flamegraph tells each faulting line's own faults, not its site's: b's
	# memset wrote its 1024 pages first; c's scan read 512 first and re-fetched 3072
	"$FLTRACE" visualize -i "$dir" > /dev/null 2>&1
	leaf() { cat "$dir"/fltrace-data-flamegraph-allocsite-*.svg 2> /dev/null | grep -o "allocsites.c:$1 ([^<]*" |
		sed 's/.*ends here: //' | grep -F "$2"; }
	got="$(leaf 56 write)|$(leaf 24 'zero/read')"
	expect_eq allocs_flamegraph_kinds "allocation-site leaves of b's memset and c's scan: kind/access counts" \
		"zero/write 1024 (100.00%)|zero/read 512 (14.29%), refetch/read 3072 (85.71%)" "$got"
fi

# Sampling of small allocations: off records none, 1 byte records every one.
same_output allocs_sample_off "-L 64 -M 512 --alloc-sample off" "$prog" 1 &&
	expect_stat allocs_sample_off_none "$TMP/allocs_sample_off" allocs_sampled -eq 0
same_output allocs_sample_all "-L 64 -M 512 --alloc-sample 1" "$prog" small 20000 &&
	expect_stat allocs_sample_all_every "$TMP/allocs_sample_all" allocs_sampled -ge 20000
# the default: one sample per 512 KB on average; 20000 x 100 B is 2 MB (a handful, never thousands)
same_output allocs_sample_default "-L 64 -M 512" "$prog" small 20000 &&
	expect_stat allocs_sample_default_few "$TMP/allocs_sample_default" allocs_sampled -lt 200
expect_error allocs_sample_bad 2 "alloc-sample" "$FLTRACE" record -L 16 -M 64 --alloc-sample 12Q -- /bin/true

# A mapping made through mmap64 (what a program built with _FILE_OFFSET_BITS=64 calls: python3.11's
# object arenas come this way, and the earlier fltrace, which wraps mmap alone, leaves them untraced)
# is traced like any other: its 1024 pages are 1024 first touches on its line's allocation.
m64=$PROGS/mmap64
if ! nm -D "$m64" 2> /dev/null | grep -q ' U mmap64@'; then
	fail allocs_mmap64 "$m64 does not call mmap64 (nm -D): the case would prove nothing"
elif same_output allocs_mmap64_run "-L 64 -M 512" "$m64"; then
	dir=$TMP/allocs_mmap64_run
	"$FLTRACE" report -i "$dir" --by alloc > /dev/null 2>&1
	line=$(grep -n 'MAP64' "$ROOT/test/progs/mmap64.c" | cut -d: -f1)
	csv=$dir/fltrace-data-report-alloc-all.out
	got="$(row_of "$csv" "mmap64.c:$line" kind) $(row_of "$csv" "mmap64.c:$line" zero) $(row_of "$csv" "mmap64.c:$line" count) $(row_of "$csv" "mmap64.c:$line" bytes)"
	expect_eq allocs_mmap64 "mmap64 at mmap64.c:$line: kind, first touches, faults, bytes" "mmap 1024 1024 4194304" "$got"
fi

# Small objects by default: the first allocation placed on each heap page is recorded, so the
# faults of 20000 x 100 B (at least 488 pages of data) go to the line that allocated them, not to
# [no recorded allocation] (without it: a handful of sampled objects' pages).
sm=$(src_line allocsites.c SMALL-MALLOC); ss=$(src_line allocsites.c SMALL-SET)
if same_output allocs_small_pages "" "$prog" small 20000; then
	dir=$TMP/allocs_small_pages
	"$FLTRACE" report -i "$dir" --by alloc -o "$dir/a.csv" > /dev/null 2>&1
	z=$(row_of "$dir/a.csv" "allocsites.c:$sm" zero)
	at=$(row_of "$dir/a.csv" "allocsites.c:$sm" fault_code | sed 's/^[0-9]*@.*\///; s/<\/\/>.*//')
	if [ "${z:-0}" -ge 488 ] && [ "$at" = "allocsites.c:$ss" ]; then pass allocs_small_by_page
	else fail allocs_small_by_page "allocsites.c:$sm has ${z:-no} first touches (want >= 488), faulted at '$at'"; fi
	expect_stat allocs_small_page_count "$dir" allocs_page -ge 488
fi
# The same program stripped: the site is the program's call, object+offset, never libc's start-up.
cp "$prog" "$TMP/allocsites-stripped" && strip "$TMP/allocsites-stripped"
if same_output allocs_stripped "" "$TMP/allocsites-stripped" small 20000; then
	dir=$TMP/allocs_stripped
	"$FLTRACE" report -i "$dir" --by alloc -o "$dir/a.csv" > /dev/null 2>&1
	site=$(awk -F, 'NR == 2 { print $1 }' "$dir/a.csv")
	case "$site" in
	allocsites-stripped+0x*) pass allocs_stripped_site ;;
	*) fail allocs_stripped_site "biggest site is '$site', not the program's call" ;;
	esac
	expect_eq allocs_no_libc_start "no site in libc's start-up" "" \
		"$(awk -F, 'NR > 1 && $1 ~ /libc-start/' "$dir/a.csv")"
fi

# Real programs, default options: at most 10% of their faults on no recorded allocation.
# no_alloc_share NAME: per mille of the faults in the [no recorded allocation] row of run NAME
no_alloc_share() {
	"$FLTRACE" report -i "$TMP/$1" --by alloc -o "$TMP/$1/a.csv" > /dev/null 2>&1
	python3 - "$TMP/$1/a.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
total = sum(int(r["count"]) for r in rows)
none = sum(int(r["count"]) for r in rows if r["alloc_site"] == "[no recorded allocation]")
print(none * 1000 // total if total else 1000)
PY
}
W=$TMP/work; mkdir -p "$W"
cat > "$W/t.sql" <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30000)
  INSERT INTO t SELECT x, (x * 2654435761) % 1000003, printf('%064d', x * 7919) FROM c;
CREATE INDEX tk ON t(k);
SELECT count(*), sum(k) FROM t WHERE k % 7 = 3;
SQL
awk 'BEGIN { x = 12345; for (i = 0; i < 60000; i++) { x = (x * 16807) % 2147483647; printf "%010d %028d\n", x, i } }' > "$W/lines"
real_case() { # NAME CMD...: the run's output as native, and at most 10% unattributed
	local name=$1; shift
	if ! command -v "$1" > /dev/null; then skip "$name" "$1 not installed (deps.sh)"; return; fi
	same_output "$name" "" "$@" || return
	local pm; pm=$(no_alloc_share "$name")
	if [ "$pm" -le 100 ]; then pass "${name}_attributed"
	else fail "${name}_attributed" "$pm per mille of the faults on no recorded allocation (at most 100)"; fi
}
real_case allocs_sqlite3 /usr/bin/sqlite3 :memory: ".read $W/t.sql"
real_case allocs_gawk /usr/bin/gawk '{ c[substr($1, 1, 4)]++; s[$2] = $1 } END { n = 0; for (k in s) n++; print length(c), n }' "$W/lines"
real_case allocs_python3 /usr/bin/python3 -c 'd = {i: "v%09d" % (i * 7919 % 60000) for i in range(60000)}; print(len(d), sorted(d.values())[100])'
