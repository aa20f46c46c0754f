/* Lots of code in a known order, for `record --files=all`: NFUNCS functions, each alone on its own
 * 4 KiB page of .text, called through a table forwards (fn0, fn1, ...) and then backwards, twice.
 * A test reads back which pages of the executable were read from the file, and in what order.
 * Usage: codepages [rounds] (default 1). Output depends only on the arguments. */
#include <stdio.h>
#include <stdlib.h>

#define NFUNCS 512

/* One page per function: the first fault on a function's page is the call of that function. */
#define FN(n)                                                                              \
	__attribute__((noinline, aligned(4096))) static unsigned long fn##n(unsigned long x) \
	{                                                                                  \
		return x * 2654435761u + (unsigned long)(n) + (x >> 7);                    \
	}
#define FN8(n) FN(n##0) FN(n##1) FN(n##2) FN(n##3) FN(n##4) FN(n##5) FN(n##6) FN(n##7)
#define FN64(n) FN8(n##0) FN8(n##1) FN8(n##2) FN8(n##3) FN8(n##4) FN8(n##5) FN8(n##6) FN8(n##7)
FN64(10) FN64(11) FN64(12) FN64(13) FN64(14) FN64(15) FN64(16) FN64(17)

#define P(n) fn##n,
#define P8(n) P(n##0) P(n##1) P(n##2) P(n##3) P(n##4) P(n##5) P(n##6) P(n##7)
#define P64(n) P8(n##0) P8(n##1) P8(n##2) P8(n##3) P8(n##4) P8(n##5) P8(n##6) P8(n##7)
static unsigned long (*const fns[NFUNCS])(unsigned long) = {
	P64(10) P64(11) P64(12) P64(13) P64(14) P64(15) P64(16) P64(17)
};

/* On a page of its own too: the last function's page is first touched by its call, not by main. */
__attribute__((aligned(4096))) int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	unsigned long acc = 1;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < NFUNCS; i++)
			acc = fns[i](acc); /* FORWARD */
		printf("forward %d: %016lx\n", r, acc);
		for (int i = NFUNCS - 1; i >= 0; i--)
			acc = fns[i](acc); /* BACKWARD */
		printf("backward %d: %016lx\n", r, acc);
	}
	return 0;
}
