/* What a handler thread does with userfaultfd messages: decide for each fault how its stack is
 * taken (signal, unwind from here, or none), serve it, follow up unanswered signals and faults a
 * fork kept waiting. Which threads handle, where and when: pollers.c. */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "fltrace/fmt.h"
#include "fault.h"
#include "uffd.h"
#include "evict.h"
#include "region.h"
#include "threads.h"
#include "handler.h"
#include "sysstack.h"
#include "faultregs.h"

#define PENDING_MAX 4096
#define WAKE_AFTER_NS (2 * 1000 * 1000ull)      /* a harmless early wake-up */
#define CHECK_BLOCKED_AFTER_NS (50 * 1000 * 1000ull)

static __thread bool tls_is_handler;
/* The CPU the thread of this handler's last fault ran on at its previous stack signal (-1:
 * unknown, or that fault was served without the signal): where it most likely runs now. */
static __thread int tls_peer_cpu = -1;

bool handler_is_current_thread(void)
{
	return tls_is_handler;
}

/* A fault kept while a fork holds rt.lock: its message, served once the fork is over. */
struct deferred_msg {
	struct uffd_msg m;
	int fd;
	uint64_t since; /* first kept (rt_mono_ns) */
};

/* A fault served without the stack signal whose thread's stack could not be read while a fork held
 * rt.lock: its thread sleeps on until the fork is over, then is unwound, noted and woken. */
struct deferred_note {
	struct rt_thread req; /* the request as served: address, access, kind, fd */
	struct rt_thread *t;
	int tid;
	bool record, unwind, in_state;
	struct syscall_state s;
	enum rt_nostack why;
};

/* Lists that grow by doubling: a program may have any number of threads waiting for a fork. */
struct handler_ctx {
	struct rt_thread *pending[PENDING_MAX];
	unsigned npending;
	struct deferred_msg *deferred;
	unsigned ndeferred, deferred_cap;
	struct deferred_note *notes;
	unsigned nnotes, notes_cap;
	/* The stack of the fault at hand, read here while its thread sleeps (handler_user_stack). */
	uint64_t user_ips[FLTRACE_MAX_STACK_DEPTH];
	struct user_unwind user;
};

/* Room for one more entry in such a list (rt_map'd: the program's heap is no place for it). */
static void *handler_list_room(void *v, unsigned n, unsigned *cap, size_t size)
{
	if (n < *cap)
		return v;
	unsigned ncap = *cap ? *cap * 2 : 64;
	void *nv = rt_map((size_t)ncap * size);
	if (!nv)
		rt_die("handler", "no memory for the faults waiting for a fork", "free some memory and run again");
	if (v) {
		memcpy(nv, v, (size_t)n * size);
		rt_unmap(v, (size_t)*cap * size);
	}
	*cap = ncap;
	return nv;
}

/* A fault served without the stack signal: fltrace's own, sampled out, one in user mode whose stack
 * was read here before it was served (`pre`: handler_user_stack), or in a system call (whose stack is
 * unwound here, `unwind`, while the thread still sleeps). False if a fork kept the stack from being
 * read: nothing is counted or recorded yet, and the thread must sleep on. */
static bool handler_note_unsignalled(struct rt_thread *req, struct rt_thread *t, int tid, bool record,
				     const struct syscall_state *s, bool unwind, const struct handler_ctx *pre,
				     enum rt_nostack why)
{
	if (t && atomic_load(&t->busy)) {
		/* Taken inside our stack handler (libunwind's TLS lookups read the thread's TLS vector,
		 * which glibc allocated on the program's heap): fltrace's fault, not the program's. */
		atomic_fetch_add(&rt.stats.faults_self, 1);
		return true;
	}
	if (!record) {
		count_fault(req->flags, req->kind);
		atomic_fetch_add(&rt.stats.faults_sampled_out, 1);
		return true;
	}
	uint64_t ips[FLTRACE_MAX_STACK_DEPTH];
	uint64_t t0 = rt_mono_ns();
	bool forked = false;
	unsigned depth = pre ? pre->user.depth : unwind && t ? unwind_sleeping(t, tid, s, ips, &forked) : 0;
	t0 = rt_time_add(&rt.stats.time.unwind, t0);
	if (forked)
		return false;
	count_fault(req->flags, req->kind);
	record_without_stack(req, t, tid, s, pre ? pre->user_ips : ips, depth, why);
	if (pre)
		atomic_fetch_add_explicit(&rt.stats.stacks_by_handler, 1, memory_order_relaxed);
	if (pre && pre->user.cut)
		atomic_fetch_add(&rt.stats.stacks_cut, 1);
	rt_time_add(&rt.stats.time.record, t0);
	return true;
}

static void handler_defer_note(struct handler_ctx *ctx, const struct rt_thread *req, struct rt_thread *t, int tid,
			       bool record, const struct syscall_state *s, bool unwind, enum rt_nostack why)
{
	ctx->notes = handler_list_room(ctx->notes, ctx->nnotes, &ctx->notes_cap, sizeof(*ctx->notes));
	struct deferred_note *d = &ctx->notes[ctx->nnotes++];
	*d = (struct deferred_note){ .req = *req, .t = t, .tid = tid, .record = record, .unwind = unwind,
				     .in_state = s != NULL, .why = why };
	if (s)
		d->s = *s;
}

/* Messages kept by every handler: faults read and not yet served (the watchdog counts them as
 * waiting, as it does those still in the userfaultfd). */
static _Atomic unsigned handler_kept;

bool handler_keeps_faults(void)
{
	return atomic_load_explicit(&handler_kept, memory_order_relaxed) != 0;
}

static void handler_defer_msg(struct handler_ctx *ctx, const struct uffd_msg *m, int fd, uint64_t since)
{
	atomic_fetch_add_explicit(&handler_kept, 1, memory_order_relaxed);
	ctx->deferred = handler_list_room(ctx->deferred, ctx->ndeferred, &ctx->deferred_cap, sizeof(*ctx->deferred));
	ctx->deferred[ctx->ndeferred++] = (struct deferred_msg){ .m = *m, .fd = fd, .since = since };
}

/* FLTRACE_TEST_HANDLER_LAG: this handler falls behind the thread it has just served, as one preempted
 * on a busy machine does. */
static void handler_test_lag(void)
{
	if (!rt.cfg.test_handler_lag_ns)
		return;
	uint64_t ns = rt.cfg.test_handler_lag_ns;
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The thread's state at its fault (thread_syscall_state), or -EAGAIN at once for a restless thread.
 * A thread signalled again and again inside a system call (a timer's signal during a big write)
 * leaves each fault before it can be seen asleep there, and the kernel retries the copy at once:
 * woken unserved to be read at its next try, it would fault for ever, and reading the state of a
 * thread on its way to sleep costs the kernel a scheduler tick. So after RESTLESS_AFTER faults in a
 * row never seen asleep, its next RESTLESS_FAULTS are served without its state (their stacks
 * unknown: faults_nostack_state), then it is read again. Not after one or two: a thread preempted
 * on its way to sleep on a busy machine is not seen asleep either, once (a signal storm's test lost
 * 257 stacks under load 13 when two in a row sufficed). */
#define RESTLESS_AFTER 4
#define RESTLESS_FAULTS 256
/* Faults of one thread reraised in a row because it took a signal while its state was read: after
 * RERAISE_MAX the next is served as read (a timer's signal as fast as the reads would otherwise
 * keep a fault from ever being served). */
#define RERAISE_MAX 64
static int handler_state(struct rt_thread *t, int tid, struct syscall_state *s, bool *reraise)
{
	*reraise = false;
	if (t->restless > RESTLESS_AFTER) {
		t->restless--;
		return -EAGAIN;
	}
	int err = thread_syscall_state(t, tid, s);
	if (err != -EAGAIN) {
		t->restless = 0;
		return err;
	}
	if (++t->restless < RESTLESS_AFTER)
		*reraise = true;
	else
		t->restless = RESTLESS_AFTER + RESTLESS_FAULTS;
	return err;
}

/* Takes rt.lock, counting the wait; false while a fork holds it (rt.fork_holder): the fault then
 * waits, its message kept, and this handler stays free to serve the holder's own fault, which the
 * holder would otherwise wait for with the lock held. */
static bool handler_lock(void)
{
	uint64_t t0 = rt_mono_ns();
	bool got = rt_lock_unless_fork();
	rt_time_add(&rt.stats.time.lockwait, t0);
	return got;
}

/* A fault of a thread whose request is still open waits for it to close (up to REQUEST_WAIT_NS),
 * where several handlers read faults at once (pollers): one reading them in order never met this.
 * - The same page: the thread left its fault early (a signal of the program's woke it), touched
 *   the page again and faulted again before the first was served. Served now, on its own, it went
 *   as fltrace's fault (the thread was in the stack handler of the first) while the first found
 *   its page present: a fault lost (sigalarm: 92 of 20,000). Once the first is done it is a
 *   duplicate.
 * - Another page, the stack signal of the first sent but not yet taken: the thread was woken early
 *   and its program's handler faulted; it will take the stack signal before it can run on. Served
 *   now, this fault would find the request open and go without a stack. */
#define REQUEST_WAIT_NS (20 * 1000 * 1000ull)
static bool handler_request_open(int tid, uintptr_t page, uint64_t since, uint64_t now)
{
	struct rt_thread *t = tid ? threads_find(tid) : NULL;
	int state = t ? atomic_load(&t->state) : REQ_IDLE;
	if (state == REQ_IDLE)
		return false;
	/* The same page waits however long while it is on its way: the handler of the first fault
	 * serves it (the thread waits in the stack handler for it), and a busy machine may delay it
	 * any time. Once served it may have been evicted again while the stack handler ran, which
	 * then faulted on it (libunwind reads the code at a faulting pc): that fault is fltrace's
	 * own, served now, or the thread would wait in its handler for ever (python's exit at -L 2,
	 * 1 run in 3). Outside the handler the page waits for the request to close, as before. */
	if (t->addr == page && (atomic_load(&t->served) != 1 || !atomic_load(&t->busy)))
		return true;
	return state != REQ_TAKEN && !atomic_load(&t->busy) && now - since < REQUEST_WAIT_NS;
}

/* Whether the stack signal goes before the page (EARLY) or once it is in place (LATE): LATE wakes the
 * thread once, to take the signal at its faulting instruction; EARLY wakes it for the signal, and
 * it preempts the poller of its CPU and waits in the stack handler for the page (python: 20%
 * slower, 12 µs a fault). But once the page is in place, anything that wakes the thread before the
 * signal lets it run past its fault, and the stack read then is not the fault's: a signal of the
 * program's own does (its handler waits for a claimed fault, stack_before_program_handler, but a
 * message of the fault read twice, once before and once after the signal took the thread out of
 * its fault, ends in a second wake). So EARLY while the program's signals arrive: within a second
 * of the last one. */
#define PROGRAM_SIGNALS_RECENT_NS (1000 * 1000 * 1000ull)
static bool handler_program_signals_recent(void)
{
	uint64_t last = atomic_load_explicit(&rt.program_signal_ns, memory_order_relaxed);
	return last && rt_mono_ns() - last < PROGRAM_SIGNALS_RECENT_NS;
}

/* Returns false if the fault must wait for a fork to end (handler_lock). */
/* A fault kept while its thread's request was open (handler_request_open): if its page is in place
 * now, it was that request's own fault read late, or one the thread left when it was woken early,
 * and it only needs its thread woken (a duplicate); so does one whose memory was unmapped since
 * (region_born_after). Read as a new fault, the thread found running
 * would count as restless, and a few such in a row cost the next 256 faults their stacks. */
static bool handler_late_duplicate(uintptr_t addr, int fd, uint32_t gen)
{
	if (!handler_lock())
		return false;
	uint32_t *pg = region_page(addr);
	bool dup = pg && (pg_state(*pg) == PAGE_PRESENT || region_born_after(addr, gen));
	rt_unlock();
	if (dup) {
		atomic_fetch_add(&rt.stats.faults_dup, 1);
		serve_wake_page(fd, addr);
	}
	return dup;
}

/* A stack not cached costs a handler 11-15 us to unwind afresh (python's: 64 frames, and the check
 * that the thread stayed asleep), three times the stack signal's cost; a cached one 0.3-1.5 us. So a
 * thread's stack is unwound afresh only while the handler's stacks of it come back often enough (4
 * reused for each new one, over its last 256 or so), and at every 8th new one, to learn where they
 * do. python filling memory at -L 1000 (23% of its stacks new): 2.73 s with every new stack unwound
 * here, 2.44 so, 2.57 with every stack by the signal (2 runs each). */
static bool handler_unwind_pays(const struct rt_thread *t)
{
	unsigned reused = t->stacks_reused, fresh = t->stacks_new;
	return reused + fresh < 16 || reused >= 4 * fresh || fresh % 8 == 0;
}

static void handler_count_reuse(struct rt_thread *t, bool reused)
{
	if (reused)
		t->stacks_reused++;
	else
		t->stacks_new++;
	if (t->stacks_reused + t->stacks_new > 256) {
		t->stacks_reused /= 2;
		t->stacks_new /= 2;
	}
}

/* Code that keeps its frame in rbp (built with frame pointers) needs the register /proc does not
 * show: a thread whose stacks need it most of the time (half of its last unwinds here, after 64)
 * has its faults recorded by perf from then on (faultregs.c). Not every thread: the records cost
 * the faulting thread 1 us in the kernel and its two context switches per fault more (the
 * program's CPU time per fault in make bench, 06:45 UTC: fillscan 7.9 us against 4.9 by /proc;
 * a quarter of its peak 3.23 s against 2.93), which only sparing the stack signal repays. */
static void handler_count_lacked_fp(struct rt_thread *t, bool lacked)
{
	t->unwinds++;
	t->unwinds_lacked_fp += lacked;
	if (t->unwinds >= 64 && t->unwinds_lacked_fp * 2 >= t->unwinds)
		t->fault_wanted = rt.cfg.fault_samples;
	if (t->unwinds > 256) {
		t->unwinds /= 2;
		t->unwinds_lacked_fp /= 2;
	}
}

/* The thread's rseq area, NULL if unknown or on tracked memory (a thread on a stack of the program's
 * own making, from its heap: a handler must not fault on it). */
static const uint32_t *handler_rseq_cpu(struct rt_thread *t)
{
	const uint32_t *cpu_at = atomic_load_explicit(&t->rseq_cpu, memory_order_relaxed);
	if (cpu_at && !t->rseq_untracked) {
		if (!handler_lock())
			return NULL;
		t->rseq_untracked = region_page((uintptr_t)cpu_at) ? -1 : 1;
		rt_unlock();
	}
	return cpu_at && t->rseq_untracked > 0 ? cpu_at : NULL;
}

static void handler_note_cpu(struct rt_thread *t, int cpu)
{
	if (cpu >= 0 && cpu < CPULIST_MAX) {
		atomic_store_explicit(&t->cpu, cpu, memory_order_relaxed);
		tls_peer_cpu = cpu; /* --poll adaptive: its handler does not poll on the thread's CPU */
	}
}

/* Where a thread whose fault is not recorded (past -S's rate) runs: nothing else tells it (no stack
 * signal, no stack read here), and faults routed to a CPU it had left were served across vCPUs until
 * its next recorded one (python at -S 1: 4 runs of 12 took 0.10-0.24 s against 0.08-0.09, in one
 * each of its 5,400 faults served by the other vCPU's poller; 12 of 12 at 0.09 with this). From the
 * fault's perf sample where the thread has them, else from its rseq area at every 8th such fault:
 * no state read says the thread is still alive (its id may be another thread's by now, its area
 * unmapped or the program's memory again): read as stacks are read (sysstack_peek). */
static void handler_unrecorded_cpu(struct rt_thread *t, const struct fault_regs *regs)
{
	if (regs) {
		handler_note_cpu(t, regs->cpu);
		return;
	}
	const uint32_t *cpu_at = t->unrecorded++ % 8 ? NULL : handler_rseq_cpu(t);
	uint32_t cpu;
	if (cpu_at && sysstack_peek((uintptr_t)cpu_at, &cpu, sizeof(cpu)))
		handler_note_cpu(t, (int)cpu);
}

/* A user-mode fault's stack read here while its thread sleeps, instead of by the stack signal: the
 * signal's delivery, its frame (with the AVX-512 state) and sigreturn cost the thread more than an
 * unwind here of a stack seen before (0.3-1.5 us a fault: its words checked in place).
 * FLTRACE_STACKS=signal against this, alternating (04:38 UTC, 2 runs each): GAPBS bfs serial
 * -L 1000 5.87-5.89 -> 5.62-5.63 s, -L 140 8.81-8.82 -> 8.08-8.14, python -L 1000 2.57 -> 2.44,
 * -L 170 5.70-6.09 -> 5.12-5.23. Only where the unwind is the signal's
 * own (sysstack_unwind_user), and where the thread's CPU can be read without the signal (its rseq
 * area, told at its first stack signal: the signal is what kept rt_thread.cpu, by which faults are
 * routed, current). Not after a signal of the program's took the thread out of its fault meanwhile
 * (its stack may have moved on): the stack signal then, as before. */
static bool handler_user_stack(struct handler_ctx *ctx, struct rt_thread *t, int tid, const struct syscall_state *s,
			       unsigned taken, const struct fault_regs *regs)
{
	const uint32_t *cpu_at = regs ? NULL : handler_rseq_cpu(t);
	if (!rt.cfg.stacks_by_handler || (!regs && !cpu_at))
		return false;
	/* Read while the thread is known alive (its state was just read): it may end right after. */
	int cpu = regs ? regs->cpu : (int)*(const volatile uint32_t *)cpu_at;
	uint64_t t0 = rt_mono_ns();
	bool whole = sysstack_unwind_user(tid, s->pc, s->sp, regs ? &regs->bp : NULL, ctx->user_ips,
					  rt.cfg.stack_depth, handler_unwind_pays(t), &ctx->user);
	/* A fresh unwind read memory the thread would have changed had it left its fault (a signal
	 * the program's entry does not count: glibc's own, or a handler installed by a raw system call). */
	whole = whole && (!ctx->user.fresh || still_in_state(t, tid, s));
	rt_time_add(&rt.stats.time.unwind, t0);
	if (!regs && ctx->user.known)
		handler_count_lacked_fp(t, ctx->user.lacked_fp);
	whole = whole && !atomic_load(&t->busy) && atomic_load(&t->signals_taken) == taken;
	/* Reused only where that spared the signal: a cached stack that needs rbp or holds fltrace's
	 * frames does not. */
	handler_count_reuse(t, whole && !ctx->user.fresh);
	if (!whole)
		return false;
	handler_note_cpu(t, cpu);
	return true;
}

static bool handler_fault_serve(struct handler_ctx *ctx, const struct uffd_msg *m, int fd, bool holder, bool kept,
				uint64_t since)
{
	uintptr_t addr = m->arg.pagefault.address & ~((uintptr_t)rt.page_size - 1);
	int tid = (int)m->arg.pagefault.feat.ptid;
	uint64_t arrival = rt_now_ns();
	tls_peer_cpu = -1; /* known again once this fault's thread is signalled, or its rseq area read */
	if (kept && handler_late_duplicate(addr, fd, m->reserved3))
		return true;
	if (evict_has_probation()) {
		if (!handler_lock())
			return false;
		uint64_t t0 = rt_mono_ns();
		bool soft = fault_serve_soft(addr, fd);
		if (soft)
			rt_time_add(&rt.stats.time.soft, t0);
		rt_unlock();
		serve_wakes_flush();
		if (soft)
			return true;
	}
	struct rt_thread *t = threads_get(tid);
	/* A thread inside our signal handler, or with a request still open, gets no second signal. */
	bool busy = !t || atomic_load(&t->busy) || atomic_load(&t->state) != REQ_IDLE;
	/* Another handler opened a request for this thread since handler_fault looked (it read the
	 * thread's first fault, this one its next, after a signal of the program's woke it): this
	 * fault waits for it as it would have then. Served at once, it went without its stack, and
	 * the other found its page in place (a signal storm under load). */
	if (busy && t && !holder && handler_request_open(tid, addr, since, rt_mono_ns()))
		return false;
	bool record = sample_take();
	struct syscall_state s = { .nr = -2 };
	uint64_t t0 = rt_mono_ns();
	bool reraise = false;
	unsigned taken = t ? atomic_load(&t->signals_taken) : 0;
	/* The fault's registers from its sample where there is one (0.1 us), else from /proc (2 us).
	 * The thread's ring is emptied at each of its messages, recorded or not: a record left there
	 * would be older than the fault of a later message. */
	struct fault_regs regs;
	bool took = t && rt.cfg.fault_samples && faultregs_take(t, tid, addr, &regs);
	bool sampled = took && record && !busy;
	if (!record && t && !busy)
		handler_unrecorded_cpu(t, took ? &regs : NULL);
	int state_err = 0;
	if (sampled) {
		s = (struct syscall_state){ .nr = -1, .pc = regs.pc, .sp = regs.sp };
		atomic_fetch_add_explicit(&rt.stats.faults_regs_sampled, 1, memory_order_relaxed);
	} else if (record && !busy) {
		state_err = handler_state(t, tid, &s, &reraise);
	}
	rt_time_add(&rt.stats.time.procfs, t0);
	/* The thread took a stack signal of another handler's request while its state was read (this
	 * handler preempted in between): it left this fault, and the state read is that of our stack
	 * handler, not of the fault. Served as a fault in a system call, the page went in while the
	 * thread was away, and its touch went without its stack (a signal storm under load, where a
	 * stale message's signal woke it). Woken, it faults again if it still needs the page. */
	if (!busy && t->reraised < RERAISE_MAX && (atomic_load(&t->busy) || atomic_load(&t->signals_taken) != taken))
		reraise = true;
	if (state_err < 0)
		s.nr = -2;
	/* A debugger would stop the program at our signal: its stack is unwound from here instead. So
	 * is a fork holder's: woken to take the signal, it would unwind with the lock held, waiting for
	 * the loader's lock, which a thread asleep in a fault that waits for this fork may hold. And a
	 * vfork child's, a process of its own that our signal cannot reach (t->foreign). */
	bool signal = !reraise && record && !busy && s.nr == -1 && !holder && !t->foreign &&
		      !atomic_load_explicit(&rt.ptraced, memory_order_relaxed);
	bool by_handler = signal && handler_user_stack(ctx, t, tid, &s, taken, sampled ? &regs : NULL);
	signal = signal && !by_handler;
	/* A thread that blocked the signal at its last fault is asked first, rather than waited
	 * for 2 ms at each fault. */
	if (signal && t->blocks_signal) {
		t->blocks_signal = thread_blocks_signal(tid);
		signal = !t->blocks_signal;
	}
	/* The thread's slot is this handler's until the fault is done: two handlers reading two
	 * faults of one thread at once (the thread left the first early and faulted again) both
	 * signalled it, and the one that found the page in place told it to record nothing. The
	 * other fault waits (handler_request_open). */
	bool early = signal && handler_program_signals_recent();
	if (signal) {
		int idle = REQ_IDLE;
		if (!atomic_compare_exchange_strong(&t->state, &idle, REQ_CLAIMED))
			return false;
		/* A signal of the program's own took it out of its fault after its state was read, and
		 * found the fault unclaimed (stack_before_program_handler): its handler runs on, and
		 * may return to the faulting instruction. Woken, the thread faults again if it still
		 * needs the page; served now, it could run past it before a late stack signal. */
		if (!early)
			serve_owe_signal(addr);
		if (!early && t->reraised < RERAISE_MAX && atomic_load(&t->signals_taken) != taken) {
			atomic_store(&t->state, REQ_IDLE);
			serve_owe_none(fd);
			reraise = true;
		}
	}
	if (reraise) {
		/* Never seen asleep in its fault: the thread left it (something else woke it) or was
		 * kept from going to sleep there for long (a busy machine). Either way, woken, it
		 * retries the access, and faults again if the page is still missing: that fault is
		 * the one served and recorded, with the state read then. */
		serve_wake_page(fd, addr);
		atomic_fetch_add(&rt.stats.faults_reraised, 1);
		if (t)
			t->reraised++;
		return true;
	}
	if (t)
		t->reraised = 0;
	/* In a system call, or blocking the signal: the stack is unwound from here, the thread kept
	 * asleep meanwhile (it must not run on and change what is being read). */
	bool unwind = record && !busy && !signal && !by_handler && s.nr >= -1 && !slot_has_call_stack(t, s.nr);
	struct rt_thread local;
	struct rt_thread *req = signal ? t : &local; /* only a signalled request lives in the slot */
	req->addr = addr;
	req->uffd = fd;
	req->arrival_ns = arrival;
	req->flags = (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) ? FT_FLAG_WRITE : 0;
	req->kind = FT_KIND_ZERO;
	req->region = 0;
	req->pc_at_fault = s.pc;
	req->sp_at_fault = s.sp;
	enum serve_signal how = !signal ? SERVE_SIGNAL_NONE : early ? SERVE_SIGNAL_EARLY : SERVE_SIGNAL_LATE;
	if (how == SERVE_SIGNAL_EARLY && !signal_early_post(t, tid))
		how = SERVE_SIGNAL_NONE; /* the slot is back to IDLE */
	else if (how == SERVE_SIGNAL_EARLY)
		atomic_fetch_add(&rt.stats.faults_signal_first, 1);
	if (!handler_lock()) {
		if (how == SERVE_SIGNAL_LATE) {
			atomic_store(&t->state, REQ_IDLE); /* the fault waits for the fork, unclaimed */
			serve_owe_none(fd);
		}
		if (how != SERVE_SIGNAL_EARLY)
			return false;
		/* A fork holds the lock: the signalled thread records nothing, faults again, and that
		 * fault waits for the fork like any other (woken, should it block the signal). */
		signal_early_cancel(t);
		serve_wake_page(fd, addr);
		return true;
	}
	/* The page was unmapped since the message was read and its address mapped again (a kept or
	 * delayed message: sigalarm's loop maps, touches and unmaps 64 KiB at one address): the
	 * fault was on memory that is gone. Served, the new mapping's page came in before the
	 * program touched it, and that touch went without its stack. Its thread, woken, faults
	 * again if it still needs the page. */
	if (region_born_after(addr, m->reserved3)) {
		rt_unlock();
		if (how == SERVE_SIGNAL_EARLY)
			signal_early_cancel(t);
		else if (how == SERVE_SIGNAL_LATE) {
			atomic_store(&t->state, REQ_IDLE);
			serve_owe_none(fd);
		}
		atomic_fetch_add(&rt.stats.faults_dup, 1);
		serve_wake_page(fd, addr);
		return true;
	}
	/* Another handler owns this thread's fault on this page (it sent the stack signal, and serves
	 * the page for the thread waiting in its handler): this message is one the thread left,
	 * read late. Served here, it would leave that handler a page already in place, and the fault
	 * without its record. */
	if (t && req != t && atomic_load(&t->state) != REQ_IDLE && t->addr == addr && atomic_load(&t->served) != 1) {
		rt_unlock();
		atomic_fetch_add(&rt.stats.faults_dup, 1);
		serve_wake_page(fd, addr); /* harmless if no one waits: a cancelled request faults again */
		return true;
	}
	bool late = false;
	bool served = fault_serve(req, addr, tid, how, &late);
	if (how == SERVE_SIGNAL_LATE && !late)
		atomic_store(&t->state, REQ_IDLE); /* claimed, but nothing was signalled */
	rt_unlock();
	if (how == SERVE_SIGNAL_LATE && !late)
		serve_owe_none(fd);
	serve_wakes_flush();
	if (!served)
		return true;
	if (how == SERVE_SIGNAL_EARLY || late) { /* counted by the thread, as it records (handler_on_signal) */
		tls_peer_cpu = atomic_load_explicit(&t->cpu, memory_order_relaxed);
		handler_test_lag();
		if (ctx->npending < PENDING_MAX)
			ctx->pending[ctx->npending++] = t;
		return true;
	}
	/* The thread sleeps until the record is written: a program that exits right after its last
	 * fault must still find that fault in its trace. */
	enum rt_nostack why = signal ? NOSTACK_GONE : s.nr >= -1 ? NOSTACK_UNWIND : NOSTACK_STATE;
	const struct syscall_state *state = s.nr >= -1 ? &s : NULL;
	if (!handler_note_unsignalled(req, t, tid, record, state, unwind, by_handler ? ctx : NULL, why)) {
		handler_defer_note(ctx, req, t, tid, record, state, unwind, why);
		return true;
	}
	serve_wake_page(fd, addr);
	return true;
}

/* One fault message, timed whole. A fault of the thread that holds rt.lock across a fork is served
 * under its hold, until its thread is woken; another thread's, while a fork holds the lock, is kept
 * for later (its thread sleeps on). */
static void handler_fault(struct handler_ctx *ctx, const struct uffd_msg *m, int fd, uint64_t since)
{
	uint64_t t0 = rt_mono_ns();
	int tid = (int)m->arg.pagefault.feat.ptid;
	bool holder = tid && atomic_load(&rt.fork_holder) == tid;
	/* Another handler may act under the holder's hold right now: this fault then waits too. */
	bool done = false;
	uintptr_t page = m->arg.pagefault.address & ~((uintptr_t)rt.page_size - 1);
	if (!holder && handler_request_open(tid, page, since ? since : t0, t0))
		done = false;
	else if (!holder || rt_lock_borrow()) {
		done = handler_fault_serve(ctx, m, fd, holder, since != 0, since ? since : t0);
		if (holder)
			rt_lock_return();
	}
	if (!done)
		handler_defer_msg(ctx, m, fd, since ? since : t0);
	rt_time_add(&rt.stats.time.serve, t0);
}

/* Faults served during a fork whose stacks are read now that it is over (one that meets another
 * fork waits again). */
static void handler_finish_notes(struct handler_ctx *ctx)
{
	unsigned n = ctx->nnotes;
	ctx->nnotes = 0;
	for (unsigned i = 0; i < n; i++) {
		struct deferred_note d = ctx->notes[i];
		if (handler_note_unsignalled(&d.req, d.t, d.tid, d.record, d.in_state ? &d.s : NULL, d.unwind, NULL,
					     d.why))
			serve_wake_page(d.req.uffd, d.req.addr);
		else
			ctx->notes[ctx->nnotes++] = d; /* at most at index i: no growth */
	}
}

/* The faults kept while a fork held rt.lock: all once it has ended, the forking thread's own as soon
 * as no other handler acts under its hold (one that meets a fork again is kept again, at an index
 * no higher than its own). */
static void handler_retry_deferred(struct handler_ctx *ctx)
{
	int holder = atomic_load(&rt.fork_holder);
	if (ctx->nnotes && !holder)
		handler_finish_notes(ctx);
	unsigned n = ctx->ndeferred;
	ctx->ndeferred = 0;
	atomic_fetch_sub_explicit(&handler_kept, n, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++) {
		struct deferred_msg d = ctx->deferred[i];
		if (holder && (int)d.m.arg.pagefault.feat.ptid != holder) {
			ctx->deferred[ctx->ndeferred++] = d;
			atomic_fetch_add_explicit(&handler_kept, 1, memory_order_relaxed);
		}
		else
			handler_fault(ctx, &d.m, d.fd, d.since);
	}
}

/* A thread that blocks the stack signal (glibc blocks every signal in a new thread until its
 * start-up code is done) sleeps on at its fault: its stack is unwound from here, the same way as
 * inside a system call. Returns false if the signal is on its way to the thread (it is just late). */
static bool record_blocked_thread(struct rt_thread *t, int tid)
{
	enum sig_fate fate = thread_signal_fate(tid);
	if (fate == SIG_COMING)
		return false;
	t->blocks_signal = true;
	int expected = REQ_PENDING;
	if (!atomic_compare_exchange_strong(&t->state, &expected, REQ_CANCELLED))
		return true; /* it took the signal after all (and counted its fault) */
	count_fault(t->flags, t->kind);
	uint64_t ips[FLTRACE_MAX_STACK_DEPTH];
	unsigned depth = 0;
	struct syscall_state at = { .nr = -1, .pc = t->pc_at_fault, .sp = t->sp_at_fault };
	bool asleep = fate == SIG_HELD && still_in_state(t, tid, &at);
	bool forked = false; /* a fork kept its stack from being read: recorded without (rare) */
	if (asleep)
		depth = unwind_sleeping(t, tid, &at, ips, &forked);
	record_without_stack(t, t, tid, &at, ips, depth,
			     fate == SIG_GONE ? NOSTACK_GONE : asleep ? NOSTACK_UNWIND : NOSTACK_BLOCKED);
	atomic_store(&t->state, REQ_IDLE);
	serve_wake_page(t->uffd, t->addr);
	return true;
}

/* Requests the signal has not answered: a thread that blocks it is unwound from here; any other
 * is woken (harmless: the signal, if deliverable, is taken on the way back to the faulting
 * instruction) and waited for however long the machine makes it wait, unless it has blocked the
 * signal since or ended. */
static void handler_check_pending(struct handler_ctx *ctx)
{
	uint64_t now = rt_mono_ns();
	for (unsigned i = 0; i < ctx->npending;) {
		struct rt_thread *t = ctx->pending[i];
		if (atomic_load(&t->state) != REQ_PENDING) {
			ctx->pending[i] = ctx->pending[--ctx->npending];
			continue;
		}
		uint64_t age = now - t->posted_mono_ns;
		int tid = atomic_load(&t->tid);
		if (age > WAKE_AFTER_NS && !t->woken) {
			t->woken = true;
			if (record_blocked_thread(t, tid)) {
				ctx->pending[i] = ctx->pending[--ctx->npending];
				continue;
			}
			serve_wake_page(t->uffd, t->addr);
		}
		enum sig_fate fate = age > CHECK_BLOCKED_AFTER_NS ? thread_signal_fate(tid) : SIG_COMING;
		if (fate != SIG_COMING) {
			int expected = REQ_PENDING;
			if (atomic_compare_exchange_strong(&t->state, &expected, REQ_CANCELLED)) {
				count_fault(t->flags, t->kind);
				record_without_stack(t, t, tid, NULL, NULL, 0,
						     fate == SIG_GONE ? NOSTACK_GONE : NOSTACK_BLOCKED);
				atomic_store(&t->state, REQ_IDLE);
			}
			ctx->pending[i] = ctx->pending[--ctx->npending];
			continue;
		}
		i++;
	}
}

void handler_thread_enter(void)
{
	rt_tls_internal = 1;
	tls_is_handler = true;
	fdtable_thread_enter();
}

struct handler_ctx *handler_ctx_new(void)
{
	/* Not thread-local: every thread of the program would carry its 70 KB. */
	struct handler_ctx *ctx = rt_map(sizeof(*ctx));
	if (!ctx || serve_thread_init() < 0)
		rt_die("handler", "no memory for a handler thread's state", "free some memory and run again");
	return ctx;
}

void handler_message(struct handler_ctx *ctx, const struct uffd_msg *m, int fd)
{
	if (m->event == UFFD_EVENT_PAGEFAULT)
		handler_fault(ctx, m, fd, 0);
}

void handler_tend(struct handler_ctx *ctx)
{
	handler_retry_deferred(ctx);
	if (ctx->npending)
		handler_check_pending(ctx);
}

bool handler_ctx_waiting(const struct handler_ctx *ctx)
{
	return ctx->npending || ctx->ndeferred || ctx->nnotes;
}

int handler_peer_cpu(void)
{
	return tls_peer_cpu;
}
