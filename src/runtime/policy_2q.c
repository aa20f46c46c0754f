/* 2q: Johnson and Shasha's 2Q seen from misses alone: new pages pass through a short FIFO, and a
 * page re-fetched soon after it left that FIFO (a ghost hit) joins the long FIFO. No soft faults. */
#include <errno.h>

#include "policy.h"

/* 2Q's tuning: the short FIFO holds a quarter of -L, its ghosts remember half of -L's worth of
 * pages evicted from it. A scan never hits a ghost and has all of -L (the long FIFO is empty). */
#define TWOQ_SHORT_DIV 4
#define TWOQ_GHOST_DIV 2

/* A page that left the short FIFO: a tag of its page number (its low 32 bits, never 0, the empty
 * slot's: a rare false hit only promotes a page early) and the 32-bit eviction count it left at. */
struct ghost {
	uint32_t tag;
	uint32_t seq;
};

static struct {
	struct policy_queue shortq, longq;
	uint64_t short_max;  /* entries of the short FIFO before it, not the long one, gives victims */
	uint64_t ghost_span; /* evictions from the short FIFO a ghost is remembered for */
	struct ghost *ghosts; /* direct-mapped by page: a collision forgets the older ghost */
	uint64_t ghost_mask;
	uint32_t evicted; /* pages evicted from the short FIFO so far, modulo 2^32 */
} q2;

static uint32_t ghost_tag(uintptr_t page)
{
	return (uint32_t)(page >> rt.page_shift) | 1u; /* never 0: 0 is an empty slot */
}

static struct ghost *ghost_of(uintptr_t page)
{
	uint64_t h = (uint64_t)(page >> rt.page_shift) * 0x9e3779b97f4a7c15ull;
	return &q2.ghosts[(h >> 32) & q2.ghost_mask];
}

static int twoq_init(const struct policy_limits *lim)
{
	uint64_t room = policy_queue_room(lim), slots = 1024;
	q2.short_max = lim->cap_pages / TWOQ_SHORT_DIV ? lim->cap_pages / TWOQ_SHORT_DIV : 1;
	q2.ghost_span = lim->cap_pages / TWOQ_GHOST_DIV ? lim->cap_pages / TWOQ_GHOST_DIV : 1;
	if (q2.ghost_span > UINT32_MAX / 4)
		q2.ghost_span = UINT32_MAX / 4;
	while (slots < 2 * q2.ghost_span)
		slots *= 2;
	q2.ghost_mask = slots - 1;
	q2.evicted = 0;
	q2.ghosts = rt_map(slots * sizeof(*q2.ghosts));
	if (!q2.ghosts || policy_queue_init(&q2.shortq, room, PAGE_PRESENT) < 0 ||
	    policy_queue_init(&q2.longq, room, PAGE_PRESENT) < 0)
		return -ENOMEM;
	return 0;
}

/* True if `page` left the short FIFO within the ghost span; forgets it. Before the first page
 * leaves, there is no ghost to find: the table (8 MB at -L 4096) is not read, and a run that never
 * evicts never touches it (each first read of one of its pages was a fault: 2,000 in a python run
 * of 5,500 faults). The count wraps at 2^32: the page-ins until the next eviction then go to the
 * short FIFO, as in fifo. */
static bool ghost_take(uintptr_t page)
{
	if (!q2.evicted)
		return false;
	struct ghost *g = ghost_of(page);
	if (g->tag != ghost_tag(page))
		return false;
	g->tag = 0;
	return (uint32_t)(q2.evicted - g->seq) <= q2.ghost_span;
}

/* A page whose move out failed comes back here with the ghost it has just left and joins the
 * long FIFO: rare (evict_failed in the stats), and it only keeps that page longer. */
static void twoq_page_in(uintptr_t page, uint32_t *pg)
{
	*pg &= ~PG_QUEUED; /* an entry it may have left behind is stale now */
	policy_queue_push(ghost_take(page) ? &q2.longq : &q2.shortq, page, pg);
}

/* Remembers a page that leaves the short FIFO. */
static void ghost_put(uintptr_t page)
{
	struct ghost *g = ghost_of(page);
	g->tag = ghost_tag(page);
	g->seq = ++q2.evicted;
}

static uintptr_t take_short(void)
{
	uintptr_t page = policy_queue_pop(&q2.shortq);
	if (page)
		ghost_put(page);
	return page;
}

/* The short FIFO's length counts entries of pages that left behind our back until they are met:
 * it then gives victims a little early, which only makes 2q more like fifo. */
static uintptr_t twoq_take(void *unused)
{
	(void)unused;
	uintptr_t page = 0;
	if (q2.shortq.tail - q2.shortq.head > q2.short_max || q2.longq.tail == q2.longq.head)
		page = take_short();
	if (!page)
		page = policy_queue_pop(&q2.longq);
	return page ? page : take_short();
}

static unsigned twoq_evict(uint64_t want)
{
	return policy_evict_taken(twoq_take, NULL, want, false);
}

const struct policy_ops policy_2q = {
	.init = twoq_init,
	.page_in = twoq_page_in,
	.page_touched = twoq_page_in, /* never called: 2q puts nothing on probation */
	.page_on_probation = twoq_page_in,
	.evict = twoq_evict,
};
