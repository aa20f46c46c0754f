/* A process-wide signal arriving all the time (SIGALRM every 200 us) while the program maps,
 * touches and unmaps memory: its handler, alone on its page of code, counts into the heap. Under
 * fltrace the signal must never run the handler on one of fltrace's threads (the handler's code
 * page, with --files=all, or its heap page may be missing: a fault only that thread could serve).
 * Output depends only on the arguments. Usage: sigalarm [iterations] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>

static volatile unsigned long *hits;

__attribute__((noinline, aligned(4096))) static void on_alarm(int sig)
{
	(*hits)++;
}

__attribute__((noinline, aligned(4096))) static unsigned long mix(unsigned long x)
{
	return x * 31 + 7;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	hits = calloc(1, sizeof(*hits));
	signal(SIGALRM, on_alarm);
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	setitimer(ITIMER_REAL, &it, NULL);
	unsigned long acc = 0;
	for (int i = 0; i < n; i++) {
		char *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		p[4096] = (char)i; /* SIGALARM-TOUCH */
		acc = mix(acc + (unsigned char)p[4096]);
		munmap(p, 1 << 16);
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	printf("%016lx signals seen: %d\n", acc, *hits > 0);
	return 0;
}
