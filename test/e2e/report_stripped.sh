#!/usr/bin/env bash
# End-to-end: names on programs without debug info, as Debian ships them. A program built without
# DWARF: --by line groups its frames by function (not into one ??:? row). The same program
# stripped: a static function is named object+0xoffset of its entry (from the unwind table), an
# exported one by .dynsym; never ??.
. "$(dirname "$0")/../lib.sh"
GEN=$BUILD/test/unit/test_report
if [ ! -x "$GEN" ]; then skip report_stripped "$GEN not built (make unit-test)"; exit 0; fi
cat > "$TMP/s.c" <<'C'
static volatile int sink;
static __attribute__((noinline)) void hidden(int x) { for (int i = 0; i < x; i++) sink += i * x; }
__attribute__((noinline)) void exported(int x) { hidden(x); sink++; }
int main(int argc, char **argv) { (void)argv; exported(argc); return 0; }
C
if ! cc -O1 -g0 -rdynamic -o "$TMP/nodwarf" "$TMP/s.c" 2>/dev/null; then skip report_stripped "cannot build"; exit 0; fi
cp "$TMP/nodwarf" "$TMP/stripped" && strip "$TMP/stripped"
BIAS=0x555555554000
h=$(nm "$TMP/nodwarf" | awk '$3=="hidden"{print "0x"$1}')
e=$(nm "$TMP/nodwarf" | awk '$3=="exported"{print "0x"$1}')
# The return address in exported: the instruction after its call to hidden.
r=$(objdump -d --no-show-raw-insn "$TMP/nodwarf" | awk '/<exported>:/{f=1} f&&/call.*<hidden>/{getline; sub(":","",$1); print "0x"$1; exit}')
if [ -z "$h" ] || [ -z "$r" ]; then fail report_stripped_setup "no hidden ($h) or call ($r)"; exit 0; fi
at() { printf '0x%x' $((BIAS + $1)); }
# csvrows FILE COLUMNS...: every row, the columns joined by |
csvrows() { python3 -c 'import csv,sys
for r in csv.DictReader(open(sys.argv[1],newline="")): print("|".join(r[c] for c in sys.argv[2:]))' "$@"; }

# Two faults at two addresses of hidden, called from exported, and one in exported itself.
mkdir -p "$TMP/n"
"$GEN" --write-exe "$TMP/n" "$TMP/nodwarf" $BIAS "$(at $h)" "$(at $r)" / "$(at $((h + 1)))" "$(at $r)" / \
	"$(at $e)" ||
	{ fail report_stripped_write "writer failed"; exit 0; }
"$FLTRACE" report -i "$TMP/n" --by line >/dev/null 2>&1
expect_eq report_noline_by_function "--by line without DWARF: one row per function" "2|hidden|??:?<//>??:?
1|exported|??:?<//>??:?" \
	"$(csvrows "$TMP/n/fltrace-data-report-2000.out" count functions code)"
"$FLTRACE" report -i "$TMP/n" >/dev/null 2>&1
expect_eq report_symtab_names "names from .symtab" "1|hidden<//>exported
1|hidden<//>exported
1|exported" "$(csvrows "$TMP/n/fltrace-data-report-2000.out" count functions)"

mkdir -p "$TMP/s"
"$GEN" --write-exe "$TMP/s" "$TMP/stripped" $BIAS "$(at $h)" "$(at $r)" ||
	{ fail report_stripped_write "writer failed"; exit 0; }
"$FLTRACE" report -i "$TMP/s" >/dev/null 2>&1
expect_eq report_stripped_names "stripped: object+offset, then .dynsym" \
	"$(printf 'stripped+0x%x<//>exported|%s<//>%s<//>??|??:?<//>??:?<//>??:?' $h "$TMP/stripped" "$TMP/stripped")" \
	"$(csvrows "$TMP/s/fltrace-data-report-2000.out" functions lib code)"
"$FLTRACE" report -i "$TMP/s" --folded -o "$TMP/s.folded" >/dev/null 2>&1
expect_eq report_stripped_folded "folded names" "$(printf 'exported (stripped);stripped+0x%x (stripped) 1' $h)" \
	"$(cat "$TMP/s.folded")"
# Two addresses inside the stripped static function: one function, named by its entry.
mkdir -p "$TMP/s2"
"$GEN" --write-exe "$TMP/s2" "$TMP/stripped" $BIAS "$(at $((h + 1)))" "$(at $r)" / "$(at $((h + 3)))" "$(at $r)" ||
	{ fail report_stripped_write "writer failed"; exit 0; }
"$FLTRACE" report -i "$TMP/s2" --by function >/dev/null 2>&1
expect_eq report_stripped_by_function "--by function: the unwind table's extent" \
	"$(printf '2|stripped+0x%x' $h)" "$(csvrows "$TMP/s2/fltrace-data-report-2000.out" count functions)"

# A binary that vanished since recording: its path and the offset in the file.
cp "$TMP/stripped" "$TMP/gone"
mkdir -p "$TMP/g"
"$GEN" --write-exe "$TMP/g" "$TMP/gone" $BIAS "$(at $h)" >/dev/null && rm -f "$TMP/gone"
"$FLTRACE" report -i "$TMP/g" >/dev/null 2>&1
case "$(csvrows "$TMP/g/fltrace-data-report-2000.out" functions)" in
gone+0x*) pass report_gone_offset ;;
*) fail report_gone_offset "got $(csvrows "$TMP/g/fltrace-data-report-2000.out" functions)" ;;
esac
