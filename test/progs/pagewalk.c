/* Test workload for prefetchers: writes every page of an N MB mapping once, then reads them back
 * in a known order, `passes` times, and prints a checksum that must not change under tracing.
 * Usage: pagewalk seq|random|stride MB passes [stride]
 *   seq     pages 0, 1, 2, ... (a scan: readahead's case)
 *   random  a fixed pseudo-random order of all pages (nothing to predict)
 *   stride  pages 0, s, 2s, ... then 1, 1+s, ... then 2, 2+s, ... (a fixed stride of s pages) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE 4096ul

static uint64_t read_page(const volatile uint64_t *p, size_t i)
{
	return p[i * (PAGE / sizeof(uint64_t))];
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	const char *mode = argv[1];
	size_t pages = (strtoul(argv[2], NULL, 10) << 20) / PAGE;
	int passes = atoi(argv[3]);
	size_t stride = argc > 4 ? strtoul(argv[4], NULL, 10) : 3;
	if (!pages || stride == 0 || (strcmp(mode, "seq") && strcmp(mode, "random") && strcmp(mode, "stride")))
		return 2;
	uint64_t *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t *order = malloc(pages * sizeof(*order)); /* small: 2 KB per MB walked */
	if (p == MAP_FAILED || !order)
		return 3;
	for (size_t i = 0; i < pages; i++)
		p[i * (PAGE / sizeof(uint64_t))] = i * 0x9e3779b97f4a7c15ull; /* FILL */
	size_t n = 0;
	if (!strcmp(mode, "stride")) {
		for (size_t k = 0; k < stride; k++)
			for (size_t i = k; i < pages; i += stride)
				order[n++] = i;
	} else {
		for (size_t i = 0; i < pages; i++)
			order[n++] = i;
	}
	if (!strcmp(mode, "random")) {
		uint64_t x = 88172645463325252ull; /* xorshift64: the same order every run */
		for (size_t i = pages - 1; i > 0; i--) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t j = (size_t)(x % (i + 1)), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
	}
	uint64_t sum = 0;
	for (int pass = 0; pass < passes; pass++)
		for (size_t i = 0; i < n; i++)
			sum += read_page(p, order[i]) ^ (uint64_t)pass; /* WALK */
	printf("pagewalk %s %zu pages x%d: %016llx\n", mode, pages, passes, (unsigned long long)sum);
	return 0;
}
