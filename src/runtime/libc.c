/* The C library's own functions behind the ones preload/ interposes, found once by name: the
 * runtime calls them (sigaction) without going through a wrapper, and the wrappers call them last. */
#include <dlfcn.h>

#include "rt.h"

void *rt_libc_next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f)
		rt_die(name, "cannot find the C library's function", "report this as a bug");
	return f;
}

int rt_real_sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	static int (*fn)(int, const struct sigaction *, struct sigaction *);
	if (!fn)
		fn = (int (*)(int, const struct sigaction *, struct sigaction *))rt_libc_next("sigaction");
	return fn(sig, sa, old);
}
