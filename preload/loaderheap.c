/* The loader's heap: allocations the dynamic loader makes (scope lists, link maps of dlopened
 * objects, TLS vectors) come from a jemalloc arena of untracked memory, never evicted. */
#include <elf.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#include "../src/runtime/rt.h"
#include "loaderheap.h"

/* Why: every thread reads these structures behind the program's back, fltrace's own threads too
 * (a lazy PLT binding inside libunwind walks the global scope list, a thread's creation reads the
 * link maps). A handler thread that faults on one of them waits for itself: fltrace hung. */

void *fltrace_je_mallocx(size_t, int);
void *fltrace_je_rallocx(void *, size_t, int);
void fltrace_je_dallocx(void *, int);
int fltrace_je_mallctl(const char *, void *, size_t *, void *, size_t);

static struct {
	uintptr_t text_lo, text_hi; /* the loader's executable segment; 0, 0 when unknown */
	_Atomic bool looked;        /* text_lo and text_hi are set */
	_Atomic int state;          /* 0 not set up, 1 being set up, 2 ready, 3 unavailable */
	unsigned arena;
} lh;

/* ---- the arena's memory: the runtime's own mappings (rt_map), which are never tracked ---- */

static void *extent_alloc(extent_hooks_t *h, void *new_addr, size_t size, size_t align, bool *zero,
			  bool *commit, unsigned arena)
{
	(void)h, (void)arena;
	if (new_addr || size + align < size)
		return NULL; /* a fixed address is only asked to grow in place: decline */
	char *p = rt_map(size + align);
	if (!p)
		return NULL;
	uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	if (start > (uintptr_t)p)
		rt_unmap(p, start - (uintptr_t)p);
	uintptr_t end = start + size, map_end = (uintptr_t)p + size + align;
	if (map_end > end)
		rt_unmap((void *)end, map_end - end);
	*zero = true;
	*commit = true;
	return (void *)start;
}

/* true: declined (jemalloc keeps the extent for reuse); false: done. */
static bool extent_dalloc(extent_hooks_t *h, void *addr, size_t size, bool committed, unsigned arena)
{
	(void)h, (void)addr, (void)size, (void)committed, (void)arena;
	return true;
}

static void extent_destroy(extent_hooks_t *h, void *addr, size_t size, bool committed, unsigned arena)
{
	(void)h, (void)committed, (void)arena;
	rt_unmap(addr, size);
}

static bool extent_purge(extent_hooks_t *h, void *addr, size_t size, size_t offset, size_t length,
			 unsigned arena)
{
	(void)h, (void)size, (void)arena;
	return syscall(SYS_madvise, (char *)addr + offset, length, MADV_DONTNEED) != 0;
}

static bool extent_split(extent_hooks_t *h, void *addr, size_t size, size_t a, size_t b, bool committed,
			 unsigned arena)
{
	(void)h, (void)addr, (void)size, (void)a, (void)b, (void)committed, (void)arena;
	return false; /* anonymous mappings split anywhere on a page */
}

static bool extent_merge(extent_hooks_t *h, void *a, size_t sa, void *b, size_t sb, bool committed,
			 unsigned arena)
{
	(void)h, (void)a, (void)sa, (void)b, (void)sb, (void)committed, (void)arena;
	return false;
}

static extent_hooks_t untracked_hooks = {
	.alloc = extent_alloc,
	.dalloc = extent_dalloc,
	.destroy = extent_destroy,
	.purge_forced = extent_purge,
	.split = extent_split,
	.merge = extent_merge,
};

/* ---- who is calling ---- */

/* The loader's executable segment, from its ELF headers (mapped at AT_BASE). */
static void find_loader_text(void)
{
	uintptr_t base = getauxval(AT_BASE);
	if (base) { /* 0: the loader was run as the program itself, with no interpreter */
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
		for (unsigned i = 0; i < eh->e_phnum; i++)
			if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
				lh.text_lo = base + ph[i].p_vaddr;
				lh.text_hi = lh.text_lo + ph[i].p_memsz;
			}
	}
	atomic_store_explicit(&lh.looked, true, memory_order_release);
}

static bool loaderheap_ready(void)
{
	int s = atomic_load_explicit(&lh.state, memory_order_acquire);
	if (s >= 2)
		return s == 2;
	int expect = 0;
	if (atomic_compare_exchange_strong(&lh.state, &expect, 1)) {
		extent_hooks_t *hooks = &untracked_hooks;
		size_t len = sizeof(lh.arena);
		bool ok = fltrace_je_mallctl("arenas.create", &lh.arena, &len, &hooks, sizeof(hooks)) == 0;
		/* Without an arena (jemalloc out of memory) the loader's allocations stay tracked. */
		atomic_store_explicit(&lh.state, ok ? 2 : 3, memory_order_release);
		return ok;
	}
	while ((s = atomic_load_explicit(&lh.state, memory_order_acquire)) == 1)
		;
	return s == 2;
}

bool loaderheap_caller(const void *ret)
{
	if (!atomic_load_explicit(&lh.looked, memory_order_acquire))
		find_loader_text();
	uintptr_t r = (uintptr_t)ret;
	return r - lh.text_lo < lh.text_hi - lh.text_lo && loaderheap_ready();
}

static int flags(size_t align)
{
	return MALLOCX_ARENA(lh.arena) | MALLOCX_TCACHE_NONE | (align > 16 ? MALLOCX_ALIGN(align) : 0);
}

void *loaderheap_alloc(size_t n, size_t align, bool zero)
{
	return fltrace_je_mallocx(n ? n : 1, flags(align) | (zero ? MALLOCX_ZERO : 0));
}

void *loaderheap_realloc(void *p, size_t n)
{
	if (!p)
		return loaderheap_alloc(n, 16, false);
	return fltrace_je_rallocx(p, n ? n : 1, flags(16));
}

void loaderheap_free(void *p)
{
	if (p)
		fltrace_je_dallocx(p, MALLOCX_TCACHE_NONE);
}
