/* Bench: the serving designs --poll percpu was chosen among, side by side on this machine. Threads
 * write one byte per fresh page of a userfaultfd region (plus a little compute per page); each
 * design serves the faults with UFFDIO_COPY. No stack, no trace: only where and when a fault is
 * served. Usage: serve_designs [pages=8192] [reps=3]; prints "designs,<design>,<case>,<median
 * µs per page>,<min>,<max>" (µs per page all in, the compute included: compare with the native row).
 *   block          one normal handler thread asleep in poll() (the earliest design)
 *   adaptive       one normal handler polling 100 µs after a fault, then asleep (--poll adaptive)
 *   idle-any       a SCHED_IDLE poller per CPU, each serving what it reads
 *   idle-routed    the same, each fault handed to the poller of its thread's CPU (rseq cpu_id)
 *   idle-tick      idle-routed + a normal backstop that looks every 1 ms (--poll percpu)
 *   idle-woken     idle-routed + a normal backstop asleep in poll(), woken by every fault
 *   watch-server   a SCHED_IDLE watcher per CPU waking a normal server on its CPU (futex)
 * Cases: 1 thread, 2 threads, 1 thread with a busy loop on the last CPU (busy1), 1 thread with a
 * busy loop on every CPU (busyall; designs without a normal thread reading the userfaultfd are
 * skipped there: they starve).
 * Assumes at most 64 CPUs; busy loops and pollers use CPUs 0 and up. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096ul
#define MAX_CPUS 64
#define MAX_REPS 16
#define SLOTS 64
#define STEAL_NS 20000ull

enum design { NATIVE, BLOCK, ADAPTIVE, IDLE_ANY, IDLE_ROUTED, IDLE_TICK, IDLE_WOKEN, WATCH_SERVER, NDESIGNS };
static const char *const design_names[] = { "native", "block", "adaptive", "idle-any", "idle-routed",
					    "idle-tick", "idle-woken", "watch-server" };
enum busy { BUSY_NONE, BUSY_ONE, BUSY_ALL };
struct bench_case {
	const char *name;
	int threads;
	enum busy busy;
};

/* A fault handed to another CPU's server: stamp 0 free, 1 in use, else when it was handed. */
struct slot {
	_Atomic uint64_t stamp;
	uint64_t addr;
};
struct cpu_q {
	struct slot s[SLOTS];
	_Atomic int kick; /* watch-server: the server's futex */
};

static struct {
	enum design d;
	int uffd, ncpu;
	char *src, *area;
	size_t pages, per;
	atomic_bool stop;
	_Atomic uint64_t served_by_pollers;
	struct cpu_q q[MAX_CPUS];
	volatile struct rseq *rseq_of[1 << 16];
} b;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

static void set_idle(void)
{
	struct sched_param p = { 0 };
	sched_setscheduler(0, SCHED_IDLE, &p);
}

static void serve(uint64_t addr)
{
	struct uffdio_copy c = { .dst = addr & ~(PAGE - 1), .src = (uintptr_t)b.src, .len = PAGE };
	if (ioctl(b.uffd, UFFDIO_COPY, &c) < 0 && errno != EEXIST) {
		perror("UFFDIO_COPY");
		exit(1);
	}
}

static bool read_fault(uint64_t *addr)
{
	struct uffd_msg m;
	if (read(b.uffd, &m, sizeof(m)) != sizeof(m) || m.event != UFFD_EVENT_PAGEFAULT)
		return false;
	*addr = m.arg.pagefault.address;
	/* the thread's CPU rides in the low bits of the page-aligned address */
	volatile struct rseq *rs = b.rseq_of[m.arg.pagefault.feat.ptid & 0xffff];
	int cpu = rs ? (int)rs->cpu_id : -1;
	*addr = (*addr & ~(PAGE - 1)) | (uint64_t)(cpu >= 0 && cpu < b.ncpu ? cpu + 1 : 0);
	return true;
}

static bool q_put(int cpu, uint64_t addr)
{
	for (int i = 0; i < SLOTS; i++) {
		uint64_t free_ = 0;
		if (atomic_compare_exchange_strong(&b.q[cpu].s[i].stamp, &free_, 1)) {
			b.q[cpu].s[i].addr = addr;
			atomic_store(&b.q[cpu].s[i].stamp, now_ns());
			return true;
		}
	}
	return false;
}

static bool q_take(int cpu, uint64_t before, uint64_t *addr)
{
	for (int i = 0; i < SLOTS; i++) {
		struct slot *s = &b.q[cpu].s[i];
		uint64_t st = atomic_load(&s->stamp);
		if (st > 1 && st < before && atomic_compare_exchange_strong(&s->stamp, &st, 1)) {
			*addr = s->addr;
			atomic_store(&s->stamp, 0);
			return true;
		}
	}
	return false;
}

static bool q_take_any(int me, uint64_t before, uint64_t *addr)
{
	for (int c = 0; c < b.ncpu; c++)
		if (c != me && q_take(c, before, addr))
			return true;
	return false;
}

static void kick(int cpu)
{
	if (atomic_exchange(&b.q[cpu].kick, 1) == 0)
		syscall(SYS_futex, &b.q[cpu].kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---- the designs' threads ---- */

static void *single_handler(void *arg)
{
	(void)arg;
	struct pollfd p = { .fd = b.uffd, .events = POLLIN };
	uint64_t last = 0, addr;
	while (!b.stop) {
		if (read_fault(&addr)) {
			serve(addr);
			last = now_ns();
		} else if (b.d == ADAPTIVE && now_ns() - last < 100000) {
			__builtin_ia32_pause();
		} else {
			poll(&p, 1, 10);
		}
	}
	return NULL;
}

static void *poller(void *arg)
{
	int me = (int)(intptr_t)arg;
	pin(me);
	set_idle();
	uint64_t addr;
	while (!b.stop) {
		if (q_take(me, UINT64_MAX, &addr) || q_take_any(me, now_ns() - STEAL_NS, &addr)) {
			serve(addr);
			b.served_by_pollers++;
			continue;
		}
		if (!read_fault(&addr)) {
			__builtin_ia32_pause();
			continue;
		}
		int cpu = (int)(addr & (PAGE - 1)) - 1;
		if (b.d != IDLE_ANY && cpu >= 0 && cpu != me && q_put(cpu, addr))
			continue;
		serve(addr);
		b.served_by_pollers++;
	}
	return NULL;
}

/* idle-tick: every 1 ms, serves while faults waited a whole tick and no poller served one */
static void *backstop_tick(void *arg)
{
	(void)arg;
	struct pollfd p = { .fd = b.uffd, .events = POLLIN };
	uint64_t seen = b.served_by_pollers, addr;
	while (!b.stop) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
		if (b.served_by_pollers != seen || poll(&p, 1, 0) < 1) {
			seen = b.served_by_pollers;
			continue;
		}
		for (uint64_t until = now_ns() + 1000000; !b.stop;) {
			bool got = false;
			while (read_fault(&addr) || q_take_any(-1, UINT64_MAX, &addr)) {
				serve(addr);
				got = true;
				until = now_ns() + 1000000;
			}
			if (!got && now_ns() > until)
				break;
			poll(&p, 1, 1);
		}
		seen = b.served_by_pollers;
	}
	return NULL;
}

/* idle-woken: asleep in poll() beside the pollers, so every fault wakes it too */
static void *backstop_woken(void *arg)
{
	(void)arg;
	struct pollfd p = { .fd = b.uffd, .events = POLLIN };
	uint64_t addr;
	while (!b.stop) {
		if (read_fault(&addr) || q_take_any(-1, now_ns() - STEAL_NS, &addr))
			serve(addr);
		else
			poll(&p, 1, 10);
	}
	return NULL;
}

static void *watcher(void *arg)
{
	int me = (int)(intptr_t)arg;
	pin(me);
	set_idle();
	uint64_t addr;
	while (!b.stop) {
		for (int c = 0; c < b.ncpu; c++)
			if (c != me && q_take(c, now_ns() - STEAL_NS, &addr) && q_put(me, addr))
				kick(me);
		if (read_fault(&addr)) {
			int cpu = (int)(addr & (PAGE - 1)) - 1;
			if (cpu < 0 || !q_put(cpu, addr))
				serve(addr);
			else if (cpu == me)
				kick(me);
			continue;
		}
		for (int i = 0; i < SLOTS; i++)
			if (atomic_load(&b.q[me].s[i].stamp) > 1) {
				kick(me);
				break;
			}
		__builtin_ia32_pause();
	}
	return NULL;
}

static void *server(void *arg)
{
	int me = (int)(intptr_t)arg;
	pin(me);
	uint64_t addr;
	while (!b.stop) {
		while (q_take(me, UINT64_MAX, &addr))
			serve(addr);
		if (atomic_exchange(&b.q[me].kick, 0) == 0)
			syscall(SYS_futex, &b.q[me].kick, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	}
	return NULL;
}

/* ---- a run ---- */

static void *toucher(void *arg)
{
	size_t k = (size_t)(intptr_t)arg;
	b.rseq_of[gettid() & 0xffff] = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
	volatile uint64_t sink = 0;
	for (size_t i = k * b.per; i < (k + 1) * b.per; i++) {
		b.area[i * PAGE] = 1;
		for (int j = 0; j < 2000; j++)
			sink += (uint64_t)j;
	}
	return NULL;
}

static void *busy_loop(void *arg)
{
	pin((int)(intptr_t)arg);
	while (!b.stop)
		__builtin_ia32_pause();
	return NULL;
}

static int start_servers(pthread_t *t)
{
	int n = 0;
	switch (b.d) {
	case NATIVE:
		break;
	case BLOCK:
	case ADAPTIVE:
		pthread_create(&t[n++], NULL, single_handler, NULL);
		break;
	case WATCH_SERVER:
		for (int c = 0; c < b.ncpu; c++) {
			pthread_create(&t[n++], NULL, watcher, (void *)(intptr_t)c);
			pthread_create(&t[n++], NULL, server, (void *)(intptr_t)c);
		}
		break;
	default:
		for (int c = 0; c < b.ncpu; c++)
			pthread_create(&t[n++], NULL, poller, (void *)(intptr_t)c);
		if (b.d == IDLE_TICK)
			pthread_create(&t[n++], NULL, backstop_tick, NULL);
		if (b.d == IDLE_WOKEN)
			pthread_create(&t[n++], NULL, backstop_woken, NULL);
	}
	return n;
}

/* µs per page, all in */
static double run_once(const struct bench_case *c)
{
	size_t len = b.pages * PAGE;
	b.area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(b.q, 0, sizeof(b.q));
	b.stop = false;
	if (b.d != NATIVE) {
		b.uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_THREAD_ID };
		struct uffdio_register reg = { .range = { (uintptr_t)b.area, len }, .mode = UFFDIO_REGISTER_MODE_MISSING };
		if (b.uffd < 0 || ioctl(b.uffd, UFFDIO_API, &api) < 0 || ioctl(b.uffd, UFFDIO_REGISTER, &reg) < 0) {
			perror("userfaultfd (needs root or vm.unprivileged_userfaultfd=1)");
			exit(1);
		}
	}
	pthread_t busy[MAX_CPUS], srv[3 * MAX_CPUS], w[8];
	int nbusy = c->busy == BUSY_ALL ? b.ncpu : c->busy == BUSY_ONE ? 1 : 0;
	for (int i = 0; i < nbusy; i++)
		pthread_create(&busy[i], NULL, busy_loop, (void *)(intptr_t)(b.ncpu - 1 - i));
	int nsrv = start_servers(srv);
	usleep(20000);
	b.per = b.pages / (size_t)c->threads;
	uint64_t t0 = now_ns();
	for (int i = 0; i < c->threads; i++)
		pthread_create(&w[i], NULL, toucher, (void *)(intptr_t)i);
	for (int i = 0; i < c->threads; i++)
		pthread_join(w[i], NULL);
	uint64_t t1 = now_ns();
	b.stop = true;
	for (int i = 0; i < b.ncpu; i++)
		kick(i);
	for (int i = 0; i < nsrv; i++)
		pthread_join(srv[i], NULL);
	for (int i = 0; i < nbusy; i++)
		pthread_join(busy[i], NULL);
	if (b.d != NATIVE)
		close(b.uffd);
	munmap(b.area, len);
	return (double)(t1 - t0) / 1e3 / (double)(b.per * (size_t)c->threads);
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;
	return (a > c) - (a < c);
}

int main(int argc, char **argv)
{
	b.pages = argc > 1 ? strtoul(argv[1], NULL, 10) : 8192;
	int reps = argc > 2 ? atoi(argv[2]) : 3;
	b.ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (b.pages < 64 || reps < 1 || reps > MAX_REPS || b.ncpu > MAX_CPUS || b.ncpu < 1) {
		fprintf(stderr, "usage: serve_designs [pages >= 64] [reps 1..%d] (at most %d CPUs)\n", MAX_REPS, MAX_CPUS);
		return 2;
	}
	b.src = aligned_alloc(PAGE, PAGE);
	memset(b.src, 0x5a, PAGE);
	const struct bench_case cases[] = {
		{ "1thread", 1, BUSY_NONE }, { "2threads", 2, BUSY_NONE },
		{ "busy1", 1, BUSY_ONE }, { "busyall", 1, BUSY_ALL },
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		for (int d = 0; d < NDESIGNS; d++) {
			b.d = (enum design)d;
			bool starves = d == IDLE_ANY || d == IDLE_ROUTED || d == WATCH_SERVER;
			if (cases[k].busy == BUSY_ALL && starves)
				continue;
			double us[MAX_REPS];
			for (int r = 0; r < reps; r++)
				us[r] = run_once(&cases[k]);
			qsort(us, (size_t)reps, sizeof(us[0]), cmp_double);
			double med = reps % 2 ? us[reps / 2] : (us[reps / 2 - 1] + us[reps / 2]) / 2;
			printf("designs,%s,%s,%.2f,%.2f,%.2f\n", design_names[d], cases[k].name, med, us[0], us[reps - 1]);
			fflush(stdout);
		}
	}
	return 0;
}
