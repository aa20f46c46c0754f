/* Bench helper: the allocator path alone. N malloc/free pairs of 16..1040 bytes with a window of
 * 4096 live objects (each written once), timed inside the program; prints ns per pair.
 * Usage: mallocbench [N] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	enum { WINDOW = 4096 };
	static char *live[WINDOW];
	unsigned x = 12345;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		size_t size = 16 + ((x >> 16) & 1023);
		char **slot = &live[i % WINDOW];
		free(*slot);
		*slot = malloc(size);
		(*slot)[0] = (char)i;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n;
	printf("%.1f ns per malloc+free\n", ns);
	return 0;
}
