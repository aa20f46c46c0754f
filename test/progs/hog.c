/* Load for `make test-loaded`: keeps one CPU busy and its memory churning (map, write every page,
 * unmap), so that the suite runs as on a shared machine. Usage: hog MB. Runs until killed, or until
 * the process that started it is gone (so that no hog outlives its run, however that run ended). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	size_t len = mb << 20, page = (size_t)sysconf(_SC_PAGESIZE);
	if (mb == 0) {
		fprintf(stderr, "usage: hog MB\n");
		return 2;
	}
	pid_t parent = getppid();
	for (unsigned long round = 0; getppid() == parent; round++) {
		volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			continue;
		for (size_t i = 0; i < len; i += page)
			p[i] = (char)(i + round);
		/* a few passes of pure CPU over it, so that not all the time is page faults */
		unsigned long sum = 0;
		for (int pass = 0; pass < 4; pass++)
			for (size_t i = 0; i < len; i += 64)
				sum += (unsigned char)p[i];
		munmap((void *)p, len);
		if (sum == 1)
			putchar('.');
	}
	return 0;
}
