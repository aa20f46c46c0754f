/* The heap: the whole malloc family goes to jemalloc (linked in, its entry points renamed
 * fltrace_je_*), whose memory comes from our mmap wrapper and is therefore tracked. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

#include "../src/runtime/rt.h"
#include "../src/runtime/allocs.h"
#include "heap.h"
#include "loaderheap.h"

/* The dynamic loader's own allocations go to the loader's heap (loaderheap.c). */
#define FROM_LOADER() loaderheap_caller(__builtin_return_address(0))

#define EXPORT __attribute__((visibility("default")))

void *fltrace_je_malloc(size_t);
void fltrace_je_free(void *);
void *fltrace_je_calloc(size_t, size_t);
void *fltrace_je_realloc(void *, size_t);
int fltrace_je_posix_memalign(void **, size_t, size_t);
void *fltrace_je_aligned_alloc(size_t, size_t);
void *fltrace_je_memalign(size_t, size_t);
void *fltrace_je_valloc(size_t);
size_t fltrace_je_malloc_usable_size(void *);

/* The first allocation may come before our constructor (from the loader or libc): start early
 * enough that our fork handlers are registered before jemalloc's. */
#define EARLY() rt_early_init()

/* Allocations made for fltrace's own threads (glibc allocates a thread's TLS vector with calloc
 * when we create one) come from untracked memory: a handler thread must never fault on memory
 * only it can serve. A bump arena; freeing is a no-op (our threads live as long as the process). */
#define INTERNAL_ARENA (4u << 20)
static struct {
	char *_Atomic base;
	_Atomic size_t used;
} internal;

bool heap_internal_owns(const void *p)
{
	const char *b = atomic_load_explicit(&internal.base, memory_order_acquire);
	return b && (const char *)p >= b && (const char *)p < b + INTERNAL_ARENA;
}

void *heap_internal_alloc(size_t n, size_t align)
{
	if (!atomic_load_explicit(&internal.base, memory_order_acquire)) {
		/* Two threads may get here at once: one mapping wins, the other is given back. */
		char *mine = rt_map(INTERNAL_ARENA), *none = NULL;
		if (mine && !atomic_compare_exchange_strong(&internal.base, &none, mine))
			rt_unmap(mine, INTERNAL_ARENA);
	}
	if (align < 16)
		align = 16;
	size_t need = ((n + 15) & ~(size_t)15) + align + 16;
	size_t at = atomic_fetch_add(&internal.used, need);
	if (!internal.base || at + need > INTERNAL_ARENA) {
		errno = ENOMEM;
		return NULL;
	}
	uintptr_t p = ((uintptr_t)internal.base + at + 16 + align - 1) & ~(uintptr_t)(align - 1);
	((size_t *)p)[-1] = n; /* for malloc_usable_size and realloc */
	return (void *)p;
}

void *heap_internal_realloc(void *p, size_t n)
{
	void *q = heap_internal_alloc(n, 16);
	if (q && p) {
		size_t old = ((size_t *)p)[-1];
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}

/* jemalloc starts at its first allocation: its arena, its base blocks and the thread's cache, 28
 * pages. Started by the program's first malloc after tracking began, those pages were 28 faults
 * of every traced process, each with its stack, and the first of them paid for the first unwind
 * of the process: a traced /bin/true took 5.07 ms, 4.20 started here (perf stat -r 40, 3 rounds
 * alternating). Their faults were fltrace's allocator at work, not the program; jemalloc's pages are
 * the program's heap all the same, adopted as resident when tracking begins. */
void heap_start(void)
{
	void *volatile p = fltrace_je_malloc(1);
	fltrace_je_free(p);
}

EXPORT void *malloc(size_t n)
{
	EARLY();
	if (rt_tls_internal)
		return heap_internal_alloc(n, 16);
	if (FROM_LOADER())
		return loaderheap_alloc(n, 16, false);
	void *p = fltrace_je_malloc(n);
	allocs_heap(p, n);
	return p;
}

EXPORT void free(void *p)
{
	if (heap_internal_owns(p))
		return;
	if (FROM_LOADER()) {
		loaderheap_free(p);
		return;
	}
	allocs_heap_free(p);
	fltrace_je_free(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
	EARLY();
	if (rt_tls_internal) {
		size_t bytes;
		if (__builtin_mul_overflow(n, size, &bytes)) {
			errno = ENOMEM;
			return NULL;
		}
		return heap_internal_alloc(bytes, 16); /* fresh mapping: already zero */
	}
	if (FROM_LOADER()) {
		size_t bytes;
		if (__builtin_mul_overflow(n, size, &bytes)) {
			errno = ENOMEM;
			return NULL;
		}
		return loaderheap_alloc(bytes, 16, true);
	}
	void *p = fltrace_je_calloc(n, size);
	allocs_heap(p, n * size); /* no overflow: jemalloc refused it otherwise */
	return p;
}

EXPORT void *realloc(void *p, size_t n)
{
	EARLY();
	if (heap_internal_owns(p) || (!p && rt_tls_internal))
		return heap_internal_realloc(p, n);
	if (FROM_LOADER())
		return loaderheap_realloc(p, n);
	/* The old allocation's end is recorded first: the new one may start at the same address. */
	allocs_heap_free(p);
	void *q = fltrace_je_realloc(p, n);
	if (n)
		allocs_heap(q, n);
	return q;
}

EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, bytes);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	EARLY();
	if (rt_tls_internal) {
		*out = heap_internal_alloc(n, align);
		return *out ? 0 : ENOMEM;
	}
	if (FROM_LOADER()) {
		*out = loaderheap_alloc(n, align, false);
		return *out ? 0 : ENOMEM;
	}
	int err = fltrace_je_posix_memalign(out, align, n);
	if (!err)
		allocs_heap(*out, n);
	return err;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	EARLY();
	if (rt_tls_internal)
		return heap_internal_alloc(n, align);
	if (FROM_LOADER())
		return loaderheap_alloc(n, align, false);
	void *p = fltrace_je_aligned_alloc(align, n);
	allocs_heap(p, n);
	return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
	EARLY();
	if (rt_tls_internal)
		return heap_internal_alloc(n, align);
	if (FROM_LOADER())
		return loaderheap_alloc(n, align, false);
	void *p = fltrace_je_memalign(align, n);
	allocs_heap(p, n);
	return p;
}

EXPORT void *valloc(size_t n)
{
	EARLY();
	void *p = fltrace_je_valloc(n);
	allocs_heap(p, n);
	return p;
}

EXPORT void *pvalloc(size_t n)
{
	EARLY();
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	void *p = fltrace_je_memalign(ps, (n + ps - 1) & ~(ps - 1));
	allocs_heap(p, n);
	return p;
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (heap_internal_owns(p))
		return ((size_t *)p)[-1];
	return fltrace_je_malloc_usable_size(p);
}

/* Hidden aliases: inside this library, `&malloc` would be the address the loader bound, which is
 * the executable's when it defines malloc too. */
#define OWN(name) extern __typeof__(name) own_##name __attribute__((alias(#name), copy(name), visibility("hidden")))
OWN(malloc);
OWN(calloc);
OWN(realloc);
OWN(free);

void *heap_own_fn(const char *name)
{
	if (strcmp(name, "malloc") == 0)
		return (void *)own_malloc;
	if (strcmp(name, "calloc") == 0)
		return (void *)own_calloc;
	if (strcmp(name, "realloc") == 0)
		return (void *)own_realloc;
	if (strcmp(name, "free") == 0)
		return (void *)own_free;
	return NULL;
}
