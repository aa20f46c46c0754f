/* Unit tests of the eviction policies (src/runtime/policy*.c) outside a traced process: each runs
 * on reference strings against a simulated memory that plays evict.c's part (page states, the
 * resident and probation counts, probation's soft faults). One line per case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "policy.h"

struct rt rt;
static int failures;

/* The simulated memory plays pagestate.c's part too: a state change keeps the flags, clears the
 * queue bit (as pagestate_set does: any queue entry is stale from then on). */
static uint32_t sim_with_state(uint32_t w, unsigned s)
{
	return (w & ~(PG_STATE_MASK | PG_QUEUED)) | s;
}

/* ---- the simulated memory: pages BASE + i * PAGE, one state word each ---- */
#define SIM_PAGES 4096
#define PAGE 4096ul
#define BASE 0x10000000ul
static struct {
	uint32_t words[SIM_PAGES];
	const struct policy_ops *ops;
	uint64_t resident, probation, cap;
	unsigned batch;
	uint64_t faults, soft;
	uintptr_t evicted[1 << 16]; /* pages that left local memory, in order */
	unsigned n_evicted;
} sim;

static uintptr_t addr_of(unsigned page) { return BASE + page * PAGE; }

uint32_t *region_page(uintptr_t addr)
{
	if (addr < BASE || addr >= BASE + SIM_PAGES * PAGE)
		return NULL;
	return &sim.words[(addr - BASE) / PAGE];
}

void *rt_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void rt_unmap(void *p, size_t len) { munmap(p, len); }

void rt_die_bug(const char *file, int line, const char *cond)
{
	printf("FAIL bug: %s:%d: %s\n", file, line, cond);
	exit(1);
}

static void sim_left(uintptr_t page)
{
	if (sim.n_evicted < sizeof(sim.evicted) / sizeof(sim.evicted[0]))
		sim.evicted[sim.n_evicted++] = page;
}

unsigned evict_out(uintptr_t *pages, unsigned n, bool probation)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t *pg = region_page(pages[i]);
		if (pg_state(*pg) != PAGE_PRESENT)
			rt_die_bug(__FILE__, __LINE__, "a victim that is not resident");
		*pg = sim_with_state(*pg, probation ? PAGE_INACTIVE : PAGE_EVICTED);
		if (probation) {
			sim.probation++;
			sim.ops->page_on_probation(pages[i], pg);
		} else {
			sim.resident--;
			sim_left(pages[i]);
		}
	}
	return n;
}

void evict_probation_end(uintptr_t page)
{
	uint32_t *pg = region_page(page);
	if (pg_state(*pg) != PAGE_INACTIVE)
		rt_die_bug(__FILE__, __LINE__, "probation ended for a page not on probation");
	*pg = sim_with_state(*pg, PAGE_EVICTED);
	sim.probation--;
	sim.resident--;
	sim_left(page);
}

uint64_t evict_probation_pages(void) { return sim.probation; }
bool evict_has_probation(void) { return sim.ops->probation; }
uint64_t *prefetch_bits; /* no prefetcher here: policies meet only pages they were given */

static void sim_start(const char *policy, uint64_t cap, uint64_t seed)
{
	memset(&sim, 0, sizeof(sim));
	sim.ops = policy_ops_of((unsigned)fltrace_policy_find(policy));
	sim.cap = cap;
	/* evict.c's batch: an eighth of -L, 1 to POLICY_BATCH_MAX */
	sim.batch = cap / 8 ? (cap / 8 < POLICY_BATCH_MAX ? (unsigned)(cap / 8) : POLICY_BATCH_MAX) : 1;
	struct policy_limits lim = { .cap_pages = cap, .max_pages = SIM_PAGES, .batch = sim.batch, .seed = seed };
	for (unsigned i = 0; i < SIM_PAGES; i++)
		sim.words[i] = PG_READABLE | PG_WRITABLE;
	if (sim.ops->init(&lim) < 0)
		rt_die_bug(__FILE__, __LINE__, "policy init failed");
}

/* evict_make_room(1), as evict.c does it */
static void sim_make_room(void)
{
	if (sim.resident + 1 <= sim.cap)
		return;
	uint64_t target = sim.cap > sim.batch ? sim.cap - sim.batch : 0;
	while (sim.resident > target) {
		uint64_t want = sim.resident - target;
		if (!sim.ops->evict(want < POLICY_BATCH_MAX ? want : POLICY_BATCH_MAX))
			rt_die_bug(__FILE__, __LINE__, "nothing to evict with memory full");
	}
}

/* The program touches `page`: a hit, a soft fault (on probation) or a fault. */
static void sim_touch(unsigned page)
{
	uint32_t *pg = &sim.words[page];
	switch (pg_state(*pg)) {
	case PAGE_PRESENT:
		return;
	case PAGE_INACTIVE:
		*pg = sim_with_state(*pg, PAGE_PRESENT);
		sim.probation--;
		sim.soft++;
		sim.ops->page_touched(addr_of(page), pg);
		return;
	default:
		sim.faults++;
		sim_make_room();
		*pg = sim_with_state(*pg, PAGE_PRESENT);
		sim.resident++;
		sim.ops->page_in(addr_of(page), pg);
	}
}

static uint64_t faults_on(const char *policy, uint64_t cap, const unsigned *refs, unsigned n)
{
	sim_start(policy, cap, 1);
	for (unsigned i = 0; i < n; i++)
		sim_touch(refs[i]);
	return sim.faults;
}

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

/* ---- cases ---- */

static const unsigned belady[] = { 1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5 };
#define NREF(a) (sizeof(a) / sizeof((a)[0]))

static void check_belady(void)
{
	uint64_t f3 = faults_on("fifo", 3, belady, NREF(belady)), f4 = faults_on("fifo", 4, belady, NREF(belady));
	check("fifo_belady_anomaly", f3 == 9 && f4 == 10, "3 frames: %llu faults, 4 frames: %llu (expected 9, 10)",
	      f3, f4);
	const char *recency[] = { "clock", "sfifo" };
	for (unsigned i = 0; i < 2; i++) {
		char name[64];
		uint64_t r3 = faults_on(recency[i], 3, belady, NREF(belady));
		uint64_t r4 = faults_on(recency[i], 4, belady, NREF(belady));
		snprintf(name, sizeof(name), "%s_no_belady_anomaly", recency[i]);
		check(name, r4 <= r3, "3 frames: %llu faults, 4 frames: %llu", r3, r4);
	}
}

/* FIFO's victim order is arrival order: 1..8 in, then 9..12 push out 1..4. */
static void check_fifo_order(void)
{
	sim_start("fifo", 8, 1);
	for (unsigned p = 1; p <= 12; p++)
		sim_touch(p);
	int ok = sim.n_evicted == 4;
	for (unsigned i = 0; ok && i < 4; i++)
		ok = sim.evicted[i] == addr_of(1 + i);
	check("fifo_evicts_in_arrival_order", ok, "%llu pages left, first 0x%llx", sim.n_evicted,
	      sim.n_evicted ? sim.evicted[0] : 0);
}

/* A hot set touched between steps of a stream (test/progs/hotcold.c's pattern): recency keeps
 * it local, FIFO and random do not. */
static unsigned hotcold_refs[1 << 15];
static unsigned hotcold(void)
{
	unsigned n = 0;
	for (unsigned step = 0; step < 512 && n + 80 < NREF(hotcold_refs); step++) {
		for (unsigned h = 0; h < 48; h++)
			hotcold_refs[n++] = h; /* hot: pages 0..47 */
		for (unsigned c = 0; c < 16; c++)
			hotcold_refs[n++] = 64 + (step * 16 + c) % 2048; /* cold stream */
	}
	return n;
}

static void check_hot_set(void)
{
	unsigned n = hotcold();
	uint64_t fifo = faults_on("fifo", 128, hotcold_refs, n);
	uint64_t rnd = faults_on("random", 128, hotcold_refs, n);
	uint64_t clk = faults_on("clock", 128, hotcold_refs, n);
	uint64_t sf = faults_on("sfifo", 128, hotcold_refs, n);
	uint64_t sf_soft = sim.soft;
	uint64_t q2 = faults_on("2q", 128, hotcold_refs, n);
	/* LRU would fault on the cold pages only: 16 a step, 8192 in all, and the 48 hot ones once */
	check("clock_keeps_hot_set", clk < 8192 + 48 + 64, "clock %llu faults, fifo %llu", clk, fifo);
	check("sfifo_fewer_faults_than_fifo", sf < fifo, "sfifo %llu faults, fifo %llu", sf, fifo);
	check("sfifo_soft_faults_bounded", sf_soft * 40 <= sf + 64, "%llu soft faults for %llu faults", sf_soft, sf);
	check("random_no_better_than_recency", rnd > clk && rnd > sf, "random %llu faults, clock %llu", rnd, clk);
	/* 2q sees the hot pages come back soon after they left its short FIFO and keeps them in the
	 * long one: the cold stream alone faults then, as under LRU. */
	check("2q_keeps_hot_set_without_soft_faults", q2 < 8192 + 48 + 64 && sim.soft == 0,
	      "2q %llu faults, fifo %llu", q2, fifo);
}

/* A cyclic scan larger than memory: nothing to gain from recency, every policy faults on every
 * page (no soft faults either: probation pages are not touched again before they go). */
static void check_scan(void)
{
	static unsigned refs[4 * 1024];
	for (unsigned i = 0; i < NREF(refs); i++)
		refs[i] = i % 1024;
	const char *all[] = { "fifo", "clock", "sfifo", "2q" };
	for (unsigned i = 0; i < 4; i++) {
		char name[64];
		uint64_t f = faults_on(all[i], 256, refs, NREF(refs));
		snprintf(name, sizeof(name), "%s_scan_faults_every_page", all[i]);
		check(name, f == NREF(refs) && sim.soft == 0, "%llu faults, %llu soft", f, sim.soft);
	}
}

/* random: the same seed, the same victims; another seed, others. */
static void check_random_seed(void)
{
	uintptr_t first[64];
	unsigned n[3];
	uint64_t seeds[3] = { 42, 42, 43 };
	int same = 1, differs = 0;
	for (unsigned s = 0; s < 3; s++) {
		sim_start("random", 64, seeds[s]);
		for (unsigned p = 0; p < 256; p++)
			sim_touch(p);
		n[s] = sim.n_evicted < 64 ? sim.n_evicted : 64;
		for (unsigned i = 0; i < n[s]; i++) {
			if (s == 0)
				first[i] = sim.evicted[i];
			else if (s == 1)
				same &= first[i] == sim.evicted[i];
			else
				differs |= first[i] != sim.evicted[i];
		}
	}
	check("random_same_seed_same_victims", same && n[0] == 64 && n[1] == 64, "same %llu, victims %llu", same, n[1]);
	check("random_other_seed_other_victims", differs, "differs %llu (%llu victims)", differs, n[2]);
}

/* Pages that leave behind the policy's back (unmapped: their state just changes) and come back
 * many times over: stale entries never overflow a policy's lists, nor are they ever evicted. */
static void check_stale_entries(void)
{
	const char *all[] = { "fifo", "clock", "random", "sfifo", "2q" };
	for (unsigned i = 0; i < 5; i++) {
		char name[64];
		sim_start(all[i], 512, 7);
		for (unsigned round = 0; round < 40; round++)
			for (unsigned p = 0; p < 4000; p++) {
				sim_touch(p);
				uint32_t *pg = &sim.words[p];
				if (p % 3 == 0 && pg_state(*pg) != PAGE_EVICTED) { /* unmapped, behind its back */
					if (pg_state(*pg) == PAGE_INACTIVE)
						sim.probation--;
					if (pg_state(*pg) != PAGE_EMPTY)
						sim.resident--;
					*pg = sim_with_state(*pg, PAGE_EMPTY);
				}
			}
		unsigned wrong = 0;
		for (unsigned e = 0; e < sim.n_evicted; e++)
			wrong += (sim.evicted[e] - BASE) / PAGE % 3 == 0;
		snprintf(name, sizeof(name), "%s_stale_entries_dropped", all[i]);
		check(name, wrong == 0 && sim.resident <= sim.cap, "%llu unmapped pages evicted, %llu resident",
		      wrong, sim.resident);
	}
}

/* Every policy of the table has its operations (adding a row without a file fails to link). */
static void check_table(void)
{
	unsigned ok = 0;
	for (unsigned i = 0; i < FLTRACE_POLICY_COUNT; i++) {
		const struct policy_ops *o = policy_ops_of(i);
		ok += o && o->init && o->page_in && o->page_touched && o->page_on_probation && o->evict;
	}
	check("table_complete", ok == FLTRACE_POLICY_COUNT && !policy_ops_of(FLTRACE_POLICY_COUNT),
	      "%llu of %llu policies complete", ok, FLTRACE_POLICY_COUNT);
	check("default_in_table", fltrace_policy_find(FLTRACE_POLICY_DEFAULT) >= 0, "%llu%llu", 0, 0);
}

int main(void)
{
	check_table();
	check_belady();
	check_fifo_order();
	check_hot_set();
	check_scan();
	check_random_seed();
	check_stale_entries();
	return failures ? 1 : 0;
}
