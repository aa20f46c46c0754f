/* The text writers of `fltrace report`: the callsite CSV and the earlier tool's layout of it, the
 * terminal table, folded stacks, the per-fault raw and file views (src/analysis/README.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* ------------------------------------------------------------------ CSV rows */

/* A growing text buffer for the joined fields of one row. */
struct text_buf {
	char *p;
	size_t len, cap;
};

static int text_buf_put(struct text_buf *b, const char *s)
{
	size_t l = strlen(s);

	if (b->len + l + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *n;
		while (cap < b->len + l + 1)
			cap *= 2;
		n = realloc(b->p, cap);
		if (!n)
			return -ENOMEM;
		b->p = n;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, l + 1);
	b->len += l;
	return 0;
}

static const char csv_header[] = "ips,flags,count,percent,op,type,lib,code,functions,kind,"
	"origin,syscall,file,offset,latency_total_us,latency_mean_us,latency_p99_us,nostack,latency_p50_us\n";

/* What a frame that is no frame of the program reads as in the lib / code / functions columns. */
static const char *const csv_unknown[] = { "??", "??:?", "??" };

/* One of the lib / code / functions columns: a field per frame joined by "<//>", after `lead`
 * placeholder frames. The lib and code lists end with one more placeholder, as the earlier tool's
 * did: ips ends with '|', and its scripts zip ips.split('|') with them. */
static int csv_put_frames(FILE *o, const struct agg_row *r, const struct symbolizer *s, int part,
			  unsigned lead, struct text_buf *b)
{
	uint32_t n = lead + r->depth + (part < 2);

	b->len = 0;
	if (b->p)
		b->p[0] = 0;
	for (uint32_t k = 0; k < n; k++) {
		const struct sym_frame *f = k >= lead && k - lead < r->depth && r->frames ?
			sym_frame(s, r->frames[k - lead]) : NULL;
		const char *v = !f ? csv_unknown[part] : part == 0 ? f->lib : part == 1 ? f->code : f->funcs;
		if ((k && text_buf_put(b, "<//>")) || text_buf_put(b, v))
			return -ENOMEM;
	}
	fputc(',', o);
	csv_put(o, b->p ? b->p : "");
	return 0;
}

static int csv_write_row(FILE *o, const struct agg_row *r, uint64_t total,
			 const struct symbolizer *s, struct text_buf *b)
{
	char num[64];
	uint64_t p50, p99;

	for (uint32_t k = 0; k < r->depth; k++)
		fprintf(o, "0x%" PRIx64 "|", r->ips[k]);
	fprintf(o, ",%u,%" PRIu64 ",%" PRIu64 ",%s,%s", r->flags, r->count,
		total ? r->count * 100 / total : 0, trace_op_name(r->flags),
		trace_type_name(r->flags));
	for (int p = 0; p < 3; p++)
		if (csv_put_frames(o, r, s, p, 0, b))
			return -ENOMEM;
	fprintf(o, ",%s,%s,", trace_kind_name(r->kind), trace_origin_name(r->origin));
	if (r->origin == FT_ORIGIN_SYSCALL) {
		const char *name = trace_syscall_name(r->syscall_nr);
		if (name)
			fputs(name, o);
		else
			fprintf(o, "%d", r->syscall_nr);
	}
	fputc(',', o);
	if (r->file)
		csv_put(o, r->file);
	fputc(',', o);
	if (r->file && r->off_hi)
		fprintf(o, "%" PRIu64 "-%" PRIu64, r->off_lo, r->off_hi);
	p50 = lat_percentile(r->lat, 0.50);
	p99 = lat_percentile(r->lat, 0.99);
	snprintf(num, sizeof(num), "%.1f", r->faults ? r->lat_total_ns / 1e3 / r->faults : 0.0);
	/* latency_p50_us last: columns are only ever added at the end (scripts read by position). */
	fprintf(o, ",%.1f,%s,%.1f,%" PRIu64 ",%.1f\n", r->lat_total_ns / 1e3, num, p99 / 1e3,
		r->nostack, p50 / 1e3);
	return 0;
}

int report_write_csv(FILE *o, const struct report_view *v)
{
	struct text_buf b = { 0 };
	struct agg_row **rows;
	size_t n = agg_rows(v->rows, &rows);
	int ret = 0;

	fputs(csv_header, o);
	for (size_t i = 0; i < n && !ret; i++)
		ret = csv_write_row(o, rows[i], agg_total(v->rows), v->sym, &b);
	free(b.p);
	return ret;
}

/* ------------------------------------------------------------------ the earlier tool's layout */

/* --format eden: the report of the earlier fltrace, column for column - one row per stack and flags,
 * count descending, percent truncated as pandas' astype(int) does, and its signal handler's two
 * innermost frames (which its scripts/prepare_flame_graph.py drops) as placeholders. */
#define EDEN_HANDLER_FRAMES 2
#define EDEN_HANDLER_IP "0x0"

static int eden_cmp_key(const void *a, const void *b)
{
	const struct agg_row *x = *(struct agg_row *const *)a, *y = *(struct agg_row *const *)b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	for (uint32_t k = 0; k < x->depth; k++)
		if (x->ips[k] != y->ips[k])
			return x->ips[k] < y->ips[k] ? -1 : 1;
	return (x->flags > y->flags) - (x->flags < y->flags);
}

/* Rows to write: the first agg_row of each (stack, flags) key, its count the key's sum. */
struct eden_row {
	struct agg_row *r;
	uint64_t count;
};

static int eden_cmp_count(const void *a, const void *b)
{
	const struct eden_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return eden_cmp_key(&x->r, &y->r);
}

int report_write_eden(FILE *o, const struct report_view *v)
{
	struct text_buf b = { 0 };
	struct agg_row **rows, **keyed;
	size_t n = agg_rows(v->rows, &rows), m = 0;
	uint64_t total = agg_total(v->rows);
	struct eden_row *e;
	int ret = 0;

	keyed = malloc((n ? n : 1) * sizeof(*keyed));
	e = malloc((n ? n : 1) * sizeof(*e));
	if (!keyed || !e) {
		free(keyed);
		free(e);
		return -ENOMEM;
	}
	memcpy(keyed, rows, n * sizeof(*keyed));
	qsort(keyed, n, sizeof(*keyed), eden_cmp_key);
	for (size_t i = 0; i < n; i++) {
		if (m && !eden_cmp_key(&e[m - 1].r, &keyed[i]))
			e[m - 1].count += keyed[i]->count;
		else
			e[m++] = (struct eden_row){ keyed[i], keyed[i]->count };
	}
	qsort(e, m, sizeof(*e), eden_cmp_count);
	fputs("ips,flags,count,percent,op,type,lib,code\n", o);
	for (size_t i = 0; i < m && !ret; i++) {
		const struct agg_row *r = e[i].r;
		for (int k = 0; k < EDEN_HANDLER_FRAMES; k++)
			fputs(EDEN_HANDLER_IP "|", o);
		for (uint32_t k = 0; k < r->depth; k++)
			fprintf(o, "0x%" PRIx64 "|", r->ips[k]);
		fprintf(o, ",%u,%" PRIu64 ",%d,%s,%s", r->flags, e[i].count,
			total ? (int)((double)e[i].count / (double)total * 100.0) : 0,
			trace_op_name(r->flags), trace_type_name(r->flags));
		for (int p = 0; p < 2 && !ret; p++)
			ret = csv_put_frames(o, r, v->sym, p, EDEN_HANDLER_FRAMES, &b);
		fputc('\n', o);
	}
	free(b.p);
	free(keyed);
	free(e);
	return ret;
}

/* ------------------------------------------------------------------ terminal table */

static const struct sym_frame *top_leaf(const struct agg_row *r, const struct symbolizer *s)
{
	return r->depth && r->frames ? sym_frame(s, r->frames[0]) : NULL;
}

static void top_put_cut(FILE *o, const char *s, int width)
{
	int len = (int)strlen(s);

	/* Keep the end of long names: the function and file name are at the end of a path. */
	if (len > width)
		fprintf(o, "..%-*s", width - 2, s + len - (width - 2));
	else
		fprintf(o, "%-*s", width, s);
}

int report_write_top(FILE *o, const struct report_view *v)
{
	struct agg_row **rows;
	size_t n = agg_rows(v->rows, &rows), show = (size_t)v->top < n ? (size_t)v->top : n;
	uint64_t total = agg_total(v->rows);
	/* Beside the leaf, the program's own line that led to it; the caller view's rows are
	 * that line already. */
	bool callers = v->by != AGG_BY_CALLER;
	char cbuf[4200];
	int wf = 8, wl = 8, wc = 6;

	for (size_t i = 0; i < show; i++) {
		const struct sym_frame *f = top_leaf(rows[i], v->sym);
		int lf = f ? (int)strlen(f->func) : 10, ll = f ? (int)strlen(f->code) : 2;
		int lc = (int)strlen(caller_name(agg_row_caller(rows[i], v->sym), cbuf, sizeof(cbuf)));
		wf = lf > wf ? lf : wf;
		wl = ll > wl ? ll : wl;
		wc = lc > wc ? lc : wc;
	}
	wf = wf > 40 ? 40 : wf;
	wl = wl > 60 ? 60 : wl;
	wc = wc > 50 ? 50 : wc;
	fprintf(o, "%s: %" PRIu64 " faults, %zu rows\n", v->title, total, n);
	fprintf(o, "%10s %4s  %-9s %-7s %-7s %8s %8s  ", "COUNT", "%", "OP", "KIND", "ORIGIN", "P50-US",
		"P99-US");
	top_put_cut(o, "FUNCTION", wf);
	fputs("  ", o);
	top_put_cut(o, "LOCATION", wl);
	if (callers) {
		fputs("  ", o);
		top_put_cut(o, "CALLER", wc);
	}
	fputs("  OBJECT\n", o);
	for (size_t i = 0; i < show; i++) {
		const struct agg_row *r = rows[i];
		const struct sym_frame *f = top_leaf(r, v->sym);
		const char *lib = f ? f->lib : "", *slash = strrchr(lib, '/');

		fprintf(o, "%10" PRIu64 " %4" PRIu64 "  %-9s %-7s %-7s %8.1f %8.1f  ", r->count,
			total ? r->count * 100 / total : 0, trace_op_name(r->flags),
			trace_kind_name(r->kind), trace_origin_name(r->origin),
			lat_percentile(r->lat, 0.50) / 1e3, lat_percentile(r->lat, 0.99) / 1e3);
		top_put_cut(o, f ? f->func : "[no stack]", wf);
		fputs("  ", o);
		top_put_cut(o, f ? f->code : "", wl);
		if (callers) {
			fputs("  ", o);
			top_put_cut(o, f ? caller_name(agg_row_caller(r, v->sym), cbuf, sizeof(cbuf)) :
				    "", wc);
		}
		fprintf(o, "  %s\n", slash ? slash + 1 : lib);
	}
	fputc('\n', o);
	return 0;
}

/* ------------------------------------------------------------------ folded */

int report_write_folded(FILE *o, const struct report_view *v)
{
	struct agg_row **rows;
	size_t n = agg_rows(v->rows, &rows);

	for (size_t i = 0; i < n; i++) {
		const struct agg_row *r = rows[i];
		if (!r->depth)
			fputs("[no stack]", o);
		for (uint32_t k = r->depth; k-- > 0;) {
			const struct sym_frame *f = r->frames ? sym_frame(v->sym, r->frames[k]) : NULL;
			if (f)
				folded_put_frame(o, f);
			else
				fprintf(o, "0x%" PRIx64, r->ips[k]);
			if (k)
				fputc(';', o);
		}
		fprintf(o, " %" PRIu64 "\n", r->count);
	}
	return 0;
}

/* ------------------------------------------------------------------ raw: one row per fault */

int report_raw_begin(FILE *o, void **state)
{
	*state = NULL;
	fputs("tstamp,ip,addr,pages,flags,tid,trace,kind,origin,syscall_nr,latency_ns,"
	      "stack_status\n", o);
	return 0;
}

int report_raw_fault(void *state, FILE *o, const struct trace *t, const struct ft_fault *f,
		     const struct ft_stack *st, const struct ft_region *rg)
{
	/* Columns and encodings of the earlier tool's faults file, then the new ones. */
	fprintf(o, "%" PRIu64 ".%06" PRIu64 ",%" PRIx64 ",%" PRIx64 ",%u,%u,%u,",
		f->time_ns / 1000000000, f->time_ns % 1000000000 / 1000, f->ip, f->addr,
		f->pages, f->flags, f->tid);
	for (uint32_t i = 0; st && i < st->depth; i++)
		fprintf(o, "0x%" PRIx64 "|", st->ips[i]);
	fprintf(o, ",%s,%s,%d,%u,%s\n", trace_kind_name(f->kind), trace_origin_name(f->origin),
		f->syscall_nr, f->latency_ns, trace_status_name(f->stack_status));
	return 0;
}

int report_raw_end(void *state, FILE *o, uint64_t start_ns)
{
	return 0;
}

/* ------------------------------------------------------------------ files: offsets read */

int report_files_begin(FILE *o, void **state)
{
	*state = fileview_new();
	return *state ? 0 : -ENOMEM;
}

int report_files_fault(void *state, FILE *o, const struct trace *t, const struct ft_fault *f,
		       const struct ft_stack *st, const struct ft_region *rg)
{
	if (!rg || f->addr < rg->start)
		return 0;
	return fileview_add(state, rg->path, rg->offset + (f->addr - rg->start), f->pages,
			    t->hdr->page_size, f->time_ns);
}

int report_files_end(void *state, FILE *o, uint64_t start_ns)
{
	int ret = o ? fileview_write_csv(state, o, start_ns) : 0;

	fileview_free(state);
	return ret;
}
