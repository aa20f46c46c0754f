/* readahead: Linux's swap readahead seen from user space, per mapping as its VMA-based form is
 * (mm/swap_state.c: swap_vma_readahead, swap_ra_info, __swapin_nr_pages): window and placement. */
#include "prefetch.h"

#define RA_MAX 32      /* pages; Linux's page-cluster default is 8, fltrace's pages cost no I/O queue */
#define RA_MAPPINGS 64 /* mappings followed at once (Linux keeps one state in every VMA) */

/* What Linux keeps in a VMA's swap_readahead_info: the last far access (re-fetch or hit), the
 * window read at the last re-fetch, and the hits since. */
struct ra_state {
	uint64_t first; /* the mapping's first page: whose state this is (0: none yet) */
	uint64_t prev;
	unsigned window, hits;
};

static struct ra_state ra[RA_MAPPINGS];

static void readahead_init(void)
{
	for (unsigned i = 0; i < RA_MAPPINGS; i++)
		ra[i] = (struct ra_state){ 0 };
}

/* The mapping's state; a mapping that takes over another's entry starts afresh, as a new VMA does. */
static struct ra_state *ra_of(uint64_t first)
{
	struct ra_state *s = &ra[(first * 0x9e3779b97f4a7c15ull) >> 58]; /* 2^6 == RA_MAPPINGS */
	if (s->first != first)
		*s = (struct ra_state){ .first = first };
	return s;
}

static unsigned pow2_at_least(unsigned n)
{
	unsigned p = 1;
	while (p < n)
		p *= 2;
	return p;
}

/* __swapin_nr_pages: hits + 2 pages, rounded up to a power of two; 1 (none ahead) after a miss that
 * is neither next to the last access nor preceded by a hit; never less than half the last window. */
static unsigned ra_window(const struct ra_state *s, uint64_t page)
{
	unsigned want = s->hits + 2;
	if (s->hits == 0 && page != s->prev + 1 && page + 1 != s->prev)
		want = 1;
	else
		want = pow2_at_least(want);
	if (want > RA_MAX)
		want = RA_MAX;
	if (want < s->window / 2)
		want = s->window / 2;
	return want;
}

/* swap_ra_info's placement: ahead of a forward step, behind a backward one, else around the page
 * (a third before it); clamped to the mapping. Nearest pages first. */
static unsigned ra_place(const struct ra_state *s, const struct prefetch_access *a, unsigned w,
			 uint64_t *pages, unsigned max)
{
	uint64_t lo, hi; /* the window [lo, hi), the faulting page in it */
	if (a->page == s->prev + 1) {
		lo = a->page;
		hi = a->page + w;
	} else if (a->page + 1 == s->prev) {
		lo = a->page + 1 >= w ? a->page + 1 - w : 0;
		hi = a->page + 1;
	} else {
		unsigned left = (w - 1) / 2;
		lo = a->page >= left ? a->page - left : 0;
		hi = lo + w;
	}
	lo = lo > a->first ? lo : a->first;
	hi = hi < a->end ? hi : a->end;
	unsigned n = 0;
	for (uint64_t d = 1; n < max && (a->page + d < hi || a->page >= lo + d); d++) {
		if (a->page + d < hi && n < max)
			pages[n++] = a->page + d;
		if (a->page >= lo + d && n < max)
			pages[n++] = a->page - d;
	}
	return n;
}

static unsigned readahead_predict(const struct prefetch_access *a, uint64_t *pages, unsigned max)
{
	struct ra_state *s = ra_of(a->first);
	if (a->hit) { /* as in Linux: a hit reads nothing more, and moves the mapping's last access */
		s->hits++;
		s->prev = a->page;
		return 0;
	}
	unsigned w = ra_window(s, a->page);
	unsigned n = w > 1 ? ra_place(s, a, w, pages, max) : 0;
	s->window = w;
	s->hits = 0;
	s->prev = a->page;
	return n;
}

const struct prefetch_ops prefetch_readahead = {
	.init = readahead_init,
	.predict = readahead_predict,
};
