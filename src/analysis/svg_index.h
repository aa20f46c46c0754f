/* Index page writer: one HTML file per process that opens with the answer (a summary paragraph,
 * the top callsites), then embeds the pictures, then the options and the stats line (folded). */
#ifndef FLTRACE_SVG_INDEX_H
#define FLTRACE_SVG_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "callsites.h"
#include "svg_common.h"

#define SVG_INDEX_MAX_IMAGES 8
#define SVG_INDEX_MAX_OPTIONS 16

struct svg_index_info {
	uint32_t pid;
	size_t merged;                  /* > 0: the page of that many processes together (pid 0) */
	const char *exe;
	const char *const *argv;
	size_t argc;
	struct { const char *name, *value; } options[SVG_INDEX_MAX_OPTIONS]; /* as recorded */
	size_t noptions;
	uint64_t faults;                /* fault records shown */
	uint64_t by_kind[SVG_KIND_NR];
	uint64_t nostack;               /* faults without a stack */
	bool has_peak;
	uint64_t peak_bytes;            /* vm_hwm from the stats file */
	const char *stats_line;         /* last line of the stats file, or NULL */
	const char *warning;            /* e.g. a trace that ended badly, or NULL */
	uint64_t localmem_bytes;        /* -L of the recording, 0 if unknown */
	bool has_slowdown;
	double slowdown;                /* wall time relative to slowdown_of (from a sweep) */
	const char *slowdown_of;
	const struct callsite *sites;   /* top callsites, pages in columns by enum svg_kind */
	size_t nsites;
	struct { const char *caption, *file; } images[SVG_INDEX_MAX_IMAGES]; /* relative paths */
	size_t nimages;
};

/* 0 or -EIO. Deterministic: no dates, no absolute paths beyond what info holds. */
int svg_index_write(FILE *out, const struct svg_index_info *info);

/* One process of a recording, on the page that lists them. */
struct svg_index_proc {
	uint32_t pid, ppid;
	char *cmdline;
	uint64_t faults, by_kind[SVG_KIND_NR];
	const char *page;               /* its index page (relative), or NULL */
};
/* The processes of a recording in the given order, with a link to merged_page if not NULL. */
int svg_index_write_processes(FILE *out, const struct svg_index_proc *v, size_t n,
			      const char *merged_page);

#endif
