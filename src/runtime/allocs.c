/* Allocation sites: which allocation made the memory each fault hit. Records (FT_REC_ALLOC/FREE)
 * every program mmap/mremap, every malloc-family allocation of FT_ALLOC_BIG bytes or more, and
 * small ones sampled by bytes allocated; the analysis matches faults to them offline. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt.h"
#include "prefault.h"
#include "trace.h"
#include "threads.h"
#include "allocs.h"
#include "keep.h"

/* Recorded malloc-family pointers, so that free() knows which frees to record. A free that is
 * not recorded (nearly all) is turned away by a counting filter on the pointer without a lock;
 * only frees of a recorded pointer (or one hashed with it) look the table up. */
#define ALLOCS_TABLE (1u << 20)    /* slots, power of two */
#define ALLOCS_FILTER (1u << 22)   /* 16-bit counters, power of two */
#define FILTER_PAGE_COUNTERS 2048  /* in a 4 KiB page */
#define SLOT_FREE 0
#define SLOT_GONE 1                /* a removed key: probing goes on past it */

__thread int64_t rt_tls_alloc_countdown;
_Atomic uint8_t *allocs_page_map;
#define ALLOCS_PAGE_MAP_BYTES ((size_t)1 << (ALLOCS_PAGE_BITS - 3))

static struct {
	bool on;
	uint64_t sample_bytes;     /* mean bytes between sampled small allocations, 0 = none */
	pthread_mutex_t lock;      /* the table */
	uintptr_t *table;
	uint32_t used, gone;
	_Atomic uint16_t *filter;
	/* A bit per page of the filter: set once a counter there counted anything. The filter's
	 * pages a free hashes to are read only where a bit says so: 2,048 pages, hashed at random,
	 * whose every first read was a fault (1,300 in a python run of 5,500 faults at ample -L). */
	_Atomic uint64_t filter_used[ALLOCS_FILTER / FILTER_PAGE_COUNTERS / 64];
} al = { .lock = PTHREAD_MUTEX_INITIALIZER };

static __thread uint64_t tls_rand;
static __thread bool tls_sampling; /* the countdown was drawn (a thread's first call draws it) */

/* Both tables are indexed by place, not at random: a pointer's counter and slot lie beside those of
 * the pointers near it, in blocks that a hash of their 256 KiB of address space scatters. The first
 * allocation of every heap page is recorded, and hashed at random each took a page of the table and
 * one of the filter that no other used: two faults of fltrace's own a record (a traced `python3 -c
 * pass` took 1,775 page faults in the kernel, 1,466 so). */
#define BLOCK_SHIFT 18 /* 256 KiB of address space */

static uint64_t block_mix(uintptr_t p)
{
	return ((uint64_t)(p >> BLOCK_SHIFT) * 0x9e3779b97f4a7c15ull) >> 32;
}

/* By pointer, not by page: with the first allocation of every heap page recorded, a filter by
 * page would send nearly every free to the table. Pointers are 16-byte aligned. */
static uint32_t filter_index(uintptr_t p)
{
	uint32_t in_block = (uint32_t)(p >> 4) & ((1u << (BLOCK_SHIFT - 4)) - 1);
	return (uint32_t)(block_mix(p) << (BLOCK_SHIFT - 4) | in_block) & (ALLOCS_FILTER - 1);
}

/* By page: the pointers of one page probe on from one slot. */
static uint32_t table_hash(uintptr_t p)
{
	uint32_t in_block = (uint32_t)(p >> 12) & ((1u << (BLOCK_SHIFT - 12)) - 1);
	return (uint32_t)(block_mix(p) << (BLOCK_SHIFT - 12) | in_block) & (ALLOCS_TABLE - 1);
}

int allocs_init(uint64_t sample_bytes, bool on)
{
	al.on = on;
	al.sample_bytes = sample_bytes;
	if (!on)
		return 0;
	al.table = rt_map(ALLOCS_TABLE * sizeof(uintptr_t));
	al.filter = rt_map(ALLOCS_FILTER * sizeof(uint16_t));
	memset(al.filter_used, 0, sizeof(al.filter_used)); /* a fork child's filter starts empty */
	/* Pages get their first allocation recorded whenever small ones are recorded at all. The
	 * map is touched only where the heap lies: a few KiB for a GiB of heap. */
	if (sample_bytes)
		allocs_page_map = rt_map(ALLOCS_PAGE_MAP_BYTES);
	return al.table && al.filter && (!sample_bytes || allocs_page_map) ? 0 : -ENOMEM;
}

/* Claims the pages of [p, p+size) for an allocation about to be recorded; true if one of them had
 * no claim yet (another thread may claim the same page at once: one of them wins). */
static bool allocs_page_claim(uintptr_t p, size_t size)
{
	bool fresh = false;

	if (!allocs_page_map)
		return false;
	for (uintptr_t pg = p >> 12, end = (p + (size ? size : 1) - 1) >> 12; pg <= end; pg++) {
		uintptr_t i = pg & ((1ull << ALLOCS_PAGE_BITS) - 1);
		uint8_t bit = (uint8_t)(1u << (i & 7));
		if (!(atomic_fetch_or(&allocs_page_map[i >> 3], bit) & bit))
			fresh = true;
	}
	return fresh;
}

/* Slots filled with removed keys make probes long: rebuilt in place, from a copy. */
static void table_rebuild(void)
{
	uintptr_t *old = al.table;
	uintptr_t *fresh = rt_map(ALLOCS_TABLE * sizeof(uintptr_t));
	if (!fresh)
		return;
	for (uint32_t i = 0; i < ALLOCS_TABLE; i++) {
		uintptr_t k = old[i];
		if (k <= SLOT_GONE)
			continue;
		uint32_t j = table_hash(k);
		while (fresh[j] != SLOT_FREE)
			j = (j + 1) & (ALLOCS_TABLE - 1);
		fresh[j] = k;
	}
	al.table = fresh;
	al.gone = 0;
	rt_unmap(old, ALLOCS_TABLE * sizeof(uintptr_t));
}

/* Under al.lock. False when the table is full (the allocation is then not recorded). */
static bool table_insert(uintptr_t p)
{
	if (al.used + al.gone >= ALLOCS_TABLE / 4 * 3) {
		if (al.gone > al.used)
			table_rebuild();
		if (al.used + al.gone >= ALLOCS_TABLE / 4 * 3)
			return false;
	}
	uint32_t i = table_hash(p);
	while (al.table[i] > SLOT_GONE) {
		if (al.table[i] == p)
			return true; /* already there (a realloc in place was recorded again) */
		i = (i + 1) & (ALLOCS_TABLE - 1);
	}
	if (al.table[i] == SLOT_GONE)
		al.gone--;
	al.table[i] = p;
	al.used++;
	uint32_t f = filter_index(p);
	atomic_fetch_or(&al.filter_used[f / FILTER_PAGE_COUNTERS / 64], 1ull << (f / FILTER_PAGE_COUNTERS % 64));
	atomic_fetch_add(&al.filter[f], 1);
	return true;
}

static bool table_remove(uintptr_t p)
{
	for (uint32_t i = table_hash(p), n = 0; n < ALLOCS_TABLE; i = (i + 1) & (ALLOCS_TABLE - 1), n++) {
		if (al.table[i] == SLOT_FREE)
			return false;
		if (al.table[i] != p)
			continue;
		al.table[i] = SLOT_GONE;
		al.used--;
		al.gone++;
		atomic_fetch_sub(&al.filter[filter_index(p)], 1);
		return true;
	}
	return false;
}

/* A program thread writing a record may take the trace's growth lock: busy meanwhile, so that a
 * fault in a signal handler of the program's never brings it the stack signal, whose handler
 * would take that lock again (see prefault_caller_stack). */
static void allocs_write(uintptr_t p, size_t size, unsigned kind, unsigned flags)
{
	uint32_t rsize = ft_rec_size(sizeof(struct ft_alloc));
	uint64_t ips[PREFAULT_IPS_MAX];
	unsigned depth;
	uint32_t stack = prefault_caller_stack_ips(ips, &depth);
	/* --keep-local: decided once, here, from the stack just unwound for the record. */
	if (keep_on() && keep_stack_matches(ips, depth))
		keep_add(p, size);
	struct own_code c = threads_own_code_begin();
	struct ft_alloc *rec = trace_reserve(rsize);
	threads_own_code_end(c);
	if (!rec)
		return;
	rec->time_ns = rt_now_ns();
	rec->addr = p;
	rec->size = size;
	rec->tid = (uint32_t)rt_gettid();
	rec->stack_id = stack;
	rec->kind = (uint8_t)kind;
	rec->flags = (uint8_t)flags;
	memset(rec->pad, 0, sizeof(rec->pad));
	trace_commit(rec, FT_REC_ALLOC, rsize);
}

static void allocs_write_free(uintptr_t p, size_t len)
{
	uint32_t rsize = ft_rec_size(sizeof(struct ft_free));
	struct own_code c = threads_own_code_begin();
	struct ft_free *rec = trace_reserve(rsize);
	threads_own_code_end(c);
	if (!rec)
		return;
	rec->time_ns = rt_now_ns();
	rec->addr = p;
	rec->len = len;
	trace_commit(rec, FT_REC_FREE, rsize);
}

/* The next sampling distance: exponential around the mean, so that every byte allocated has the
 * same chance of being sampled whatever the sizes around it (as tcmalloc's heap sampler). */
static int64_t allocs_next_distance(void)
{
	if (!al.sample_bytes)
		return INT64_MAX;
	if (!tls_rand)
		tls_rand = 0x9e3779b97f4a7c15ull ^ (uint64_t)rt_gettid() * 0xbf58476d1ce4e5b9ull;
	tls_rand ^= tls_rand << 13;
	tls_rand ^= tls_rand >> 7;
	tls_rand ^= tls_rand << 17;
	double u = ((double)(tls_rand >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
	double d = -log(u) * (double)al.sample_bytes;
	return d < 1 ? 1 : d > 9e18 ? INT64_MAX : (int64_t)d;
}

static bool allocs_recording(void)
{
	return al.on && atomic_load_explicit(&rt.phase, memory_order_acquire) == RT_ON && !rt_tls_internal;
}

void allocs_heap_slow(void *p, size_t size)
{
	bool small = size < FT_ALLOC_BIG, sampled = false, page = false;
	if (small && rt_tls_alloc_countdown <= 0) {
		bool first = !tls_sampling;
		tls_sampling = true;
		rt_tls_alloc_countdown = allocs_next_distance();
		/* The thread's first small allocation is no likelier than others: not a sample. */
		sampled = !first;
	}
	if (!p || !allocs_recording())
		return;
	/* A small allocation on a page that never had one recorded: its site names the page. */
	if (small)
		page = allocs_page_claim((uintptr_t)p, size);
	if (small && !sampled && !page)
		return;
	int saved_errno = errno;
	rt_tls_internal++; /* the unwinder's own memory is not the program's */
	lock_order_take(LOCK_ALLOCS);
	pthread_mutex_lock(&al.lock);
	bool kept = table_insert((uintptr_t)p);
	pthread_mutex_unlock(&al.lock);
	lock_order_drop(LOCK_ALLOCS);
	if (kept) {
		allocs_write((uintptr_t)p, size, FT_ALLOC_MALLOC,
			     (sampled ? FT_ALLOC_SAMPLED : 0) | (page ? FT_ALLOC_PAGE : 0));
		atomic_fetch_add(!small ? &rt.stats.allocs_big : sampled ? &rt.stats.allocs_sampled :
				 &rt.stats.allocs_page, 1);
	} else {
		atomic_fetch_add(&rt.stats.allocs_lost, 1);
	}
	rt_tls_internal--;
	errno = saved_errno;
}

void allocs_heap_free_slow(void *p)
{
	if (!al.on)
		return;
	int saved_errno = errno;
	lock_order_take(LOCK_ALLOCS);
	pthread_mutex_lock(&al.lock);
	bool was = table_remove((uintptr_t)p);
	pthread_mutex_unlock(&al.lock);
	lock_order_drop(LOCK_ALLOCS);
	if (was)
		keep_remove((uintptr_t)p, 0);
	if (was && allocs_recording())
		allocs_write_free((uintptr_t)p, 0);
	errno = saved_errno;
}

bool allocs_maybe_recorded(const void *p)
{
	if (!al.on || !p)
		return false;
	uint32_t f = filter_index((uintptr_t)p);
	uint64_t used = atomic_load_explicit(&al.filter_used[f / FILTER_PAGE_COUNTERS / 64], memory_order_relaxed);
	return (used >> (f / FILTER_PAGE_COUNTERS % 64) & 1) &&
	       atomic_load_explicit(&al.filter[f], memory_order_relaxed);
}

void allocs_note_map(uintptr_t p, size_t len, unsigned kind, const void *caller)
{
	if (prefault_is_own_frame((uint64_t)caller) || !allocs_recording())
		return;
	int saved_errno = errno;
	rt_tls_internal++;
	allocs_write(p, len, kind, 0);
	atomic_fetch_add(&rt.stats.allocs_maps, 1);
	rt_tls_internal--;
	errno = saved_errno;
}

void allocs_note_unmap(uintptr_t p, size_t len, const void *caller)
{
	if (prefault_is_own_frame((uint64_t)caller))
		return;
	keep_remove(p, len);
	if (allocs_recording())
		allocs_write_free(p, len);
}

/* The child's trace is new and its table would name the parent's records: start empty. */
void allocs_fork_child(void)
{
	pthread_mutex_init(&al.lock, NULL);
	if (!al.on)
		return;
	rt_unmap(al.table, ALLOCS_TABLE * sizeof(uintptr_t));
	rt_unmap((void *)al.filter, ALLOCS_FILTER * sizeof(uint16_t));
	if (allocs_page_map)
		rt_unmap((void *)allocs_page_map, ALLOCS_PAGE_MAP_BYTES);
	allocs_page_map = NULL;
	al.used = al.gone = 0;
	if (allocs_init(al.sample_bytes, true) < 0)
		al.on = false; /* no memory for the child's table: it records no allocations */
}
