#!/usr/bin/env bash
# End to end: record a small program (test/progs/fillscan: fills a heap, scans it again under a
# small -L), then visualize it: the flamegraphs name its function, the alloc graph holds only
# first touches, the timeline has both kinds, and every picture is valid XML.
. "$(dirname "$0")/../lib.sh"

NAME=visualize_record
if ! have_uffd; then skip $NAME "userfaultfd not available to this user"; exit 0; fi
if ! have_preload; then skip $NAME "no preload library in $BUILD (make all)"; exit 0; fi
if [ ! -x "$PROGS/fillscan" ]; then skip $NAME "no $PROGS/fillscan (make progs)"; exit 0; fi

OUT=$TMP/rec
if ! timeout -k 10 "$HANG" "$FLTRACE" record -L 8 -M 256 -o "$OUT" -- "$PROGS/fillscan" 32 2 >"$TMP/rec.out" 2>&1; then
	fail $NAME "record failed: $(tail -3 "$TMP/rec.out")"; exit 1
fi
if ! "$FLTRACE" visualize -i "$OUT" >"$TMP/vis.out" 2>"$TMP/vis.err"; then
	fail $NAME "visualize failed: $(cat "$TMP/vis.err")"; exit 1
fi
pid=$(ls "$OUT" | sed -n 's/^fltrace-data-trace-\([0-9]*\)-0\.bin$/\1/p' | head -1)
FG=$OUT/fltrace-data-flamegraph-$pid.svg
AG=$OUT/fltrace-data-flamegraph-alloc-$pid.svg
TL=$OUT/fltrace-data-timeline-$pid.svg
bad=
if command -v xmllint >/dev/null; then
	for f in "$OUT"/*.svg; do xmllint --noout "$f" 2>/dev/null || bad="$bad $(basename "$f")"; done
fi
if [ -n "$bad" ]; then fail $NAME "invalid XML:$bad"
elif ! grep -q '<title>work (fillscan.c:[0-9]*)' "$FG"; then
	fail $NAME "no 'work (fillscan.c:N)' frame in $(basename "$FG"): $(grep -o '<title>[^<]*' "$FG" | head -8 | tr '\n' ' ')"
elif grep -q '&#10;ends here: refetch' "$AG"; then fail $NAME "refetch faults in the alloc flamegraph"
elif ! grep -q '<title>work (fillscan.c:[0-9]*) \[w\] ([0-9]* faults' "$AG"; then
	fail $NAME "the fill's first touches are not in $(basename "$AG")"
elif ! grep -q '>zero<' "$TL" || ! grep -q '>refetch<' "$TL"; then
	fail $NAME "timeline legend lacks zero or refetch faults (scans under -L 8 must refetch)"
else pass $NAME; fi
