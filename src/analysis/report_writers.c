/* The table of writers: adding an output is one writer file and one row here. `fltrace report` picks
 * rows by --format name, `visualize` draws every picture row, `sweep` writes every sweep row. */
#include <string.h>

#include "report.h"

static const struct report_writer writers[] = {
	{ .name = "csv", .summary = "callsite CSV per process (the default), formats.md columns",
	  .stem = "report", .ext = "out", .write = report_write_csv,
	  .write_diff = report_diff_csv, .write_alloc = report_alloc_csv },
	{ .name = "top", .summary = "the biggest rows as a table on stdout (--top N sets N)",
	  .write = report_write_top, .write_diff = report_diff_top, .write_alloc = report_alloc_top },
	{ .name = "folded", .summary = "folded stacks on stdout (flamegraph.pl, inferno)",
	  .merge_always = true, .write = report_write_folded, .write_diff = report_diff_folded },
	{ .name = "pprof", .summary = "gzipped profile.proto per process (pprof, go tool pprof)",
	  .stem = "report", .ext = "pb.gz", .binary = true, .write = report_write_pprof },
	{ .name = "speedscope", .summary = "speedscope's JSON file format per process: faults and "
	  "service time", .stem = "report", .ext = "speedscope.json",
	  .write = report_write_speedscope },
	{ .name = "perf-script", .summary = "perf script's text per process, a sample per page "
	  "(stackcollapse-perf.pl, Firefox Profiler)", .stem = "report", .ext = "perf.txt",
	  .write = report_write_perf_script },
	{ .name = "raw", .summary = "one row per fault, per trace file (fltrace-data-faults-*)",
	  .stem = "faults", .ext = "out", .per_gen = true, .begin = report_raw_begin,
	  .fault = report_raw_fault, .end = report_raw_end },
	{ .name = "files", .summary = "file-backed faults per file offset range, in read order",
	  .stem = "files", .ext = "out", .begin = report_files_begin,
	  .fault = report_files_fault, .end = report_files_end },
	/* visualize, in the order they are written and shown in the index page */
	{ .cmd = WR_VISUALIZE, .name = "flamegraph", .summary = "all faults, by stack",
	  .stem = "flamegraph", .ext = "svg", .caption = "Flamegraph: all faults",
	  .draw = picture_draw_flamegraph, .draw_diff = picture_draw_diff },
	{ .cmd = WR_VISUALIZE, .name = "flamegraph-alloc", .summary = "first-touch faults only",
	  .stem = "flamegraph-alloc", .ext = "svg", .caption = "Flamegraph: first touches",
	  .draw = picture_draw_alloc },
	{ .cmd = WR_VISUALIZE, .name = "flamegraph-allocsite", .summary = "faults by the "
	  "allocation site of the memory hit", .stem = "flamegraph-allocsite", .ext = "svg",
	  .caption = "Flamegraph: by allocation site", .draw = picture_draw_allocsite },
	{ .cmd = WR_VISUALIZE, .name = "timeline", .summary = "faulting address over time, fault rate",
	  .stem = "timeline", .ext = "svg", .caption = "Faults over time", .draw = picture_draw_timeline },
	{ .cmd = WR_VISUALIZE, .name = "latency", .summary = "fault service time by kind",
	  .stem = "latency", .ext = "svg", .caption = "Fault service time", .draw = picture_draw_latency },
	{ .cmd = WR_VISUALIZE, .name = "index", .summary = "the run's summary with the pictures",
	  .stem = "index", .ext = "html", .draw = picture_draw_index },
	/* sweep, in the order its summary names them */
	{ .cmd = WR_SWEEP, .name = "sweep.csv", .summary = "one row per run",
	  .file = "sweep.csv", .write_sweep = sweep_write_csv },
	{ .cmd = WR_SWEEP, .name = "curve.svg", .summary = "the miss-ratio curve",
	  .file = "curve.svg", .write_sweep = sweep_write_curve },
	{ .cmd = WR_SWEEP, .name = "callsites.csv", .summary = "every callsite's faults in every run",
	  .file = "callsites.csv", .write_sweep = sweep_write_sites_csv },
	{ .cmd = WR_SWEEP, .name = "sweep.txt", .summary = "the runs and top callsites as text",
	  .file = "sweep.txt", .write_sweep = sweep_write_text },
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
