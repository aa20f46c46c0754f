/* System-call buffers: tracked pages a system call will touch are brought in before the call,
 * so the kernel never waits in a fault inside it; and the caller's stack for such calls. */
#ifndef FLTRACE_RT_PREFAULT_H
#define FLTRACE_RT_PREFAULT_H

#include "rt.h"

struct rt_prefault {
	int nr;             /* the system call the thread is about to make, -1 if none */
	bool kernel_writes; /* whether that call writes the buffer (read) or reads it (write) */
};
RT_HIDDEN extern __thread struct rt_prefault rt_tls_prefault;
void prefault_init(void);
bool prefault_range(const void *buf, size_t len, int nr, bool kernel_writes); /* true: pages left */
void prefault_call_begin(int nr); /* the kernel will fault in the call: leave the caller's stack */
void prefault_call_end(void);
bool prefault_is_own_frame(uint64_t ip);
uint32_t prefault_caller_stack(void); /* the caller's stack without our frames, interned */
/* The same, and its return addresses: ips needs PREFAULT_IPS_MAX entries (a variable length
 * array: --depth and our own frames, on the program's stack). */
#define PREFAULT_IPS_MAX (rt.cfg.stack_depth + 8)
uint32_t prefault_caller_stack_ips(uint64_t *ips, unsigned *depth);

#endif
