/* Test workload: N first touches (the line marked LEAF) in a function that saves rbp, called from a
 * loop that keeps a different value in rbp at each call, as code built without frame pointers may
 * (python's evaluation loop keeps an object's address there). The word saved changes at every
 * touch; the stack does not. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define PAGE 4096

/* rbp clobbered: saved in the prologue, as any callee-saved register it uses. */
__attribute__((noinline)) static void touch(volatile char *p, long i)
{
	__asm__ volatile("" ::: "rbp");
	*p = (char)i; /* LEAF */
}

__attribute__((noinline)) static void fill(volatile char *base, long n)
{
	for (long i = 0; i < n; i++) {
		/* rbp holds the count's image across the call, as a register variable would */
		__asm__ volatile("lea 0x5a5a(,%0,8), %%rbp" ::"r"(i) : "rbp");
		touch(base + i * PAGE, i); /* CALL */
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000;
	char *base = mmap(NULL, (size_t)n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	fill(base, n);
	long sum = 0;
	for (long i = 0; i < n; i++)
		sum += base[i * PAGE];
	printf("rbpheld %ld pages, sum %ld\n", n, sum);
	return 0;
}
