/* The writers of `fltrace report --diff A B`: the compared callsites as CSV, as a terminal
 * table, and as two-count folded stacks (flamegraph.pl draws those as a difference graph). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "report.h"

static int64_t diff_change(const struct diff_row *r)
{
	return (int64_t)r->b - (int64_t)r->a;
}

int report_diff_csv(FILE *o, const struct report_diff_view *v)
{
	struct diff_row **rows;
	size_t n = diff_rows(v->diff, &rows);

	fputs("callsite,faults_a,faults_b,change,change_percent,function,code,lib\n", o);
	for (size_t i = 0; i < n; i++) {
		const struct diff_row *r = rows[i];
		csv_put(o, r->callsite);
		fprintf(o, ",%" PRIu64 ",%" PRIu64 ",%+" PRId64 ",", r->a, r->b, diff_change(r));
		/* A callsite new in B has no percentage: left empty rather than infinite. */
		if (r->a)
			fprintf(o, "%+.1f", 100.0 * (double)diff_change(r) / (double)r->a);
		fputc(',', o);
		csv_put(o, r->func);
		fputc(',', o);
		csv_put(o, r->code);
		fputc(',', o);
		csv_put(o, r->lib);
		fputc('\n', o);
	}
	return ferror(o) ? -EIO : 0;
}

int report_diff_top(FILE *o, const struct report_diff_view *v)
{
	struct diff_row **rows;
	size_t n = diff_rows(v->diff, &rows), show = (size_t)v->top < n ? (size_t)v->top : n;
	uint64_t ta, tb;

	diff_totals(v->diff, &ta, &tb);
	fprintf(o, "A: %s: %" PRIu64 " faults\nB: %s: %" PRIu64 " faults (%+" PRId64 ")\n\n",
		v->a, ta, v->b, tb, (int64_t)tb - (int64_t)ta);
	fprintf(o, "%10s %10s %10s %8s  %-40s  %s\n", "CHANGE", "A", "B", "%", "FUNCTION",
		"LOCATION");
	for (size_t i = 0; i < show; i++) {
		const struct diff_row *r = rows[i];
		const char *code = r->code, *slash = strrchr(code, '/');
		char pct[32] = "new";

		if (r->a)
			snprintf(pct, sizeof(pct), "%+.0f", 100.0 * (double)diff_change(r) / (double)r->a);
		fprintf(o, "%+10" PRId64 " %10" PRIu64 " %10" PRIu64 " %8s  %-40.40s  %s\n",
			diff_change(r), r->a, r->b, pct, r->func, slash ? slash + 1 : code);
	}
	fputc('\n', o);
	return 0;
}

int report_diff_folded(FILE *o, const struct report_diff_view *v)
{
	struct diff_row **rows;
	size_t n = diff_rows(v->diff, &rows);

	for (size_t i = 0; i < n; i++)
		fprintf(o, "%s %" PRIu64 " %" PRIu64 "\n", rows[i]->callsite, rows[i]->a, rows[i]->b);
	return ferror(o) ? -EIO : 0;
}
