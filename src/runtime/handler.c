/* The handler threads' loop: read userfaultfd messages, decide for each fault how its stack is taken
 * (signal, unwind from here, or none), serve it, follow up unanswered signals; and the watchdog. */
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
#include "threads.h"
#include "handler.h"

#define MSG_BATCH 64
#define PENDING_MAX 4096
#define WAKE_AFTER_NS (2 * 1000 * 1000ull)      /* a harmless early wake-up */
#define CHECK_BLOCKED_AFTER_NS (50 * 1000 * 1000ull)

static struct {
	pthread_t threads[RT_MAX_HANDLERS];
	unsigned n;
	_Atomic int tids[RT_MAX_HANDLERS];
	_Atomic uint64_t progress; /* messages handled: the watchdog's sign of life */
	_Atomic unsigned started;  /* threads that got past glibc's thread start-up */
	uint64_t watched_progress;
	unsigned stalled_seconds;  /* seconds without progress in which nothing could make any */
	uint64_t stalled_cpu_ticks; /* CPU the handlers used since the last progress */
	uint64_t last_cpu[RT_MAX_HANDLERS];
	bool stalling;
} hd;

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

/* A fault served without the stack signal: fltrace's own, sampled out, or in a system call (whose
 * stack is unwound here, `unwind`, while the thread still sleeps). False if a fork kept the stack
 * from being read: nothing is counted or recorded yet, and the thread must sleep on. */
static bool handler_note_unsignalled(struct rt_thread *req, struct rt_thread *t, int tid, bool record,
				     const struct syscall_state *s, bool unwind, enum rt_nostack why)
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
	unsigned depth = unwind && t ? unwind_sleeping(t, tid, s, ips, &forked) : 0;
	t0 = rt_time_add(&rt.stats.time.unwind, t0);
	if (forked)
		return false;
	count_fault(req->flags, req->kind);
	record_without_stack(req, t, tid, s, ips, depth, why);
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

static void handler_defer_msg(struct handler_ctx *ctx, const struct uffd_msg *m, int fd)
{
	ctx->deferred = handler_list_room(ctx->deferred, ctx->ndeferred, &ctx->deferred_cap, sizeof(*ctx->deferred));
	ctx->deferred[ctx->ndeferred++] = (struct deferred_msg){ .m = *m, .fd = fd };
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

/* Returns false if the fault must wait for a fork to end (handler_lock). */
static bool handler_fault_serve(struct handler_ctx *ctx, const struct uffd_msg *m, int fd, bool holder)
{
	uintptr_t addr = m->arg.pagefault.address & ~((uintptr_t)rt.page_size - 1);
	int tid = (int)m->arg.pagefault.feat.ptid;
	uint64_t arrival = rt_now_ns();
	tls_peer_cpu = -1; /* known again only if this fault's thread is signalled */
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
	bool record = sample_take();
	struct syscall_state s = { .nr = -2 };
	/* A thread inside our signal handler, or with a request still open, gets no second signal. */
	bool busy = !t || atomic_load(&t->busy) || atomic_load(&t->state) != REQ_IDLE;
	uint64_t t0 = rt_mono_ns();
	bool reraise = false;
	int state_err = record && !busy ? handler_state(t, tid, &s, &reraise) : 0;
	rt_time_add(&rt.stats.time.procfs, t0);
	if (reraise) {
		/* Never seen asleep in its fault: the thread left it (something else woke it) or was
		 * kept from going to sleep there for long (a busy machine). Either way, woken, it
		 * retries the access, and faults again if the page is still missing: that fault is
		 * the one served and recorded, with the state read then. */
		uffd_wake(fd, addr, rt.page_size);
		atomic_fetch_add(&rt.stats.faults_reraised, 1);
		return true;
	}
	if (state_err < 0)
		s.nr = -2;
	/* A debugger would stop the program at our signal: its stack is unwound from here instead. So
	 * is a fork holder's: woken to take the signal, it would unwind with the lock held, waiting for
	 * the loader's lock, which a thread asleep in a fault that waits for this fork may hold. */
	bool signal = record && !busy && s.nr == -1 && !holder &&
		      !atomic_load_explicit(&rt.ptraced, memory_order_relaxed);
	/* A thread that blocked the signal at its last fault is asked first, rather than waited
	 * for 2 ms at each fault. */
	if (signal && t->blocks_signal) {
		t->blocks_signal = thread_blocks_signal(tid);
		signal = !t->blocks_signal;
	}
	/* In a system call, or blocking the signal: the stack is unwound from here, the thread kept
	 * asleep meanwhile (it must not run on and change what is being read). */
	bool unwind = record && !busy && !signal && s.nr >= -1 && !slot_has_call_stack(t, s.nr);
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
	/* Only a handler of the program's own can wake the thread from its fault and run it back to
	 * the faulting instruction before its page is in place: then the signal goes first (before
	 * rt.lock: woken, the thread would preempt a SCHED_IDLE poller holding it), and the thread
	 * waits in its handler for the page. Without one, the cheaper order is as safe. */
	enum serve_signal how = !signal ? SERVE_SIGNAL_NONE :
				atomic_load(&rt.program_catches) ? SERVE_SIGNAL_EARLY : SERVE_SIGNAL_LATE;
	if (how == SERVE_SIGNAL_EARLY && !signal_early_post(t, tid))
		how = SERVE_SIGNAL_NONE;
	if (!handler_lock()) {
		if (how != SERVE_SIGNAL_EARLY)
			return false;
		/* A fork holds the lock: the signalled thread records nothing, faults again, and that
		 * fault waits for the fork like any other. */
		signal_early_cancel(t);
		return true;
	}
	bool late = false;
	bool served = fault_serve(req, addr, tid, how, &late);
	rt_unlock();
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
	if (!handler_note_unsignalled(req, t, tid, record, state, unwind, why)) {
		handler_defer_note(ctx, req, t, tid, record, state, unwind, why);
		return true;
	}
	uffd_wake(fd, addr, rt.page_size);
	return true;
}

/* One fault message, timed whole. A fault of the thread that holds rt.lock across a fork is served
 * under its hold, until its thread is woken; another thread's, while a fork holds the lock, is kept
 * for later (its thread sleeps on). */
static void handler_fault(struct handler_ctx *ctx, const struct uffd_msg *m, int fd)
{
	uint64_t t0 = rt_mono_ns();
	int tid = (int)m->arg.pagefault.feat.ptid;
	bool holder = tid && atomic_load(&rt.fork_holder) == tid;
	/* Another handler may act under the holder's hold right now: this fault then waits too. */
	bool done = false;
	if (!holder || rt_lock_borrow()) {
		done = handler_fault_serve(ctx, m, fd, holder);
		if (holder)
			rt_lock_return();
	}
	if (!done)
		handler_defer_msg(ctx, m, fd);
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
		if (handler_note_unsignalled(&d.req, d.t, d.tid, d.record, d.in_state ? &d.s : NULL, d.unwind, d.why))
			uffd_wake(d.req.uffd, d.req.addr, rt.page_size);
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
	for (unsigned i = 0; i < n; i++) {
		struct deferred_msg d = ctx->deferred[i];
		if (holder && (int)d.m.arg.pagefault.feat.ptid != holder)
			ctx->deferred[ctx->ndeferred++] = d;
		else
			handler_fault(ctx, &d.m, d.fd);
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
	uffd_wake(t->uffd, t->addr, rt.page_size);
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
			uffd_wake(t->uffd, t->addr, rt.page_size);
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
static void handler_pin(unsigned index)
{
	unsigned n = rt.cfg.pinned ? cpulist_count(&rt.cfg.cores) : 0;
	if (n == 0)
		return;
	/* The index-th CPU of the list (handlers beyond its length start over at its first). */
	unsigned want = index % n, cpu = 0;
	for (unsigned seen = 0; cpu < CPULIST_MAX; cpu++)
		if (cpulist_has(&rt.cfg.cores, cpu) && seen++ == want)
			break;
	/* A cpulist is the kernel's affinity mask (64-bit words, lowest CPU first): no CPU_ALLOC,
	 * whose malloc would be the program's heap. */
	struct cpulist one = { 0 };
	one.bits[cpu / 64] = 1ull << (cpu % 64);
	syscall(SYS_sched_setaffinity, 0, sizeof(one.bits), one.bits);
}

/* Faults come in bursts: polling a little longer before sleeping saves the wake-up of an idle
 * vCPU, which costs 100+ us on these VMs (kernel-facts). But polling on the CPU the faulting
 * thread runs on takes that CPU from it until the poll ends, and its next fault then waits for
 * the same wake-up anyway: there, block at once (a wake-up on one's own CPU is the cheap one). */
static bool handler_keep_polling(uint64_t last_msg)
{
	if (rt.cfg.spin)
		return true;
	if (rt_mono_ns() - last_msg >= rt.cfg.spin_ns)
		return false;
	return tls_peer_cpu < 0 || tls_peer_cpu != sched_getcpu();
}

static void *handler_main(void *arg)
{
	rt_tls_internal = 1;
	tls_is_handler = true;
	fdtable_thread_enter();
	atomic_store(&hd.tids[(uintptr_t)arg % RT_MAX_HANDLERS], rt_gettid());
	atomic_fetch_add(&hd.started, 1);
	handler_pin((unsigned)(uintptr_t)arg);
	/* Not thread-local: every thread of the program would carry its 70 KB. */
	struct handler_ctx *ctx = rt_map(sizeof(*ctx));
	if (!ctx || serve_thread_init() < 0)
		rt_die("handler", "no memory for a handler thread's state", "free some memory and run again");
	struct uffd_msg msgs[MSG_BATCH];
	/* Two fds with --files=all: the program's memory, and the loader's mappings taken over (whose
	 * REMAP events are only read: reading one lets the mremap that raised it return). */
	struct pollfd pfd[2] = { { .fd = rt.uffd, .events = POLLIN }, { .fd = rt.loader_uffd, .events = POLLIN } };
	nfds_t nfds = rt.loader_uffd >= 0 ? 2 : 1;
	uint64_t last_msg = 0;
	for (;;) {
		ssize_t n = 0;
		bool failed = false;
		for (nfds_t k = 0; k < nfds; k++) {
			ssize_t got = rt_read(pfd[k].fd, msgs, sizeof(msgs));
			if (got < 0 && errno != EAGAIN && errno != EINTR)
				failed = true;
			if (got <= 0)
				continue;
			n += got;
			for (ssize_t i = 0; i < got / (ssize_t)sizeof(msgs[0]); i++) {
				if (msgs[i].event == UFFD_EVENT_PAGEFAULT)
					handler_fault(ctx, &msgs[i], pfd[k].fd);
				/* Each message, not each batch: a batch of 64 slow faults on a busy
				 * machine is progress the watchdog must see. */
				atomic_fetch_add_explicit(&hd.progress, 1, memory_order_relaxed);
			}
		}
		handler_retry_deferred(ctx);
		if (n > 0) {
			if (ctx->npending)
				handler_check_pending(ctx);
			last_msg = rt_mono_ns();
			continue;
		}
		if (failed)
			break;
		if (ctx->npending)
			handler_check_pending(ctx);
		if (handler_keep_polling(last_msg)) {
			__builtin_ia32_pause();
			continue;
		}
		uint64_t t0 = rt_mono_ns();
		atomic_fetch_add_explicit(&rt.stats.time.wakeups, 1, memory_order_relaxed);
		int polled = poll(pfd, nfds, ctx->npending || ctx->ndeferred || ctx->nnotes ? 1 : 200);
		rt_time_add(&rt.stats.time.idle, t0);
		if (polled < 0 && errno != EINTR)
			break;
	}
	return NULL;
}

int handler_start(void)
{
	if (serve_init() < 0)
		return -ENOMEM;
	unsigned n = rt.cfg.handlers ? rt.cfg.handlers : 1;
	if (n > RT_MAX_HANDLERS)
		n = RT_MAX_HANDLERS;
	rt_tls_internal++; /* the new thread's TLS vector comes from untracked memory */
	atomic_store(&hd.started, 0);
	for (hd.n = 0; hd.n < n; hd.n++) {
		if (rt_thread_create(&hd.threads[hd.n], handler_main, (void *)(uintptr_t)hd.n) != 0)
			break;
		pthread_setname_np(hd.threads[hd.n], "fltrace-handler");
	}
	/* glibc's thread start-up reads the program's locale data (__ctype_init), which may be on the
	 * heap: it must be done before the heap is registered (a fork child's is, until its runtime
	 * starts), or a handler would wait for a fault only it can serve. */
	while (atomic_load(&hd.started) < hd.n)
		sched_yield();
	rt_tls_internal--;
	return hd.n == n ? 0 : -EAGAIN;
}

/* A thread of this process from /proc/self/task/<tid>/stat: whether it is on a CPU or waiting for
 * one ('R'), and the CPU it has used (utime + stime, in clock ticks). False if it cannot be read. */
static bool task_sched_state(int tid, bool *runnable, uint64_t *cpu_ticks)
{
	char path[64], buf[512];
	struct fmt f;
	fmt_init(&f, path, sizeof(path));
	fmt_str(&f, "/proc/self/task/");
	fmt_u64(&f, (uint64_t)tid);
	fmt_str(&f, "/stat");
	size_t len = rt_read_file(path, buf, sizeof(buf) - 1);
	buf[len] = '\0';
	char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	if (!p || p[1] != ' ')
		return false;
	*runnable = p[2] == 'R';
	p += 2; /* field 3, the state; utime and stime are fields 14 and 15 */
	for (int field = 3; field < 14 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return false;
	char *end;
	uint64_t ut = strtoull(p, &end, 10), st = strtoull(end, NULL, 10);
	*cpu_ticks = ut + st;
	return true;
}

/* Called once a second (stats thread): faults waiting while no handler has handled a message means
 * a handler may be stuck. Wall time alone is no measure on a busy machine (a handler, or the
 * thread holding rt.lock that it waits for, may wait seconds for a CPU), so a second counts as a
 * stall only if none of them was runnable: all were asleep, on a lock or in a fault, which is
 * what a deadlock looks like. A handler that spins without progress (always runnable) is caught
 * by the CPU it used instead. HANDLER_STALL_SECONDS of either: stop with a message rather than
 * hang forever. */
#define HANDLER_STALL_SECONDS 10
void handler_watchdog(void)
{
	struct pollfd p[2] = { { .fd = rt.uffd, .events = POLLIN }, { .fd = rt.loader_uffd, .events = POLLIN } };
	uint64_t now = atomic_load(&hd.progress);
	if (now != hd.watched_progress || poll(p, rt.loader_uffd >= 0 ? 2 : 1, 0) < 1) {
		hd.watched_progress = now;
		hd.stalled_seconds = 0;
		hd.stalled_cpu_ticks = 0;
		hd.stalling = false;
		return;
	}
	bool someone_runnable = false;
	for (unsigned i = 0; i < hd.n; i++) {
		bool r = false;
		uint64_t cpu = 0;
		if (!task_sched_state(atomic_load(&hd.tids[i]), &r, &cpu))
			continue;
		someone_runnable |= r;
		if (hd.stalling) /* the first second without progress only takes the baseline */
			hd.stalled_cpu_ticks += cpu - hd.last_cpu[i];
		hd.last_cpu[i] = cpu;
	}
	/* A handler asleep on rt.lock waits for its holder, which may itself be waiting for a CPU. */
	int owner = rt.lock.__data.__owner;
	bool r = false;
	uint64_t cpu;
	if (owner > 0 && task_sched_state(owner, &r, &cpu))
		someone_runnable |= r;
	if (hd.stalling && !someone_runnable)
		hd.stalled_seconds++;
	hd.stalling = true;
	long hz = sysconf(_SC_CLK_TCK);
	bool spinning = hz > 0 && hd.stalled_cpu_ticks >= (uint64_t)(HANDLER_STALL_SECONDS * hz);
	if (hd.stalled_seconds >= HANDLER_STALL_SECONDS || spinning)
		rt_die("handler", "no fault has been served for 10 s while the program waits for one",
		       "this is a bug of fltrace: report it with the command that was traced");
}
