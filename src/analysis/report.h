/* The writers: every output of `fltrace report` (CSV, top, folded, raw, files, the exports to other
 * profilers), `fltrace visualize` (SVGs, HTML) and `fltrace sweep` is a row of one table. */
#ifndef FLTRACE_REPORT_H
#define FLTRACE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"

struct as_report;     /* allocsite.h */
struct picture_view;  /* picture.h */
struct sweep_view;    /* sweep.h */

/* Which command writes a row. */
enum writer_cmd { WR_REPORT = 0, WR_VISUALIZE, WR_SWEEP };

/* What a grouped-rows writer gets: one process (or all of them merged), grouped by the view the
 * user chose and symbolized. */
struct report_view {
	struct agg_table *rows;
	const struct symbolizer *sym;
	const char *title;    /* "pid 1000 (/usr/bin/sort)" or "all processes" */
	const char *exe;      /* the command of the first process ("" if unknown) */
	uint32_t pid;         /* the first process */
	uint64_t page_size;
	uint64_t start_ns;    /* the trace's start (realtime), for writers that print times */
	long top;             /* rows shown by the top writer */
	enum agg_by by;       /* what a row stands for */
};

/* What a --diff writer gets: the callsites of two runs. */
struct report_diff_view {
	struct diff_table *diff;
	const char *a, *b;    /* the two trace directories */
	long top;
};

/* What a --by alloc writer gets: the faults of a recording by the allocation site they hit. */
struct report_alloc_view {
	const struct as_report *sites;
	long top;             /* rows shown by the top writer */
};

struct report_writer {
	enum writer_cmd cmd;
	const char *name;     /* the --format value (report), the picture (visualize) */
	const char *summary;  /* one line of --help */
	/* Where it goes: a file per process next to the traces, "fltrace-data-<stem>-<pid>.<ext>"
	 * (or "-all" with --merge), or standard output when ext is NULL. */
	const char *stem, *ext;
	bool merge_always;    /* one output for all processes even without --merge (folded) */
	bool binary;          /* refuses a terminal */
	/* Grouped-rows writers: called once per output. 0, -ENOMEM or -EIO. */
	int (*write)(FILE *out, const struct report_view *v);
	/* --diff A B: the compared callsites (NULL: the format has no diff form). */
	int (*write_diff)(FILE *out, const struct report_diff_view *v);
	/* --by alloc: the faults by allocation site, "fltrace-data-<stem>-alloc-<pid|all>.<ext>" or
	 * standard output as above (NULL: the format has no such form). 0 or -EIO. */
	int (*write_alloc)(FILE *out, const struct report_alloc_view *v);
	/* Per-fault writers see every kept fault of one trace as it is read (one file per trace
	 * generation when per_gen): begin, fault..., end. end also frees the state. */
	bool per_gen;
	int (*begin)(FILE *out, void **state);
	int (*fault)(void *state, FILE *out, const struct trace *t, const struct ft_fault *f,
		     const struct ft_stack *st, const struct ft_region *rg);
	int (*end)(void *state, FILE *out, uint64_t start_ns);
	/* visualize: one picture per process, "fltrace-data-<stem>-<pid>.<ext>", embedded in the
	 * index page under `caption` (NULL: not embedded). 0, -ENOMEM, -EIO, or another -errno
	 * with the view's err set. */
	const char *caption;
	int (*draw)(FILE *out, const struct picture_view *v);
	/* visualize --diff A B: one picture, "fltrace-data-<stem>-diff.<ext>". */
	int (*draw_diff)(FILE *out, const struct picture_view *v);
	/* sweep: one file, <dir>/<file>, also written on standard output when also_stdout. 0 or
	 * -errno. */
	const char *file;
	bool also_stdout;
	int (*write_sweep)(FILE *out, const struct sweep_view *v);
};

/* The report writer called name, or NULL. */
const struct report_writer *report_writer_find(const char *name);
/* The rows of one command for its --help, one a line: "  <name><summary>", the summary at column
 * 2 + width (a summary's own newlines continue there). */
void report_writers_usage(FILE *out, enum writer_cmd cmd, int width);
/* A row's file name: "fltrace-data-<stem>-<suffix>.<ext>" (suffix: a pid, "<pid>-<gen>", "all",
 * "diff"...); returns buf. */
const char *report_writer_file(const struct report_writer *w, const char *suffix, char *buf,
			       size_t len);
/* All writers, of every command (each command keeps the rows of its own `cmd`): n rows. */
const struct report_writer *report_writers(size_t *n);

/* The writers themselves, one file each (report_text.c, report_pprof.c, ...). */
int report_write_csv(FILE *out, const struct report_view *v);
int report_write_top(FILE *out, const struct report_view *v);
int report_write_eden(FILE *out, const struct report_view *v);
int report_write_folded(FILE *out, const struct report_view *v);
int report_write_pprof(FILE *out, const struct report_view *v);
int report_write_speedscope(FILE *out, const struct report_view *v);
int report_write_perf_script(FILE *out, const struct report_view *v);
int report_diff_csv(FILE *out, const struct report_diff_view *v);
int report_diff_top(FILE *out, const struct report_diff_view *v);
int report_diff_folded(FILE *out, const struct report_diff_view *v);
int report_alloc_csv(FILE *out, const struct report_alloc_view *v); /* report_alloc.c */
int report_alloc_top(FILE *out, const struct report_alloc_view *v);
int report_raw_begin(FILE *out, void **state);
int report_raw_fault(void *state, FILE *out, const struct trace *t, const struct ft_fault *f,
		     const struct ft_stack *st, const struct ft_region *rg);
int report_raw_end(void *state, FILE *out, uint64_t start_ns);
int report_files_begin(FILE *out, void **state);
int report_files_fault(void *state, FILE *out, const struct trace *t, const struct ft_fault *f,
		       const struct ft_stack *st, const struct ft_region *rg);
int report_files_end(void *state, FILE *out, uint64_t start_ns);
int picture_draw_flamegraph(FILE *out, const struct picture_view *v); /* picture_writers.c */
int picture_draw_alloc(FILE *out, const struct picture_view *v);
int picture_draw_allocsite(FILE *out, const struct picture_view *v);
int picture_draw_timeline(FILE *out, const struct picture_view *v);
int picture_draw_latency(FILE *out, const struct picture_view *v);
int picture_draw_index(FILE *out, const struct picture_view *v);
int picture_draw_diff(FILE *out, const struct picture_view *v);
int sweep_write_csv(FILE *out, const struct sweep_view *v); /* sweep_writers.c */
int sweep_write_curve(FILE *out, const struct sweep_view *v);
int sweep_write_sites_csv(FILE *out, const struct sweep_view *v);
int sweep_write_text(FILE *out, const struct sweep_view *v);

#endif
