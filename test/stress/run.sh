#!/usr/bin/env bash
# Stress target (run by hand: `make stress`, tens of minutes): the long versions of
# test/e2e/record_real.sh. Each workload is run untraced, then traced with ample -L to measure its
# peak tracked memory (resident_peak_bytes, the largest over its processes), then at -L a quarter of
# that peak under several configurations (policies, handler threads, polling). Every traced run
# must print exactly what the untraced run printed and exit the same way, re-fetch evicted pages,
# keep every process's tracked resident peak within -L, and never fail an eviction.
# Prints one PASS/FAIL/SKIP line per (workload, configuration), the time each run took, and a
# summary; exits 1 if anything failed.
#
# Environment:
#   FLTRACE_BUILD     build directory (default build)
#   STRESS_SCALE      multiplies every workload's size (default 1; 0.25 for a quick look)
#   STRESS_FILTER     only workloads whose name contains this
#   STRESS_CONFIGS    ';'-separated option sets (default below)
#   STRESS_TIMEOUT    seconds per traced run before it counts as hung (default 1200)
#   STRESS_FRACTION   -L is the peak divided by this (default 4: a quarter; 8: an eighth)
#   STRESS_KEEP       keep the work directory (traces included) for inspection
set -u
cd "$(dirname "$0")/../.." || exit 1
export FLTRACE_ROOT=$PWD
. test/lib.sh
[ -n "${STRESS_KEEP:-}" ] && trap 'echo "work directory kept: $TMP"' EXIT

SCALE=${STRESS_SCALE:-1}
LIMIT=${STRESS_TIMEOUT:-1200}
FRACTION=${STRESS_FRACTION:-4}
CONFIGS=${STRESS_CONFIGS:-"--policy fifo;--policy clock;--policy sfifo;--policy random;--policy 2q;--policy 2q -C 2;--policy sfifo -C 2;--policy fifo -C 2 --poll spin"}
PY=/usr/bin/python3
DATA=$ROOT/test/data
npass=0 nfail=0 nskip=0
failed=()
say() { # forwards a case line and counts it
	echo "$1"
	case $1 in
	PASS*) npass=$((npass + 1)) ;;
	FAIL*) nfail=$((nfail + 1)); failed+=("${1#FAIL }") ;;
	SKIP*) nskip=$((nskip + 1)) ;;
	esac
}
scaled() { awk -v n="$1" -v s="$SCALE" 'BEGIN { v = int(n * s); print (v < 1 ? 1 : v) }'; }

if [ ! -x "$FLTRACE" ] || ! have_preload; then
	say "SKIP stress: $FLTRACE or its preload library not built (run make)"
	exit 0
fi
if ! have_uffd; then
	say "SKIP stress: no permission for userfaultfd here"
	exit 0
fi
cd "$TMP" || exit 1

stat_of() { tail -n 1 "$1" 2>/dev/null | tr ',' '\n' | sed -n "s/^$2://p"; }

# traced DIR LOCAL STDIN OPTS CMD...: sets RC, SECS; stdout in DIR.out, stderr in DIR.err
traced() {
	local dir=$1 l=$2 in=$3 opts=$4 t0
	shift 4
	rm -rf "$dir"
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086 # OPTS is a list of options
	timeout -k 10 "$LIMIT" "$FLTRACE" record -L "$l" -M 8192 $opts -o "$dir" -- "$@" \
		< "$in" > "$dir.out" 2> "$dir.err"
	RC=$?
	SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}

# stats_check DIR CAP_BYTES: prints why the stats of a run are wrong, or nothing
stats_check() {
	local dir=$1 cap=$2 f n=0 refetch=0 v
	for f in "$dir"/fltrace-data-stats-*.out; do
		[ -e "$f" ] || break
		n=$((n + 1))
		v=$(stat_of "$f" resident_peak_bytes)
		[ -z "$v" ] && { echo "unreadable $(basename "$f")"; return; }
		[ "$v" -gt "$cap" ] && { echo "resident_peak_bytes $v > -L $cap in $(basename "$f")"; return; }
		v=$(stat_of "$f" evict_failed)
		[ "${v:-0}" -gt 0 ] && { echo "evict_failed $v in $(basename "$f")"; return; }
		refetch=$((refetch + $(stat_of "$f" faults_refetch)))
	done
	[ $n -eq 0 ] && { echo "no stats files"; return; }
	[ $refetch -eq 0 ] && echo "no re-fetches (faults_refetch 0)"
}

# workload NAME STDIN CMD...: the untraced run, the peak, and one quarter run per configuration
workload() {
	local name=$1 in=$2 want_rc peak=0 f v l cap opts why
	shift 2
	[ -n "${STRESS_FILTER:-}" ] && [[ "$name" != *"$STRESS_FILTER"* ]] && return
	"$@" < "$in" > "$name.want" 2> "$name.want.err"
	want_rc=$?
	if [ ! -s "$name.want" ]; then
		say "FAIL $name: the untraced run printed nothing (exit $want_rc): $(tail -c 300 "$name.want.err")"
		return
	fi
	traced "$name.ample" 8192 "$in" "" "$@"
	if [ $RC -ne $want_rc ] || ! cmp -s "$name.want" "$name.ample.out"; then
		say "FAIL $name[ample]: exit $RC (untraced $want_rc), output $(cmp -s "$name.want" "$name.ample.out" && echo same || echo differs); $(tail -c 300 "$name.ample.err")"
		return
	fi
	for f in "$name.ample"/fltrace-data-stats-*.out; do
		v=$(stat_of "$f" resident_peak_bytes)
		[ "${v:-0}" -gt $peak ] && peak=$v
	done
	l=$((peak / FRACTION / 1024)) # KiB
	[ $l -lt 256 ] && l=256
	cap=$((l * 1024))
	echo "   $name: untraced exit $want_rc; ample run ${SECS}s, peak tracked $((peak >> 20)) MB -> -L ${l}K"
	IFS=';' read -r -a cfgs <<< "$CONFIGS"
	for opts in "${cfgs[@]}"; do
		traced "$name.q" "${l}K" "$in" "$opts" "$@"
		if [ $RC -eq 124 ] || [ $RC -eq 137 ]; then
			say "FAIL $name[$opts]: hung: 'fltrace record -L ${l}K $opts -- $*' still running after ${LIMIT}s (killed)"
		elif [ $RC -ne $want_rc ]; then
			say "FAIL $name[$opts]: exit $RC, untraced $want_rc: $(tail -c 300 "$name.q.err" | tr '\n' ' ')"
		elif ! cmp -s "$name.want" "$name.q.out"; then
			say "FAIL $name[$opts]: output differs from the untraced run: $(cmp "$name.want" "$name.q.out" 2>&1 | head -1)"
		elif why=$(stats_check "$name.q" $cap) && [ -n "$why" ]; then
			say "FAIL $name[$opts]: $why"
		else
			say "PASS $name[$opts] (${SECS}s, $(tail -n 1 "$name.q.err" | sed 's/^fltrace: //; s/; trace in.*//'))"
		fi
	done
	rm -rf "$name.q" "$name.ample"
}

# ---- inputs (untraced, deterministic) ----
if [ ! -x $PY ]; then
	say "SKIP stress: $PY is needed to generate the inputs"
	exit 0
fi
gen_lines() { # N > file: lines with pseudo-random keys, ~38 bytes each
	$PY -c '
import sys
w = sys.stdout.write
for i in range(int(sys.argv[1])):
    k = (i * 2654435761) % 4294967291
    w("%010d %s %d\n" % (k, "abcdefghijklmnopqrstuvwxyz"[i % 26] * (i % 40), i))
' "$1"
}
gen_lines "$(scaled 1000000)" > lines.txt # ~38 MB
head -c "$(scaled 4000000)" lines.txt > xz_in.txt
gen_lines "$(scaled 1500000)" > xz_mt_in.txt # ~57 MB, several xz blocks at -T8
printf 'CREATE TEMP TABLE p(n); INSERT INTO p VALUES(%s);\n' "$(scaled 1000000)" |
	cat - "$DATA/real_sqlite.sql" > sqlite.sql
echo "   inputs: scale $SCALE, configurations: $CONFIGS"

# ---- workloads ----
FS=$PROGS/fillscan
if [ -x "$FS" ]; then
	workload fillscan_1t /dev/null "$FS" "$(scaled 512)" 3 1
	workload fillscan_8t /dev/null "$FS" "$(scaled 512)" 3 8
	workload fillscan_16t /dev/null "$FS" "$(scaled 512)" 3 16
else
	say "SKIP fillscan: $FS not built (make progs)"
fi
workload python3_objects /dev/null $PY "$DATA/real_objects.py" "$(awk -v s="$SCALE" 'BEGIN { print 2 * s }')" 2
if command -v sqlite3 > /dev/null; then
	workload sqlite3_memory sqlite.sql sqlite3 :memory:
else
	say "SKIP sqlite3_memory: sqlite3 not installed"
fi
workload sort_lines lines.txt sort --parallel=1
workload sort_parallel8 lines.txt env LC_ALL=C.UTF-8 sort --parallel=8 -S 200M -k2,2r -k3,3n -t ' '
if command -v xz > /dev/null; then
	workload xz_compress xz_in.txt xz -T1 -0 -c
	workload xz_threads8 xz_mt_in.txt xz -T8 -0 -c
else
	say "SKIP xz: not installed"
fi
if [ -x "$PROGS/real_spawn" ]; then
	workload spawn_children /dev/null sh -c "rm -f pids; '$PROGS/real_spawn' parent '$TMP/pids' $(scaled 64); echo status \$?"
fi

if [ ${#failed[@]} -gt 0 ]; then
	echo "failures:"; for f in "${failed[@]}"; do echo "  $f"; done
fi
echo "$npass passed, $nfail failed, $nskip skipped"
[ $nfail -eq 0 ]
