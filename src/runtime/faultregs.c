/* A program thread's page faults as the kernel records them (perf events of its own, every fault):
 * the user registers at a fault, rbp among them, read by a handler in place of /proc. Handlers only. */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <asm/perf_regs.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "faultregs.h"
#include "threads.h"

/* Why: they hold rbp, which /proc does not show: code built with frame pointers is unwound by the
 * handler too, without the stack signal. Only for threads that need it (handler.c,
 * handler_count_lacked_fp): reading the ring takes a handler 0.1 us against 2.0 for /proc, but the
 * events cost the faulting thread 1 us a fault in the kernel (a stand-alone loop of first touches:
 * 1.47 us a fault, 2.48 with them), more with its two context switches at each fault served. */
#define RING_PAGES 1u   /* one data page: some 50 records; the ring is emptied at each message */
#define RECORD_MAX 256u /* room kept free: a fuller ring may have dropped the newest record */
#define WATCH_MAX 128u  /* threads watched at once (3 fds each, in the runtime's fd table) */
#define SWEEP_FROM 32u  /* from this many open, a thread's first watch closes those of ended threads */
#define SAMPLE_AGE_NS (2 * 1000 * 1000ull) /* an older sample is no fault its thread sleeps in now */
#define REGS_MASK ((1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP))

/* A fault begins: PERF_COUNT_SW_PAGE_FAULTS's record (perf_event_open(2), PERF_RECORD_SAMPLE, in
 * the kernel's order). No PERF_SAMPLE_IP: in a fault taken in kernel mode it would put a kernel
 * address in memory the program can read; `misc` tells the mode. */
struct sample {
	struct perf_event_header h;
	uint32_t pid, tid;
	uint64_t time, addr;
	uint32_t cpu, res;
	uint64_t abi;
	uint64_t bp, sp, pc; /* REGS_MASK's registers, lowest bit first */
};
/* A fault ends, its page in place (PAGE_FAULTS_MIN or _MAJ, counted as the fault completes). */
struct done {
	struct perf_event_header h;
	uint32_t pid, tid;
};

static struct {
	_Atomic int refused; /* the kernel refused an event: no perf, or kernel-mode samples not allowed */
	_Atomic unsigned open;
	_Atomic(struct rt_thread *) watched[WATCH_MAX];
} fr;

static size_t ring_len(void)
{
	return (size_t)(1 + RING_PAGES) << rt.page_shift;
}

/* Every fault is sampled as it begins, in user mode and in the kernel (a fault inside a system call
 * must leave its record too: sampling kernel mode needs perf_event_paranoid <= 1 or CAP_PERFMON,
 * else /proc is read, as before), and again as it ends. No wake-ups: nobody polls. */
static int event_open(int tid, uint64_t config, uint64_t sample_type)
{
	struct perf_event_attr a = { 0 };
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = config;
	a.sample_period = 1;
	a.sample_type = sample_type;
	a.sample_regs_user = sample_type & PERF_SAMPLE_REGS_USER ? REGS_MASK : 0;
	a.exclude_hv = 1;
	a.remove_on_exec = 1; /* the next program's faults are not ours to sample */
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.watermark = 1;
	a.wakeup_watermark = RING_PAGES << rt.page_shift;
	return rt_fd_own((int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

/* Whether a seccomp filter of the program's reaches this handler thread (one installed with
 * SECCOMP_FILTER_FLAG_TSYNC does): a call it does not expect may kill the process, so none is
 * made. -1: cannot tell now. */
static int handler_filtered(void)
{
	static const char key[] = "\nSeccomp:";
	char buf[8192];
	int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = rt_read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	const char *p = strstr(buf, key);
	if (!p)
		return -1;
	p += sizeof(key) - 1;
	return p[strspn(p, " \t")] != '0';
}

/* With t->fault_busy held. */
static void watch_close(struct rt_thread *t)
{
	if (t->fault_ring) {
		rt_unmap(t->fault_ring, ring_len());
		for (unsigned i = 0; i < 3; i++)
			rt_fd_close(t->fault_fd[i]);
		atomic_fetch_sub(&fr.open, 1);
	}
	t->fault_ring = NULL;
	if (t->fault_watch)
		atomic_store(&fr.watched[t->fault_watch - 1], NULL);
	t->fault_watch = 0;
}

static bool busy_take(struct rt_thread *t)
{
	int idle = 0;
	return atomic_compare_exchange_strong(&t->fault_busy, &idle, 1);
}

/* Events of threads that have ended (the kernel hangs them up) closed, to make room. */
static void watch_sweep(void)
{
	for (unsigned i = 0; i < WATCH_MAX; i++) {
		struct rt_thread *t = atomic_load(&fr.watched[i]);
		if (!t || !busy_take(t))
			continue;
		struct pollfd p = { .fd = t->fault_fd[0], .events = POLLIN };
		if (t->fault_ring && poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
			watch_close(t);
		atomic_store(&t->fault_busy, 0);
	}
}

/* 1 + the thread's entry in the watch list, 0 if it is full. */
static unsigned watch_slot(struct rt_thread *t)
{
	if (atomic_load(&fr.open) >= SWEEP_FROM)
		watch_sweep();
	for (unsigned i = 0; i < WATCH_MAX; i++) {
		struct rt_thread *none = NULL;
		if (atomic_compare_exchange_strong(&fr.watched[i], &none, t))
			return i + 1;
	}
	return 0;
}

static void refuse_if_denied(void)
{
	if (errno == EACCES || errno == EPERM || errno == ENOENT || errno == ENOSYS || errno == EINVAL ||
	    errno == EOPNOTSUPP)
		atomic_store(&fr.refused, 1);
}

/* The thread's events and their ring, tried once per thread (again if its id is found reused); a
 * thread of another process (one reading the program's memory faults here too) is left alone. */
static void watch_open(struct rt_thread *t, int tid)
{
	t->fault_tried = true;
	if (atomic_load(&fr.refused) || syscall(SYS_tgkill, rt.pid, tid, 0) != 0)
		return;
	int filtered = handler_filtered();
	if (filtered > 0)
		atomic_store(&fr.refused, 1);
	if (filtered || !(t->fault_watch = watch_slot(t)))
		return;
	int fd[3] = {
		event_open(tid, PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
								   PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER),
		event_open(tid, PERF_COUNT_SW_PAGE_FAULTS_MIN, PERF_SAMPLE_TID),
		event_open(tid, PERF_COUNT_SW_PAGE_FAULTS_MAJ, PERF_SAMPLE_TID),
	};
	void *ring = MAP_FAILED;
	bool ok = fd[0] >= 0 && fd[1] >= 0 && fd[2] >= 0;
	if (!ok)
		refuse_if_denied();
	if (ok)
		ring = (void *)syscall(SYS_mmap, NULL, ring_len(), PROT_READ | PROT_WRITE, MAP_SHARED, fd[0], 0);
	ok = ring != MAP_FAILED && ioctl(fd[1], PERF_EVENT_IOC_SET_OUTPUT, fd[0]) == 0 &&
	     ioctl(fd[2], PERF_EVENT_IOC_SET_OUTPUT, fd[0]) == 0;
	if (!ok) {
		if (ring != MAP_FAILED)
			rt_unmap(ring, ring_len());
		for (unsigned i = 0; i < 3; i++)
			rt_fd_close(fd[i]);
		watch_close(t);
		return;
	}
	memcpy(t->fault_fd, fd, sizeof(fd));
	t->fault_ring = ring;
	atomic_fetch_add(&fr.open, 1);
}

static void ring_copy(const char *data, size_t size, uint64_t at, void *dst, size_t len)
{
	size_t off = (size_t)(at & (size - 1)), first = len < size - off ? len : size - off;
	memcpy(dst, data + off, first);
	memcpy((char *)dst + first, data, len - first);
}

/* The ring read to its end (and emptied). True if its newest record is a fault's beginning (copied
 * to s) with nothing after it: that fault has not ended. False where it may have been dropped (the
 * ring too full for another record; any record other than a sample: samples lost).
 * Why "not ended" matters: a fault with no record of its own (one the kernel takes through
 * get_user_pages: process_vm_readv, O_DIRECT, a futex) would otherwise find an older fault's
 * record newest, and that fault may have been on the same page (a write to a page mprotect had
 * made read-only, then the page dropped). */
static bool ring_newest(struct perf_event_mmap_page *m, struct sample *s)
{
	uint64_t head = atomic_load_explicit((_Atomic uint64_t *)&m->data_head, memory_order_acquire);
	uint64_t tail = m->data_tail;
	size_t size = (size_t)RING_PAGES << rt.page_shift;
	const char *data = (const char *)m + (m->data_offset ? m->data_offset : rt.page_size);
	bool full = head - tail > size - RECORD_MAX, begun = false;
	while (tail < head) {
		struct perf_event_header h;
		ring_copy(data, size, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail) {
			begun = false;
			break;
		}
		begun = h.type == PERF_RECORD_SAMPLE && h.size == sizeof(*s);
		if (begun)
			ring_copy(data, size, tail, s, sizeof(*s));
		tail += h.size;
	}
	atomic_store_explicit((_Atomic uint64_t *)&m->data_tail, head, memory_order_release);
	return begun && !full;
}

/* The thread sleeps in the fault it began last, unless a signal took it out since (its handler
 * runs, and may return past the faulting instruction: a fault ended that way leaves no record of
 * its end). That fault, taken in user mode on this page, moments ago, is this message's. */
static bool sample_is_fault(const struct sample *s, const struct rt_thread *t, int tid, uintptr_t page)
{
	int64_t age = (int64_t)(rt_mono_ns() - s->time);
	return (int)s->tid == tid && (s->h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER &&
	       s->abi == PERF_SAMPLE_REGS_ABI_64 && (s->addr & ~((uint64_t)rt.page_size - 1)) == page &&
	       age < (int64_t)SAMPLE_AGE_NS && s->time > atomic_load(&t->signal_ns);
}

bool faultregs_take(struct rt_thread *t, int tid, uintptr_t page, struct fault_regs *out)
{
	if (!busy_take(t))
		return false; /* another handler reads its ring (a late message of the thread's) */
	bool ok = false;
	if (t->fault_ring) {
		struct sample s;
		ok = ring_newest(t->fault_ring, &s) && sample_is_fault(&s, t, tid, page);
		if (ok)
			*out = (struct fault_regs){ .pc = s.pc, .sp = s.sp, .bp = s.bp, .cpu = (int)s.cpu };
	} else if ((t->fault_wanted || rt.cfg.fault_samples_all) && !t->fault_tried) {
		watch_open(t, tid);
	}
	atomic_store(&t->fault_busy, 0);
	return ok;
}

void faultregs_forget(struct rt_thread *t)
{
	while (!busy_take(t))
		__builtin_ia32_pause();
	watch_close(t);
	t->fault_wanted = t->fault_tried = false;
	atomic_store(&t->fault_busy, 0);
}

void faultregs_fork_child(void)
{
	atomic_store(&fr.open, 0);
	for (unsigned i = 0; i < WATCH_MAX; i++)
		atomic_store(&fr.watched[i], NULL);
}
