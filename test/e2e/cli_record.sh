#!/usr/bin/env bash
# End-to-end tests of `fltrace record` on small programs: every spelling of the sizes, the
# command's own arguments reaching it untouched, the environment contract of inc/fltrace/config.h,
# exit statuses, signals, an earlier recording kept in fltrace-data.old, and the summary line.
. "$(dirname "$0")/../lib.sh"

# Spellings: the refusal "-L larger than -M" prints the parsed value, so no run is needed.
spelling() { # NAME EXPECTED_MB ARGS...
	local name=$1 mb=$2
	shift 2
	expect_error "$name" 2 "-L: local memory \($mb MB\) is larger than -M \(1.0 MB\)" \
		"$FLTRACE" record "$@" -M 1 -- true
}
spelling spelling_L_space 140.0 -L 140
spelling spelling_L_equals 140.0 -L=140
spelling spelling_L_attached 140.0 -L140
spelling spelling_localmem_space 140.0 --localmem 140
spelling spelling_localmem_equals 140.0 --localmem=140
spelling spelling_suffix_M 140.0 -L 140M
spelling spelling_suffix_G 2048.0 -L 2G
spelling spelling_suffix_lower_g 2048.0 -L=2g
spelling spelling_fraction_G 1536.0 --localmem=1.5G
spelling spelling_suffix_K 2.0 -L 2048K
spelling spelling_last_wins 3.0 -L 2 -L 3
expect_error spelling_M_equals 2 '-L: local memory \(2.0 MB\) is larger than -M \(1.0 MB\)' \
	"$FLTRACE" record -L 2 -M=1 -- true
expect_error spelling_maxmem_equals 2 '-L: local memory \(2.0 MB\) is larger than -M \(1.0 MB\)' \
	"$FLTRACE" record -L 2 --maxmem=1 -- true
# Options after the command belong to the command: here -M 1 is its, so fltrace's -M is the
# machine's (and -L 2 is not refused as larger than -M 1).
expect_eq options_stop_at_command "environment seen by the command" \
	"FLTRACE_LOCALMEM=2097152 FLTRACE_MAXMEM=$(($(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024))" \
	"$("$FLTRACE" record -L 2 -o "$TMP/stop" sh -c 'echo FLTRACE_LOCALMEM=$FLTRACE_LOCALMEM FLTRACE_MAXMEM=$FLTRACE_MAXMEM' -M 1 2>/dev/null)"

if ! have_preload; then
	skip record_runs "preload library $BUILD/lib/fltrace/libfltrace.so not built (run make)"
	exit 0
fi
OUT=$TMP/out
mkdir -p "$OUT"
REC=("$FLTRACE" record -L 16 -M 64 -o "$OUT")

# The command's own arguments, options and "--" included, reach it untouched.
expect_eq args_untouched "stdout" "[-L][5][--][][a b][--x=1][-o][*]" \
	"$("${REC[@]}" -- printf '[%s]' -L 5 -- '' 'a b' --x=1 -o '*' 2>/dev/null)"
expect_eq args_untouched_without_dashdash "stdout" "[-L][5][--]" \
	"$("${REC[@]}" printf '[%s]' -L 5 -- 2>/dev/null)"
expect_eq args_after_dashdash_never_parsed "stdout" "[--help][-L][0]" \
	"$("${REC[@]}" -- printf '[%s]' --help -L 0 2>/dev/null)"
expect_eq stdin_reaches_command "stdout" "piped" "$(echo piped | "${REC[@]}" -- cat 2>/dev/null)"

# The environment contract of inc/fltrace/config.h, seen from inside the command.
env_out=$(LD_PRELOAD=/nonexistent-keep.so FLTRACE_CORES=7 \
	"$FLTRACE" record -L=1G -M 2G -C 2 --cores 1,0 -S 100 --policy fifo --depth 32 --poll spin \
	-o "$OUT" -- env 2>/dev/null)
lib=$(readlink -f "$BUILD/lib/fltrace/libfltrace.so")
want="FLTRACE_LOCALMEM=1073741824
FLTRACE_MAXMEM=2147483648
FLTRACE_OUTDIR=$(readlink -f "$OUT")
FLTRACE_HANDLERS=2
FLTRACE_CORES=0-1
FLTRACE_SAMPLERATE=100
FLTRACE_POLICY=fifo
FLTRACE_STACK_DEPTH=32
FLTRACE_POLL=spin
FLTRACE_PRELOAD=$lib
LD_PRELOAD=$lib:/nonexistent-keep.so"
got=$(grep -E '^(FLTRACE_(LOCALMEM|MAXMEM|OUTDIR|HANDLERS|CORES|SAMPLERATE|POLICY|STACK_DEPTH|POLL|PRELOAD|STATUS_FD)|LD_PRELOAD)=' <<<"$env_out" | sort)
expect_eq environment_contract "environment" "$(sort <<<"$want")" "$got"
got=$(cd "$OUT" && FLTRACE_CORES=3 "$FLTRACE" record -L 16 -M 64 -- env 2>/dev/null |
	grep -E '^(FLTRACE_(CORES|HANDLERS|SAMPLERATE|POLICY|STACK_DEPTH|POLL|OUTDIR|STATUS_FD)|LD_PRELOAD)=' | sort | tr '\n' ' ')
expect_eq environment_defaults "environment" "FLTRACE_HANDLERS=1 FLTRACE_OUTDIR=$(readlink -f "$OUT") FLTRACE_POLICY=2q FLTRACE_POLL=percpu FLTRACE_SAMPLERATE=0 FLTRACE_STACK_DEPTH=64 LD_PRELOAD=$lib " "$got"

# Busy-polling handlers on every CPU the program may use: said, not refused (one CPU via taskset).
note=$(taskset -c 0 "${REC[@]}" --poll spin -- true 2>&1 >/dev/null | grep -c 'note: --poll spin with 1 handler thread on 1 CPU leaves the program no CPU')
quiet=$(taskset -c 0 "${REC[@]}" -- true 2>&1 >/dev/null | grep -c 'note: --poll spin')
expect_eq spin_on_every_cpu_noted "notes with --poll spin, then with the default" "1 0" "$note $quiet"

# Exit statuses: the command's own; a command killed by signal N kills fltrace with N too (a
# shell's $? is 128+N either way; a parent that reads the wait status sees the signal).
"${REC[@]}" -- sh -c 'exit 7' 2>/dev/null
expect_eq exit_status_passed "exit status" 7 $?
{ "${REC[@]}" -- sh -c 'kill -SEGV $$'; } 2>/dev/null # (and bash's "Segmentation fault" line)
expect_eq exit_signal_segv "exit status" 139 $?
waited() { /usr/bin/python3 -c 'import subprocess, sys
print(subprocess.run(sys.argv[1:], stderr=subprocess.DEVNULL).returncode)' "$@"; }
expect_eq exit_signal_wait_status "python's returncode (the wait status), native and traced" \
	"$(waited sh -c 'kill -SEGV $$') $(waited sh -c 'kill -TERM $$')" \
	"$(waited "${REC[@]}" -- sh -c 'kill -SEGV $$') $(waited "${REC[@]}" -- sh -c 'kill -TERM $$')"
"${REC[@]}" -- sh -c 'exit 125' 2>/dev/null
expect_eq exit_status_125_passed "exit status" 125 $?
# A file without "#!" runs through /bin/sh, as execvp does.
printf 'exit 3\n' > "$TMP/noshebang"
chmod 755 "$TMP/noshebang"
"${REC[@]}" -- "$TMP/noshebang" 2>/dev/null
expect_eq script_without_shebang "exit status" 3 $?
mkdir -p "$TMP/bin"
printf '#!/bin/sh\necho "found $1"\n' > "$TMP/bin/fltrace-test-script"
chmod 755 "$TMP/bin/fltrace-test-script"
expect_eq command_found_in_path "stdout" "found x" \
	"$(PATH="$TMP/bin:$PATH" "${REC[@]}" -- fltrace-test-script x 2>/dev/null)"

# Signals, as a shell treats its foreground child. Each case waits until the command runs.
signal_case() { # NAME SIGNAL EXPECTED_STATUS SCRIPT
	local name=$1 sig=$2 want=$3 script=$4 pid rc
	rm -f "$TMP/started"
	{ env --default-signal=INT,QUIT,TERM,HUP "${REC[@]}" -- sh -c "$script" 2>"$TMP/sig.err" & } 2>/dev/null
	pid=$!
	# until the command runs (however long a busy machine takes), or fltrace has ended
	while [ ! -e "$TMP/started" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	kill -"$sig" "$pid"
	{ wait "$pid"; } 2>/dev/null
	rc=$?
	expect_eq "$name" "exit status (stderr: $(tr '\n' ' ' < "$TMP/sig.err"))" "$want" "$rc"
}
signal_case sigterm_forwarded_to_command TERM 143 "touch $TMP/started; exec sleep 30"
signal_case sighup_forwarded_to_command HUP 129 "touch $TMP/started; exec sleep 30"
signal_case sigint_ignored_by_fltrace INT 3 "touch $TMP/started; sleep 1; exit 3"
env --default-signal=INT "${REC[@]}" -- sh -c 'kill -INT $$; exit 0' 2>/dev/null
expect_eq sigint_default_in_command "exit status" 130 $?

# An earlier recording in the output directory is kept in fltrace-data.old/, one generation: the
# run before it goes, files that are not fltrace's stay, and the note says where.
mkdir -p "$TMP/old/fltrace-data.old"
touch "$TMP/old/fltrace-data-stats-999999999.out" "$TMP/old/fltrace-data-faults-999999999-0.out" \
	"$TMP/old/keep.txt" "$TMP/old/fltrace-data.old/fltrace-data-stats-888888888.out" \
	"$TMP/old/fltrace-data.old/notes.txt"
err=$("$FLTRACE" record -L 16 -M 64 -o "$TMP/old" -- true 2>&1 >/dev/null)
old_now=$(cd "$TMP/old/fltrace-data.old" && ls | tr '\n' ' ')
if ! grep -q "^fltrace: record: moved the earlier recording (2 fltrace-data-\* files) to $TMP/old/fltrace-data.old, replacing the one before it$" <<<"$err"; then
	fail old_recording_kept "no note of 2 files moved: $err"
elif [ -e "$TMP/old/fltrace-data-stats-999999999.out" ] || [ -e "$TMP/old/fltrace-data-faults-999999999-0.out" ]; then
	fail old_recording_kept "old files still beside the new run"
elif [ "$old_now" != "fltrace-data-faults-999999999-0.out fltrace-data-stats-999999999.out notes.txt " ]; then
	fail old_recording_kept "fltrace-data.old holds: $old_now"
elif [ ! -e "$TMP/old/keep.txt" ]; then
	fail old_recording_kept "moved a file that is not fltrace's"
else
	pass old_recording_kept
fi
# and the run just made is the next one kept: report reads it there
new_trace=$(cd "$TMP/old" && ls fltrace-data-trace-*.bin)
"$FLTRACE" record -L 16 -M 64 -o "$TMP/old" -- true 2>/dev/null
if [ -n "$new_trace" ] && [ -f "$TMP/old/fltrace-data.old/$new_trace" ] &&
	"$FLTRACE" report -i "$TMP/old/fltrace-data.old" --top 1 > /dev/null 2>&1; then
	pass old_recording_readable
else
	fail old_recording_readable "$new_trace not in fltrace-data.old, or report cannot read it"
fi
# a link put under fltrace-data.old is refused by name, and its target left alone
mkdir -p "$TMP/oldlink/target"
"$FLTRACE" record -L 16 -M 64 -o "$TMP/oldlink" -- true 2>/dev/null
ln -s "$TMP/oldlink/target" "$TMP/oldlink/fltrace-data.old"
expect_error old_recording_link_refused 125 \
	"^fltrace: $TMP/oldlink/fltrace-data.old: is a symbolic link that fltrace did not make; " \
	"$FLTRACE" record -L 16 -M 64 -o "$TMP/oldlink" -- true
expect_eq old_recording_link_target_untouched "files in the link's target" "" "$(ls -A "$TMP/oldlink/target")"
mkdir -p "$TMP/new/sub"
"$FLTRACE" record -L 16 -M 64 -o "$TMP/new/sub/dir" -- true 2>/dev/null
if [ -d "$TMP/new/sub/dir" ]; then pass output_dir_created; else fail output_dir_created "not created"; fi

# expect_summary NAME REGEX RECORD-ARGS...: `fltrace record RECORD-ARGS` exits 0 and its stderr has
# a line matching REGEX
expect_summary() {
	local name=$1 re=$2 err rc
	shift 2
	err=$(timeout -k 10 "$HANG" "$FLTRACE" record "$@" 2>&1 >/dev/null); rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name" "exit $rc: $err"
	elif ! grep -Eq "$re" <<<"$err"; then
		fail "$name" "no such summary line (/$re/): $err"
	else
		pass "$name"
	fi
}

if have_uffd; then
	# The summary, from the stats files the runtime wrote.
	expect_summary summary_line "^fltrace: recorded [0-9]+ faults in [0-9]+ process(es)? \(peak tracked resident [0-9]+\.[0-9] MB, far [0-9]+\.[0-9] MB\); trace in $TMP/sum; run 'fltrace report' there$" \
		-L 16 -M 64 -o "$TMP/sum" -- sh -c 'exit 0'
	# Without -L and -M: a learning run, every first touch and nothing evicted, as the summary
	# says. python's bytearray(50 MiB) is zeroed by one memset: its stack holds the biggest row,
	# 12800 first touches (50 MiB / 4 KiB), 12801 if the buffer does not start on a page boundary.
	dir=$TMP/learn
	expect_summary learning_run "^fltrace: recorded [0-9]+ faults in 1 process \(no -L/-M: uncapped, up to the machine's [0-9]+\.[0-9] MB, nothing evicted; peak tracked resident" \
		-o "$dir" -- /usr/bin/python3 -c 'b=bytearray(50<<20)'
	top=$("$FLTRACE" report -i "$dir" --top 1 2>/dev/null | sed -n 3p | awk '{ print $1, $3, $4 }')
	case "$top" in
	"12800 write zero" | "12801 write zero") pass learning_run_bytearray_first_touches ;;
	*) fail learning_run_bytearray_first_touches "biggest row: '$top', expected 12800 or 12801 first-touch writes" ;;
	esac
	expect_stat learning_run_nothing_evicted "$dir" evict_pages_done -eq 0
	expect_stat learning_run_no_refetch "$dir" faults_refetch -eq 0
	# A command that touches no tracked memory for the first time records no fault: fltrace's own
	# heap (jemalloc's arena and cache, 28 pages) starts before tracking does, and its start is
	# not the program's (28 faults, each with its stack, before). The report says so.
	expect_summary nothing_touched_no_faults "^fltrace: recorded 0 faults in 1 process" -o "$TMP/none" -- true
	expect_eq nothing_touched_report_says_so "report's note" \
		"fltrace: report: the recording holds no faults: the command touched no tracked memory (its heap, anonymous or private file mappings) for the first time" \
		"$("$FLTRACE" report -i "$TMP/none" -o "$TMP/none/r.csv" 2>&1 >/dev/null)"
	# -L alone: -M is the machine's memory, and the summary says so
	expect_summary L_alone_summary "^fltrace: recorded [0-9]+ faults in 1 process \(-M not given: the machine's [0-9]+\.[0-9] MB; peak" \
		-L 16 -o "$TMP/L-alone" -- true
else
	skip summary_line "no permission for userfaultfd here"
fi

# Installed elsewhere (PREFIX/bin + PREFIX/lib/fltrace) or run through a symbolic link, fltrace
# finds its preload library relative to its own binary.
mkdir -p "$TMP/prefix/bin" "$TMP/prefix/lib/fltrace" "$TMP/links"
cp "$FLTRACE" "$TMP/prefix/bin/fltrace"
cp "$BUILD/lib/fltrace/libfltrace.so" "$TMP/prefix/lib/fltrace/libfltrace.so"
ln -s "$TMP/prefix/bin/fltrace" "$TMP/links/fltrace"
for how in prefix/bin links; do
	got=$("$TMP/$how/fltrace" record -L 16 -M 64 -o "$TMP/inst-out" -- printenv FLTRACE_PRELOAD 2>/dev/null)
	expect_eq "preload_found_from_${how%%/*}" "FLTRACE_PRELOAD" "$TMP/prefix/lib/fltrace/libfltrace.so" "$got"
done

# The trace files hold the command line, addresses and paths: only their owner reads them (as perf's)
(umask 022 && "$FLTRACE" record -L 16 -M 64 -o "$TMP/modes" -- true 2>/dev/null)
modes=$(cd "$TMP/modes" && stat -c '%a' fltrace-data-trace-*.bin fltrace-data-stats-*.out fltrace-data-procmaps-*.out | sort -u | tr '\n' ' ')
expect_eq trace_files_owner_only "modes of the trace, stats and maps files" "600 " "$modes"
expect_error cores_reversed 2 "^fltrace: --cores: '1-0' is a range that ends before it starts; " \
	"$FLTRACE" record --cores 1-0 -- /bin/true
