/* Stacks of threads asleep in a fault (inside a system call, or in user mode), unwound from a handler
 * thread with the loaded objects' unwind tables, without touching the thread's memory. */
#ifndef FLTRACE_RT_SYSSTACK_H
#define FLTRACE_RT_SYSSTACK_H

#include "rt.h"

void sysstack_objects_refresh(void); /* the loaded objects' unwind tables; never from a handler */
void sysstack_fork_child(void);      /* a handler of the parent may have held the table's lock */
/* Handlers only; the thread (tid, in system call nr) must stay asleep meanwhile. */
/* `fresh`: unwound now (the caller checks the thread stayed asleep), not reused from a cache.
 * `forked`: not unwound, a fork holding rt.lock kept a page from being read (to be redone). */
unsigned sysstack_unwind(int tid, long nr, uint64_t pc, uint64_t sp, uint64_t *ips, unsigned max, bool *fresh,
			 bool *forked);
void sysstack_thread_gone(void); /* a thread id was found reused: cached stacks of it are stale */
/* len bytes (within one page) of memory not known to be mapped still, never by touching them. */
bool sysstack_peek(uintptr_t addr, void *dst, size_t len);
/* The stack of a thread asleep in a fault it took in user mode at (pc, sp; rbp if fp), exactly as its stack
 * signal would take it: false (nothing in ips) if that cannot be known from here, or if it is not
 * cached and !fresh_ok. `fresh`: unwound now, or not cached (the caller checks the thread stayed
 * asleep); `cut`: deeper than max. */
struct user_unwind {
	unsigned depth;
	bool fresh, cut;
	bool lacked_fp; /* not exact for want of rbp (fp NULL) */
	bool known;     /* an unwind's result (cached or fresh) is in: lacked_fp says something */
};
bool sysstack_unwind_user(int tid, uint64_t pc, uint64_t sp, const uint64_t *fp, uint64_t *ips, unsigned max,
			  bool fresh_ok, struct user_unwind *u);

#endif
