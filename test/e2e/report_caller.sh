#!/usr/bin/env bash
# End-to-end: the program's own code first. callers (built -O2 -g) faults inside libc's memset,
# memcpy and strcmp; `report --by caller` names the program's three lines with their exact
# faults, `--top` shows each beside libc's leaf, the index page's top callsites too; a stripped
# copy groups them by the function entries its unwind table knows.
. "$(dirname "$0")/../lib.sh"
if ! have_preload || [ ! -x "$PROGS/callers" ]; then skip report_caller "callers not built"; exit 0; fi
if ! have_uffd; then skip report_caller "userfaultfd not available"; exit 0; fi
SRC=$ROOT/test/progs/callers.c
PAGES=64
# csvrows FILE COLUMNS...: every row, the columns joined by |
csvrows() { python3 -c 'import csv,sys
for r in csv.DictReader(open(sys.argv[1],newline="")): print("|".join(r[c] for c in sys.argv[2:]))' "$@"; }

D=$TMP/rec; mkdir -p "$D"
if ! ( cd "$D" && timeout "$HANG" "$FLTRACE" record -- "$PROGS/callers" $PAGES "$D/f.dat" > /dev/null 2>&1 ); then
	fail report_caller "record failed"; exit 0; fi
"$FLTRACE" report -i "$D" --by caller -o "$TMP/caller.csv" > /dev/null 2>&1
m=$(src_line callers.c CALL-MEMSET); c=$(src_line callers.c CALL-MEMCPY); s=$(src_line callers.c CALL-STRCMP)
# Each line's faults: memset's and memcpy's first touches (one a page), strcmp's file pages of both
# mappings; kinds split rows, so sum them per line.
sum_rows() { awk -F'|' '{ n[$1] += $2 } END { for (k in n) print n[k] "|" k }' | sort -t'|' -k2; }
# The code column lists the frames, padded as the earlier tool pads them (<//>??:?): the first is the line.
got=$(csvrows "$TMP/caller.csv" code count | sed "s@<//>[^|]*@@" | grep -E "^$SRC:($m|$c|$s)\|" | sum_rows)
expect_eq report_caller_lines "--by caller: the program's lines with their faults" \
	"$PAGES|$SRC:$m
$PAGES|$SRC:$c
$((2 * PAGES))|$SRC:$s" "$(sort -t'|' -k2 <<< "$got")"
# No row of the caller view stands for libc where the program called it.
if [ ! -s "$TMP/caller.csv" ]; then fail report_caller_no_libc "no CSV written"
else expect_eq report_caller_no_libc "--by caller: no libc string function" "" \
	"$(csvrows "$TMP/caller.csv" functions lib | grep -E '^__(memset|memmove|memcpy|strcmp)')"; fi

# --top by line: libc's leaf, and the program's line beside it.
"$FLTRACE" report -i "$D" --by line --top 4 > "$TMP/top" 2>&1
line=$(grep -m1 'memset' "$TMP/top")
case "$line" in
*libc.so*) if [[ "$line" == *"callers.c:$m "* ]]; then pass report_top_caller_column
	else fail report_top_caller_column "memset's row has no callers.c:$m: $line"; fi ;;
*) fail report_top_caller_column "no memset row in libc: $(cat "$TMP/top")" ;;
esac
grep -q ' CALLER ' "$TMP/top" && pass report_top_caller_header || fail report_top_caller_header "$(head -2 "$TMP/top")"

# The index page: strcmp's row says which line of ours called it.
"$FLTRACE" visualize -i "$D" -o "$TMP/pics" > /dev/null 2>&1
idx=$(ls "$TMP"/pics/fltrace-data-index-*.html 2>/dev/null | head -1)
if [ -n "$idx" ] && grep 'Top callsites' -A 12 "$idx" | grep 'strcmp' | grep -q "callers.c:$s</code>"; then
	pass visualize_index_caller
else fail visualize_index_caller "no strcmp row called from callers.c:$s in ${idx:-no index}"; fi

# Stripped: no line anywhere, so the caller is the function, named by its entry in the unwind table.
cp "$PROGS/callers" "$TMP/callers-stripped" && strip "$TMP/callers-stripped"
S=$TMP/strip; mkdir -p "$S"
if ! ( cd "$S" && timeout "$HANG" "$FLTRACE" record -- "$TMP/callers-stripped" $PAGES "$S/f.dat" > /dev/null 2>&1 ); then
	fail report_caller_stripped "record failed"; exit 0; fi
"$FLTRACE" report -i "$S" --by caller -o "$TMP/strip.csv" > /dev/null 2>&1
entry() { printf 'callers-stripped+0x%x' "0x$(nm "$PROGS/callers" | awk -v f="$1" '$3 == f { print $1 }')"; }
ef=$(entry fill); ec=$(entry copy); es=$(entry same)
got=$(csvrows "$TMP/strip.csv" functions count | grep -F -e "$ef|" -e "$ec|" -e "$es|" | sum_rows)
expect_eq report_caller_stripped "stripped: by function entry" \
	"$(printf '%s\n' "$PAGES|$ef" "$PAGES|$ec" "$((2 * PAGES))|$es" | sort -t'|' -k2)" "$got"

# A fault inside the vDSO (clock_gettime writing its result) is the program's line that called it,
# not [vdso]+0x....
if [ -x "$PROGS/vdsotouch" ]; then
	V=$TMP/vdso; mkdir -p "$V"
	"$FLTRACE" record -o "$V" -- "$PROGS/vdsotouch" 64 > /dev/null 2>&1
	v=$(src_line vdsotouch.c VDSO-CALL)
	"$FLTRACE" report -i "$V" --by caller -o "$TMP/vdso.csv" > /dev/null 2> "$TMP/vdso.err"
	got=$(csvrows "$TMP/vdso.csv" code count | sed "s@<//>[^|]*@@" | grep -E "vdsotouch.c:$v\|" | awk -F'|' '{ n += $2 } END { print n + 0 }')
	expect_eq report_caller_vdso "--by caller: faults at vdsotouch.c:$v (inside clock_gettime's vDSO code)" 64 "$got"
else
	fail report_caller_vdso "vdsotouch not built"
fi
