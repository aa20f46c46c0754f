/* Unit test of the far-memory backends outside a traced process: each backend of the table, and the
 * file backend's round trips, its copy for a fork child, and a failed write reported, not hidden. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../../src/runtime/far.h"

struct rt rt = { .page_size = 4096, .page_shift = 12 };
static int failures;

/* The runtime's fd calls, as a program without a private fd table has them. */
int rt_fd_open(const char *path, int flags, mode_t mode, struct stat *st)
{
	(void)st;
	return open(path, flags, mode);
}
int rt_fd_borrow(int fd, bool *borrowed)
{
	*borrowed = false;
	return fd;
}
void rt_fd_unborrow(int b, bool borrowed)
{
	(void)b;
	(void)borrowed;
}
int rt_fd_own(int fd)
{
	return fd;
}

extern const struct far_backend far_mem, far_file;

static void check(int ok, const char *name, const char *detail)
{
	if (ok)
		printf("PASS far_%s\n", name);
	else {
		printf("FAIL far_%s: %s\n", name, detail);
		failures++;
	}
}

static void fill(unsigned char *p, unsigned seed)
{
	for (unsigned i = 0; i < 4096; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7);
}

int main(void)
{
	unsigned char page[4096], back[4096];
	char dir[] = "/tmp/fltrace-far-test.XXXXXX";
	if (!mkdtemp(dir)) {
		printf("FAIL far_tmpdir: %s\n", strerror(errno));
		return 1;
	}

	/* mem: the staging slot is the medium, no put or get. */
	check(far_mem.init(NULL, 16) == 0 && !far_mem.put && !far_mem.get && far_mem.describe,
	      "mem_is_the_staging_store", "mem has a put or get, or no init");

	/* file: 300 pages out of order, read back byte for byte; a slot written twice keeps the last. */
	int err = far_file.init(dir, 300);
	check(err == 0 && strcmp(far_file.describe(), dir) == 0, "file_init", strerror(-err));
	int ok = 1;
	for (unsigned s = 0; s < 300; s++) {
		unsigned slot = (s * 7) % 300;
		fill(page, slot);
		ok &= far_file.put(slot, page) == 0;
	}
	fill(page, 1000);
	ok &= far_file.put(5, page) == 0;
	for (unsigned slot = 0; slot < 300 && ok; slot++) {
		fill(page, slot == 5 ? 1000 : slot);
		ok &= far_file.get(slot, back) == 0 && memcmp(page, back, sizeof(page)) == 0;
	}
	check(ok, "file_round_trips", "a page read back differs from the one written");

	/* The file is unnamed: nothing in the directory. */
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s)\"", dir);
	check(system(cmd) == 0, "file_unnamed", "the directory is not empty");

	/* Fork: the child's copy holds every page as it was; the parent's later writes do not reach it. */
	err = far_file.fork_prepare();
	fill(page, 77);
	int perr = far_file.put(9, page); /* the parent, after the fork */
	far_file.fork_child();            /* from here on, the child's copy */
	ok = err == 0 && perr == 0;
	for (unsigned slot = 0; slot < 300 && ok; slot++) {
		fill(page, slot == 5 ? 1000 : slot);
		ok &= far_file.get(slot, back) == 0 && memcmp(page, back, sizeof(page)) == 0;
	}
	check(ok, "file_fork_copy", "the child's copy differs from the parent's pages at the fork");

	/* A full medium: the write fails with an error, never silently. */
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit small = { 4096 * 400, 4096 * 400 }, old;
	getrlimit(RLIMIT_FSIZE, &old);
	setrlimit(RLIMIT_FSIZE, &small);
	fill(page, 3);
	err = far_file.put(1000, page); /* past 400 pages */
	setrlimit(RLIMIT_FSIZE, &old);
	check(err == -EFBIG, "file_full_reported", err ? strerror(-err) : "the write succeeded");
	/* A page past the end was never written: reading it fails instead of returning zeros. */
	err = far_file.get(2000, back);
	check(err < 0, "file_unwritten_refused", "a page never written read back");

	/* Not a directory that takes an unnamed file. */
	check(far_file.init("/proc", 1) < 0, "file_bad_dir_refused", "init in /proc succeeded");
	rmdir(dir);
	return failures ? 1 : 0;
}
