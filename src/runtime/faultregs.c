/* A program thread's page faults as the kernel samples them (one perf event per thread, every fault):
 * the user registers at a fault, read by a handler in place of /proc/<tid>/syscall. Handlers only. */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <asm/perf_regs.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "faultregs.h"
#include "threads.h"

/* Why: reading /proc/<tid>/syscall costs a handler 2.0 us a fault (the kernel waits there for the
 * thread to be off its CPU); a sample costs the faulting thread 0.8 us in the kernel (a stand-alone
 * loop of first touches: 1.49 us a fault, 2.28 with these samples) and the handler 0.1 us to read.
 * And it holds rbp, which /proc does not show: code built with frame pointers is unwound here too. */
#define RING_PAGES 4u   /* data pages: 16 KiB, some 200 samples between two reads */
#define RECORD_MAX 256u /* room kept free: a fuller ring may have dropped the newest sample */
#define WATCH_MAX 256u  /* events open at once; when full, those of threads that ended are closed */
#define SAMPLE_AGE_NS (2 * 1000 * 1000ull) /* an older sample is no fault its thread sleeps in now */
#define REGS_MASK ((1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP))

/* The record sample_type asks for, in the kernel's order (perf_event_open(2), PERF_RECORD_SAMPLE). */
struct sample {
	struct perf_event_header h;
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time, addr;
	uint32_t cpu, res;
	uint64_t abi;
	uint64_t bp, sp, pc; /* REGS_MASK's registers, lowest bit first */
};

static struct {
	_Atomic int refused; /* the kernel refused an event: no perf, or kernel-mode samples not allowed */
	_Atomic(struct rt_thread *) watched[WATCH_MAX];
} fr;

static size_t ring_len(void)
{
	return (size_t)(1 + RING_PAGES) << rt.page_shift;
}

/* Every fault, in user mode and in the kernel: a fault inside a system call must leave a sample
 * too, or the newest sample would be an older fault's. Sampling kernel mode needs
 * perf_event_paranoid <= 1 or CAP_PERFMON (else /proc is read, as before). No wake-ups: nobody polls. */
static int event_open(int tid)
{
	struct perf_event_attr a = { 0 };
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU |
			PERF_SAMPLE_REGS_USER;
	a.sample_regs_user = REGS_MASK;
	a.exclude_hv = 1;
	a.remove_on_exec = 1; /* the next program's faults are not ours to sample */
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.watermark = 1;
	a.wakeup_watermark = RING_PAGES << rt.page_shift;
	return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Whether a seccomp filter of the program's reaches this handler thread (one installed with
 * SECCOMP_FILTER_FLAG_TSYNC does): a call it does not expect may kill the process, so none is made. */
static bool handler_filtered(void)
{
	char buf[2048];
	int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	ssize_t n = rt_read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	const char *p = strstr(buf, "\nSeccomp:");
	return !p || p[sizeof("\nSeccomp:") - 1 + strspn(p + sizeof("\nSeccomp:") - 1, " \t")] != '0';
}

/* With t->fault_busy held. */
static void watch_close(struct rt_thread *t)
{
	if (t->fault_ring)
		rt_unmap(t->fault_ring, ring_len());
	t->fault_ring = NULL;
	rt_fd_close(t->fault_fd);
	t->fault_fd = -1;
	if (t->fault_watch >= 0)
		atomic_store(&fr.watched[t->fault_watch], NULL);
	t->fault_watch = -1;
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
		struct pollfd p = { .fd = t->fault_fd, .events = POLLIN };
		if (t->fault_fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
			watch_close(t);
		atomic_store(&t->fault_busy, 0);
	}
}

static int watch_slot(struct rt_thread *t)
{
	for (int round = 0; round < 2; round++) {
		for (unsigned i = 0; i < WATCH_MAX; i++) {
			struct rt_thread *none = NULL;
			if (atomic_compare_exchange_strong(&fr.watched[i], &none, t))
				return (int)i;
		}
		if (!round)
			watch_sweep();
	}
	return -1;
}

/* The thread's event and its ring; tried once per thread (again if its id is found reused). */
static void watch_open(struct rt_thread *t, int tid)
{
	t->fault_tried = true;
	if (atomic_load(&fr.refused))
		return;
	if (handler_filtered()) {
		atomic_store(&fr.refused, 1);
		return;
	}
	int slot = watch_slot(t);
	if (slot < 0)
		return;
	t->fault_watch = slot;
	int fd = rt_fd_own(event_open(tid));
	if (fd < 0) {
		if (errno != ESRCH && errno != EMFILE && errno != ENFILE && errno != ENOMEM)
			atomic_store(&fr.refused, 1);
		watch_close(t);
		return;
	}
	t->fault_fd = fd;
	void *ring = (void *)syscall(SYS_mmap, NULL, ring_len(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		watch_close(t);
		return;
	}
	t->fault_ring = ring;
}

static void ring_copy(const char *data, size_t size, uint64_t at, void *dst, size_t len)
{
	size_t off = (size_t)(at & (size - 1)), first = len < size - off ? len : size - off;
	memcpy(dst, data + off, first);
	memcpy((char *)dst + first, data, len - first);
}

/* The ring read to its end (and emptied); the newest record, if it is a sample. false where a
 * sample may have been dropped: the ring too full for the next one, or a record other than a
 * sample after the last (the event throttled, samples lost). */
static bool ring_newest(struct perf_event_mmap_page *m, struct sample *s)
{
	uint64_t head = atomic_load_explicit((_Atomic uint64_t *)&m->data_head, memory_order_acquire);
	uint64_t tail = m->data_tail;
	size_t size = (size_t)RING_PAGES << rt.page_shift;
	const char *data = (const char *)m + (m->data_offset ? m->data_offset : rt.page_size);
	bool full = head - tail > size - RECORD_MAX, have = false;
	while (tail < head) {
		struct perf_event_header h;
		ring_copy(data, size, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail) {
			have = false;
			break;
		}
		have = h.type == PERF_RECORD_SAMPLE && h.size == sizeof(*s);
		if (have)
			ring_copy(data, size, tail, s, sizeof(*s));
		tail += h.size;
	}
	atomic_store_explicit((_Atomic uint64_t *)&m->data_tail, head, memory_order_release);
	return have && !full;
}

/* Its thread's newest fault is the one it sleeps in (a sleeping thread takes no other): that
 * sample, taken in user mode on this page, moments ago, holds the registers the thread faulted with. */
static bool sample_is_fault(const struct sample *s, int tid, uintptr_t page)
{
	int64_t age = (int64_t)(rt_mono_ns() - s->time);
	return (int)s->tid == tid && (s->h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER &&
	       s->abi == PERF_SAMPLE_REGS_ABI_64 && (s->addr & ~((uint64_t)rt.page_size - 1)) == page &&
	       age < (int64_t)SAMPLE_AGE_NS && s->pc == s->ip;
}

bool faultregs_take(struct rt_thread *t, int tid, uintptr_t page, struct fault_regs *out)
{
	if (!busy_take(t))
		return false; /* another handler reads its ring (a late message of the thread's) */
	bool ok = false;
	if (t->fault_ring) {
		struct sample s;
		ok = ring_newest(t->fault_ring, &s) && sample_is_fault(&s, tid, page);
		if (ok)
			*out = (struct fault_regs){ .pc = s.pc, .sp = s.sp, .bp = s.bp, .cpu = (int)s.cpu };
	} else if (!t->fault_tried) {
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
	t->fault_tried = false;
	atomic_store(&t->fault_busy, 0);
}

void faultregs_fork_child(void)
{
	for (unsigned i = 0; i < WATCH_MAX; i++)
		atomic_store(&fr.watched[i], NULL);
}
