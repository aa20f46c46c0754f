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
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "far.h"
#include "fltrace/memcache.h"
#include <sys/wait.h>

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
void rt_zap_ranges(const struct iovec *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		madvise(v[i].iov_base, v[i].iov_len, MADV_DONTNEED);
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

int fdtable_call(int (*fn)(void *), void *arg)
{
	return fn(arg); /* one fd table here */
}
void rt_fd_close(int fd)
{
	if (fd >= 0)
		close(fd);
}
size_t rt_read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, cap, f) : 0;
	if (f)
		fclose(f);
	return n;
}
void rt_log(const char *msg)
{
	printf("    fltrace: %s\n", msg);
}

/* rt_die stops the run: here it comes back to the case that expected it, with its message. */
static jmp_buf died;
static char died_msg[512];
static int died_status;
void rt_die_status(int status, const char *what, const char *why, const char *todo)
{
	snprintf(died_msg, sizeof(died_msg), "fltrace: %s: %s; %s", what, why, todo);
	died_status = status;
	longjmp(died, 1);
}
void rt_die(const char *what, const char *why, const char *todo)
{
	rt_die_status(FLTRACE_EXIT_RUNTIME, what, why, todo);
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

/* Pages in slots first .. first + n - 1 leave as an eviction's do: handed to the backend, which
 * takes single pages at the eviction's end (far_out_flush), and their staging copies dropped. */
static void evicted(uint32_t first, unsigned n)
{
	far_pages_out(first, n);
	far_out_flush();
	farmem_drops_flush();
}

/* Evicts `n` pages with contents seed .. seed + n - 1 into a fresh run of slots, as evict.c does: the
 * page lands in its staging slot, then the backend takes the run. */
static int evict_run(unsigned n, unsigned seed, uint32_t *first)
{
	if (farmem_alloc_run(n, first) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++)
		fill(farmem_addr(*first + i), seed + i);
	evicted(*first, n);
	return 0;
}

/* The argument each backend of the table takes here: a directory, the test session's servers. */
static const char *backend_arg(unsigned id, const char *dir)
{
	if (id == FLTRACE_BACKEND_memcached)
		return getenv("FLTRACE_TEST_MEMCACHED");
	return far_backend_of(id)->put ? dir : NULL;
}

static void test_backend(unsigned id, const char *dir)
{
	const char *name = fltrace_backend_name(id);
	char detail[128];
	rt.cfg.far = id;
	rt.cfg.far_arg = backend_arg(id, dir);
	if (id == FLTRACE_BACKEND_memcached && !rt.cfg.far_arg) {
		printf("SKIP far_%s: no test servers (FLTRACE_TEST_MEMCACHED, set by test/run.sh)\n", name);
		return;
	}
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
		far_pages_out(s, 1); /* queued: the read below sends it first */
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
			evicted(s, 1);
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

/* ---- the memcached backend against the test session's servers ---- */

static char mc_run[17]; /* this test's run: its items' prefix, random */

/* The keys of this run on a server (lru_crawler metadump, the text protocol), newline-separated. */
static size_t mc_keys(const struct mc_addr *a, char *out, size_t cap)
{
	int fd = mc_connect(a, mc_deadline(2000));
	if (fd < 0)
		return 0;
	char buf[65536], line[512];
	size_t n = 0, ll = 0;
	char want[64];
	snprintf(want, sizeof(want), "key=fltrace%%3A%s%%3A", mc_run);
	mc_send(fd, "lru_crawler metadump all\r\n", 26, mc_deadline(2000));
	for (bool done = false; !done;) {
		long got = mc_recv_some(fd, buf, sizeof(buf), mc_deadline(5000));
		if (got <= 0)
			break;
		for (long i = 0; i < got && !done; i++) {
			if (buf[i] != '\n') {
				if (ll + 1 < sizeof(line))
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = 0;
			ll = 0;
			done = !strncmp(line, "END", 3) || !strncmp(line, "BUSY", 4);
			if (strncmp(line, want, strlen(want)))
				continue;
			char *k = line + 4;
			k[strcspn(k, " ")] = 0;
			for (char *c = k; *c; c++) /* %3A back to ':' */
				if (c[0] == '%' && c[1] == '3' && c[2] == 'A') {
					*c = ':';
					memmove(c + 1, c + 3, strlen(c + 3) + 1);
				}
			n += (size_t)snprintf(out + n, cap - n, "%s\n", k);
		}
	}
	mc_close(fd);
	return n;
}

/* The server and key of the item holding `slot` (the key ends in ":<slot hex>"), or false. */
static bool mc_find(const struct mc_addr *v, unsigned nv, uint32_t slot, unsigned *server, char *key)
{
	static char keys[1 << 20];
	char tail[16];
	snprintf(tail, sizeof(tail), ":%x\n", slot);
	for (unsigned s = 0; s < nv; s++) {
		mc_keys(&v[s], keys, sizeof(keys));
		for (char *k = keys; *k; k = strchr(k, '\n') + 1) {
			size_t len = strcspn(k, "\n");
			if (len > strlen(tail) - 1 && !strncmp(k + len - (strlen(tail) - 1), tail, strlen(tail) - 1)) {
				memcpy(key, k, len);
				key[len] = 0;
				*server = s;
				return true;
			}
		}
	}
	return false;
}

/* A raw get or set of one item, as someone with access to the server would. */
static long mc_raw(const struct mc_addr *a, uint8_t op, const char *key, void *val, size_t len)
{
	int fd = mc_connect(a, mc_deadline(2000));
	static char req[MC_HDR + 8 + 256 + 8192];
	size_t n = mc_request(req, op, 0, key, (uint16_t)strlen(key), op == MC_SET ? (uint32_t)len : 0);
	if (op == MC_SET) {
		memcpy(req + n, val, len);
		n += len;
	}
	struct mc_response r;
	long got = -1;
	if (fd >= 0 && !mc_send(fd, req, n, mc_deadline(2000)) && !mc_recv_response(fd, &r, mc_deadline(2000))) {
		size_t vl = r.bodylen - r.extlen - r.keylen;
		if (r.status == MC_OK && op == MC_GET && vl <= len && !mc_skip(fd, r.extlen + r.keylen, mc_deadline(2000)) &&
		    !mc_recv(fd, val, vl, mc_deadline(2000)))
			got = (long)vl;
		else if (r.status == MC_OK && op != MC_GET)
			got = 0;
	}
	mc_close(fd);
	return got;
}

/* far_page_source stops the run (here: comes back) with the failure's status and message. */
static bool source_refused(uint32_t slot, int *status)
{
	died_msg[0] = 0;
	if (setjmp(died) == 0) {
		far_page_source(slot);
		return false;
	}
	*status = died_status;
	return true;
}

/* This test's items go (what fltrace record does after a run). */
static void mc_clear(const char *list)
{
	struct mc_addr v[MC_SERVERS_MAX];
	unsigned nv;
	char bad[64];
	static char keys[1 << 20];
	if (!list || mc_list_parse(list, v, MC_SERVERS_MAX, &nv, bad, sizeof(bad)) < 0)
		return;
	for (unsigned s = 0; s < nv; s++) {
		mc_keys(&v[s], keys, sizeof(keys));
		for (char *k = keys; *k; k = strchr(k, '\n') + 1) {
			k[strcspn(k, "\n")] = 0;
			mc_raw(&v[s], MC_DELETE, k, NULL, 0);
			k[strlen(k)] = '\n';
		}
	}
}

static void test_memcached(const char *list)
{
	const struct far_backend *b = far_backend_of(FLTRACE_BACKEND_memcached);
	struct mc_addr v[MC_SERVERS_MAX];
	unsigned nv, s1, s2;
	char bad[64], k1[128], k2[128];
	static unsigned char page[4096], item[8192], old[8192];
	int status = 0;
	if (!list || mc_list_parse(list, v, MC_SERVERS_MAX, &nv, bad, sizeof(bad)) < 0) {
		printf("SKIP far_memcached_items: no test servers (FLTRACE_TEST_MEMCACHED, set by test/run.sh)\n");
		return;
	}
	/* (far_init ran in test_backend just before: the keys are this run's, rt.cfg.far_run.) */
	/* No page content in the clear: a page of one repeated 16-byte line is nowhere in its item. */
	for (unsigned i = 0; i < 4096; i++)
		page[i] = "fltrace-secret!!"[i % 16];
	memcpy(farmem_addr(5), page, 4096);
	evicted(5, 1);
	bool found = mc_find(v, nv, 5, &s1, k1);
	long n = found ? mc_raw(&v[s1], MC_GET, k1, item, sizeof(item)) : -1;
	check(n == 4136 && !memmem(item, (size_t)n, "fltrace-secret!!", 16) && !memmem(item, (size_t)n, "secret", 6),
	      "no_plaintext", "memcached", found ? "the item holds the page's bytes (or was not read)" : "no item for slot 5");

	/* Altered on the server: refused, the run stops with FLTRACE_EXIT_FAR_LOST. */
	if (n > 0) {
		item[n / 2] ^= 0x55;
		mc_raw(&v[s1], MC_SET, k1, item, (size_t)n);
	}
	check(source_refused(5, &status) && status == FLTRACE_EXIT_FAR_LOST && strstr(died_msg, "altered"),
	      "altered_refused", "memcached", died_msg[0] ? died_msg : "the altered page was accepted");

	/* Swapped with another slot's item (slots 6 and 7 on whatever servers): refused. */
	fill(farmem_addr(6), 66);
	fill(farmem_addr(7), 77);
	evicted(6, 2);
	long n6 = mc_find(v, nv, 6, &s1, k1) ? mc_raw(&v[s1], MC_GET, k1, item, sizeof(item)) : -1;
	long n7 = mc_find(v, nv, 7, &s2, k2) ? mc_raw(&v[s2], MC_GET, k2, old, sizeof(old)) : -1;
	if (n6 > 0 && n7 > 0) {
		mc_raw(&v[s1], MC_SET, k1, old, (size_t)n7);
		mc_raw(&v[s2], MC_SET, k2, item, (size_t)n6);
	}
	check(n6 > 0 && n7 > 0 && source_refused(6, &status) && source_refused(7, &status),
	      "swapped_refused", "memcached", "a page swapped with another slot's was accepted");

	/* Replayed: slot 8's first version put back after a second was written there. */
	fill(farmem_addr(8), 81);
	evicted(8, 1);
	long n8 = mc_find(v, nv, 8, &s1, k1) ? mc_raw(&v[s1], MC_GET, k1, old, sizeof(old)) : -1;
	fill(farmem_addr(8), 82);
	evicted(8, 1);
	{
		bool ok = n8 > 0 && holds(far_page_source(8), 82);
		mc_raw(&v[s1], MC_SET, k1, old, (size_t)n8);
		check(ok && source_refused(8, &status), "replayed_refused", "memcached",
		      "an older version of the slot's page was accepted");
	}
	/* Dropped by the server: the run stops, naming the server and the slot. */
	fill(farmem_addr(9), 99);
	evicted(9, 1);
	if (mc_find(v, nv, 9, &s1, k1))
		mc_raw(&v[s1], MC_DELETE, k1, NULL, 0);
	check(source_refused(9, &status) && status == FLTRACE_EXIT_FAR_LOST && strstr(died_msg, "does not have the "
	      "evicted page of slot 9"), "dropped_page_stops", "memcached", died_msg[0] ? died_msg : "no stop");

	/* Fork: the child reads its own copy of the far pages, as they were at the fork; the parent's
	 * later writes do not reach it. (The slots spoiled above are freed first: a fork copies every
	 * far page, and a spoiled one would stop it.) */
	b->free(5, 5);
	fill(farmem_addr(10), 5);
	evicted(10, 1);
	int err = b->fork_prepare();
	pid_t pid = err ? -1 : fork();
	if (pid == 0) {
		b->fork_child();
		unsigned char back[4096];
		_exit(b->get(10, back, 1) == 0 && holds(back, 5) ? 0 : 1);
	}
	fill(farmem_addr(10), 6);
	evicted(10, 1);
	int ws = -1;
	if (pid > 0)
		waitpid(pid, &ws, 0);
	check(pid > 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && holds(far_page_source(10), 6), "fork_copy",
	      "memcached", "the child's copy differs from the parent's page at the fork, or the parent's changed");

	/* Freed slots' items went with the next round (slots 5-9 were freed before slot 10's pages
	 * went out): the servers keep only pages still needed. */
	bool gone = !mc_find(v, nv, 6, &s1, k1) && !mc_find(v, nv, 8, &s1, k1), kept = mc_find(v, nv, 10, &s1, k1);
	check(gone && kept, "freed_items_deleted", "memcached", !kept ? "slot 10's item is not on the servers" :
	      "a freed slot's item is still on its server after the next round");
}

int main(void)
{
	char dir[] = "/tmp/fltrace-far-test.XXXXXX";
	if (!mkdtemp(dir)) {
		printf("FAIL far_tmpdir: %s\n", strerror(errno));
		return 1;
	}
	srand((unsigned)getpid() ^ (unsigned)time(NULL));
	for (int i = 0; i < 16; i++)
		mc_run[i] = "0123456789abcdef"[rand() % 16];
	rt.cfg.far_run = mc_run;
	rt.cfg.far_timeout_ms = 120000; /* a slow server on a busy machine is no verdict here */
	/* each backend's own cases right after its walk, while it is the one far.c uses */
	for (unsigned id = 0; id < FLTRACE_BACKEND_COUNT; id++) {
		test_backend(id, dir);
		if (id == FLTRACE_BACKEND_file)
			test_file(dir);
		if (id == FLTRACE_BACKEND_memcached)
			test_memcached(getenv("FLTRACE_TEST_MEMCACHED"));
	}
	mc_clear(getenv("FLTRACE_TEST_MEMCACHED"));
	check(far_backend_of(FLTRACE_BACKEND_COUNT) == NULL, "past_table", "table", "a backend past the table");
	rmdir(dir);
	return failures ? 1 : 0;
}
