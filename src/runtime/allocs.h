/* Allocation sites: sampled heap allocations and the program's own mappings, recorded with
 * their stacks so faults can be charged to where memory was allocated. */
#ifndef FLTRACE_RT_ALLOCS_H
#define FLTRACE_RT_ALLOCS_H

#include "rt.h"

int allocs_init(uint64_t sample_bytes, bool on);
void allocs_fork_child(void);
RT_HIDDEN extern __thread int64_t rt_tls_alloc_countdown; /* bytes until the next sample */
void allocs_heap_slow(void *p, size_t size);
void allocs_heap_free_slow(void *p);
bool allocs_maybe_recorded(const void *p);
/* The program's mmap / mremap / munmap; `caller` is the wrapper's return address: calls from
 * fltrace's own code (jemalloc's mappings of the heap) are not the program's. */
void allocs_note_map(uintptr_t p, size_t len, unsigned kind, const void *caller);
void allocs_note_unmap(uintptr_t p, size_t len, const void *caller);
/* The malloc family's hooks: a subtraction on the common path. */
static inline void allocs_heap(void *p, size_t size)
{
	if (size >= FT_ALLOC_BIG || (rt_tls_alloc_countdown -= (int64_t)size) <= 0)
		allocs_heap_slow(p, size);
}
static inline void allocs_heap_free(void *p)
{
	if (allocs_maybe_recorded(p))
		allocs_heap_free_slow(p);
}

#endif
