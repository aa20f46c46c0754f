#!/usr/bin/env bash
# End-to-end tests of `fltrace visualize` on a synthetic recording (test/unit/test_vis_trace.c):
# every file per process, valid XML, same bytes twice, the options, and its refusals.
. "$(dirname "$0")/../lib.sh"

GEN=$BUILD/test/unit/test_vis_trace
RUN=$TMP/run
P=31337 # pids of the synthetic recording
P2=31338

if [ ! -x "$GEN" ]; then
	fail visualize_setup "$GEN missing; build with make unit-test"
	exit 1
fi
"$GEN" --write "$RUN" || { fail visualize_setup "could not write the synthetic trace"; exit 1; }

# All files, per process, and the list of them on stdout.
out=$("$FLTRACE" visualize -i "$RUN" 2>"$TMP/err"); rc=$?
missing=
for pid in $P $P2; do
	for f in flamegraph flamegraph-alloc flamegraph-allocsite timeline latency; do
		[ -s "$RUN/fltrace-data-$f-$pid.svg" ] || missing="$missing $f-$pid.svg"
	done
	[ -s "$RUN/fltrace-data-index-$pid.html" ] || missing="$missing index-$pid.html"
done
[ -s "$RUN/fltrace-data-index.html" ] || missing="$missing index.html"  # the processes page
if [ $rc -ne 0 ]; then fail visualize_all_files "exit $rc: $(cat "$TMP/err")"
elif [ -n "$missing" ]; then fail visualize_all_files "missing:$missing"
elif [ "$(printf '%s\n' "$out" | grep -c '')" != 13 ]; then fail visualize_all_files "stdout lists $(printf '%s\n' "$out" | grep -c '') files, not 13"
else pass visualize_all_files; fi

if command -v xmllint >/dev/null; then
	bad=
	for f in "$RUN"/*.svg; do xmllint --noout "$f" 2>>"$TMP/xml" || bad="$bad $(basename "$f")"; done
	xmllint --html --noout "$RUN/fltrace-data-index-$P.html" 2>>"$TMP/xml" || bad="$bad index-$P.html"
	if [ -z "$bad" ]; then pass visualize_valid_xml; else fail visualize_valid_xml "$bad: $(head -3 "$TMP/xml")"; fi
else
	skip visualize_valid_xml "xmllint not installed (apt-get install libxml2-utils)"
fi

# Same trace, same bytes (written elsewhere with -o).
mkdir -p "$TMP/again"
"$FLTRACE" visualize -i "$RUN" -o "$TMP/again" >/dev/null 2>&1
diffs=
for f in "$RUN"/fltrace-data-{flamegraph,flamegraph-alloc,timeline,latency}-$P.svg "$RUN/fltrace-data-index-$P.html"; do
	cmp -s "$f" "$TMP/again/$(basename "$f")" || diffs="$diffs $(basename "$f")"
done
if [ -z "$diffs" ]; then pass visualize_deterministic; else fail visualize_deterministic "differ:$diffs"; fi

# Contents: symbolized names with leaf suffixes, tooltips with counts, the alloc graph's subset.
FG=$RUN/fltrace-data-flamegraph-$P.svg
AG=$RUN/fltrace-data-flamegraph-alloc-$P.svg
if grep -q '<title>all (2160 faults, 100.00%)' "$FG" &&
	grep -q '<title>vis_alloc_leaf (test_vis_trace.c:[0-9]*) \[w\] (1200 faults, 55.56%)' "$FG" &&
	grep -q '<title>vis_scan_leaf (test_vis_trace.c:[0-9]*) \[p\] (100 faults' "$FG" &&
	grep -q '<title>\[syscall read\] \[w\] (40 faults' "$FG" &&
	grep -q '<title>\[no stack\] \[r\] (20 faults' "$FG"; then
	pass visualize_flame_frames
else
	fail visualize_flame_frames "expected frames/tooltips not in $(basename "$FG"): $(grep -o '<title>[^<]*' "$FG" | head -12 | tr '\n' ' ')"
fi
if grep -q '<title>all (1260 faults, 100.00%)' "$AG" && ! grep -q 'vis_scan_leaf' "$AG"; then
	pass visualize_alloc_only_zero
else
	fail visualize_alloc_only_zero "alloc graph holds other faults: $(grep -o '<title>[^<]*' "$AG" | head -5 | tr '\n' ' ')"
fi
TL=$RUN/fltrace-data-timeline-$P.svg
if grep -q 'file /usr/lib/libvis-data.so (offset in file' "$TL" && grep -q '>addresses 0x5555' "$TL" &&
	grep -q 'fault rate' "$TL"; then
	pass visualize_timeline_panels
else
	fail visualize_timeline_panels "panels missing: $(grep -o 'class="cap"[^<]*' "$TL" | tr '\n' ' ')"
fi
LT=$RUN/fltrace-data-latency-$P.svg
if grep -q 'zero faults: 1220;' "$LT" && grep -q 'refetch faults: 600;' "$LT" && grep -q 'file faults: 200;' "$LT"; then
	pass visualize_latency_kinds
else
	fail visualize_latency_kinds "$(grep -o 'class="cap"[^<]*' "$LT" | tr '\n' ' ')"
fi
IX=$RUN/fltrace-data-index-$P.html
if grep -q '<code>/usr/bin/vis-demo</code>' "$IX" && grep -q '140 MiB (146800640 bytes)' "$IX" &&
	grep -q '<th>zero</th><td>1220 (56.48%)</td>' "$IX" &&
	grep -q "data=\"fltrace-data-flamegraph-$P.svg\"" "$IX"; then
	pass visualize_index_summary
else
	fail visualize_index_summary "command, peak memory, counts or embedded pictures missing from $(basename "$IX")"
fi
# A process without a stats file still gets its index.
if grep -q 'unknown: no stats file' "$RUN/fltrace-data-index-$P2.html"; then pass visualize_index_no_stats
else fail visualize_index_no_stats "no note about the missing stats file"; fi

# Options.
mkdir -p "$TMP/opt"
"$FLTRACE" visualize -i "$RUN" -o "$TMP/opt" --pid $P --kind refetch,wp --title 'T<&>' \
	--width 900 --minwidth 2 --inverted --names lib >/dev/null 2>"$TMP/err"; rc=$?
O=$TMP/opt/fltrace-data-flamegraph-$P.svg
if [ $rc -ne 0 ]; then fail visualize_options "exit $rc: $(cat "$TMP/err")"
elif [ -e "$TMP/opt/fltrace-data-flamegraph-$P2.svg" ]; then fail visualize_options "--pid drew another process"
elif ! grep -q 'width="900"' "$O"; then fail visualize_options "--width not applied"
elif ! grep -q '>T&lt;&amp;&gt;<' "$O"; then fail visualize_options "--title not applied or not escaped"
elif ! grep -q 'inv: 1' "$O"; then fail visualize_options "--inverted not applied"
elif grep -q 'vis_alloc_leaf\|\[no stack\]' "$O"; then fail visualize_options "--kind refetch,wp kept zero faults"
elif ! grep -q '<title>all (700 faults' "$O"; then fail visualize_options "--kind refetch,wp: expected 700 faults: $(grep -o '<title>all[^<]*' "$O")"
elif ! grep -q '|test_vis_trace.c:[0-9]*' "$O"; then fail visualize_options "--names lib: no 'lib|file:line' frames"
else pass visualize_options; fi

# Refusals: one line each, the documented exit codes.
mkdir -p "$TMP/empty"
expect_error visualize_no_trace 1 'no trace .* in .*empty; run .fltrace record. first' "$FLTRACE" visualize -i "$TMP/empty"
expect_error visualize_missing_dir 1 'cannot read directory .*nope: No such file' "$FLTRACE" visualize -i "$TMP/nope"
expect_error visualize_pid_absent 1 'no trace of pid 7 in' "$FLTRACE" visualize -i "$RUN" -o "$TMP/empty" --pid 7
expect_error visualize_bad_kind 2 "--kind: 'zero,bogus' is not a list of kinds" "$FLTRACE" visualize -i "$RUN" --kind zero,bogus
expect_error visualize_bad_width 2 "--width: '10' is too small" "$FLTRACE" visualize -i "$RUN" --width 10
expect_error visualize_bad_minwidth 2 "--minwidth: 'x' is not a width" "$FLTRACE" visualize -i "$RUN" --minwidth x
expect_error visualize_unknown_option 2 '--bogus: unknown option' "$FLTRACE" visualize --bogus
expect_error visualize_stray_argument 2 'extra: unexpected argument' "$FLTRACE" visualize extra
expect_error visualize_unwritable_output 1 'cannot create the output directory .*; give a writable directory with -o' \
	"$FLTRACE" visualize -i "$RUN" -o /proc/nope/deeper
# like record -o, a new output directory (and its parents) is created
"$FLTRACE" visualize -i "$RUN" -o "$TMP/new/deeper" > /dev/null 2>&1
n=$(ls "$TMP/new/deeper"/*.svg 2>/dev/null | wc -l)
if [ "$n" -ge 1 ]; then pass visualize_creates_output_dir; else fail visualize_creates_output_dir "no SVG in a new -o directory"; fi
