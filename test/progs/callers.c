/* Faults that the C library takes for the program: memset and memcpy into fresh memory, strcmp
 * of two private mappings of one file, each called from a line of its own (built -O2 -g, as a
 * program is shipped). `report --by caller` must name those lines, not libc's. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096

static char *map_anon(size_t n)
{
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* noinline, and work after each call, so that the call is no tail call: the frame stays. */
__attribute__((noinline)) static void fill(char *a, size_t n)
{
	memset(a, 'x', n - 1); /* CALL-MEMSET */
	a[n - 1] = 0;
}

__attribute__((noinline)) static void copy(char *b, const char *a, size_t n)
{
	memcpy(b, a, n); /* CALL-MEMCPY */
	b[0] = 'y';
}

__attribute__((noinline)) static int same(const char *p, const char *q)
{
	return strcmp(p, q) == 0; /* CALL-STRCMP */
}

/* callers PAGES FILE: PAGES pages set, copied, then written to FILE and compared through two
 * private mappings of it (every page of both read inside strcmp). */
int main(int argc, char **argv)
{
	size_t n = argc > 2 ? (size_t)atol(argv[1]) * PAGE : 0;
	char *a = n ? map_anon(n) : NULL, *b = n ? map_anon(n) : NULL, *p, *q;
	int fd;

	if (!a || !b) {
		fprintf(stderr, "usage: callers PAGES FILE\n");
		return 2;
	}
	fill(a, n);
	copy(b, a, n);
	fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, a, n) != (ssize_t)n) {
		perror(argv[2]);
		return 1;
	}
	p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
	q = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED || q == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	printf("callers: %zu pages, copy %c, same %d\n", n / PAGE, b[0], same(p, q));
	close(fd);
	return 0;
}
