/* Faults by callsite (the innermost frame's function and file:line, as `report --by line`), named
 * by strings that outlive the symbolizer, so that processes and runs merge by name, in columns. */
#ifndef FLTRACE_CALLSITES_H
#define FLTRACE_CALLSITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"

/* Column = the fault's kind as the pictures colour it (enum svg_kind: a fault taken inside a
 * system call counts as syscall whatever it did). */
#define CALLSITES_BY_KIND (-1)

struct callsite {
	const char *func;  /* of the innermost line (an inlined function's own name); "??" unknown,
	                      "[no stack]" */
	const char *code;  /* "file:line", innermost first with the lines it is inlined at joined by
	                      "<<<"; "object+0xoffset" where the line is unknown */
	const char *lib;   /* the object's file name (no directory), "" if none */
	uint64_t *pages;   /* [ncols] */
	uint64_t total;    /* over all columns */
	uint64_t rank;     /* over the columns callsites_sort ranks by */
	const char *caller; /* with callsites_by_caller: the program's own line that led there
	                       (caller.c), as a report names it; else "" (or NULL) */
};

struct callsites;

struct callsites *callsites_new(size_t ncols);
void callsites_free(struct callsites *c);
/* Before adding: a callsite is the innermost line together with the program's frame that led to
 * it, so that libc's memset called from two lines is two callsites. */
void callsites_by_caller(struct callsites *c);
/* Adds the faults of a by-stack table, symbolized with s, to column col (or CALLSITES_BY_KIND).
 * 0 or -errno. */
int callsites_add(struct callsites *c, struct agg_table *by_stack, const struct symbolizer *s,
		  int col);
/* Merges by name and sorts: most pages in the columns with rank_cols[col] set (every column if
 * rank_cols is NULL) first, then the most in all, then by name. 0 or -ENOMEM. */
int callsites_sort(struct callsites *c, const bool *rank_cols);
/* After callsites_sort: the n sorted callsites. */
size_t callsites_get(const struct callsites *c, const struct callsite **v);
/* Bytes of code that name the innermost line (before any "<<<"). */
int callsites_inner_len(const char *code);

#endif
