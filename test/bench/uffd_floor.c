/* Bench: the per-fault floor on this machine, the raw cost of resolving a first-touch fault through
 * userfaultfd in each way a tracer can (handler thread, + signal and unwind, SIGBUS in-thread), the
 * kernel's own first touch recorded by a perf event with what an unwind needs later, and
 * the per-page floor of eviction's two kernel calls (taking a page out with UFFDIO_MOVE, emptying
 * a far slot), alone and with another thread of the process running on another CPU.
 * Usage: uffd_floor [pages=8192] [reps=5]; prints "floor,<mode>,<median_us>,<min_us>,<max_us>". */
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <linux/perf_event.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fltrace/uffd_move.h"

#define PAGE 4096ul
#define PIDFD_SELF_THREAD_GROUP (-10001) /* Linux 6.15; Debian 12's headers predate it */
#define MAX_REPS 64
#define DEPTH 64

enum mode {
	MODE_NATIVE,  /* no userfaultfd: the kernel's own first-touch fault */
	MODE_HANDLER, /* handler thread: read -> UFFDIO_COPY (wakes) -> resume */
	MODE_SIGNAL,  /* handler thread: read -> UFFDIO_COPY DONTWAKE -> signal; the faulting
	                 thread unwinds in its handler and retries the access */
	MODE_SIGBUS,  /* UFFD_FEATURE_SIGBUS: the faulting thread unwinds and copies in its handler */
	MODE_PERF,    /* no userfaultfd: the kernel's first touch, each recorded by a perf event of
	                 the thread (PERF_COUNT_SW_PAGE_FAULTS, every fault) with its user registers and
	                 2 KiB of its stack, into a ring read afterwards: the faulting thread's share
	                 of a design that unwinds elsewhere, later */
	/* Eviction, per page (µs per page, not per fault), on every other page of an area as the
	 * policy's victims are (scattered), unless said: */
	MODE_MOVE_PAGE, /* one UFFDIO_MOVE per page */
	MODE_MOVE_RUN,  /* one UFFDIO_MOVE per run of 64 contiguous pages */
	MODE_ZAP_PAGE,  /* one madvise(MADV_DONTNEED) per page */
	MODE_ZAP_VEC,   /* one process_madvise of up to 1024 pages */
};

struct floor_case {
	const char *name;
	enum mode mode;
	int app_cpu, handler_cpu; /* -1: not pinned; eviction: handler_cpu runs a busy thread */
	int threads;              /* faulting threads (SIGBUS mode) */
};

/* One measurement's shared state; the signal handlers reach it through this root. */
static struct {
	int uffd;
	char *area;
	size_t pages;
	pid_t app_tid;
	char src[PAGE] __attribute__((aligned(PAGE)));
	volatile uint64_t unwound; /* frames seen by the handlers, so the unwind is not elided */
} fl;

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what)
{
	fprintf(stderr, "uffd_floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void pin(int cpu)
{
	if (cpu < 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
		errno = EINVAL;
		die("pthread_setaffinity_np");
	}
}

static void unpin(void)
{
	cpu_set_t all;
	CPU_ZERO(&all);
	for (int i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &all);
	sched_setaffinity(0, sizeof(all), &all);
}

static int uffd_open(uint64_t features)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (fd < 0)
		die("userfaultfd (needs root or vm.unprivileged_userfaultfd=1)");
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	if (ioctl(fd, UFFDIO_API, &api) < 0)
		die("UFFDIO_API");
	return fd;
}

static void uffd_copy(uint64_t page_addr, uint64_t mode)
{
	struct uffdio_copy c = { .dst = page_addr, .src = (uintptr_t)fl.src, .len = PAGE, .mode = mode };
	if (ioctl(fl.uffd, UFFDIO_COPY, &c) < 0 && errno != EEXIST)
		die("UFFDIO_COPY");
}

static void on_signal(int sig, siginfo_t *si, void *uc __attribute__((unused)))
{
	void *ips[DEPTH];
	fl.unwound += (uint64_t)unw_backtrace(ips, DEPTH);
	if (sig == SIGBUS)
		uffd_copy((uintptr_t)si->si_addr & ~(PAGE - 1), 0);
}

struct handler_arg {
	int cpu;
	enum mode mode;
};

static void *handler_main(void *p)
{
	struct handler_arg *a = p;
	pin(a->cpu);
	for (size_t served = 0; served < fl.pages;) {
		struct uffd_msg msg;
		ssize_t n = read(fl.uffd, &msg, sizeof(msg));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(msg))
			die("read uffd");
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		uint64_t page = msg.arg.pagefault.address & ~(PAGE - 1);
		if (a->mode == MODE_SIGNAL) {
			uffd_copy(page, UFFDIO_COPY_MODE_DONTWAKE);
			syscall(SYS_tgkill, getpid(), fl.app_tid, SIGUSR1);
		} else {
			uffd_copy(page, 0);
		}
		served++;
	}
	return NULL;
}

struct toucher_arg {
	size_t first, count;
	int cpu;
};

static void *toucher_main(void *p)
{
	struct toucher_arg *t = p;
	pin(t->cpu);
	for (size_t i = t->first; i < t->first + t->count; i++)
		fl.area[i * PAGE] = 1;
	return NULL;
}

#define PERF_STACK_BYTES 2048

/* The perf event of MODE_PERF on this thread, and its ring (mapped into *ring, *ring_len). */
static int perf_open_faults(void **ring, size_t *ring_len)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.sample_period = 1,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
			       PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
		.sample_regs_user = (1ull << 6) | (1ull << 7) | (1ull << 8), /* bp, sp, ip */
		.sample_stack_user = PERF_STACK_BYTES,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.disabled = 1,
	};
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		die("perf_event_open (needs root or perf_event_paranoid <= 1)");
	/* Room for every sample of the run, so that none is lost while nothing reads. */
	size_t per = PERF_STACK_BYTES + 128, need = fl.pages * per, pages = 1;
	while (pages * PAGE < need)
		pages <<= 1;
	*ring_len = (pages + 1) * PAGE;
	*ring = mmap(NULL, *ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*ring == MAP_FAILED)
		die("mmap of the perf ring");
	return fd;
}

/* The samples the ring holds (every fault's, or the floor would flatter the design). */
static size_t perf_count_samples(void *ring)
{
	struct perf_event_mmap_page *m = ring;
	char *data = (char *)ring + m->data_offset;
	uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE), n = 0;
	for (uint64_t at = m->data_tail; at < head;) {
		struct perf_event_header *h = (void *)(data + at % m->data_size);
		n += h->type == PERF_RECORD_SAMPLE;
		if (h->type == PERF_RECORD_LOST) {
			errno = ENOBUFS;
			die("perf ring lost samples");
		}
		at += h->size;
	}
	return n;
}

/* One repetition: a fresh area of fl.pages pages, each written once; returns µs per fault. */
static double floor_once(const struct floor_case *c)
{
	size_t len = fl.pages * PAGE;
	fl.area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fl.area == MAP_FAILED)
		die("mmap");
	if (c->mode != MODE_NATIVE && c->mode != MODE_PERF) {
		fl.uffd = uffd_open(c->mode == MODE_SIGBUS ? UFFD_FEATURE_SIGBUS : 0);
		struct uffdio_register reg = {
			.range = { .start = (uintptr_t)fl.area, .len = len },
			.mode = UFFDIO_REGISTER_MODE_MISSING,
		};
		if (ioctl(fl.uffd, UFFDIO_REGISTER, &reg) < 0)
			die("UFFDIO_REGISTER");
	}
	pin(c->app_cpu);
	fl.app_tid = (pid_t)syscall(SYS_gettid);
	pthread_t handler;
	struct handler_arg ha = { .cpu = c->handler_cpu, .mode = c->mode };
	if ((c->mode == MODE_HANDLER || c->mode == MODE_SIGNAL) &&
	    pthread_create(&handler, NULL, handler_main, &ha) != 0)
		die("pthread_create");
	usleep(1000); /* let the handler block in read() first */
	void *ring = NULL;
	size_t ring_len = 0;
	int perf_fd = c->mode == MODE_PERF ? perf_open_faults(&ring, &ring_len) : -1;
	if (perf_fd >= 0)
		ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0);

	double t0 = now_us();
	if (c->threads > 1) {
		pthread_t tids[8];
		struct toucher_arg ta[8];
		size_t per = fl.pages / (size_t)c->threads;
		for (int i = 0; i < c->threads; i++) {
			ta[i] = (struct toucher_arg){ .first = (size_t)i * per, .count = per, .cpu = i % 2 };
			if (pthread_create(&tids[i], NULL, toucher_main, &ta[i]) != 0)
				die("pthread_create");
		}
		for (int i = 0; i < c->threads; i++)
			pthread_join(tids[i], NULL);
	} else {
		struct toucher_arg ta = { .first = 0, .count = fl.pages, .cpu = -1 };
		toucher_main(&ta);
	}
	double t1 = now_us();

	if (perf_fd >= 0) {
		ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
		if (perf_count_samples(ring) < fl.pages) {
			errno = ENODATA;
			die("perf recorded fewer faults than were taken");
		}
		munmap(ring, ring_len);
		close(perf_fd);
	}
	if (c->mode == MODE_HANDLER || c->mode == MODE_SIGNAL)
		pthread_join(handler, NULL);
	if (c->mode != MODE_NATIVE && c->mode != MODE_PERF)
		close(fl.uffd);
	munmap(fl.area, len);
	unpin();
	size_t faults = c->threads > 1 ? fl.pages / (size_t)c->threads * (size_t)c->threads : fl.pages;
	return (t1 - t0) / (double)faults;
}

static volatile int busy_stop;

/* Another thread of the process on another CPU, running: every TLB flush of the process must
 * then reach that CPU too, as when the program or a poller runs there. */
static void *busy_main(void *p)
{
	pin(*(int *)p);
	while (!busy_stop)
		__builtin_ia32_pause();
	return NULL;
}

static void evict_pages(enum mode mode, char *from, char *to, size_t n, size_t stride)
{
	int fd = fl.uffd;
	if (mode == MODE_MOVE_PAGE || mode == MODE_MOVE_RUN) {
		size_t run = mode == MODE_MOVE_RUN ? 64 : 1;
		for (size_t i = 0; i < n; i += run) {
			struct uffdio_move m = { .dst = (uintptr_t)(to + i * PAGE),
						 .src = (uintptr_t)(from + i * stride * PAGE), .len = run * PAGE };
			if (ioctl(fd, UFFDIO_MOVE, &m) < 0)
				die("UFFDIO_MOVE (Linux 6.8)");
		}
	} else if (mode == MODE_ZAP_PAGE) {
		for (size_t i = 0; i < n; i++)
			madvise(from + i * stride * PAGE, PAGE, MADV_DONTNEED);
	} else {
		struct iovec v[1024];
		for (size_t i = 0; i < n; i += 1024) {
			size_t k = n - i < 1024 ? n - i : 1024;
			for (size_t j = 0; j < k; j++)
				v[j] = (struct iovec){ from + (i + j) * stride * PAGE, PAGE };
			if (syscall(SYS_process_madvise, PIDFD_SELF_THREAD_GROUP, v, k, MADV_DONTNEED, 0) < 0)
				die("process_madvise on this process (Linux 6.13)");
		}
	}
}

/* One repetition of an eviction row: µs per page taken out. */
static double evict_once(const struct floor_case *c)
{
	size_t n = fl.pages, stride = c->mode == MODE_MOVE_RUN ? 1 : 2, len = n * stride * PAGE;
	char *from = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *to = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (from == MAP_FAILED || to == MAP_FAILED)
		die("mmap");
	fl.uffd = uffd_open(UFFD_FEATURE_MOVE);
	struct uffdio_register reg = { .range = { .start = (uintptr_t)to, .len = n * PAGE },
				       .mode = UFFDIO_REGISTER_MODE_MISSING };
	if (ioctl(fl.uffd, UFFDIO_REGISTER, &reg) < 0)
		die("UFFDIO_REGISTER");
	pin(c->app_cpu);
	for (size_t i = 0; i < n; i++)
		from[i * stride * PAGE] = 1;
	pthread_t busy;
	busy_stop = 0;
	int busy_cpu = c->handler_cpu;
	if (busy_cpu >= 0 && pthread_create(&busy, NULL, busy_main, &busy_cpu) != 0)
		die("pthread_create");
	usleep(1000);
	double t0 = now_us();
	evict_pages(c->mode, from, to, n, stride);
	double t1 = now_us();
	busy_stop = 1;
	if (busy_cpu >= 0)
		pthread_join(busy, NULL);
	close(fl.uffd);
	munmap(from, len);
	munmap(to, n * PAGE);
	unpin();
	return (t1 - t0) / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	fl.pages = argc > 1 ? strtoul(argv[1], NULL, 10) : 8192;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	if (fl.pages < 16 || reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "usage: uffd_floor [pages >= 16] [reps 1..%d]\n", MAX_REPS);
		return 2;
	}
	memset(fl.src, 0x5a, sizeof(fl.src));
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0 || sigaction(SIGBUS, &sa, NULL) < 0)
		die("sigaction");

	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	int other = ncpu > 1 ? 1 : 0;
	const struct floor_case cases[] = {
		{ "native-first-touch", MODE_NATIVE, 0, -1, 1 },
		{ "perf-sampled-first-touch", MODE_PERF, 0, -1, 1 },
		{ "handler-same-core", MODE_HANDLER, 0, 0, 1 },
		{ "handler-cross-core", MODE_HANDLER, 0, other, 1 },
		{ "signal+unwind-same-core", MODE_SIGNAL, 0, 0, 1 },
		{ "signal+unwind-cross-core", MODE_SIGNAL, 0, other, 1 },
		{ "sigbus+unwind-1-thread", MODE_SIGBUS, 0, -1, 1 },
		{ "sigbus+unwind-2-threads", MODE_SIGBUS, -1, -1, 2 },
		{ "evict-move-page", MODE_MOVE_PAGE, 0, -1, 1 },
		{ "evict-move-page-busy-cpu", MODE_MOVE_PAGE, 0, other, 1 },
		{ "evict-move-run64", MODE_MOVE_RUN, 0, -1, 1 },
		{ "evict-move-run64-busy-cpu", MODE_MOVE_RUN, 0, other, 1 },
		{ "slot-zap-page", MODE_ZAP_PAGE, 0, -1, 1 },
		{ "slot-zap-page-busy-cpu", MODE_ZAP_PAGE, 0, other, 1 },
		{ "slot-zap-vector", MODE_ZAP_VEC, 0, -1, 1 },
		{ "slot-zap-vector-busy-cpu", MODE_ZAP_VEC, 0, other, 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double us[MAX_REPS];
		bool evict = cases[i].mode >= MODE_MOVE_PAGE;
		if (evict && other == 0 && cases[i].handler_cpu >= 0)
			continue; /* one CPU: no other CPU to be busy */
		for (int r = 0; r < reps; r++)
			us[r] = evict ? evict_once(&cases[i]) : floor_once(&cases[i]);
		qsort(us, (size_t)reps, sizeof(us[0]), cmp_double);
		double med = reps % 2 ? us[reps / 2] : (us[reps / 2 - 1] + us[reps / 2]) / 2;
		printf("floor,%s,%.2f,%.2f,%.2f\n", cases[i].name, med, us[0], us[reps - 1]);
		fflush(stdout);
	}
	if (fl.unwound == 0)
		fprintf(stderr, "uffd_floor: warning: unw_backtrace returned no frames\n");
	return 0;
}
