/* Two runs compared: the faults of each callsite (a symbolized stack, line or function, so that
 * different load addresses and processes match) in run A and run B, loaded and sorted by change. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

struct diff_table {
	struct intern keys;          /* callsite text -> row index */
	struct diff_row *rows;
	size_t n, cap;
	struct diff_row **sorted;
};

struct diff_table *diff_new(void)
{
	return calloc(1, sizeof(struct diff_table));
}

void diff_free(struct diff_table *d)
{
	if (!d)
		return;
	intern_free(&d->keys);
	free(d->rows);
	free(d->sorted);
	free(d);
}

/* The callsite of a row as text: the folded stack (root first) for the stack view, the leaf's
 * frame for the line view, the leaf's function and object for the function view. */
static void diff_callsite(FILE *m, const struct agg_row *r, const struct symbolizer *s,
			  enum agg_by by)
{
	if (!r->depth) {
		fputs("[no stack]", m);
		return;
	}
	for (uint32_t k = by == AGG_BY_STACK ? r->depth : 1; k-- > 0;) {
		const struct sym_frame *f = r->frames ? sym_frame(s, r->frames[k]) : NULL;
		if (!f) {
			fprintf(m, "0x%" PRIx64, r->ips[k]);
		} else if (by == AGG_BY_FUNCTION) {
			const char *lb = strrchr(f->lib, '/');
			fprintf(m, "%s (%s)", f->locs[0].func, lb ? lb + 1 : f->lib);
		} else {
			folded_put_frame(m, f);
		}
		if (k)
			fputc(';', m);
	}
}

int diff_add(struct diff_table *d, int side, struct agg_table *t, const struct symbolizer *s,
	     enum agg_by by)
{
	struct agg_row **rows;
	size_t n = agg_rows(t, &rows);
	char *key = NULL;
	size_t len = 0;
	int ret = 0;

	free(d->sorted);
	d->sorted = NULL;
	for (size_t i = 0; i < n && !ret; i++) {
		const struct sym_frame *leaf = rows[i]->depth && rows[i]->frames ?
			sym_frame(s, rows[i]->frames[0]) : NULL;
		FILE *m = open_memstream(&key, &len);
		bool fresh;
		int64_t id;

		if (!m)
			return -ENOMEM;
		diff_callsite(m, rows[i], s, by);
		if (fclose(m)) {
			free(key);
			return -ENOMEM;
		}
		id = intern_id(&d->keys, key, &fresh);
		free(key);
		key = NULL;
		if (id < 0)
			return (int)id;
		if (fresh) {
			if (d->n == d->cap) {
				size_t cap = d->cap ? d->cap * 2 : 256;
				struct diff_row *v = realloc(d->rows, cap * sizeof(*v));
				if (!v)
					return -ENOMEM;
				d->rows = v;
				d->cap = cap;
			}
			d->rows[d->n++] = (struct diff_row){
				.func = leaf ? leaf->func : "[no stack]",
				.code = leaf ? leaf->code : "",
				.lib = leaf ? leaf->lib : "",
			};
		}
		if (side)
			d->rows[id].b += rows[i]->count;
		else
			d->rows[id].a += rows[i]->count;
	}
	return ret;
}

static int diff_cmp(const void *x, const void *y, void *arg)
{
	const struct diff_row *a = *(const struct diff_row *const *)x;
	const struct diff_row *b = *(const struct diff_row *const *)y;
	const struct diff_table *d = arg;
	uint64_t ca = a->a > a->b ? a->a - a->b : a->b - a->a;
	uint64_t cb = b->a > b->b ? b->a - b->b : b->b - b->a;

	if (ca != cb)
		return ca > cb ? -1 : 1;
	if (a->b != b->b)
		return a->b > b->b ? -1 : 1;
	return strcmp(d->keys.strs[a - d->rows], d->keys.strs[b - d->rows]);
}

size_t diff_rows(struct diff_table *d, struct diff_row ***out)
{
	if (!d->sorted && d->n) {
		d->sorted = malloc(d->n * sizeof(*d->sorted));
		if (!d->sorted) {
			*out = NULL;
			return 0;
		}
		for (size_t i = 0; i < d->n; i++) {
			d->rows[i].callsite = d->keys.strs[i];
			d->sorted[i] = &d->rows[i];
		}
		qsort_r(d->sorted, d->n, sizeof(*d->sorted), diff_cmp, d);
	}
	*out = d->sorted;
	return d->n;
}

void diff_totals(const struct diff_table *d, uint64_t *a, uint64_t *b)
{
	*a = *b = 0;
	for (size_t i = 0; i < d->n; i++) {
		*a += d->rows[i].a;
		*b += d->rows[i].b;
	}
}

/* ---- two recordings read for report --diff ---- */

/* The processes of one recording (filtered as asked), their frames registered with sym. */
static int diff_load_dir(const char *dir, const struct diff_load_opts *o, struct symbolizer *sym,
			 struct an_process ***procs, size_t *n, char *err, size_t errlen)
{
	struct trace_list list = { 0 };
	int ret = trace_list_dir(dir, &list);

	if (ret) {
		snprintf(err, errlen, "cannot read %s: %s; give two directories of recordings to "
			 "--diff", dir, strerror(-ret));
		return ret;
	}
	*procs = calloc(list.n + 1, sizeof(**procs));
	if (!*procs) {
		trace_list_free(&list);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < list.n && !ret; i++) {
		if (o->pid >= 0 && list.v[i].pid != (uint32_t)o->pid)
			continue;
		if (o->progress)
			o->progress(o->arg, list.v[i].path);
		ret = an_process_load(list.v[i].path, o->filter, NULL, NULL, &(*procs)[*n], err, errlen);
		if (ret)
			break;
		if ((ret = agg_symbolize((*procs)[*n]->rows, sym, (*procs)[*n]->maps))) {
			an_process_free((*procs)[*n]);
			snprintf(err, errlen, "out of memory");
			break;
		}
		(*n)++;
	}
	if (!ret && !*n) {
		snprintf(err, errlen, "no trace in %s; give the output directory of a 'fltrace record' "
			 "run to --diff", dir);
		ret = -ENOENT;
	}
	trace_list_free(&list);
	return ret;
}

int diff_load(struct diff_table *d, struct symbolizer *sym, const char *const dirs[2],
	      const struct diff_load_opts *o, char *err, size_t errlen)
{
	struct an_process **procs[2] = { NULL, NULL };
	size_t n[2] = { 0, 0 };
	int ret = 0;

	for (int side = 0; side < 2 && !ret; side++)
		ret = diff_load_dir(dirs[side], o, sym, &procs[side], &n[side], err, errlen);
	if (!ret && (ret = sym_resolve(sym)))
		snprintf(err, errlen, "symbolization failed: %s", strerror(-ret));
	for (int side = 0; side < 2 && !ret; side++)
		for (size_t i = 0; i < n[side] && !ret; i++)
			if ((ret = diff_add(d, side, procs[side][i]->rows, sym, o->by)))
				snprintf(err, errlen, "out of memory");
	for (int side = 0; side < 2; side++) {
		for (size_t i = 0; i < n[side]; i++)
			an_process_free(procs[side][i]);
		free(procs[side]);
	}
	return ret;
}
