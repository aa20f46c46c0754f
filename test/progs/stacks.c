/* Test workload with known fault sites: writes WRITE_PAGES fresh pages at the line marked LEAF-W,
 * then reads READ_PAGES other fresh pages at LEAF-R, each through a chain of noinline calls.
 * `stacks blocked` does it with every signal blocked, behind libc's back (as glibc itself does in a
 * new thread's first steps): fltrace's stack signal cannot be delivered. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

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

int main(int argc, char **argv)
{
	bool blocked = argc > 1 && strcmp(argv[1], "blocked") == 0;
	char *w = mmap(NULL, WRITE_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *r = mmap(NULL, READ_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w == MAP_FAILED || r == MAP_FAILED)
		return 1;
	unsigned long all = ~0ul, old = 0;
	if (blocked)
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &old, sizeof(all));
	int s = middle(w, r); /* CALL-MIDDLE */
	if (blocked)
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(old));
	printf("stacks: %d\n", s);
	return 0;
}
