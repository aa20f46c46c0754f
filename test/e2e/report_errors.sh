#!/usr/bin/env bash
# End-to-end: `fltrace report` on bad input: no trace, another version, truncation, a binary that
# changed or vanished since recording, bad options. Each must say what happened and what to do.
. "$(dirname "$0")/../lib.sh"
GEN=$BUILD/test/unit/test_report
if [ ! -x "$GEN" ]; then skip report_errors "$GEN not built (make unit-test)"; exit 0; fi

mkdir -p "$TMP/empty"
msg=$("$FLTRACE" report -i "$TMP/empty" 2>&1); rc=$?
expect_eq report_no_trace "message" "fltrace: report: no trace in $TMP/empty; run 'fltrace record' first" "$msg"
expect_eq report_no_trace_exit "exit" 1 "$rc"

msg=$("$FLTRACE" report --bogus 2>&1); rc=$?
expect_eq report_bad_option "exit" 2 "$rc"

D=$TMP/ver; mkdir -p "$D"; "$GEN" --write "$D" 1000 >/dev/null
printf '\x03' | dd of="$D/fltrace-data-trace-1000-0.bin" bs=1 seek=8 conv=notrunc 2>/dev/null
msg=$("$FLTRACE" report -i "$D" 2>&1); rc=$?
case "$msg" in *"version 3, this fltrace reads versions 1 to 2; use the fltrace that recorded it"*) pass report_other_version ;;
*) fail report_other_version "$msg" ;; esac

D=$TMP/trunc; mkdir -p "$D"; "$GEN" --write "$D" 1000 >/dev/null
truncate -s -20 "$D/fltrace-data-trace-1000-0.bin"
msg=$("$FLTRACE" report -i "$D" 2>&1); rc=$?
case "$msg" in *"warning"*"truncated"*) pass report_truncated_warns ;; *) fail report_truncated_warns "$msg" ;; esac
expect_eq report_truncated_exit "exit" 0 "$rc"
[ -s "$D/fltrace-data-report-1000.out" ] && pass report_truncated_reported || fail report_truncated_reported "no CSV"
expect_error report_time_reversed 2 "^fltrace: report: --time: '5:1' ends before it starts; " \
	"$FLTRACE" report -i "$D" --time 5:1
expect_error report_top_zero 2 "^fltrace: report: --top: '0' is not a positive number; " \
	"$FLTRACE" report -i "$D" --top 0
# visualize says it once (its allocation-site picture reads the trace again, and said it again)
msg=$("$FLTRACE" visualize -i "$D" 2>&1 > /dev/null); rc=$?
expect_eq visualize_truncated_warns_once "exit, lines on stderr, lines naming the cut" "0 1 1" \
	"$rc $(printf '%s\n' "$msg" | grep -c .) $(printf '%s\n' "$msg" | grep -c truncated)"

# One byte of the second-to-last fault record (two 72-byte fault records end the trace) changed:
# report names the record and its byte, exits 1, and counts exactly the faults before it.
D=$TMP/damaged; mkdir -p "$D"; "$GEN" --write "$D" 1000 >/dev/null
T=$D/fltrace-data-trace-1000-0.bin
"$FLTRACE" report -i "$D" > /dev/null 2>&1
whole=$(python3 -c 'import csv,sys; print(sum(int(r["count"]) for r in csv.DictReader(open(sys.argv[1]))))' "$D/fltrace-data-report-1000.out")
off=$(( $(stat -c %s "$T") - 2 * 72 ))
printf '\xff' | dd of="$T" bs=1 seek=$((off + 30)) conv=notrunc 2>/dev/null
expect_error report_damaged_named 1 "^fltrace: $T: record [0-9]+ \(at byte $off\) is damaged: its checksum does not match; what came before it is read, nothing after it" \
	"$FLTRACE" report -i "$D"
part=$(python3 -c 'import csv,sys; print(sum(int(r["count"]) for r in csv.DictReader(open(sys.argv[1]))))' "$D/fltrace-data-report-1000.out")
expect_eq report_damaged_counts_before "faults counted (all $whole less the last 2)" $((whole - 2)) "$part"

D=$TMP/bid; mkdir -p "$D"; "$GEN" --write "$D" 1000 bad-build-id >/dev/null
msg=$("$FLTRACE" report -i "$D" 2>&1)
case "$msg" in *"build-id differs"*) pass report_build_id_warns ;; *) fail report_build_id_warns "$msg" ;; esac
code=$(python3 -c 'import csv,sys; print(list(csv.DictReader(open(sys.argv[1])))[0]["code"])' "$D/fltrace-data-report-1000.out")
expect_eq report_build_id_unknown "frames of a changed binary" "??:?<//>??:?<//>??:?<//>??:?" "$code"

# A binary removed since recording: its frames are ??, with its path kept as lib.
D=$TMP/gone; mkdir -p "$D"; cp "$GEN" "$TMP/gone-bin"
"$TMP/gone-bin" --write "$D" 1000 >/dev/null; rm -f "$TMP/gone-bin"
msg=$("$FLTRACE" report -i "$D" 2>&1)
case "$msg" in *"gone-bin: no longer exists"*) pass report_binary_gone_warns ;; *) fail report_binary_gone_warns "$msg" ;; esac
lib=$(python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1])))[0]; print(r["lib"].split("<//>")[0], r["code"].split("<//>")[0])' "$D/fltrace-data-report-1000.out")
expect_eq report_binary_gone_frames "lib and code" "$TMP/gone-bin ??:?" "$lib"

# A directory the user cannot write: the message names -o, the way out.
D=$TMP/ro/d; mkdir -p "$D"; "$GEN" --write "$D" 1000 >/dev/null
chmod 755 "$TMP" "$TMP/ro"; chmod 644 "$D"/*; chmod 555 "$D"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	expect_error report_readonly_dir 1 "$D/fltrace-data-report-1000.out: cannot write it \\(Permission denied\\); .*with -o" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$FLTRACE" report -i "$D"
elif [ "$(id -u)" != 0 ]; then
	expect_error report_readonly_dir 1 "$D/fltrace-data-report-1000.out: cannot write it \\(Permission denied\\); .*with -o" \
		"$FLTRACE" report -i "$D"
else skip report_readonly_dir "no setpriv to drop root"; fi
chmod 755 "$D"

# report --help cites only what the user has: no file of the developers' notes.
if "$FLTRACE" report --help | grep -q 'formats\.md'; then fail report_help_no_formats_md "--help cites formats.md"
elif "$FLTRACE" report --help | grep -q 'Report CSV'; then pass report_help_no_formats_md
else fail report_help_no_formats_md "--help does not say where the CSV's columns are"; fi
