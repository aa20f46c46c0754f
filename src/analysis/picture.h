/* What `fltrace visualize` draws of one process (or of two runs, --diff): its faults loaded into
 * flamegraphs, a timeline, latency histograms and its top callsites, with what ran and how. */
#ifndef FLTRACE_PICTURE_H
#define FLTRACE_PICTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "callsites.h"
#include "svg_common.h"
#include "svg_index.h"

enum picture_names { PICTURE_NAMES_FUNC = 0, PICTURE_NAMES_LIB = 1 };

/* How to draw: the options of `fltrace visualize`. */
struct picture_opts {
	const char *indir;
	const char *title;    /* NULL: "<exe> (pid N)" */
	unsigned width;
	unsigned fold;        /* flamegraph levels in view (0: all) */
	double minwidth;
	bool inverted;
	bool has_pid;
	uint32_t pid;
	bool merge;           /* --merge: one set of pictures for every process */
	enum picture_names names;
	struct agg_filter filter;
	char kinds_text[96];  /* the --kind value, for subtitles */
	const char *diff_a, *diff_b; /* --diff A B */
	/* Called for a trace that loaded with a warning (it ended badly, say); may be NULL. */
	void (*note)(const char *path, const char *warning);
};

/* Everything drawn for one pid (all of its exec generations). */
struct picture_proc {
	const struct picture_opts *opts;
	uint32_t pid;             /* 0 with merged */
	bool merged;              /* every process of the directory: files "-all" */
	size_t nprocs;            /* processes loaded */
	struct svg_flame *all, *alloc;
	struct svg_timeline *tl;
	struct svg_latency *lat;
	struct callsites *sites;  /* by line, in columns by kind: the index's table */
	uint64_t faults, by_kind[SVG_KIND_NR], nostack;
	uint64_t t0;
	uint64_t page_size;
	/* From the latest generation's header: what ran and how. */
	char *exe;
	char **argv;
	size_t argc;
	struct ft_file_header hdr;
	uint32_t prefetch;      /* the trace's prefetcher (struct trace) */
	bool has_hdr;
	char execs[512];          /* argv[0] of earlier generations, "a -> b" */
	char warning[512];
	/* Frame-name scratch, reused across rows. */
	char *namebuf;
	size_t namelen;
	const char **frames;
	size_t nframes_cap;
	bool before;              /* --diff: rows of the earlier run */
};

/* The processes page, fltrace-data-index.html: the processes ranked by faults (sorts v), each
 * linked to its own index page, or, merged, to the one page of them all. 0 or -EIO. */
int picture_draw_processes(FILE *out, struct svg_index_proc *v, size_t n, bool merged);

/* What a picture writer gets (a row of the writers table, report.h). */
struct picture_view {
	const struct picture_proc *p;
	const struct picture_opts *o;
	char *err;                /* a message for a failure that is not -ENOMEM or -EIO */
	size_t errlen;
};

/* How a fault is coloured and told in the pictures: its kind (a trace's kind and origin) and its
 * access (the trace's flags). */
enum svg_kind picture_kind(uint8_t kind, uint8_t origin);
enum svg_access picture_access(uint16_t flags);

/* One pid's pictures, empty: 0 or -ENOMEM. */
int picture_proc_init(struct picture_proc *vp, const struct picture_opts *o, uint32_t pid);
/* The file suffix of its pictures: the pid, or "all" when merged. */
const char *picture_proc_suffix(const struct picture_proc *vp, char *buf, size_t len);
/* --diff: one flamegraph for both runs. */
int picture_diff_init(struct picture_proc *vp, const struct picture_opts *o);
void picture_proc_free(struct picture_proc *vp);
/* Loads every generation of one pid, entries [first, last) of the sorted trace list, and fills
 * its line of the processes page (if line: its cmdline malloc'd); err says what failed. */
int picture_proc_load(struct picture_proc *vp, const struct trace_list *l, size_t first, size_t last,
		      struct svg_index_proc *line, char *err, size_t errlen);
/* --diff: every process of dir (or --pid's) as the earlier run (before) or the later one. */
int picture_diff_load(struct picture_proc *vp, const char *dir, bool before, char *err, size_t errlen);

#endif
