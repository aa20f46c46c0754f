/* Prefetching's mechanism: asks the prefetcher of the run (a row of inc/fltrace/prefetchers.h) after
 * each re-fetch and hit, stages the far pages it names as local memory, and counts what became of them. */
#include <errno.h>
#include <string.h>

#include "far.h"
#include "uffd.h"
#include "region.h"
#include "evict.h"
#include "prefetch.h"

#define PREFETCH_DECLARE(name, help) extern const struct prefetch_ops prefetch_##name;
FLTRACE_PREFETCHERS(PREFETCH_DECLARE)
#define PREFETCH_ROW(name, help) &prefetch_##name,
static const struct prefetch_ops *const prefetchers[] = { FLTRACE_PREFETCHERS(PREFETCH_ROW) };

const struct prefetch_ops *prefetch_ops_of(unsigned id)
{
	return id < FLTRACE_PREFETCH_COUNT ? prefetchers[id] : NULL;
}

__attribute__((visibility("hidden"))) uint64_t *prefetch_bits;

static struct {
	const struct prefetch_ops *ops;
	unsigned most; /* pages one access may stage: PREFETCH_MAX, at most an eighth of -L */
} pf;

int prefetch_init(uint64_t cap_pages, uint64_t slots)
{
	pf.ops = prefetch_ops_of((unsigned)rt.cfg.prefetch);
	RT_BUG_ON(!pf.ops);
	if (rt.cfg.prefetch == FLTRACE_PREFETCH_none)
		return 0; /* prefetch_bits stays NULL: the fault path tests one pointer */
	pf.most = cap_pages / 8 < PREFETCH_MAX ? (unsigned)(cap_pages / 8) : PREFETCH_MAX;
	if (pf.ops->init)
		pf.ops->init();
	prefetch_bits = rt_map((slots + 63) / 64 * sizeof(uint64_t));
	return prefetch_bits ? 0 : -ENOMEM;
}

static void bit_clear(uint32_t slot)
{
	prefetch_bits[slot >> 6] &= ~(1ull << (slot & 63));
}

static bool bit_take(uint32_t slot)
{
	if (!prefetch_bits || !(prefetch_bits[slot >> 6] >> (slot & 63) & 1))
		return false;
	bit_clear(slot);
	return true;
}

void prefetch_hit(uint32_t slot)
{
	if (bit_take(slot))
		atomic_fetch_add(&rt.stats.prefetch_used, 1);
}

void prefetch_evicted(uint32_t slot)
{
	if (bit_take(slot))
		atomic_fetch_add(&rt.stats.prefetch_unused, 1);
}

void prefetch_slot_freed(uint32_t slot)
{
	if (bit_take(slot))
		atomic_fetch_add(&rt.stats.prefetch_dropped, 1);
}

/* Brings one far page into local memory without mapping it: its data into its slot (for a backend
 * other than mem, one read from the medium), its state INACTIVE, its bit set, the policy told. */
static bool prefetch_stage(uintptr_t addr, uint32_t *pg)
{
	uint32_t slot = pg_slot(*pg);
	const void *src = far_page_prefetch(slot);
	if (src) {
		int err = uffd_copy(rt.far_uffd, (uintptr_t)farmem_addr(slot), src, rt.page_size, false);
		if (err < 0 && err != -EEXIST)
			return false; /* stays far; its fault will fetch it */
	}
	if (!pagestate_set(addr, pg, PAGE_INACTIVE, slot, PS_PREFETCH))
		return false;
	prefetch_bits[slot >> 6] |= 1ull << (slot & 63);
	evict_note_present(addr, pg);
	atomic_fetch_add(&rt.stats.prefetch_pages, 1);
	return true;
}

void prefetch_after(uintptr_t addr, int tid, bool hit)
{
	uint64_t want[PREFETCH_MAX];
	const struct region *r = region_of(addr);
	if (!r)
		return;
	struct prefetch_access a = { .page = addr >> rt.page_shift, .first = r->start >> rt.page_shift,
				     .end = r->end >> rt.page_shift, .tid = tid, .hit = hit };
	unsigned n = pf.most ? pf.ops->predict(&a, want, pf.most) : 0;
	uint64_t t0 = rt_mono_ns();
	for (unsigned i = 0; i < n; i++) {
		uintptr_t page = (uintptr_t)(want[i] << rt.page_shift);
		uint32_t *pg = region_page(page);
		if (!pg || pg_state(*pg) != PAGE_EVICTED)
			continue;
		/* Room as for any page coming in: the policy picks what leaves (possibly pages staged
		 * earlier and never used: prefetch_unused). -M exhausted or no victim: stop here. */
		if (evict_make_room(1) < 0)
			break;
		if (pg_state(*pg) != PAGE_EVICTED)
			continue;
		prefetch_stage(page, pg);
	}
	rt_time_add(&rt.stats.time.prefetch, t0);
}
