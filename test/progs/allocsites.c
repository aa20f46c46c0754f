/* Test program for faults by allocation site: three objects made at known lines (malloc, mmap,
 * calloc), each page touched once, then read again in the proportions 1:2:3; prints the pages each
 * object spans (into $ALLOCSITES_SPANS) so the test knows the exact faults to expect.
 * Usage: allocsites [passes] | allocsites small N */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MB (1u << 20)

static unsigned long pages_spanned(const void *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095, hi = ((uintptr_t)p + len + 4095) & ~(uintptr_t)4095;
	return (unsigned long)((hi - lo) / 4096);
}

static unsigned long touch(volatile char *p, size_t len, int times)
{
	unsigned long sum = 0;
	for (int t = 0; t < times; t++)
		for (size_t i = 0; i < len; i += 4096)
			sum += (unsigned char)p[i];
	return sum;
}

/* n small allocations kept live, each written: for the sampling of small allocations. */
static int small(int n)
{
	char **v = malloc((size_t)n * sizeof(*v));
	unsigned long sum = 0;
	for (int i = 0; i < n; i++) {
		v[i] = malloc(100); /* SMALL-MALLOC */
		memset(v[i], i & 0xff, 100); /* SMALL-SET */
		sum += (unsigned char)v[i][i % 100];
	}
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
	printf("small %d sum %lu\n", n, sum);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "small"))
		return small(atoi(argv[2]));
	int passes = argc > 1 ? atoi(argv[1]) : 1;
	char *a = malloc(8 * MB);
	char *b = mmap(NULL, 4 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *c = calloc(2 * MB, 1);
	if (!a || b == MAP_FAILED || !c)
		return 1;
	memset(a, 1, 8 * MB);
	memset(b, 2, 4 * MB);
	unsigned long sum = touch(c, 2 * MB, 1);
	for (int i = 0; i < passes; i++)
		sum += touch(a, 8 * MB, 1) + touch(b, 4 * MB, 2) + touch(c, 2 * MB, 3);
	/* The pages spanned depend on where the allocator put the objects (glibc and jemalloc differ,
	 * and jemalloc offsets big objects at random): to a file of the test's, not on stdout. */
	const char *spans = getenv("ALLOCSITES_SPANS");
	FILE *f = spans ? fopen(spans, "w") : NULL;
	if (f) {
		fprintf(f, "%lu %lu %lu\n", pages_spanned(a, 8 * MB), pages_spanned(b, 4 * MB),
			pages_spanned(c, 2 * MB));
		fclose(f);
	}
	printf("sum %lu\n", sum);
	free(a);
	munmap(b, 4 * MB);
	free(c);
	return 0;
}
