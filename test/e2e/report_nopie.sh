#!/usr/bin/env bash
# End-to-end: symbolization of a non-PIE executable (ET_EXEC, fixed addresses) from a synthetic
# trace whose maps snapshot is laid out as the kernel maps it.
. "$(dirname "$0")/../lib.sh"
GEN=$BUILD/test/unit/test_report
if [ ! -x "$GEN" ]; then skip report_nopie "$GEN not built (make unit-test)"; exit 0; fi
cat > "$TMP/np.c" <<'C'
__attribute__((noinline)) int target(int x) { return x * 7; }
__attribute__((noinline)) int caller(int x) { return target(x) + 1; }
int main(void) { return caller(1) == 8 ? 0 : 1; }
C
if ! cc -no-pie -O0 -g -o "$TMP/np" "$TMP/np.c" 2>/dev/null; then skip report_nopie "cannot build -no-pie"; exit 0; fi
t=$(nm "$TMP/np" | awk '$3=="target"{print "0x"$1}')
# The return address in caller: the instruction after its call to target.
r=$(objdump -d --no-show-raw-insn "$TMP/np" | awk '/<caller>:/{f=1} f&&/call.*<target>/{getline; sub(":","",$1); print "0x"$1; exit}')
mkdir -p "$TMP/d"
"$GEN" --write-exe "$TMP/d" "$TMP/np" 0 "$t" "$r" || { fail report_nopie_write "writer failed"; exit 0; }
"$FLTRACE" report -i "$TMP/d" 2>/dev/null
row=$(python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1])))[0]; print(r["code"], r["functions"])' "$TMP/d/fltrace-data-report-2000.out")
expect_eq report_nopie_exec "ET_EXEC frames" "$TMP/np.c:1<//>$TMP/np.c:2<//>??:? target<//>caller" "$row"
