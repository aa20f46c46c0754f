/* The `mem` backend: evicted pages stay in the staging store itself (farmem.c's mapping, inside the
 * process), so putting a page away and fetching it back cost nothing beyond the page moves. */
#include "far.h"

static int mem_init(const char *arg)
{
	(void)arg;
	return 0;
}

static const char *mem_describe(void)
{
	return "memory";
}

/* No put, get or free: the staging slot is the medium, and farmem.c empties freed slots. */
const struct far_backend far_mem = { .init = mem_init, .describe = mem_describe };
