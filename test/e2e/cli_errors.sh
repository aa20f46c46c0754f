#!/usr/bin/env bash
# End-to-end tests of the fltrace command's refusals: each bad input gets exactly one line
# "fltrace: <what>: <why>; <what to do>" on stderr and the documented exit code.
. "$(dirname "$0")/../lib.sh"

R=(record -L 16 -M 64) # valid sizes, for cases about something else
MEM_MB=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)

# Usage errors: exit 2.
expect_error no_subcommand 2 'no command given' "$FLTRACE"
expect_error unknown_subcommand 2 "frobnicate: not a fltrace command" "$FLTRACE" frobnicate
expect_error unknown_global_option 2 '-x: unknown option' "$FLTRACE" -x
expect_error unknown_record_option 2 '--bogus: unknown option of record' "$FLTRACE" "${R[@]}" --bogus -- true
expect_error unknown_record_short_option 2 '-q: unknown option of record' "$FLTRACE" "${R[@]}" -q -- true
expect_error help_unknown_command 2 'nope: not a fltrace command' "$FLTRACE" help nope
# -L and -M may be left out (a learning run), but not beyond what the machine has
expect_error L_alone_above_memtotal 2 "-L: .* is more than this machine's memory.*-L $MEM_MB or less" \
	"$FLTRACE" record -L $((MEM_MB + 1)) -- true
expect_error M_alone_above_memtotal 2 "-M: .* is more than this machine's memory.*-M $MEM_MB or less" \
	"$FLTRACE" record -M $((MEM_MB + 1)) -- true
expect_error missing_command_without_sizes 2 'record: no command given' "$FLTRACE" record
expect_error missing_value_of_L 2 '-L: needs a value' "$FLTRACE" record -L
# A value left out: getopt takes the next option for it, which is named as such, not parsed.
expect_error value_left_out_record 2 "-L: needs a value, and '-o' is an option" \
	"$FLTRACE" record -L -o "$TMP/left_out" -- true
expect_error value_left_out_prefetch 2 "--prefetch: needs a value, and '--' is an option" \
	"$FLTRACE" record --prefetch -- true
expect_error value_left_out_report 2 "--advise: needs a value, and '-i' is an option" \
	"$FLTRACE" report --advise -i "$TMP"
expect_error value_left_out_sweep 2 "-L: needs a value, and '--policy' is an option" \
	"$FLTRACE" sweep -L --policy fifo -- true
expect_error value_left_out_visualize 2 "-o: needs a value, and '-i' is an option" \
	"$FLTRACE" visualize -o -i "$TMP"
# a word that is no option of the command is a value like any other (a title, a path may start with '-')
expect_error value_dash_word_not_an_option 2 "-L: '-i' is not a number" "$FLTRACE" record -L -i -- true
expect_error L_not_a_number 2 "-L: 'abc' is not a number" "$FLTRACE" record -L abc -M 64 -- true
expect_error L_zero 2 "-L: '0' is zero" "$FLTRACE" record -L 0 -M 64 -- true
expect_error L_negative 2 "-L: '-5' is negative" "$FLTRACE" record -L -5 -M 64 -- true
expect_error L_overflow 2 "-L: '99999999999999999999' is too large" \
	"$FLTRACE" record -L 99999999999999999999 -M 64 -- true
expect_error L_overflow_in_bytes 2 "-L: '99999999999999' is too large" \
	"$FLTRACE" record -L 99999999999999 -M 64 -- true
expect_error L_bad_unit 2 "-L: '5X' has an unknown unit" "$FLTRACE" record -L 5X -M 64 -- true
expect_error L_empty_after_equals 2 "-L: '' is empty" "$FLTRACE" record -L= -M 64 -- true
expect_error M_not_a_number 2 "-M: 'lots' is not a number" "$FLTRACE" record -L 16 -M lots -- true
expect_error M_above_memtotal 2 "-M: .* is more than this machine's memory.*-M $MEM_MB or less" \
	"$FLTRACE" record -L 16 -M $((MEM_MB + 1)) -- true
expect_error L_above_M 2 '-L: local memory \(128.0 MB\) is larger than -M \(64.0 MB\)' \
	"$FLTRACE" record -L 128 -M 64 -- true
expect_error L_below_page 2 '-L: 1024 bytes is less than 16 pages \(64K\)' "$FLTRACE" record -L 1K -M 64 -- true
expect_error L_below_16_pages 2 '-L: 61440 bytes is less than 16 pages \(64K\), the least fltrace needs' "$FLTRACE" record -L 60K -M 64 -- true
expect_error handlers_zero 2 "-C: '0' is zero; give the number of handler threads" \
	"$FLTRACE" "${R[@]}" -C 0 -- true
expect_error handlers_too_many 2 "-C: '65' is too large" "$FLTRACE" "${R[@]}" -C 65 -- true
expect_error samplerate_junk 2 "-S: 'fast' is not a number" "$FLTRACE" "${R[@]}" -S fast -- true
expect_error depth_too_large 2 "--depth: '513' is too large.*1 to 512" "$FLTRACE" "${R[@]}" --depth 513 -- true
expect_error policy_unknown 2 "--policy: 'lru' is not a policy; give fifo, clock, random, sfifo or 2q" \
	"$FLTRACE" "${R[@]}" --policy lru -- true
# the runtime refuses an unknown policy too, rather than running another one
if have_preload; then
	mkdir -p "$TMP/envpolicy"
	expect_error policy_unknown_env 125 "FLTRACE_POLICY: 'lru' is not an eviction policy; give one of fifo, clock" \
		env FLTRACE_LOCALMEM=$((16 << 20)) FLTRACE_MAXMEM=$((64 << 20)) FLTRACE_OUTDIR="$TMP/envpolicy" \
		FLTRACE_POLICY=lru LD_PRELOAD="$BUILD/lib/fltrace/libfltrace.so" "$PROGS/fillscan" 1 1
fi
expect_error poll_unknown 2 "--poll: 'sleep' is not a mode" "$FLTRACE" "${R[@]}" --poll sleep -- true
expect_error cores_junk 2 "--cores: 'x' is not a number; give a CPU list" "$FLTRACE" "${R[@]}" --cores x -- true
expect_error cores_reversed 2 "--cores: '1-0'" "$FLTRACE" "${R[@]}" --cores 1-0 -- true
expect_error cores_absent_cpu 2 "--cores: CPU 1000 is not available to this process \(available: " \
	"$FLTRACE" "${R[@]}" --cores 0,1000 -- true
expect_error empty_output_dir 2 "-o: the directory name is empty" "$FLTRACE" "${R[@]}" -o '' -- true
expect_error missing_command 2 'record: no command given' "$FLTRACE" "${R[@]}"
expect_error missing_command_after_dashdash 2 'record: no command given' "$FLTRACE" "${R[@]}" --

# The command: not found or not executable, 127 like a shell.
expect_error command_not_found 127 'fltrace-no-such-cmd: command not found in PATH' \
	"$FLTRACE" "${R[@]}" -- fltrace-no-such-cmd
expect_error command_path_not_found 127 "$TMP/nope: no such file" "$FLTRACE" "${R[@]}" -- "$TMP/nope"
printf 'just text\n' > "$TMP/notexec"
chmod 644 "$TMP/notexec"
expect_error command_not_executable 127 "$TMP/notexec: is not executable.*chmod \+x" \
	"$FLTRACE" "${R[@]}" -- "$TMP/notexec"
mkdir -p "$TMP/pathdir"
cp "$TMP/notexec" "$TMP/pathdir/fltrace-notexec"
expect_error command_in_path_not_executable 127 "fltrace-notexec: $TMP/pathdir/fltrace-notexec is not executable" \
	env PATH="$TMP/pathdir:/usr/bin:/bin" "$FLTRACE" "${R[@]}" -- fltrace-notexec
expect_error command_is_directory 127 "$TMP: is a directory, not a program" "$FLTRACE" "${R[@]}" -- "$TMP"
expect_error command_empty 127 'record: the command is an empty string' "$FLTRACE" "${R[@]}" -- ''
printf '#!/nonexistent/interp\necho hi\n' > "$TMP/badinterp.sh"
chmod 755 "$TMP/badinterp.sh"
expect_error script_interpreter_missing 127 "badinterp.sh: its interpreter /nonexistent/interp does not exist" \
	"$FLTRACE" "${R[@]}" -- "$TMP/badinterp.sh"

# Programs LD_PRELOAD cannot reach: exit 2.
if printf 'int main(void) { return 0; }\n' > "$TMP/static.c" &&
	cc -static -o "$TMP/static" "$TMP/static.c" 2>/dev/null; then
	expect_error static_binary 2 "$TMP/static: statically linked .*LD_PRELOAD cannot" \
		"$FLTRACE" "${R[@]}" -- "$TMP/static"
	printf '#!%s\n' "$TMP/static" > "$TMP/static-interp.sh"
	chmod 755 "$TMP/static-interp.sh"
	expect_error script_with_static_interpreter 2 "static-interp.sh: the interpreter of this script is statically linked" \
		"$FLTRACE" "${R[@]}" -- "$TMP/static-interp.sh"
else
	skip static_binary "cannot link a static program here (libc.a missing?)"
	skip script_with_static_interpreter "cannot link a static program here"
fi
if findmnt -no OPTIONS --target "$TMP" | grep -qw nosuid; then
	skip setuid_binary "$TMP is mounted nosuid"
	skip setgid_binary "$TMP is mounted nosuid"
elif [ "$(id -u)" != 0 ]; then
	skip setuid_binary "needs root to make a program setuid to another user"
	skip setgid_binary "needs root to make a program setgid to another group"
else
	cp /bin/true "$TMP/suid" && chown 65534 "$TMP/suid" && chmod 4755 "$TMP/suid"
	expect_error setuid_binary 2 "$TMP/suid: setuid program .*ignores LD_PRELOAD" \
		"$FLTRACE" "${R[@]}" -- "$TMP/suid"
	cp /bin/true "$TMP/sgid" && chgrp 65534 "$TMP/sgid" && chmod 2755 "$TMP/sgid"
	expect_error setgid_binary 2 "$TMP/sgid: setgid program .*ignores LD_PRELOAD" \
		"$FLTRACE" "${R[@]}" -- "$TMP/sgid"
	mkdir -p "$TMP/suidpath"
	cp "$TMP/suid" "$TMP/suidpath/fltrace-suid" && chown 65534 "$TMP/suidpath/fltrace-suid" &&
		chmod 4755 "$TMP/suidpath/fltrace-suid"
	expect_error setuid_binary_found_in_path 2 "fltrace-suid: setuid program" \
		env PATH="$TMP/suidpath:/usr/bin:/bin" "$FLTRACE" "${R[@]}" -- fltrace-suid
fi

# No permission for userfaultfd: run fltrace as nobody (checked before the output directory).
uffd_case() {
	local name=uffd_permission_unprivileged
	if [ "$(id -u)" != 0 ]; then
		skip $name "needs root to switch to an unprivileged user"
	elif [ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)" = 1 ]; then
		skip $name "vm.unprivileged_userfaultfd=1 here: every user may use userfaultfd"
	elif ! setpriv --reuid=65534 --regid=65534 --clear-groups -- true 2>/dev/null; then
		skip $name "setpriv cannot switch to uid 65534"
	elif ! setpriv --reuid=65534 --regid=65534 --clear-groups -- test -x "$FLTRACE"; then
		skip $name "uid 65534 cannot execute $FLTRACE (the build tree is not reachable)"
	else
		expect_error $name 125 "userfaultfd: not permitted for uid 65534 .*run as root.*sysctl vm.unprivileged_userfaultfd=1.*read\+write access to /dev/userfaultfd" \
			setpriv --reuid=65534 --regid=65534 --clear-groups -- "$FLTRACE" "${R[@]}" -o "$TMP" -- /bin/true
	fi
}
uffd_case

# The output directory: not creatable or not writable (root writes anywhere else), exit 125.
if have_preload; then
	expect_error output_dir_not_creatable 125 "/proc/fltrace-test/run: cannot use it as the output directory.*-o DIR" \
		"$FLTRACE" "${R[@]}" -o /proc/fltrace-test/run -- true
	expect_error output_dir_not_writable 125 "/proc: cannot write in the output directory.*-o DIR" \
		"$FLTRACE" "${R[@]}" -o /proc -- true
	expect_error output_dir_is_a_file 125 "$TMP/notexec: cannot use it as the output directory \(Not a directory\)" \
		"$FLTRACE" "${R[@]}" -o "$TMP/notexec" -- true
else
	for c in output_dir_not_creatable output_dir_not_writable output_dir_is_a_file; do
		skip $c "preload library $BUILD/lib/fltrace/libfltrace.so not built (run make)"
	done
fi

# The preload library next to the binary: a copy of fltrace elsewhere without it says so.
mkdir -p "$TMP/inst/bin"
cp "$FLTRACE" "$TMP/inst/bin/fltrace"
expect_error preload_library_missing 125 "record: the preload library $TMP/inst/lib/fltrace/libfltrace.so is missing.*make" \
	"$TMP/inst/bin/fltrace" "${R[@]}" -- true
