#!/usr/bin/env bash
# End-to-end: `fltrace report` on a synthetic trace whose stacks point into the unit-test binary
# (known functions and lines): exact CSV rows, views, filters, determinism.
. "$(dirname "$0")/../lib.sh"
GEN=$BUILD/test/unit/test_report
SRC=$ROOT/test/unit/test_report.c
if [ ! -x "$GEN" ]; then skip report_synthetic "$GEN not built (make unit-test)"; exit 0; fi
D=$TMP/t; mkdir -p "$D"
"$GEN" --write "$D" 1000 > "$TMP/answers" || { fail report_synth_write "writer failed"; exit 0; }
. "$TMP/answers"

# csvget FILE ROW COLUMN: one field, parsed by python's csv module (as pandas would read it)
csvget() { python3 -c 'import csv,sys
rows=list(csv.DictReader(open(sys.argv[1],newline="")))
print(rows[int(sys.argv[2])][sys.argv[3]] if int(sys.argv[2])<len(rows) else "<no row>")' "$@"; }

out=$( cd "$D" && "$FLTRACE" report 2>&1 ); rc=$?
expect_eq report_exit "exit status" 0 "$rc"
R=$D/fltrace-data-report-1000.out
expect_eq report_header "header" \
	"ips,flags,count,percent,op,type,lib,code,functions,kind,origin,syscall,file,offset,latency_total_us,latency_mean_us,latency_p99_us,nostack,latency_p50_us" \
	"$(head -1 "$R")"
expect_eq report_row0_ips "ips" "$leaf|$ret_b|$ret_c|" "$(csvget "$R" 0 ips)"
expect_eq report_row0_counts "flags,count,percent,op,type" "33 5 38 write zero" \
	"$(for c in flags count percent op type; do printf '%s ' "$(csvget "$R" 0 $c)"; done | sed 's/ $//')"
expect_eq report_row0_lib "lib (one per ips element: the last one after the closing |)" "$exe<//>$exe<//>$exe<//>??" "$(csvget "$R" 0 lib)"
expect_eq report_row0_code "code (leaf exact, callers at their call lines)" \
	"$SRC:$leaf_line<//>$SRC:$line_b<//>$SRC:$line_c<//>??:?" "$(csvget "$R" 0 code)"
expect_eq report_row0_functions "functions" "synth_leaf<//>synth_site_b<//>synth_site_c" \
	"$(csvget "$R" 0 functions)"
expect_eq report_row0_latency "kind,origin,latency" "zero user 15.0 3.0 5.0 0 3.0" \
	"$(for c in kind origin latency_total_us latency_mean_us latency_p99_us nostack latency_p50_us; do printf '%s ' "$(csvget "$R" 0 $c)"; done | sed 's/ $//')"
expect_eq report_row1 "refetch row: median, mean and p99 apart" "0 3 23 read regular refetch 30.0 10.0 25.0 3.0" \
	"$(for c in flags count percent op type kind latency_total_us latency_mean_us latency_p99_us latency_p50_us; do printf '%s ' "$(csvget "$R" 1 $c)"; done | sed 's/ $//')"
expect_eq report_file_row "file row: quoted path, offsets" "file|/data/x,\"y\".db|8192-16384|$libc<//>$exe<//>??" \
	"$(csvget "$R" 2 kind)|$(csvget "$R" 2 file)|$(csvget "$R" 2 offset)|$(csvget "$R" 2 lib)"
case "$(csvget "$R" 2 functions)" in
*getpid*"<//>synth_site_c") pass report_libc_function ;;
*) fail report_libc_function "got $(csvget "$R" 2 functions)" ;;
esac
expect_eq report_nostack_row "row without stack" "|1|1|refetch" \
	"$(csvget "$R" 3 ips)|$(csvget "$R" 3 count)|$(csvget "$R" 3 nostack)|$(csvget "$R" 3 kind)"
# faults without a stack: one line on stderr, with the runtime's reasons when its stats file is there
total=0; for i in 0 1 2 3 4 5 6 7; do c=$(csvget "$R" $i count); [ "$c" = "<no row>" ] || total=$((total + c)); done
expect_eq report_nostack_note "stderr of report" \
	"fltrace: report: pid 1000: 1 of $total faults have no stack" "$(printf '%s\n' "$out" | grep 'no stack')"
echo "1700000000,faults:$total,faults_nostack:1,faults_nostack_blocked:0,faults_nostack_moved:0,faults_nostack_unwind:1,faults_nostack_gone:0,faults_nostack_state:0" \
	> "$D/fltrace-data-stats-1000.out"
expect_eq report_nostack_why "stderr of report with the stats file" \
	"fltrace: report: pid 1000: 1 of $total faults have no stack (1: unwinding found no frame)" \
	"$("$FLTRACE" report -i "$D" --top 1 2>&1 >/dev/null | grep 'no stack')"
rm -f "$D/fltrace-data-stats-1000.out"
expect_eq report_syscall_row "fault inside read(2)" "syscall|read|write|$SRC:$line_b<//>$SRC:$line_c<//>??:?" \
	"$(csvget "$R" 4 origin)|$(csvget "$R" 4 syscall)|$(csvget "$R" 4 op)|$(csvget "$R" 4 code)"
if [ -n "$libm" ]; then
	expect_eq report_dlopen_lib "dlopen'd libm frame" "$libm<//>??" "$(csvget "$R" 5 lib)"
fi

cp "$R" "$TMP/first.out"
( cd "$D" && "$FLTRACE" report >/dev/null 2>&1 )
if cmp -s "$R" "$TMP/first.out"; then pass report_deterministic; else fail report_deterministic "second run differs"; fi

"$FLTRACE" report -i "$D" --by line >/dev/null 2>&1
expect_eq report_by_line "--by line first row" "$leaf||$SRC:$leaf_line<//>??:?|5" \
	"$(csvget "$R" 0 ips)|$(csvget "$R" 0 code)|$(csvget "$R" 0 count)"
"$FLTRACE" report -i "$D" --by function --kind zero,refetch --access read >/dev/null 2>&1
expect_eq report_by_function_filtered "--by function --kind --access" "synth_leaf|3|read" \
	"$(csvget "$R" 0 functions)|$(csvget "$R" 0 count)|$(csvget "$R" 0 op)"
"$FLTRACE" report -i "$D" --time 0:1.5 >/dev/null 2>&1
expect_eq report_time_window "--time 0:1.5 keeps the 5 first touches" "5|1" \
	"$(csvget "$R" 0 count)|$(($(wc -l < "$R") - 1))"
"$FLTRACE" report -i "$D" --kind syscall >/dev/null 2>&1
expect_eq report_kind_syscall "--kind syscall" "syscall|1" \
	"$(csvget "$R" 0 origin)|$(($(wc -l < "$R") - 1))"

folded=$("$FLTRACE" report -i "$D" --folded 2>/dev/null | head -1)
expect_eq report_folded "--folded first line" \
	"synth_site_c (test_report.c:$line_c);synth_site_b (test_report.c:$line_b);synth_leaf (test_report.c:$leaf_line) 5" "$folded"
"$FLTRACE" report -i "$D" --folded -o "$TMP/f.folded" 2>/dev/null
expect_eq report_folded_file "-o FILE" "$folded" "$(head -1 "$TMP/f.folded")"

top=$("$FLTRACE" report -i "$D" --top 2 2>/dev/null)
case "$top" in
*"COUNT"*"P50-US"*"P99-US"*"synth_leaf"*"test_report.c:$leaf_line"*) pass report_top ;;
*) fail report_top "table: $top" ;;
esac
# the re-fetch row's latency median and p99 in the table, the CSV's numbers (not its mean, 10.0)
if grep -Eq ' refetch +user +3\.0 +25\.0 ' <<< "$top"; then pass report_top_latency
else fail report_top_latency "no refetch row with P50 3.0 and P99 25.0: $top"; fi

"$FLTRACE" report -i "$D" --raw --files >/dev/null 2>&1
F=$D/fltrace-data-faults-1000-0.out
expect_eq report_raw_header "raw header" "tstamp,ip,addr,pages,flags,tid,trace,kind,origin,syscall_nr,latency_ns,stack_status" "$(head -1 "$F")"
expect_eq report_raw_row "raw first row" "1700000001.000000,${leaf#0x},20000000,1,33,4242,$leaf|$ret_b|$ret_c|,zero,user,-1,1000,ok" "$(sed -n 2p "$F")"
expect_eq report_files "files view" '"/data/x,""y"".db",8192,16384,2,2,3.000000,1' \
	"$(sed -n 2p "$D/fltrace-data-files-1000.out")"

"$GEN" --write "$D" 1001 > /dev/null
"$FLTRACE" report -i "$D" >/dev/null 2>&1
if [ -f "$D/fltrace-data-report-1001.out" ] && [ -f "$R" ]; then pass report_per_process
else fail report_per_process "missing per-pid files"; fi
"$FLTRACE" report -i "$D" --merge >/dev/null 2>&1
expect_eq report_merge "--merge sums the same stack of two processes" "10" \
	"$(csvget "$D/fltrace-data-report-all.out" 0 count)"
"$FLTRACE" report -i "$D" --pid 1001 --top 1 > "$TMP/top1" 2>&1
if grep -q "^pid 1001" "$TMP/top1" && ! grep -q "^pid 1000" "$TMP/top1"; then pass report_pid_filter
else fail report_pid_filter "$(cat "$TMP/top1")"; fi
