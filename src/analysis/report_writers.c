/* The table of report writers: adding an output format is one writer file and one row here;
 * `fltrace report` picks rows by --format name and knows nothing of the formats. */
#include <string.h>

#include "report.h"

static const struct report_writer writers[] = {
	{ .name = "csv", .summary = "callsite CSV per process (the default), formats.md columns",
	  .stem = "report", .ext = "out", .write = report_write_csv,
	  .write_diff = report_diff_csv },
	{ .name = "top", .summary = "the biggest rows as a table on stdout (--top N sets N)",
	  .write = report_write_top, .write_diff = report_diff_top },
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
};

const struct report_writer *report_writer_find(const char *name)
{
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (!strcmp(writers[i].name, name))
			return &writers[i];
	return NULL;
}

const struct report_writer *report_writers(size_t *n)
{
	*n = sizeof(writers) / sizeof(writers[0]);
	return writers;
}
