/* The prefetchers, one row each: the one list that `fltrace record` (--prefetch, --help), the
 * runtime (src/runtime/prefetch.c: name -> operations) and sweep share. Adding a prefetcher:
 * src/runtime/prefetch_<name>.c defining `prefetch_<name>`, a row here. */
#ifndef FLTRACE_PREFETCHERS_H
#define FLTRACE_PREFETCHERS_H

#include <stddef.h>

/* X(name, what it does and what it costs): rows keep their place. */
#define FLTRACE_PREFETCHERS(X)                                                                     \
	X(none, "no prefetching (the default): costs nothing")                                      \
	X(readahead, "Linux swap readahead, per mapping: after a re-fetch, the pages beside it in "  \
		     "the direction of the mapping's accesses; the window doubles (up to 32 pages) "   \
		     "while they are sequential or its pages were used, and halves when not")          \
	X(stride, "per-thread stride detector: after the same page stride twice in a row, the next " \
		  "8 pages along it")                                                                   \
	X(leap, "Leap (ATC 2020): the majority page delta of the last 32 accesses, found in a "     \
		"window of 4 to 32 of them; a window of pages along it sized by the last one's hits")

#define FLTRACE_PREFETCH_DEFAULT "none"

#define FLTRACE_PREFETCH_ENUM_ROW(name, help) FLTRACE_PREFETCH_##name,
enum fltrace_prefetch { FLTRACE_PREFETCHERS(FLTRACE_PREFETCH_ENUM_ROW) FLTRACE_PREFETCH_COUNT };
#undef FLTRACE_PREFETCH_ENUM_ROW

int fltrace_prefetch_find(const char *name);    /* its row, -1 if there is no such prefetcher */
const char *fltrace_prefetch_name(unsigned id); /* "?" past the table */
const char *fltrace_prefetch_help(unsigned id);
/* "none, readahead, stride or leap" into buf (for error messages); returns buf */
const char *fltrace_prefetch_list(char *buf, size_t cap);

#endif
