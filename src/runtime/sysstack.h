/* Stacks of threads asleep inside a system call, unwound from a handler thread through
 * /proc/<tid>/mem with the loaded objects' unwind tables. */
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

#endif
