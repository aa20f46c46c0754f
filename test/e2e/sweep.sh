#!/usr/bin/env bash
# fltrace sweep on programs with known answers: fillscan fills 8 MiB (P pages: 2048, or 2049 when
# jemalloc's cache-oblivious offset shifts the array) at fillscan.c:19 and reads it 3 times at
# fillscan.c:22. With local memory below the array, each pass re-fetches every page (a cyclic scan
# defeats clock and fifo alike): 3P re-fetches at line 22; at 16 MiB none. Also: the automatic
# sizes, a program whose output changes with -L, stdin given to every run, usage errors.
. "$(dirname "$0")/../lib.sh"

FS=$PROGS/fillscan
NAMES=(sweep_runs sweep_csv_columns sweep_callsites_exact sweep_refetch_stats sweep_svg
	sweep_program_output sweep_report_visualize_one_run sweep_auto_sizes sweep_output_differs
	sweep_stdin_each_run)
if ! have_preload || ! have_uffd || [ ! -x "$FS" ]; then
	for n in "${NAMES[@]}"; do skip "$n" "no preload library, fillscan or userfaultfd"; done
	exit 0
fi

# ---- given sizes, two policies ----
D=$TMP/sw
# 6 MiB, not 8: with P = 2048 the array is exactly 8 MiB, and whether a pass then re-fetches depends
# on which of the runtime's and jemalloc's own heap pages happen to be resident (seen: 14 instead of
# 6144 under load); below the array every pass re-fetches every page, whatever else is resident.
timeout -k 10 "$HANG" "$FLTRACE" sweep -L 4,6,16 --policy clock,fifo -M 64 -o "$D" -- "$FS" 8 3 \
	> "$TMP/out" 2> "$TMP/err" < /dev/null
rc=$?
RUNS="L16M-clock L6M-clock L4M-clock L16M-fifo L6M-fifo L4M-fifo"
got=$(tail -n +2 "$D/sweep.csv" 2>/dev/null | cut -d, -f1 | tr '\n' ' ')
if [ $rc -ne 0 ]; then fail sweep_runs "exit $rc: $(tail -3 "$TMP/err")"
elif [ "$got" != "$RUNS " ]; then fail sweep_runs "runs '$got', expected '$RUNS '"
elif [ "$(grep -c 'fltrace: sweep: run [1-6]/6: ' "$TMP/err")" != 6 ]; then
	fail sweep_runs "no progress line per run: $(head -3 "$TMP/err")"
elif ! grep -q 'run 2/6: L6M-clock, -L 6 MiB, clock (the last run took [0-9.]* s)' "$TMP/err"; then
	fail sweep_runs "progress line does not say the last run's time: $(sed -n 2p "$TMP/err")"
else pass sweep_runs; fi

expect_eq sweep_csv_columns "header" \
	"run,policy,localmem_bytes,processes,faults,first_touch,refetch,file,wp,in_syscall,nostack,sampled_out,wall_s,slowdown,resident_peak_bytes,far_peak_bytes,vm_hwm_bytes,exit_status,output,prefetch_hits,prefetch_pages,prefetch_used" \
	"$(head -1 "$D/sweep.csv" 2>/dev/null)"

# callsites.csv: function,code,object,<one column per run>; per run, line 19 has P first touches
# and line 22 has 3P re-fetches below 16 MiB, none at 16 MiB.
bad=""
hdr=$(head -1 "$D/callsites.csv" 2>/dev/null)
[ "$hdr" = "function,code,object,$(echo $RUNS | tr ' ' ',')" ] || bad="header '$hdr'; "
fill=$(grep -F 'test/progs/fillscan.c:19,' "$D/callsites.csv" | cut -d, -f4-)
scan=$(grep -F 'test/progs/fillscan.c:22,' "$D/callsites.csv" | cut -d, -f4-)
for i in 1 2 3 4 5 6; do
	p=$(cut -d, -f$i <<<"$fill"); s=$(cut -d, -f$i <<<"$scan")
	run=$(cut -d' ' -f$i <<<"$RUNS")
	want=$((3 * ${p:-0})); [[ $run == L16M* ]] && want=0
	[ "$p" = 2048 ] || [ "$p" = 2049 ] || bad="$bad$run: line 19 has '$p' pages, expected 2048 or 2049; "
	[ "${s:-x}" = "$want" ] || bad="$bad$run: line 22 has '$s', expected $want; "
done
if [ -z "$bad" ]; then pass sweep_callsites_exact; else fail sweep_callsites_exact "$bad"; fi

# sweep.csv agrees: re-fetches of the run cover line 22's; no refetch at 16 MiB; slowdown of the
# largest size is 1.
bad=""
while IFS=, read -r run pol lm procs faults zero refetch file wp sys nost samp wall slow res far hwm st out _hits _pages _used; do
	i=$(echo $RUNS | tr ' ' '\n' | grep -n "^$run\$" | cut -d: -f1)
	s=$(cut -d, -f$i <<<"$scan")
	[ "$refetch" -ge "${s:-0}" ] || bad="$bad$run: refetch $refetch < line 22's $s; "
	[ "$zero" -ge 2048 ] || bad="$bad$run: first_touch $zero; "
	[[ $run == L16M* ]] && { [ "$refetch" = 0 ] && [ "$slow" = 1.000 ] || bad="$bad$run: refetch $refetch slowdown $slow; "; }
	[ "$out" = same ] && [ "$st" = 0 ] || bad="$bad$run: output $out status $st; "
	[ "$res" -le "$lm" ] || [[ $run == L16M* ]] || bad="$bad$run: resident peak $res above -L $lm; "
done < <(tail -n +2 "$D/sweep.csv")
if [ -z "$bad" ]; then pass sweep_refetch_stats; else fail sweep_refetch_stats "$bad"; fi

# The curve: well-formed, one line per policy in each panel (of each scale), a dot per run.
svg=$D/curve.svg
if ! command -v xmllint >/dev/null; then skip sweep_svg "no xmllint (apt-get install libxml2-utils)"
elif ! xmllint --noout "$svg" 2>"$TMP/xml"; then fail sweep_svg "not well-formed: $(head -2 "$TMP/xml")"
else
	lines=$(xmllint --xpath 'count(//*[local-name()="polyline"])' "$svg")
	per=$(for panel in refetch slowdown; do for pol in clock fifo; do
		echo -n "$(xmllint --xpath "count(//*[local-name()=\"polyline\"][@data-panel=\"$panel\"][@data-policy=\"$pol\"])" "$svg") "
		done; done)
	dots=$(xmllint --xpath 'count(//*[local-name()="circle"])' "$svg")
	pts=$(xmllint --xpath 'string(//*[local-name()="polyline"][@data-panel="refetch"][@data-policy="fifo"]/@points)' "$svg" | wc -w)
	# each twice: on the linear scale and on the log scale
	if [ "$lines" != 8 ] || [ "$per" != "2 2 2 2 " ] || [ "$dots" != 24 ] || [ "$pts" != 3 ]; then
		fail sweep_svg "$lines polylines (per panel/policy: $per), $dots dots, $pts points in fifo's line"
	elif ! grep -q 'local memory (-L, log scale)' "$svg" || ! grep -q '>re-fetches (pages)<' "$svg" ||
		! grep -q '>16 MiB<' "$svg"; then fail sweep_svg "axis labels missing"
	elif ! "$FLTRACE" sweep --help >/dev/null; then fail sweep_svg "help failed"
	else pass sweep_svg; fi
fi

# The program's own output, saved per run, is its untraced output.
native=$("$FS" 8 3)
bad=""
for r in $RUNS; do [ "$(cat "$D/$r/stdout" 2>/dev/null)" = "$native" ] || bad="$bad $r"; done
if [ -n "$bad" ]; then fail sweep_program_output "stdout differs from the untraced run in:$bad"
elif grep -qF "$native" "$TMP/out"; then fail sweep_program_output "the program's output leaked into sweep's stdout"
elif ! grep -q 'L4M-fifo .*same' "$TMP/out"; then fail sweep_program_output "no runs table on stdout: $(head -5 "$TMP/out")"
else pass sweep_program_output; fi

# report and visualize read a run's directory as any recording.
if "$FLTRACE" report -i "$D/L4M-clock" --by line --top 3 > "$TMP/rep" 2>&1 &&
	grep -q 'fillscan.c:22' "$TMP/rep" && "$FLTRACE" visualize -i "$D/L4M-clock" > "$TMP/vis" 2>&1 &&
	grep -q 'It ran <b>[0-9.]*&times;</b> as long as the run at the largest -L of the same policy in its sweep' \
		"$D"/L4M-clock/fltrace-data-index-*.html; then pass sweep_report_visualize_one_run
else fail sweep_report_visualize_one_run "$(tail -3 "$TMP/rep" "$TMP/vis")"; fi

# the policy of runs without --policy: record's default
DEF=$(sed -n 's/^#define FLTRACE_POLICY_DEFAULT "\(.*\)"/\1/p' "$ROOT/inc/fltrace/policies.h")

# ---- sizes from the ample run's peak ----
A=$TMP/auto
timeout -k 10 "$HANG" "$FLTRACE" sweep -M 64 -o "$A" -- "$FS" 8 1 > /dev/null 2> "$TMP/err" < /dev/null
rc=$?
peak=$(awk -F, '$1 == "ample" { print $15 }' "$A/sweep.csv" 2>/dev/null)
# P/2 .. P/16, each rounded up to two significant digits of K, M or G (then to a page), and named
# so: "L4.1M", not "L4195K"
want="ample:$((64 << 20))$(python3 - "${peak:-0}" "$DEF" <<'PY'
import math, sys
peak, pol = int(sys.argv[1]), sys.argv[2]
for k in range(1, 5):
    b = peak >> k
    unit, c = (1 << 30, "G") if b >= 1 << 30 else (1 << 20, "M") if b >= 1 << 20 else (1024, "K")
    v = b / unit
    step = 10 if v >= 100 else 1 if v >= 10 else 0.1
    r = math.ceil(v / step - 1e-9) * step
    name = ("%.1f" % r) if step < 1 and r != math.floor(r) else "%.0f" % r
    size = (math.ceil(r * unit) + 4095) // 4096 * 4096
    print(" L%s%s-%s:%d" % (name, c, pol, size), end="")
PY
)"
got=$(tail -n +2 "$A/sweep.csv" 2>/dev/null | awk -F, '{ printf "%s%s:%s", (NR > 1 ? " " : ""), $1, $3 }')
if [ $rc -ne 0 ]; then fail sweep_auto_sizes "exit $rc: $(tail -2 "$TMP/err")"
elif [ "${peak:-0}" -lt $((8 << 20)) ]; then fail sweep_auto_sizes "ample peak $peak below the 8 MiB array"
elif [ "$got" != "$want" ]; then fail sweep_auto_sizes "runs '$got', expected '$want'"
elif ! grep -q 'run 1/5: ample' "$TMP/err"; then fail sweep_auto_sizes "progress: $(head -1 "$TMP/err")"
else pass sweep_auto_sizes; fi
# the curve's log scale: its own panels, picked by #log (or the button) in a browser
if [ -x /usr/bin/chromium ] && [ -s "$A/curve.svg" ]; then
	st=$(timeout "$HANG" /usr/bin/chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$TMP/chrome" --dump-dom "file://$A/curve.svg#log" 2>/dev/null |
		grep -o 'data-state="[^"]*"' | head -1)
	expect_eq sweep_curve_log "state of curve.svg#log" 'data-state="log"' "$st"
else skip sweep_curve_log "no chromium"; fi

# ---- output that depends on -L (record tells the program its size in FLTRACE_LOCALMEM) ----
O=$TMP/differs
timeout -k 10 "$HANG" "$FLTRACE" sweep -L 4,8 -M 64 -o "$O" -- sh -c \
	'echo "half: $((FLTRACE_LOCALMEM / 2))"; exec "$0" 1 1 > /dev/null' "$FS" > /dev/null 2> "$TMP/err" < /dev/null
rc=$?
outcol=$(tail -n +2 "$O/sweep.csv" 2>/dev/null | cut -d, -f1,19 | tr '\n' ' ')
if [ $rc != 1 ]; then fail sweep_output_differs "exit $rc, expected 1: $(tail -2 "$TMP/err")"
elif [ "$outcol" != "L8M-$DEF,same L4M-$DEF,differs " ]; then fail sweep_output_differs "output column: $outcol"
elif ! grep -q "^fltrace: sweep: L4M-$DEF: stdout differs from line 1 of L8M-$DEF" "$TMP/err"; then
	fail sweep_output_differs "no note naming the run: $(cat "$TMP/err")"
elif [ "$(tail -1 "$TMP/err" | grep -c '^fltrace: sweep: the command.s output differed in 1 of 2 runs.*; ')" != 1 ]; then
	fail sweep_output_differs "last line: $(tail -1 "$TMP/err")"
else pass sweep_output_differs; fi

# ---- a piped stdin is given whole to every run ----
I=$TMP/stdin
printf 'one\ntwo\nthree\n' | timeout -k 10 "$HANG" "$FLTRACE" sweep -L 1,2 -M 64 -o "$I" -- wc -l > /dev/null 2> "$TMP/err"
rc=$?
if [ $rc -ne 0 ]; then fail sweep_stdin_each_run "exit $rc: $(tail -2 "$TMP/err")"
elif [ "$(cat "$I/L2M-$DEF/stdout" "$I/L1M-$DEF/stdout" 2>/dev/null | tr -d ' ' | tr '\n' ' ')" != "3 3 " ]; then
	fail sweep_stdin_each_run "wc -l printed: $(cat "$I"/*/stdout 2>/dev/null | tr '\n' ' ')"
else pass sweep_stdin_each_run; fi

# ---- usage errors: one line, exit 2 ----
expect_error sweep_bad_size 2 "^fltrace: -L: 'x' in '4,x' is not a number" "$FLTRACE" sweep -L 4,x -- true
expect_error sweep_bad_policy 2 "^fltrace: --policy: 'lru' is not a policy" "$FLTRACE" sweep --policy clock,lru -- true
expect_error sweep_no_command 2 "^fltrace: sweep: no command given" "$FLTRACE" sweep -L 4
expect_error sweep_size_above_maxmem 2 "^fltrace: -L: the largest size is more than -M" "$FLTRACE" sweep -L 4,128 -M 64 -- true
expect_error sweep_bad_record_option 2 "^fltrace: -C: '0' is zero" "$FLTRACE" sweep -L 4 -M 64 -C 0 -o "$TMP/bad" -- true
expect_error sweep_empty_prefetch_item 2 "^fltrace: --prefetch: 'none,,readahead' has an empty item" "$FLTRACE" sweep -L 4 --prefetch none,,readahead -- true
expect_error sweep_empty_policy_item 2 "^fltrace: --policy: '2q,' has an empty item" "$FLTRACE" sweep -L 4 --policy 2q, -- true
expect_error sweep_empty_size_item 2 "^fltrace: -L: ',4' has an empty item" "$FLTRACE" sweep -L ,4 -- true

# ---- help ----
h=$("$FLTRACE" sweep --help); rc=$?
missing=""
for w in --localmem --policy --maxmem --output --top -L -M -o "sweep.csv" "curve.svg" "callsites.csv" \
	examples: "exit status" "fltrace sweep -L 16,32,64,128 --policy clock,fifo"; do
	grep -qF -- "$w" <<<"$h" || missing="$missing '$w'"
done
if [ $rc -ne 0 ] || [ -n "$missing" ]; then fail sweep_help "exit $rc, missing:$missing"
elif [ "$h" != "$("$FLTRACE" help sweep)" ]; then fail sweep_help "'fltrace help sweep' differs from --help"
elif ! "$FLTRACE" help | grep -q '^  sweep  '; then fail sweep_help "the top-level help does not list sweep"
else pass sweep_help; fi

# A command that does not exist: one line before any run, and nothing left on disk.
N=$TMP/nosuch
expect_error sweep_no_such_command 127 "^fltrace: nosuchprog-fltrace: command not found" \
	"$FLTRACE" sweep -o "$N" -- nosuchprog-fltrace
if [ -e "$N" ]; then fail sweep_no_such_command_nothing_left "$(find "$N" | head -3 | tr '\n' ' ')"
else pass sweep_no_such_command_nothing_left; fi

# A command that fails the same way in every run: the runs agree (exit 0), and the failure is said.
err=$("$FLTRACE" sweep -L 1,2 -M 64 -o "$TMP/fails" -- sh -c 'exit 3' 2>&1 > /dev/null); rc=$?
if [ $rc = 0 ] && grep -q "^fltrace: sweep: L2M-2q: the command exited with status 3; its stderr is in .*/L2M-2q/stderr" <<<"$err"; then
	pass sweep_command_fails_said
else
	fail sweep_command_fails_said "exit $rc: $err"
fi

# An output directory it cannot write in is named as such, before anything runs (it named the
# stdin file it would have saved there).
mkdir -p "$TMP/ro"
if unshare --mount true 2> /dev/null; then
	err=$(unshare --mount sh -c 'mount -t tmpfs -o ro tmpfs "$1" && echo input | "$2" sweep -o "$1" -L 16 -- /bin/true' \
		_ "$TMP/ro" "$FLTRACE" 2>&1 > /dev/null); rc=$?
	if [ $rc = 1 ] && [ "$err" = "fltrace: $TMP/ro: cannot write in the output directory (Read-only file system); give a writable directory with -o DIR" ]; then
		pass sweep_readonly_outdir
	else
		fail sweep_readonly_outdir "exit $rc: $err"
	fi
else
	skip sweep_readonly_outdir "no mount namespace here (unshare --mount)"
fi
