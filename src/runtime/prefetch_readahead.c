/* readahead: Linux's swap readahead seen from user space (mm/swap_state.c, swapin_nr_pages): after a
 * re-fetch, the pages that follow it; the window grows while re-fetches are sequential or its last
 * pages were used, and shrinks, never faster than by half, when neither. */
#include "prefetch.h"

#define RA_MAX 32 /* pages; Linux's page-cluster default is 8, fltrace's pages cost no I/O queue */

static struct {
	uint64_t prev;    /* page of the last re-fetch */
	unsigned window;  /* pages read ahead at the last re-fetch */
	unsigned hits;    /* hits since the last re-fetch */
} ra;

static void readahead_init(void)
{
	ra.prev = 0;
	ra.window = 0;
	ra.hits = 0;
}

static unsigned pow2_at_least(unsigned n)
{
	unsigned p = 1;
	while (p < n)
		p *= 2;
	return p;
}

/* Linux's rule: hits + 2 pages, rounded up to a power of two; 1 (none ahead) after a miss that is
 * neither sequential nor preceded by a hit; never less than half the last window. */
static unsigned ra_window(uint64_t page)
{
	unsigned want = ra.hits + 2;
	if (ra.hits == 0 && page != ra.prev + 1 && page + 1 != ra.prev)
		want = 1;
	else
		want = pow2_at_least(want);
	if (want > RA_MAX)
		want = RA_MAX;
	if (want < ra.window / 2)
		want = ra.window / 2;
	return want;
}

static unsigned readahead_predict(const struct prefetch_access *a, uint64_t *pages, unsigned max)
{
	if (a->hit) {
		ra.hits++;
		return 0; /* as in Linux: a hit in the swap cache reads nothing more */
	}
	unsigned w = ra_window(a->page);
	ra.window = w;
	ra.hits = 0;
	ra.prev = a->page;
	unsigned n = 0;
	/* The window counts the faulting page, as Linux's does. */
	for (unsigned i = 1; i < w && n < max; i++)
		pages[n++] = a->page + i;
	return n;
}

const struct prefetch_ops prefetch_readahead = {
	.init = readahead_init,
	.predict = readahead_predict,
};
