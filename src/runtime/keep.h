/* --keep-local (keep.c): the allocation sites whose memory is never evicted, the live allocations
 * made there, and the pages of them held resident outside the policy's queues. */
#ifndef FLTRACE_RT_KEEP_H
#define FLTRACE_RT_KEEP_H

#include "rt.h"

/* Parses FLTRACE_KEEP_LOCAL ("<executable>|<lo>-<hi>,..." in the executable's link-time hex
 * addresses); NULL or an image of another executable: nothing is kept. 0 or -EINVAL. */
int keep_init(const char *spec);
/* Sites were given and this process image runs their executable. */
bool keep_on(void);
/* The allocation whose stack is ips[0..n) was made at a kept site: its pages are to be kept. */
bool keep_stack_matches(const uint64_t *ips, unsigned n);
void keep_add(uintptr_t p, size_t len);
/* The program freed (len 0: the allocation starting at p) or unmapped [p, p+len). */
void keep_remove(uintptr_t p, size_t len);
/* rt.lock held: a page that is coming in resident. True if it was kept (PG_KEPT set, out of the
 * policy); false if it goes to the policy as any page (not kept, or kept pages fill -L). */
bool keep_page_in(uintptr_t page, uint32_t *pg);
void keep_fork_child(void);

#endif
