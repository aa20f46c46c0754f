/* The registers a program thread faulted with, from the kernel's sample of its fault (faultregs.c),
 * in place of reading /proc: handlers only. */
#ifndef FLTRACE_RT_FAULTREGS_H
#define FLTRACE_RT_FAULTREGS_H

#include "rt.h"

struct rt_thread;
struct fault_regs {
	uint64_t pc, sp, bp;
	int cpu; /* where it faulted */
};
/* The user-mode fault on `page` that thread t (tid) sleeps in: false where no sample of it can be
 * trusted (none yet, a fault in a system call, a sample possibly dropped): read /proc then. The
 * thread's event is opened at its first call (so its next fault is sampled). */
bool faultregs_take(struct rt_thread *t, int tid, uintptr_t page, struct fault_regs *out);
void faultregs_forget(struct rt_thread *t); /* its thread id was found reused by a new thread */
void faultregs_fork_child(void);            /* the parent's events are not the child's */

#endif
