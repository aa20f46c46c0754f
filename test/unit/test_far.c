/* Unit test of far memory outside a traced process: the staging store (farmem.c), the calls the
 * page's path makes (far.c) and every backend of the table (far_<name>.c): round trips one page at a
 * time and in runs, a full store, freed slots reused, a fork child's copy, and a failed write that
 * stops the run with its reason instead of losing a page. One line per case. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "far.h"

struct rt rt = { .page_size = 4096, .page_shift = 12 };
static int failures;

/* ---- the runtime calls far memory makes, as a program without a private fd table has them ---- */
int rt_fd_open(const char *path, int flags, mode_t mode, struct stat *st)
{
	(void)st;
	return open(path, flags, mode);
}
int rt_fd_borrow(int fd, bool *borrowed)
{
	*borrowed = false;
	return fd;
}
void rt_fd_unborrow(int b, bool borrowed)
{
	(void)b;
	(void)borrowed;
}
int rt_fd_own(int fd)
{
	return fd;
}
int uffd_register(int fd, uintptr_t start, size_t len)
{
	(void)fd, (void)start, (void)len;
	return 0;
}
void *rt_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}
static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}
void rt_sort_u32(uint32_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u32);
}
uint64_t rt_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
uint64_t rt_time_add(_Atomic uint64_t *counter, uint64_t t0)
{
	uint64_t now = rt_mono_ns();
	atomic_fetch_add(counter, now - t0);
	return now;
}

/* rt_die stops the run: here it comes back to the case that expected it, with its message. */
static jmp_buf died;
static char died_msg[512];
void rt_die(const char *what, const char *why, const char *todo)
{
	snprintf(died_msg, sizeof(died_msg), "fltrace: %s: %s; %s", what, why, todo);
	longjmp(died, 1);
}

/* ---- cases ---- */
static void check(int ok, const char *name, const char *backend, const char *detail)
{
	if (ok) {
		printf("PASS far_%s_%s\n", backend, name);
	} else {
		printf("FAIL far_%s_%s: %s\n", backend, name, detail);
		failures++;
	}
}

static void fill(void *p, unsigned seed)
{
	unsigned char *c = p;
	for (unsigned i = 0; i < 4096; i++)
		c[i] = (unsigned char)(seed * 131 + i * 7 + 1);
}

static bool holds(const void *p, unsigned seed)
{
	unsigned char want[4096];
	fill(want, seed);
	return memcmp(p, want, sizeof(want)) == 0;
}

#define SLOTS 300 /* farmem_init adds none: -M's pages are what the caller asks for */

/* Evicts `n` pages with contents seed .. seed + n - 1 into a fresh run of slots, as evict.c does: the
 * page lands in its staging slot, then far_pages_out hands the run to the backend. */
static int evict_run(unsigned n, unsigned seed, uint32_t *first)
{
	if (farmem_alloc_run(n, first) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++)
		fill(farmem_addr(*first + i), seed + i);
	far_pages_out(*first, n);
	return 0;
}

static void test_backend(unsigned id, const char *dir)
{
	const char *name = fltrace_backend_name(id);
	char detail[128];
	rt.cfg.far = id;
	rt.cfg.far_arg = far_backend_of(id)->put ? dir : NULL;
	check(farmem_init(SLOTS) == 0 && far_init() == 0, "init", name, "the store or backend did not start");

	/* Round trips: runs of 1, 7 and 64 slots; every page comes back byte for byte. */
	uint32_t first[3];
	unsigned runs[3] = { 1, 7, 64 }, seed = 0;
	bool ok = true;
	for (unsigned r = 0; r < 3; r++) {
		ok &= evict_run(runs[r], seed, &first[r]) == 0;
		seed += runs[r];
	}
	seed = 0;
	for (unsigned r = 0; r < 3 && ok; r++)
		for (unsigned i = 0; i < runs[r]; i++)
			ok &= holds(far_page_source(first[r] + i), seed++);
	check(ok, "round_trips", name, "a page read back differs from the one put");
	/* A page the backend keeps elsewhere leaves no memory in the staging slot. */
	if (far_backend_of(id)->put) {
		unsigned char vec = 1;
		mincore(farmem_addr(first[2]), 4096, &vec);
		check(!(vec & 1), "staging_dropped", name, "the staging slot still holds the page");
	}

	/* A full store: slots run out at exactly SLOTS, then a freed slot is taken again and holds the
	 * new page. */
	unsigned taken = 72;
	uint32_t s;
	while (farmem_alloc_run(1, &s) == 0)
		taken++;
	snprintf(detail, sizeof(detail), "%u slots taken of %u", taken, SLOTS);
	check(taken == SLOTS, "full_store", name, detail);
	farmem_free(first[1] + 3);
	ok = farmem_alloc_run(1, &s) == 0 && s == first[1] + 3;
	if (ok) {
		fill(farmem_addr(s), 999);
		far_pages_out(s, 1);
		ok = holds(far_page_source(s), 999) && holds(far_page_source(first[1] + 2), 3);
	}
	check(ok, "freed_slot_reused", name, "a freed slot was not given again or did not round trip");

	/* --far-latency: waited at each fetch and counted apart. */
	rt.cfg.far_latency_ns = 200000;
	uint64_t before = atomic_load(&rt.stats.time.far_wait);
	far_page_source(first[0]);
	rt.cfg.far_latency_ns = 0;
	check(atomic_load(&rt.stats.time.far_wait) - before >= 200000, "latency_counted", name,
	      "the wait was not counted in t_far_wait");
}

/* The file backend alone: the fork copy, a failed write, a bad directory. */
static void test_file(const char *dir)
{
	const struct far_backend *b = far_backend_of(FLTRACE_BACKEND_file);
	unsigned char page[4096], back[4096];
	bool ok;

	/* The file is unnamed: nothing in the directory. */
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s)\"", dir);
	check(system(cmd) == 0, "unnamed", "file", "the directory is not empty");

	/* Fork: the child's copy holds every page as it was; the parent's later writes do not reach it. */
	fill(page, 5);
	ok = b->put(10, page, 1) == 0;
	int err = b->fork_prepare();
	fill(page, 6);
	ok &= b->put(10, page, 1) == 0; /* the parent, after the fork */
	b->fork_child();                /* from here on, the child's copy */
	ok &= err == 0 && b->get(10, back, 1) == 0 && holds(back, 5);
	check(ok, "fork_copy", "file", "the child's copy differs from the parent's page at the fork");

	/* A failed write (the file may not grow: RLIMIT_FSIZE, as a full disk would refuse it): the run
	 * stops with the reason, and the staging copy is still there. */
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit small = { 4096 * 8, 4096 * 8 }, old;
	getrlimit(RLIMIT_FSIZE, &old);
	setrlimit(RLIMIT_FSIZE, &small);
	err = b->put(1000, page, 1);
	check(err == -EFBIG, "full_medium_reported", "file", err ? strerror(-err) : "the write succeeded");
	uint32_t s = 0;
	bool stopped = false;
	died_msg[0] = 0;
	if (setjmp(died) == 0) {
		farmem_free(200); /* room in the staging store, past what the file may hold */
		if (farmem_alloc_run(1, &s) == 0) {
			fill(farmem_addr(s), 4242);
			far_pages_out(s + 0, 1);
		}
	} else {
		stopped = true;
	}
	setrlimit(RLIMIT_FSIZE, &old);
	check(stopped && strstr(died_msg, "fltrace: far memory: cannot write an evicted page to ") &&
		      strstr(died_msg, "File too large") && holds(farmem_addr(s), 4242),
	      "failed_write_stops", "file", died_msg[0] ? died_msg : "far_pages_out returned");

	/* A slot never written reads back as an error, never as made-up zeros. */
	check(b->get(5000, back, 1) < 0, "unwritten_refused", "file", "a page never written read back");
	/* Not a directory that takes an unnamed file. */
	check(b->init("/proc") < 0, "bad_dir_refused", "file", "init in /proc succeeded");
}

int main(void)
{
	char dir[] = "/tmp/fltrace-far-test.XXXXXX";
	if (!mkdtemp(dir)) {
		printf("FAIL far_tmpdir: %s\n", strerror(errno));
		return 1;
	}
	for (unsigned id = 0; id < FLTRACE_BACKEND_COUNT; id++)
		test_backend(id, dir);
	test_file(dir);
	check(far_backend_of(FLTRACE_BACKEND_COUNT) == NULL, "past_table", "table", "a backend past the table");
	rmdir(dir);
	return failures ? 1 : 0;
}
