/* Test workload with known fault sites: writes WRITE_PAGES fresh pages at the line marked LEAF-W,
 * then reads READ_PAGES other fresh pages at LEAF-R, each through a chain of noinline calls. */
#include <stdio.h>
#include <sys/mman.h>

#define WRITE_PAGES 100
#define READ_PAGES 50
#define PAGE 4096

__attribute__((noinline)) static void touch_pages(volatile char *p, int n)
{
	for (int i = 0; i < n; i++)
		p[i * PAGE] = (char)i; /* LEAF-W */
}

__attribute__((noinline)) static int read_pages(volatile char *p, int n)
{
	int sum = 0;
	for (int i = 0; i < n; i++)
		sum += p[i * PAGE]; /* LEAF-R */
	return sum;
}

__attribute__((noinline)) static int middle(volatile char *w, volatile char *r)
{
	touch_pages(w, WRITE_PAGES); /* CALL-TOUCH */
	int s = read_pages(r, READ_PAGES); /* CALL-READ */
	return s + w[PAGE];
}

int main(void)
{
	char *w = mmap(NULL, WRITE_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *r = mmap(NULL, READ_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w == MAP_FAILED || r == MAP_FAILED)
		return 1;
	int s = middle(w, r); /* CALL-MIDDLE */
	printf("stacks: %d\n", s);
	return 0;
}
