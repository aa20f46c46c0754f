/* Eviction: keeps the resident pages of tracked memory at or under -L by moving batches of pages
 * to the far store (clean file pages are dropped: the file has them). The resident ring orders pages
 * by arrival (FIFO) or gives second chances (CLOCK). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt.h"

#define EVICT_BATCH_MAX 64

static struct {
	uintptr_t *ring; /* page addresses; entries whose page is not PRESENT+QUEUED are stale */
	uint64_t cap, head, tail;
	uint64_t cap_pages; /* -L in pages */
	unsigned batch;
	bool far_full;      /* the far store had no slot: -M is exhausted */
} ev;

int evict_init(uint64_t cap_pages, uint64_t max_pages)
{
	ev.cap_pages = cap_pages;
	/* Room for every page -M allows (a fork child holds them all for a moment), stale ones too. */
	ev.cap = 2 * max_pages + 4096;
	ev.ring = rt_map(ev.cap * sizeof(uintptr_t));
	ev.batch = (unsigned)(cap_pages / 8);
	if (ev.batch > EVICT_BATCH_MAX)
		ev.batch = EVICT_BATCH_MAX;
	if (ev.batch == 0)
		ev.batch = 1;
	return ev.ring ? 0 : -ENOMEM;
}

static uint32_t *ring_live_page(uintptr_t page)
{
	uint32_t *pg = region_page(page);
	if (!pg || pg_state(*pg) != PAGE_PRESENT || !(*pg & PG_QUEUED))
		return NULL;
	return pg;
}

/* Drops stale entries (and duplicates) so the ring never overflows. */
static void ring_compact(void)
{
	uint64_t out = 0, n = ev.tail - ev.head;
	uintptr_t *tmp = rt_map(n * sizeof(uintptr_t));
	RT_BUG_ON(!tmp);
	for (uint64_t i = ev.head; i < ev.tail; i++) {
		uintptr_t page = ev.ring[i % ev.cap];
		uint32_t *pg = ring_live_page(page);
		if (!pg)
			continue;
		*pg &= ~PG_QUEUED; /* a later duplicate of this page is now stale */
		tmp[out++] = page;
	}
	for (uint64_t i = 0; i < out; i++) {
		ev.ring[i] = tmp[i];
		*region_page(tmp[i]) |= PG_QUEUED;
	}
	rt_unmap(tmp, n * sizeof(uintptr_t));
	ev.head = 0;
	ev.tail = out;
	RT_BUG_ON(out == ev.cap);
}

void evict_note_present(uintptr_t page, uint32_t *pg)
{
	*pg |= PG_REF;
	if (*pg & PG_QUEUED)
		return;
	if (ev.tail - ev.head == ev.cap)
		ring_compact();
	ev.ring[ev.tail++ % ev.cap] = page;
	*pg |= PG_QUEUED;
	uint64_t res = atomic_load(&rt.stats.resident_pages);
	if (res > atomic_load(&rt.stats.resident_peak_pages))
		atomic_store(&rt.stats.resident_peak_pages, res);
}

/* Pops the next victim, or 0 when the ring holds no live page. CLOCK gives a page whose
 * reference bit is set one more lap (clearing the bit). */
static uintptr_t ring_pop_victim(void)
{
	uint64_t laps_budget = 2 * (ev.tail - ev.head) + 1;
	while (ev.head < ev.tail && laps_budget--) {
		uintptr_t page = ev.ring[ev.head++ % ev.cap];
		uint32_t *pg = ring_live_page(page);
		if (!pg)
			continue;
		if (rt.cfg.policy == FLTRACE_POLICY_CLOCK && (*pg & PG_REF)) {
			*pg &= ~PG_REF;
			ev.ring[ev.tail++ % ev.cap] = page;
			continue;
		}
		*pg &= ~PG_QUEUED;
		return page;
	}
	return 0;
}

static bool page_is_present(uintptr_t page)
{
	unsigned char vec = 0;
	return syscall(SYS_mincore, page, rt.page_size, &vec) == 0 && (vec & 1);
}

static void page_set_evicted(uintptr_t page, uint32_t slot)
{
	uint32_t *pg = region_page(page);
	*pg = pg_with_state(pg_with_slot(*pg, slot), PAGE_EVICTED) & ~(PG_QUEUED | PG_REF);
	atomic_fetch_sub(&rt.stats.resident_pages, 1);
	if (*pg & PG_FILE)
		atomic_fetch_add(&rt.stats.evict_file_moved, 1);
}

/* Clean file pages [first, first + n pages): dropped in one madvise; the next fault reads the file.
 * Clean pages are read-only (mprotect, which could change that, waits for rt.lock). */
static unsigned evict_drop_clean(uintptr_t first, unsigned n)
{
	syscall(SYS_madvise, first, (size_t)n << rt.page_shift, MADV_DONTNEED);
	for (unsigned i = 0; i < n; i++) {
		uint32_t *pg = region_page(first + ((uintptr_t)i << rt.page_shift));
		*pg = pg_with_state(*pg, PAGE_EMPTY) & ~(PG_QUEUED | PG_REF | PG_CLEAN);
		atomic_fetch_sub(&rt.stats.resident_pages, 1);
	}
	atomic_fetch_add(&rt.stats.evict_file_dropped, n);
	return n;
}

/* A read-only page cannot change under us (mprotect takes rt.lock): copy it out, then drop it. */
static int evict_readonly_page(uintptr_t page)
{
	uint32_t slot;
	if (!page_is_present(page))
		return -ENOENT;
	int err = farmem_alloc_run(1, &slot);
	if (err < 0)
		return err;
	memcpy(farmem_addr(slot), (void *)page, rt.page_size);
	syscall(SYS_madvise, page, rt.page_size, MADV_DONTNEED);
	page_set_evicted(page, slot);
	atomic_fetch_add(&rt.stats.evict_fallback, 1);
	return 0;
}

/* One writable page: UFFDIO_MOVE is atomic against the program's writes. A page shared with a
 * fork child (EBUSY) is made exclusive by an atomic no-op write (copy-on-write), then moved. */
static int evict_writable_page(uintptr_t page, uint32_t slot)
{
	long moved = uffd_move(rt.far_uffd, (uintptr_t)farmem_addr(slot), page, rt.page_size);
	if (moved == -EBUSY && page_is_present(page)) {
		__atomic_fetch_add((uint64_t *)page, 0, __ATOMIC_SEQ_CST);
		moved = uffd_move(rt.far_uffd, (uintptr_t)farmem_addr(slot), page, rt.page_size);
		atomic_fetch_add(&rt.stats.evict_fallback, 1);
	}
	return moved == (long)rt.page_size ? 0 : (moved < 0 ? (int)moved : -EIO);
}

static void evict_run_pagewise(const uintptr_t *pages, unsigned n, unsigned *done)
{
	for (unsigned i = 0; i < n; i++) {
		uintptr_t page = pages[i];
		uint32_t *pg = region_page(page);
		int err;
		if (!(*pg & PG_WRITABLE)) {
			err = evict_readonly_page(page);
		} else {
			uint32_t slot;
			err = farmem_alloc_run(1, &slot);
			if (err == 0) {
				err = evict_writable_page(page, slot);
				if (err == 0)
					page_set_evicted(page, slot);
				else
					farmem_free(slot);
			}
		}
		if (err == 0) {
			(*done)++;
		} else if (err == -ENOSPC) {
			ev.far_full = true;
			evict_note_present(page, pg);
		} else if (err == -ENOENT) {
			/* Gone behind our back (a raw madvise): it reads back as zeros, as the kernel's would. */
			*pg = pg_with_state(*pg, PAGE_EMPTY) & ~(PG_QUEUED | PG_REF);
			atomic_fetch_sub(&rt.stats.resident_pages, 1);
		} else {
			atomic_fetch_add(&rt.stats.evict_failed, 1);
			evict_note_present(page, pg); /* stays resident; try others */
		}
	}
}

/* Evicts sorted victims: contiguous writable runs in one UFFDIO_MOVE each. */
static unsigned evict_victims(uintptr_t *v, unsigned n)
{
	unsigned done = 0, i = 0;
	rt_sort_u64((uint64_t *)v, n);
	while (i < n) {
		unsigned j = i + 1;
		uint32_t w = *region_page(v[i]);
		if (w & PG_CLEAN) {
			while (j < n && v[j] == v[j - 1] + rt.page_size && (*region_page(v[j]) & PG_CLEAN))
				j++;
			done += evict_drop_clean(v[i], j - i);
			i = j;
			continue;
		}
		bool writable = w & PG_WRITABLE;
		while (j < n && v[j] == v[j - 1] + rt.page_size && !(*region_page(v[j]) & PG_CLEAN) &&
		       (bool)(*region_page(v[j]) & PG_WRITABLE) == writable)
			j++;
		uint32_t first;
		if (writable && j - i > 1 && farmem_alloc_run(j - i, &first) == 0) {
			long moved = uffd_move(rt.far_uffd, (uintptr_t)farmem_addr(first), v[i],
					       (size_t)(j - i) << rt.page_shift);
			unsigned k = moved > 0 ? (unsigned)((unsigned long)moved >> rt.page_shift) : 0;
			for (unsigned m = 0; m < k; m++)
				page_set_evicted(v[i + m], first + m);
			for (unsigned m = k; m < j - i; m++)
				farmem_free(first + m); /* never filled: freeing costs one madvise */
			done += k;
			evict_run_pagewise(&v[i + k], j - i - k, &done);
		} else {
			evict_run_pagewise(&v[i], j - i, &done);
		}
		i = j;
	}
	return done;
}

int evict_make_room(unsigned need)
{
	uint64_t res = atomic_load(&rt.stats.resident_pages);
	if (res + need <= ev.cap_pages)
		return 0;
	uint64_t target = ev.cap_pages > need + ev.batch - 1 ? ev.cap_pages - need - (ev.batch - 1) : 0;
	uintptr_t victims[EVICT_BATCH_MAX];
	unsigned rounds = 0;
	while (atomic_load(&rt.stats.resident_pages) > target) {
		uint64_t want = atomic_load(&rt.stats.resident_pages) - target;
		unsigned n = 0;
		while (n < want && n < EVICT_BATCH_MAX) {
			uintptr_t page = ring_pop_victim();
			if (!page)
				break;
			victims[n++] = page;
		}
		if (n == 0)
			break;
		unsigned done = evict_victims(victims, n);
		atomic_fetch_add(&rt.stats.evict_ops, 1);
		atomic_fetch_add(&rt.stats.evict_pages, done);
		if (ev.far_full)
			break;
		if (done == 0 && ++rounds > 4)
			break;
	}
	if (ev.far_full && atomic_load(&rt.stats.resident_pages) + need > ev.cap_pages)
		return -ENOSPC;
	ev.far_full = false;
	return atomic_load(&rt.stats.resident_pages) + need <= ev.cap_pages ? 0 : -EAGAIN;
}
