/* clock: second chance with the reference bit taken from the program itself. A quarter of local
 * memory is on probation (out of the page tables, still local): close to LRU, at a soft fault for
 * every touch of a page there. */
#include "policy.h"

static struct {
	struct policy_segments seg;
	uint64_t window; /* pages left on probation after a round */
} clk;

static int clock_init(const struct policy_limits *lim)
{
	/* A page untouched while a quarter of local memory went by goes. */
	clk.window = lim->cap_pages / 4 ? lim->cap_pages / 4 : 1;
	return segments_init(&clk.seg, lim);
}

static void clock_page_in(uintptr_t page, uint32_t *pg)
{
	segments_page_in(&clk.seg, page, pg);
}

static void clock_on_probation(uintptr_t page, uint32_t *pg)
{
	segments_on_probation(&clk.seg, page, pg);
}

static unsigned clock_evict(uint64_t want)
{
	return segments_evict(&clk.seg, want, clk.window + want);
}

const struct policy_ops policy_clock = {
	.init = clock_init,
	.page_in = clock_page_in,
	.page_touched = clock_page_in,
	.page_on_probation = clock_on_probation,
	.evict = clock_evict,
	.probation = true,
};
