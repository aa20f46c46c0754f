/* The heap (malloc.c) as the rest of preload/ sees it: the internal arena of fltrace's threads,
 * and our malloc family's own addresses. */
#ifndef FLTRACE_HEAP_H
#define FLTRACE_HEAP_H

#include <stdbool.h>
#include <stddef.h>

/* The internal arena: untracked, never freed, for memory allocated on behalf of fltrace's threads
 * (rt_tls_internal set). */
void *heap_internal_alloc(size_t n, size_t align);
void *heap_internal_realloc(void *p, size_t n);
bool heap_internal_owns(const void *p);

/* Starts the heap (jemalloc's arena and this thread's cache) before tracking begins. */
void heap_start(void);

/* Our definition of malloc, calloc, realloc or free (NULL for other names): what a lookup in the
 * process finds unless something before us in its scope, the executable, defines the name too. */
void *heap_own_fn(const char *name);

#endif
