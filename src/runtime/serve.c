/* Serving one page: zeros, its far copy or its file data put in place with UFFDIO_COPY, the page's
 * state changed, the stack signal queued around it; and stopping a fault that never ends. */
#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>

#include "fltrace/fmt.h"
#include "far.h"
#include "fault.h"
#include "uffd.h"
#include "region.h"
#include "filemap.h"
#include "evict.h"
#include "prefetch.h"
#include "threads.h"
#include "handler.h"

static struct {
	char *zero_page;
	char *file_page; /* a page read from a file on its way in (served under rt.lock: one is enough) */
} sv;

int serve_init(void)
{
	if (!sv.zero_page)
		sv.zero_page = rt_map(rt.page_size);
	if (!sv.file_page)
		sv.file_page = rt_map(rt.page_size);
	return sv.zero_page && sv.file_page ? 0 : -ENOMEM;
}

/* ---- wakes after rt.lock ----
 * A handler thread never wakes a program thread while it holds rt.lock: the woken thread would
 * preempt it on their CPU (a per-CPU poller runs at SCHED_IDLE, pollers.c) and keep the lock from
 * every other thread until that CPU idles. What serving wakes (the page's range, the stack signal,
 * the signalled thread's wait for its page) is queued in order and done by serve_wakes_flush once
 * the lock is released. One ordering must survive: a thread sent the stack signal after its page
 * went in must take the signal before anything wakes it from its fault, or it runs on past its
 * faulting instruction. So while that signal is owed (queued, not yet sent), the page is named in
 * the handler's `owed`; another handler about to wake the same page leaves that wake to it. */
enum wake_kind { WAKE_RANGE, WAKE_SIGNAL, WAKE_SERVED };
struct wake {
	enum wake_kind kind;
	bool ok;           /* WAKE_SERVED: the page went in */
	int fd, tid;
	uintptr_t addr;
	struct rt_thread *t;
};
#define WAKES_MAX 8
#define OWED_WAKE 1ull /* in `owed`: another handler's wake of the page was left to this one */
struct wakes {
	_Atomic uint64_t owed; /* page | OWED_WAKE, 0 if no signal is owed */
	unsigned n;
	struct wake w[WAKES_MAX];
};
#define WAKERS_MAX 256
static struct wakes *_Atomic wakers[WAKERS_MAX];
static _Atomic unsigned nwakers;
/* A pointer, not the list: static TLS is paid by every thread of the program. */
static __thread struct wakes *tls_wakes;

int serve_thread_init(void)
{
	if (tls_wakes)
		return 0;
	unsigned i = atomic_fetch_add(&nwakers, 1);
	struct wakes *w = i < WAKERS_MAX ? rt_map(sizeof(*w)) : NULL;
	if (!w)
		return -ENOMEM;
	atomic_store(&wakers[i], w);
	tls_wakes = w;
	return 0;
}

static void wake_queue(struct wake w)
{
	struct wakes *l = tls_wakes;
	RT_BUG_ON(!l || l->n >= WAKES_MAX);
	l->w[l->n++] = w;
}

/* Whether another handler owes the stack signal to a thread asleep on this page: the wake is then
 * left to it, done right after its signal. */
static bool wake_left_to_owner(uintptr_t addr)
{
	unsigned n = atomic_load(&nwakers);
	for (unsigned i = 0; i < n && i < WAKERS_MAX; i++) {
		struct wakes *o = atomic_load(&wakers[i]);
		if (!o || o == tls_wakes)
			continue;
		uint64_t m = atomic_load(&o->owed);
		while ((m & ~OWED_WAKE) == addr)
			if (atomic_compare_exchange_weak(&o->owed, &m, m | OWED_WAKE))
				return true;
	}
	return false;
}

/* A fault claimed for the late order owes its thread the stack signal from the claim on: woken by
 * another handler before the signal, the thread would retry and, with the page in by then, run past
 * its fault. Such wakes are left to this handler (serve_owe_none, or after the signal). */
void serve_owe_signal(uintptr_t addr)
{
	if (tls_wakes)
		atomic_store(&tls_wakes->owed, addr);
}

/* The claim ends without a signal: the wakes left to this handler meanwhile are done now (after
 * rt.lock). */
void serve_owe_none(int fd)
{
	uint64_t m = tls_wakes ? atomic_exchange(&tls_wakes->owed, 0) : 0;
	if (m & OWED_WAKE)
		uffd_wake(fd, m & ~OWED_WAKE, rt.page_size);
}

void serve_wake_page(int fd, uintptr_t addr)
{
	if (wake_left_to_owner(addr))
		return;
	handler_letting_go(); /* called last, after rt.lock: the thread woken may preempt us */
	uffd_wake(fd, addr, rt.page_size);
}

/* Wakes whatever sleeps on the page: at once outside a handler thread, else after rt.lock. */
static void wake_range(int fd, uintptr_t addr)
{
	if (tls_wakes)
		wake_queue((struct wake){ .kind = WAKE_RANGE, .fd = fd, .addr = addr });
	else
		uffd_wake(fd, addr, rt.page_size);
}

static __attribute__((noreturn)) void handler_die_maxmem(void)
{
	char why[160], todo[160];
	struct fmt f;
	uint64_t mb = rt.cfg.maxmem >> 20;
	fmt_init(&f, why, sizeof(why));
	fmt_str(&f, "the program needs more than ");
	/* -M below a megabyte (-M 64K) is told in KB: "more than 0 MB" said nothing. */
	fmt_u64(&f, mb ? mb : rt.cfg.maxmem >> 10);
	fmt_str(&f, mb ? " MB of local + far memory" : " KB of local + far memory");
	fmt_init(&f, todo, sizeof(todo));
	fmt_str(&f, "run again with a larger -M, e.g. -M ");
	fmt_u64(&f, mb * 2 > 16 ? mb * 2 : 16);
	rt_die("-M exhausted", why, todo);
}

static __attribute__((noreturn)) void handler_die_file(uintptr_t addr, int err)
{
	char why[160];
	struct fmt f;
	fmt_init(&f, why, sizeof(why));
	fmt_str(&f, "cannot read the file behind a mapped page (");
	fmt_str(&f, strerror(-err));
	fmt_str(&f, ")");
	(void)addr;
	rt_die("file mapping", why, "check the file is still readable (the kernel would raise SIGBUS here)");
}

/* A fault that does not end: reported again and again on a page fltrace has in place (or no longer
 * tracks), or on a page fltrace fails to put in place each time. The program would spin in it
 * forever, so it is stopped with a message naming the page's state and its last changes, and the
 * stats count it (faults_stuck). Another thread's fault on the same page is served as a duplicate
 * a few times at most; any page served resets the count. */
#define STUCK_REPEATS 100000
static __thread uintptr_t tls_stuck_addr;
static __thread uint64_t tls_stuck_count;

static void handler_served(void)
{
	tls_stuck_count = 0;
}

enum stuck_why { STUCK_IN_PLACE, STUCK_UNTRACKED, STUCK_FAILING };

static void handler_check_stuck(uintptr_t addr, const uint32_t *pg, enum stuck_why why)
{
	if (addr != tls_stuck_addr) {
		tls_stuck_addr = addr;
		tls_stuck_count = 0;
	}
	if (++tls_stuck_count < STUCK_REPEATS)
		return;
	atomic_fetch_add(&pagestate_counts.stuck, 1);
	char msg[1024];
	struct fmt f;
	fmt_init(&f, msg, sizeof(msg));
	fmt_str(&f, why == STUCK_FAILING ? "fltrace failed 100000 times to put the page at 0x" :
					   "the kernel reported the fault at 0x");
	fmt_hex(&f, addr);
	fmt_str(&f, why == STUCK_IN_PLACE ? " 100000 times though fltrace has its page in place (emptied "
					    "behind its back: a raw madvise or munmap system call?)" :
		    why == STUCK_UNTRACKED ? " 100000 times though fltrace no longer tracks that address" :
					     " back in place");
	if (why != STUCK_UNTRACKED) { /* what the kernel says of it: evidence for a bug report */
		unsigned char vec = 0;
		bool mapped = syscall(SYS_mincore, addr, rt.page_size, &vec) == 0 && (vec & 1);
		fmt_str(&f, mapped ? "; the kernel has it mapped" : "; the kernel has it unmapped");
	}
	fmt_str(&f, "; page ");
	size_t n = fmt_len(&f);
	pagestate_describe(addr, pg, msg + n, sizeof(msg) - n);
	rt_die("handler", msg, why == STUCK_IN_PLACE ?
	       "make such calls through libc, or report this as a bug of fltrace with the command that "
	       "was traced" : "report this as a bug of fltrace with the command that was traced");
}

/* Probation (clock, sfifo): the page is still local memory; it comes back without a recorded fault
 * (a real far-memory system would have found it resident), which marks it as in use. Returns
 * false if the page is not on probation. */
bool fault_serve_soft(uintptr_t addr, int fd)
{
	uint32_t *pg = region_page(addr);
	if (!pg || pg_state(*pg) != PAGE_INACTIVE || prefetch_staged(*pg))
		return false; /* a staged page's first touch is a fault of its own: a hit, with its stack */
	uint32_t slot = pg_slot(*pg);
	/* The thread that holds rt.lock across a fork runs on once woken, to the fork itself: it is
	 * woken after the bookkeeping, which the child inherits. */
	bool wake_last = rt_lock_borrowed();
	/* Counted before the copy wakes the thread, which may then exit before the count (the
	 * last stats line would miss it); taken back if the page did not go in. */
	atomic_fetch_add(&rt.stats.faults_soft, 1);
	int err = uffd_copy(fd, addr, farmem_addr(slot), rt.page_size, !wake_last && !tls_wakes);
	if (err < 0 && err != -EEXIST) {
		atomic_fetch_sub(&rt.stats.faults_soft, 1);
		/* Not in place (EAGAIN: an mremap's event is pending on the fd): the page stays on
		 * probation with its far copy, and the thread, woken, faults again. */
		pagestate_note_failure(addr, pg, PS_SOFT, err);
		wake_range(fd, addr);
		handler_check_stuck(addr, pg, STUCK_FAILING);
		return true;
	}
	/* UFFDIO_COPY wakes the range only when it copied: a page found in place (EEXIST) leaves
	 * the thread asleep unless woken here. */
	bool woken = err == 0 && !wake_last && !tls_wakes;
	farmem_free(slot);
	pagestate_set(addr, pg, PAGE_PRESENT, 0, PS_SOFT);
	evict_note_touched(addr, pg);
	if (!woken)
		wake_range(fd, addr);
	handler_served();
	return true;
}

/* Puts the page's content in place through `fd`: zeros, its far copy, its file data, or the copy a
 * prefetcher staged. The page is missing (EMPTY, EVICTED or staged). Returns 0, -EEXIST (it was
 * there already) or another -errno. */
int fault_bring_in(int fd, uintptr_t addr, uint32_t *pg, bool wake, uint8_t *kind, uint32_t *region)
{
	bool staged = prefetch_staged(*pg);
	bool evicted = pg_state(*pg) == PAGE_EVICTED;
	bool from_file = !evicted && !staged && (*pg & PG_FILE);
	uint32_t slot = pg_slot(*pg);
	const void *src = staged ? farmem_addr(slot) : evicted ? far_page_source(slot) : sv.zero_page;
	*kind = staged ? FT_KIND_PREFETCH : evicted ? FT_KIND_REFETCH : FT_KIND_ZERO;
	if (from_file) {
		/* Never written (or dropped clean): the file holds the page. */
		const struct region *r = region_of(addr);
		int err = filemap_read_page(r->file, r->file_off + (addr - r->start), sv.file_page);
		if (err < 0)
			handler_die_file(addr, err);
		src = sv.file_page;
		*kind = FT_KIND_FILE;
		*region = r->id;
	}
	uint64_t t0 = rt_mono_ns();
	int err = uffd_copy(fd, addr, src, rt.page_size, wake);
	rt_time_add(&rt.stats.time.copyin, t0);
	enum ps_why why = staged ? PS_PREFETCH_HIT : evicted ? PS_REFETCH : from_file ? PS_FILL_FILE : PS_FILL_ZERO;
	if (err < 0 && err != -EEXIST) {
		/* ENOENT/ESRCH: the mapping or the process went away meanwhile. Nothing changed: the
		 * page keeps its far copy, and its next fault tries again. */
		pagestate_note_failure(addr, pg, why, err);
		return err;
	}
	if (staged)
		prefetch_hit(slot);
	if (evicted || staged)
		farmem_free(slot);
	pagestate_set(addr, pg, PAGE_PRESENT, 0, why);
	/* Clean until it could be written: a page of a writable mapping may change without a fault. */
	*pg &= ~PG_CLEAN;
	if (from_file && !(*pg & PG_WRITABLE))
		*pg |= PG_CLEAN;
	evict_note_present(addr, pg);
	return err;
}

/* Marks the request of a thread asleep in its fault as waiting for its stack signal. */
static void signal_arm(struct rt_thread *t, int served)
{
	t->posted_mono_ns = rt_mono_ns();
	t->woken = false;
	atomic_store_explicit(&t->signal_cpu, handler_poller_cpu(), memory_order_relaxed);
	atomic_store(&t->served, served);
	atomic_store(&t->state, REQ_PENDING);
}

static bool signal_send(int tid)
{
	uint64_t t0 = rt_mono_ns();
	bool sent = syscall(SYS_tgkill, rt.pid, tid, rt.sig) == 0;
	rt_time_add(&rt.stats.time.signal, t0);
	return sent;
}

/* Sends the stack signal before the thread's page is served (signal_early_post: before rt.lock).
 * Whatever else wakes the thread meanwhile (a signal of the program's own), it cannot run past the
 * faulting instruction without taking the signal first. */
bool signal_early_post(struct rt_thread *t, int tid)
{
	signal_arm(t, 0);
	if (signal_send(tid))
		return true;
	atomic_store(&t->state, REQ_IDLE);
	return false;
}

/* The owed signal could not be sent (the thread is gone, or its queue of real-time signals is
 * full): its fault is recorded without a stack, and it is woken. */
static void signal_failed(struct rt_thread *t, int tid)
{
	int expected = REQ_PENDING;
	if (!atomic_compare_exchange_strong(&t->state, &expected, REQ_CANCELLED))
		return;
	count_fault(t->flags, t->kind);
	record_without_stack(t, t, tid, NULL, NULL, 0, NOSTACK_GONE);
	atomic_store(&t->state, REQ_IDLE);
	serve_wake_page(t->uffd, t->addr);
}

/* The stack signal of a thread whose page is in place: owed until serve_wakes_flush sends it
 * (measured 1.2-1.7x cheaper than the early order on a busy machine: the thread wakes once). */
static void signal_late_post(struct rt_thread *t, int tid, uintptr_t addr)
{
	signal_arm(t, 1);
	if (!tls_wakes) {
		if (!signal_send(tid))
			signal_failed(t, tid);
		return;
	}
	if ((atomic_load(&tls_wakes->owed) & ~OWED_WAKE) != addr) /* keep the wakes left since the claim */
		atomic_store(&tls_wakes->owed, addr);
	wake_queue((struct wake){ .kind = WAKE_SIGNAL, .fd = t->uffd, .tid = tid, .addr = addr, .t = t });
}

/* Tells the signalled thread, waiting in its stack handler, that its page is in place (or could not
 * be placed: then it records nothing and faults again). A request the thread has not taken yet is
 * closed instead, before anything else: told first, the thread could take the signal, close the
 * request itself, fault again and be given a new request, which this handler, preempted in
 * between, then closed as well. That fault's signal found nothing to record, and its page went in
 * without a trace (a signal storm under load: 1 to 4 faults of 20,000). */
static void signal_served_now(struct rt_thread *t, bool ok)
{
	int expected = REQ_PENDING;
	if (!ok && atomic_compare_exchange_strong(&t->state, &expected, REQ_IDLE))
		return; /* it will find no request when it takes the signal, and fault again */
	atomic_store(&t->served, ok ? 1 : 2);
	if (atomic_load(&t->served_waiter))
		syscall(SYS_futex, (int *)&t->served, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void signal_early_cancel(struct rt_thread *t)
{
	signal_served_now(t, false);
}

static void signal_served(struct rt_thread *t, bool ok)
{
	if (tls_wakes)
		wake_queue((struct wake){ .kind = WAKE_SERVED, .ok = ok, .t = t });
	else
		signal_served_now(t, ok);
}

void serve_wakes_flush(void)
{
	struct wakes *l = tls_wakes;
	if (!l)
		return;
	for (unsigned i = 0; i < l->n; i++) {
		struct wake *w = &l->w[i];
		if (i + 1 == l->n)
			handler_letting_go();
		switch (w->kind) {
		case WAKE_RANGE:
			serve_wake_page(w->fd, w->addr);
			break;
		case WAKE_SIGNAL:
			if (!signal_send(w->tid))
				signal_failed(w->t, w->tid);
			if (atomic_exchange(&l->owed, 0) & OWED_WAKE)
				uffd_wake(w->fd, w->addr, rt.page_size);
			break;
		case WAKE_SERVED:
			signal_served_now(w->t, w->ok);
			break;
		}
	}
	l->n = 0;
}

/* Brings the page in; returns false if there was nothing to serve (already present, or no longer
 * ours). A served thread is left asleep: the caller wakes it once the fault is noted. `signal`: the
 * thread's stack signal, NONE, EARLY (sent before: it waits in its handler for signal_served) or
 * LATE (sent once the page is in place; false back in *late if it was not). */
bool fault_serve(struct rt_thread *t, uintptr_t addr, int tid, enum serve_signal signal, bool *late)
{
	*late = false;
	int fd = t->uffd;
	/* Nothing to serve: a thread already signalled records nothing and faults again (or not). */
	if (fault_serve_soft(addr, fd)) {
		if (signal == SERVE_SIGNAL_EARLY)
			signal_served(t, false);
		return false;
	}
	uint32_t *pg = region_page(addr);
	if (!pg || pg_state(*pg) == PAGE_PRESENT) {
		if (signal == SERVE_SIGNAL_EARLY)
			signal_served(t, false);
		atomic_fetch_add(&rt.stats.faults_dup, 1);
		wake_range(fd, addr);
		handler_check_stuck(addr, pg, pg ? STUCK_IN_PLACE : STUCK_UNTRACKED);
		return false;
	}
	/* A long stretch under rt.lock (an eviction round, a read from a far medium): a poller at
	 * SCHED_IDLE holds its CPU meanwhile (pollers.c), or a program thread waking there would
	 * keep the lock from everyone until that CPU idled. */
	/* A staged page is local memory already: it needs no room. */
	unsigned need = prefetch_staged(*pg) ? 0 : 1;
	if (!evict_has_room(need) || (pg_state(*pg) == PAGE_EVICTED && !far_is_local()) || (prefetch_on() && pg_state(*pg) != PAGE_EMPTY))
		handler_hold_cpu();
	uint64_t t0 = rt_mono_ns();
	/* Under a fork's hold nothing is evicted (rt_fork_prepare made room before). */
	int room = rt_lock_borrowed() ? 0 : evict_make_room(need);
	rt_time_add(&rt.stats.time.evict, t0);
	if (room == -ENOSPC)
		handler_die_maxmem();
	int err = fault_bring_in(fd, addr, pg, false, &t->kind, &t->region);
	if (t->kind == FT_KIND_ZERO)
		t->flags |= FT_FLAG_ZERO;
	if (signal == SERVE_SIGNAL_EARLY)
		signal_served(t, err >= 0);
	if (err < 0) {
		wake_range(fd, addr);
		handler_check_stuck(addr, pg, STUCK_FAILING);
		return false;
	}
	/* The prefetcher sees every access that reached far memory or was hidden from it, and what it
	 * names is staged before the thread is woken (serve_wakes_flush): a run does not depend on
	 * whether the program or its handler ran first. */
	if (prefetch_on() && (t->kind == FT_KIND_REFETCH || t->kind == FT_KIND_PREFETCH) && !rt_lock_borrowed())
		prefetch_after(addr, tid, t->kind == FT_KIND_PREFETCH);
	if (signal == SERVE_SIGNAL_LATE) {
		signal_late_post(t, tid, addr);
		*late = true;
	}
	handler_served();
	return true;
}
