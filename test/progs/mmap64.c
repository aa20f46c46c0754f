/* Test program: a mapping made through mmap64, as programs built with _FILE_OFFSET_BITS=64 make
 * theirs (glibc's header renames the call; python3.11's object arenas come this way): 4 MB, every
 * page written once and read once. The test expects exactly its 1024 first touches, by this line. */
#define _FILE_OFFSET_BITS 64
#include <stdio.h>
#include <sys/mman.h>

#define MB (1u << 20)

int main(void)
{
	char *p = mmap(NULL, 4 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* MAP64 */
	if (p == MAP_FAILED)
		return 1;
	for (unsigned i = 0; i < 4 * MB; i += 4096)
		p[i] = (char)(i >> 12);
	unsigned long sum = 0;
	for (unsigned i = 0; i < 4 * MB; i += 4096)
		sum += (unsigned char)p[i];
	printf("sum %lu\n", sum);
	return munmap(p, 4 * MB);
}
