/* libunwind's memory validation without its pipes: libunwind 1.6 checks that an address is readable
 * by writing a byte of it into a pipe it creates (two fds per copy of the library, in the program's
 * table). Its imports of pipe2/read/write/close/syscall are pointed here instead, and the check is
 * made by a system call that reads the address and needs no fd. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "got.h"
#include "rt.h"
#include "unwcheck.h"

/* What libunwind keeps as its pipe's two ends: a number no fd ever has. */
#define UNW_FAKE_FD (-2)

/* libunwind's write_validate reads the pipe first (to keep it from filling up): nothing to read. */
static ssize_t unw_read(int fd, void *buf, size_t n)
{
	if (fd == UNW_FAKE_FD) {
		errno = EAGAIN;
		return -1;
	}
	return syscall(SYS_read, fd, buf, n);
}

static int unw_close(int fd)
{
	return fd == UNW_FAKE_FD ? 0 : (int)syscall(SYS_close, fd);
}

static int unw_pipe2(int fds[2], int flags)
{
	fds[0] = fds[1] = UNW_FAKE_FD;
	return 0;
}

/* rt_sigprocmask copies its new set from user memory before it looks at `how`: with an invalid
 * `how` it changes nothing, and fails with EFAULT exactly when the address cannot be read (a
 * missing page of tracked memory is brought in first, as for the pipe's write). */
static bool unw_readable(const void *addr)
{
	long r = syscall(SYS_rt_sigprocmask, -1, addr, NULL, 8);
	return !(r < 0 && errno == EFAULT);
}

/* The pipe's write, by write() or by syscall(SYS_write) (how the library was configured). */
static ssize_t unw_write(int fd, const void *buf, size_t n)
{
	if (fd != UNW_FAKE_FD)
		return syscall(SYS_write, fd, buf, n);
	int saved = errno;
	bool ok = unw_readable(buf);
	errno = ok ? saved : EFAULT;
	return ok ? 1 : -1;
}

static long unw_syscall(long nr, long a, long b, long c, long d, long e, long f)
{
	if (nr == SYS_write && (int)a == UNW_FAKE_FD) /* an int through varargs: the upper half is not defined */
		return unw_write((int)a, (const void *)b, (size_t)c);
	return syscall(nr, a, b, c, d, e, f);
}

static const struct {
	const char *name;
	void *fn;
} unw_hooks[] = {
	{ "pipe2", (void *)unw_pipe2 },
	{ "read", (void *)unw_read },
	{ "write", (void *)unw_write },
	{ "close", (void *)unw_close },
	{ "syscall", (void *)unw_syscall },
};

static void *unw_hook_of(const char *name)
{
	for (size_t i = 0; i < sizeof(unw_hooks) / sizeof(unw_hooks[0]); i++)
		if (strcmp(unw_hooks[i].name, name) == 0)
			return unw_hooks[i].fn;
	return NULL;
}

static void *unw_replacement(const char *name, void *arg)
{
	(void)arg;
	return unw_hook_of(name);
}

static int unw_patch_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size, (void)arg;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libunwind"))
		got_rebind(info, unw_replacement, NULL);
	return 0;
}

/* Before libunwind's first use (it creates its pipes then). */
void unwcheck_init(void)
{
	dl_iterate_phdr(unw_patch_object, NULL);
}
