/* Test workload: private file mappings read forwards, backwards and at random, written (the file
 * must not change), mapped at an offset, cut, moved, protected, forked, and touched past the end.
 * Usage: filemap all <dir> <MB>   every case, one line each (same output traced and untraced)
 *        filemap seq <file> [<first page> <pages>]
 *                                 read every page of an existing file (or of that part) once, in order */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t ps;

static uint8_t gen(uint64_t i) /* the byte the file holds at offset i */
{
	return (uint8_t)((i * 131) ^ (i >> 11) ^ (i >> 19) ^ 0x5a);
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void file_create(const char *path, uint64_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	uint8_t buf[65536];
	for (uint64_t off = 0; off < size;) {
		size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);
		for (size_t i = 0; i < n; i++)
			buf[i] = gen(off + i);
		if (write(fd, buf, n) != (ssize_t)n)
			die("write");
		off += n;
	}
	close(fd);
}

/* Maps [off, off+len) of path privately; the fd is closed at once (the mapping must not care). */
static uint8_t *map_file(const char *path, size_t len, int prot, off_t off)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open");
	void *p = mmap(NULL, len, prot, MAP_PRIVATE, fd, off);
	if (p == MAP_FAILED)
		die("mmap");
	close(fd);
	return p;
}

/* Mismatches of [p, p+len) against the file's bytes from file offset `off`. */
static uint64_t mismatches(const uint8_t *p, size_t len, uint64_t off)
{
	uint64_t bad = 0;
	for (size_t i = 0; i < len; i++)
		bad += p[i] != gen(off + i);
	return bad;
}

static uint64_t fnv(const uint8_t *p, size_t len, uint64_t h)
{
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static sigjmp_buf bus_jmp;
static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

static int seq(const char *path, off_t first, off_t len)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0)
		die(path);
	if (len == 0)
		len = st.st_size;
	const uint8_t *p = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, first);
	if (p == MAP_FAILED)
		die("mmap");
	close(fd);
	uint64_t sum = 0;
	for (off_t i = 0; i < len; i += (off_t)ps)
		sum += p[i];
	printf("seq pages %llu sum %llu\n", (unsigned long long)((len + (off_t)ps - 1) / (off_t)ps),
	       (unsigned long long)sum);
	return 0;
}

int main(int argc, char **argv)
{
	ps = (size_t)sysconf(_SC_PAGESIZE);
	if (argc == 3 && strcmp(argv[1], "seq") == 0)
		return seq(argv[2], 0, 0);
	if (argc == 5 && strcmp(argv[1], "seq") == 0)
		return seq(argv[2], (off_t)atoll(argv[3]) * (off_t)ps, (off_t)atoll(argv[4]) * (off_t)ps);
	if (argc != 4 || strcmp(argv[1], "all") != 0) {
		fprintf(stderr, "usage: filemap all <dir> <MB> | filemap seq <file> [<first page> <pages>]\n");
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/filemap.dat", argv[2]);
	uint64_t size = (uint64_t)atoi(argv[3]) << 20 | 1234; /* not a multiple of the page */
	size_t mlen = (size + ps - 1) & ~(ps - 1);
	file_create(path, size);
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* Forwards, backwards (page by page from the end), at random. */
	uint8_t *p = map_file(path, size, PROT_READ, 0);
	printf("forward mismatches %llu fnv %016llx\n", (unsigned long long)mismatches(p, size, 0),
	       (unsigned long long)fnv(p, size, 0xcbf29ce484222325ull));
	uint64_t h = 0xcbf29ce484222325ull, bad = 0;
	for (size_t pg = mlen / ps; pg-- > 0;) {
		size_t n = pg * ps + ps > size ? size - pg * ps : ps;
		bad += mismatches(p + pg * ps, n, pg * ps);
		h = fnv(p + pg * ps, n, h);
	}
	printf("backward mismatches %llu fnv %016llx\n", (unsigned long long)bad, (unsigned long long)h);
	uint64_t x = 12345, sum = 0;
	bad = 0;
	for (int i = 0; i < 200000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t off = (x >> 11) % size;
		sum += p[off];
		bad += p[off] != gen(off);
	}
	printf("random mismatches %llu sum %llu\n", (unsigned long long)bad, (unsigned long long)sum);
	/* Past the end of the file inside the last page: zeros. */
	uint64_t nonzero = 0;
	for (size_t i = size; i < mlen; i++)
		nonzero += p[i] != 0;
	printf("tail of last page nonzero bytes %llu\n", (unsigned long long)nonzero);
	if (msync(p, mlen, MS_SYNC) != 0)
		die("msync");
	printf("msync on a private mapping: 0\n");
	munmap(p, size);

	/* Beyond the last page: SIGBUS, as the kernel gives it. */
	struct sigaction sa = { .sa_handler = on_sigbus };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	p = map_file(path, mlen + 2 * ps, PROT_READ, 0);
	volatile uint8_t v = p[mlen - 1];
	int bus = 0;
	if (sigsetjmp(bus_jmp, 1) == 0)
		v = p[mlen + ps + 7];
	else
		bus = 1;
	(void)v;
	printf("beyond the last page: %s\n", bus ? "SIGBUS" : "no signal");
	munmap(p, mlen + 2 * ps);

	/* Writes to a private mapping stay in memory; the file does not change. */
	p = map_file(path, size, PROT_READ | PROT_WRITE, 0);
	for (size_t i = 0; i < size; i += 3 * ps)
		p[i] = (uint8_t)~gen(i);
	bad = 0;
	for (size_t i = 0; i < size; i++)
		bad += p[i] != (i % (3 * ps) == 0 ? (uint8_t)~gen(i) : gen(i));
	printf("written private mapping mismatches %llu\n", (unsigned long long)bad);
	/* MADV_DONTNEED throws a written page away: the file's data comes back. */
	madvise(p, ps, MADV_DONTNEED);
	printf("after MADV_DONTNEED first byte is the file's: %d\n", p[0] == gen(0));
	munmap(p, size);
	int fd = open(path, O_RDONLY);
	uint8_t *buf = malloc(size);
	if (fd < 0 || !buf || read(fd, buf, size) != (ssize_t)size)
		die("read back");
	close(fd);
	printf("file unchanged mismatches %llu\n", (unsigned long long)mismatches(buf, size, 0));
	free(buf);

	/* At an offset, then part of it unmapped, then moved and grown. */
	off_t off = (off_t)(5 * ps);
	size_t olen = 4u << 20;
	p = map_file(path, olen, PROT_READ, off);
	printf("offset mapping mismatches %llu\n", (unsigned long long)mismatches(p, olen, (uint64_t)off));
	munmap(p + ps * 16, ps * 32);
	bad = mismatches(p, ps * 16, (uint64_t)off) + mismatches(p + ps * 48, olen - ps * 48, (uint64_t)off + ps * 48);
	printf("after partial munmap mismatches %llu\n", (unsigned long long)bad);
	uint8_t *q = mremap(p + ps * 48, olen - ps * 48, olen - ps * 48 + (1u << 20), MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		die("mremap");
	printf("after mremap (grown) mismatches %llu\n",
	       (unsigned long long)mismatches(q, olen - ps * 48 + (1u << 20), (uint64_t)off + ps * 48));
	munmap(q, olen - ps * 48 + (1u << 20));
	munmap(p, ps * 16);

	/* mprotect: read-only pages made writable, written, read back. */
	p = map_file(path, 1u << 20, PROT_READ, 0);
	bad = mismatches(p, 1u << 20, 0);
	if (mprotect(p, 1u << 20, PROT_READ | PROT_WRITE) != 0)
		die("mprotect");
	for (size_t i = 0; i < (1u << 20); i += ps)
		p[i] ^= 0xff;
	for (size_t i = 0; i < (1u << 20); i++)
		bad += p[i] != (i % ps == 0 ? (uint8_t)(gen(i) ^ 0xff) : gen(i));
	printf("mprotect then write mismatches %llu\n", (unsigned long long)bad);

	/* fork: the child sees the same bytes (written ones, clean ones, never touched ones). */
	uint8_t *big = map_file(path, size, PROT_READ | PROT_WRITE, 0);
	for (size_t i = 0; i < size / 2; i += ps)
		big[i] = (uint8_t)~gen(i);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t b = mismatches(p, 1u << 20, 0);
		for (size_t i = 0; i < size; i++)
			b += big[i] != (i < size / 2 && i % ps == 0 ? (uint8_t)~gen(i) : gen(i));
		printf("fork child mismatches %llu (expected %llu)\n", (unsigned long long)b, (unsigned long long)(1u << 20) / ps);
		fflush(stdout);
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	printf("fork child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128);
	munmap(big, size);
	munmap(p, 1u << 20);
	unlink(path);
	return 0;
}
