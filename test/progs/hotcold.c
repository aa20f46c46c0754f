/* Test workload for eviction policies: a hot set touched again and again while a cold stream goes
 * by once. A policy that approximates recency keeps the hot set local; FIFO keeps evicting it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define PAGE 4096

int main(int argc, char **argv)
{
	size_t hot_mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 6;
	size_t cold_mb = argc > 2 ? strtoul(argv[2], NULL, 10) : 96;
	size_t hot = hot_mb << 20, cold = cold_mb << 20, step = 1 << 20;
	char *h = mmap(NULL, hot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *c = mmap(NULL, cold, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED || c == MAP_FAILED)
		return 1;
	uint64_t sum = 0;
	for (size_t off = 0; off < cold; off += step) {
		for (size_t i = 0; i < hot; i += PAGE)
			sum += (uint64_t)h[i]++;
		for (size_t i = off; i < off + step; i += PAGE)
			c[i] = (char)(i >> 12);
	}
	printf("hotcold %zu MB hot, %zu MB cold: %llu\n", hot_mb, cold_mb, (unsigned long long)sum);
	return 0;
}
