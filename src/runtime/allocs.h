/* Allocation sites: sampled heap allocations and the program's own mappings, recorded with
 * their stacks so faults can be charged to where memory was allocated. */
#ifndef FLTRACE_RT_ALLOCS_H
#define FLTRACE_RT_ALLOCS_H

#include "rt.h"

int allocs_init(uint64_t sample_bytes, bool on);
void allocs_fork_child(void);
RT_HIDDEN extern __thread int64_t rt_tls_alloc_countdown; /* bytes until the next sample */
/* Heap pages that have had an allocation recorded on them, one bit a page, direct-mapped by the
 * low bits of the page number (pages 2^ALLOCS_PAGE_BITS apart share a bit: 128 GiB), so a
 * heap's bits lie together. NULL when small allocations are not recorded. */
#define ALLOCS_PAGE_BITS 25
RT_HIDDEN extern _Atomic uint8_t *allocs_page_map;
void allocs_heap_slow(void *p, size_t size);
void allocs_heap_free_slow(void *p);
bool allocs_maybe_recorded(const void *p);
/* The program's mmap / mremap / munmap; `caller` is the wrapper's return address: calls from
 * fltrace's own code (jemalloc's mappings of the heap) are not the program's. */
void allocs_note_map(uintptr_t p, size_t len, unsigned kind, const void *caller);
void allocs_note_unmap(uintptr_t p, size_t len, const void *caller);
/* Whether an allocation of [p, p+size) lands on a page no recorded allocation claimed yet. */
static inline bool allocs_page_fresh(const void *p, size_t size)
{
	_Atomic uint8_t *m = allocs_page_map;

	if (!m || !p)
		return false;
	for (uintptr_t pg = (uintptr_t)p >> 12, end = ((uintptr_t)p + (size ? size : 1) - 1) >> 12;
	     pg <= end; pg++) {
		uintptr_t i = pg & ((1ull << ALLOCS_PAGE_BITS) - 1);
		if (!(atomic_load_explicit(&m[i >> 3], memory_order_relaxed) & (1u << (i & 7))))
			return true;
	}
	return false;
}
/* The malloc family's hooks: a subtraction and one bit test on the common path. */
static inline void allocs_heap(void *p, size_t size)
{
	if (size >= FT_ALLOC_BIG || (rt_tls_alloc_countdown -= (int64_t)size) <= 0 ||
	    allocs_page_fresh(p, size))
		allocs_heap_slow(p, size);
}
static inline void allocs_heap_free(void *p)
{
	if (allocs_maybe_recorded(p))
		allocs_heap_free_slow(p);
}

#endif
