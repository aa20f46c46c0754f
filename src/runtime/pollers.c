/* The handler threads: how many, where they run and how they wait for faults (--poll), the
 * per-CPU pollers and their routing, the backstop that serves when no poller can, and the watchdog.
 *
 * --poll percpu (the default): a poller per CPU the process may use, pinned there. While faults
 * come it polls the userfaultfd at SCHED_IDLE, which runs a thread only when nothing else wants its
 * CPU: exactly when a program thread there has just gone to sleep in a fault. The poller is on the
 * CPU already, and the thread it serves wakes there again; between vCPUs a wake-up costs tens of µs
 * or more here, on one a few (kernel-facts). A fault read by the poller of another CPU is routed to
 * the poller of the CPU its thread last faulted on (rt_thread.cpu: where it took its last stack
 * signal, or what its rseq area said at its last fault read by a handler), through a table of
 * slots per poller; any poller takes a routed fault left STEAL_NS (that CPU is busy). Only pollers
 * on watch (their CPU's threads fault, and have not moved away) poll; after FLTRACE_SPIN_US
 * (100 µs) without a fault they sleep in poll(), the others nap until a fault is routed to them
 * (poller_on_watch), at normal priority: a runnable SCHED_IDLE thread may wait seconds for a busy
 * CPU, and its process cannot exit or exec until it has (poller_policy). The backstop (-C normal
 * threads) ticks every 1-8 ms (backstop_next_tick) until the pollers have all slept
 * BACKSTOP_IDLE_NS: it serves while faults wait and no poller takes them (every CPU busy), and
 * gives SCHED_OTHER to a poller stuck in the middle of a fault or starved while awake
 * (pollers_boost_stuck). Nothing that wakes a faulting thread is done under rt.lock (serve.c), and
 * a poller holds its CPU at SCHED_OTHER for long stretches under it (handler_hold_cpu).
 * --poll adaptive|block|spin: -C handler threads, each reading every fault (the earlier designs). */
#include <errno.h>
#include <linux/futex.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fltrace/fmt.h"
#include "fault.h"
#include "threads.h"
#include "handler.h"
#include "region.h"

#define MSG_BATCH 64
#define POLLERS_MAX 256
#define ROUTE_SLOTS 32
#define STEAL_NS (20 * 1000ull)
#define BACKSTOP_TICK_NS (1000 * 1000ull)
#define STALL_BOOST_NS (200 * 1000ull)
#define WATCH_NS (20 * 1000 * 1000ull) /* poller_on_watch */
#define LEFT_NS (100 * 1000ull)         /* poller_watch_left */

/* Why the backstop gave a poller SCHED_OTHER (pollers_boost_stuck). */
enum boost { BOOST_NONE, BOOST_STUCK, BOOST_STARVED };

/* A fault routed to a poller: stamp 0 free, 1 being written or taken, else when it was routed. */
struct route_slot {
	_Atomic uint64_t stamp;
	struct uffd_msg m;
	int fd;
};

struct poller {
	unsigned cpu;
	_Atomic int tid;
	pthread_t thread;
	struct handler_ctx *ctx;
	_Atomic uint64_t busy_since; /* serving since (0: looking for work): the backstop's view */
	_Atomic int boosted;         /* given SCHED_OTHER by the backstop: enum boost */
	bool idle_policy;            /* at SCHED_IDLE now (only while it polls: poller_policy) */
	_Atomic uint64_t turned_at;  /* its loop's last turn: the backstop tells a starved poller by it */
	_Atomic bool asleep;         /* in poll() */
	_Atomic unsigned queued;     /* slots holding a routed fault */
	_Atomic uint32_t napping;    /* asleep on this word (a futex), not on the userfaultfd: off watch */
	_Atomic uint64_t watch_until; /* on watch until then: it served a fault of its own CPU's thread */
	struct route_slot slots[ROUTE_SLOTS];
};

static struct {
	/* --poll adaptive|block|spin: the handlers; percpu: the backstops */
	pthread_t threads[RT_MAX_HANDLERS];
	unsigned n;
	_Atomic int tids[RT_MAX_HANDLERS];
	struct poller *pollers; /* percpu: npollers of them, rt_map'd */
	unsigned npollers;
	struct poller *of_cpu[CPULIST_MAX];
	_Atomic uint64_t polled;   /* faults pollers took in hand: the backstop's sign of their life */
	_Atomic uint64_t last_msg; /* when a poller last read a message (rt_mono_ns) */
	_Atomic unsigned home_cpu; /* the CPU of the poller that last served a fault of its own CPU */
	_Atomic bool exiting;      /* the process is exiting: no poller goes back to SCHED_IDLE */
	_Atomic uint64_t progress; /* messages handled by anyone: the watchdog's sign of life */
	_Atomic uint32_t started;  /* threads that got past glibc's thread start-up */
	uint64_t watched_progress;
	unsigned stalled_seconds;  /* seconds without progress in which nothing could make any */
	uint64_t stalled_cpu_ticks; /* CPU the handlers used since the last progress */
	uint64_t last_cpu[RT_MAX_HANDLERS + POLLERS_MAX];
	bool stalling;
} hd;

/* ---- threads: pinning, policy, start ---- */

static int pollers_set_policy(int tid, int policy)
{
	struct sched_param p = { 0 };
	return syscall(SYS_sched_setscheduler, tid, policy, &p) == 0 ? 0 : -errno;
}

/* A poller runs at SCHED_IDLE only while it polls for faults and serves what it read: then it takes
 * no CPU a program thread wants. Asleep, boosted or exiting it is SCHED_OTHER: a SCHED_IDLE thread
 * left runnable on a busy CPU may wait seconds for it, and a process cannot exit or exec until each
 * of its threads has run to its end (measured: 7-8 s to exit for a process with two SCHED_IDLE
 * threads polling while both CPUs ran busy loops, 0.2-0.3 s with them asleep or at SCHED_OTHER). A
 * boost or the exit may come between the check and the call: the second look undoes the call. */
static void poller_policy(struct poller *p, bool idle)
{
	if (p->idle_policy != idle && pollers_set_policy(0, idle ? SCHED_IDLE : SCHED_OTHER) == 0)
		p->idle_policy = idle;
	if (p->idle_policy && (atomic_load(&p->boosted) != BOOST_NONE || atomic_load(&hd.exiting)) &&
	    pollers_set_policy(0, SCHED_OTHER) == 0)
		p->idle_policy = false;
}

/* The poller this thread is, NULL on any other thread. */
static __thread struct poller *tls_poller;

void handler_hold_cpu(void)
{
	struct poller *p = tls_poller;
	if (p && p->idle_policy)
		poller_policy(p, false);
}

int handler_poller_cpu(void)
{
	return tls_poller ? (int)tls_poller->cpu : -1;
}

/* Messages of the batch being served, after the one in hand: a poller holding them is not done. */
static __thread unsigned tls_batch_left;

/* The thread a poller wakes last preempts it at once (its CPU, a SCHED_IDLE poller): and since the
 * poller holds nothing more, that is no stall for the backstop to boost (it did, and boosts then
 * cost the poller its CPU's faults for ms). A poller at SCHED_OTHER (it held its CPU, or woke from
 * its sleep) goes back to SCHED_IDLE first: the kernel places a waking thread on its last CPU only
 * if that CPU runs nothing but SCHED_IDLE threads, and otherwise on an idle one, so the thread
 * moved to the other vCPU after nearly every fault that evicted, and its next fault then woke a
 * poller across vCPUs (35,000 cross-vCPU wake-ups a second in GAPBS bfs serial at -L 140).
 * Alternating, 3 runs each: bfs -L 140 11.06-11.84 s, 9.17-9.55 with this; python -L 170
 * 8.63-8.81, 5.99-6.44; fillscan at a quarter 4.45-4.67, 3.05-3.33; the same with an ample -L,
 * where nothing is held. */
void handler_letting_go(void)
{
	struct poller *p = tls_poller;
	/* With faults of its batch still to serve it holds them: preempted, it is stuck (boosted). */
	if (!p || tls_batch_left)
		return;
	atomic_store_explicit(&p->busy_since, 0, memory_order_relaxed);
	if (!p->idle_policy && atomic_load_explicit(&p->boosted, memory_order_relaxed) == BOOST_NONE)
		poller_policy(p, true);
}

static void pollers_pin(unsigned cpu)
{
	/* A cpulist is the kernel's affinity mask: no CPU_ALLOC, whose malloc would be the heap. */
	struct cpulist one = { 0 };
	one.bits[cpu / 64] = 1ull << (cpu % 64);
	syscall(SYS_sched_setaffinity, 0, sizeof(one.bits), one.bits);
}


/* The message batches every handler thread reads: the program's memory, and with --files=all the
 * loader's mappings taken over (whose REMAP events are only read: reading one lets the mremap
 * that raised it return). Returns messages read (each handled by `take`), -1 on a dead fd. */
static struct pollfd pollers_fds[2];
static nfds_t pollers_nfds;

static void pollers_fds_init(void)
{
	pollers_fds[0] = (struct pollfd){ .fd = rt.uffd, .events = POLLIN };
	pollers_fds[1] = (struct pollfd){ .fd = rt.loader_uffd, .events = POLLIN };
	pollers_nfds = rt.loader_uffd >= 0 ? 2 : 1;
}

static ssize_t pollers_read(void (*take)(void *self, const struct uffd_msg *m, int fd), void *self)
{
	struct uffd_msg msgs[MSG_BATCH];
	ssize_t n = 0;
	bool failed = false;
	for (nfds_t k = 0; k < pollers_nfds; k++) {
		ssize_t got = rt_read(pollers_fds[k].fd, msgs, sizeof(msgs));
		/* Taken after the read: a message still unread when its page was unmapped was taken
		 * back by the kernel (its thread woken), so every region made after this was made
		 * after the faults read here. Before the read, a poller preempted in between took
		 * faults on a region just made for stale ones. */
		uint32_t gen = region_generation();
		if (got < 0 && errno != EAGAIN && errno != EINTR)
			failed = true;
		if (got <= 0)
			continue;
		got /= (ssize_t)sizeof(msgs[0]);
		n += got;
		/* Before they are routed: a poller woken by the same fault, finding it taken, sees at
		 * once that a fault may be on its way to it, and looks for it before sleeping. */
		atomic_store_explicit(&hd.last_msg, rt_mono_ns(), memory_order_relaxed);
		for (ssize_t i = 0; i < got; i++) {
			msgs[i].reserved3 = gen; /* unused by the kernel: the message carries it along */
			tls_batch_left = (unsigned)(got - i - 1);
			take(self, &msgs[i], pollers_fds[k].fd);
			/* Each message, not each batch: a batch of 64 slow faults on a busy machine is
			 * progress the watchdog must see. */
			atomic_fetch_add_explicit(&hd.progress, 1, memory_order_relaxed);
		}
	}
	return n == 0 && failed ? -1 : n;
}

/* poll()'s answer: descriptors ready, 0 at the time-out or on a signal, -1 on an error. */
static int pollers_block(int timeout_ms)
{
	uint64_t t0 = rt_mono_ns();
	atomic_fetch_add_explicit(&rt.stats.time.wakeups, 1, memory_order_relaxed);
	int polled = poll(pollers_fds, pollers_nfds, timeout_ms);
	rt_time_add(&rt.stats.time.idle, t0);
	return polled < 0 && errno == EINTR ? 0 : polled;
}

/* ---- routing ---- */

static void poller_wake_from_nap(struct poller *p)
{
	if (atomic_exchange(&p->napping, 0))
		syscall(SYS_futex, (uint32_t *)&p->napping, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static bool route_put(struct poller *to, const struct uffd_msg *m, int fd)
{
	for (unsigned i = 0; i < ROUTE_SLOTS; i++) {
		struct route_slot *s = &to->slots[i];
		uint64_t free_ = 0;
		if (!atomic_compare_exchange_strong(&s->stamp, &free_, 1))
			continue;
		s->m = *m;
		s->fd = fd;
		atomic_fetch_add(&to->queued, 1);
		atomic_store_explicit(&s->stamp, rt_mono_ns(), memory_order_release);
		poller_wake_from_nap(to);
		return true;
	}
	return false; /* full: served where it was read */
}

/* A fault routed to `from` before `before` (rt_mono_ns; UINT64_MAX: any), taken out. */
static bool route_take(struct poller *from, uint64_t before, struct uffd_msg *m, int *fd)
{
	if (!atomic_load_explicit(&from->queued, memory_order_relaxed))
		return false;
	for (unsigned i = 0; i < ROUTE_SLOTS; i++) {
		struct route_slot *s = &from->slots[i];
		uint64_t stamp = atomic_load_explicit(&s->stamp, memory_order_acquire);
		if (stamp <= 1 || stamp >= before || !atomic_compare_exchange_strong(&s->stamp, &stamp, 1))
			continue;
		*m = s->m;
		*fd = s->fd;
		atomic_fetch_sub(&from->queued, 1);
		atomic_store_explicit(&s->stamp, 0, memory_order_release);
		return true;
	}
	return false;
}

/* A routed fault another poller has not taken for STEAL_NS: its CPU is busy with another thread. */
static bool route_steal(struct poller *me, uint64_t now, struct uffd_msg *m, int *fd)
{
	for (unsigned i = 0; i < hd.npollers; i++)
		if (&hd.pollers[i] != me && route_take(&hd.pollers[i], now - STEAL_NS, m, fd)) {
			atomic_fetch_add_explicit(&rt.stats.faults_stolen, 1, memory_order_relaxed);
			return true;
		}
	return false;
}

static bool route_any_queued(void)
{
	for (unsigned i = 0; i < hd.npollers; i++)
		if (atomic_load_explicit(&hd.pollers[i].queued, memory_order_relaxed))
			return true;
	return false;
}

/* The poller of the CPU the fault's thread most likely sleeps on, NULL if unknown or none. */
static struct poller *route_target(const struct uffd_msg *m)
{
	if (m->event != UFFD_EVENT_PAGEFAULT)
		return NULL;
	struct rt_thread *t = threads_find((int)m->arg.pagefault.feat.ptid);
	int cpu = t ? atomic_load_explicit(&t->cpu, memory_order_relaxed) : -1;
	return cpu >= 0 && cpu < CPULIST_MAX ? hd.of_cpu[cpu] : NULL;
}

/* ---- the per-CPU pollers ---- */

static void poller_serve(struct poller *p, const struct uffd_msg *m, int fd, bool local)
{
	uint64_t now = rt_mono_ns();
	atomic_store_explicit(&p->busy_since, now, memory_order_relaxed);
	if (local) {
		atomic_store_explicit(&p->watch_until, now + WATCH_NS, memory_order_relaxed);
		atomic_store_explicit(&hd.home_cpu, p->cpu, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&hd.polled, 1, memory_order_relaxed);
	handler_message(p->ctx, m, fd);
	atomic_store_explicit(&p->busy_since, 0, memory_order_relaxed);
}

/* A poller that routes a fault away and has served none of its own CPU's for LEFT_NS leaves watch:
 * the thread it watched has moved (the scheduler balances a lone thread between vCPUs every few
 * tens of ms). Watching on for WATCH_NS, it read that thread's faults first, routed each back, and
 * asleep in poll() was woken across vCPUs by each. GAPBS bfs serial, alternating, 3 runs each: -L
 * 140 8.50-8.70 s, 8.35-8.54 with this; -L 1000 (faults routed 16,400 -> 2,700) 5.79-5.90,
 * 5.77-5.79; python -L 170, bfs on 2 threads and fillscan on 8 the same. LEFT_NS was 1 ms until
 * 2026-12-07; 100 µs (as long as a poller spins by default), alternating 3 runs each, medians: make
 * bench's bfs at -L 18 MB 3.29 -> 3.10 s (faults routed 12,800 -> 1,400, the spinning poller's CPU
 * no longer interrupted by evictions' TLB flushes), fillscan at a quarter 1.46 -> 1.41, on 8
 * threads 2.20 -> 2.12, GAPBS bfs serial -L 1000 5.60 -> 5.52, python -L 170 3.30 -> 3.24, the rest
 * the same. */
static void poller_watch_left(struct poller *p)
{
	uint64_t until = atomic_load_explicit(&p->watch_until, memory_order_relaxed);
	if (until && rt_mono_ns() + WATCH_NS - LEFT_NS > until)
		atomic_store_explicit(&p->watch_until, 0, memory_order_relaxed);
}

static void poller_take(void *self, const struct uffd_msg *m, int fd)
{
	struct poller *p = self;
	struct poller *to = route_target(m);
	if (to && to != p && route_put(to, m, fd)) {
		atomic_fetch_add_explicit(&rt.stats.faults_routed, 1, memory_order_relaxed);
		poller_watch_left(p);
		return;
	}
	poller_serve(p, m, fd, !to || to == p);
}

/* Boosted by the backstop (pollers_boost_stuck), it goes back to SCHED_IDLE when it next polls.
 * Nothing more: a poller that backed off (slept 1-64 ms when found stuck twice within 10 ms, as
 * a sign that its CPU is busy with other threads) left the faults of the thread on its CPU to
 * another vCPU's poller, and a preempted poller is found stuck often on a busy machine. GAPBS bfs
 * at -L 1000, one thread, same minutes on a loaded machine: 15.76 / 14.16 s with the backoff,
 * 14.62 / 14.89 without, and 4,060 faults stolen across vCPUs with it against 140-150 without;
 * fillscan at a quarter of its peak, quiet: 8.71 / 8.69 / 8.41 s with, 8.63 / 8.49 / 8.52
 * without. A fault routed to a busy CPU is stolen after STEAL_NS. */
static void poller_unboost(struct poller *p)
{
	if (atomic_load_explicit(&p->boosted, memory_order_relaxed) == BOOST_NONE)
		return;
	atomic_store(&p->boosted, BOOST_NONE);
	p->idle_policy = false;
}

static void pollers_sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Work for this poller now: its own routed faults, others' that waited too long, its follow-ups. */
static bool poller_work(struct poller *p, uint64_t now)
{
	struct uffd_msg m;
	int fd;
	if (route_take(p, UINT64_MAX, &m, &fd)) {
		poller_serve(p, &m, fd, true);
		return true;
	}
	if (route_steal(p, now, &m, &fd)) {
		poller_serve(p, &m, fd, false);
		return true;
	}
	if (!handler_ctx_waiting(p->ctx))
		return false;
	atomic_store_explicit(&p->busy_since, rt_mono_ns(), memory_order_relaxed); /* `now` may be old: preempted since */
	handler_tend(p->ctx);
	atomic_store_explicit(&p->busy_since, 0, memory_order_relaxed);
	return false;
}

/* On watch: a poller whose CPU's threads faulted in the last WATCH_NS, or whose poller served such a
 * fault last of all (home_cpu). Only those spin between faults and sleep on the userfaultfd, which
 * wakes every thread asleep on it at each fault; the others nap on a futex of their own, woken when
 * a fault is routed to them (route_put). A fault woke the other vCPU's poller, across vCPUs, though
 * no thread ran there. Alternating, 3 runs each: GAPBS bfs serial at -L 140 9.17-9.55 s, 8.62-9.06
 * with naps; at -L 1000 6.00-6.35, 5.88-6.00; python -L 170 and bfs on 2 threads the same; fillscan
 * at a quarter 3.04-3.31 s, 3.15-3.29 (6 runs each). Tried before the wake above kept threads on
 * their CPU, naps made fillscan 8% slower: its thread moved, and its faults waited for naps.
 * The home poller keeps at least one on watch: the last to serve sees itself home when it sleeps,
 * or another served later and sees the same. A thread that moves to a napping poller's CPU wakes
 * the home poller, which routes its fault there (or serves it, routed to no one yet): one fault
 * served across vCPUs, as each fault was before. */
static bool poller_on_watch(struct poller *p)
{
	return atomic_load_explicit(&hd.home_cpu, memory_order_relaxed) == p->cpu ||
	       rt_mono_ns() < atomic_load_explicit(&p->watch_until, memory_order_relaxed);
}

/* Asleep until a fault is routed here (or the backstop serves: pollers_wake_napping), or 200 ms. */
static void poller_nap(struct poller *p)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 200 * 1000 * 1000 };
	atomic_store(&p->napping, 1);
	if (!atomic_load(&p->queued) && !poller_on_watch(p))
		syscall(SYS_futex, (uint32_t *)&p->napping, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0);
	atomic_store(&p->napping, 0);
}

static void handler_thread_started(void)
{
	atomic_fetch_add(&hd.started, 1);
	rt_wake_waiters(&hd.started);
}

static void *poller_main(void *arg)
{
	struct poller *p = arg;
	handler_thread_enter();
	tls_poller = p;
	p->ctx = handler_ctx_new();
	atomic_store(&p->tid, rt_gettid());
	handler_thread_started();
	pollers_pin(p->cpu);
	for (;;) {
		uint64_t now = rt_mono_ns();
		atomic_store_explicit(&p->turned_at, now, memory_order_relaxed);
		poller_unboost(p);
		if (poller_work(p, now))
			continue;
		ssize_t n = pollers_read(poller_take, p);
		if (n < 0)
			break;
		if (n > 0)
			continue;
		/* Read now, not at the loop's top: another poller may have read a fault since (and may
		 * be routing it here); `now` - last_msg then wrapped, and this poller went to sleep. */
		uint64_t last = atomic_load_explicit(&hd.last_msg, memory_order_relaxed);
		bool watch = poller_on_watch(p);
		if (rt_mono_ns() - last < rt.cfg.spin_ns && watch) {
			poller_policy(p, true);
			__builtin_ia32_pause();
			continue;
		}
		poller_policy(p, false);
		/* Follow-ups (a signal not yet answered, waited for up to 50 ms) are checked each ms. */
		if (handler_ctx_waiting(p->ctx) || atomic_load_explicit(&p->queued, memory_order_relaxed)) {
			pollers_block(1);
			continue;
		}
		/* No fault for a while: sleep until the next (which wakes every poller on watch). */
		atomic_store(&p->asleep, true);
		if (!route_any_queued()) {
			if (watch)
				pollers_block(200);
			else
				poller_nap(p);
		}
		atomic_store(&p->asleep, false);
	}
	return NULL;
}

/* ---- the backstop ---- */

static bool pollers_all_asleep(void)
{
	for (unsigned i = 0; i < hd.npollers; i++)
		if (!atomic_load(&hd.pollers[i].asleep))
			return false;
	return !route_any_queued();
}

/* A poller stuck, given SCHED_OTHER until it is done (poller_unboost): one in the middle of a fault
 * for longer than STALL_BOOST_NS was preempted there by a program thread and, at SCHED_IDLE, would
 * wait for its CPU as long as that stays busy, with rt.lock or a thread's fault in its hands; one
 * awake that has not turned its loop for STARVED_NS is starved, and would keep its process from
 * exiting (a SCHED_IDLE thread runnable behind the program's own thread on its CPU is what the
 * design wants, and a boost every tick cost that thread its CPU each ms). One awake that has not
 * turned for SLOW_NS (a turn takes microseconds; its longest wait awake, for follow-ups, 1 ms) gets
 * no CPU: the backstop then ticks fast. */
#define STARVED_NS (50 * 1000 * 1000ull)
#define SLOW_NS (2 * 1000 * 1000ull)
static void pollers_boost(struct poller *p, enum boost why)
{
	atomic_store(&p->boosted, why);
	if (pollers_set_policy(atomic_load(&p->tid), SCHED_OTHER) == 0)
		atomic_fetch_add_explicit(why == BOOST_STUCK ? &rt.stats.pollers_boosted : &rt.stats.pollers_starved, 1,
					  memory_order_relaxed);
}

/* Returns whether a poller is boosted (now or still from before), stuck or getting no CPU: the
 * backstop then ticks fast. */
static bool pollers_boost_stuck(uint64_t now)
{
	bool any = false;
	for (unsigned i = 0; i < hd.npollers; i++) {
		struct poller *p = &hd.pollers[i];
		if (atomic_load(&p->boosted)) {
			any = true;
			continue;
		}
		/* Both may be later than `now`, read before: the poller took a fault, or turned, just now. */
		uint64_t since = atomic_load_explicit(&p->busy_since, memory_order_relaxed);
		uint64_t turned = atomic_load_explicit(&p->turned_at, memory_order_relaxed);
		uint64_t idle = !since && turned && !atomic_load(&p->asleep) && now > turned ? now - turned : 0;
		if (since && now > since && now - since >= STALL_BOOST_NS)
			pollers_boost(p, BOOST_STUCK);
		else if (idle >= STARVED_NS)
			pollers_boost(p, BOOST_STARVED);
		else if (idle < SLOW_NS)
			continue;
		any = true;
	}
	return any;
}

/* Before the process exits: its pollers at SCHED_OTHER, so that they run to their end at once. */
void handler_before_exit(void)
{
	atomic_store(&hd.exiting, true);
	for (unsigned i = 0; i < hd.npollers; i++)
		pollers_set_policy(atomic_load(&hd.pollers[i].tid), SCHED_OTHER);
}

static bool pollers_work_waiting(void)
{
	struct pollfd p[2];
	memcpy(p, pollers_fds, sizeof(p));
	return route_any_queued() || poll(p, pollers_nfds, 0) > 0;
}

static void backstop_take(void *self, const struct uffd_msg *m, int fd)
{
	atomic_fetch_add_explicit(&rt.stats.faults_backstop, 1, memory_order_relaxed);
	handler_message(self, m, fd);
}

/* Whether faults have waited BACKSTOP_GRACE_NS with no poller taking any: then the backstop reads.
 * Reading at once, it took faults a poller was a few µs from taking on the faulting thread's own
 * CPU, served them from the other vCPU, and so found one to serve in every tick and never stopped
 * (GAPBS bfs at -L 1000: a quarter of its faults went through the backstop, at 3x the cost). */
#define BACKSTOP_GRACE_NS (50 * 1000ull)
struct backstop_wait {
	uint64_t since;  /* work seen waiting since (0: none) */
	uint64_t polled; /* hd.polled then */
};

static bool backstop_due(struct backstop_wait *w, uint64_t now)
{
	uint64_t polled = atomic_load_explicit(&hd.polled, memory_order_relaxed);
	if (!pollers_work_waiting()) {
		w->since = 0;
		return false;
	}
	if (!w->since || polled != w->polled) {
		w->since = now;
		w->polled = polled;
	}
	return now - w->since >= BACKSTOP_GRACE_NS;
}

/* Faults wait and pollers take them slowly (their CPUs are busy with other threads, the pollers
 * get the scraps a SCHED_IDLE thread gets): faults found waiting are due after the grace (no
 * poller took any meanwhile). A fault that waits on a quiet machine is read within microseconds. */
static bool pollers_slow(void)
{
	struct backstop_wait wait = { 0 };
	backstop_due(&wait, rt_mono_ns());
	if (!wait.since)
		return false; /* nothing waits */
	pollers_sleep_ns(BACKSTOP_GRACE_NS);
	return backstop_due(&wait, rt_mono_ns());
}

/* Faults wait and no poller takes them: the pollers on watch may all be on busy CPUs while a
 * napping one has an idle CPU. Woken, it reads the next faults (and is on watch once it serves one
 * of its own CPU). */
static void pollers_wake_napping(void)
{
	for (unsigned i = 0; i < hd.npollers; i++)
		if (atomic_load_explicit(&hd.pollers[i].napping, memory_order_relaxed))
			poller_wake_from_nap(&hd.pollers[i]);
}

/* Faults waited a whole tick and no poller took one: every CPU is busy. The backstop serves, asleep
 * in between (in poll() on the userfaultfd, or for the grace of a fault waiting), until a tick in
 * which it found no fault to serve: the pollers took them all again, or none came. It takes only faults that waited BACKSTOP_GRACE_NS untaken
 * (backstop_due): pollers keep reading meanwhile, and the first to see a fault serves it. */
static void backstop_serve(struct handler_ctx *ctx)
{
	uint64_t check_at = rt_mono_ns() + BACKSTOP_TICK_NS;
	bool served_in_tick = true;
	struct backstop_wait wait = { 0 };
	for (;;) {
		struct uffd_msg m;
		int fd;
		bool got = false;
		ssize_t n = 0;
		if (backstop_due(&wait, rt_mono_ns())) {
			pollers_wake_napping();
			for (unsigned i = 0; i < hd.npollers; i++)
				while (route_take(&hd.pollers[i], UINT64_MAX, &m, &fd)) {
					backstop_take(ctx, &m, fd);
					got = true;
				}
			n = pollers_read(backstop_take, ctx);
		}
		handler_tend(ctx);
		uint64_t now = rt_mono_ns();
		if (n > 0 || got)
			served_in_tick = true;
		if (now >= check_at) {
			pollers_boost_stuck(now);
			if (!served_in_tick)
				return;
			served_in_tick = false;
			check_at = now + BACKSTOP_TICK_NS;
		}
		if (n > 0 || got)
			continue;
		/* Never spin: the backstop runs at normal priority, and serves when every CPU is busy
		 * with the program's threads, from whom each spin takes the CPU (GAPBS bfs on one
		 * vCPU: a spinning backstop took 13% of the CPU, and served a fault a poller would
		 * have). A fault waiting is served no sooner than its grace anyway. */
		if (wait.since)
			pollers_sleep_ns(BACKSTOP_GRACE_NS);
		else
			pollers_block(1);
	}
}

/* The backstop (-C of them, normal priority): while pollers poll, it looks at every tick (1-8 ms)
 * for faults that waited a whole tick without a poller taking any (then it serves), and for a
 * poller stuck in the middle of a fault (then it boosts it). Once every poller has slept for
 * BACKSTOP_IDLE_NS (the program stopped faulting) it sleeps with them in poll(), woken by the same
 * fault. Not sooner: a thread woken by every fault would cost more (measured, a backstop asleep in
 * poll() beside the pollers made a first touch 2-3x dearer: it is woken on another vCPU, and now
 * and then takes the fault there), and a poller woken from poll() needs no backstop: it runs at
 * normal priority until it has read. Between bursts of faults (GAPBS bfs: 30,000 of its 105,709
 * came after the pollers had gone to sleep) it keeps ticking instead. */
#define BACKSTOP_IDLE_NS (10 * 1000 * 1000ull)
/* The tick stretches, doubling up to BACKSTOP_TICK_MAX_NS, while the backstop finds nothing to do
 * at it, and is back to BACKSTOP_TICK_NS as soon as it finds a poller to boost, one awake getting
 * no CPU, faults to serve, or faults the pollers are slow to take (a busy machine shows one at
 * nearly every tick), and when faults wake it from its sleep. Each tick runs the backstop on some
 * CPU in the program's address space, and an eviction's TLB flush meanwhile must interrupt that CPU
 * too: a cross-vCPU interrupt the flush waits for, tens of µs here, where a CPU left idle is
 * skipped (its TLB is flushed when it next runs the process). At 1 ms, a serial bfs at a quarter of
 * its peak took 5,400 such interrupts, at 16 ms 1,100, and its eviction cost 1.80 µs a fault
 * against 1.31 (2026-12-07). Alternating 3 runs each, tick 1 / 4 / 16 ms, medians: make bench's bfs
 * at -L 18 MB 3.01 / 2.92 / 2.83 s, GAPBS bfs serial -L 140 7.02 / 6.94 / 6.87, fillscan on 8
 * threads at a quarter 2.32 / 2.18 / 2.14, bfs on 2 threads 3.36 / 3.29 / 3.25, python -L 170 3.34
 * / 3.19 / 3.10; 8 ms keeps most of that. The cost: after each stretch of 7 ms in which the
 * backstop found nothing to do, the first fault or event that waits for a poller whose CPU another
 * thread has taken since (a loaded machine), or a poller stuck meanwhile, waits up to
 * BACKSTOP_TICK_MAX_NS for the backstop, not 1 ms. */
#define BACKSTOP_TICK_MAX_NS (8 * 1000 * 1000ull)
static uint64_t backstop_next_tick(uint64_t tick, bool busy)
{
	if (busy)
		return BACKSTOP_TICK_NS;
	return tick < BACKSTOP_TICK_MAX_NS / 2 ? tick * 2 : BACKSTOP_TICK_MAX_NS;
}

static void *backstop_main(void *arg)
{
	handler_thread_enter();
	struct handler_ctx *ctx = handler_ctx_new();
	atomic_store(&hd.tids[(uintptr_t)arg % RT_MAX_HANDLERS], rt_gettid());
	handler_thread_started();
	uint64_t seen = atomic_load(&hd.polled), asleep_since = 0, tick = BACKSTOP_TICK_NS;
	for (;;) {
		uint64_t now = rt_mono_ns();
		if (!pollers_all_asleep() || handler_ctx_waiting(ctx))
			asleep_since = 0;
		else if (!asleep_since)
			asleep_since = now;
		else if (now - asleep_since >= BACKSTOP_IDLE_NS && pollers_block(200) > 0) {
			asleep_since = 0; /* woken with the pollers by a fault: tick again (a time-out: sleep on) */
			tick = BACKSTOP_TICK_NS;
		}
		pollers_sleep_ns(tick);
		bool busy = pollers_boost_stuck(rt_mono_ns());
		uint64_t polled = atomic_load(&hd.polled);
		if (polled == seen && pollers_work_waiting()) {
			backstop_serve(ctx);
			busy = true;
		} else if (!busy) {
			busy = pollers_slow();
		}
		seen = atomic_load(&hd.polled);
		handler_tend(ctx);
		tick = backstop_next_tick(tick, busy || handler_ctx_waiting(ctx));
	}
	return NULL;
}

/* ---- --poll adaptive|block|spin: every handler reads every fault ---- */

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
	pollers_pin(cpu);
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
	int peer = handler_peer_cpu();
	return peer < 0 || peer != sched_getcpu();
}

static void handler_take(void *self, const struct uffd_msg *m, int fd)
{
	handler_message(self, m, fd);
}

static void *handler_main(void *arg)
{
	handler_thread_enter();
	struct handler_ctx *ctx = handler_ctx_new();
	atomic_store(&hd.tids[(uintptr_t)arg % RT_MAX_HANDLERS], rt_gettid());
	handler_thread_started();
	handler_pin((unsigned)(uintptr_t)arg);
	uint64_t last_msg = 0;
	for (;;) {
		ssize_t n = pollers_read(handler_take, ctx);
		handler_tend(ctx);
		if (n > 0) {
			last_msg = rt_mono_ns();
			continue;
		}
		if (n < 0)
			break;
		if (handler_keep_polling(last_msg)) {
			__builtin_ia32_pause();
			continue;
		}
		if (pollers_block(handler_ctx_waiting(ctx) ? 1 : 200) < 0)
			break;
	}
	return NULL;
}

/* ---- start ---- */

/* The CPUs a poller goes on: those this process may run on (its affinity at start, which a cpuset
 * or taskset sets), narrowed to --cores if given. */
static unsigned pollers_cpus(struct cpulist *cpus)
{
	memset(cpus, 0, sizeof(*cpus));
	if (syscall(SYS_sched_getaffinity, 0, sizeof(cpus->bits), cpus->bits) < 0)
		return 0;
	if (rt.cfg.pinned)
		for (unsigned w = 0; w < CPULIST_MAX / 64; w++)
			cpus->bits[w] &= rt.cfg.cores.bits[w];
	return cpulist_count(cpus);
}

static int pollers_start(void)
{
	struct cpulist cpus;
	unsigned n = pollers_cpus(&cpus);
	if (n == 0)
		return -EINVAL;
	if (n > POLLERS_MAX)
		n = POLLERS_MAX;
	hd.pollers = rt_map(n * sizeof(struct poller));
	if (!hd.pollers)
		return -ENOMEM;
	memset(hd.of_cpu, 0, sizeof(hd.of_cpu));
	hd.npollers = 0;
	for (unsigned cpu = 0; cpu < CPULIST_MAX && hd.npollers < n; cpu++) {
		if (!cpulist_has(&cpus, cpu))
			continue;
		struct poller *p = &hd.pollers[hd.npollers];
		p->cpu = cpu;
		hd.of_cpu[cpu] = p;
		hd.npollers++;
	}
	atomic_store(&hd.last_msg, 0); /* asleep until the first fault */
	atomic_store(&hd.home_cpu, hd.pollers[0].cpu); /* some poller on watch from the start */
	for (unsigned i = 0; i < hd.npollers; i++) {
		if (rt_thread_create(&hd.pollers[i].thread, poller_main, &hd.pollers[i], "fltrace-poller") != 0)
			return -EAGAIN;
	}
	return 0;
}

int handler_start(void)
{
	if (serve_init() < 0)
		return -ENOMEM;
	pollers_fds_init();
	unsigned n = rt.cfg.handlers ? rt.cfg.handlers : 1;
	if (n > RT_MAX_HANDLERS)
		n = RT_MAX_HANDLERS;
	rt_tls_internal++; /* the new thread's TLS vector comes from untracked memory */
	atomic_store(&hd.started, 0);
	int err = rt.cfg.percpu ? pollers_start() : 0;
	for (hd.n = 0; err == 0 && hd.n < n; hd.n++) {
		void *(*fn)(void *) = rt.cfg.percpu ? backstop_main : handler_main;
		const char *name = rt.cfg.percpu ? "fltrace-backstp" : "fltrace-handler";
		if (rt_thread_create(&hd.threads[hd.n], fn, (void *)(uintptr_t)hd.n, name) != 0)
			break;
	}
	/* glibc's thread start-up reads the program's locale data (__ctype_init), which may be on the
	 * heap: it must be done before the heap is registered (a fork child's is, until its runtime
	 * starts), or a handler would wait for a fault only it can serve. */
	for (uint32_t seen; err == 0 && hd.n == n && (seen = atomic_load(&hd.started)) < n + hd.npollers;)
		rt_wait_while(&hd.started, seen);
	rt_tls_internal--;
	return err < 0 ? err : hd.n == n ? 0 : -EAGAIN;
}

/* The CPU time of every handler thread (user + system, polling included), in ns. */
uint64_t handler_cpu_ns(void)
{
	uint64_t sum = 0;
	struct timespec ts;
	clockid_t c;
	for (unsigned i = 0; i < hd.n; i++)
		if (pthread_getcpuclockid(hd.threads[i], &c) == 0 && clock_gettime(c, &ts) == 0)
			sum += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	for (unsigned i = 0; i < hd.npollers; i++)
		if (pthread_getcpuclockid(hd.pollers[i].thread, &c) == 0 && clock_gettime(c, &ts) == 0)
			sum += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return sum;
}

/* ---- the watchdog ---- */

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

static void watchdog_look_at(unsigned slot, int tid, bool *someone_runnable)
{
	bool r = false;
	uint64_t cpu = 0;
	if (!task_sched_state(tid, &r, &cpu))
		return;
	*someone_runnable |= r;
	if (hd.stalling) /* the first second without progress only takes the baseline */
		hd.stalled_cpu_ticks += cpu - hd.last_cpu[slot];
	hd.last_cpu[slot] = cpu;
}

/* Called once a second (stats thread): faults waiting while no handler has handled a message means
 * a handler may be stuck. Wall time alone is no measure on a busy machine (a handler, or the
 * thread holding rt.lock that it waits for, may wait seconds for a CPU), so a second counts as a
 * stall only if none of them was runnable: all were asleep, on a lock or in a fault, which is
 * what a deadlock looks like. A handler that spins without progress (always runnable) is caught
 * by the CPU it used instead; pollers, which spin while they wait, only by the first. HANDLER_STALL_SECONDS of either: stop with a message rather than
 * hang forever. */
#define HANDLER_STALL_SECONDS 10
void handler_watchdog(void)
{
	struct pollfd p[2];
	memcpy(p, pollers_fds, sizeof(p));
	uint64_t now = atomic_load(&hd.progress);
	if (now != hd.watched_progress || (poll(p, pollers_nfds, 0) < 1 && !route_any_queued() && !handler_keeps_faults())) {
		hd.watched_progress = now;
		hd.stalled_seconds = 0;
		hd.stalled_cpu_ticks = 0;
		hd.stalling = false;
		return;
	}
	bool someone_runnable = false;
	for (unsigned i = 0; i < hd.n; i++)
		watchdog_look_at(i, atomic_load(&hd.tids[i]), &someone_runnable);
	/* A poller spins (runnable) while it waits: only whether one is runnable counts. */
	uint64_t spun = hd.stalled_cpu_ticks;
	for (unsigned i = 0; i < hd.npollers; i++)
		watchdog_look_at(RT_MAX_HANDLERS + i, atomic_load(&hd.pollers[i].tid), &someone_runnable);
	hd.stalled_cpu_ticks = spun;
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
