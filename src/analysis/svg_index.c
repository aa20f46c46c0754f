/* Index page writer: the answer first (a paragraph, the top callsites), then each picture in an
 * <object>, which (unlike <img>) lets the flamegraph's zoom and search script run in the page. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <fltrace/statsline.h>

#include "svg_index.h"

static void row(FILE *out, const char *name, const char *value)
{
	fputs("<tr><th>", out);
	svg_put_escaped(out, name);
	fputs("</th><td>", out);
	svg_put_escaped(out, value);
	fputs("</td></tr>\n", out);
}

static void row_u64(FILE *out, const char *name, uint64_t v, uint64_t total)
{
	char buf[64];
	if (total)
		snprintf(buf, sizeof(buf), "%llu (%.2f%%)", (unsigned long long)v,
			 100.0 * (double)v / (double)total);
	else
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	row(out, name, buf);
}

/* The stats line is "<unix time>,name:value,name:value,...": show its pairs as a table. */
static void stats_table(FILE *out, const char *line)
{
	const char *p = strchr(line, ',');
	fputs("<details>\n<summary>Last stats line of the process (every counter)</summary>\n"
	      "<table class=\"stats\">\n", out);
	while (p) {
		const char *field = p + 1, *next = strchr(field, ','), *end = next ? next : field + strlen(field);
		const char *colon = memchr(field, ':', (size_t)(end - field));
		while (end > field && (end[-1] == '\n' || end[-1] == '\r'))
			end--;
		if (colon) {
			fputs("<tr><th>", out);
			svg_put_escaped_n(out, field, (size_t)(colon - field));
			fputs("</th><td>", out);
			svg_put_escaped_n(out, colon + 1, (size_t)(end - colon - 1));
			fputs("</td></tr>\n", out);
		}
		p = next;
	}
	fputs("</table>\n</details>\n", out);
}

/* A field of the stats line; false if there is none. */
static bool stat_get(const struct svg_index_info *in, const char *name, uint64_t *v)
{
	return in->stats_line && statsline_get(in->stats_line, strlen(in->stats_line), name, v) == 0;
}

static void put_bytes(FILE *out, uint64_t bytes)
{
	char buf[32];

	svg_fmt_bytes(buf, sizeof(buf), (double)bytes);
	fputs(buf, out);
}

/* "1220 first touches (56.5%)" for each kind with faults. */
static void summary_kinds(FILE *out, const struct svg_index_info *in)
{
	static const char *const what[SVG_KIND_NR] = {
		[SVG_KIND_ZERO] = "zero-filled first touches",
		[SVG_KIND_REFETCH] = "re-fetches of evicted pages",
		[SVG_KIND_FILE] = "file pages read",
		[SVG_KIND_WP] = "write-protect faults",
		[SVG_KIND_SYSCALL] = "inside system calls",
		[SVG_KIND_PREFETCH] = "hidden by the prefetcher (first touches of prefetched pages)",
	};
	const char *sep = ": ";

	fprintf(out, "<b>%" PRIu64 " fault%s</b>", in->faults, in->faults == 1 ? "" : "s");
	for (int k = 0; k < SVG_KIND_NR; k++) {
		if (!in->by_kind[k])
			continue;
		fprintf(out, "%s%" PRIu64 " %s (%.1f%%)", sep, in->by_kind[k], what[k],
			100.0 * (double)in->by_kind[k] / (double)in->faults);
		sep = ", ";
	}
	if (in->nostack)
		fprintf(out, "; %" PRIu64 " without a stack", in->nostack);
	fputs(". ", out);
}

static void summary_memory(FILE *out, const struct svg_index_info *in)
{
	uint64_t res, far;

	if (in->has_slowdown) {
		fprintf(out, "It ran <b>%.2f&times;</b> as long as ", in->slowdown);
		svg_put_escaped(out, in->slowdown_of ? in->slowdown_of : "its baseline");
		fputs(". ", out);
	} else {
		fputs("Slowdown: not known from one run ('fltrace sweep' measures it against a run with "
		      "ample memory). ", out);
	}
	if (!stat_get(in, "resident_peak_bytes", &res) || !stat_get(in, "far_peak_bytes", &far)) {
		fputs(in->merged ? "Peak memory: on each process's own page. " :
		      in->stats_line ? "Peak memory: not in the stats file. " :
		      "Peak memory: unknown (no stats file). ", out);
		return;
	}
	fputs("Peak resident tracked memory <b>", out);
	put_bytes(out, res);
	fputs("</b>", out);
	if (in->localmem_bytes) {
		fputs(" (local memory -L ", out);
		put_bytes(out, in->localmem_bytes);
		fputc(')', out);
	}
	fputs(", peak far memory <b>", out);
	put_bytes(out, far);
	fputs("</b>", out);
	if (in->has_peak) {
		fputs("; peak RSS of the process ", out);
		put_bytes(out, in->peak_bytes);
	}
	fputs(". ", out);
}

/* What fltrace did not see: the untracked_* counters, those that are not zero. */
static void summary_untracked(FILE *out, const struct svg_index_info *in)
{
	static const struct {
		const char *bytes, *maps, *what;
	} parts[] = {
		{ "untracked_rss_bytes", NULL, "resident memory outside tracked regions (stacks, static "
		  "data, code, shared mappings)" },
		{ "untracked_map_bytes", "untracked_maps", "mapped by the program but not tracked" },
		{ "untracked_shared_file_bytes", "untracked_shared_file_maps", "of shared file mappings" },
		{ "untracked_loader_file_bytes", "untracked_loader_file_maps", "of code and data the "
		  "loader mapped (traced with record --files=all)" },
	};
	const char *sep = "Not tracked: ";
	uint64_t bytes, maps;

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if (!stat_get(in, parts[i].bytes, &bytes) || !bytes)
			continue;
		fputs(sep, out);
		fputs(i ? "" : "up to ", out);
		put_bytes(out, bytes);
		if (parts[i].maps && stat_get(in, parts[i].maps, &maps))
			fprintf(out, " in %" PRIu64 " mapping%s", maps, maps == 1 ? "" : "s");
		fprintf(out, " %s (<code>%s</code>)", parts[i].what, parts[i].bytes);
		sep = "; ";
	}
	if (strcmp(sep, "; ") == 0)
		fputs(".", out);
	else if (stat_get(in, "untracked_rss_bytes", &bytes))
		fputs("Nothing of the process's memory went untracked.", out);
}

static void summary(FILE *out, const struct svg_index_info *in)
{
	fputs("<p class=\"summary\">", out);
	summary_kinds(out, in);
	summary_memory(out, in);
	summary_untracked(out, in);
	fputs("</p>\n", out);
}

static void site_cell_u64(FILE *out, uint64_t v)
{
	if (v)
		fprintf(out, "<td class=\"n\">%" PRIu64 "</td>", v);
	else
		fputs("<td class=\"n z\">0</td>", out);
}

/* A cell of code: "file:line" shown by the file's name, the whole text in the tooltip. */
static void site_cell_code(FILE *out, const char *code, size_t len)
{
	const char *base = code;

	for (const char *p = code; p < code + len; p++)
		if (*p == '/')
			base = p + 1;
	fputs("<td title=\"", out);
	svg_put_escaped(out, code);
	fputs("\">", out);
	if (len) {
		fputs("<code>", out);
		svg_put_escaped_n(out, base, len - (size_t)(base - code));
		fputs("</code>", out);
	}
	fputs("</td>", out);
}

/* The top callsites with their faults by kind. */
static void sites_table(FILE *out, const struct svg_index_info *in)
{
	if (!in->nsites)
		return;
	fprintf(out, "<h2>Top callsites</h2>\n<table class=\"sites\">\n<tr><th>function</th>"
		     "<th>location</th><th title=\"the program's own frame that led there: the "
		     "innermost outside libc, libstdc++, libgcc, ld.so and fltrace\">called from</th>"
		     "<th>object</th><th class=\"n\">faults</th><th class=\"n\">%%</th>");
	for (int k = 0; k < SVG_KIND_NR; k++)
		fprintf(out, "<th class=\"n\">%s</th>", svg_kind_name(k));
	fputs("</tr>\n", out);
	for (size_t i = 0; i < in->nsites; i++) {
		const struct callsite *c = &in->sites[i];
		fputs("<tr><td>", out);
		svg_put_escaped(out, c->func);
		/* The innermost line, by file name: one table row a line, however long the paths;
		 * the path and the lines it is inlined at in the tooltip. */
		fputs("</td>", out);
		site_cell_code(out, c->code, (size_t)callsites_inner_len(c->code));
		site_cell_code(out, c->caller ? c->caller : "", c->caller ? strlen(c->caller) : 0);
		fputs("<td>", out);
		svg_put_escaped(out, c->lib);
		fputs("</td>", out);
		site_cell_u64(out, c->total);
		fprintf(out, "<td class=\"n\">%.1f</td>",
			in->faults ? 100.0 * (double)c->total / (double)in->faults : 0.0);
		for (int k = 0; k < SVG_KIND_NR; k++)
			site_cell_u64(out, c->pages[k]);
		fputs("</tr>\n", out);
	}
	fputs("</table>\n", out);
}

static const char index_style[] =
	"<style>\n"
	"body { font-family: Verdana, sans-serif; font-size: 13px; margin: 16px; background: #f8f8f4; }\n"
	"table { border-collapse: collapse; margin-bottom: 12px; }\n"
	"th, td { text-align: left; padding: 2px 10px; border-bottom: 1px solid #ddd; }\n"
	"th { font-weight: normal; color: #555; }\n"
	".n { text-align: right; font-variant-numeric: tabular-nums; }\n"
	".z { color: #bbb; }\n"
	".summary { font-size: 14px; line-height: 1.5; max-width: 1100px; }\n"
	".sites td:nth-child(2), .sites td:nth-child(3) { max-width: 380px; overflow-wrap: anywhere; }\n"
	"code { background: #eee; padding: 1px 4px; }\n"
	"object { display: block; max-width: 100%; border: 1px solid #ccc; margin-bottom: 6px; }\n"
	"summary { cursor: pointer; color: #555; margin: 8px 0; }\n"
	".warn { color: #a00; }\n"
	".nav a { margin-right: 14px; }\n"
	"</style>\n";

/* "process 42" or "3 processes" */
static void index_who(FILE *out, const struct svg_index_info *in)
{
	if (in->merged)
		fprintf(out, "%zu processes", in->merged);
	else
		fprintf(out, "process %u", in->pid);
}

int svg_index_write(FILE *out, const struct svg_index_info *in)
{
	char buf[128];

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>fltrace: ", out);
	index_who(out, in);
	fputs("</title>\n", out);
	fputs(index_style, out);
	fputs("</head>\n<body>\n<h1>fltrace: ", out);
	index_who(out, in);
	fputs(in->merged ? "</h1>\n<p>Started by: <code>" : "</h1>\n<p>Command: <code>", out);
	for (size_t i = 0; i < in->argc; i++) {
		if (i)
			fputc(' ', out);
		svg_put_escaped(out, in->argv[i] ? in->argv[i] : "");
	}
	fputs("</code></p>\n", out);
	if (in->warning && *in->warning) {
		fputs("<p class=\"warn\">", out);
		svg_put_escaped(out, in->warning);
		fputs("</p>\n", out);
	}
	summary(out, in);
	sites_table(out, in);

	if (in->nimages) {
		fputs("<p class=\"nav\">", out);
		for (size_t i = 0; i < in->nimages; i++) {
			fprintf(out, "<a href=\"#img%zu\">", i);
			svg_put_escaped(out, in->images[i].caption);
			fputs("</a>", out);
		}
		fputs("</p>\n", out);
	}
	for (size_t i = 0; i < in->nimages; i++) {
		fprintf(out, "<h2 id=\"img%zu\">", i);
		svg_put_escaped(out, in->images[i].caption);
		fputs(" <small>(<a href=\"", out);
		svg_put_escaped(out, in->images[i].file);
		fputs("\">open alone</a>)</small></h2>\n<object type=\"image/svg+xml\" data=\"", out);
		svg_put_escaped(out, in->images[i].file);
		fputs("\"></object>\n", out);
	}

	fputs("<h2>Run</h2>\n<table>\n", out);
	snprintf(buf, sizeof(buf), "%u", in->pid);
	if (!in->merged)
		row(out, "pid", buf);
	row(out, "executable", in->exe ? in->exe : "");
	for (size_t i = 0; i < in->noptions; i++)
		row(out, in->options[i].name, in->options[i].value ? in->options[i].value : "");
	if (in->has_peak) {
		svg_fmt_bytes(buf, sizeof(buf), (double)in->peak_bytes);
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), " (%llu bytes)",
			 (unsigned long long)in->peak_bytes);
		row(out, "peak memory (vm_hwm)", buf);
	} else {
		row(out, "peak memory (vm_hwm)", "unknown: no stats file");
	}
	fputs("</table>\n<h2>Faults</h2>\n<table>\n", out);
	row_u64(out, "all", in->faults, 0);
	for (int k = 0; k < SVG_KIND_NR; k++)
		row_u64(out, svg_kind_name(k), in->by_kind[k], in->faults);
	row_u64(out, "without a stack", in->nostack, in->faults);
	fputs("</table>\n", out);
	if (in->stats_line)
		stats_table(out, in->stats_line);
	fputs("</body>\n</html>\n", out);
	return fflush(out) || ferror(out) ? -EIO : 0;
}

int svg_index_write_processes(FILE *out, const struct svg_index_proc *v, size_t n,
			      const char *merged_page)
{
	uint64_t all = 0;

	for (size_t i = 0; i < n; i++)
		all += v[i].faults;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<title>fltrace: the processes of a recording</title>\n", out);
	fputs(index_style, out);
	fprintf(out, "</head>\n<body>\n<h1>fltrace: %zu process%s, %" PRIu64 " faults</h1>\n", n,
		n == 1 ? "" : "es", all);
	if (merged_page) {
		fputs("<p class=\"summary\"><a href=\"", out);
		svg_put_escaped(out, merged_page);
		fputs("\">All processes together</a>: one flamegraph, timeline and latency picture for "
		      "the whole tree.</p>\n", out);
	}
	fputs("<h2>Processes by faults</h2>\n<table class=\"procs\">\n<tr><th class=\"n\">faults</th>"
	      "<th class=\"n\">%</th><th class=\"n\">pid</th><th class=\"n\">parent</th>"
	      "<th>command</th>", out);
	for (int k = 0; k < SVG_KIND_NR; k++)
		fprintf(out, "<th class=\"n\">%s</th>", svg_kind_name(k));
	fputs("</tr>\n", out);
	for (size_t i = 0; i < n; i++) {
		const struct svg_index_proc *p = &v[i];
		fputs("<tr>", out);
		site_cell_u64(out, p->faults);
		fprintf(out, "<td class=\"n\">%.1f</td><td class=\"n\">%u</td><td class=\"n\">%u</td><td>",
			all ? 100.0 * (double)p->faults / (double)all : 0.0, p->pid, p->ppid);
		if (p->page) {
			fputs("<a href=\"", out);
			svg_put_escaped(out, p->page);
			fputs("\">", out);
		}
		fputs("<code>", out);
		svg_put_escaped(out, p->cmdline);
		fputs(p->page ? "</code></a></td>" : "</code></td>", out);
		for (int k = 0; k < SVG_KIND_NR; k++)
			site_cell_u64(out, p->by_kind[k]);
		fputs("</tr>\n", out);
	}
	fputs("</table>\n</body>\n</html>\n", out);
	return fflush(out) || ferror(out) ? -EIO : 0;
}
