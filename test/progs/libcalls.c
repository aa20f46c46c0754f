/* Faults the kernel takes inside system calls that libc makes for the program, not through
 * fltrace's interposed wrappers: stdio reading straight into the caller's buffer, stat into a struct,
 * a futex wait reading its word. */
#include <errno.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define STATS 64
#define FUTEXES 16

static unsigned long long sum(const unsigned char *p, size_t n)
{
	unsigned long long s = 0;
	for (size_t i = 0; i < n; i++)
		s = s * 31 + p[i];
	return s;
}

__attribute__((noinline)) static size_t read_file(const char *path, unsigned char *buf, size_t n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t got = fread(buf, 1, n, f); /* LIBCALL-FREAD */
	fclose(f);
	return got;
}

__attribute__((noinline)) static int stat_many(char *area, int n)
{
	int ok = 0;
	for (int i = 0; i < n; i++)
		ok += stat("/", (struct stat *)(area + (size_t)i * PAGE)) == 0; /* LIBCALL-STAT */
	return ok;
}

/* Each wait reads a fresh word (0, as expected) and times out after 1 ms. */
__attribute__((noinline)) static int futex_waits(char *area, int n)
{
	int timeouts = 0;
	struct timespec ts = { 0, 1000000 };
	for (int i = 0; i < n; i++) {
		int *word = (int *)(area + (size_t)i * PAGE);
		long r = syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0); /* LIBCALL-FUTEX */
		timeouts += r == -1 && errno == ETIMEDOUT;
	}
	return timeouts;
}

/* libcalls FILE BYTES: fread()s BYTES of FILE into fresh memory, then stat()s into fresh pages and
 * waits on futex words in fresh pages. */
int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: libcalls FILE BYTES\n");
		return 2;
	}
	size_t n = strtoull(argv[2], NULL, 0);
	unsigned char *buf = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *area = mmap(NULL, (size_t)STATS * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *words = mmap(NULL, (size_t)FUTEXES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || area == MAP_FAILED || words == MAP_FAILED)
		return 1;
	size_t got = read_file(argv[1], buf, n); /* MAIN-FREAD */
	printf("fread %zu sum %016llx\n", got, sum(buf, got));
	printf("stat %d\n", stat_many(area, STATS)); /* MAIN-STAT */
	printf("futex timeouts %d\n", futex_waits(words, FUTEXES)); /* MAIN-FUTEX */
	return 0;
}
