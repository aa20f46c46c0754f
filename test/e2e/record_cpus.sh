#!/usr/bin/env bash
# Faults served wherever the program runs (--poll percpu, the default): programs that pin
# themselves, move between CPUs all the time or half-way through, more threads than CPUs, a taskset
# or a cpuset smaller than the machine, glibc's rseq turned off. Each gives its untraced output with
# every fault's stack, and fltrace's threads never run on a CPU the program may not use. And a
# program that does not fault costs next to no CPU: pollers sleep once faults stop.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd || ! have_preload; then
	skip record_cpus "needs userfaultfd and the preload library"
	exit 0
fi

L8="-L 8 -M 512"
NCPU=$(nproc)
LAST=$(( $(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | sed 's/.*-//' | sort -n | tail -1) ))

# no_lost_stacks NAME DIR: every fault recorded with its stack
no_lost_stacks() { expect_stat "$1_every_stack" "$2" faults_nostack -eq 0; }

for mode in stay pin hop midrun; do
	same_output "cpus_$mode" "$L8" "$PROGS/cpuhop" 24 2 "$mode" && no_lost_stacks "cpus_$mode" "$TMP/cpus_$mode"
done
same_output cpus_more_threads_than_cpus "$L8" "$PROGS/cpuhop" 24 $((NCPU * 4)) stay &&
	no_lost_stacks cpus_more_threads_than_cpus "$TMP/cpus_more_threads_than_cpus"
GLIBC_TUNABLES=glibc.pthread.rseq=0 same_output cpus_rseq_off "$L8" "$PROGS/cpuhop" 24 2 hop &&
	no_lost_stacks cpus_rseq_off "$TMP/cpus_rseq_off"
GLIBC_TUNABLES=glibc.pthread.rseq=0 FLTRACE_STACKS=proc same_output cpus_rseq_off_proc "$L8" "$PROGS/cpuhop" 24 2 hop &&
	no_lost_stacks cpus_rseq_off_proc "$TMP/cpus_rseq_off_proc"
# Where a thread runs, a handler learns from the fault's perf sample, else from its rseq area (told
# at its stack signal). With registers from /proc and without rseq, every stack is the signal's;
# with samples, rseq or not, and with rseq, threads that hop between CPUs have most of theirs read
# by the handler.
expect_stat_key cpus_rseq_off_counted "$TMP/cpus_rseq_off_proc" stacks_by_handler
expect_stat cpus_rseq_off_by_signal "$TMP/cpus_rseq_off_proc" stacks_by_handler -eq 0
if have_fault_samples; then
	expect_stat cpus_rseq_off_sampled_by_handler "$TMP/cpus_rseq_off" stacks_by_handler -gt 0
fi
if have_rseq || have_fault_samples; then
	expect_stat cpus_hop_by_handler "$TMP/cpus_hop" stacks_by_handler -gt 0
fi

# fltrace_threads_within NAME TASKS CPULIST: every fltrace thread in the tasks file (cpuhop's
# TASKS_FILE) may run only on CPULIST and last ran there; the pollers are there at all, and each
# of fltrace's threads is named for its work (a name of 16 bytes or more was once refused, and the
# backstop went by the fd keeper's name). Each blocks every signal the program could send it but
# glibc's two of its own (set*id's must reach it): libunwind, unwinding the program's stacks on a
# poller, once left the stack signal unblocked there (the wrapper of sigprocmask took it out of
# every mask asked for, as it does for the program's threads).
fltrace_threads_within() {
	local name=$1 tasks=$2 want=$3
	python3 - "$tasks" "$want" <<'PY' && pass "$name" || fail "$name" "$(cat "$tasks.why" 2>/dev/null)"
import sys
def cpus(s):
    out = set()
    for part in s.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
want = cpus(sys.argv[2])
bad, pollers, names = [], 0, []
for line in open(sys.argv[1]):
    comm, allowed, last, blocked = line.split()
    if not comm.startswith("fltrace-"):
        continue
    pollers += comm == "fltrace-poller"
    names.append(comm)
    if not cpus(allowed) <= want or int(last) not in want:
        bad.append(line.strip())
    # SIGKILL and SIGSTOP cannot be blocked; glibc never blocks SIGCANCEL (32) nor SIGSETXID (33)
    unblockable = sum(1 << (s - 1) for s in (9, 19, 32, 33))
    if int(blocked, 16) | unblockable != (1 << 64) - 1 or int(blocked, 16) & (1 << 32):
        bad.append("signals not blocked: " + line.strip())
known = {"fltrace-poller", "fltrace-backstp", "fltrace-handler", "fltrace-fds", "fltrace-stats"}
unknown = sorted(set(names) - known)
if unknown or names.count("fltrace-fds") != 1 or names.count("fltrace-stats") != 1 or \
        names.count("fltrace-backstp") + names.count("fltrace-handler") < 1:
    bad.append("fltrace's threads: " + " ".join(sorted(names)))
why = "; ".join(bad) if bad else "" if pollers else "no fltrace-poller thread"
open(sys.argv[1] + ".why", "w").write(why)
sys.exit(1 if why else 0)
PY
}

if [ "$NCPU" -lt 2 ]; then
	skip cpus_taskset "needs 2 CPUs"
	skip cpus_cpuset "needs 2 CPUs"
else
	# The program pins itself with taskset before exec: the runtime starts with one CPU.
	same_output cpus_taskset "$L8" taskset -c "$LAST" "$PROGS/cpuhop" 16 2 stay "$TMP/tasks-taskset" &&
		fltrace_threads_within cpus_taskset_threads "$TMP/tasks-taskset" "$LAST"
	# A cpuset cgroup (v1 here) of one CPU around the whole recording.
	cs=/sys/fs/cgroup/cpuset
	if [ -w "$cs" ] && [ -f "$cs/cpuset.cpus" ]; then
		grp=$cs/fltrace-test-$$
		mkdir "$grp" && echo 0 > "$grp/cpuset.cpus" && cat "$cs/cpuset.mems" > "$grp/cpuset.mems"
		dir=$TMP/cpus_cpuset; mkdir -p "$dir"
		"$PROGS/cpuhop" 16 2 hop > "$dir/native"; echo "exit $?" >> "$dir/native"
		( echo $BASHPID > "$grp/cgroup.procs" &&
		  exec timeout -k 10 "$HANG" "$FLTRACE" record $L8 -o "$dir" -- "$PROGS/cpuhop" 16 2 hop "$TMP/tasks-cpuset" ) \
			> "$dir/traced" 2> "$dir/err"
		echo "exit $?" >> "$dir/traced"
		if grep -q '^cpuhop ' "$dir/native" && cmp -s "$dir/native" "$dir/traced"; then
			pass cpus_cpuset
			fltrace_threads_within cpus_cpuset_threads "$TMP/tasks-cpuset" 0
		else
			fail cpus_cpuset "output differs: $(diff "$dir/native" "$dir/traced" | head -3 | tr '\n' ' ') $(head -c 200 "$dir/err")"
		fi
		rmdir "$grp" 2> /dev/null
	else
		skip cpus_cpuset "no writable cpuset cgroup (v1) here"
	fi
fi

# A program that sleeps: the pollers spin only while faults come, then sleep in poll(); the
# handlers' CPU time over 5 s stays far below what one spinning CPU would take (5 s).
dir=$TMP/cpus_sleep; mkdir -p "$dir"
if timeout -k 10 "$HANG" "$FLTRACE" record -o "$dir" -- sleep 5 > /dev/null 2>&1; then
	expect_stat cpus_idle_costs_no_cpu "$dir" t_cpu_ns -lt 50000000
else
	fail cpus_idle_costs_no_cpu "fltrace record -- sleep 5 failed"
fi
