#!/usr/bin/env bash
# Benchmark of `fltrace report`: faults per second of report time on a synthetic 1,000,000-fault
# trace (2000 distinct 48-frame stacks) and, when the recorder works here, on a real recording.
# Usage: test/bench/report_bench.sh [BUILD_DIR]   (prints one result line per trace)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/${1:-${FLTRACE_BUILD:-build}}
FLTRACE=$B/bin/fltrace
GEN=$B/test/unit/test_report
TMP=$(mktemp -d /tmp/fltrace-bench-report.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

now() { date +%s.%N; }
bench() { # name dir faults
	local t0 t1
	t0=$(now); "$FLTRACE" report -i "$2" > /dev/null 2>&1 || { echo "report-$1: report failed"; return; }
	t1=$(now)
	awk -v n="$1" -v f="$3" -v a="$t0" -v b="$t1" \
		'BEGIN { printf "report-%s: %d faults in %.2f s = %.0f faults/s\n", n, f, b - a, f / (b - a) }'
}

if [ -x "$GEN" ]; then
	mkdir -p "$TMP/synth"
	"$GEN" --write-big "$TMP/synth" 1000000 && bench synthetic-1M "$TMP/synth" 1000000
else
	echo "report-synthetic-1M: skipped ($GEN not built; make unit-test)"
fi
if [ -f "$B/lib/fltrace/libfltrace.so" ] && [ -x "$B/progs/fillscan" ]; then
	mkdir -p "$TMP/real"
	out=$(cd "$TMP/real" && "$FLTRACE" record -L 8 -M 256 -- "$B/progs/fillscan" 64 3 2>&1 >/dev/null)
	n=$(echo "$out" | sed -n 's/.*recorded \([0-9]*\) faults.*/\1/p')
	[ -n "$n" ] && bench "fillscan-64MB" "$TMP/real" "$n" || echo "report-fillscan: record failed"
fi
