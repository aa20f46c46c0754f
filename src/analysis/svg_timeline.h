/* Faults-over-time renderer: time on x, faulting address (or file offset, one panel per file) on y,
 * binned into a pixel grid so a million faults stay a small SVG; plus a fault-rate panel. */
#ifndef FLTRACE_SVG_TIMELINE_H
#define FLTRACE_SVG_TIMELINE_H

#include <stdint.h>
#include <stdio.h>

#include "svg_common.h"

struct svg_timeline;

struct svg_timeline_opts {
	const char *title;    /* NULL: "Faults over time" */
	const char *subtitle; /* optional */
	unsigned width;       /* px; 0 means 1200 */
	uint64_t t0_ns;       /* time 0 of the axis (the trace start); 0: the first fault */
	uint64_t page_size;   /* 0 means 4096 */
};

struct svg_timeline *svg_timeline_new(void);
void svg_timeline_free(struct svg_timeline *tl);

/* One fault at time t_ns. file == NULL: y is a virtual address (anonymous or untracked memory);
 * otherwise y is the offset in that file (the path is copied). 0 or -ENOMEM. */
int svg_timeline_add(struct svg_timeline *tl, uint64_t t_ns, uint64_t y, enum svg_kind kind,
		     const char *file);

/* Write the SVG; deterministic. 0, -ENOMEM or -EIO. */
int svg_timeline_write(const struct svg_timeline *tl, FILE *out,
		       const struct svg_timeline_opts *opts);

/* Axis helpers, exported for tests. */
/* A "nice" step (1, 2 or 5 times a power of ten) giving at most max_ticks ticks over span. */
double svg_nice_step(double span, int max_ticks);
/* A power-of-two step giving at most max_ticks ticks over span (addresses, offsets). */
uint64_t svg_pow2_step(uint64_t span, int max_ticks);

#endif
