#!/usr/bin/env bash
# End-to-end on a real recording: fillscan fills 64 MB (first touches at its fill line) and scans
# it 3 times under an 8 MB cap (re-fetches at its scan line); report must name those lines.
. "$(dirname "$0")/../lib.sh"
if [ ! -f "$BUILD/lib/fltrace/libfltrace.so" ] || [ ! -x "$PROGS/fillscan" ]; then
	skip report_record "preload library or fillscan not built"; exit 0; fi
if ! have_uffd; then skip report_record "userfaultfd not available"; exit 0; fi
SRC=$ROOT/test/progs/fillscan.c
fill=$(grep -n 'w->p\[i\] = ' "$SRC" | head -1 | cut -d: -f1)
scan=$(grep -n 'w->sum += ' "$SRC" | head -1 | cut -d: -f1)
D=$TMP/rec; mkdir -p "$D"
if ! ( cd "$D" && timeout -k 10 "$HANG" "$FLTRACE" record -L 8 -M 256 -- "$PROGS/fillscan" 64 3 > /dev/null 2>&1 ); then
	fail report_record "record failed"; exit 0; fi
( cd "$D" && "$FLTRACE" report > "$TMP/out" 2>&1 ) || { fail report_record "report failed: $(cat "$TMP/out")"; exit 0; }
# it says what it wrote, one path a line
expect_eq report_says_what_it_wrote "report's output" "$(cd "$D" && ls fltrace-data-report-*.out | sed 's|^|./|')" "$(grep 'fltrace-data-report-' "$TMP/out")"
got=$(python3 - "$D" <<'PY'
import csv, glob, sys
f = glob.glob(sys.argv[1] + "/fltrace-data-report-*.out")[0]
rows = list(csv.DictReader(open(f, newline="")))
for r in rows[:2]:
    print(r["op"], r["type"], r["kind"], r["functions"].split("<//>")[0], r["code"].split("<//>")[0])
PY
)
expect_eq report_record_lines "top two rows" \
	"read regular refetch work $SRC:$scan
write zero zero work $SRC:$fill" "$got"
