/* Eviction's mechanism: keeps the resident pages of tracked memory at or under -L by moving the
 * pages the policy (policy.h) picks to the far store, or on probation. Clean file pages are
 * dropped instead: the file has them. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "far.h"
#include "policy.h"
#include "uffd.h"
#include "region.h"
#include "evict.h"
#include "prefetch.h"
#include "keep.h"

static struct {
	const struct policy_ops *policy;
	uint64_t cap_pages;            /* -L in pages */
	uint64_t far_limit;            /* evicted pages -M allows: (-M - -L) in pages */
	unsigned batch;
	bool far_full;                 /* the far store had no slot: -M is exhausted */
} ev;

int evict_init(uint64_t cap_pages, uint64_t max_pages)
{
	ev.policy = policy_ops_of((unsigned)rt.cfg.policy);
	RT_BUG_ON(!ev.policy);
	ev.cap_pages = cap_pages;
	ev.far_limit = max_pages > cap_pages ? max_pages - cap_pages : 0;
	ev.batch = (unsigned)(cap_pages / 8);
	if (ev.batch > POLICY_BATCH_MAX)
		ev.batch = POLICY_BATCH_MAX;
	if (ev.batch == 0)
		ev.batch = 1;
	/* The seed is fixed: a run with the same inputs evicts the same pages. */
	struct policy_limits lim = { .cap_pages = cap_pages, .max_pages = max_pages, .batch = ev.batch,
				     .seed = 0x9e3779b97f4a7c15ull };
	return ev.policy->init(&lim);
}

bool evict_has_probation(void)
{
	return ev.policy->probation;
}

uint64_t evict_probation_pages(void)
{
	return pagestate_inactive();
}

/* A page of a --keep-local site (keep.c) stays out of the policy: no policy can pick it. */
static bool evict_kept(uintptr_t page, uint32_t *pg)
{
	if (__builtin_expect(!keep_on(), 1))
		return false;
	return pg_kept(*pg) || keep_page_in(page, pg);
}

void evict_note_present(uintptr_t page, uint32_t *pg)
{
	if (!evict_kept(page, pg))
		ev.policy->page_in(page, pg);
}

void evict_note_touched(uintptr_t page, uint32_t *pg)
{
	if (!evict_kept(page, pg))
		ev.policy->page_touched(page, pg);
}

void evict_requeue(uintptr_t page, uint32_t *pg)
{
	if (!evict_kept(page, pg))
		ev.policy->page_in(page, pg);
}

/* The page's data now sits in `slot`: evicted for good (far), or on probation (inactive, which
 * still counts as local memory). The caller hands evicted slots to the backend (far_pages_out). */
static void page_moved_out(uintptr_t page, uint32_t slot, bool probation)
{
	uint32_t *pg = region_page(page);
	prefetch_slot_reset(slot);
	pagestate_set(page, pg, probation ? PAGE_INACTIVE : PAGE_EVICTED, slot, probation ? PS_PROBATION : PS_EVICT);
	if (probation) {
		ev.policy->page_on_probation(page, pg);
	} else {
		if (*pg & PG_FILE)
			atomic_fetch_add(&rt.stats.evict_file_moved, 1);
	}
}

/* Clean file pages [first, first + n pages): dropped in one madvise; the next fault reads the file.
 * Clean pages are read-only (mprotect, which could change that, waits for rt.lock). */
static unsigned evict_drop_clean(uintptr_t first, unsigned n)
{
	syscall(SYS_madvise, first, (size_t)n << rt.page_shift, MADV_DONTNEED);
	for (unsigned i = 0; i < n; i++) {
		uintptr_t page = first + ((uintptr_t)i << rt.page_shift);
		pagestate_set(page, region_page(page), PAGE_EMPTY, 0, PS_DROP_CLEAN);
	}
	atomic_fetch_add(&rt.stats.evict_file_dropped, n);
	return n;
}

/* A read-only page cannot change under us (mprotect takes rt.lock): copy it out, then drop it. */
static int move_readonly_page(uintptr_t page, uint32_t slot)
{
	if (!uffd_page_mapped(page))
		return -ENOENT;
	/* The far store is registered with SIGBUS: a plain store into a fresh (missing) slot would
	 * kill the program, so the copy goes in with UFFDIO_COPY. */
	int err = uffd_copy(rt.far_uffd, (uintptr_t)farmem_addr(slot), (void *)page, rt.page_size, false);
	if (err == -EEXIST)
		memcpy(farmem_addr(slot), (void *)page, rt.page_size);
	else if (err < 0)
		return err;
	syscall(SYS_madvise, page, rt.page_size, MADV_DONTNEED);
	atomic_fetch_add(&rt.stats.evict_fallback, 1);
	return 0;
}

/* One writable page: UFFDIO_MOVE is atomic against the program's writes. A page shared with a
 * fork child (EBUSY) is made exclusive by an atomic no-op write (copy-on-write), then moved. */
static int move_writable_page(uintptr_t page, uint32_t slot)
{
	long moved = uffd_move(rt.far_uffd, (uintptr_t)farmem_addr(slot), page, rt.page_size);
	if (moved == -EBUSY && uffd_page_mapped(page)) {
		__atomic_fetch_add((uint64_t *)page, 0, __ATOMIC_SEQ_CST);
		moved = uffd_move(rt.far_uffd, (uintptr_t)farmem_addr(slot), page, rt.page_size);
		atomic_fetch_add(&rt.stats.evict_fallback, 1);
	}
	return moved == (long)rt.page_size ? 0 : (moved < 0 ? (int)moved : -EIO);
}

static unsigned move_out_pagewise(const uintptr_t *pages, unsigned n, bool probation)
{
	unsigned done = 0;
	for (unsigned i = 0; i < n; i++) {
		uintptr_t page = pages[i];
		uint32_t *pg = region_page(page);
		uint32_t slot;
		int err = farmem_alloc_run(1, &slot);
		if (err == 0) {
			err = (*pg & PG_WRITABLE) ? move_writable_page(page, slot) : move_readonly_page(page, slot);
			/* EEXIST (the page still here): the fresh slot holds a page; not freed blind. */
			if (err < 0 && err != -EEXIST)
				farmem_free(slot);
		}
		if (err == 0) {
			page_moved_out(page, slot, probation);
			if (!probation)
				far_page_out(slot);
			done++;
		} else if (err == -ENOENT) {
			/* Gone behind our back (a raw madvise): it reads back as zeros, as the kernel's would. */
			pagestate_set(page, pg, PAGE_EMPTY, 0, PS_GONE);
		} else {
			pagestate_note_failure(page, pg, probation ? PS_PROBATION : PS_EVICT, err);
			if (err == -ENOSPC)
				ev.far_full = true;
			else
				atomic_fetch_add(&rt.stats.evict_failed, 1);
			ev.policy->page_in(page, pg); /* stays resident; try others */
		}
	}
	return done;
}

/* Victims a prefetcher staged and no one touched (policy_page_live hands them to policies without
 * probation as resident pages): they leave without moving data, as a page whose probation ends.
 * Moves the others to the front of `v`; returns how many are left there. */
static unsigned evict_staged(uintptr_t *v, unsigned n, unsigned *done)
{
	unsigned kept = 0;
	for (unsigned i = 0; i < n; i++) {
		if (prefetch_staged(*region_page(v[i]))) {
			evict_probation_end(v[i]);
			(*done)++;
		} else {
			v[kept++] = v[i];
		}
	}
	return kept;
}

/* Contiguous writable runs go in one UFFDIO_MOVE each. */
unsigned evict_out(uintptr_t *v, unsigned n, bool probation)
{
	unsigned done = 0, i = 0;
	if (prefetch_on())
		n = evict_staged(v, n, &done);
	if (keep_on()) { /* a stale queue entry of a page kept since: it stays */
		unsigned k = 0;
		for (unsigned j = 0; j < n; j++)
			if (!pg_kept(*region_page(v[j])))
				v[k++] = v[j];
		n = k;
	}
	rt_sort_u64((uint64_t *)v, n);
	while (i < n) {
		unsigned j = i + 1;
		uint32_t w = *region_page(v[i]);
		/* Evicted for good, a clean file page is dropped; put on probation, it is copied like any
		 * read-only page (a touch must find it local) and dropped when its probation ends. */
		if ((w & PG_CLEAN) && !probation) {
			while (j < n && v[j] == v[j - 1] + rt.page_size && (*region_page(v[j]) & PG_CLEAN))
				j++;
			done += evict_drop_clean(v[i], j - i);
			i = j;
			continue;
		}
		bool writable = w & PG_WRITABLE;
		while (j < n && v[j] == v[j - 1] + rt.page_size &&
		       (probation || !(*region_page(v[j]) & PG_CLEAN)) &&
		       (bool)(*region_page(v[j]) & PG_WRITABLE) == writable)
			j++;
		uint32_t first;
		if (writable && j - i > 1 && farmem_alloc_run(j - i, &first) == 0) {
			long moved = uffd_move(rt.far_uffd, (uintptr_t)farmem_addr(first), v[i],
					       (size_t)(j - i) << rt.page_shift);
			unsigned k = moved > 0 ? (unsigned)((unsigned long)moved >> rt.page_shift) : 0;
			for (unsigned m = 0; m < k; m++)
				page_moved_out(v[i + m], first + m, probation);
			if (!probation)
				far_pages_out(first, k); /* the run in one write */
			for (unsigned m = k; m < j - i; m++)
				farmem_free(first + m); /* never filled: freeing costs one madvise */
			done += k + move_out_pagewise(&v[i + k], j - i - k, probation);
		} else {
			done += move_out_pagewise(&v[i], j - i, probation);
		}
		i = j;
	}
	atomic_fetch_add(&rt.stats.evict_ops, 1);
	if (!probation)
		atomic_fetch_add(&rt.stats.evict_pages, done);
	return done;
}

void evict_probation_end(uintptr_t page)
{
	uint32_t *pg = region_page(page);
	RT_BUG_ON(!pg || pg_state(*pg) != PAGE_INACTIVE);
	atomic_fetch_add(&rt.stats.evict_pages, 1);
	prefetch_evicted(pg_slot(*pg));
	if (*pg & PG_CLEAN) { /* the file has it: its far copy goes, the next fault reads the file */
		farmem_free(pg_slot(*pg));
		pagestate_set(page, pg, PAGE_EMPTY, 0, PS_DROP_CLEAN);
		atomic_fetch_add(&rt.stats.evict_file_dropped, 1);
		return;
	}
	pagestate_set(page, pg, PAGE_EVICTED, pg_slot(*pg), PS_PROBATION_END);
	far_page_out(pg_slot(*pg));
	if (*pg & PG_FILE)
		atomic_fetch_add(&rt.stats.evict_file_moved, 1);
}

static bool far_has_room(uint64_t pages)
{
	return pagestate_far() + pages <= ev.far_limit;
}

bool evict_has_room(unsigned need)
{
	return pagestate_resident() + need <= ev.cap_pages;
}

int evict_make_room(unsigned need)
{
	if (evict_has_room(need))
		return 0;
	uint64_t target = ev.cap_pages > need + ev.batch - 1 ? ev.cap_pages - need - (ev.batch - 1) : 0;
	unsigned idle_rounds = 0;
	while (pagestate_resident() > target && idle_rounds < 4) {
		uint64_t want = pagestate_resident() - target;
		if (!far_has_room(want < ev.batch ? want : ev.batch)) {
			ev.far_full = true;
			break;
		}
		unsigned done = ev.policy->evict(want < POLICY_BATCH_MAX ? want : POLICY_BATCH_MAX);
		idle_rounds = done ? 0 : idle_rounds + 1;
		if (ev.far_full)
			break;
	}
	/* The rounds' scattered pages go to the medium in one request, and their staging copies (with
	 * the runs' the backend took) leave local memory behind one TLB flush. */
	far_out_flush();
	farmem_drops_flush();
	if (ev.far_full && pagestate_resident() + need > ev.cap_pages)
		return -ENOSPC;
	ev.far_full = false;
	return pagestate_resident() + need <= ev.cap_pages ? 0 : -EAGAIN;
}
