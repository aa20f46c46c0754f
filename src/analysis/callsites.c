/* Callsites in columns: each added table is regrouped by line and its rows kept as (name, column,
 * pages); callsites_sort folds the rows with the same name, so the order of adding never shows. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callsites.h"
#include "svg_common.h"

struct callsites_hit {
	char *key;      /* "func\0code\0lib\0caller\0" as one allocation */
	size_t keylen;
	size_t col;
	uint64_t pages;
};

struct callsites {
	size_t ncols;
	bool by_caller;
	struct callsites_hit *hits;
	size_t nhits, cap;
	struct callsite *v;
	size_t n;
};

struct callsites *callsites_new(size_t ncols)
{
	struct callsites *c = calloc(1, sizeof(*c));

	if (c)
		c->ncols = ncols ? ncols : 1;
	return c;
}

void callsites_by_caller(struct callsites *c)
{
	c->by_caller = true;
}

void callsites_free(struct callsites *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].pages);
	for (size_t i = 0; i < c->nhits; i++)
		free(c->hits[i].key);
	free(c->v);
	free(c->hits);
	free(c);
}

/* The name of a by-line row. An unknown line keeps its object and offset, which (unlike the
 * address) is the same in every run. */
static int callsites_key(const struct callsites *c, const struct agg_row *r,
			 const struct symbolizer *s, char **key, size_t *len)
{
	const struct sym_frame *f = r->depth && r->frames ? sym_frame(s, r->frames[0]) : NULL;
	const char *lib = f ? f->lib : "", *base = strrchr(lib, '/'), *caller = "";
	char code[64], cbuf[4200];
	int n;

	base = base ? base + 1 : lib;
	if (c->by_caller && f)
		caller = caller_name(agg_row_caller(r, s), cbuf, sizeof(cbuf));
	if (!r->depth)
		n = asprintf(key, "[no stack]%c%c%c", 0, 0, 0);
	else if (!f)
		n = asprintf(key, "??%c??:?%c%c%s", 0, 0, 0, caller);
	else if (!f->resolved || !strcmp(f->code, "??:?")) {
		snprintf(code, sizeof(code), "+0x%" PRIx64, f->obj_addr);
		n = asprintf(key, "%s%c%s%s%c%s%c%s", f->func, 0, base, code, 0, base, 0, caller);
	} else {
		/* The function of the innermost line: an inlined helper, not the frame's caller. */
		const char *fn = f->funcs && *f->funcs ? f->funcs : f->func, *cut = strstr(fn, "<<<");
		n = asprintf(key, "%.*s%c%s%c%s%c%s", cut ? (int)(cut - fn) : (int)strlen(fn), fn, 0,
			     f->code, 0, base, 0, caller);
	}
	if (n < 0)
		return -ENOMEM;
	*len = (size_t)n;
	return 0;
}

static size_t callsites_col(const struct agg_row *r)
{
	if (r->origin == FT_ORIGIN_SYSCALL)
		return SVG_KIND_SYSCALL;
	if (r->kind == FT_KIND_PREFETCH)
		return SVG_KIND_PREFETCH;
	return r->kind <= FT_KIND_WP ? r->kind : SVG_KIND_REFETCH;
}

static int callsites_push(struct callsites *c, char *key, size_t len, size_t col, uint64_t pages)
{
	if (c->nhits == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct callsites_hit *v = realloc(c->hits, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		c->hits = v;
		c->cap = cap;
	}
	c->hits[c->nhits++] = (struct callsites_hit){ key, len, col, pages };
	return 0;
}

int callsites_add(struct callsites *c, struct agg_table *by_stack, const struct symbolizer *s,
		  int col)
{
	struct agg_table *byline = agg_new();
	struct agg_row **rows;
	size_t n;
	int err = byline ? agg_regroup(byline, by_stack, c->by_caller ? AGG_BY_LINE_CALLER :
				       AGG_BY_LINE, s) : -ENOMEM;

	n = err ? 0 : agg_rows(byline, &rows);
	for (size_t i = 0; i < n && !err; i++) {
		size_t k = col == CALLSITES_BY_KIND ? callsites_col(rows[i]) : (size_t)col;
		char *key;
		size_t len;
		if (k >= c->ncols)
			err = -EINVAL;
		else if (!(err = callsites_key(c, rows[i], s, &key, &len)) &&
			 (err = callsites_push(c, key, len, k, rows[i]->count)))
			free(key);
	}
	agg_free(byline);
	return err;
}

static int callsites_cmp_key(const struct callsites_hit *x, const struct callsites_hit *y)
{
	size_t n = x->keylen < y->keylen ? x->keylen : y->keylen;
	int c = memcmp(x->key, y->key, n);

	return c ? c : x->keylen < y->keylen ? -1 : x->keylen > y->keylen;
}

static int callsites_cmp_hit(const void *a, const void *b)
{
	return callsites_cmp_key(a, b);
}

static int callsites_cmp_site(const void *a, const void *b)
{
	const struct callsite *x = a, *y = b;
	int c;

	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if ((c = strcmp(x->func, y->func)))
		return c;
	if ((c = strcmp(x->code, y->code)))
		return c;
	if ((c = strcmp(x->lib, y->lib)))
		return c;
	return strcmp(x->caller, y->caller);
}

int callsites_sort(struct callsites *c, const bool *rank_cols)
{
	const struct callsites_hit *prev = NULL;

	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].pages);
	free(c->v);
	c->n = 0;
	qsort(c->hits, c->nhits, sizeof(*c->hits), callsites_cmp_hit);
	c->v = calloc(c->nhits ? c->nhits : 1, sizeof(*c->v));
	if (!c->v)
		return -ENOMEM;
	for (size_t i = 0; i < c->nhits; i++) {
		const struct callsites_hit *h = &c->hits[i];
		struct callsite *site = &c->v[c->n ? c->n - 1 : 0];
		if (!prev || callsites_cmp_key(prev, h)) {
			site = &c->v[c->n++];
			site->func = h->key;
			site->code = site->func + strlen(site->func) + 1;
			site->lib = site->code + strlen(site->code) + 1;
			site->caller = site->lib + strlen(site->lib) + 1;
			if (!(site->pages = calloc(c->ncols, sizeof(*site->pages))))
				return -ENOMEM;
		}
		prev = h;
		site->pages[h->col] += h->pages;
		site->total += h->pages;
		if (!rank_cols || rank_cols[h->col])
			site->rank += h->pages;
	}
	qsort(c->v, c->n, sizeof(*c->v), callsites_cmp_site);
	return 0;
}

size_t callsites_get(const struct callsites *c, const struct callsite **v)
{
	*v = c->v;
	return c->n;
}

int callsites_inner_len(const char *code)
{
	const char *cut = strstr(code, "<<<");

	return cut ? (int)(cut - code) : (int)strlen(code);
}
