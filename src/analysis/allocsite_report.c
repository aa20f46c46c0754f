/* A recording read by allocation site: every trace of a directory matched fault by fault to the
 * allocation it hit, rows merged by the symbolized allocation stack (written by report_alloc.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "allocsite.h"

#define AS_NO_ALLOC "[no recorded allocation]"
#define AS_NO_STACK "[allocation without a stack]"

static char *as_join(const struct symbolizer *sym, const struct as_site *s, int what)
{
	size_t len = 1;
	for (uint32_t k = 0; k < s->depth; k++) {
		const struct sym_frame *f = sym_frame(sym, s->frames[k]);
		const char *v = what == 0 ? f->code : what == 1 ? f->funcs : f->lib;
		len += strlen(v) + 4;
	}
	char *out = malloc(len), *p = out;
	if (!out)
		return NULL;
	*p = '\0';
	for (uint32_t k = 0; k < s->depth; k++) {
		const struct sym_frame *f = sym_frame(sym, s->frames[k]);
		const char *v = what == 0 ? f->code : what == 1 ? f->funcs : f->lib;
		p = stpcpy(p, k ? "<//>" : "");
		p = stpcpy(p, v);
	}
	return out;
}

/* A name kept as long as the report: interned in r->names. NULL when out of memory. */
static const char *as_keep(struct as_report *r, const char *name)
{
	int64_t id = intern_id(&r->names, name, NULL);

	return id < 0 ? NULL : r->names.strs[id];
}

/* A frame of an allocation stack: file:line, or the object and offset of the call. */
static const char *as_frame_name(const struct sym_frame *f, char *buf, size_t len)
{
	const char *lb = strrchr(f->lib, '/');

	if (!f->resolved || f->locs[0].line)
		return caller_name(f, buf, len);
	snprintf(buf, len, "%s+0x%" PRIx64, lb ? lb + 1 : f->lib, f->obj_addr);
	return buf;
}

/* The site of an allocation stack: its innermost frame outside the allocator and the C and C++
 * runtimes (the program's call to malloc, never libc's start-up), file:line where known, else
 * the object and offset of the call, followed by its caller's (" < "), since a stripped
 * program's site is often its own malloc wrapper: two calls of it stay two sites. */
static const char *as_site_name(struct as_report *r, const int64_t *frames, uint32_t n)
{
	char buf[4200], up[2100];

	if (!n)
		return "??:?";
	uint32_t k = caller_index(r->sym, frames, n);
	const struct sym_frame *f = sym_frame(r->sym, frames[k]);
	const char *name = as_frame_name(f, buf, sizeof(buf));
	if (name != buf) /* caller_name may answer with the frame's own name, not in buf */
		snprintf(buf, sizeof(buf), "%s", name);
	if (f->resolved && !f->locs[0].line && k + 1 < n) {
		uint32_t u = k + 1 + caller_index(r->sym, frames + k + 1, n - k - 1);
		const struct sym_frame *uf = sym_frame(r->sym, frames[u]);
		size_t l = strlen(buf);
		if (!caller_is_runtime(uf->lib)) /* not libc's start-up calling main */
			snprintf(buf + l, sizeof(buf) - l, " < %s", as_frame_name(uf, up, sizeof(up)));
	}
	return as_keep(r, buf);
}

/* The code that faulted on a site's memory: the program's own frame, as report --by caller. */
static const char *as_call_name(struct as_report *r, const int64_t *frames, uint32_t n)
{
	char buf[4200];

	if (!n)
		return "??:?";
	return as_keep(r, caller_name(sym_frame(r->sym, frames[caller_index(r->sym, frames, n)]),
				      buf, sizeof(buf)));
}

/* Frames without a source line, by object offset: what tells two calls in one function apart
 * where code says only ??:? (a row's key, not an output). */
static char *as_offsets(const struct symbolizer *sym, const struct as_site *s)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);

	if (!m)
		return NULL;
	for (uint32_t k = 0; k < s->depth; k++) {
		const struct sym_frame *f = sym_frame(sym, s->frames[k]);
		if (!f->locs[0].line)
			fprintf(m, "%u:%" PRIx64 ";", k, f->obj_addr);
	}
	if (fclose(m)) {
		free(out);
		return NULL;
	}
	return out;
}

static const char *as_kind_name(unsigned kind)
{
	switch (kind) {
	case FT_ALLOC_MALLOC: return "malloc";
	case FT_ALLOC_MMAP: return "mmap";
	case FT_ALLOC_MREMAP: return "mremap";
	}
	return "";
}

/* A faulting line's faults on the row's objects: one entry a line, whatever their classes. */
static int as_call_add(struct as_row *row, const char *code, const struct as_call *c)
{
	struct as_row_call *to = NULL;
	for (size_t i = 0; i < row->ncalls && !to; i++)
		if (!strcmp(row->calls[i].code, code))
			to = &row->calls[i];
	if (!to) {
		struct as_row_call *n = realloc(row->calls, (row->ncalls + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		row->calls = n;
		to = &row->calls[row->ncalls++];
		*to = (struct as_row_call){ .code = code };
	}
	to->count += c->count;
	to->by_class[c->cls] += c->count;
	return 0;
}

static int as_call_cmp(const void *a, const void *b)
{
	const struct as_row_call *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->code, y->code);
}

static int as_row_cmp(const void *a, const void *b)
{
	const struct as_row *x = a, *y = b;
	if (x->faults != y->faults)
		return x->faults < y->faults ? 1 : -1;
	if (x->objects != y->objects)
		return x->objects < y->objects ? 1 : -1;
	return strcmp(x->code, y->code);
}

/* The row of a site: an existing one with the same allocation stack (code, functions, objects),
 * as two processes or two call addresses of one line give, or a new one. Rows are numbered as
 * their keys are first interned, so a key's id is its row. */
static struct as_row *as_row_for(struct as_report *r, struct intern *keys, char *code, char *funcs,
				 char *libs, const char *offsets)
{
	char *key = NULL;
	bool fresh = false;
	int64_t id = asprintf(&key, "%s\x1f%s\x1f%s\x1f%s", code, funcs, libs, offsets) < 0 ? -ENOMEM :
		     intern_id(keys, key, &fresh);
	free(key);
	if (id < 0 || !fresh) {
		free(code);
		free(funcs);
		free(libs);
		return id < 0 ? NULL : &r->rows[id];
	}
	struct as_row *n = realloc(r->rows, (r->nrows + 1) * sizeof(*n));
	if (!n) {
		free(code);
		free(funcs);
		free(libs);
		return NULL;
	}
	r->rows = n;
	memset(&r->rows[r->nrows], 0, sizeof(*n));
	r->rows[r->nrows].code = code;
	r->rows[r->nrows].funcs = funcs;
	r->rows[r->nrows].libs = libs;
	return &r->rows[r->nrows++];
}

static int as_rows_build(struct as_report *r, const struct allocsites *a)
{
	const struct as_site *sites;
	size_t n = allocsites_sites(a, &sites);
	struct intern keys = { 0 };
	int ret = 0;
	for (size_t i = 0; i < n; i++) {
		const struct as_site *s = &sites[i];
		if (!s->faults && !s->objects)
			continue;
		bool named = i >= 2 && s->frames;
		char *code = named ? as_join(r->sym, s, 0) : strdup(i == 0 ? AS_NO_ALLOC : AS_NO_STACK);
		char *funcs = named ? as_join(r->sym, s, 1) : strdup("");
		char *libs = named ? as_join(r->sym, s, 2) : strdup("");
		char *offsets = named ? as_offsets(r->sym, s) : strdup("");
		struct as_row *row = code && funcs && libs && offsets ?
			as_row_for(r, &keys, code, funcs, libs, offsets) : NULL;
		free(offsets);
		if (!row) {
			if (!(code && funcs && libs)) {
				free(code);
				free(funcs);
				free(libs);
			}
			ret = -ENOMEM;
			break;
		}
		row->where = named ? as_site_name(r, s->frames, s->depth) : row->code;
		row->kind = named ? as_kind_name(s->kind) : "";
		row->objects += s->objects;
		row->bytes += s->bytes;
		row->faults += s->faults;
		row->zero += s->zero;
		row->refetch += s->refetch;
		row->other += s->other;
		for (unsigned k = 0; k < AS_CLASSES; k++)
			row->by_class[k] += s->by_class[k];
		if (!row->where)
			ret = -ENOMEM;
		for (size_t c = 0; c < s->ncalls && !ret; c++) {
			const char *at = as_call_name(r, s->calls[c].frames, s->calls[c].nframes);
			ret = at ? as_call_add(row, at, &s->calls[c]) : -ENOMEM;
		}
		if (ret)
			break;
	}
	intern_free(&keys);
	if (ret)
		return ret;
	for (size_t i = 0; i < r->nrows; i++)
		qsort(r->rows[i].calls, r->rows[i].ncalls, sizeof(*r->rows[i].calls), as_call_cmp);
	qsort(r->rows, r->nrows, sizeof(*r->rows), as_row_cmp);
	return 0;
}

/* One trace: its maps into a history of its own, its records into the matcher. */
static int as_load_trace(struct as_report *r, struct allocsites *a, const char *path,
			 void (*warn)(const char *path, const char *what),
			 const struct agg_filter *filter, char *err, size_t errlen)
{
	struct trace *t;
	int ret = trace_open(path, &t, err, errlen);
	if (ret)
		return ret;
	struct maps_history *m = maps_new();
	struct maps_history **mv = realloc(r->maps, (r->nmaps + 1) * sizeof(*mv));
	if (!m || !mv) {
		maps_free(m);
		free(mv);
		trace_close(t);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->maps = mv;
	r->maps[r->nmaps++] = m;
	const struct ft_rec_hdr *h;
	while (!ret && (h = trace_next(t))) {
		switch (h->type) {
		case FT_REC_MAPS: {
			const struct ft_maps *mp = (const void *)h;
			ret = maps_add_snapshot(m, mp->time_ns, mp->text, mp->len);
			break;
		}
		case FT_REC_OBJECT:
			ret = maps_add_object(m, (const void *)h);
			break;
		case FT_REC_FAULT:
			if (!filter || agg_filter_match(filter, t->hdr, (const void *)h))
				ret = allocsites_fault(a, t->hdr, (const void *)h);
			break;
		case FT_REC_ALLOC: {
			const struct ft_alloc *al = (const void *)h;
			if (al->kind != FT_ALLOC_MALLOC)
				r->map_allocs++;
			else if (al->flags & FT_ALLOC_SAMPLED)
				r->sampled_allocs++;
			else if (al->flags & FT_ALLOC_PAGE)
				r->page_allocs++;
			else
				r->big_allocs++;
			ret = allocsites_record(a, t->hdr, h);
			break;
		}
		default:
			ret = allocsites_record(a, t->hdr, h);
		}
	}
	if (!ret)
		ret = allocsites_symbolize(a, t->hdr, r->sym, m);
	allocsites_trace_done(a);
	if (t->warning[0] && warn)
		warn(path, t->warning);
	trace_close(t);
	if (ret)
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	return ret;
}

int as_report_load(const char *dir, long pid, const struct agg_filter *filter, struct as_report *r,
		   void (*warn)(const char *path, const char *what), char *err, size_t errlen)
{
	struct trace_list list = { 0 };
	struct allocsites *a = NULL;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = trace_list_dir(dir, &list);
	if (ret) {
		snprintf(err, errlen, "cannot read %s: %s; give the directory of a recording with -i DIR",
			 dir, strerror(-ret));
		return ret;
	}
	r->sym = sym_new();
	a = allocsites_new();
	if (!r->sym || !a) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	size_t loaded = 0;
	for (size_t i = 0; i < list.n && !ret; i++) {
		if (pid >= 0 && list.v[i].pid != (uint32_t)pid)
			continue;
		ret = as_load_trace(r, a, list.v[i].path, warn, filter, err, errlen);
		loaded++;
	}
	if (!ret && !loaded) {
		snprintf(err, errlen, pid >= 0 ? "no trace of that pid in %s; leave out --pid to see all "
			 "processes" : "no trace in %s; run 'fltrace record' first", dir);
		ret = -ENOENT;
	}
	if (!ret && (ret = sym_resolve(r->sym)))
		snprintf(err, errlen, "symbolization failed: %s", strerror(-ret));
	if (!ret && (ret = as_rows_build(r, a)))
		snprintf(err, errlen, "out of memory");
	if (!ret) {
		r->total = allocsites_total(a);
		r->attributed = allocsites_attributed(a);
	}
out:
	allocsites_free(a);
	trace_list_free(&list);
	return ret;
}

void as_report_free(struct as_report *r)
{
	for (size_t i = 0; i < r->nrows; i++) {
		free(r->rows[i].code);
		free(r->rows[i].funcs);
		free(r->rows[i].libs);
		free(r->rows[i].calls);
	}
	free(r->rows);
	sym_free(r->sym);
	intern_free(&r->names);
	for (size_t i = 0; i < r->nmaps; i++)
		maps_free(r->maps[i]);
	free(r->maps);
	memset(r, 0, sizeof(*r));
}

/* Frames of a row for a flamegraph, outermost first: the allocation stack, then the line that
 * faulted on it. */
int as_report_foreach_stack(const struct as_report *r,
			    int (*cb)(void *arg, const char *const *frames, size_t n, uint64_t count,
				      unsigned cls),
			    void *arg)
{
	for (size_t i = 0; i < r->nrows; i++) {
		const struct as_row *w = &r->rows[i];
		size_t depth = 1;
		for (const char *p = w->code; (p = strstr(p, "<//>")); p += 4)
			depth++;
		char *copy = strdup(w->code), *fcopy = strdup(w->funcs);
		const char **frames = calloc(depth + 1, sizeof(*frames));
		if (!copy || !fcopy || !frames) {
			free(copy);
			free(fcopy);
			free(frames);
			return -ENOMEM;
		}
		size_t n = 0;
		/* Innermost first in code: reverse. A frame without a line is named by its function
		 * (object+0xentry when only the unwind table knows it), not ??:?. */
		for (char *p = copy, *q, *fp = fcopy, *fq; p && n < depth; p = q, fp = fq) {
			q = strstr(p, "<//>");
			fq = fp ? strstr(fp, "<//>") : NULL;
			if (q) {
				*q = '\0';
				q += 4;
			}
			if (fq) {
				*fq = '\0';
				fq += 4;
			}
			frames[depth - 1 - n++] = !strncmp(p, "??", 2) && fp && *fp ? fp : p;
		}
		int ret = 0;
		uint64_t unlisted[AS_CLASSES];
		memcpy(unlisted, w->by_class, sizeof(unlisted));
		for (size_t c = 0; c < w->ncalls && !ret; c++) {
			frames[depth] = w->calls[c].code;
			for (unsigned k = 0; k < AS_CLASSES && !ret; k++) {
				uint64_t n = w->calls[c].by_class[k];
				ret = n ? cb(arg, frames, depth + 1, n, k) : 0;
				unlisted[k] -= n;
			}
		}
		/* Faults without a stack: the site alone. */
		for (unsigned k = 0; k < AS_CLASSES && !ret; k++)
			ret = unlisted[k] ? cb(arg, frames, depth, unlisted[k], k) : 0;
		free(copy);
		free(fcopy);
		free(frames);
		if (ret)
			return ret;
	}
	return 0;
}
