/* The loader's heap (loaderheap.c): what the malloc family asks before it serves a call, and the
 * untracked arena it then serves the dynamic loader's calls from. */
#ifndef FLTRACE_LOADERHEAP_H
#define FLTRACE_LOADERHEAP_H

#include <stdbool.h>
#include <stddef.h>

/* True if `ret`, a malloc-family function's return address, lies in the dynamic loader's code and
 * the arena is ready. */
bool loaderheap_caller(const void *ret);
/* True once the arena exists (made on the first call); false if jemalloc could not make it. */
bool loaderheap_ready(void);
void *loaderheap_alloc(size_t n, size_t align, bool zero);
void *loaderheap_realloc(void *p, size_t n);
void loaderheap_free(void *p);
/* True if `p` lies in the loader heap's memory (its arena's blocks, and nothing else). */
bool loaderheap_owns(const void *p);

#endif
