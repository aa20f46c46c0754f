# record: a traced program run under a debugger behaves as it does untraced. A debugger stops at
# every signal the program is sent, so fltrace must send none (gdb --batch would end the run there):
# the debugger sees the same signals as natively, and every fault still has its exact stack.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_debugger "userfaultfd is not available to this user"
	exit 0
fi
OPTS="-L 64 -M 256"

# ptracer: follows every thread as gdb does and prints the signals it saw, native and traced equal
name=debugger_signals
if same_output "$name" "$OPTS" "$PROGS/ptracer" "$PROGS/stacks-O2"; then
	expect_eq "${name}_none" "the debugger's line" "signals seen by the debugger: none" \
		"$(grep '^signals seen' "$TMP/$name/traced")"
fi
expect_eq "${name}_stacks" "faults by callsite" "$(stacks_expected)" "$(stacks_callsites "$TMP/$name")"
expect_stat "${name}_all_taken" "$TMP/$name" faults_nostack -eq 0

# gdb --batch runs the program to its end unless a signal stops it ("received signal"); its own
# lines name pids and threads, so only that it ran through is compared
if command -v gdb > /dev/null; then
	name=debugger_gdb
	dir=$TMP/$name
	mkdir -p "$dir"
	timeout -k 10 "$HANG" "$FLTRACE" record $OPTS -o "$dir" -- \
		gdb -nx --batch -ex run --args "$PROGS/stacks-O2" > "$dir/out" 2>&1
	if grep -q 'received signal' "$dir/out" || ! grep -q '^stacks: ' "$dir/out" ||
		! grep -q 'exited normally' "$dir/out"; then
		fail "$name" "gdb did not run the program through: $(grep -m2 'signal\|exited' "$dir/out" | tr '\n' ' ')"
	else
		pass "$name"
	fi
	expect_eq "${name}_stacks" "faults by callsite" "$(stacks_expected)" "$(stacks_callsites "$dir")"
else
	skip debugger_gdb "gdb is not installed (deps.sh installs it)"
fi
