/* Test program for placement advice (report --advise, record --keep-local): three objects of very
 * different heat, each filled once, then read in rounds: every round the hot one whole, half of
 * the warm one, a quarter of the cold one (so, per byte, the hot one is read
 * twice as often as the warm one and four times as often as the cold one).
 * Prints the pages each object spans into $PLACEMENT_SPANS (not stdout: they depend on where the
 * allocator put the objects). Usage: placement [rounds] */
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

static unsigned long scan(volatile const char *p, size_t len)
{
	unsigned long sum = 0;
	for (size_t i = 0; i < len; i += 4096)
		sum += (unsigned char)p[i];
	return sum;
}

/* A function of its own, so that the hot site can be named by function too (--keep-local hot_alloc). */
__attribute__((noinline)) static char *hot_alloc(size_t len)
{
	return malloc(len); /* HOT */
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 8;
	char *hot = hot_alloc(2 * MB);
	char *warm = mmap(NULL, 4 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* WARM */
	char *cold = malloc(16 * MB); /* COLD */
	if (!hot || warm == MAP_FAILED || !cold)
		return 1;
	memset(hot, 1, 2 * MB);
	memset(warm, 2, 4 * MB);
	memset(cold, 3, 16 * MB);
	unsigned long sum = 0;
	for (int r = 0; r < rounds; r++) {
		sum += scan(hot, 2 * MB);
		sum += scan(warm + (size_t)(r % 2) * 2 * MB, 2 * MB);
		sum += scan(cold + (size_t)(r % 4) * 4 * MB, 4 * MB);
	}
	const char *spans = getenv("PLACEMENT_SPANS");
	FILE *f = spans ? fopen(spans, "w") : NULL;
	if (f) {
		fprintf(f, "%lu %lu %lu\n", pages_spanned(hot, 2 * MB), pages_spanned(warm, 4 * MB),
			pages_spanned(cold, 16 * MB));
		fclose(f);
	}
	printf("placement %d rounds: sum %lu\n", rounds, sum);
	free(hot);
	munmap(warm, 4 * MB);
	free(cold);
	return 0;
}
