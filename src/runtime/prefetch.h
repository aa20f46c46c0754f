/* Prefetchers as plug-ins: what a prefetcher is (a table of operations, prefetch_<name>.c, that only
 * predicts pages), and the mechanism (prefetch.c) that stages those pages and accounts for them. */
#ifndef FLTRACE_PREFETCH_H
#define FLTRACE_PREFETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "fltrace/prefetchers.h"
#include "pagestate.h"

/* The most pages one access may ask for. */
#define PREFETCH_MAX 32

/* An access that reached the fault path on a page far memory held: a re-fetch (`hit` false), or
 * the first touch of a page a prefetcher had brought in (`hit` true: the far read was hidden). */
struct prefetch_access {
	uint64_t page;        /* page number: address >> page shift */
	uint64_t first, end;  /* the pages [first, end) of the tracked mapping it lies in */
	int tid;              /* the thread that touched it */
	bool hit;
};

/* A prefetcher only predicts: pure bookkeeping of its own, no system call and no page state, so it
 * runs the same in a unit test (test/unit/test_prefetch.c). Called under rt.lock. */
struct prefetch_ops {
	void (*init)(void);
	/* Up to `max` page numbers to bring in after access `a`, most wanted first; returns how
	 * many. Pages that are not far (resident, never touched, untracked) are skipped by the
	 * mechanism, which tells nothing back: a prefetcher learns from hits alone. */
	unsigned (*predict)(const struct prefetch_access *a, uint64_t *pages, unsigned max);
};

/* The pages `page + step`, `page + 2 step`, ... `page + n step` into `pages`, at most `max` of them;
 * returns how many: the window along a trend that stride and leap both ask for. Inline, not in
 * prefetch.c, so the prefetchers' unit test runs them without the mechanism. */
static inline unsigned prefetch_along(uint64_t page, int64_t step, unsigned n, uint64_t *pages,
				      unsigned max)
{
	unsigned k = 0;
	for (; k < n && k < max; k++)
		pages[k] = page + (uint64_t)(step * (int64_t)(k + 1));
	return k;
}

/* The prefetcher named by the table's row `id` (inc/fltrace/prefetchers.h); NULL past the table. */
const struct prefetch_ops *prefetch_ops_of(unsigned id);

/* ---- the mechanism (prefetch.c) ----
 * A prefetched page is staged, not mapped: its data sits in its far slot (for --far mem the slot
 * is the page; other backends read it there), its state is PAGE_INACTIVE (local memory, counted
 * against -L, evicted by the policy like any resident page), and a bit per far slot says it came
 * from a prefetcher and has not been touched. Its first touch faults and is served from the slot
 * with no far read: recorded as a fault of kind FT_KIND_PREFETCH, with its stack (a hit). */
extern uint64_t *prefetch_bits; /* one bit per far slot; NULL with --prefetch none */

int prefetch_init(uint64_t cap_pages, uint64_t slots);
/* The page (its state word) was brought in by a prefetcher and not touched since. */
static inline bool prefetch_staged(uint32_t pg)
{
	if (__builtin_expect(!prefetch_bits, 1) || pg_state(pg) != PAGE_INACTIVE)
		return false;
	uint32_t slot = pg_slot(pg);
	return prefetch_bits[slot >> 6] >> (slot & 63) & 1;
}
static inline bool prefetch_on(void)
{
	return prefetch_bits != 0;
}
/* After a re-fetch or a hit at `addr` by thread `tid` was put in place: asks the prefetcher and
 * stages what it names (rt.lock held). */
void prefetch_after(uintptr_t addr, int tid, bool hit);
/* The staged page in `slot` was touched: a hit (its bit cleared; counted prefetch_used). */
void prefetch_hit(uint32_t slot);
/* The staged page in `slot` leaves local memory untouched (counted prefetch_unused). */
void prefetch_evicted(uint32_t slot);
/* The staged page in `slot` was released by the program untouched (prefetch_dropped). */
void prefetch_slot_freed(uint32_t slot);
/* `slot` was given to a page leaving local memory: whatever it held before, it is no staged page. */
static inline void prefetch_slot_reset(uint32_t slot)
{
	if (__builtin_expect(prefetch_bits != 0, 0))
		prefetch_bits[slot >> 6] &= ~(1ull << (slot & 63));
}

#endif
