/* What `fltrace sweep` makes of its runs: slowdowns against the baseline, sweep.csv, the miss-ratio
 * curve (curve.svg), and every callsite's faults in every run (callsites.csv, sweep.txt). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/analysis/analysis.h"
#include "../src/analysis/svg_curve.h"
#include "cli.h"
#include "sweep.h"

#define SWEEP_MB (1024.0 * 1024.0)

/* One callsite's faults in one run, as collected; folded into struct sweep_site by key. */
struct sweep_hit {
	char *key;      /* "func\tfile:line\tobject" */
	size_t run;
	uint64_t pages;
};

struct sweep_site {
	const char *key;           /* owned by the hits array */
	uint64_t *pages;           /* [nruns] */
	uint64_t rank;             /* pages at the smallest size of every policy */
	uint64_t total;
};

struct sweep_sites {
	struct sweep_hit *hits;
	size_t nhits, cap;
	struct sweep_site *v;
	size_t n;
	size_t nruns;
};

/* ---- slowdown ---- */

/* The run a run is compared with: the ample run, else the largest size of the same policy (the
 * first of that policy, as sizes run largest first). */
static const struct sweep_run *sweep_baseline(const struct sweep *s, const struct sweep_run *r)
{
	for (size_t i = 0; i < s->nruns; i++)
		if (s->runs[i].ample || !strcmp(s->runs[i].policy, r->policy))
			return &s->runs[i];
	return r;
}

static void sweep_slowdowns(struct sweep *s)
{
	for (size_t i = 0; i < s->nruns; i++) {
		struct sweep_run *r = &s->runs[i];
		const struct sweep_run *b = sweep_baseline(s, r);
		r->slowdown = b->wall_s > 0 ? r->wall_s / b->wall_s : -1;
	}
}

/* ---- callsites ---- */

static int sweep_hit_add(struct sweep_sites *ss, size_t run, const char *key, uint64_t pages)
{
	if (ss->nhits == ss->cap) {
		size_t cap = ss->cap ? ss->cap * 2 : 256;
		struct sweep_hit *v = realloc(ss->hits, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ss->hits = v;
		ss->cap = cap;
	}
	if (!(ss->hits[ss->nhits].key = strdup(key)))
		return -ENOMEM;
	ss->hits[ss->nhits].run = run;
	ss->hits[ss->nhits++].pages = pages;
	return 0;
}

/* The key of a by-line row: its innermost frame's function, file:line and object. An unknown
 * line keeps its object and offset, which (unlike the address) is the same in every run. */
static void sweep_row_key(char *buf, size_t len, const struct agg_row *r, const struct symbolizer *sym)
{
	const struct sym_frame *f = r->depth && r->frames ? sym_frame(sym, r->frames[0]) : NULL;
	const char *lib = f ? f->lib : "", *base = strrchr(lib, '/');

	base = base ? base + 1 : lib;
	if (!r->depth)
		snprintf(buf, len, "[no stack]\t\t");
	else if (!f)
		snprintf(buf, len, "??\t??:?\t");
	else if (!f->resolved || !strcmp(f->code, "??:?"))
		snprintf(buf, len, "%s\t%s+0x%" PRIx64 "\t%s", f->func, base, f->obj_addr, base);
	else
		snprintf(buf, len, "%s\t%s\t%s", f->func, f->code, base);
}

/* Every process of one run, by line, into the hits of run `run`. */
static int sweep_collect_run(struct sweep_sites *ss, size_t run, const char *dir)
{
	struct agg_filter all = { 0 };
	struct trace_list l;
	char err[512], key[4096];
	int ret = trace_list_dir(dir, &l);

	if (ret)
		return ret;
	for (size_t i = 0; i < l.n && !ret; i++) {
		struct an_process *p = NULL;
		struct symbolizer *sym = sym_new();
		struct agg_table *byline = agg_new();
		struct agg_row **rows;
		size_t n;

		ret = sym && byline ? an_process_load(l.v[i].path, &all, NULL, NULL, &p, err, sizeof(err))
				    : -ENOMEM;
		if (!ret && !(ret = agg_symbolize(p->rows, sym, p->maps)) && !(ret = sym_resolve(sym)))
			ret = agg_regroup(byline, p->rows, AGG_BY_LINE, sym);
		n = ret ? 0 : agg_rows(byline, &rows);
		for (size_t k = 0; k < n && !ret; k++) {
			sweep_row_key(key, sizeof(key), rows[k], sym);
			ret = sweep_hit_add(ss, run, key, rows[k]->count);
		}
		if (ret && ret != -ENOMEM && err[0])
			cli_note("sweep: %s: %s", l.v[i].path, err);
		agg_free(byline);
		sym_free(sym);
		an_process_free(p);
	}
	trace_list_free(&l);
	return ret;
}

static int sweep_cmp_hit(const void *a, const void *b)
{
	const struct sweep_hit *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : x->run < y->run ? -1 : x->run > y->run;
}

/* Whether run i is the smallest size of its policy (sizes run largest first). */
static bool sweep_is_smallest(const struct sweep *s, size_t i)
{
	for (size_t k = i + 1; k < s->nruns; k++)
		if (!strcmp(s->runs[k].policy, s->runs[i].policy) && !s->runs[k].ample)
			return false;
	return !s->runs[i].ample || s->nruns == 1;
}

static int sweep_cmp_site(const void *a, const void *b)
{
	const struct sweep_site *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* Hits sorted by key fold into one site each; sites sorted by faults at the smallest sizes. */
static int sweep_fold_sites(const struct sweep *s, struct sweep_sites *ss)
{
	qsort(ss->hits, ss->nhits, sizeof(*ss->hits), sweep_cmp_hit);
	ss->v = calloc(ss->nhits ? ss->nhits : 1, sizeof(*ss->v));
	if (!ss->v)
		return -ENOMEM;
	for (size_t i = 0; i < ss->nhits; i++) {
		const struct sweep_hit *h = &ss->hits[i];
		struct sweep_site *site = ss->n ? &ss->v[ss->n - 1] : NULL;
		if (!site || strcmp(site->key, h->key)) {
			site = &ss->v[ss->n++];
			site->key = h->key;
			if (!(site->pages = calloc(s->nruns, sizeof(*site->pages))))
				return -ENOMEM;
		}
		site->pages[h->run] += h->pages;
		site->total += h->pages;
		if (sweep_is_smallest(s, h->run))
			site->rank += h->pages;
	}
	qsort(ss->v, ss->n, sizeof(*ss->v), sweep_cmp_site);
	return 0;
}

static void sweep_sites_free(struct sweep_sites *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		free(ss->v[i].pages);
	for (size_t i = 0; i < ss->nhits; i++)
		free(ss->hits[i].key);
	free(ss->v);
	free(ss->hits);
}

/* The three fields of a key, copied out. */
static void sweep_key_split(const char *key, char *func, char *code, char *obj, size_t len)
{
	const char *t1 = strchr(key, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;

	snprintf(func, len, "%.*s", t1 ? (int)(t1 - key) : (int)strlen(key), key);
	snprintf(code, len, "%.*s", t2 ? (int)(t2 - t1 - 1) : 0, t1 ? t1 + 1 : "");
	snprintf(obj, len, "%s", t2 ? t2 + 1 : "");
}

/* ---- files ---- */

static FILE *sweep_create(const struct sweep *s, const char *name, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", s->outdir, name);
	f = fopen(path, "w");
	if (!f)
		cli_error(CLI_EXIT_FAIL, path, "cannot write it (%s); give a writable -o DIR",
			  strerror(errno));
	return f;
}

static int sweep_close(FILE *f, const char *path)
{
	int bad = ferror(f);

	if (fclose(f) || bad)
		return cli_error(CLI_EXIT_FAIL, path, "writing failed; free some space or give "
				 "another -o DIR");
	return 0;
}

static const char sweep_csv_header[] =
	"run,policy,localmem_bytes,processes,faults,first_touch,refetch,file,wp,in_syscall,nostack,"
	"sampled_out,wall_s,slowdown,resident_peak_bytes,far_peak_bytes,vm_hwm_bytes,exit_status,"
	"output\n";

static int sweep_write_csv(const struct sweep *s)
{
	char path[PATH_MAX + 32];
	FILE *f = sweep_create(s, "sweep.csv", path, sizeof(path));

	if (!f)
		return CLI_EXIT_FAIL;
	fputs(sweep_csv_header, f);
	for (size_t i = 0; i < s->nruns; i++) {
		const struct sweep_run *r = &s->runs[i];
		const struct runstats *t = &r->st;
		fprintf(f, "%s,%s,%" PRIu64 ",%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			   ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
			   ",%d,%s\n", r->name, r->policy, r->localmem, t->files, t->faults, t->zero,
			t->refetch, t->file, t->wp, t->syscall, t->nostack, t->sampled_out, r->wall_s,
			r->slowdown, t->resident_peak, t->far_peak, t->vm_hwm, r->status,
			r->output_differs ? "differs" : "same");
	}
	return sweep_close(f, path);
}

static int sweep_write_sites_csv(const struct sweep *s, const struct sweep_sites *ss)
{
	char path[PATH_MAX + 32], func[4096], code[4096], obj[4096];
	FILE *f = sweep_create(s, "callsites.csv", path, sizeof(path));

	if (!f)
		return CLI_EXIT_FAIL;
	fputs("function,code,object", f);
	for (size_t i = 0; i < s->nruns; i++)
		fprintf(f, ",%s", s->runs[i].name);
	fputc('\n', f);
	for (size_t i = 0; i < ss->n; i++) {
		sweep_key_split(ss->v[i].key, func, code, obj, sizeof(func));
		csv_put(f, func);
		fputc(',', f);
		csv_put(f, code);
		fputc(',', f);
		csv_put(f, obj);
		for (size_t k = 0; k < s->nruns; k++)
			fprintf(f, ",%" PRIu64, ss->v[i].pages[k]);
		fputc('\n', f);
	}
	return sweep_close(f, path);
}

/* The curve: one series per policy; the ample run, where nothing is evicted, starts each. */
static int sweep_write_curve(const struct sweep *s)
{
	struct svg_curve_point pts[SWEEP_MAX_POLICIES][SWEEP_MAX_RUNS];
	struct svg_curve_series series[SWEEP_MAX_POLICIES];
	char path[PATH_MAX + 32], sub[512], base[96], sz[32];
	size_t pos = 0;
	FILE *f;
	int rc;

	for (size_t p = 0; p < s->npolicies; p++) {
		series[p] = (struct svg_curve_series){ .name = s->policies[p], .pts = pts[p] };
		for (size_t i = 0; i < s->nruns; i++) {
			const struct sweep_run *r = &s->runs[i];
			if (!r->ample && strcmp(r->policy, s->policies[p]))
				continue;
			pts[p][series[p].n++] = (struct svg_curve_point){
				.localmem = r->localmem, .refetch = r->st.refetch, .slowdown = r->slowdown };
		}
	}
	sub[0] = 0;
	for (size_t i = 0; s->cmd_argv[i] && pos < 200; i++)
		pos += (size_t)snprintf(sub + pos, sizeof(sub) - pos, "%s%s", i ? " " : "", s->cmd_argv[i]);
	if (s->auto_sizes) {
		svg_fmt_bytes(sz, sizeof(sz), (double)s->runs[0].localmem);
		snprintf(base, sizeof(base), "the ample run (-L %s)", sz);
	} else {
		snprintf(base, sizeof(base), "the largest -L of the same policy");
	}
	struct svg_curve_opts o = { .title = "Miss-ratio curve", .subtitle = sub, .baseline = base };
	if (!(f = sweep_create(s, "curve.svg", path, sizeof(path))))
		return CLI_EXIT_FAIL;
	rc = svg_curve_write(f, series, s->npolicies, &o);
	if (rc) {
		fclose(f);
		return cli_error(CLI_EXIT_FAIL, path, "writing failed (%s); free some space or give "
				 "another -o DIR", strerror(-rc));
	}
	return sweep_close(f, path);
}

/* ---- text tables ---- */

static void sweep_put_runs(FILE *o, const struct sweep *s)
{
	char sz[32], res[32], far[32];

	fprintf(o, "%-16s %-6s %10s %10s %11s %10s %8s %9s %9s %10s %10s  %s\n", "RUN", "POLICY",
		"LOCALMEM", "FAULTS", "FIRST-TOUCH", "REFETCH", "FILE", "WALL(s)", "SLOWDOWN",
		"PEAK-RES", "PEAK-FAR", "OUTPUT");
	for (size_t i = 0; i < s->nruns; i++) {
		const struct sweep_run *r = &s->runs[i];
		svg_fmt_bytes(sz, sizeof(sz), (double)r->localmem);
		svg_fmt_bytes(res, sizeof(res), (double)r->st.resident_peak);
		svg_fmt_bytes(far, sizeof(far), (double)r->st.far_peak);
		fprintf(o, "%-16s %-6s %10s %10" PRIu64 " %11" PRIu64 " %10" PRIu64 " %8" PRIu64
			   " %9.2f %8.2fx %10s %10s  %s\n", r->name, r->ample ? "-" : r->policy, sz,
			r->st.faults, r->st.zero, r->st.refetch, r->st.file, r->wall_s, r->slowdown, res,
			far, r->output_differs ? r->differs_how : "same");
	}
}

/* Keeps the end of a long name: the function and file are at its end. */
static void sweep_put_cut(FILE *o, const char *s, int width)
{
	int len = (int)strlen(s);

	if (len > width)
		fprintf(o, "..%-*s", width - 2, s + len - (width - 2));
	else
		fprintf(o, "%-*s", width, s);
}

static void sweep_put_sites(FILE *o, const struct sweep *s, const struct sweep_sites *ss)
{
	size_t show = (size_t)s->top < ss->n ? (size_t)s->top : ss->n;
	char func[4096], code[4096], obj[4096];

	fprintf(o, "\nTop callsites (innermost frame), faults (pages) in each run, most at the "
		   "smallest size first:\n");
	sweep_put_cut(o, "FUNCTION", 24);
	fputc(' ', o);
	sweep_put_cut(o, "LOCATION", 32);
	for (size_t i = 0; i < s->nruns; i++)
		fprintf(o, " %*.*s", 14, 14, s->runs[i].name);
	fputc('\n', o);
	for (size_t i = 0; i < show; i++) {
		sweep_key_split(ss->v[i].key, func, code, obj, sizeof(func));
		sweep_put_cut(o, func, 24);
		fputc(' ', o);
		sweep_put_cut(o, code, 32);
		for (size_t k = 0; k < s->nruns; k++)
			fprintf(o, " %14" PRIu64, ss->v[i].pages[k]);
		fputc('\n', o);
	}
	if (ss->n > show)
		fprintf(o, "(%zu more callsites in callsites.csv)\n", ss->n - show);
}

static void sweep_put_text(FILE *o, const struct sweep *s, const struct sweep_sites *ss)
{
	fputs("fltrace sweep:", o);
	for (size_t i = 0; s->cmd_argv[i]; i++)
		fprintf(o, " %s", s->cmd_argv[i]);
	fprintf(o, "\n%zu runs in %s; slowdown relative to %s\n\n", s->nruns, s->outdir,
		s->auto_sizes ? "the ample run" : "the largest -L of the same policy");
	sweep_put_runs(o, s);
	sweep_put_sites(o, s, ss);
}

static int sweep_write_text(const struct sweep *s, const struct sweep_sites *ss)
{
	char path[PATH_MAX + 32];
	FILE *f = sweep_create(s, "sweep.txt", path, sizeof(path));

	if (!f)
		return CLI_EXIT_FAIL;
	sweep_put_text(f, s, ss);
	if (sweep_close(f, path))
		return CLI_EXIT_FAIL;
	sweep_put_text(stdout, s, ss);
	printf("\nWritten in %s: sweep.csv, curve.svg, callsites.csv, sweep.txt; the command's "
	       "output: %s/stdout. Look closer at one run with e.g. 'fltrace report -i %s --by line "
	       "--top 20'.\n", s->outdir, s->runs[0].dir, s->runs[s->nruns - 1].dir);
	return 0;
}

int sweep_report(struct sweep *s)
{
	struct sweep_sites ss = { .nruns = s->nruns };
	int rc = 0, err = 0;

	sweep_slowdowns(s);
	cli_note("sweep: reading the callsites of %zu runs", s->nruns);
	for (size_t i = 0; i < s->nruns && !err; i++)
		err = sweep_collect_run(&ss, i, s->runs[i].dir);
	if (!err)
		err = sweep_fold_sites(s, &ss);
	if (err)
		rc = cli_error(CLI_EXIT_FAIL, "sweep", "reading the traces failed: %s; check the runs "
			       "with 'fltrace report -i %s/<run>'", strerror(-err), s->outdir);
	if (!rc)
		rc = sweep_write_csv(s);
	if (!rc)
		rc = sweep_write_sites_csv(s, &ss);
	if (!rc)
		rc = sweep_write_curve(s);
	if (!rc)
		rc = sweep_write_text(s, &ss);
	sweep_sites_free(&ss);
	return rc;
}
