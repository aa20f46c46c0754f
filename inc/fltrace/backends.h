/* The far-memory backends, one row each: the one list that `fltrace record` (--far, --help) and the
 * runtime (src/runtime/far.c: name -> operations) share. Adding a backend: src/runtime/far_<name>.c
 * defining `far_<name>`, a row here. */
#ifndef FLTRACE_BACKENDS_H
#define FLTRACE_BACKENDS_H

#include <stddef.h>

/* X(name, the argument after "name:" as help shows it ("" if it takes none), what it is and costs) */
#define FLTRACE_BACKENDS(X)                                                                        \
	X(mem, "", "pages kept in memory inside the process (the default): nothing beyond the page " \
		  "moves every eviction and re-fetch make")                                            \
	X(file, "<dir>", "file:<dir>: pages kept in an unnamed file in <dir>, as swap keeps them on an " \
		   "SSD: one pwrite per run of evicted pages, one pread per re-fetch (page cache: ~2 us; " \
		   "disk when memory is short), a copy of the file at each fork")                      \
	X(memcached, "<host:port,...>", "memcached:<host:port,...>: pages kept on a pool of memcached " \
		   "servers (started with -M), spread by consistent hashing, encrypted and authenticated; " \
		   "one pipelined request per run of evicted pages, one get round trip per re-fetch, a " \
		   "copy of the far pages at each fork; --far-replicas keeps each page on several")

#define FLTRACE_BACKEND_DEFAULT "mem"

#define FLTRACE_BACKEND_ENUM_ROW(name, arg, help) FLTRACE_BACKEND_##name,
enum fltrace_backend { FLTRACE_BACKENDS(FLTRACE_BACKEND_ENUM_ROW) FLTRACE_BACKEND_COUNT };
#undef FLTRACE_BACKEND_ENUM_ROW

/* "mem", "file:/dir" or "memcached:h:p,...": its row, with *arg the part after ':' (NULL if none); -1
 * if there is no such backend, -2 if it needs an argument and has none, -3 if it has one (or a ':')
 * it does not take. */
int fltrace_backend_parse(const char *spec, const char **arg);
const char *fltrace_backend_name(unsigned id); /* "?" past the table */
const char *fltrace_backend_help(unsigned id);
const char *fltrace_backend_list(char *buf, size_t cap); /* "mem, file:<dir> or memcached:<host:port,...>" */

#endif
