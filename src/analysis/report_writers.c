/* The table of writers: adding an output is one writer file and one row here. `fltrace report` picks
 * rows by --format name, `visualize` draws every picture row, `sweep` writes every sweep row. */
#include <stdio.h>
#include <string.h>

#include "report.h"

static const struct report_writer writers[] = {
	{ .name = "csv", .summary = "callsite CSV per process (the default); its columns: "
	  "\"Report CSV\" in src/analysis/README.md",
	  .stem = "report", .ext = "out", .write = report_write_csv,
	  .write_diff = report_diff_csv, .write_alloc = report_alloc_csv },
	{ .name = "eden", .summary = "the earlier fltrace's report CSV, column for column, in csv's "
	  "file (its scripts read it)", .stem = "report", .ext = "out",
	  .write = report_write_eden },
	{ .name = "top", .summary = "the biggest rows as a table on stdout (--top N sets N)",
	  .write = report_write_top, .write_diff = report_diff_top, .write_alloc = report_alloc_top },
	{ .name = "folded", .summary = "folded stacks on stdout (flamegraph.pl, inferno)",
	  .merge_always = true, .write = report_write_folded, .write_diff = report_diff_folded },
	{ .name = "pprof", .summary = "gzipped profile.proto per process (pprof, go tool pprof)",
	  .stem = "report", .ext = "pb.gz", .binary = true, .write = report_write_pprof },
	{ .name = "speedscope", .summary = "speedscope's JSON file format per process: faults and "
	  "service time", .stem = "report", .ext = "speedscope.json",
	  .write = report_write_speedscope },
	{ .name = "perf-script", .summary = "perf script's text per process, a sample per callsite "
	  "weighted by its pages (perf's period)", .stem = "report", .ext = "perf.txt",
	  .write = report_write_perf_script },
	{ .name = "raw", .summary = "one row per fault, per trace file (fltrace-data-faults-*)",
	  .stem = "faults", .ext = "out", .per_gen = true, .begin = report_raw_begin,
	  .fault = report_raw_fault, .end = report_raw_end },
	{ .name = "files", .summary = "file-backed faults per file offset range, in read order",
	  .stem = "files", .ext = "out", .begin = report_files_begin,
	  .fault = report_files_fault, .end = report_files_end },
	/* visualize, in the order they are written, listed in --help and shown in the index page */
	{ .cmd = WR_VISUALIZE, .name = "flamegraph", .stem = "flamegraph", .ext = "svg",
	  .summary = "all faults, by stack (click to zoom, Ctrl-F to search)",
	  .caption = "Flamegraph: all faults", .draw = picture_draw_flamegraph,
	  .draw_diff = picture_draw_diff },
	{ .cmd = WR_VISUALIZE, .name = "flamegraph-alloc", .stem = "flamegraph-alloc", .ext = "svg",
	  .summary = "first-touch (zero-page, \"allocation\") faults only",
	  .caption = "Flamegraph: first touches", .draw = picture_draw_alloc },
	{ .cmd = WR_VISUALIZE, .name = "flamegraph-allocsite", .stem = "flamegraph-allocsite",
	  .ext = "svg", .summary = "faults by the allocation site of the memory hit",
	  .caption = "Flamegraph: by allocation site", .draw = picture_draw_allocsite },
	{ .cmd = WR_VISUALIZE, .name = "timeline", .stem = "timeline", .ext = "svg",
	  .summary = "faulting address (or file offset) over time, fault rate",
	  .caption = "Faults over time", .draw = picture_draw_timeline },
	{ .cmd = WR_VISUALIZE, .name = "latency", .stem = "latency", .ext = "svg",
	  .summary = "fault service time by kind, log2 histograms",
	  .caption = "Fault service time", .draw = picture_draw_latency },
	{ .cmd = WR_VISUALIZE, .name = "index", .stem = "index", .ext = "html",
	  .summary = "the run's summary with all of the above: open this one",
	  .draw = picture_draw_index },
	/* sweep, in the order it writes them and --help lists them (a newline in a summary goes on
	 * under it) */
	{ .cmd = WR_SWEEP, .name = "sweep.csv", .file = "sweep.csv", .write_sweep = sweep_write_csv,
	  .summary = "one row per run: size, policy, faults by kind, re-fetches, wall time,\n"
		     "slowdown, peak resident and far memory, exit status, whether output matched" },
	{ .cmd = WR_SWEEP, .name = "curve.svg", .file = "curve.svg", .write_sweep = sweep_write_curve,
	  .summary = "re-fetches and slowdown against -L, one line per policy" },
	{ .cmd = WR_SWEEP, .name = "callsites.csv", .file = "callsites.csv",
	  .write_sweep = sweep_write_sites_csv,
	  .summary = "faults of every callsite (innermost frame's function and file:line) in\n"
		     "every run: which code becomes hot as memory shrinks" },
	{ .cmd = WR_SWEEP, .name = "sweep.txt", .file = "sweep.txt", .write_sweep = sweep_write_text,
	  .also_stdout = true,
	  .summary = "the runs and the top callsites as text tables (also printed on stdout)" },
};

const struct report_writer *report_writer_find(const char *name)
{
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (writers[i].cmd == WR_REPORT && !strcmp(writers[i].name, name))
			return &writers[i];
	return NULL;
}

const struct report_writer *report_writers(size_t *n)
{
	*n = sizeof(writers) / sizeof(writers[0]);
	return writers;
}

const char *report_writer_file(const struct report_writer *w, const char *suffix, char *buf,
			       size_t len)
{
	snprintf(buf, len, "fltrace-data-%s-%s.%s", w->stem, suffix, w->ext);
	return buf;
}

/* What a row is called in its command's --help: the --format name, the picture's file name, the
 * sweep's file. */
static void report_writer_usage_name(const struct report_writer *w, char *buf, size_t len)
{
	if (w->cmd == WR_VISUALIZE)
		report_writer_file(w, "<pid>", buf, len);
	else
		snprintf(buf, len, "%s", w->cmd == WR_SWEEP ? w->file : w->name);
}

void report_writers_usage(FILE *out, enum writer_cmd cmd, int width)
{
	char name[256];

	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++) {
		const struct report_writer *w = &writers[i];
		if (w->cmd != cmd || (cmd == WR_VISUALIZE && !w->draw))
			continue;
		report_writer_usage_name(w, name, sizeof(name));
		int len = (int)strlen(name);
		fprintf(out, "  %-*s", len + 2 > width ? len + 2 : width, name);
		const char *s = w->summary, *nl;
		while ((nl = strchr(s, '\n'))) {
			fprintf(out, "%.*s\n%*s", (int)(nl - s), s, 2 + width, "");
			s = nl + 1;
		}
		fprintf(out, "%s\n", s);
	}
}
