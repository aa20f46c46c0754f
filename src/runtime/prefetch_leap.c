/* leap: Leap's prefetcher (Al Maruf and Chowdhury, ATC 2020): the page deltas of the process's last
 * accesses to far memory; the majority delta (Boyer-Moore vote) of the newest 4, else 8, 16, 32 of
 * them is the trend; a window along it sized by the last window's hits (a power of two at least
 * hits + 1, shrinking by half at most); no trend, no prefetch. */
#include "prefetch.h"

#define LEAP_HISTORY 32 /* deltas kept */
#define LEAP_SPLIT 4    /* the smallest window a trend is looked for in */
#define LEAP_MAX 32     /* pages of one prefetch window */

static struct {
	int64_t delta[LEAP_HISTORY]; /* ring of deltas, newest at head - 1 */
	unsigned head, n;
	uint64_t last;   /* the last access's page */
	unsigned window; /* pages of the last prefetch window */
	unsigned hits;   /* hits since it */
} lp;

static void leap_init(void)
{
	lp.head = lp.n = 0;
	lp.last = 0;
	lp.window = 0;
	lp.hits = 0;
}

/* The majority delta of the newest `w` deltas, if one holds more than half of them. */
static bool leap_majority(unsigned w, int64_t *trend)
{
	int64_t cand = 0;
	unsigned votes = 0;
	for (unsigned i = 0; i < w; i++) {
		int64_t d = lp.delta[(lp.head + LEAP_HISTORY - 1 - i) % LEAP_HISTORY];
		if (votes == 0)
			cand = d, votes = 1;
		else
			votes += d == cand ? 1 : (unsigned)-1;
	}
	unsigned count = 0;
	for (unsigned i = 0; i < w; i++)
		count += lp.delta[(lp.head + LEAP_HISTORY - 1 - i) % LEAP_HISTORY] == cand;
	*trend = cand;
	return cand != 0 && count * 2 > w;
}

static bool leap_trend(int64_t *trend)
{
	for (unsigned w = LEAP_SPLIT; w <= lp.n; w *= 2)
		if (leap_majority(w, trend))
			return true;
	return false;
}

static unsigned leap_window(void)
{
	unsigned w = 1;
	while (w < lp.hits + 1)
		w *= 2;
	if (w < lp.window / 2)
		w = lp.window / 2;
	return w > LEAP_MAX ? LEAP_MAX : w;
}

static unsigned leap_predict(const struct prefetch_access *a, uint64_t *pages, unsigned max)
{
	if (lp.last) {
		lp.delta[lp.head] = (int64_t)(a->page - lp.last);
		lp.head = (lp.head + 1) % LEAP_HISTORY;
		if (lp.n < LEAP_HISTORY)
			lp.n++;
	}
	lp.last = a->page;
	if (a->hit) {
		lp.hits++;
		return 0; /* a hit feeds the history; the next miss asks for more */
	}
	int64_t trend;
	if (!leap_trend(&trend))
		return 0;
	unsigned w = leap_window();
	lp.window = w;
	lp.hits = 0;
	return prefetch_along(a->page, trend, w, pages, max);
}

const struct prefetch_ops prefetch_leap = {
	.init = leap_init,
	.predict = leap_predict,
};
