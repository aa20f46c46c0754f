/* sfifo: segmented FIFO (VMS's), probation only for the pages next to go, its size adapted so that
 * the recency it buys costs at most a soft fault per 40 pages brought in. */
#include "policy.h"

/* Soft faults allowed per page brought in, as 1/SFIFO_SOFT_SHARE; the window halves past it and
 * doubles below half of it. A soft fault costs most of what a real one does (the handler's round
 * trip), and measured on bfs, hotcold and python a rescued page saves 0.6-0.95 real faults: with
 * a tenth, sfifo took 2-3% more faults and soft faults in all than fifo; with a 40th, as many, and
 * 1.5-2% fewer real ones (src/runtime/README.md, "Eviction policies"). */
#define SFIFO_SOFT_SHARE 40

static struct {
	uint64_t window, window_max; /* pages left on probation after a round */
	uint64_t epoch;              /* pages brought in per adjustment of the window */
	uint64_t in, soft;           /* pages brought in and soft faults in this epoch */
	unsigned batch;
} sf;

static int sfifo_init(const struct policy_limits *lim)
{
	sf.batch = lim->batch;
	sf.window_max = lim->cap_pages / 4 ? lim->cap_pages / 4 : 1;
	sf.window = sf.batch < sf.window_max ? sf.batch : sf.window_max;
	sf.epoch = lim->cap_pages / 2 > 256 ? lim->cap_pages / 2 : 256;
	sf.in = sf.soft = 0;
	return segments_init(lim);
}

/* Once an epoch: a window whose soft faults went past their share shrinks, one well within it
 * grows, one that caught nothing goes back to a batch. */
static void sfifo_adapt(void)
{
	if (sf.in < sf.epoch)
		return;
	uint64_t one_batch = sf.batch < sf.window_max ? sf.batch : sf.window_max;
	if (sf.soft * SFIFO_SOFT_SHARE > sf.in)
		sf.window /= 2;
	else if (sf.soft == 0)
		/* No page came back: nothing says a longer probation would catch any; a long one left
		 * from an earlier phase would only turn a later pass over these pages into a burst of
		 * soft faults. */
		sf.window = one_batch;
	else if (sf.soft * SFIFO_SOFT_SHARE * 2 < sf.in)
		sf.window = sf.window * 2 < sf.window_max ? sf.window * 2 : sf.window_max;
	sf.in = sf.soft = 0;
}

static void sfifo_page_in(uintptr_t page, uint32_t *pg)
{
	sf.in++;
	segments_page_in(page, pg);
	sfifo_adapt();
}

static void sfifo_page_touched(uintptr_t page, uint32_t *pg)
{
	sf.soft++;
	segments_page_in(page, pg);
	/* The epoch's budget is spent already: shrink now rather than at its end. */
	if (sf.soft * SFIFO_SOFT_SHARE > sf.epoch) {
		sf.window /= 2;
		sf.in = sf.soft = 0;
	}
}

static unsigned sfifo_evict(uint64_t want)
{
	return segments_evict(want, sf.window);
}

const struct policy_ops policy_sfifo = {
	.init = sfifo_init,
	.page_in = sfifo_page_in,
	.page_touched = sfifo_page_touched,
	.page_on_probation = segments_on_probation,
	.evict = sfifo_evict,
	.probation = true,
};
