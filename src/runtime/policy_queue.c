/* The FIFO queue of page addresses that fifo, clock and sfifo keep their pages in (policy.h):
 * a ring with lazy deletion, the page's PG_QUEUED bit marking the one live entry of a page. */
#include <errno.h>

#include "policy.h"
#include "evict.h"
#include "region.h"
#include "prefetch.h"

uint64_t policy_queue_room(const struct policy_limits *lim)
{
	return 2 * lim->max_pages + 4096;
}

int policy_queue_init(struct policy_queue *q, uint64_t cap, unsigned state)
{
	q->cap = cap;
	q->head = q->tail = 0;
	q->state = state;
	q->v = rt_map(cap * sizeof(uintptr_t));
	return q->v ? 0 : -ENOMEM;
}

uint32_t *policy_page_live(uintptr_t page, unsigned state)
{
	uint32_t *pg = region_page(page);
	if (!pg || !(*pg & PG_QUEUED))
		return NULL;
	/* A page a prefetcher staged is local memory that policies without probation evict like a
	 * resident page (evict_out lets it go without moving data); with probation it is on it. */
	if (pg_state(*pg) != state && !(state == PAGE_PRESENT && prefetch_staged(*pg) && !evict_has_probation()))
		return NULL;
	return pg;
}

/* Drops stale entries (and duplicates) so the queue never overflows. */
static void queue_compact(struct policy_queue *q)
{
	uint64_t out = 0, n = q->tail - q->head;
	uintptr_t *tmp = rt_map(n * sizeof(uintptr_t));
	RT_BUG_ON(!tmp);
	for (uint64_t i = q->head; i < q->tail; i++) {
		uintptr_t page = q->v[i % q->cap];
		uint32_t *pg = policy_page_live(page, q->state);
		if (!pg)
			continue;
		*pg &= ~PG_QUEUED; /* a later duplicate of this page is now stale */
		tmp[out++] = page;
	}
	for (uint64_t i = 0; i < out; i++) {
		q->v[i] = tmp[i];
		*region_page(tmp[i]) |= PG_QUEUED;
	}
	rt_unmap(tmp, n * sizeof(uintptr_t));
	q->head = 0;
	q->tail = out;
	RT_BUG_ON(out == q->cap);
}

uintptr_t policy_queue_take(void *q)
{
	return policy_queue_pop(q);
}

void policy_queue_push(struct policy_queue *q, uintptr_t page, uint32_t *pg)
{
	if (*pg & PG_QUEUED)
		return;
	if (q->tail - q->head == q->cap)
		queue_compact(q);
	q->v[q->tail++ % q->cap] = page;
	*pg |= PG_QUEUED;
}

uintptr_t policy_queue_pop(struct policy_queue *q)
{
	while (q->head < q->tail) {
		uintptr_t page = q->v[q->head++ % q->cap];
		uint32_t *pg = policy_page_live(page, q->state);
		if (pg) {
			*pg &= ~PG_QUEUED;
			return page;
		}
	}
	return 0;
}

unsigned policy_evict_taken(uintptr_t (*take)(void *from), void *from, uint64_t want, bool probation)
{
	uintptr_t victims[POLICY_BATCH_MAX];
	unsigned n = 0;
	while (n < want && n < POLICY_BATCH_MAX && (victims[n] = take(from)))
		n++;
	return n ? evict_out(victims, n, probation) : 0;
}

static struct {
	struct policy_queue active, probation;
} seg;

int segments_init(const struct policy_limits *lim)
{
	uint64_t room = policy_queue_room(lim);
	if (policy_queue_init(&seg.active, room, PAGE_PRESENT) < 0 ||
	    policy_queue_init(&seg.probation, room, PAGE_INACTIVE) < 0)
		return -ENOMEM;
	return 0;
}

void segments_page_in(uintptr_t page, uint32_t *pg)
{
	*pg &= ~PG_QUEUED; /* an entry it may have left in the other queue is stale now */
	policy_queue_push(pg_state(*pg) == PAGE_INACTIVE ? &seg.probation : &seg.active, page, pg);
}

void segments_on_probation(uintptr_t page, uint32_t *pg)
{
	*pg &= ~PG_QUEUED;
	policy_queue_push(&seg.probation, page, pg);
}

unsigned segments_evict(uint64_t want, uint64_t window)
{
	uint64_t target = window + want;
	while (evict_probation_pages() < target &&
	       policy_evict_taken(policy_queue_take, &seg.active, target - evict_probation_pages(), true))
		;
	unsigned n = 0;
	uintptr_t page;
	while (n < want && n < POLICY_BATCH_MAX && (page = policy_queue_pop(&seg.probation))) {
		evict_probation_end(page);
		n++;
	}
	return n;
}
