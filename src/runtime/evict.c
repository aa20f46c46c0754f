/* Eviction: keeps the resident pages of tracked memory at or under -L by moving batches of pages to
 * the far store, in arrival order (FIFO) or with a second chance for pages still in use (CLOCK).
 * Clean file pages are dropped instead: the file has them. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt.h"

#define EVICT_BATCH_MAX 64

/* A queue of page addresses; an entry is live while its page is in the queue's state and
 * PG_QUEUED (pages unmapped or moved meanwhile leave stale entries, dropped when met). */
struct queue {
	uintptr_t *v;
	uint64_t cap, head, tail;
	unsigned state;
};

static struct {
	struct queue active, inactive; /* inactive: CLOCK's pages on probation */
	uint64_t cap_pages;            /* -L in pages */
	uint64_t far_limit;            /* evicted pages -M allows: (-M - -L) in pages */
	uint64_t inactive_target;
	unsigned batch;
	bool far_full;                 /* the far store had no slot: -M is exhausted */
} ev;

static int queue_init(struct queue *q, uint64_t cap, unsigned state)
{
	q->cap = cap;
	q->state = state;
	q->v = rt_map(cap * sizeof(uintptr_t));
	return q->v ? 0 : -ENOMEM;
}

int evict_init(uint64_t cap_pages, uint64_t max_pages)
{
	ev.cap_pages = cap_pages;
	ev.far_limit = max_pages > cap_pages ? max_pages - cap_pages : 0;
	ev.batch = (unsigned)(cap_pages / 8);
	if (ev.batch > EVICT_BATCH_MAX)
		ev.batch = EVICT_BATCH_MAX;
	if (ev.batch == 0)
		ev.batch = 1;
	/* A quarter of local memory on probation: a page untouched for that many evictions goes. */
	ev.inactive_target = cap_pages / 4 > ev.batch ? cap_pages / 4 : ev.batch;
	/* Room for every page -M allows (a fork child holds them all for a moment), stale ones too. */
	uint64_t cap = 2 * max_pages + 4096;
	if (queue_init(&ev.active, cap, PAGE_PRESENT) < 0 || queue_init(&ev.inactive, cap, PAGE_INACTIVE) < 0)
		return -ENOMEM;
	return 0;
}

static uint32_t *queue_live(const struct queue *q, uintptr_t page)
{
	uint32_t *pg = region_page(page);
	if (!pg || pg_state(*pg) != q->state || !(*pg & PG_QUEUED))
		return NULL;
	return pg;
}

/* Drops stale entries (and duplicates) so the queue never overflows. */
static void queue_compact(struct queue *q)
{
	uint64_t out = 0, n = q->tail - q->head;
	uintptr_t *tmp = rt_map(n * sizeof(uintptr_t));
	RT_BUG_ON(!tmp);
	for (uint64_t i = q->head; i < q->tail; i++) {
		uintptr_t page = q->v[i % q->cap];
		uint32_t *pg = queue_live(q, page);
		if (!pg)
			continue;
		*pg &= ~PG_QUEUED; /* a later duplicate of this page is now stale */
		tmp[out++] = page;
	}
	for (uint64_t i = 0; i < out; i++) {
		q->v[i] = tmp[i];
		*region_page(tmp[i]) |= PG_QUEUED;
	}
	rt_unmap(tmp, n * sizeof(uintptr_t));
	q->head = 0;
	q->tail = out;
	RT_BUG_ON(out == q->cap);
}

static void queue_push(struct queue *q, uintptr_t page, uint32_t *pg)
{
	if (*pg & PG_QUEUED)
		return;
	if (q->tail - q->head == q->cap)
		queue_compact(q);
	q->v[q->tail++ % q->cap] = page;
	*pg |= PG_QUEUED;
}

/* The oldest live page of the queue, taken out of it; 0 if none. */
static uintptr_t queue_pop(struct queue *q)
{
	while (q->head < q->tail) {
		uintptr_t page = q->v[q->head++ % q->cap];
		uint32_t *pg = queue_live(q, page);
		if (pg) {
			*pg &= ~PG_QUEUED;
			return page;
		}
	}
	return 0;
}

void evict_note_present(uintptr_t page, uint32_t *pg)
{
	*pg &= ~PG_QUEUED; /* it may have left a stale entry in the other queue */
	queue_push(&ev.active, page, pg);
}

void evict_requeue(uintptr_t page, uint32_t *pg)
{
	*pg &= ~PG_QUEUED;
	queue_push(pg_state(*pg) == PAGE_INACTIVE ? &ev.inactive : &ev.active, page, pg);
}

static bool page_is_present(uintptr_t page)
{
	unsigned char vec = 0;
	return syscall(SYS_mincore, page, rt.page_size, &vec) == 0 && (vec & 1);
}

/* The page's data now sits in `slot`: evicted for good (far), or on probation (inactive, which
 * still counts as local memory). */
static void page_moved_out(uintptr_t page, uint32_t slot, bool probation)
{
	uint32_t *pg = region_page(page);
	pagestate_set(page, pg, probation ? PAGE_INACTIVE : PAGE_EVICTED, slot, probation ? PS_PROBATION : PS_EVICT);
	if (probation) {
		queue_push(&ev.inactive, page, pg);
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
	if (!page_is_present(page))
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
	if (moved == -EBUSY && page_is_present(page)) {
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
			/* EEXIST: the fresh slot holds a page, another page's far copy: never freed here. */
			if (err < 0 && err != -EEXIST)
				farmem_free(slot);
		}
		if (err == 0) {
			page_moved_out(page, slot, probation);
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
			queue_push(&ev.active, page, pg); /* stays resident; try others */
		}
	}
	return done;
}

/* Moves resident pages out, contiguous writable runs in one UFFDIO_MOVE each. */
static unsigned move_out(uintptr_t *v, unsigned n, bool probation)
{
	unsigned done = 0, i = 0;
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
			for (unsigned m = k; m < j - i; m++)
				farmem_free(first + m); /* never filled: freeing costs one madvise */
			done += k + move_out_pagewise(&v[i + k], j - i - k, probation);
		} else {
			done += move_out_pagewise(&v[i], j - i, probation);
		}
		i = j;
	}
	return done;
}

/* Takes up to `want` of the oldest active pages out of local memory (to probation or far). */
static unsigned move_out_oldest(uint64_t want, bool probation)
{
	uintptr_t victims[EVICT_BATCH_MAX];
	unsigned n = 0;
	while (n < want && n < EVICT_BATCH_MAX) {
		uintptr_t page = queue_pop(&ev.active);
		if (!page)
			break;
		victims[n++] = page;
	}
	if (n == 0)
		return 0;
	unsigned done = move_out(victims, n, probation);
	atomic_fetch_add(&rt.stats.evict_ops, 1);
	return done;
}

/* CLOCK: a page on probation that was not touched (a touch brings it back, see handler.c) is
 * evicted without moving any data: it already sits in its far slot. */
static bool evict_one_inactive(void)
{
	uintptr_t page = queue_pop(&ev.inactive);
	if (!page)
		return false;
	uint32_t *pg = region_page(page);
	atomic_fetch_add(&rt.stats.evict_pages, 1);
	if (*pg & PG_CLEAN) { /* the file has it: its far copy goes, the next fault reads the file */
		farmem_free(pg_slot(*pg));
		pagestate_set(page, pg, PAGE_EMPTY, 0, PS_DROP_CLEAN);
		atomic_fetch_add(&rt.stats.evict_file_dropped, 1);
		return true;
	}
	pagestate_set(page, pg, PAGE_EVICTED, pg_slot(*pg), PS_PROBATION_END);
	if (*pg & PG_FILE)
		atomic_fetch_add(&rt.stats.evict_file_moved, 1);
	return true;
}

static bool far_has_room(uint64_t pages)
{
	return pagestate_far() + pages <= ev.far_limit;
}

int evict_make_room(unsigned need)
{
	if (pagestate_resident() + need <= ev.cap_pages)
		return 0;
	uint64_t target = ev.cap_pages > need + ev.batch - 1 ? ev.cap_pages - need - (ev.batch - 1) : 0;
	unsigned idle_rounds = 0;
	while (pagestate_resident() > target && idle_rounds < 4) {
		uint64_t want = pagestate_resident() - target;
		if (!far_has_room(want < ev.batch ? want : ev.batch)) {
			ev.far_full = true;
			break;
		}
		if (rt.cfg.policy == FLTRACE_POLICY_CLOCK) {
			/* Keep the probation list topped up, then evict its oldest pages. */
			while (pagestate_inactive() < ev.inactive_target &&
			       move_out_oldest(ev.inactive_target - pagestate_inactive(), true))
				;
			unsigned n = 0;
			while (n < want && n < EVICT_BATCH_MAX && evict_one_inactive())
				n++;
			idle_rounds = n ? 0 : idle_rounds + 1;
		} else {
			unsigned done = move_out_oldest(want, false);
			atomic_fetch_add(&rt.stats.evict_pages, done);
			idle_rounds = done ? 0 : idle_rounds + 1;
		}
		if (ev.far_full)
			break;
	}
	if (ev.far_full && pagestate_resident() + need > ev.cap_pages)
		return -ENOSPC;
	ev.far_full = false;
	return pagestate_resident() + need <= ev.cap_pages ? 0 : -EAGAIN;
}
