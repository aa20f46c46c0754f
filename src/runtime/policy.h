/* Eviction policies as plug-ins: what a policy is (a table of operations, policy_<name>.c), what
 * evict.c, which moves the pages, offers them, and the page queue most of them keep. */
#ifndef FLTRACE_POLICY_H
#define FLTRACE_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "rt.h"

/* The most pages one eviction round takes out (a policy's evict() never asks for more). */
#define POLICY_BATCH_MAX 64

struct policy_limits {
	uint64_t cap_pages; /* -L in pages: local memory, probation included */
	uint64_t max_pages; /* -M in pages: every page a policy may ever be told about, at once */
	unsigned batch;     /* pages evict.c asks for per round (at most POLICY_BATCH_MAX) */
	uint64_t seed;      /* for policies that draw random numbers: the same seed, the same run */
};

/* Every operation runs with rt.lock held. `pg` is the page's state word (rt.h); a policy may keep
 * PG_QUEUED in it for its own bookkeeping and must leave the rest alone. Pages that leave local
 * memory behind a policy's back (unmapped, emptied, moved) just change state: a policy checks the
 * state of what it finds in its lists (policy_page_live) and drops what is no longer its. */
struct policy_ops {
	int (*init)(const struct policy_limits *lim);
	/* The page is resident (PAGE_PRESENT): it came in, stayed in (a move out failed), or was
	 * moved by mremap (it may then be PAGE_INACTIVE: its probation goes on at the new address). */
	void (*page_in)(uintptr_t page, uint32_t *pg);
	/* The program touched a page on probation: it is back, at the cost of a soft fault. */
	void (*page_touched)(uintptr_t page, uint32_t *pg);
	/* evict_out() put the page on probation (PAGE_INACTIVE): still local, out of the page tables. */
	void (*page_on_probation)(uintptr_t page, uint32_t *pg);
	/* Makes up to `want` pages leave local memory (through evict_out / evict_probation_end);
	 * returns how many left. 0 means it has nothing left to evict. */
	unsigned (*evict)(uint64_t want);
	bool probation; /* puts pages on probation: soft faults must be looked for */
};

/* The policy named by the table's row `id` (inc/fltrace/policies.h); NULL past the table. */
const struct policy_ops *policy_ops_of(unsigned id);

/* ---- what evict.c offers a policy ---- */
/* Moves resident pages out of the page tables: for good (far memory) or on probation. Each page
 * that stays resident (its move failed) is handed back through page_in. Reorders `pages`.
 * Returns how many pages moved. */
unsigned evict_out(uintptr_t *pages, unsigned n, bool probation);
/* Ends the probation of a page that was not touched: it leaves local memory without moving data
 * (it already sits in its far slot). */
void evict_probation_end(uintptr_t page);
uint64_t evict_probation_pages(void); /* pages on probation now */

/* ---- a FIFO queue of page addresses (policy_queue.c) ---- */
/* An entry is live while its page is in the queue's state and PG_QUEUED; entries of pages that
 * left meanwhile are dropped when met, and the queue compacts itself before it overflows. */
struct policy_queue {
	uintptr_t *v;
	uint64_t cap, head, tail;
	unsigned state; /* PAGE_PRESENT or PAGE_INACTIVE */
};
int policy_queue_init(struct policy_queue *q, uint64_t cap, unsigned state);
void policy_queue_push(struct policy_queue *q, uintptr_t page, uint32_t *pg);
uintptr_t policy_queue_pop(struct policy_queue *q); /* the oldest live page, taken out; 0 if none */
/* The state word of `page` if it is still in `state` and queued, else NULL. */
uint32_t *policy_page_live(uintptr_t page, unsigned state);
/* Room for every page -M allows (a fork child holds them all for a moment), stale ones too. */
uint64_t policy_queue_room(const struct policy_limits *lim);

uintptr_t policy_queue_take(void *q);               /* policy_queue_pop, for policy_evict_taken */
/* Takes pages from `take` (0: none left) up to `want` (at most POLICY_BATCH_MAX) and moves them out
 * with evict_out; returns how many moved. */
unsigned policy_evict_taken(uintptr_t (*take)(void *from), void *from, uint64_t want, bool probation);

/* ---- segmented FIFO: an active queue, and a probation queue of the pages next to go ---- */
/* A page comes in at the young end of the active queue; the oldest active pages are put on
 * probation; a touch there brings the page back (a soft fault) to the young end; a page that
 * reaches the old end of probation untouched is evicted. clock and sfifo are this, with different
 * probation windows; one process runs one policy, so the pair of queues is one (policy_queue.c). */
int segments_init(const struct policy_limits *lim);
void segments_page_in(uintptr_t page, uint32_t *pg);      /* page_in and page_touched */
void segments_on_probation(uintptr_t page, uint32_t *pg); /* page_on_probation */
/* Evicts up to `want` of the oldest pages on probation, after filling probation from the old end of
 * the active queue so that `window` pages stay on it afterwards. */
unsigned segments_evict(uint64_t want, uint64_t window);

#endif
