/* Small helpers of the runtime that must not allocate or touch program memory:
 * clocks, untracked memory, futex waits, logging to stderr. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fltrace/fmt.h"
#include "rt.h"

uint64_t rt_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t rt_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A start-up wait: spinning on sched_yield instead kept a creator at normal priority on its CPU,
 * so that CPU never went idle to pull over the new thread queued behind another process's on the
 * other CPU (a python3's start with a test suite beside it: the runtime's keeper yielded 24,000
 * times, 12 ms, before its third thread first ran). */
void rt_wait_while(_Atomic uint32_t *word, uint32_t seen)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

void rt_wake_waiters(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

uint64_t rt_time_add(_Atomic uint64_t *counter, uint64_t t0)
{
	uint64_t now = rt_mono_ns();
	atomic_fetch_add_explicit(counter, now - t0, memory_order_relaxed);
	return now;
}

/* The raw system call: our own mmap wrapper would track it. */
void *rt_map(size_t len)
{
	void *p = (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void rt_unmap(void *p, size_t len)
{
	if (p && len)
		syscall(SYS_munmap, p, len);
}

int rt_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

/* Raw system calls: the library exports read/pread/write wrappers (preload/syscalls.c), which the
 * runtime's own I/O must not go through. */
ssize_t rt_read(int fd, void *buf, size_t n)
{
	return syscall(SYS_read, fd, buf, n);
}

ssize_t rt_pread(int fd, void *buf, size_t n, off_t off)
{
	return syscall(SYS_pread64, fd, buf, n, off);
}

ssize_t rt_write(int fd, const void *buf, size_t n)
{
	return syscall(SYS_write, fd, buf, n);
}

ssize_t rt_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;
	while (done < len) {
		ssize_t n = rt_write(fd, p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

void rt_log(const char *msg)
{
	char buf[1024];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_str(&f, "fltrace: ");
	fmt_str(&f, msg);
	fmt_char(&f, '\n');
	bool borrowed; /* our threads' fd 2 is /dev/null: the program's, borrowed */
	int fd = rt_fd_program_stderr(&borrowed);
	if (fd >= 0)
		rt_write_all(fd, buf, fmt_len(&f));
	rt_fd_unborrow(fd, borrowed);
}

/* glibc's qsort may call malloc (trap: the heap is tracked memory); these arrays are small.
 * One shell sort, instantiated for the two element types the runtime sorts. */
#define RT_DEFINE_SORT(name, type)                                                     \
	void name(type *v, size_t n)                                                   \
	{                                                                              \
		static const size_t gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };      \
		for (size_t g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++)            \
			for (size_t i = gaps[g]; i < n; i++) {                         \
				type x = v[i];                                         \
				size_t j = i;                                          \
				for (; j >= gaps[g] && v[j - gaps[g]] > x; j -= gaps[g]) \
					v[j] = v[j - gaps[g]];                         \
				v[j] = x;                                              \
			}                                                              \
	}

RT_DEFINE_SORT(rt_sort_u64, uint64_t)
RT_DEFINE_SORT(rt_sort_u32, uint32_t)

#ifndef PIDFD_SELF_THREAD_GROUP
#define PIDFD_SELF_THREAD_GROUP (-10001) /* Linux 6.15; Debian 12's headers predate it */
#endif

/* The ranges process_madvise emptied, from the first: all n, or fewer where a call was refused
 * (an older kernel: not tried again) or stopped part-way. */
static unsigned zap_vectored(const struct iovec *v, unsigned n)
{
	static _Atomic bool refused;
	unsigned done = 0;
	while (done < n && !atomic_load_explicit(&refused, memory_order_relaxed)) {
		unsigned k = n - done < RT_ZAP_MAX ? n - done : RT_ZAP_MAX;
		size_t want = 0;
		for (unsigned i = 0; i < k; i++)
			want += v[done + i].iov_len;
		long r = syscall(SYS_process_madvise, PIDFD_SELF_THREAD_GROUP, v + done, (size_t)k, MADV_DONTNEED, 0);
		if (r < 0 && (errno == ENOSYS || errno == EINVAL || errno == EBADF || errno == EPERM))
			atomic_store_explicit(&refused, true, memory_order_relaxed);
		if ((size_t)r != want)
			break;
		done += k;
	}
	return done;
}

/* Empties n page ranges of this process (MADV_DONTNEED). Each madvise costs a TLB flush of its
 * own, which waits for every other CPU where a thread of this process runs (through the hypervisor
 * on these VMs): 6-8.5 us a page alone, 45-52 us with a thread busy on the other vCPU.
 * process_madvise on this very process (Linux 6.13; PIDFD_SELF, 6.15) empties them all behind one
 * flush: 0.7-1.1 us a page (uffd_floor's slot-zap rows). On a kernel that refuses it, or for what
 * a call left, one madvise per range; and always on a program thread (an eviction at a fork), which
 * a seccomp filter of the program's may confine to the calls it expects. */
void rt_zap_ranges(const struct iovec *v, unsigned n)
{
	unsigned done = rt_on_own_thread() ? zap_vectored(v, n) : 0;
	for (; done < n; done++)
		syscall(SYS_madvise, v[done].iov_base, v[done].iov_len, MADV_DONTNEED);
}

/* The whole of a (/proc) file, up to cap bytes, read with raw system calls; 0 if it cannot be opened. */
size_t rt_read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t len = 0;
	ssize_t n;
	while (len < cap && (n = rt_read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	close(fd);
	return len;
}
