/* The heap: the whole malloc family goes to jemalloc (linked in, its entry points renamed
 * fltrace_je_*), whose memory comes from our mmap wrapper and is therefore tracked. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "../src/runtime/rt.h"

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

EXPORT void *malloc(size_t n)
{
	EARLY();
	return fltrace_je_malloc(n);
}

EXPORT void free(void *p)
{
	fltrace_je_free(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
	EARLY();
	return fltrace_je_calloc(n, size);
}

EXPORT void *realloc(void *p, size_t n)
{
	EARLY();
	return fltrace_je_realloc(p, n);
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
	return fltrace_je_posix_memalign(out, align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	EARLY();
	return fltrace_je_aligned_alloc(align, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
	EARLY();
	return fltrace_je_memalign(align, n);
}

EXPORT void *valloc(size_t n)
{
	EARLY();
	return fltrace_je_valloc(n);
}

EXPORT void *pvalloc(size_t n)
{
	EARLY();
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	return fltrace_je_memalign(ps, (n + ps - 1) & ~(ps - 1));
}

EXPORT size_t malloc_usable_size(void *p)
{
	return fltrace_je_malloc_usable_size(p);
}
