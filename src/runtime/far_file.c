/* The `file:<dir>` backend: evicted pages kept in an unnamed file (O_TMPFILE) in <dir>, page `slot`
 * at offset slot * page size, as swap keeps them on an SSD; a fork child gets a copy of the file. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "far.h"

static struct {
	const char *dir;
	int fd;        /* ours (the private table), or a fork child's program-table number until it starts */
	int child_fd;  /* the copy made for a fork child, in the program's table, during the fork */
	uint64_t size; /* bytes of the file that hold pages (slots handed out so far) */
} ff = { .fd = -1, .child_fd = -1 };

static int file_open_tmp(bool ours)
{
	int flags = O_TMPFILE | O_RDWR | O_CLOEXEC;
	if (ours)
		return rt_fd_open(ff.dir, flags, 0600, NULL);
	return (int)syscall(SYS_openat, AT_FDCWD, ff.dir, flags, 0600);
}

static int file_init(const char *arg)
{
	ff.dir = arg;
	ff.fd = file_open_tmp(true);
	return ff.fd < 0 ? -errno : 0;
}

/* pwrite/pread of n whole pages (one call unless it comes back short), on whichever table holds
 * our fd for this thread. A short write means the file system is full (or the file too big). */
static int file_io(bool write, uint32_t slot, void *page, unsigned n)
{
	size_t len = (size_t)n << rt.page_shift;
	bool borrowed;
	int fd = rt_fd_borrow(ff.fd, &borrowed);
	if (fd < 0)
		return -EBADF;
	off_t off = (off_t)slot << rt.page_shift;
	size_t done = 0;
	int err = 0;
	while (done < len) {
		/* Raw calls: the C library's would be our own wrappers (preload/syscalls.c). */
		ssize_t n = syscall(write ? SYS_pwrite64 : SYS_pread64, fd, (char *)page + done,
				    len - done, off + (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : write ? -ENOSPC : -EIO;
			break;
		}
		done += (size_t)n;
	}
	rt_fd_unborrow(fd, borrowed);
	if (!err && write && (uint64_t)off + len > ff.size)
		ff.size = (uint64_t)off + len;
	return err;
}

static int file_put(uint32_t first, const void *pages, unsigned n)
{
	return file_io(true, first, (void *)pages, n);
}

static int file_get(uint32_t first, void *pages, unsigned n)
{
	return file_io(false, first, pages, n);
}

/* Freed slots give their blocks back to the file system (a hole), so that the file holds only
 * pages that are far now; a file system without holes just keeps the blocks for the next page. */
static void file_free(uint32_t first, unsigned n)
{
	bool borrowed;
	int fd = rt_fd_borrow(ff.fd, &borrowed);
	if (fd < 0)
		return;
	syscall(SYS_fallocate, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)first << rt.page_shift,
		(off_t)n << rt.page_shift);
	rt_fd_unborrow(fd, borrowed);
}

/* The child's copy, made by the kernel (copy_file_range) while rt.lock keeps every page still. */
static int file_fork_prepare(void)
{
	ff.child_fd = file_open_tmp(false);
	if (ff.child_fd < 0)
		return -errno;
	bool borrowed;
	int fd = rt_fd_borrow(ff.fd, &borrowed);
	loff_t in = 0, out = 0;
	int err = 0;
	while (fd >= 0 && (uint64_t)in < ff.size) {
		ssize_t n = syscall(SYS_copy_file_range, fd, &in, ff.child_fd, &out, ff.size - (uint64_t)in, 0);
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
	}
	if (fd < 0)
		err = -EBADF;
	rt_fd_unborrow(fd, borrowed);
	return err;
}

static void file_fork_parent(void)
{
	if (ff.child_fd >= 0)
		syscall(SYS_close, ff.child_fd);
	ff.child_fd = -1;
}

static void file_fork_child(void)
{
	ff.fd = rt_fd_own(ff.child_fd); /* kept by the child's fd keeper when its runtime starts */
	ff.child_fd = -1;
}

static const char *file_describe(void)
{
	return ff.dir;
}

const struct far_backend far_file = {
	.init = file_init,
	.put = file_put,
	.get = file_get,
	.free = file_free,
	.fork_prepare = file_fork_prepare,
	.fork_parent = file_fork_parent,
	.fork_child = file_fork_child,
	.describe = file_describe,
};
