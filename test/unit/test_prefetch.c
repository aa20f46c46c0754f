/* Unit tests of the prefetchers (src/runtime/prefetch_*.c) outside a traced process: each runs on
 * access strings against a simulated memory that plays prefetch.c's part (far pages, staged pages,
 * hits), with room for every page, so the counts are the prefetcher's alone. One line per case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefetch.h"

#define PREFETCH_DECLARE(name, help) extern const struct prefetch_ops prefetch_##name;
FLTRACE_PREFETCHERS(PREFETCH_DECLARE)
#define PREFETCH_ROW(name, help) &prefetch_##name,
static const struct prefetch_ops *const table[] = { FLTRACE_PREFETCHERS(PREFETCH_ROW) };

static int failures;

static void check(const char *name, int cond, const char *fmt, unsigned long long a, unsigned long long b)
{
	if (cond) {
		printf("PASS %s\n", name);
		return;
	}
	printf("FAIL %s: ", name);
	printf(fmt, a, b);
	printf("\n");
	failures++;
}

/* ---- the simulated memory: pages BASE .. BASE + SIM_PAGES - 1, far until touched ---- */
#define SIM_PAGES 4096
#define BASE 0x10000ull
enum { FAR, STAGED, LOCAL };
static struct {
	unsigned char state[SIM_PAGES];
	unsigned long long misses, hits, staged;
} sim;

/* One access by thread `tid` to `page` of the mapping [first, end): a miss or a hit (counted in
 * sim), then the far pages the prefetcher names staged. A resident page is no access (no fault,
 * nothing for the prefetcher to see). Returns how many pages it named outside the mapping. */
static unsigned sim_touch(const struct prefetch_ops *ops, uint64_t page, uint64_t first, uint64_t end, int tid)
{
	unsigned p = (unsigned)(page - BASE), outside = 0;
	if (sim.state[p] == LOCAL)
		return 0;
	bool hit = sim.state[p] == STAGED;
	sim.hits += hit;
	sim.misses += !hit;
	sim.state[p] = LOCAL;
	uint64_t want[PREFETCH_MAX];
	struct prefetch_access a = { .page = page, .first = first, .end = end, .tid = tid, .hit = hit };
	unsigned k = ops->predict(&a, want, PREFETCH_MAX);
	for (unsigned j = 0; j < k; j++) {
		uint64_t q = want[j] - BASE;
		outside += want[j] < first || want[j] >= end;
		if (want[j] >= BASE && q < SIM_PAGES && sim.state[q] == FAR) {
			sim.state[q] = STAGED;
			sim.staged++;
		}
	}
	return outside;
}

/* Runs `ops` over the pages `seq` (page indexes), touched in order by thread 1; the pages past the
 * highest one touched are not far (as memory past a mapping's end is not). */
static void sim_run(const struct prefetch_ops *ops, const unsigned *seq, unsigned n)
{
	memset(&sim, 0, sizeof(sim));
	unsigned top = 0;
	for (unsigned i = 0; i < n; i++)
		top = seq[i] + 1 > top ? seq[i] + 1 : top;
	memset(sim.state + top, LOCAL, SIM_PAGES - top);
	if (ops->init)
		ops->init();
	for (unsigned i = 0; i < n; i++)
		sim_touch(ops, BASE + seq[i], BASE, BASE + SIM_PAGES, 1);
}

static unsigned seq[SIM_PAGES];

static unsigned make_seq(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		seq[i] = i;
	return n;
}

static unsigned make_stride(unsigned n, unsigned s)
{
	unsigned k = 0;
	for (unsigned start = 0; start < s; start++)
		for (unsigned i = start; i < n; i += s)
			seq[k++] = i;
	return k;
}

/* A fixed pseudo-random order of n pages; returns how many steps go to a neighbouring page. */
static unsigned make_random(unsigned n, unsigned *adjacent)
{
	make_seq(n);
	uint64_t x = 88172645463325252ull;
	for (unsigned i = n - 1; i > 0; i--) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned j = (unsigned)(x % (i + 1)), t = seq[i];
		seq[i] = seq[j];
		seq[j] = t;
	}
	*adjacent = 0;
	for (unsigned i = 1; i < n; i++)
		*adjacent += seq[i] == seq[i - 1] + 1 || seq[i] + 1 == seq[i - 1];
	return n;
}

/* Every row of the table has its operations (a row without a file fails to link). */
static void check_table(void)
{
	unsigned ok = 0;
	for (unsigned i = 0; i < FLTRACE_PREFETCH_COUNT; i++)
		ok += table[i] && table[i]->predict;
	check("table_complete", ok == FLTRACE_PREFETCH_COUNT, "%llu of %llu prefetchers complete", ok,
	      FLTRACE_PREFETCH_COUNT);
	check("default_is_none", fltrace_prefetch_find(FLTRACE_PREFETCH_DEFAULT) == FLTRACE_PREFETCH_none,
	      "%llu%llu", 0, 0);
	sim_run(&prefetch_none, seq, make_seq(1024));
	check("none_prefetches_nothing", sim.staged == 0 && sim.misses == 1024, "%llu staged, %llu misses",
	      sim.staged, sim.misses);
}

/* Linux's window on a scan: 1 page (the first miss is not known to be sequential), then 2, 4, 8,
 * 16, 32 (the cap), 32, ...: misses at pages 0, 1, 3, 7, 15, 31, 63, then every 32nd page. */
static void check_readahead(void)
{
	sim_run(&prefetch_readahead, seq, make_seq(1024));
	check("readahead_scan_misses", sim.misses == 7 + (1024 - 64) / 32, "%llu misses, expected %llu",
	      sim.misses, 7 + (1024 - 64) / 32);
	check("readahead_scan_all_used", sim.hits == sim.staged && sim.hits + sim.misses == 1024,
	      "%llu hits of %llu staged", sim.hits, sim.staged);
	unsigned adjacent;
	sim_run(&prefetch_readahead, seq, make_random(SIM_PAGES, &adjacent));
	/* Only a miss next to the last access (a window of 2: one page beside it) or a miss after a hit
	 * (4 pages around it) opens a window, and a window halves at each miss with neither: on a
	 * random order almost nothing is read ahead (here 15 pages of 4,096, from 6 neighbouring steps
	 * and the hits on what they staged). */
	check("readahead_random_quiet", sim.staged * 100 < SIM_PAGES && adjacent > 0,
	      "%llu staged (%llu neighbouring steps)", sim.staged, adjacent);
	/* Downwards, the window opens behind the page, as ahead of it upwards: the same misses. */
	unsigned n = make_seq(1024);
	for (unsigned i = 0; i < n / 2; i++) {
		unsigned t = seq[i];
		seq[i] = seq[n - 1 - i];
		seq[n - 1 - i] = t;
	}
	sim_run(&prefetch_readahead, seq, n);
	check("readahead_backward_scan_misses", sim.misses == 7 + (1024 - 64) / 32, "%llu misses, expected %llu",
	      sim.misses, 7 + (1024 - 64) / 32);
}

/* Two scans in two mappings, interleaved page by page: each mapping keeps its own window (Linux
 * keeps one per VMA), so each misses as a scan alone does; one window for the process would see
 * no step of one page and stay at 1. */
static void check_readahead_mappings(void)
{
	unsigned long long outside = 0;
	memset(&sim, 0, sizeof(sim));
	prefetch_readahead.init();
	for (unsigned i = 0; i < 1024; i++)
		for (unsigned m = 0; m < 2; m++)
			outside += sim_touch(&prefetch_readahead, BASE + 2048 * m + i, BASE + 2048 * m,
					     BASE + 2048 * m + 1024, 1);
	check("readahead_within_mapping", outside == 0, "%llu pages named outside their mapping%llu", outside, 0);
	check("readahead_per_mapping", sim.misses == 2 * (7 + (1024 - 64) / 32), "%llu misses, expected %llu",
	      sim.misses, 2 * (7 + (1024 - 64) / 32));
}

/* A stride of 3 pages: two equal strides confirm it, so each of the 3 sweeps misses its first
 * three pages and no other; a sweep's window past the end names no far page. */
static void check_stride(void)
{
	unsigned n = make_stride(SIM_PAGES, 3);
	sim_run(&prefetch_stride, seq, n);
	check("stride_3_misses", sim.misses == 9, "%llu misses, expected %llu", sim.misses, 9);
	check("stride_3_all_used", sim.hits == sim.staged && sim.hits == SIM_PAGES - 9,
	      "%llu hits of %llu staged", sim.hits, sim.staged);
	/* Readahead sees no sequential miss there: it stays out of the way. */
	sim_run(&prefetch_readahead, seq, n);
	check("stride_3_readahead_quiet", sim.staged <= 3, "%llu staged, %llu hits", sim.staged, sim.hits);
	/* Two threads with strides of their own, interleaved: each is followed apart. */
	sim_run(&prefetch_stride, seq, 0);
	memset(sim.state, FAR, sizeof(sim.state));
	for (unsigned i = 0; i < 400; i++)
		for (int t = 0; t < 2; t++)
			sim_touch(&prefetch_stride, BASE + (t ? 2048 + 5 * i : 2 * i), BASE, BASE + SIM_PAGES, 10 + t);
	check("stride_per_thread", sim.misses == 6, "%llu misses, expected %llu", sim.misses, 6);
}

/* Leap finds the majority delta in the newest 4 deltas (5 accesses) and prefetches at misses only,
 * a window that doubles with the last one's hits up to 32: about one miss in 33 pages once it runs. */
static void check_leap(void)
{
	sim_run(&prefetch_leap, seq, make_stride(SIM_PAGES, 3));
	check("leap_stride_3", sim.misses <= SIM_PAGES / 32 + 3 * 8 && sim.hits == sim.staged,
	      "%llu misses, %llu wasted", sim.misses, sim.staged - sim.hits);
	unsigned adjacent;
	sim_run(&prefetch_leap, seq, make_random(SIM_PAGES, &adjacent));
	check("leap_random_quiet", sim.staged < SIM_PAGES / 100, "%llu staged of %llu accesses",
	      sim.staged, SIM_PAGES);
}

int main(void)
{
	check_table();
	check_readahead();
	check_readahead_mappings();
	check_stride();
	check_leap();
	return failures ? 1 : 0;
}
