/* glibc's lock of the loaded-object list (the one dl_iterate_phdr holds), found at start and reset
 * in a fork child, as glibc 2.36 resets the loader's other lock but not this one. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "rt.h"
#include "dlwalk.h"

/* A thread inside dl_iterate_phdr when another forks leaves this lock held in the child by a
 * thread the child does not have: the child's runtime, whose first maps snapshot walks the list,
 * waited for it for ever (a thread walking the list in a loop, as an unwinder does: 3 forks of
 * 200; CPython's test_many_processes, where fltrace's own stats thread held it, 2 runs in 4). The
 * lock lives in the loader's private _rtld_global; it is the one recursive mutex there that the
 * caller of dl_iterate_phdr holds inside its callback. */
static pthread_mutex_t *walk_lock;

struct search {
	char *lo;
	size_t len;
	int tid;
	pthread_mutex_t *found;
};

static int dlwalk_search(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info, (void)size;
	struct search *s = arg;
	for (size_t off = 0; off + sizeof(pthread_mutex_t) <= s->len; off += sizeof(long)) {
		pthread_mutex_t *m = (pthread_mutex_t *)(void *)(s->lo + off);
		if (m->__data.__owner == s->tid && m->__data.__lock != 0 && m->__data.__count >= 1 &&
		    (m->__data.__kind & 3) == PTHREAD_MUTEX_RECURSIVE_NP) {
			s->found = m;
			break;
		}
	}
	return 1; /* one object is enough: the lock is held for the whole walk */
}

void dlwalk_init(void)
{
	void *g = dlsym(RTLD_DEFAULT, "_rtld_global");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!g || !dladdr1(g, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || sym->st_size == 0)
		return;
	struct search s = { .lo = g, .len = sym->st_size, .tid = rt_gettid() };
	dl_iterate_phdr(dlwalk_search, &s);
	/* The same mutex, free again once the walk is over: nothing else matched by chance. */
	if (s.found && s.found->__data.__owner == 0)
		walk_lock = s.found;
}

void dlwalk_fork_child(void)
{
	/* Held, or half taken or half released (its word set, no owner yet or any more: seen), by a
	 * thread other than this one, the child's only thread. */
	if (!walk_lock || walk_lock->__data.__lock == 0 || walk_lock->__data.__owner == rt_gettid())
		return;
	pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	memcpy(walk_lock, &fresh, sizeof(fresh));
}
