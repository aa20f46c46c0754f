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

/* ---- the arena's memory: spans of the runtime's own mappings, never tracked ---- */

/* Extents are carved from a few large spans, so that a block is known to be the loader heap's by
 * its address (loaderheap_owns): the loader's free may be handed a block of another heap. A span
 * is address space only (PROT_NONE) until carved, so it costs no memory and no commit charge. */
#define SPAN_BYTES (64ul << 20)
#define MAX_SPANS 32

static struct {
	uintptr_t lo[MAX_SPANS], hi[MAX_SPANS];
	_Atomic int n;          /* spans published */
	_Atomic uintptr_t next; /* the next free byte of the last span */
	_Atomic int lock;       /* held while a span is added */
} sp;

static void *span_carve(size_t size, size_t align)
{
	for (;;) {
		int n = atomic_load_explicit(&sp.n, memory_order_acquire);
		uintptr_t cur = atomic_load_explicit(&sp.next, memory_order_acquire);
		uintptr_t start = (cur + align - 1) & ~(uintptr_t)(align - 1);
		if (n > 0 && cur >= sp.lo[n - 1] && start >= cur && start + size <= sp.hi[n - 1] && start + size > start) {
			if (!atomic_compare_exchange_weak(&sp.next, &cur, start + size))
				continue;
			if (syscall(SYS_mprotect, start, size, PROT_READ | PROT_WRITE) != 0)
				return NULL; /* the carved range is lost: a span's tail, rare */
			return (void *)start;
		}
		/* A new span: one thread maps it, the others retry. */
		int unlocked = 0;
		if (!atomic_compare_exchange_strong(&sp.lock, &unlocked, 1))
			continue;
		if (atomic_load(&sp.n) != n || n == MAX_SPANS) {
			atomic_store(&sp.lock, 0);
			if (n == MAX_SPANS)
				return NULL;
			continue;
		}
		size_t len = size + align > SPAN_BYTES ? ((size + align + SPAN_BYTES - 1) & ~(SPAN_BYTES - 1)) : SPAN_BYTES;
		void *p = (void *)syscall(SYS_mmap, NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			atomic_store(&sp.lock, 0);
			return NULL;
		}
		sp.lo[n] = (uintptr_t)p;
		sp.hi[n] = (uintptr_t)p + len;
		atomic_store_explicit(&sp.next, (uintptr_t)p, memory_order_release);
		atomic_store_explicit(&sp.n, n + 1, memory_order_release);
		atomic_store(&sp.lock, 0);
	}
}

bool loaderheap_owns(const void *p)
{
	int n = atomic_load_explicit(&sp.n, memory_order_acquire);
	for (int i = 0; i < n; i++)
		if ((uintptr_t)p - sp.lo[i] < sp.hi[i] - sp.lo[i])
			return true;
	return false;
}

static void *extent_alloc(extent_hooks_t *h, void *new_addr, size_t size, size_t align, bool *zero,
			  bool *commit, unsigned arena)
{
	(void)h, (void)arena;
	if (new_addr || size + align < size)
		return NULL; /* a fixed address is only asked to grow in place: decline */
	void *p = span_carve(size, align < 4096 ? 4096 : align);
	if (!p)
		return NULL;
	*zero = true;
	*commit = true;
	return p;
}

/* true: declined (jemalloc keeps the extent for reuse); false: done. */
static bool extent_dalloc(extent_hooks_t *h, void *addr, size_t size, bool committed, unsigned arena)
{
	(void)h, (void)addr, (void)size, (void)committed, (void)arena;
	return true;
}

/* The span keeps its address space: the pages go back to the kernel. */
static void extent_destroy(extent_hooks_t *h, void *addr, size_t size, bool committed, unsigned arena)
{
	(void)h, (void)committed, (void)arena;
	syscall(SYS_madvise, addr, size, MADV_DONTNEED);
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

bool loaderheap_ready(void)
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

/* The stack signal is held off while the arena works. The loader allocates from inside
 * __tls_get_addr, half-way through bringing a thread's TLS vector up to date; a fault on jemalloc's
 * metadata there would run the signal's handler, whose libunwind reads its own TLS through
 * __tls_get_addr, which finds the vector stale and allocates again: jemalloc re-entered in the
 * middle of an operation (its extent sets were corrupted, a crash). Held off, the fault is served
 * the way a fault inside a system call is, and its stack is read by a handler thread instead. */
static uint64_t hold_stack_signal(void)
{
	uint64_t old = 0, sig = rt.sig > 0 ? 1ull << (rt.sig - 1) : 0;
	if (sig)
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &sig, &old, 8);
	return old;
}

static void release_stack_signal(uint64_t old)
{
	if (rt.sig > 0 && !(old & (1ull << (rt.sig - 1)))) {
		uint64_t sig = 1ull << (rt.sig - 1);
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &sig, NULL, 8);
	}
}

void *loaderheap_alloc(size_t n, size_t align, bool zero)
{
	uint64_t old = hold_stack_signal();
	void *p = fltrace_je_mallocx(n ? n : 1, flags(align) | (zero ? MALLOCX_ZERO : 0));
	release_stack_signal(old);
	return p;
}

void *loaderheap_realloc(void *p, size_t n)
{
	if (!p)
		return loaderheap_alloc(n, 16, false);
	uint64_t old = hold_stack_signal();
	void *q = fltrace_je_rallocx(p, n ? n : 1, flags(16));
	release_stack_signal(old);
	return q;
}

void loaderheap_free(void *p)
{
	if (!p)
		return;
	uint64_t old = hold_stack_signal();
	fltrace_je_dallocx(p, MALLOCX_TCACHE_NONE);
	release_stack_signal(old);
}
