/* Interposed memory-mapping calls: the program's own anonymous private memory (and jemalloc's, which
 * calls these) becomes tracked regions; every change to the address space updates the bookkeeping. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../src/runtime/rt.h"

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

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	rt_early_init();
	if (!rt_active())
		return mmap_raw(addr, len, prot, flags, fd, off);
	bool track = mmap_trackable(flags);
	if (track)
		flags &= ~MAP_POPULATE; /* pages come in through the fault path, counted */
	rt_lock();
	void *p = mmap_raw(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED) {
		if (flags & MAP_FIXED)
			region_remove((uintptr_t)p, page_round(len));
		if (!track || region_add((uintptr_t)p, page_round(len), prot) < 0) {
			atomic_fetch_add(&rt.stats.untracked_map_bytes, page_round(len));
			atomic_fetch_add(&rt.stats.untracked_maps, 1);
		}
	}
	rt_unlock();
	return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
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
	return ret;
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
	void *p = (void *)syscall(SYS_mremap, old, oldlen, newlen, flags, want);
	if (p != MAP_FAILED && region_page((uintptr_t)old)) {
		if (flags & MREMAP_DONTUNMAP) /* the old range stays, emptied */
			region_zap((uintptr_t)old, page_round(oldlen));
		region_remap((uintptr_t)old, page_round(oldlen), (uintptr_t)p, page_round(newlen));
	}
	rt_unlock();
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
	/* MADV_FREE may keep a page without telling us: make it DONTNEED, which it is allowed to be. */
	if (advice == MADV_FREE && region_page((uintptr_t)addr))
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
