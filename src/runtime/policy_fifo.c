/* fifo: pages leave local memory in the order they came in. No recency and no extra faults: what
 * earlier userfaultfd tracers did, and the yardstick the other policies are measured against. */
#include "policy.h"

static struct policy_queue fifo_q;

static int fifo_init(const struct policy_limits *lim)
{
	return policy_queue_init(&fifo_q, policy_queue_room(lim), PAGE_PRESENT);
}

static void fifo_page_in(uintptr_t page, uint32_t *pg)
{
	*pg &= ~PG_QUEUED; /* an entry it may have left behind is stale now */
	policy_queue_push(&fifo_q, page, pg);
}

static unsigned fifo_evict(uint64_t want)
{
	return policy_evict_taken(policy_queue_take, &fifo_q, want, false);
}

const struct policy_ops policy_fifo = {
	.init = fifo_init,
	.page_in = fifo_page_in,
	.page_touched = fifo_page_in, /* never called: fifo puts nothing on probation */
	.page_on_probation = fifo_page_in,
	.evict = fifo_evict,
};
