/* Index page writer: the run summary as HTML tables and each picture in an <object>, which (unlike
 * <img>) lets the flamegraph's zoom and search script run inside the page. */
#include <errno.h>
#include <string.h>

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
	fputs("<h2>Last stats line</h2>\n<table class=\"stats\">\n", out);
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
	fputs("</table>\n", out);
}

int svg_index_write(FILE *out, const struct svg_index_info *in)
{
	char buf[128];

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", out);
	fprintf(out, "<title>fltrace: process %u</title>\n", in->pid);
	fputs("<style>\n"
	      "body { font-family: Verdana, sans-serif; font-size: 13px; margin: 16px; background: #f8f8f4; }\n"
	      "table { border-collapse: collapse; margin-bottom: 12px; }\n"
	      "th, td { text-align: left; padding: 2px 10px; border-bottom: 1px solid #ddd; }\n"
	      "th { font-weight: normal; color: #555; }\n"
	      "code { background: #eee; padding: 1px 4px; }\n"
	      "object { display: block; max-width: 100%; border: 1px solid #ccc; margin-bottom: 6px; }\n"
	      ".warn { color: #a00; }\n"
	      ".nav a { margin-right: 14px; }\n"
	      "</style>\n</head>\n<body>\n", out);
	fprintf(out, "<h1>fltrace: process %u</h1>\n<p>Command: <code>", in->pid);
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
	if (in->nimages) {
		fputs("<p class=\"nav\">", out);
		for (size_t i = 0; i < in->nimages; i++) {
			fprintf(out, "<a href=\"#img%zu\">", i);
			svg_put_escaped(out, in->images[i].caption);
			fputs("</a>", out);
		}
		fputs("</p>\n", out);
	}

	fputs("<h2>Run</h2>\n<table>\n", out);
	snprintf(buf, sizeof(buf), "%u", in->pid);
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

	for (size_t i = 0; i < in->nimages; i++) {
		fprintf(out, "<h2 id=\"img%zu\">", i);
		svg_put_escaped(out, in->images[i].caption);
		fputs(" <small>(<a href=\"", out);
		svg_put_escaped(out, in->images[i].file);
		fputs("\">open alone</a>)</small></h2>\n<object type=\"image/svg+xml\" data=\"", out);
		svg_put_escaped(out, in->images[i].file);
		fputs("\"></object>\n", out);
	}
	fputs("</body>\n</html>\n", out);
	return fflush(out) || ferror(out) ? -EIO : 0;
}
