/* fltrace's own fds live in a private fd table, shared by the runtime's threads only: a keeper
 * thread unshares it and starts the others; program threads borrow an fd for one call or ask the keeper. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fltrace/fmt.h"
#include "fltrace/outfile.h"
#include "rt.h"
#include "threads.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

#define RT_FDS_MAX 65536
#define KEEP_MAX 4096

/* A request to the keeper: one at a time (program threads queue on `lock`). */
struct keeper_req {
	int (*fn)(void *);
	void *arg;
	int ret;
};

static struct {
	pthread_t thread;
	_Atomic int tid;                       /* the keeper; 0 before it runs and in a fork child */
	_Atomic uint64_t owned[RT_FDS_MAX / 64]; /* numbers of the private table that are ours */
	struct rt_spinlock lock;
	_Atomic uint32_t posted, done;         /* futex words */
	struct keeper_req *req;
	int keep[KEEP_MAX];                    /* program-table fds the new table takes over (fork) */
	unsigned nkeep;
	_Atomic uint32_t started;              /* 1: unshared and ready, -errno: failed (as unsigned) */
} kp;

static __thread bool tls_private;

/* First thing in a thread the keeper created (handlers, stats): it shares the keeper's table. */
void fdtable_thread_enter(void)
{
	tls_private = true;
}

bool rt_on_own_thread(void)
{
	return tls_private;
}

static void fd_mark(int fd, bool on)
{
	if (fd < 0 || fd >= RT_FDS_MAX)
		return;
	if (on)
		atomic_fetch_or(&kp.owned[fd / 64], 1ull << (fd % 64));
	else
		atomic_fetch_and(&kp.owned[fd / 64], ~(1ull << (fd % 64)));
}

static bool fd_owned(int fd)
{
	return fd >= 0 && fd < RT_FDS_MAX && (atomic_load(&kp.owned[fd / 64]) >> (fd % 64) & 1);
}

/* Whether fd, in the calling thread's hands, means something else than in the private table. */
static bool fd_elsewhere(int fd)
{
	return !tls_private && fd_owned(fd) && atomic_load(&kp.tid) != 0;
}

/* ---- the keeper ---- */

/* Its copy of the program's table holds only what it was asked to keep: a program fd we held
 * (the write end of its pipe, say) would change what the program sees (no EOF for its reader). */
static void keeper_close_inherited(void)
{
	unsigned lo = 0;
	for (unsigned i = 0; i < kp.nkeep; i++) { /* kp.keep is sorted */
		unsigned fd = (unsigned)kp.keep[i];
		if (fd > lo)
			syscall(SYS_close_range, lo, fd - 1, 0);
		lo = fd + 1;
	}
	syscall(SYS_close_range, lo, ~0u, 0);
	/* 0, 1 and 2 stay taken, by /dev/null: a library writing to stderr on one of our threads
	 * must not write into the trace. */
	int fd;
	while ((fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC)) >= 0 && fd <= 2)
		;
	if (fd > 2)
		syscall(SYS_close, fd);
}

static void keeper_started(int how)
{
	atomic_store(&kp.started, (uint32_t)how);
	rt_wake_waiters(&kp.started);
}

static void *keeper_main(void *arg)
{
	rt_tls_internal = 1;
	tls_private = true;
	/* Its faults on the program's memory (none expected) are served without the stack signal. */
	struct rt_thread *self = threads_get(rt_gettid());
	if (self)
		atomic_store(&self->busy, 1);
	if (unshare(CLONE_FILES) < 0) {
		keeper_started(-errno);
		return NULL;
	}
	keeper_close_inherited();
	/* A pidfd of itself, held in its own table: the kernel keeps the pidfd's inode alive while
	 * one is open, so each borrow's pidfd_open costs half as much (6-13 us instead of 13-21 here). */
	if (rt_fd_own((int)syscall(SYS_pidfd_open, rt_gettid(), PIDFD_THREAD)) < 0) {
		keeper_started(-errno);
		return NULL;
	}
	atomic_store(&kp.tid, rt_gettid());
	keeper_started(1);
	for (uint32_t seen = 0;;) {
		uint32_t now;
		while ((now = atomic_load(&kp.posted)) == seen)
			rt_wait_while(&kp.posted, seen);
		seen = now;
		kp.req->ret = kp.req->fn(kp.req->arg);
		atomic_store(&kp.done, seen);
		rt_wake_waiters(&kp.done);
	}
	return NULL;
}

/* The keeper's new table starts with the fds marked ours while there was none (a fork child's
 * copies of the parent's mapped files): sorted, as the bitmap is. */
int fdtable_start(void)
{
	kp.nkeep = 0;
	/* By words of the bitmap: fd by fd, the 65,536 tests took 80 us of every process's start. */
	for (int w = 0; w < RT_FDS_MAX / 64 && kp.nkeep < KEEP_MAX; w++)
		for (uint64_t bits = atomic_load(&kp.owned[w]); bits && kp.nkeep < KEEP_MAX; bits &= bits - 1)
			kp.keep[kp.nkeep++] = w * 64 + __builtin_ctzll(bits);
	atomic_store(&kp.started, 0);
	rt_tls_internal++; /* the new thread's TLS vector comes from untracked memory */
	int err = rt_thread_create(&kp.thread, keeper_main, NULL, "fltrace-fds");
	rt_tls_internal--;
	if (err != 0)
		return -err;
	int st;
	while ((st = (int)atomic_load(&kp.started)) == 0)
		rt_wait_while(&kp.started, 0);
	if (st < 0)
		return st;
	/* What the keeper kept is in the private table now, and no longer in the program's. */
	for (unsigned i = 0; i < kp.nkeep; i++)
		syscall(SYS_close, kp.keep[i]);
	kp.nkeep = 0;
	return 0;
}

/* In a fork child: the parent's private table is not ours (the child's table is a copy of the
 * forking thread's), so its numbers mean nothing here until the child's keeper starts. */
void fdtable_fork_child(void)
{
	atomic_store(&kp.tid, 0);
	for (unsigned i = 0; i < RT_FDS_MAX / 64; i++)
		atomic_store(&kp.owned[i], 0);
	rt_spin_reset(&kp.lock);
	atomic_store(&kp.posted, 0);
	atomic_store(&kp.done, 0);
}

int fdtable_call(int (*fn)(void *), void *arg)
{
	if (tls_private || atomic_load(&kp.tid) == 0)
		return fn(arg);
	struct keeper_req req = { .fn = fn, .arg = arg };
	rt_spin_lock(&kp.lock, LOCK_FDS);
	kp.req = &req;
	uint32_t ticket = atomic_load(&kp.posted) + 1;
	atomic_store(&kp.posted, ticket);
	rt_wake_waiters(&kp.posted);
	uint32_t d;
	while ((d = atomic_load(&kp.done)) != ticket)
		rt_wait_while(&kp.done, d);
	rt_spin_unlock(&kp.lock, LOCK_FDS);
	return req.ret;
}

/* ---- fds of the private table ---- */

int rt_fd_own(int fd)
{
	if (fd >= 0 && (tls_private || atomic_load(&kp.tid) == 0))
		fd_mark(fd, true); /* else a program-table fd (a fork child's window): not ours to mark */
	return fd;
}

static int close_here(void *arg)
{
	return (int)syscall(SYS_close, (int)(intptr_t)arg);
}

void rt_fd_close(int fd)
{
	if (!fd_owned(fd))
		return; /* nothing of ours (-1, or a number of the parent's table in a fork child) */
	fd_mark(fd, false);
	fdtable_call(close_here, (void *)(intptr_t)fd);
}

/* An fd just opened (or -1, errno set) on the keeper: ours, with its stat if asked. */
static int own_opened(int fd, struct stat *st)
{
	if (fd < 0)
		return -errno;
	if (st && fstat(fd, st) < 0) {
		int err = -errno;
		syscall(SYS_close, fd);
		return err;
	}
	return rt_fd_own(fd);
}

struct open_req {
	const char *path;
	int flags;
	mode_t mode;
	struct stat *st;
};

static int open_here(void *arg)
{
	struct open_req *r = arg;
	/* A file we create: 0600, never through a link, never over a file that is not ours. */
	if (r->flags & O_CREAT) {
		int fd = outfile_open(r->path, r->flags);
		if (fd < 0)
			return fd;
		return own_opened(fd, r->st);
	}
	int fd = (int)syscall(SYS_openat, AT_FDCWD, r->path, r->flags | O_CLOEXEC, r->mode);
	return own_opened(fd, r->st);
}

int rt_fd_open(const char *path, int flags, mode_t mode, struct stat *st)
{
	struct open_req r = { .path = path, .flags = flags, .mode = mode, .st = st };
	return fdtable_call(open_here, &r);
}

/* A program fd of thread `tid`, as a file description of our own (no shared offset or flags):
 * reopened through /proc; where that is refused (permissions changed), the same description. */
struct take_req {
	int tid, progfd;
	struct stat *st;
};

static int take_here(void *arg)
{
	struct take_req *t = arg;
	char path[80];
	struct fmt f;
	fmt_init(&f, path, sizeof(path));
	fmt_str(&f, "/proc/self/task/");
	fmt_u64(&f, (uint64_t)t->tid);
	fmt_str(&f, "/fd/");
	fmt_u64(&f, (uint64_t)t->progfd);
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && tls_private) {
		int pidfd = (int)syscall(SYS_pidfd_open, t->tid, PIDFD_THREAD);
		if (pidfd >= 0) {
			fd = (int)syscall(SYS_pidfd_getfd, pidfd, t->progfd, 0);
			syscall(SYS_close, pidfd);
		}
	}
	return own_opened(fd, t->st);
}

int rt_fd_take_program(int progfd, struct stat *st)
{
	struct take_req t = { .tid = rt_gettid(), .progfd = progfd, .st = st };
	return fdtable_call(take_here, &t);
}

/* ---- a private fd in a program thread's hands, for one call ---- */

/* pidfd_getfd copies the fd into the caller's table (close-on-exec) for as long as the call
 * takes; callers hold rt.lock where they can, so that a fork never copies a borrowed fd. */
int rt_fd_borrow(int fd, bool *borrowed)
{
	*borrowed = false;
	if (!fd_elsewhere(fd))
		return fd;
	int pidfd = (int)syscall(SYS_pidfd_open, atomic_load(&kp.tid), PIDFD_THREAD);
	if (pidfd < 0)
		return -1;
	int b = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	int err = errno;
	syscall(SYS_close, pidfd);
	errno = err;
	*borrowed = b >= 0;
	return b;
}

void rt_fd_unborrow(int b, bool borrowed)
{
	if (borrowed) {
		int err = errno;
		syscall(SYS_close, b);
		errno = err;
	}
}

/* Several at once, for a fork: the copies stay in the program's table until rt_fd_unborrow. */
void rt_fd_borrow_many(const int *fds, int *out, unsigned n)
{
	int pidfd = -1;
	for (unsigned i = 0; i < n; i++) {
		out[i] = -1;
		if (fds[i] < 0)
			continue;
		if (!fd_elsewhere(fds[i]))
			out[i] = (int)syscall(SYS_fcntl, fds[i], F_DUPFD_CLOEXEC, 0);
		else if (pidfd >= 0 || (pidfd = (int)syscall(SYS_pidfd_open, atomic_load(&kp.tid), PIDFD_THREAD)) >= 0)
			out[i] = (int)syscall(SYS_pidfd_getfd, pidfd, fds[i], 0);
	}
	if (pidfd >= 0)
		syscall(SYS_close, pidfd);
}

/* ---- the program's stderr, for our threads' messages ---- */

/* Our threads have /dev/null as fd 2: a message goes to the program's stderr of the moment,
 * borrowed from the main thread (a copy held all along would keep a pipe's reader from EOF). */
int rt_fd_program_stderr(bool *borrowed)
{
	*borrowed = false;
	if (!tls_private)
		return STDERR_FILENO;
	int pidfd = (int)syscall(SYS_pidfd_open, rt.pid, 0);
	if (pidfd < 0)
		return -1;
	int b = (int)syscall(SYS_pidfd_getfd, pidfd, STDERR_FILENO, 0);
	syscall(SYS_close, pidfd);
	*borrowed = b >= 0;
	return b;
}
