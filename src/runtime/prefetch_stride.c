/* stride: a per-thread stride detector, as a hardware stream prefetcher keeps one per stream: once a
 * thread's accesses to far memory moved by the same number of pages twice in a row, the next pages
 * along that stride are brought in, and again at each hit, so a steady stride stays ahead. */
#include "prefetch.h"

#define STRIDE_THREADS 64 /* threads followed at once; a thread that finds its entry taken starts over */
#define STRIDE_DEGREE 8   /* pages ahead along the stride */
#define STRIDE_CONFIRM 2  /* equal strides in a row before it prefetches */

struct stride_entry {
	int tid;
	uint64_t last;  /* the thread's last access (page) */
	int64_t stride; /* its last stride, in pages */
	unsigned same;  /* strides in a row equal to it */
};

static struct stride_entry streams[STRIDE_THREADS];

static void stride_init(void)
{
	for (unsigned i = 0; i < STRIDE_THREADS; i++)
		streams[i] = (struct stride_entry){ 0 };
}

static struct stride_entry *stride_entry_of(int tid)
{
	struct stride_entry *e = &streams[(unsigned)tid % STRIDE_THREADS];
	if (e->tid != tid)
		*e = (struct stride_entry){ .tid = tid };
	return e;
}

static unsigned stride_predict(const struct prefetch_access *a, uint64_t *pages, unsigned max)
{
	struct stride_entry *e = stride_entry_of(a->tid);
	int64_t s = e->last ? (int64_t)(a->page - e->last) : 0;
	if (s != 0 && s == e->stride)
		e->same++;
	else
		e->same = s != 0 ? 1 : 0;
	e->stride = s;
	e->last = a->page;
	if (e->same < STRIDE_CONFIRM)
		return 0;
	return prefetch_along(a->page, s, STRIDE_DEGREE, pages, max);
}

const struct prefetch_ops prefetch_stride = {
	.init = stride_init,
	.predict = stride_predict,
};
