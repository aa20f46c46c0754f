/* clock: second chance with the reference bit taken from the program itself. A quarter of local
 * memory is on probation (out of the page tables, still local): close to LRU, at a soft fault for
 * every touch of a page there. */
#include "policy.h"

static uint64_t clock_window; /* pages left on probation after a round */

static int clock_init(const struct policy_limits *lim)
{
	/* A page untouched while a quarter of local memory went by goes. */
	clock_window = lim->cap_pages / 4 ? lim->cap_pages / 4 : 1;
	return segments_init(lim);
}

static unsigned clock_evict(uint64_t want)
{
	return segments_evict(want, clock_window);
}

const struct policy_ops policy_clock = {
	.init = clock_init,
	.page_in = segments_page_in,
	.page_touched = segments_page_in,
	.page_on_probation = segments_on_probation,
	.evict = clock_evict,
	.probation = true,
};
