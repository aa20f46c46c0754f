# record: fltrace's own threads are invisible to the program: set*id calls (glibc signals every
# thread it knows) complete as natively, and the process lives exactly as long as its own threads
# do (pthread_exit from main, the last thread returning, exit from a thread, fork from a thread),
# with the native exit status, output and a complete trace. Every traced run is bounded: a hang
# is a FAIL line, and whatever the run left behind is killed with its process group.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_invisible_threads "userfaultfd is not available to this user"
	exit 0
fi
PY=/usr/bin/python3
LIMIT=${FLTRACE_HANG_LIMIT:-60} # seconds before a traced run counts as hung
OPTS="-L 1000 -M 2000"

# bounded OUT ERR CMD...: CMD's stdout and stderr to files, at most LIMIT seconds (then SIGTERM,
# SIGKILL 5 s later); returns its exit status (124 or 137 when it had to be stopped). timeout
# leads its own process group: what the command left running (a zombie's threads, an orphan) dies
# with it.
bounded() {
	local out=$1 err=$2 pid rc
	shift 2
	timeout -k 5 "$LIMIT" "$@" > "$out" 2> "$err" &
	pid=$!
	wait $pid 2> /dev/null # no "Killed" note from the shell
	rc=$?
	kill -KILL -- "-$pid" 2> /dev/null
	return $rc
}

# same_run NAME CMD...: CMD's stdout and exit status, traced (trace in $TMP/NAME) and native, equal;
# a traced run that has to be stopped is a hang. Returns non-zero after a FAIL line.
same_run() {
	local name=$1 dir=$TMP/$1 rc
	shift
	mkdir -p "$dir"
	bounded "$dir/native" "$dir/native-err" "$@"
	echo "exit $?" >> "$dir/native"
	bounded "$dir/traced" "$dir/err" "$FLTRACE" record $OPTS -o "$dir" -- "$@"
	rc=$?
	echo "exit $rc" >> "$dir/traced"
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		fail "$name" "hung: stopped after ${LIMIT} s ($*)"
		return 1
	fi
	if ! cmp -s "$dir/native" "$dir/traced"; then
		fail "$name" "differs from the native run: $(diff "$dir/native" "$dir/traced" | head -6 | tr '\n' ' ') stderr: $(head -c 300 "$dir/err")"
		return 1
	fi
	pass "$name"
}

fill_line() { grep -n '/\* FILL \*/' "$ROOT/test/progs/$1.c" | head -1 | cut -d: -f1; }

# --- set*id: every call, from main, from another thread, in the fork child of a multithreaded
#     parent; each thread's credentials afterwards as natively, and the trace complete ---
if [ "$(id -u)" = 0 ]; then
	SL=setids.c:$(fill_line setids)
	for call in setuid setgid setreuid setregid setresuid setresgid seteuid setegid setgroups initgroups drop; do
		for where in main thread fork; do
			name=setid_${call}_$where
			same_run "$name" "$PROGS/setids" "$call" "$where" &&
				expect_eq "${name}_trace" "faults at $SL" 500 "$(faults_at "$TMP/$name" "$SL")"
		done
	done
else
	skip setid "needs root (the program changes its credentials)"
fi

# --- python: setregid(-1, -1) is a set*id call like any other; subprocess sets the child's groups ---
same_run setid_python_setregid $PY -c 'import os; os.setregid(-1, -1); print("done")'
if [ "$(id -u)" = 0 ]; then
	same_run setid_python_subprocess_groups $PY -c '
import subprocess, threading, time
stop = threading.Event()
t = threading.Thread(target=stop.wait); t.start()
print(subprocess.run(["/usr/bin/id", "-G"], group=5, extra_groups=[6, 7], capture_output=True, text=True).stdout, end="")
stop.set(); t.join()'
	# a child that gives up root and then execs (subprocess with user=): it may not use
	# userfaultfd any more, and runs untraced instead of being stopped (it exited 125 before).
	# fltrace runs from a copy every user can read, wherever this clone lives (a clone in a 0700
	# directory would leave uid 65534 unable to load the library: the case after this one).
	SUBUSER='
import subprocess, sys
r = subprocess.run([sys.executable, "-c", "import os; print(os.getuid(), sum(range(10**6)))"],
                   user=65534, stdout=subprocess.PIPE, text=True)
print(r.returncode, r.stdout, end="")'
	# install_copy DIR MODE: bin/fltrace and lib/fltrace/libfltrace.so under DIR, DIR of MODE
	install_copy() {
		mkdir -p "$1/bin" "$1/lib/fltrace" &&
			cp "$BUILD/bin/fltrace" "$1/bin/" && cp "$BUILD/lib/fltrace/libfltrace.so" "$1/lib/fltrace/" &&
			chmod -R a+rX "$1" && chmod "$2" "$1"
	}
	chmod 711 "$TMP"
	install_copy "$TMP/open" 755
	FLTRACE_KEEP=$FLTRACE
	FLTRACE=$TMP/open/bin/fltrace
	# said NAME REGEX: the traced run NAME (a same_run) said REGEX on stderr
	said() {
		if grep -q "$2" "$TMP/$1/err"; then pass "$1_said"; else
			fail "$1_said" "no note on stderr: $(head -c 400 "$TMP/$1/err")"; fi
	}
	same_run setid_python_subprocess_user $PY -c "$SUBUSER" &&
		said setid_python_subprocess_user "^fltrace: pid [0-9]* runs untraced: uid 65534 may not use userfaultfd"
	# the same from a copy in a directory only root may enter: the child's new uid cannot read the
	# preload library (ld.so skips it), and fltrace says so before the exec
	install_copy "$TMP/closed" 700
	FLTRACE=$TMP/closed/bin/fltrace
	same_run setid_unreadable_preload $PY -c "$SUBUSER" &&
		said setid_unreadable_preload "^fltrace: pid [0-9]* runs untraced: uid 65534 cannot read the preload library $TMP/closed/lib/fltrace/libfltrace.so (permission denied); install fltrace where every user can read it"
	FLTRACE=$FLTRACE_KEEP
fi

# --- thread lifetimes: the process ends when the program's last thread does ---
TL=threadlife.c:$(fill_line threadlife)
same_run threads_main_pthread_exit_bare "$PROGS/threadlife" bare
for mode in main-first main-first-x worker-first dtors exit-thread; do
	same_run "threads_$mode" "$PROGS/threadlife" "$mode" &&
		expect_eq "threads_${mode}_trace" "faults at $TL" 1000 "$(faults_at "$TMP/threads_$mode" "$TL")"
done
# a fork from a non-main thread, whose child forks again from it: three processes, one fill each
same_run threads_fork_from_thread "$PROGS/threadlife" fork-thread &&
	expect_eq threads_fork_from_thread_trace "faults at $TL" 3000 "$(faults_at "$TMP/threads_fork_from_thread" "$TL")"

# --- SIGTERM to a process whose main thread has exited: it reaches the program (143 as natively) ---
# sigterm_run OUT ERR CMD...: CMD writes its pid to $TMP/pid.N when ready; then it gets SIGTERM
sigterm_run() {
	local out=$1 err=$2 pidfile=$TMP/pid.$RANDOM pid rc
	shift 2
	timeout -k 5 "$LIMIT" "$@" "$pidfile" > "$out" 2> "$err" &
	pid=$!
	for _ in $(seq 1 $((LIMIT * 10))); do [ -s "$pidfile" ] && break; sleep 0.1; done
	[ -s "$pidfile" ] && kill -TERM "$(cat "$pidfile")"
	wait $pid 2> /dev/null # no "Killed" note from the shell
	rc=$?
	kill -KILL -- "-$pid" 2> /dev/null
	return $rc
}
dir=$TMP/threads_sigterm; mkdir -p "$dir"
sigterm_run "$dir/native" "$dir/native-err" "$PROGS/threadlife" sigterm
echo "exit $?" >> "$dir/native"
sigterm_run "$dir/traced" "$dir/err" "$FLTRACE" record $OPTS -o "$dir" -- "$PROGS/threadlife" sigterm
echo "exit $?" >> "$dir/traced"
expect_eq threads_sigterm_after_main_exit "output and exit status" "$(cat "$dir/native")" "$(cat "$dir/traced")"
expect_eq threads_sigterm_trace "faults at $TL" 1000 "$(faults_at "$dir" "$TL")"

# --- record returns when its command does, whatever the command left running ---
dir=$TMP/orphan; mkdir -p "$dir"
bounded "$dir/out" "$dir/err" "$FLTRACE" record $OPTS -o "$dir" -- /bin/sh -c "sleep $((LIMIT * 2)) & echo started"
rc=$?
expect_eq record_returns_with_orphan_left "exit status and output" "0 started" "$rc $(cat "$dir/out")"
