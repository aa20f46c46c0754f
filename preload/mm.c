/* Interposed memory-mapping calls: the program's own anonymous private memory (and jemalloc's, which
 * calls these) and its private file mappings become tracked regions; every change to the address
 * space updates the bookkeeping. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../src/runtime/rt.h"
#include "../src/runtime/region.h"
#include "../src/runtime/filemap.h"
#include "../src/runtime/loader.h"
#include "../src/runtime/allocs.h"

#define EXPORT __attribute__((visibility("default")))

static size_t page_round(size_t len)
{
	return (len + rt.page_size - 1) & ~(rt.page_size - 1);
}

static bool mmap_trackable(int flags)
{
	return (flags & MAP_ANONYMOUS) && (flags & MAP_TYPE) == MAP_PRIVATE &&
	       !(flags & (MAP_HUGETLB | MAP_GROWSDOWN | MAP_STACK));
}

static void *mmap_raw(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

/* A private mapping of a regular file can be emulated once faults can be served (RT_ON): before,
 * nobody would fill its pages. Locked and huge-page mappings stay the kernel's. */
static bool mmap_file_emulable(int flags, int fd)
{
	struct stat st;
	return !(flags & MAP_ANONYMOUS) && fd >= 0 && (flags & MAP_TYPE) == MAP_PRIVATE &&
	       !(flags & (MAP_HUGETLB | MAP_GROWSDOWN | MAP_STACK | MAP_LOCKED)) &&
	       atomic_load(&rt.phase) == RT_ON && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

/* userfaultfd cannot register file mappings, so the part of the kernel's mapping at p that the
 * file covers is replaced by anonymous memory, registered and filled from the file on fault. Pages
 * wholly past the end of the file stay the kernel's file mapping: touching them raises SIGBUS, as
 * it must. Returns the bytes emulated, 0 if nothing was (the kernel's mapping is then intact). */
static size_t mmap_file_emulate(uintptr_t p, size_t len, int prot, int flags, int fd, off_t off)
{
	int file = filemap_open(fd);
	if (file < 0)
		return 0;
	uint64_t size = filemap_size(file);
	if ((uint64_t)off >= size) {
		filemap_unref(file);
		return 0;
	}
	size_t head = page_round(len);
	if (page_round(size - (uint64_t)off) < head)
		head = page_round(size - (uint64_t)off);
	int aflags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | (flags & MAP_NORESERVE);
	if (mmap_raw((void *)p, head, prot, aflags, -1, 0) == MAP_FAILED)
		rt_die("mmap", "cannot replace a file mapping with anonymous memory", "report this as a bug");
	if (region_add_file(p, head, prot, file, (uint64_t)off) < 0) {
		filemap_unref(file);
		/* Give the program the kernel's mapping back: correct, just untracked. */
		if (mmap_raw((void *)p, head, prot, (flags & ~MAP_FIXED_NOREPLACE) | MAP_FIXED, fd, off) == MAP_FAILED)
			rt_die("mmap", "cannot restore a file mapping", "report this as a bug");
		return 0;
	}
	return head;
}

/* caller: the return address of the interposed call, to tell the program's mappings from ours. */
static void *mmap_tracked(void *addr, size_t len, int prot, int flags, int fd, off_t off, const void *caller)
{
	rt_early_init();
	if (!rt_active())
		return mmap_raw(addr, len, prot, flags, fd, off);
	bool track = mmap_trackable(flags);
	bool file = !track && mmap_file_emulable(flags, fd);
	if (track || file)
		flags &= ~MAP_POPULATE; /* pages come in through the fault path, counted */
	bool tracked = false;
	rt_lock();
	/* The kernel's own mapping first (for a file too): its checks, errors and address choice are
	 * exactly what the program would get without fltrace. */
	void *p = mmap_raw(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED) {
		if (flags & MAP_FIXED)
			region_remove((uintptr_t)p, page_round(len));
		size_t emulated = file ? mmap_file_emulate((uintptr_t)p, len, prot, flags, fd, off) : 0;
		tracked = true;
		if (emulated) {
			atomic_fetch_add(&rt.stats.file_map_bytes, emulated);
			atomic_fetch_add(&rt.stats.file_maps, 1);
		} else if (!track || region_add((uintptr_t)p, page_round(len), prot) < 0) {
			tracked = false;
			atomic_fetch_add(&rt.stats.untracked_map_bytes, page_round(len));
			atomic_fetch_add(&rt.stats.untracked_maps, 1);
			if (!(flags & MAP_ANONYMOUS) && (flags & MAP_TYPE) != MAP_PRIVATE) {
				atomic_fetch_add(&rt.stats.untracked_shared_file_bytes, page_round(len));
				atomic_fetch_add(&rt.stats.untracked_shared_file_maps, 1);
			}
		}
	}
	rt_unlock();
	/* Outside rt.lock: taking the stack may fault (with --files=all, on the program's code). */
	if (tracked)
		allocs_note_map((uintptr_t)p, len, FT_ALLOC_MMAP, caller);
	return p;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap_tracked(addr, len, prot, flags, fd, off, __builtin_return_address(0));
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap_tracked(addr, len, prot, flags, fd, off, __builtin_return_address(0));
}

EXPORT int munmap(void *addr, size_t len)
{
	rt_early_init();
	if (!rt_active())
		return (int)syscall(SYS_munmap, addr, len);
	rt_lock();
	int ret = (int)syscall(SYS_munmap, addr, len);
	if (ret == 0)
		region_remove((uintptr_t)addr, page_round(len));
	rt_unlock();
	if (ret == 0)
		allocs_note_unmap((uintptr_t)addr, page_round(len), __builtin_return_address(0));
	return ret;
}

/* A file region grown past the end of its file: those pages go back to being the kernel's file
 * mapping (of our fd), so touching them raises SIGBUS as it would without fltrace. */
static void mremap_file_tail(uintptr_t p, size_t len)
{
	const struct region *r = region_of(p);
	if (!r || r->file < 0)
		return;
	uint64_t size = filemap_size(r->file);
	uint64_t in_file = size > r->file_off ? page_round(size - r->file_off) : 0;
	if (in_file >= len)
		return;
	int file = r->file;
	uint64_t off = r->file_off + in_file;
	int prot = PROT_READ | ((*region_page(p) & PG_WRITABLE) ? PROT_WRITE : 0);
	region_remove(p + in_file, len - in_file);
	filemap_mmap(file, (void *)(p + in_file), len - in_file, prot, MAP_PRIVATE | MAP_FIXED, off);
}

EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	void *want = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	rt_early_init();
	if (!rt_active())
		return (void *)syscall(SYS_mremap, old, oldlen, newlen, flags, want);
	rt_lock();
	/* The loader's code moved by the program (a huge-page remapper, say) becomes the kernel's again:
	 * moving memory registered on rt.loader_uffd would wait for a handler, which needs rt.lock. */
	const struct region *lr = region_of((uintptr_t)old);
	if (lr && lr->loader)
		loader_release((uintptr_t)old, page_round(oldlen));
	void *p = (void *)syscall(SYS_mremap, old, oldlen, newlen, flags, want);
	bool tracked = p != MAP_FAILED && region_page((uintptr_t)old);
	if (tracked) {
		if (flags & MREMAP_DONTUNMAP) /* the old range stays, emptied */
			region_zap((uintptr_t)old, page_round(oldlen));
		region_remap((uintptr_t)old, page_round(oldlen), (uintptr_t)p, page_round(newlen));
		mremap_file_tail((uintptr_t)p, page_round(newlen));
	}
	rt_unlock();
	if (tracked) {
		if (!(flags & MREMAP_DONTUNMAP))
			allocs_note_unmap((uintptr_t)old, page_round(oldlen), __builtin_return_address(0));
		allocs_note_map((uintptr_t)p, newlen, FT_ALLOC_MREMAP, __builtin_return_address(0));
	}
	return p;
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
	rt_early_init();
	bool drops = advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE ||
		     advice == MADV_DONTNEED_LOCKED;
	if (!rt_active() || !drops)
		return (int)syscall(SYS_madvise, addr, len, advice);
	rt_lock();
	/* MADV_FREE may keep a page without telling us: make it DONTNEED, which it is allowed to be.
	 * On a file mapping the kernel refuses it: so do we, though the memory is anonymous now. */
	const struct region *r = region_of((uintptr_t)addr);
	if (advice == MADV_FREE && r && r->file >= 0) {
		rt_unlock();
		errno = EINVAL;
		return -1;
	}
	if (advice == MADV_FREE && r)
		advice = MADV_DONTNEED;
	int ret = (int)syscall(SYS_madvise, addr, len, advice);
	if (ret == 0)
		region_zap((uintptr_t)addr, page_round(len));
	rt_unlock();
	return ret;
}

EXPORT int mprotect(void *addr, size_t len, int prot)
{
	rt_early_init();
	if (!rt_active())
		return (int)syscall(SYS_mprotect, addr, len, prot);
	rt_lock();
	int ret = (int)syscall(SYS_mprotect, addr, len, prot);
	if (ret == 0)
		region_protect((uintptr_t)addr, page_round(len), prot);
	rt_unlock();
	return ret;
}

/* ---- brk / sbrk: the program's own (jemalloc does not use them) ---- */

static uintptr_t brk_cur;

static uintptr_t brk_raw(uintptr_t want)
{
	return (uintptr_t)syscall(SYS_brk, want);
}

/* Tracks the page-rounded growth or shrinkage of the break. */
static int brk_move(uintptr_t want)
{
	if (!brk_cur)
		brk_cur = brk_raw(0);
	uintptr_t old = brk_cur;
	rt_lock();
	uintptr_t got = brk_raw(want);
	if (got != want) {
		rt_unlock();
		errno = ENOMEM;
		return -1;
	}
	brk_cur = got;
	uintptr_t lo = page_round(old), hi = page_round(got);
	if (rt_active() && hi > lo)
		region_add(lo, hi - lo, PROT_READ | PROT_WRITE);
	else if (hi < lo)
		region_remove(hi, lo - hi);
	rt_unlock();
	return 0;
}

EXPORT int brk(void *addr)
{
	rt_early_init();
	return brk_move((uintptr_t)addr);
}

EXPORT void *sbrk(intptr_t inc)
{
	rt_early_init();
	if (!brk_cur)
		brk_cur = brk_raw(0);
	uintptr_t old = brk_cur;
	if (inc == 0)
		return (void *)old;
	if (brk_move(old + (uintptr_t)inc) < 0)
		return (void *)-1;
	return (void *)old;
}
