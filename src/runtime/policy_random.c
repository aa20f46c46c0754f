/* random: victims drawn uniformly from the resident pages, the baseline any policy with recency
 * must beat. A fixed seed (policy_limits.seed) makes a run reproducible. */
#include <errno.h>

#include "policy.h"
#include "region.h"

static struct {
	uintptr_t *v;     /* resident pages, in no order; PG_QUEUED marks a page's live entry */
	uint64_t n, cap;
	uint64_t rng;     /* xorshift64* state */
} rnd;

static uint64_t random_next(void)
{
	rnd.rng ^= rnd.rng >> 12;
	rnd.rng ^= rnd.rng << 25;
	rnd.rng ^= rnd.rng >> 27;
	return rnd.rng * 0x2545f4914f6cdd1dull;
}

static int random_init(const struct policy_limits *lim)
{
	rnd.cap = policy_queue_room(lim);
	rnd.n = 0;
	rnd.rng = lim->seed ? lim->seed : 1;
	rnd.v = rt_map(rnd.cap * sizeof(uintptr_t));
	return rnd.v ? 0 : -ENOMEM;
}

/* Drops the entries of pages that left (and duplicates) before the set overflows. */
static void random_compact(void)
{
	uint64_t out = 0;
	for (uint64_t i = 0; i < rnd.n; i++) {
		uint32_t *pg = policy_page_live(rnd.v[i], PAGE_PRESENT);
		if (!pg)
			continue;
		*pg &= ~PG_QUEUED; /* a later duplicate is stale */
		rnd.v[out++] = rnd.v[i];
	}
	for (uint64_t i = 0; i < out; i++)
		*region_page(rnd.v[i]) |= PG_QUEUED;
	rnd.n = out;
	RT_BUG_ON(rnd.n == rnd.cap);
}

static void random_page_in(uintptr_t page, uint32_t *pg)
{
	*pg &= ~PG_QUEUED; /* an entry it may have left behind is stale now */
	if (rnd.n == rnd.cap)
		random_compact();
	rnd.v[rnd.n++] = page;
	*pg |= PG_QUEUED;
}

/* A resident page drawn at random, taken out of the set; 0 if there is none. */
static uintptr_t random_take(void *unused)
{
	while (rnd.n) {
		uint64_t i = random_next() % rnd.n;
		uintptr_t page = rnd.v[i];
		rnd.v[i] = rnd.v[--rnd.n];
		uint32_t *pg = policy_page_live(page, PAGE_PRESENT);
		if (pg) {
			*pg &= ~PG_QUEUED;
			return page;
		}
	}
	return 0;
}

static unsigned random_evict(uint64_t want)
{
	return policy_evict_taken(random_take, NULL, want, false);
}

const struct policy_ops policy_random = {
	.init = random_init,
	.page_in = random_page_in,
	.page_touched = random_page_in, /* never called: random puts nothing on probation */
	.page_on_probation = random_page_in,
	.evict = random_evict,
};
