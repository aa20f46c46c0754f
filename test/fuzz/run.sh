#!/usr/bin/env bash
# Runs each fuzzer of $BUILD/fuzz (libFuzzer, AddressSanitizer and UBSan) for FUZZ_SECONDS
# (default 8), seeded with real files: a trace, its maps history and its stats, recorded here when
# this machine can trace (root or userfaultfd), and the unit tests' synthetic traces of format
# versions 1 and 2. FUZZ_CORPUS=DIR keeps what each fuzzer finds in DIR/<fuzzer> across runs
# (`make fuzz`). One PASS/FAIL/SKIP line per fuzzer, then the executions it ran; a crash, a hang
# or a sanitizer report fails it, with the input kept beside its log. An input runs in milliseconds;
# the hang guard (FUZZ_TIMEOUT, 120 s) is long enough that a loaded machine never trips it (a
# fuzzer at nice 19 beside a load of 18 once stalled 17 s in close(2)).
. "$(dirname "$0")/../lib.sh"

SECONDS_EACH=${FUZZ_SECONDS:-8}
FUZZERS=(fuzz_trace fuzz_maps fuzz_stats)
GEN=$BUILD/test/unit/test_report
OUT=${FUZZ_OUT:-$BUILD/fuzz/out}

missing=""
for f in "${FUZZERS[@]}"; do [ -x "$BUILD/fuzz/$f" ] || missing="$missing $f"; done
if [ -n "$missing" ] || [ ! -x "$GEN" ]; then
	for f in "${FUZZERS[@]}"; do skip "$f" "not built:$missing (clang with libFuzzer: ./deps.sh)"; done
	exit 0
fi

# ---- seeds ----
S=$TMP/seeds
mkdir -p "$S/trace" "$S/maps" "$S/stats" "$S/syn" "$S/rec1" "$S/rec2"
"$GEN" --write "$S/syn" 1000 > /dev/null
"$GEN" --write "$S/syn" 1001 v1 > /dev/null
if have_preload && have_uffd && [ -x "$PROGS/fillscan" ]; then
	"$FLTRACE" record -L 1 -M 64 -o "$S/rec1" -- "$PROGS/fillscan" 1 2 > /dev/null 2>&1
	"$FLTRACE" record -L 4 -M 64 -o "$S/rec2" -- sh -c "$PROGS/fillscan 1 1 && exec true" > /dev/null 2>&1
fi
cp "$S"/*/fltrace-data-trace-*.bin "$S/trace/"
cp "$S"/rec*/fltrace-data-procmaps-*.out "$S/maps/" 2>/dev/null
cp "$S"/rec*/fltrace-data-stats-*.out "$S/stats/" 2>/dev/null
cp /proc/self/maps "$S/maps/self"
printf '1795343161,faults:3,faults_nostack:2,faults_nostack_gone:1,faults_nostack_unwind:1\n' > "$S/stats/synthetic"
nreal=$(ls "$S"/rec*/fltrace-data-trace-*.bin 2>/dev/null | wc -l)
[ "$nreal" -gt 0 ] || echo "fuzz: no trace could be recorded here; seeded with synthetic traces only"

mkdir -p "$OUT"
for f in "${FUZZERS[@]}"; do
	kind=${f#fuzz_}
	corpus=$TMP/corpus-$kind
	[ -n "${FUZZ_CORPUS:-}" ] && corpus=$FUZZ_CORPUS/$kind
	mkdir -p "$corpus"
	log=$OUT/$f.log
	# Inputs that once failed (test/fuzz/found/KIND/) seed every run: each is tried first.
	found=
	[ -d "$ROOT/test/fuzz/found/$kind" ] && found=$ROOT/test/fuzz/found/$kind
	rm -f "$OUT/$f"-crash-* "$OUT/$f"-timeout-* "$OUT/$f"-leak-* "$OUT/$f"-oom-*
	"$BUILD/fuzz/$f" -max_total_time="$SECONDS_EACH" -timeout="${FUZZ_TIMEOUT:-120}" -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$OUT/$f-" "$corpus" "$S/$kind" $found > "$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	if [ $rc -ne 0 ]; then
		fail "$f" "exit $rc after ${runs:-?} runs: $(grep -m1 -E 'ERROR|runtime error|timeout|crash' "$log") (log and input in $OUT)"
	elif ! grep -Eq '^Done [0-9]+ runs' "$log" || [ -z "$runs" ]; then
		fail "$f" "libFuzzer did not say it was done (see $log)"
	else
		pass "$f"
		echo "$f: $runs runs in $SECONDS_EACH s, corpus $(ls "$corpus" | wc -l) inputs, no crash, hang or sanitizer report"
	fi
done
