/* Tracked regions: the address ranges of the program's anonymous memory (and of the private file
 * mappings it emulates with anonymous memory) that fltrace serves, and the state word of each page.
 * Callers hold rt.lock. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "far.h"
#include "uffd.h"
#include "region.h"
#include "prefetch.h"
#include "filemap.h"
#include "evict.h"

#define REGION_MAX 65536

static struct {
	struct region *v; /* sorted by start, non-overlapping */
	size_t n;
	uint64_t tracked_bytes;
} regions;

static _Atomic uint32_t region_births;

uint32_t region_generation(void)
{
	return atomic_load_explicit(&region_births, memory_order_acquire);
}

bool region_born_after(uintptr_t addr, uint32_t gen)
{
	const struct region *r = region_of(addr);
	return r && (int32_t)(r->born - gen) > 0;
}

static uint32_t region_birth(void)
{
	return atomic_fetch_add_explicit(&region_births, 1, memory_order_acq_rel) + 1;
}

void region_table_init(void)
{
	if (!regions.v)
		regions.v = rt_map(REGION_MAX * sizeof(struct region));
}

static size_t region_index(uintptr_t addr) /* first region with end > addr */
{
	size_t lo = 0, hi = regions.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (regions.v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static size_t region_npages(const struct region *r)
{
	return (r->end - r->start) >> rt.page_shift;
}

uint32_t *region_page(uintptr_t addr)
{
	size_t i = region_index(addr);
	if (i == regions.n || regions.v[i].start > addr)
		return NULL;
	return &regions.v[i].pages[(addr - regions.v[i].start) >> rt.page_shift];
}

const struct region *region_of(uintptr_t addr)
{
	size_t i = region_index(addr);
	if (i == regions.n || regions.v[i].start > addr)
		return NULL;
	return &regions.v[i];
}

static int region_alloc_pages(struct region *r)
{
	r->pages_map_len = (region_npages(r) * sizeof(uint32_t) + rt.page_size - 1) & ~(rt.page_size - 1);
	r->pages = rt_map(r->pages_map_len);
	return r->pages ? 0 : -ENOMEM;
}

/* Releases what a page holds: its far slot, its place in the resident count. A file page emptied
 * reads the file again on its next fault, as after the kernel's MADV_DONTNEED of a private file
 * mapping. */
static void page_release(uintptr_t page, uint32_t *pg)
{
	unsigned s = pg_state(*pg);
	if (s == PAGE_EMPTY)
		return;
	if (s == PAGE_INACTIVE)
		prefetch_slot_freed(pg_slot(*pg));
	if (s == PAGE_EVICTED || s == PAGE_INACTIVE)
		farmem_free(pg_slot(*pg));
	pagestate_set(page, pg, PAGE_EMPTY, 0, PS_RELEASE);
}

static void region_release_range(struct region *r, uintptr_t start, uintptr_t end)
{
	for (uintptr_t a = start; a < end; a += rt.page_size)
		page_release(a, &r->pages[(a - r->start) >> rt.page_shift]);
}

static int region_insert_at(size_t i, const struct region *r)
{
	if (regions.n == REGION_MAX)
		return -ENOSPC;
	memmove(&regions.v[i + 1], &regions.v[i], (regions.n - i) * sizeof(*r));
	regions.v[i] = *r;
	regions.n++;
	return 0;
}

static void region_delete_at(size_t i)
{
	if (regions.v[i].file >= 0)
		filemap_unref(regions.v[i].file);
	rt_unmap(regions.v[i].pages, regions.v[i].pages_map_len);
	memmove(&regions.v[i], &regions.v[i + 1], (regions.n - i - 1) * sizeof(struct region));
	regions.n--;
}

/* A copy of part [start, end) of r with its own page array. */
static int region_clone_part(const struct region *r, uintptr_t start, uintptr_t end, struct region *out)
{
	out->start = start;
	out->end = end;
	out->file = r->file;
	out->file_off = r->file_off + (start - r->start);
	out->id = r->id;
	out->loader = r->loader;
	if (region_alloc_pages(out) < 0)
		return -ENOMEM;
	if (out->file >= 0)
		filemap_ref(out->file);
	memcpy(out->pages, &r->pages[(start - r->start) >> rt.page_shift],
	       region_npages(out) * sizeof(uint32_t));
	return 0;
}

static int region_add_common(uintptr_t start, size_t len, int prot, int file, uint64_t off, bool loader)
{
	struct region r = { .start = start, .end = start + len, .file = file, .file_off = off, .loader = loader,
			    .born = region_birth() };
	region_remove(start, len); /* MAP_FIXED over something we tracked */
	if (region_alloc_pages(&r) < 0)
		return -ENOMEM;
	uint32_t init = ((prot & PROT_WRITE) ? PG_WRITABLE : 0) | ((prot & PROT_READ) ? PG_READABLE : 0) |
			(file >= 0 ? PG_FILE : 0);
	if (init)
		for (size_t i = 0; i < region_npages(&r); i++)
			r.pages[i] = init;
	if (rt.phase == RT_ON && !loader) {
		int err = uffd_register(rt.uffd, start, len);
		if (err < 0) {
			rt_unmap(r.pages, r.pages_map_len);
			return err;
		}
	}
	int err = region_insert_at(region_index(start), &r);
	if (err < 0) {
		if (rt.phase == RT_ON && !loader)
			uffd_unregister(rt.uffd, start, len);
		rt_unmap(r.pages, r.pages_map_len);
		return err;
	}
	regions.tracked_bytes += len;
	return 0;
}

int region_add(uintptr_t start, size_t len, int prot)
{
	return region_add_common(start, len, prot, -1, 0, false);
}

int region_add_file(uintptr_t start, size_t len, int prot, int file, uint64_t off)
{
	int err = region_add_common(start, len, prot, file, off, false);
	if (err == 0)
		regions.v[region_index(start)].id = filemap_record(file, start, len, off);
	return err;
}

/* Not registered here: the caller registered the memory that is about to replace the loader's. */
int region_add_loader(uintptr_t start, size_t len, int prot, int file, uint64_t off)
{
	int err = region_add_common(start, len, prot, file, off, true);
	if (err == 0)
		regions.v[region_index(start)].id = filemap_record(file, start, len, off);
	return err;
}

int region_fd(uintptr_t addr)
{
	const struct region *r = region_of(addr);
	return r && r->loader ? rt.loader_uffd : rt.uffd;
}

/* Forgets [start, start+len): whole regions go, partly covered ones are trimmed or split. */
void region_remove(uintptr_t start, size_t len)
{
	uintptr_t end = start + len;
	size_t i = region_index(start);
	while (i < regions.n && regions.v[i].start < end) {
		struct region *r = &regions.v[i];
		uintptr_t cut_lo = start > r->start ? start : r->start;
		uintptr_t cut_hi = end < r->end ? end : r->end;
		region_release_range(r, cut_lo, cut_hi);
		regions.tracked_bytes -= cut_hi - cut_lo;
		if (cut_lo == r->start && cut_hi == r->end) {
			region_delete_at(i);
			continue;
		}
		struct region lo = { 0 }, hi = { 0 };
		bool keep_lo = cut_lo > r->start, keep_hi = cut_hi < r->end;
		if (keep_lo && region_clone_part(r, r->start, cut_lo, &lo) < 0)
			rt_die("region", "out of memory for page tables", "report this as a bug");
		if (keep_hi && region_clone_part(r, cut_hi, r->end, &hi) < 0)
			rt_die("region", "out of memory for page tables", "report this as a bug");
		region_delete_at(i);
		if (keep_lo)
			RT_BUG_ON(region_insert_at(i++, &lo) < 0);
		if (keep_hi)
			RT_BUG_ON(region_insert_at(i++, &hi) < 0);
	}
}

void region_zap(uintptr_t start, size_t len)
{
	uintptr_t end = start + len;
	for (size_t i = region_index(start); i < regions.n && regions.v[i].start < end; i++) {
		struct region *r = &regions.v[i];
		region_release_range(r, start > r->start ? start : r->start, end < r->end ? end : r->end);
	}
}

void region_protect(uintptr_t start, size_t len, int prot)
{
	uintptr_t end = start + len;
	for (size_t i = region_index(start); i < regions.n && regions.v[i].start < end; i++) {
		struct region *r = &regions.v[i];
		uintptr_t lo = start > r->start ? start : r->start, hi = end < r->end ? end : r->end;
		for (uintptr_t a = lo; a < hi; a += rt.page_size) {
			uint32_t *pg = &r->pages[(a - r->start) >> rt.page_shift];
			/* A present page that may be written from now on is no longer known to be clean. */
			*pg = (prot & PROT_WRITE) ? ((*pg | PG_WRITABLE) & ~PG_CLEAN) : (*pg & ~PG_WRITABLE);
			*pg = (prot & PROT_READ) ? (*pg | PG_READABLE) : (*pg & ~PG_READABLE);
		}
	}
}

/* mremap: the kernel moved present pages and left missing ones missing at the new place, so the
 * page states move with them; the moved range has lost its registration and is registered again. */
void region_remap(uintptr_t old, size_t oldlen, uintptr_t new_, size_t newlen)
{
	size_t keep = oldlen < newlen ? oldlen : newlen;
	size_t npages = newlen >> rt.page_shift;
	struct region r = { .start = new_, .end = new_ + newlen, .file = -1, .born = region_birth() };
	const struct region *from = region_of(old);
	if (from && from->file >= 0) {
		/* A file region stays one: its pages keep their file offsets at the new address. */
		r.file = from->file;
		r.file_off = from->file_off + (old - from->start);
		filemap_ref(r.file);
	}
	if (region_alloc_pages(&r) < 0)
		rt_die("mremap", "out of memory for page tables", "report this as a bug");
	uint32_t fill = r.file >= 0 ? PG_FILE : 0;
	for (size_t i = 0; i < npages; i++) {
		uint32_t *pg = i < (keep >> rt.page_shift) ? region_page(old + (i << rt.page_shift)) : NULL;
		if (pg) {
			fill = *pg & (PG_WRITABLE | PG_READABLE | PG_FILE);
			/* moved, not released */
			pagestate_move(old + (i << rt.page_shift), pg, new_ + (i << rt.page_shift), &r.pages[i]);
		} else {
			r.pages[i] = fill;
		}
	}
	region_remove(old, oldlen);
	region_remove(new_, newlen);
	if (rt.phase == RT_ON) {
		int err = uffd_register(rt.uffd, new_, newlen);
		if (err < 0)
			rt_die("mremap", "cannot register the moved memory with userfaultfd", "report this as a bug");
	}
	if (r.file >= 0)
		r.id = filemap_record(r.file, new_, newlen, r.file_off);
	RT_BUG_ON(region_insert_at(region_index(new_), &r) < 0);
	regions.tracked_bytes += newlen;
	/* Resident pages kept their place in the resident ring by old address: requeue them. */
	for (size_t i = 0; i < npages; i++)
		if (pg_state(r.pages[i]) == PAGE_PRESENT || pg_state(r.pages[i]) == PAGE_INACTIVE)
			evict_requeue(new_ + (i << rt.page_shift), &r.pages[i]);
}

/* Pages touched before the runtime started (the loader's and jemalloc's first allocations) are
 * resident without our having served them: count them, so the cap holds for them too. */
static void region_adopt_resident(struct region *r)
{
	size_t n = region_npages(r);
	unsigned char *vec = rt_map(n);
	if (!vec)
		return;
	if (syscall(SYS_mincore, r->start, r->end - r->start, vec) == 0)
		for (size_t p = 0; p < n; p++)
			if ((vec[p] & 1) && pg_state(r->pages[p]) == PAGE_EMPTY) {
				pagestate_set(r->start + (p << rt.page_shift), &r->pages[p], PAGE_PRESENT, 0, PS_ADOPT);
				evict_note_present(r->start + (p << rt.page_shift), &r->pages[p]);
			}
	rt_unmap(vec, n);
}

int region_register_all(int fd, int loader_fd)
{
	for (size_t i = 0; i < regions.n; i++) {
		int err = uffd_register(regions.v[i].loader ? loader_fd : fd, regions.v[i].start,
					regions.v[i].end - regions.v[i].start);
		if (err < 0 && err != -ENOMEM && err != -EINVAL)
			return err;
		region_adopt_resident(&regions.v[i]);
	}
	return 0;
}

/* In a fork child: the child's memory is no longer registered, so every evicted page is copied
 * back from the far store (inherited copy-on-write) before the child can read zeros there. */
void region_restore_evicted(void)
{
	for (size_t i = 0; i < regions.n; i++) {
		struct region *r = &regions.v[i];
		for (size_t p = 0; p < region_npages(r); p++) {
			uint32_t *pg = &r->pages[p];
			unsigned st = pg_state(*pg);
			if (st != PAGE_EVICTED && st != PAGE_INACTIVE)
				continue;
			void *dst = (void *)(r->start + (p << rt.page_shift));
			/* A read-only page is opened for the copy only: nothing else runs in the child yet. */
			bool ro = !(*pg & PG_WRITABLE);
			if (ro)
				syscall(SYS_mprotect, dst, rt.page_size, PROT_READ | PROT_WRITE);
			memcpy(dst, st == PAGE_EVICTED ? far_page_source(pg_slot(*pg)) : farmem_addr(pg_slot(*pg)),
			       rt.page_size);
			if (ro)
				syscall(SYS_mprotect, dst, rt.page_size, PROT_READ);
			farmem_free(pg_slot(*pg));
			pagestate_set((uintptr_t)dst, pg, PAGE_PRESENT, 0, PS_FORK_RESTORE);
			evict_note_present((uintptr_t)dst, pg);
		}
	}
}

/* A new trace file (a fork child's) names every file region again, with ids of its own. */
void region_record_files(void)
{
	filemap_ids_reset();
	for (size_t i = 0; i < regions.n; i++) {
		struct region *r = &regions.v[i];
		if (r->file >= 0)
			r->id = filemap_record(r->file, r->start, r->end - r->start, r->file_off);
	}
}

/* Missing pages (not resident, readable) of [start, start+len), at most `max` of them. */
unsigned region_missing_pages(uintptr_t start, size_t len, uintptr_t *out, unsigned max)
{
	unsigned n = 0;
	uintptr_t end = start + len;
	for (uintptr_t a = start & ~((uintptr_t)rt.page_size - 1); a < end && n < max; a += rt.page_size) {
		uint32_t *pg = region_page(a);
		if (pg && pg_state(*pg) != PAGE_PRESENT && (*pg & PG_READABLE))
			out[n++] = a;
	}
	return n;
}

uint64_t region_tracked_bytes(void)
{
	return regions.tracked_bytes;
}
