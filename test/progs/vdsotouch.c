/* Test program for faults taken inside the kernel's vDSO: clock_gettime writes its result into
 * each fresh page of a buffer, so every first touch is made by the vDSO's code, called from one
 * line of ours. Usage: vdsotouch PAGES */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	size_t pages = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	char *p = malloc((pages + 1) * 4096);
	if (!p)
		return 1;
	char *page = (char *)(((unsigned long)p + 4095) & ~4095ul);
	for (size_t i = 0; i < pages; i++)
		clock_gettime(CLOCK_MONOTONIC, (struct timespec *)(page + i * 4096)); /* VDSO-CALL */
	printf("%zu pages\n", pages);
	return 0;
}
