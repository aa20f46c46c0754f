/* The fault path as the rest of the runtime sees it: starting the handler threads, the stack
 * signal, the watchdog, and putting a page in place (fork.c serves pages too). */
#ifndef FLTRACE_RT_HANDLER_H
#define FLTRACE_RT_HANDLER_H

#include "rt.h"

int handler_start(void);    /* pollers.c: the handler threads of this process */
uint64_t handler_cpu_ns(void); /* their CPU time (user + system, polling included) */
void handler_before_exit(void); /* pollers at SCHED_OTHER, to end at once with the process */
void handler_signal_init(void); /* installs the stack signal */
bool handler_owns_signal(int sig);
/* A signal of the program's own arrived (uc: its context); what stack_after_program_handler takes
 * back once the program's handler has returned. */
/* What the entry in front of a program's handler keeps while it runs: the alternate stack it runs on
 * (lo, size), the seal it came in on top of (hidden meanwhile), and the system call whose buffer
 * the thread was touching (prefault.c: the handler's own calls use the same thread-local state). */
struct program_alt {
	uintptr_t lo;
	size_t size;
	struct rt_seal_hidden seal;
	int prefault_nr;
	bool prefault_kernel_writes;
};
struct program_alt stack_before_program_handler(const void *uc);
void stack_after_program_handler(struct program_alt was);
void handler_open_procfile(int tid); /* before the program may drop root: see handler.c */
void handler_watchdog(void); /* once a second: a stuck handler stops the program */
int fault_bring_in(int fd, uintptr_t addr, uint32_t *pg, bool wake, uint8_t *kind, uint32_t *region);
bool handler_is_current_thread(void);

#endif
