/* Test workload: fills N MB of heap with a pattern and scans it K times, printing a checksum.
 * Usage: fillscan MB [passes] [threads]. Its output must not change under tracing. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct part {
	uint64_t *p;
	size_t n;
	int passes;
	uint64_t sum;
};

static void *work(void *arg)
{
	struct part *w = arg;
	for (size_t i = 0; i < w->n; i++)
		w->p[i] = i * 0x9e3779b97f4a7c15ull + (uintptr_t)w->n;
	for (int pass = 0; pass < w->passes; pass++)
		for (size_t i = 0; i < w->n; i += 8)
			w->sum += w->p[i] ^ (uint64_t)pass;
	return NULL;
}

int main(int argc, char **argv)
{
	size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	int passes = argc > 2 ? atoi(argv[2]) : 3;
	int nthreads = argc > 3 ? atoi(argv[3]) : 1;
	pthread_t tids[64];
	struct part parts[64];
	if (nthreads < 1 || nthreads > 64)
		return 2;
	size_t words = (mb << 20) / sizeof(uint64_t) / (size_t)nthreads;
	for (int t = 0; t < nthreads; t++) {
		parts[t] = (struct part){ .p = malloc(words * sizeof(uint64_t)), .n = words, .passes = passes };
		if (!parts[t].p)
			return 3;
		if (nthreads > 1)
			pthread_create(&tids[t], NULL, work, &parts[t]);
		else
			work(&parts[t]);
	}
	uint64_t sum = 0;
	for (int t = 0; t < nthreads; t++) {
		if (nthreads > 1)
			pthread_join(tids[t], NULL);
		sum += parts[t].sum;
		free(parts[t].p);
	}
	printf("fillscan %zu MB x%d passes, %d threads: %016llx\n", mb, passes, nthreads, (unsigned long long)sum);
	return 0;
}
