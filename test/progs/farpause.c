/* Test workload for far memory on servers: fills N MB of heap, says so by creating READY, waits
 * until GO exists (meanwhile a test kills, stops or changes a memory server), then scans the memory
 * twice and prints a checksum. Usage: farpause MB READY GO. Its output must not change under tracing. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	size_t words = (strtoul(argv[1], NULL, 10) << 20) / sizeof(uint64_t);
	uint64_t *p = malloc(words * sizeof(uint64_t)), sum = 0;
	if (!p)
		return 3;
	for (size_t i = 0; i < words; i++)
		p[i] = i * 0x9e3779b97f4a7c15ull + words;
	int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 4;
	close(fd);
	struct stat st;
	for (int waited = 0; stat(argv[3], &st) != 0; waited++) {
		if (waited > 60000) /* 10 minutes: the test is gone */
			return 5;
		usleep(10000);
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < words; i += 8)
			sum += p[i] ^ (uint64_t)pass;
	printf("farpause %zu words: %016llx\n", words, (unsigned long long)sum);
	free(p);
	return 0;
}
