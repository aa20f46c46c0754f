#!/usr/bin/env bash
# End-to-end: two runs compared. Synthetic traces with known counts: run A has 3 re-fetches at the
# leaf, run B 10 (and a second process), run C 1: `report --diff` gives the change per callsite,
# biggest first; `visualize --diff` colours what grew red and what shrank blue.
. "$(dirname "$0")/../lib.sh"
GEN=$BUILD/test/unit/test_report
if [ ! -x "$GEN" ]; then skip report_diff "$GEN not built (make unit-test)"; exit 0; fi
A=$TMP/a B=$TMP/b C=$TMP/c
mkdir -p "$A" "$B" "$C"
"$GEN" --write "$A" 1000 > "$TMP/answers" || { fail report_diff_write "writer failed"; exit 0; }
"$GEN" --write "$B" 2000 refetch=10 > /dev/null
"$GEN" --write "$C" 3000 refetch=1 > /dev/null
. "$TMP/answers"
if [ -n "$libm" ]; then total=13; else total=12; fi
leafstack="synth_site_c (test_report.c:$line_c);synth_site_b (test_report.c:$line_b);synth_leaf (test_report.c:$leaf_line)"

# csvget FILE ROW COLUMN
csvget() { python3 -c 'import csv,sys
rows=list(csv.DictReader(open(sys.argv[1],newline="")))
print(rows[int(sys.argv[2])][sys.argv[3]] if int(sys.argv[2])<len(rows) else "<no row>")' "$@"; }

out=$(cd "$TMP" && "$FLTRACE" report --diff a b 2>&1); rc=$?
expect_eq diff_exit "exit status and file named" "0 fltrace-data-diff.out" "$rc $out"
R=$TMP/fltrace-data-diff.out
expect_eq diff_header "CSV header" "callsite,faults_a,faults_b,change,change_percent,function,code,lib" "$(head -1 "$R")"
expect_eq diff_grew "leaf stack: 5 zero + 3 -> 10 re-fetches" "$leafstack|8|15|+7|+87.5|synth_leaf" \
	"$(for c in callsite faults_a faults_b change change_percent function; do printf '%s|' "$(csvget "$R" 0 $c)"; done | sed 's/|$//')"
expect_eq diff_same "unchanged callsite: change 0" "2|2|+0" \
	"$(for c in faults_a faults_b change; do printf '%s|' "$(csvget "$R" 1 $c)"; done | sed 's/|$//')"

"$FLTRACE" report --diff "$A" "$C" --kind refetch -o "$TMP/shrank.csv" >/dev/null 2>&1
expect_eq diff_shrank "--kind refetch, 3 -> 1" "synth_leaf|3|1|-2|-66.7" \
	"$(for c in function faults_a faults_b change change_percent; do printf '%s|' "$(csvget "$TMP/shrank.csv" 0 $c)"; done | sed 's/|$//')"

top=$("$FLTRACE" report --diff "$A" "$B" --top 1 2>&1)
expect_eq diff_top_totals "table totals" "A: $A: $total faults|B: $B: $((total + 7)) faults (+7)" \
	"$(head -2 <<< "$top" | tr '\n' '|' | sed 's/|$//')"
case "$(sed -n 5p <<< "$top")" in
*"+7"*" 8 "*" 15 "*"+88"*"synth_leaf"*"test_report.c:$leaf_line") pass diff_top_row ;;
*) fail diff_top_row "$top" ;;
esac
expect_eq diff_top_rows "--top 1 shows one row" 5 "$(grep -c '' <<< "$top")"

expect_eq diff_folded "--folded: stack A B (difffolded)" "$leafstack 8 15" \
	"$("$FLTRACE" report --diff "$A" "$B" --folded 2>/dev/null | head -1)"
expect_eq diff_by_function "--by function" "synth_leaf (test_report) 8 15" \
	"$("$FLTRACE" report --diff "$A" "$B" --folded --by function 2>/dev/null | head -1)"

expect_error diff_one_dir 2 "--diff needs two trace directories" "$FLTRACE" report --diff "$A"
expect_error diff_format 2 "--diff writes csv, top or folded, not pprof" \
	"$FLTRACE" report --diff "$A" "$B" --format pprof
mkdir -p "$TMP/none"
expect_error diff_missing 1 "no trace in $TMP/none" "$FLTRACE" report --diff "$A" "$TMP/none"

# ---- visualize --diff: widths from B, red grew, blue shrank, grey unchanged
# frame NAME SVG: "<tooltip>|<fill>" of the frame whose tooltip starts with NAME
frame() { python3 - "$@" <<'PYEOF'
import re, sys, html
svg = open(sys.argv[2]).read()
for m in re.finditer(r'<title>(.*?)</title><rect [^>]*fill="(rgb\([0-9,]+\))"', svg):
    t = html.unescape(m.group(1))
    if t.startswith(sys.argv[1]):
        print(t.replace("\n", " / ") + "|" + m.group(2))
        break
PYEOF
}
"$FLTRACE" visualize --diff "$A" "$B" -o "$TMP/vis" > "$TMP/out" 2>&1
S=$TMP/vis/fltrace-data-flamegraph-diff.svg
expect_eq vis_diff_written "file named" "$S" "$(cat "$TMP/out")"
if command -v xmllint >/dev/null; then
	if xmllint --noout "$S" 2>/dev/null; then pass vis_diff_xml; else fail vis_diff_xml "not well-formed"; fi
fi
expect_eq vis_diff_grew "re-fetch leaf 3 -> 10: red, the deepest" \
	"synth_leaf (test_report.c:$leaf_line) [r] (10 faults, $(python3 -c "print('%.2f' % (1000/($total+7)))")%) / before: 3, change: +7 (+233.3%); ending here: 3 before, 10 now|rgb(255,50,50)" \
	"$(frame "synth_leaf (test_report.c:$leaf_line) [r]" "$S")"
# The change is coloured where it happened: the root, whose total grew by the same 7, only
# lightly (before, it was the deepest red and the leaves that grew looked pale beside it).
expect_eq vis_diff_root_light "the root: a light tint of the growth below it" \
	"rgb(255,204,204)" "$(frame "all (" "$S" | sed 's/.*|//')"
expect_eq vis_diff_same "first touches unchanged: grey" \
	"rgb(225,225,225)" "$(frame "synth_leaf (test_report.c:$leaf_line) [w]" "$S" | sed 's/.*|//')"
"$FLTRACE" visualize --diff "$A" "$C" -o "$TMP/vis" > /dev/null 2>&1
expect_eq vis_diff_shrank "re-fetch leaf 3 -> 1: blue" \
	"synth_leaf (test_report.c:$leaf_line) [r] (1 faults, $(python3 -c "print('%.2f' % (100/($total-2)))")%) / before: 3, change: -2 (-66.7%); ending here: 3 before, 1 now|rgb(50,50,255)" \
	"$(frame "synth_leaf (test_report.c:$leaf_line) [r]" "$S")"
expect_error vis_diff_one_dir 2 "--diff needs two trace directories" "$FLTRACE" visualize --diff "$A"
