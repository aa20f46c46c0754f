/* What a faulting thread is doing, as /proc tells it: its system call (or user-mode fault) with pc
 * and sp, and its pending and blocked signals. Read by the handler threads only. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "fltrace/fmt.h"
#include "fault.h"
#include "faultregs.h"
#include "threads.h"
#include "handler.h"
#include "sysstack.h"

#define RUNNING_WAIT_NS (20 * 1000 * 1000ull)  /* a thread still on its way to sleep in its fault */

static const char *parse_num(const char *p, uint64_t *v, bool *neg)
{
	while (*p == ' ')
		p++;
	*neg = *p == '-';
	if (*neg)
		p++;
	uint64_t x = 0;
	if (p[0] == '0' && p[1] == 'x') {
		for (p += 2;; p++) {
			unsigned d = (unsigned)(*p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : 99);
			if (d > 15)
				break;
			x = x * 16 + d;
		}
	} else {
		while (*p >= '0' && *p <= '9')
			x = x * 10 + (uint64_t)(*p++ - '0');
	}
	*v = x;
	return p;
}

static int thread_procfd_open_in(struct rt_thread *t, const char *dir, int tid)
{
	struct fmt f;
	char path[64];
	fmt_init(&f, path, sizeof(path));
	fmt_str(&f, dir);
	fmt_u64(&f, (uint64_t)tid);
	fmt_str(&f, "/syscall");
	t->procfd = rt_fd_own(open(path, O_RDONLY | O_CLOEXEC));
	return t->procfd < 0 ? -errno : 0;
}

/* A thread not of this process whose faults come to our userfaultfd shares our memory: a vfork
 * child (dash runs simple commands so; each faulted without a stack before, as /proc/self/task
 * does not list it). Its own /proc entry tells its state; its stack is read by the handler. */
static int thread_procfd_open(struct rt_thread *t, int tid)
{
	int err = thread_procfd_open_in(t, "/proc/self/task/", tid);
	t->foreign = false;
	if (err != -ENOENT)
		return err;
	err = thread_procfd_open_in(t, "/proc/", tid);
	t->foreign = err == 0;
	return err;
}

/* A program thread's file, opened before the program can drop root for good: a process whose
 * credentials change becomes non-dumpable, and its /proc files are root's alone from then on (an
 * fd opened before still reads: the thread group is its own). Called as a process's runtime
 * starts (a fork child's too) for the thread that starts it, on the keeper, whose table the fd
 * belongs in. */
void handler_open_procfile(int tid)
{
	struct rt_thread *t = threads_get(tid);
	if (t && t->procfd < 0)
		thread_procfd_open(t, tid);
}

int thread_syscall_state(struct rt_thread *t, int tid, struct syscall_state *s)
{
	char buf[256];
	for (int attempt = 0; attempt < 2; attempt++) {
		if (t->procfd < 0) {
			int err = thread_procfd_open(t, tid);
			if (err < 0)
				return err;
		}
		ssize_t n = rt_pread(t->procfd, buf, sizeof(buf) - 1, 0);
		/* "running": the message can arrive before the thread has finished going to sleep in
		 * its fault; it will within microseconds, or later if it was preempted on the way (a
		 * busy machine): then yield to it. Never guess (it would read as system call 0). */
		uint64_t since = 0;
		for (int tries = 0; n > 0 && buf[0] == 'r'; tries++) {
			if (tries < 1000) {
				__builtin_ia32_pause();
			} else {
				uint64_t now = rt_mono_ns();
				if (!since)
					since = now;
				else if (now - since > RUNNING_WAIT_NS)
					break;
				sched_yield();
			}
			n = rt_pread(t->procfd, buf, sizeof(buf) - 1, 0);
		}
		if (n > 0 && buf[0] == 'r')
			return -EAGAIN;
		if (n > 0) {
			buf[n] = '\0';
			uint64_t v;
			bool neg;
			const char *p = parse_num(buf, &v, &neg);
			s->nr = neg ? -(long)v : (long)v;
			if (s->nr >= 0)
				for (int i = 0; i < 6; i++)
					p = parse_num(p, &v, &neg);
			p = parse_num(p, &s->sp, &neg);
			parse_num(p, &s->pc, &neg);
			return 0;
		}
		/* The thread id was reused by a new thread, or the file went stale: open again. The
		 * rseq area told belongs to the thread that had the id (its memory may be gone). */
		rt_fd_close(t->procfd);
		t->procfd = -1;
		atomic_store(&t->rseq_cpu, NULL);
		t->rseq_untracked = 0;
		t->stacks_reused = t->stacks_new = 0;
		t->unwinds = t->unwinds_lacked_fp = 0;
		faultregs_forget(t);
		sysstack_thread_gone();
	}
	return -ESRCH;
}

/* SigPnd and SigBlk of a thread (its own pending signals, and the ones it blocks); false if it is
 * gone. */
static bool thread_signal_masks(int tid, uint64_t *pending, uint64_t *blocked)
{
	char path[64], buf[2048];
	struct fmt f;
	fmt_init(&f, path, sizeof(path));
	fmt_str(&f, "/proc/self/task/");
	fmt_u64(&f, (uint64_t)tid);
	fmt_str(&f, "/status");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = rt_read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *keys[2] = { "SigPnd:", "SigBlk:" };
	uint64_t *out[2] = { pending, blocked };
	for (int k = 0; k < 2; k++) {
		const char *p = strstr(buf, keys[k]);
		*out[k] = 0;
		if (!p)
			continue;
		bool neg;
		char hex[24] = "0x";
		p += 7;
		while (*p == '\t' || *p == ' ')
			p++;
		memcpy(hex + 2, p, 16);
		hex[18] = '\0';
		parse_num(hex, out[k], &neg);
	}
	return true;
}

static bool has_sig(uint64_t mask)
{
	return (mask >> (rt.sig - 1)) & 1;
}

/* Whether a thread blocks our signal (then it never runs the stack handler); true if it is gone. */
bool thread_blocks_signal(int tid)
{
	uint64_t pending, blocked;
	return !thread_signal_masks(tid, &pending, &blocked) || has_sig(blocked);
}

/* Where the stack signal queued to a thread stands: blocked and still pending means it cannot be
 * delivered. Blocked but no longer pending means the thread is taking it right now (the kernel
 * blocks a signal while its handler runs): it is only late. */
enum sig_fate thread_signal_fate(int tid)
{
	uint64_t pending, blocked;
	if (!thread_signal_masks(tid, &pending, &blocked))
		return SIG_GONE;
	return has_sig(blocked) && has_sig(pending) ? SIG_HELD : SIG_COMING;
}

/* Whether the thread still sleeps where it was seen (same system call or none, pc and sp): an
 * unrelated signal may have woken it meanwhile (its page is there), and then its stack moves. */
bool still_in_state(struct rt_thread *t, int tid, const struct syscall_state *was)
{
	struct syscall_state s;
	return thread_syscall_state(t, tid, &s) == 0 && s.nr == was->nr && s.pc == was->pc && s.sp == was->sp;
}
