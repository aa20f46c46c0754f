/* A fault's stack: taken by the faulting thread itself in the stack signal's handler, at its
 * faulting instruction, or unwound by a handler thread while the faulting thread sleeps. */
#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "fault.h"
#include "threads.h"
#include "handler.h"
#include "prefault.h"
#include "sysstack.h"
#include "trace.h"

static __thread struct rt_thread *tls_thread;
/* The alternate stack a handler of the program's runs on, from its context at the entry (0 size:
 * none). Left stale by a handler that jumps out: it then names the program's alternate stack
 * still, which a frame of ours lies in only when the thread is on it. */
static __thread struct program_alt tls_program_alt;

/* Unwinds from here, up through the signal frame, into ips (max + 16 entries: the frames of this
 * handler come first, then dropped). */
static unsigned stack_from_unwinder(uint64_t *ips, unsigned max, uint64_t fault_ip)
{
	int n = unw_backtrace((void **)ips, (int)(max + 16));
	for (int i = 0; i < n; i++) {
		if (ips[i] != fault_ip)
			continue;
		unsigned d = (unsigned)(n - i) < max ? (unsigned)(n - i) : max;
		memmove(ips, &ips[i], d * sizeof(*ips));
		/* More frames than kept, or the buffer filled up: the stack was cut at --depth. */
		if (n - i > (int)max || n == (int)(max + 16))
			atomic_fetch_add(&rt.stats.stacks_cut, 1);
		return d;
	}
	return 0;
}

/* The slow but sure way: unwind from the signal's context itself. */
static unsigned stack_from_context(uint64_t *ips, unsigned max, ucontext_t *uc)
{
	unw_cursor_t cur;
	unsigned d = 0;
	if (unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
		return 0;
	do {
		unw_word_t ip;
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		ips[d++] = ip;
	} while (d < max && unw_step(&cur) > 0);
	return d;
}

/* The signal arrived in a handler of the program's own signal that interrupted the thread at its
 * fault (the kernel sets up a frame for every deliverable signal on one return to user space; the
 * last one set up runs first): the stack is unwound from the signal's context down through the
 * program's signal frame to the one that holds the fault's pc and stack pointer. 0 frames if
 * there is none (the thread had moved past its fault). */
static unsigned stack_from_fault_frame(uint64_t *ips, unsigned max, ucontext_t *uc, uint64_t pc, uint64_t sp)
{
	unw_cursor_t cur;
	unw_word_t ip, fsp;
	if (unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
		return 0;
	for (unsigned frames = 0;; frames++) {
		if (frames > 4 * FLTRACE_MAX_STACK_DEPTH || unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 ||
		    unw_get_reg(&cur, UNW_REG_SP, &fsp) < 0)
			return 0;
		/* libunwind marks a frame reached through a signal frame as one: its ip is exact,
		 * an interrupted instruction rather than a return address. */
		if (ip == pc && fsp == sp && unw_is_signal_frame(&cur) > 0)
			break;
		if (unw_step(&cur) <= 0)
			return 0;
	}
	unsigned d = 0;
	int more;
	do {
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
			return d;
		ips[d++] = ip;
	} while ((more = unw_step(&cur)) > 0 && d < max);
	if (more > 0)
		atomic_fetch_add(&rt.stats.stacks_cut, 1);
	return d;
}

/* A fault taken while bringing in a system call's buffer (prefault.c) is the system call's: its
 * stack starts at the program's call site, our own frames dropped. */
static unsigned stack_for_syscall(struct ft_fault *f, uint64_t *ips, unsigned d)
{
	unsigned skip = 0;
	while (skip < d && prefault_is_own_frame(ips[skip]))
		skip++;
	for (unsigned i = skip; i < d; i++)
		ips[i - skip] = ips[i];
	d -= skip;
	f->origin = FT_ORIGIN_SYSCALL;
	f->syscall_nr = rt_tls_prefault.nr;
	f->ip = d ? ips[0] : 0;
	f->flags = (uint16_t)((f->flags & ~FT_FLAG_WRITE) | (rt_tls_prefault.kernel_writes ? FT_FLAG_WRITE : 0));
	atomic_fetch_add(&rt.stats.faults_syscall, 1);
	return d;
}

/* The stack at the fault, from the signal's context. The signal was queued before the page was put
 * in place, so the thread has not run past its fault: the signal arrived at the faulting
 * instruction, or in a handler of the program's own signal that interrupted it there. */
static unsigned stack_at_fault(const struct rt_thread *t, ucontext_t *uc, uint64_t *ips, bool own_stack)
{
	uint64_t ip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	if (ip != t->pc_at_fault)
		return stack_from_fault_frame(ips, rt.cfg.stack_depth, uc, t->pc_at_fault, t->sp_at_fault);
	/* From a stack of our own, the unwinder has no way back to the signal frame. */
	unsigned d = own_stack ? 0 : stack_from_unwinder(ips, rt.cfg.stack_depth, ip);
	return d ? d : stack_from_context(ips, rt.cfg.stack_depth, uc);
}

/* Returns once the handler has put the page in place: 1, or 2 if it could not (the thread then
 * faults again). Returning earlier would only fault again. Almost always the page is there by now
 * (waking this thread took longer than the copy); if not, the handler thread was most likely
 * preempted by this one on its CPU: sleep, so that it runs (spinning or yielding measured 5x
 * slower on a busy machine), and it wakes us. */
static int wait_served(struct rt_thread *t)
{
	int served;
	for (unsigned spins = 0; spins < 200; spins++) {
		if ((served = atomic_load(&t->served)) != 0)
			return served;
		__builtin_ia32_pause();
	}
	atomic_store(&t->served_waiter, 1);
	while ((served = atomic_load(&t->served)) == 0)
		syscall(SYS_futex, (int *)&t->served, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	atomic_store(&t->served_waiter, 0);
	return served;
}

/* This thread's slot (NULL if it never faulted): cached, but looked up again in a fork child, whose
 * thread id differs. */
static struct rt_thread *stack_own_slot(void)
{
	struct rt_thread *t = tls_thread;
	if (!t || atomic_load(&t->tid) != rt_gettid())
		t = tls_thread = threads_find(rt_gettid());
	return t;
}

/* The fault's stack taken and recorded, once its page is in. */
struct stack_job {
	struct rt_thread *t;
	ucontext_t *uc;
	bool own_stack; /* running on the slot's own stack (stack_own_top) */
};

/* The mask the stack signal's handler runs with: its sa_mask, the signal, and the interrupted one. */
static uint64_t stack_handler_sa_mask;

static void stack_take_and_record(void *arg)
{
	struct stack_job *j = arg;
	struct rt_thread *t = j->t;
	uint64_t ips[rt.cfg.stack_depth + 16];
	uint64_t t0 = rt_mono_ns();
	/* The program's signals are blocked here (sa_mask): the unwind's masks are answered without
	 * system calls, on whichever stack this runs (the seal's frame is this one). */
	uint64_t entered_from;
	memcpy(&entered_from, &j->uc->uc_sigmask, sizeof(entered_from));
	struct rt_seal seal = rt_signals_seal_blocked(entered_from, entered_from | stack_handler_sa_mask |
							      1ull << (rt.sig - 1), &seal);
	unsigned d = stack_at_fault(t, j->uc, ips, j->own_stack); /* meanwhile the handler puts the page in */
	rt_signals_unseal(seal);
	t0 = rt_time_add(&rt.stats.time.sigstack, t0);
	int served = wait_served(t);
	t0 = rt_time_add(&rt.stats.time.sigwait, t0);
	if (served != 1)
		return;
	/* The request is complete only now (its kind: zero, re-fetch or file). Counted here, not by
	 * the handler thread, which may run only after this thread has gone on and exited: the last
	 * stats line would then miss a fault its trace holds (seen under load). */
	count_fault(t->flags, t->kind);
	struct ft_fault f;
	fault_fill(&f, t, atomic_load(&t->tid));
	f.ip = t->pc_at_fault;
	f.origin = FT_ORIGIN_USER;
	if (rt_tls_prefault.nr >= 0)
		d = stack_for_syscall(&f, ips, d);
	if (d) {
		f.stack_id = trace_stack_id(ips, d);
		f.stack_status = FT_STACK_OK;
	} else {
		f.stack_status = FT_STACK_NONE;
		bool at_fault = (uint64_t)j->uc->uc_mcontext.gregs[REG_RIP] == t->pc_at_fault;
		count_nostack(at_fault ? NOSTACK_UNWIND : NOSTACK_MOVED);
	}
	f.latency_ns = latency_since(t->arrival_ns);
	trace_write_fault(&f);
	rt_time_add(&rt.stats.time.sigrecord, t0);
}

/* Calls fn(arg) with the stack pointer at top (16-byte aligned) and returns on the caller's stack:
 * an ordinary call (the callee keeps the registers the ABI says it keeps), rbp holding the way
 * back. Written by hand: no library switches stacks without system calls (swapcontext saves and
 * sets the signal mask). */
__attribute__((visibility("hidden"))) void stack_call_on(void *arg, void (*fn)(void *), void *top);
__asm__(".pushsection .text\n"
	".globl stack_call_on\n"
	".hidden stack_call_on\n"
	".type stack_call_on, @function\n"
	".p2align 4\n"
	"stack_call_on:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	mov %rdx, %rsp\n"
	"	call *%rsi\n"
	"	mov %rbp, %rsp\n"
	"	.cfi_def_cfa %rsp, 16\n"
	"	pop %rbp\n"
	"	.cfi_restore %rbp\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size stack_call_on, .-stack_call_on\n"
	".popsection\n");

/* The thread was on its alternate stack (a handler of the program's own running there, or the
 * entry in front of it): this signal's frame went there too, into what the program sized for its
 * handler (8 KiB is common, and unwinding takes more). The stack is then taken on a stack of the
 * slot's own, made at the first need and kept with the slot; 0 if it cannot be made. */
#define OWN_STACK_BYTES (256 * 1024)

/* A signal's context holds the alternate stack as set (its ss_flags are sigaltstack's, not whether
 * the thread was on it): the frame at `here` lies within it or not. */
static bool frame_on_altstack(const ucontext_t *uc, uintptr_t here)
{
	return !(uc->uc_stack.ss_flags & SS_DISABLE) && here - (uintptr_t)uc->uc_stack.ss_sp < uc->uc_stack.ss_size;
}

static void *stack_own_top(struct rt_thread *t, const ucontext_t *uc)
{
	/* Set with SS_AUTODISARM, the alternate stack was cleared when the program's handler was
	 * entered: the entry kept it (tls_program_alt). */
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (!frame_on_altstack(uc, here) && here - tls_program_alt.lo >= tls_program_alt.size)
		return NULL;
	if (!t->own_stack) {
		/* A guard page below: nothing of ours runs into the memory next to it. */
		char *m = rt_map(OWN_STACK_BYTES + rt.page_size);
		if (m && syscall(SYS_mprotect, m, rt.page_size, PROT_NONE) == 0)
			t->own_stack = m + rt.page_size;
	}
	return t->own_stack ? (char *)t->own_stack + OWN_STACK_BYTES : NULL;
}

static void handler_on_signal(int sig, siginfo_t *si, void *ucv)
{
	(void)sig, (void)si;
	int saved_errno = errno;
	struct rt_thread *t = stack_own_slot();
	if (t) {
		atomic_fetch_add(&t->signals_taken, 1);
		atomic_store(&t->signal_ns, rt_mono_ns()); /* faultregs.c: its fault's sample is past */
	}
	int expected = REQ_PENDING;
	if (!t || !atomic_compare_exchange_strong(&t->state, &expected, REQ_TAKEN))
		goto out;
	atomic_store(&t->busy, 1);
	int cpu = sched_getcpu(), from = atomic_load_explicit(&t->signal_cpu, memory_order_relaxed);
	atomic_store_explicit(&t->cpu, cpu, memory_order_relaxed);
	threads_tell_rseq(t);
	/* No rseq area to tell (glibc's rseq off): its faults' perf records tell handlers its CPU. */
	if (!atomic_load_explicit(&t->rseq_cpu, memory_order_relaxed))
		t->fault_wanted = rt.cfg.fault_samples;
	/* Served by the poller of another CPU: the hand-off this design exists to avoid (stats). */
	if (from >= 0 && from != cpu)
		atomic_fetch_add_explicit(&rt.stats.signals_remote, 1, memory_order_relaxed);
	rt_tls_internal++;
	struct stack_job job = { .t = t, .uc = ucv };
	void *top = stack_own_top(t, ucv);
	if (top) {
		job.own_stack = true;
		stack_call_on(&job, stack_take_and_record, top);
	} else {
		stack_take_and_record(&job);
	}
	rt_tls_internal--;
	atomic_store(&t->busy, 0);
	atomic_store(&t->state, REQ_IDLE);
out:
	errno = saved_errno;
}

void handler_signal_init(void)
{
	rt.sig = SIGRTMAX - 2;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler_on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	/* The program's signals wait the few µs the handler takes: one taken meanwhile ran its handler
	 * on top of ours, and its faults there (a timer's handler counting into the heap) were taken
	 * for fltrace's own, without their stacks. Faults of the CPU itself stay deliverable. */
	sigfillset(&sa.sa_mask);
	sigdelset(&sa.sa_mask, SIGSEGV);
	sigdelset(&sa.sa_mask, SIGBUS);
	sigdelset(&sa.sa_mask, SIGILL);
	sigdelset(&sa.sa_mask, SIGFPE);
	sigdelset(&sa.sa_mask, SIGTRAP);
	memcpy(&stack_handler_sa_mask, &sa.sa_mask, sizeof(stack_handler_sa_mask));
	syscall(SYS_rt_sigaction, rt.sig, NULL, NULL, 8); /* probe: the signal exists */
	rt_real_sigaction(rt.sig, &sa, NULL);
}

static bool request_open(const struct rt_thread *t)
{
	int s = atomic_load(&t->state);
	return s == REQ_CLAIMED || s == REQ_PENDING;
}

/* A signal of the program's own, before its handler runs (preload/signals.c puts fltrace's entry
 * before every handler the program installs). The thread may have left a fault for it whose page a
 * handler thread is putting in right now, the stack signal to follow once the page is in. Counted
 * (signals_taken), so that a handler thread that read the thread asleep in its fault before this
 * does not go on to serve it unsignalled. And once one has claimed the fault, the program's handler
 * waits until the stack signal has been taken (it arrives here, on top): run at once, it could
 * return to the faulting instruction, find the page in place and run on, and the stack read at the
 * stack signal would then not be the fault's. The stack signal is let in meanwhile, whatever the
 * program's handler blocks (one installed before fltrace started, or by a raw system call, may
 * block it); and after PROGRAM_WAIT_NS the handler runs anyway (a handler thread stuck that long
 * has failed in some other way). */
#define PROGRAM_WAIT_NS (5000 * 1000 * 1000ull)
struct program_alt stack_before_program_handler(const void *ucv)
{
	struct program_alt prev = tls_program_alt;
	prev.seal = rt_signals_seal_hide();
	prev.prefault_nr = rt_tls_prefault.nr;
	prev.prefault_kernel_writes = rt_tls_prefault.kernel_writes;
	const ucontext_t *uc = ucv;
	if (frame_on_altstack(uc, (uintptr_t)__builtin_frame_address(0))) {
		tls_program_alt.lo = (uintptr_t)uc->uc_stack.ss_sp;
		tls_program_alt.size = uc->uc_stack.ss_size;
	}
	int saved_errno = errno;
	struct rt_thread *t = stack_own_slot();
	if (t) {
		atomic_fetch_add(&t->signals_taken, 1);
		uint64_t now = rt_mono_ns();
		atomic_store(&t->signal_ns, now);
		atomic_store_explicit(&rt.program_signal_ns, now, memory_order_relaxed);
	}
	/* Not when it interrupted code running with the stack signal blocked, as that signal's handler
	 * runs: come in on top of it before it took the request (a signal it lets through: the CPU's
	 * faults, sent by kill), it waited PROGRAM_WAIT_NS for the very signal it sat on, and a SIGSEGV
	 * sent every ms so waited at each, for ever (memops segvstorm). */
	bool under_stack_handler = rt.sig > 0 && sigismember(&uc->uc_sigmask, rt.sig);
	if (t && rt.sig > 0 && !under_stack_handler && request_open(t)) {
		uint64_t only = 1ull << (rt.sig - 1), was = 0;
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &only, &was, sizeof(only));
		struct timespec pause = { 0, 20 * 1000 };
		for (uint64_t t0 = rt_mono_ns(); request_open(t) && rt_mono_ns() - t0 < PROGRAM_WAIT_NS;)
			syscall(SYS_nanosleep, &pause, NULL);
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &was, NULL, sizeof(was));
	}
	errno = saved_errno;
	return prev;
}

void stack_after_program_handler(struct program_alt was)
{
	rt_signals_seal_show(was.seal);
	rt_tls_prefault.nr = was.prefault_nr;
	rt_tls_prefault.kernel_writes = was.prefault_kernel_writes;
	tls_program_alt.lo = was.lo;
	tls_program_alt.size = was.size;
}

bool handler_owns_signal(int sig)
{
	return rt.phase != RT_OFF && sig == rt.sig;
}

/* The stack of a sleeping thread, unwound from here; 0 frames if it did not stay asleep, or if a
 * fork kept its stack from being read (*forked: unwind it again once the fork is over). */
unsigned unwind_sleeping(struct rt_thread *t, int tid, const struct syscall_state *s, uint64_t *ips, bool *forked)
{
	bool fresh;
	unsigned depth = sysstack_unwind(tid, s->nr, s->pc, s->sp, ips, rt.cfg.stack_depth, &fresh, forked);
	/* A stack reused from the cache had its return addresses checked in place already. */
	if (depth && fresh && !still_in_state(t, tid, s))
		depth = 0;
	return depth;
}
