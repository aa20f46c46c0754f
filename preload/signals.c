/* Interposed signal calls: the program may neither block nor take over the signal that asks a
 * thread for its stack, and its own handlers run behind an entry of fltrace's (program_signal). */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../src/runtime/rt.h"
#include "../src/runtime/handler.h"

#define EXPORT __attribute__((visibility("default")))

typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);

/* The program's own handlers run behind fltrace's entry (program_signal): the kernel sees that
 * entry, the program sees its own handler (sigaction's old action, signal's answer). The entry lets
 * a thread that such a signal took out of its fault take its stack signal first
 * (stack_before_program_handler), so that the stack signal can go once the page is in place. A
 * handler installed by a raw system call runs without it. */
typedef void (*action_fn)(int, siginfo_t *, void *);
static struct {
	_Atomic(action_fn) fn;
	struct sigaction as_given;
} program_actions[_NSIG];

/* Called with three arguments whether or not it was installed with SA_SIGINFO: on x86-64 a
 * one-argument handler ignores the other two registers. */
static void program_signal(int sig, siginfo_t *si, void *uc)
{
	action_fn fn = atomic_load(&program_actions[sig].fn); /* the one installed at delivery */
	struct program_alt was = stack_before_program_handler(uc);
	if (fn)
		fn(sig, si, uc);
	stack_after_program_handler(was); /* not reached if it jumps out: harmless (stack.c) */
}

/* The old action as the program installed it: its handler where the kernel has the entry; where a
 * one-shot handler (SA_RESETHAND) was reset, without the SA_SIGINFO the entry added. */
static void program_view(const struct sigaction *as_given, struct sigaction *old)
{
	if (old->sa_sigaction == program_signal)
		*old = *as_given;
	else if (old->sa_handler == SIG_DFL && (as_given->sa_flags & SA_RESETHAND) &&
		 !(as_given->sa_flags & SA_SIGINFO))
		old->sa_flags &= ~SA_SIGINFO;
}

/* The action as the kernel keeps the program's (flags it adds, SIGKILL and SIGSTOP out of the
 * mask): read back, with the program's handler, SA_SIGINFO and stack-signal bit put back. */
static struct sigaction as_installed(int sig, const struct sigaction *sa)
{
	struct sigaction kept;
	if (rt_real_sigaction(sig, NULL, &kept) < 0 || kept.sa_sigaction != program_signal)
		return *sa; /* delivered meanwhile and reset (SA_RESETHAND), or changed again */
	kept.sa_sigaction = sa->sa_sigaction;
	kept.sa_flags = (kept.sa_flags & ~SA_SIGINFO) | (sa->sa_flags & SA_SIGINFO);
	if (rt.sig > 0 && sigismember(&sa->sa_mask, rt.sig))
		sigaddset(&kept.sa_mask, rt.sig);
	return kept;
}

/* One signal's entry in the table and its action in the kernel change together, one thread at a
 * time: two threads installing at once could leave the entry running the handler the kernel was
 * not last given. Held with every signal blocked: a handler that jumps out (siglongjmp) would
 * otherwise leave it held for good, and one that installs a handler would wait for itself. The
 * section takes microseconds: a lock held for LOCK_STALE_NS is one a fork child inherited from a
 * thread it does not have, and is taken over. (A vfork child shares the table with its parent:
 * POSIX lets it call nothing but _exit and exec.) */
#define LOCK_STALE_NS (1000 * 1000 * 1000ull)
static _Atomic uint64_t action_locks[_NSIG]; /* the holder's thread id, 0 if free */

struct action_lock {
	int sig;      /* 0: nothing locked (a signal past the table) */
	uint64_t was; /* the signal mask to restore */
};

static struct action_lock action_lock(int sig)
{
	struct action_lock l = { sig > 0 && sig < _NSIG ? sig : 0, 0 };
	uint64_t all = ~0ull;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &l.was, sizeof(all));
	if (!l.sig)
		return l;
	uint64_t me = (uint32_t)rt_gettid(), since = 0;
	for (;;) {
		uint64_t holder = 0;
		if (atomic_compare_exchange_strong(&action_locks[l.sig], &holder, me))
			return l;
		uint64_t now = rt_mono_ns();
		if (!since)
			since = now;
		else if (now - since > LOCK_STALE_NS && atomic_compare_exchange_strong(&action_locks[l.sig], &holder, me))
			return l;
		sched_yield();
	}
}

static void action_unlock(struct action_lock l)
{
	if (l.sig)
		atomic_store(&action_locks[l.sig], 0);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &l.was, NULL, sizeof(l.was));
}

/* Installs `sa` for the program: a handler behind program_signal, the stack signal never blocked by
 * it. The old action is the program's own. Called with the signal's action_lock held. */
static int program_sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	bool known = sig > 0 && sig < _NSIG;
	struct sigaction before = known ? program_actions[sig].as_given : (struct sigaction){ 0 };
	action_fn before_fn = known ? atomic_load(&program_actions[sig].fn) : NULL;
	bool entry = known && sa && sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
	struct sigaction k;
	if (sa) {
		k = *sa;
		if (handler_owns_signal(rt.sig))
			sigdelset(&k.sa_mask, rt.sig);
	}
	if (entry) {
		/* In place before the kernel can call the entry for it. */
		atomic_store(&program_actions[sig].fn, sa->sa_sigaction);
		k.sa_sigaction = program_signal;
		k.sa_flags |= SA_SIGINFO;
	}
	int r = rt_real_sigaction(sig, sa ? &k : NULL, old);
	if (r < 0 && entry) /* refused: the entry still runs the handler it ran */
		atomic_store(&program_actions[sig].fn, before_fn);
	if (r == 0 && entry)
		program_actions[sig].as_given = as_installed(sig, sa);
	else if (r == 0 && sa && known)
		program_actions[sig].as_given = *sa; /* SIG_DFL or SIG_IGN, as the kernel keeps it */
	if (r == 0 && old && known)
		program_view(&before, old);
	return r;
}

EXPORT int sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	if (handler_owns_signal(sig)) {
		if (old)
			memset(old, 0, sizeof(*old));
		return 0; /* taken by fltrace: the program's handler would never run anyway */
	}
	struct action_lock l = action_lock(sig);
	int r = program_sigaction(sig, sa, old);
	int err = errno;
	action_unlock(l);
	errno = err;
	return r;
}

static int mask_call(sigmask_fn fn, int how, const sigset_t *set, sigset_t *old)
{
	if (rt_known_sigmask(how, set, old))
		return 0;
	if (!set || how == SIG_UNBLOCK || !handler_owns_signal(rt.sig))
		return fn(how, set, old);
	sigset_t copy = *set;
	sigdelset(&copy, rt.sig);
	return fn(how, &copy, old);
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	static sigmask_fn fn;
	if (!fn)
		fn = (sigmask_fn)rt_libc_next("sigprocmask");
	return mask_call(fn, how, set, old);
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	static sigmask_fn fn;
	if (!fn)
		fn = (sigmask_fn)rt_libc_next("pthread_sigmask");
	return mask_call(fn, how, set, old);
}

/* glibc's signal(), sigset(), bsd_signal(), sysv_signal() and ssignal() call its internal
 * sigaction, which the wrapper above cannot see: each is called as it is (its flags and mask,
 * siginterrupt's too; sigset looks at the signal mask, so this runs outside the lock), then the
 * handler it installed goes behind the entry, and its answer names the program's handler. */
typedef sighandler_t (*signal_fn)(int, sighandler_t);

static sighandler_t signal_call(const char *name, signal_fn *fn, int sig, sighandler_t handler)
{
	if (handler_owns_signal(sig))
		return SIG_DFL;
	if (!*fn)
		*fn = (signal_fn)rt_libc_next(name);
	bool known = sig > 0 && sig < _NSIG;
	sighandler_t before = known ? program_actions[sig].as_given.sa_handler : SIG_DFL;
	sighandler_t old = (*fn)(sig, handler);
	if (old == SIG_ERR)
		return old;
	int err = errno;
	if ((void *)old == (void *)program_signal)
		old = before;
	struct sigaction now;
	struct action_lock l = action_lock(sig);
	if (handler != SIG_DFL && handler != SIG_IGN && handler != SIG_HOLD &&
	    rt_real_sigaction(sig, NULL, &now) == 0 && now.sa_handler == handler)
		program_sigaction(sig, &now, NULL);
	action_unlock(l);
	errno = err;
	return old;
}

/* Each calls glibc's own by name. __sysv_signal is what signal() is under strict X/Open (signal.h
 * defines it so); sigset() answers SIG_HOLD for a signal that was blocked, whatever its handler. */
#define SIGNAL_WRAPPER(name)                                        \
	EXPORT sighandler_t name(int sig, sighandler_t handler)     \
	{                                                           \
		static signal_fn fn;                                \
		return signal_call(#name, &fn, sig, handler);       \
	}
SIGNAL_WRAPPER(signal)
SIGNAL_WRAPPER(bsd_signal)
SIGNAL_WRAPPER(sysv_signal)
SIGNAL_WRAPPER(__sysv_signal)
SIGNAL_WRAPPER(sigset)
SIGNAL_WRAPPER(ssignal)

/* sighold() blocks through glibc's internal sigprocmask: the stack signal is not the program's to
 * block (as in mask_call). */
EXPORT int sighold(int sig)
{
	static int (*fn)(int);
	if (handler_owns_signal(sig))
		return 0;
	if (!fn)
		fn = (int (*)(int))rt_libc_next("sighold");
	return fn(sig);
}
