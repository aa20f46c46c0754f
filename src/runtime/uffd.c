/* userfaultfd: opening it with the features the runtime relies on, and every UFFDIO_* ioctl.
 * No other module issues these ioctls; errors come back as -errno. */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fltrace/uffd_move.h"
#include "rt.h"
#include "uffd.h"

/* Every ioctl on our fds: a program thread (mmap and mremap wrappers) borrows the fd from the
 * private table for the call. Returns the ioctl's result, errno set. */
static int uffd_ioctl(int fd, unsigned long req, void *arg)
{
	bool borrowed;
	int b = rt_fd_borrow(fd, &borrowed);
	if (b < 0)
		return -1;
	int ret = ioctl(b, req, arg);
	rt_fd_unborrow(b, borrowed);
	return ret;
}

static int uffd_open_raw(int flags)
{
	int fd = (int)syscall(SYS_userfaultfd, flags);
	if (fd >= 0 || (errno != EPERM && errno != EACCES))
		return fd >= 0 ? fd : -errno;
	/* No CAP_SYS_PTRACE and vm.unprivileged_userfaultfd=0: /dev/userfaultfd may still be open to us. */
	int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -EPERM;
	fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
	int err = errno;
	close(dev);
	return fd >= 0 ? fd : -err;
}

/* THREAD_ID names the faulting thread; with `sigbus`, a fault raises SIGBUS instead of waiting
 * (used for the far store, where a fault can only be a bug of ours: fail loudly, never hang). */
int uffd_open(bool sigbus, uint64_t *features_out)
{
	int fd = uffd_open_raw(O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return fd;
	struct uffdio_api api = { .api = UFFD_API };
	/* The far store's fd is the one UFFDIO_MOVE is issued on (its target must be registered there). */
	api.features = sigbus ? UFFD_FEATURE_SIGBUS | UFFD_FEATURE_MOVE : UFFD_FEATURE_THREAD_ID;
	if (ioctl(fd, UFFDIO_API, &api) < 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	if (!(api.ioctls & (1ull << _UFFDIO_REGISTER)) || (sigbus && !(api.features & UFFD_FEATURE_MOVE))) {
		close(fd);
		return -ENOTSUP;
	}
	if (features_out)
		*features_out = api.features;
	return fd;
}

int uffd_open_remap(void)
{
	int fd = uffd_open_raw(O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return fd;
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_THREAD_ID | UFFD_FEATURE_EVENT_REMAP };
	if (ioctl(fd, UFFDIO_API, &api) < 0 || !(api.features & UFFD_FEATURE_EVENT_REMAP)) {
		int err = errno ? errno : ENOTSUP;
		close(fd);
		return -err;
	}
	return fd;
}

int uffd_register(int fd, uintptr_t start, size_t len)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	return uffd_ioctl(fd, UFFDIO_REGISTER, &reg) < 0 ? -errno : 0;
}

int uffd_unregister(int fd, uintptr_t start, size_t len)
{
	struct uffdio_range r = { .start = start, .len = len };
	return uffd_ioctl(fd, UFFDIO_UNREGISTER, &r) < 0 ? -errno : 0;
}

int uffd_copy(int fd, uintptr_t dst, const void *src, size_t len, bool wake)
{
	struct uffdio_copy c = {
		.dst = dst,
		.src = (uintptr_t)src,
		.len = len,
		.mode = wake ? 0 : UFFDIO_COPY_MODE_DONTWAKE,
	};
	for (;;) {
		if (uffd_ioctl(fd, UFFDIO_COPY, &c) == 0)
			return 0;
		/* EAGAIN: the address space changed under us (mremap, munmap): retry what is left. */
		if (errno == EAGAIN && c.copy > 0 && (size_t)c.copy < c.len) {
			c.dst += (uint64_t)c.copy;
			c.src += (uint64_t)c.copy;
			c.len -= (uint64_t)c.copy;
			c.copy = 0;
			continue;
		}
		/* EAGAIN with nothing copied: an mremap on this fd (rt.loader_uffd) waits for its event
		 * to be read, maybe by this very thread; the caller wakes the faulting thread, which
		 * faults again once the event is through. */
		return -errno;
	}
}

int uffd_wake(int fd, uintptr_t start, size_t len)
{
	struct uffdio_range r = { .start = start, .len = len };
	return uffd_ioctl(fd, UFFDIO_WAKE, &r) < 0 ? -errno : 0;
}

bool uffd_page_mapped(uintptr_t page)
{
	unsigned char vec = 0;
	return syscall(SYS_mincore, page, rt.page_size, &vec) == 0 && (vec & 1);
}

/* FLTRACE_TEST_MOVE_MISREPORT: every Nth move is done but answered EEXIST, the whole run with it,
 * the way Linux 6.18 answers a run it moved on after a transient EAGAIN (see uffd_move_landed). */
static long uffd_move_misreport(long moved)
{
	static uint64_t moves;
	uint64_t every = rt.cfg.test_move_misreport;
	if (!every || moved < (long)rt.page_size || ++moves % every)
		return moved;
	return -EEXIST;
}

/* How many pages from src/dst on went all the same, though the move's answer stopped before them:
 * each has left src and dst holds a page (dst is a fresh far slot, so nothing else put one there).
 * Linux 6.18's move loop keeps a transient EAGAIN as its error while it moves on, so a run it
 * moved whole can come back short, down to EEXIST for all of it (seen: 4 in 111,171 moves of
 * 64-page runs while other threads touched them). Believed, a moved page was taken for resident:
 * its slot was freed as never filled and emptied, and its next touch got zeros (GNU sort: once in
 * CI, once in 52 runs at -L 1 here); a single page's next fault never ended (xz -3 at -L 16, twice
 * in 38 million moves). Two mincore calls a chunk, on this failure path only. */
static size_t uffd_move_landed(uintptr_t dst, uintptr_t src, size_t len)
{
	enum { CHUNK = 64 };
	unsigned char vs[CHUNK], vd[CHUNK];
	size_t went = 0;
	while (went < len) {
		size_t n = (len - went) >> rt.page_shift;
		n = n < CHUNK ? n : CHUNK;
		size_t bytes = n << rt.page_shift;
		if (syscall(SYS_mincore, src + went, bytes, vs) != 0 || syscall(SYS_mincore, dst + went, bytes, vd) != 0)
			break;
		size_t i = 0;
		while (i < n && !(vs[i] & 1) && (vd[i] & 1))
			i++;
		went += i << rt.page_shift;
		if (i < n)
			break;
	}
	if (went)
		atomic_fetch_add(&rt.stats.evict_move_misreported, 1);
	return went;
}

long uffd_move(int fd, uintptr_t dst, uintptr_t src, size_t len)
{
	struct uffdio_move m = { .dst = dst, .src = src, .len = len, .mode = 0 };
	/* A partial move (m.move > 0) returns what went: the caller deals with the rest page by page. */
	long moved = uffd_ioctl(fd, UFFDIO_MOVE, &m) == 0 || m.move > 0 ? (long)m.move : -errno;
	moved = uffd_move_misreport(moved);
	size_t done = moved > 0 ? (size_t)moved : 0;
	size_t more = done < len ? uffd_move_landed(dst + done, src + done, len - done) : 0;
	return more ? (long)(done + more) : moved;
}
