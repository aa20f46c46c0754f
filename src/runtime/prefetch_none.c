/* none: no prefetching, the default. The mechanism is not even set up (prefetch_bits stays NULL),
 * so the fault path pays one pointer test. */
#include "prefetch.h"

static unsigned none_predict(const struct prefetch_access *a, uint64_t *pages, unsigned max)
{
	(void)a, (void)pages, (void)max;
	return 0;
}

const struct prefetch_ops prefetch_none = {
	.predict = none_predict,
};
