/* Interposed signal calls: the program may neither block nor take over the signal that asks a
 * thread for its stack (a thread that blocked it would sleep in its fault until a time-out). */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "../src/runtime/rt.h"
#include "../src/runtime/handler.h"

#define EXPORT __attribute__((visibility("default")))

typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);

/* A handler of the program's own may wake a thread from its fault and let it retry (handler.c
 * then queues the stack signal before the page goes in). */
static void note_handler(sighandler_t h)
{
	if (h != SIG_DFL && h != SIG_IGN)
		atomic_store(&rt.program_catches, true);
}

EXPORT int sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	if (handler_owns_signal(sig)) {
		if (old)
			memset(old, 0, sizeof(*old));
		return 0; /* taken by fltrace: the program's handler would never run anyway */
	}
	if (sa)
		note_handler(sa->sa_handler);
	if (!sa || !handler_owns_signal(rt.sig))
		return rt_real_sigaction(sig, sa, old);
	struct sigaction copy = *sa;
	sigdelset(&copy.sa_mask, rt.sig);
	return rt_real_sigaction(sig, &copy, old);
}

static int mask_call(sigmask_fn fn, int how, const sigset_t *set, sigset_t *old)
{
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

/* glibc's signal() calls its internal sigaction, which the wrapper above cannot see. */
EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	if (handler_owns_signal(sig))
		return SIG_DFL;
	note_handler(handler);
	static sighandler_t (*fn)(int, sighandler_t);
	if (!fn)
		fn = (sighandler_t (*)(int, sighandler_t))rt_libc_next("signal");
	return fn(sig, handler);
}
