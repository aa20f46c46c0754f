/* The --by alloc writers of `fltrace report`: faults by the allocation site of the memory they hit
 * (allocsite_report.c loads them), as the CSV file or the table of the biggest sites. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "allocsite.h"
#include "report.h"

#define AS_TOP_CALLS 10 /* faulting lines kept per site in the CSV */

int report_alloc_csv(FILE *out, const struct report_alloc_view *v)
{
	const struct as_report *r = v->sites;

	fputs("alloc_site,kind,objects,bytes,count,percent,zero,refetch,other,code,functions,lib,"
	      "fault_code\n", out);
	for (size_t i = 0; i < r->nrows; i++) {
		const struct as_row *w = &r->rows[i];
		char calls[4096];
		size_t len = 0;
		calls[0] = '\0';
		for (size_t c = 0; c < w->ncalls && c < AS_TOP_CALLS && len < sizeof(calls) - 1; c++)
			len += (size_t)snprintf(calls + len, sizeof(calls) - len, "%s%" PRIu64 "@%s",
						c ? "<//>" : "", w->calls[c].count, w->calls[c].code);
		if (len >= sizeof(calls))
			calls[sizeof(calls) - 1] = '\0';
		csv_put(out, w->where);
		fprintf(out, ",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",", w->kind, w->objects, w->bytes, w->faults,
			r->total ? w->faults * 100 / r->total : 0, w->zero, w->refetch, w->other);
		csv_put(out, w->code);
		fputc(',', out);
		csv_put(out, w->funcs);
		fputc(',', out);
		csv_put(out, w->libs);
		fputc(',', out);
		csv_put(out, calls);
		fputc('\n', out);
	}
	return ferror(out) ? -EIO : 0;
}

static void alloc_put_size(FILE *out, uint64_t b)
{
	if (b >= 10ull << 20)
		fprintf(out, "%7.1fM", (double)b / (1 << 20));
	else if (b >= 10ull << 10)
		fprintf(out, "%7.1fK", (double)b / (1 << 10));
	else
		fprintf(out, "%7" PRIu64 "B", b);
}

int report_alloc_top(FILE *out, const struct report_alloc_view *v)
{
	const struct as_report *r = v->sites;

	fprintf(out, "faults by allocation site: %" PRIu64 " faults, %" PRIu64 " (%.1f%%) on recorded "
		"allocations (%" PRIu64 " big, %" PRIu64 " mappings, %" PRIu64 " small ones sampled, %"
		PRIu64 " first on their page)\n",
		r->total, r->attributed, r->total ? 100.0 * (double)r->attributed / (double)r->total : 0,
		r->big_allocs, r->map_allocs, r->sampled_allocs, r->page_allocs);
	fprintf(out, "%10s %6s %8s %8s  %-40s %s\n", "faults", "%", "objects", "bytes", "allocation site",
		"faulted at (faults)");
	for (size_t i = 0; i < r->nrows && (long)i < v->top; i++) {
		const struct as_row *w = &r->rows[i];
		char site[512];
		snprintf(site, sizeof(site), "%s%s%s%s", w->where, w->kind[0] ? " (" : "", w->kind,
			 w->kind[0] ? ")" : "");
		fprintf(out, "%10" PRIu64 " %5.1f%% %8" PRIu64 " ", w->faults,
			r->total ? 100.0 * (double)w->faults / (double)r->total : 0, w->objects);
		alloc_put_size(out, w->bytes);
		fprintf(out, "  %-40s", site);
		for (size_t c = 0; c < w->ncalls && c < 3; c++)
			fprintf(out, " %s (%" PRIu64 ")", w->calls[c].code, w->calls[c].count);
		fputc('\n', out);
	}
	return ferror(out) ? -EIO : 0;
}
