# record: whole stacks under stress — 16 threads at the bottom of deep recursions, C++ exceptions in
# flight, --depth, and code of a library loaded with dlopen and closed again before exit.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_stacks "userfaultfd is not available to this user"
	exit 0
fi


# rows DIR: "count op depth leaf-file:line" per report row, biggest first
rows() {
	"$FLTRACE" report -i "$1" > /dev/null 2>&1
	python3 - "$1" <<'PY'
import csv, glob, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
out = []
for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out"):
    for r in csv.DictReader(open(f)):
        code = r["code"].split("<//>")
        leaf = code[0].split("<<<")[0].split("/")[-1]
        out.append((int(r["count"]), r["op"], len(code) - 1, leaf, int(r["nostack"] or 0)))
for c, op, d, leaf, ns in sorted(out, reverse=True):
    print(c, op, d, leaf, ns)
PY
}

dir=$TMP/deep; mkdir -p "$dir"
out=$(timeout -k 10 "$HANG" "$FLTRACE" record -L 8 -M 256 -o "$dir" -- "$PROGS/deepstacks" 2>/dev/null)
expect_eq deep_output "program output" "deepstacks: 113056 caught 1" "$out"
leaf=$(src_line deepstacks.cpp DEEP-LEAF)
expect_eq deep_16_threads "row of the recursion's leaf" "1024 write 64 deepstacks.cpp:$leaf 0" \
	"$(rows "$dir" | head -1)"
expect_stat deep_stacks_cut_counted "$dir" stacks_cut -ge 1024
dtor=$(src_line deepstacks.cpp DTOR-TOUCH)
n=$(rows "$dir" | awk -v l="deepstacks.cpp:$dtor" '$4 == l { n += $1 } END { print n + 0 }')
expect_eq exception_unwinding_faults "faults in destructors run by a C++ exception" 32 "$n"

dir=$TMP/deep128; mkdir -p "$dir"
timeout -k 10 "$HANG" "$FLTRACE" record -L 8 -M 256 --depth 128 -o "$dir" -- "$PROGS/deepstacks" > /dev/null 2>&1
d=$(rows "$dir" | head -1 | cut -d' ' -f3)
if [ "$d" -gt 100 ] && [ "$d" -le 128 ]; then pass depth_128; else fail depth_128 "deepest stack has $d frames"; fi

dir=$TMP/dl; mkdir -p "$dir"
timeout -k 10 "$HANG" "$FLTRACE" record -L 8 -M 256 -o "$dir" -- "$PROGS/dlopener" "$PROGS/plugin.so" > /dev/null 2>&1
expect_eq dlclosed_plugin_resolves "row of the plugin's leaf" "40 write" \
	"$(rows "$dir" | awk -v l="plugin.c:$(src_line plugin.c PLUGIN-LEAF)" '$4 == l { print $1, $2 }')"

# Faults inside system calls libc makes on the program's behalf (stdio's read straight into the
# caller's buffer, stat, a futex wait): the program's whole stack at the call, unwound while the thread sleeps in
# the kernel; -O0 with frame pointers needs the frame pointer the kernel does not show.
head -c $((8 << 20)) /dev/urandom > "$TMP/libcalls.bin"
# syscall_rows DIR: "count syscall first-frame-in-libcalls.c next-frame" for faults inside system calls
syscall_rows() {
	"$FLTRACE" report -i "$1" --kind syscall > /dev/null 2>&1
	python3 - "$1" <<'PY'
import csv, glob, sys
for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out"):
    for r in csv.DictReader(open(f)):
        ours = [c.split("<<<")[-1].split("/")[-1] for c in r["code"].split("<//>") if "libcalls.c" in c]
        print(r["count"], r["syscall"], *(ours[:2] or ["-"]))
PY
}
for v in O0-fp O2; do
	dir=$TMP/libcalls-$v; mkdir -p "$dir"
	want=$("$PROGS/libcalls-$v" "$TMP/libcalls.bin" $((8 << 20)))
	got=$(timeout -k 10 "$HANG" "$FLTRACE" record -L 4 -M 256 -o "$dir" -- "$PROGS/libcalls-$v" "$TMP/libcalls.bin" $((8 << 20)) 2>/dev/null)
	expect_eq "libc_syscall_output_$v" "output at -L 4" "$want" "$got"
	rows=$(syscall_rows "$dir" | sort)
	expect_eq "libc_syscall_stacks_$v" "faults in futex(2), in read(2) under fread, in stat(2)" \
		"16 futex libcalls.c:$(src_line libcalls.c LIBCALL-FUTEX) libcalls.c:$(src_line libcalls.c MAIN-FUTEX)
2048 read libcalls.c:$(src_line libcalls.c LIBCALL-FREAD) libcalls.c:$(src_line libcalls.c MAIN-FREAD)
64 newfstatat libcalls.c:$(src_line libcalls.c LIBCALL-STAT) libcalls.c:$(src_line libcalls.c MAIN-STAT)" "$rows"
done

# A signal of the program's own every 200 us, while every iteration takes a first touch: the signal
# wakes the thread in its fault, and the kernel delivers both signals on one return to user space
# (ours then runs inside the program's handler, or its handler interrupted the fault): every fault
# still gets its stack, from the faulting line down. By default the handler reads most stacks while
# the thread sleeps (one the program's signal took out of its fault meanwhile goes to the stack
# signal); with FLTRACE_STACKS=signal every one is the stack signal's, sent before the page once the
# program's signals are seen arriving.
for how in handler signal; do
	dir=$TMP/sigstorm-$how; mkdir -p "$dir"
	FLTRACE_STACKS=$how timeout -k 10 "$HANG" "$FLTRACE" record -L 8 -M 256 -o "$dir" -- "$PROGS/sigalarm" 20000 \
		> /dev/null 2>&1
	expect_eq signal_storm_stacks_$how "faults at the touching line, with their stack" 20000 \
		"$(rows "$dir" | awk -v l="sigalarm.c:$(src_line sigalarm.c SIGALARM-TOUCH)" '$4 == l && $3 > 1 { n += $1 } END { print n + 0 }')"
	expect_stat signal_storm_none_without_$how "$dir" faults_nostack -eq 0
done
if have_rseq; then
	expect_stat signal_storm_by_handler "$TMP/sigstorm-handler" stacks_by_handler -gt 0
fi
expect_stat signal_storm_signal_first "$TMP/sigstorm-signal" faults_signal_first -gt 10000
expect_stat signal_storm_signal_only "$TMP/sigstorm-signal" stacks_by_handler -eq 0

# Faults the kernel takes for a system call through get_user_pages leave no perf record of their
# own; each comes right after a write of the thread's to the same page that fltrace never saw (to a
# page made read-only: its SIGSEGV handled), then the page dropped. Every one is the call's (origin
# syscall), never taken for that write, whose perf record is the thread's newest (faultregs.c).
# By default this program's registers come from /proc (it needs no rbp); with FLTRACE_STACKS=perf
# from perf's records, whose rules must refuse the write's record (gup_perf_recorded: the records
# were there to refuse, or the check proves nothing).
for how in handler perf; do
	FLTRACE_STACKS=$how same_output "gup_$how" "-L 8 -M 256" "$PROGS/gupfault" 200 &&
		expect_stat "gup_${how}_in_call" "$TMP/gup_$how" faults_syscall -eq 200
done
if have_fault_samples; then
	expect_stat gup_perf_recorded "$TMP/gup_perf" faults_regs_sampled -gt 0
fi

# The program's own handlers run behind fltrace's entry: what it sees of them (sigaction's old
# action, signal()'s answer, a one-shot handler reset, siginfo, a handler that moves its context
# on) is what it sees natively, and the faults its handlers take keep their stacks.
same_output sigview_same "-L 8 -M 256" "$PROGS/sigview"
expect_stat sigview_stacks "$TMP/sigview_same" faults_nostack -eq 0
# A handler installed but never run (python's SIGINT) leaves the cheaper order on: the stack signal
# goes once the page is in place, and every fault keeps its stack at the touching line.
dir=$TMP/sigquiet; mkdir -p "$dir"
timeout -k 10 "$HANG" "$FLTRACE" record -L 8 -M 256 -o "$dir" -- "$PROGS/sigview" quiet 3000 > /dev/null 2>&1
expect_eq sigview_quiet_stacks "faults at the touching line, with their stack" 3000 \
	"$(rows "$dir" | awk -v l="sigview.c:$(src_line sigview.c SIGVIEW-QUIET-TOUCH)" '$4 == l && $3 > 1 { n += $1 } END { print n + 0 }')"
expect_stat sigview_quiet_page_first "$dir" faults_signal_first -eq 0
# Handlers installed by sigset, bsd_signal, sysv_signal and __sysv_signal (glibc installs them by
# its internal sigaction) run behind the entry too: the kernel holds the entry, the program sees
# its own answers (sigset's SIG_HOLD included), and the faults in them keep their stacks.
same_output sigview_family "-L 8 -M 256" "$PROGS/sigview" family
SIGVIEW_RAW=1 timeout -k 10 "$HANG" "$FLTRACE" record -L 8 -M 256 -o "$TMP/sigview_family_raw" -- \
	"$PROGS/sigview" family > "$TMP/sigview_family_raw.out" 2>&1
expect_eq sigview_family_entry "handlers the kernel holds the entry for" 5 \
	"$(grep -c "^raw .*: not the program's handler" "$TMP/sigview_family_raw.out")"
# sighold blocks through glibc's own sigprocmask: never the stack signal.
expect_eq sigview_sighold "the stack signal after sighold" "raw sighold: SIGRTMAX-2 blocked 0" \
	"$(grep "^raw sighold" "$TMP/sigview_family_raw.out")"
# A handler on an 8 KiB alternate stack (sigaltstack, as most programs size it) that faults: the
# stack signal's frame lands there too, and its unwinding moves to a stack of fltrace's own
# (without that, 16 KiB of it overran the guard page: SIGSEGV).
same_output sigview_altstack "-L 8 -M 256" "$PROGS/sigview" altstack 300
expect_eq sigview_altstack_stacks "faults at the handler's touching line, with their stack" 300 \
	"$(rows "$TMP/sigview_altstack" | awk -v l="sigview.c:$(src_line sigview.c SIGVIEW-ALT-TOUCH)" '$4 == l && $3 > 1 { n += $1 } END { print n + 0 }')"
# With SS_AUTODISARM the kernel clears the setting while the handler runs: fltrace's entry keeps it.
same_output sigview_autodisarm "-L 8 -M 256" "$PROGS/sigview" altstack-autodisarm 300
expect_eq sigview_autodisarm_stacks "faults at the handler's touching line, with their stack" 300 \
	"$(rows "$TMP/sigview_autodisarm" | awk -v l="sigview.c:$(src_line sigview.c SIGVIEW-ALT-TOUCH)" '$4 == l && $3 > 1 { n += $1 } END { print n + 0 }')"
