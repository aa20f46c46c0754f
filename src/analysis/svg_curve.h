/* Miss-ratio curve renderer (fltrace sweep): re-fetches and slowdown against local memory, one
 * line per eviction policy, local memory on a log2 axis since sweeps halve it. */
#ifndef FLTRACE_SVG_CURVE_H
#define FLTRACE_SVG_CURVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "svg_common.h"

struct svg_curve_point {
	uint64_t localmem;   /* bytes (-L) */
	uint64_t refetch;    /* pages fetched back from far memory */
	double slowdown;     /* wall time / the baseline's; < 0: unknown */
	const char *label;   /* the x tick's text instead of the size (e.g. "ample"), or NULL */
};

struct svg_curve_series {
	const char *name;                    /* the policy */
	const struct svg_curve_point *pts;   /* in any order; drawn by localmem */
	size_t n;
};

struct svg_curve_opts {
	const char *title;    /* NULL: "Miss-ratio curve" */
	const char *subtitle; /* e.g. the command */
	const char *baseline; /* what slowdown is relative to, e.g. "the ample run (1 GiB)" */
	unsigned width;       /* px; 0 means 1000 */
};

/* Two panels (re-fetches, slowdown), each with one <polyline class="curve"> per series. 0 or
 * -EIO/-ENOMEM. Deterministic: the same input gives the same bytes. */
int svg_curve_write(FILE *out, const struct svg_curve_series *s, size_t nseries,
		    const struct svg_curve_opts *opts);

#endif
