/* Flamegraph renderer: merges weighted samples (frame names outer→inner) into a tree and writes
 * the interactive SVG readers know (tooltips, click to zoom, search). Knows nothing of traces. */
#ifndef FLTRACE_SVG_FLAME_H
#define FLTRACE_SVG_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "svg_common.h"

struct svg_flame;

struct svg_flame_opts {
	const char *title;    /* NULL: "Page faults" */
	const char *subtitle; /* optional second line (e.g. the command); NULL for none */
	const char *unit;     /* what a count counts, in tooltips: NULL means "faults" */
	unsigned width;       /* image width in px; 0 means 1200 */
	double minwidth;      /* frames narrower than this (px) are left out with their children; <0: 0.1 */
	bool inverted;        /* icicle: roots at the top, growing down */
	bool diff;            /* differential: colour by the change since svg_flame_add_before */
	unsigned fold;        /* levels in view (0: all): deeper frames are drawn but clipped, and
	                         clicking a frame brings its subtree into view, as a flame chart
	                         viewer scrolls; one single deep stack cannot make the picture tall */
};

/* Returns NULL when out of memory. */
struct svg_flame *svg_flame_new(void);
void svg_flame_free(struct svg_flame *fl);

/* Add count samples of one stack: frames[0] outermost .. frames[n-1] the leaf, which records
 * the access and kind. n == 0 is filed under "[no stack]". Names are copied. 0 or -ENOMEM. */
int svg_flame_add(struct svg_flame *fl, const char *const *frames, size_t n, uint64_t count,
		  enum svg_access acc, enum svg_kind kind);

/* Add count samples of one stack of an earlier run, for a differential graph (opts.diff): widths
 * stay those of svg_flame_add, colours show the change. 0 or -ENOMEM. */
int svg_flame_add_before(struct svg_flame *fl, const char *const *frames, size_t n,
			 uint64_t count);

/* Sum of all counts added so far. */
uint64_t svg_flame_total(const struct svg_flame *fl);

/* Write the SVG. Same samples and options (in any order of adding) give the same bytes.
 * 0, -ENOMEM, or -EIO when out reports an error. */
int svg_flame_write(const struct svg_flame *fl, FILE *out, const struct svg_flame_opts *opts);

#endif
