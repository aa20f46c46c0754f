/* What `fltrace sweep` makes of its runs: slowdowns against the baseline, sweep.csv, the miss-ratio
 * curve (curve.svg), and every callsite's faults in every run (callsites.csv, sweep.txt). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/analysis/analysis.h"
#include "../src/analysis/callsites.h"
#include "../src/analysis/svg_curve.h"
#include "cli.h"
#include "sweep.h"

#define SWEEP_MB (1024.0 * 1024.0)

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

/* The traced processes of every run, loaded together so that one symbolizer sees every address
 * of an object before addr2line runs on it: once per object, not once per process and run. */
struct sweep_procs {
	struct an_process **v;
	size_t *run;
	size_t n, cap;
};

static int sweep_procs_push(struct sweep_procs *ps, struct an_process *p, size_t run)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 64;
		struct an_process **v = realloc(ps->v, cap * sizeof(*v));
		size_t *r = v ? realloc(ps->run, cap * sizeof(*r)) : NULL;
		if (v)
			ps->v = v;
		if (!v || !r)
			return -ENOMEM;
		ps->run = r;
		ps->cap = cap;
	}
	ps->v[ps->n] = p;
	ps->run[ps->n++] = run;
	return 0;
}

/* Every process of one run, loaded and its frames registered with sym. */
static int sweep_load_run(struct sweep_procs *ps, size_t run, const char *dir,
			  struct symbolizer *sym)
{
	struct agg_filter all = { 0 };
	struct trace_list l;
	char err[512];
	int ret = trace_list_dir(dir, &l);

	if (ret)
		return ret;
	for (size_t i = 0; i < l.n && !ret; i++) {
		struct an_process *p = NULL;

		err[0] = 0;
		ret = an_process_load(l.v[i].path, &all, NULL, NULL, &p, err, sizeof(err));
		if (!ret && (ret = sweep_procs_push(ps, p, run)))
			an_process_free(p);
		else if (!ret)
			ret = agg_symbolize(p->rows, sym, p->maps);
		if (ret && err[0])
			cli_note("sweep: %s: %s", l.v[i].path, err);
	}
	trace_list_free(&l);
	return ret;
}

/* Whether run i is the smallest size of its policy (sizes run largest first). */
static bool sweep_is_smallest(const struct sweep *s, size_t i)
{
	for (size_t k = i + 1; k < s->nruns; k++)
		if (!strcmp(s->runs[k].policy, s->runs[i].policy) && !s->runs[k].ample)
			return false;
	return !s->runs[i].ample || s->nruns == 1;
}

/* The callsites of every run, most faults at the smallest sizes first. */
static int sweep_callsites(const struct sweep *s, struct callsites **out)
{
	struct callsites *cs = callsites_new(s->nruns);
	struct symbolizer *sym = sym_new();
	struct sweep_procs ps = { 0 };
	bool smallest[SWEEP_MAX_RUNS];
	int err = cs && sym ? 0 : -ENOMEM;

	for (size_t i = 0; i < s->nruns && !err; i++) {
		cli_note("sweep: reading the trace of run %zu/%zu: %s", i + 1, s->nruns, s->runs[i].name);
		err = sweep_load_run(&ps, i, s->runs[i].dir, sym);
	}
	if (!err) {
		cli_note("sweep: symbolizing the callsites of %zu processes", ps.n);
		err = sym_resolve(sym);
	}
	for (size_t i = 0; i < ps.n && !err; i++)
		err = callsites_add(cs, ps.v[i]->rows, sym, (int)ps.run[i]);
	for (size_t i = 0; i < s->nruns; i++)
		smallest[i] = sweep_is_smallest(s, i);
	if (!err)
		err = callsites_sort(cs, smallest);
	for (size_t i = 0; i < ps.n; i++)
		an_process_free(ps.v[i]);
	free(ps.v);
	free(ps.run);
	sym_free(sym);
	if (err)
		callsites_free(cs);
	else
		*out = cs;
	return err;
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

static int sweep_write_sites_csv(const struct sweep *s, const struct callsites *cs)
{
	char path[PATH_MAX + 32];
	const struct callsite *v;
	size_t n = callsites_get(cs, &v);
	FILE *f = sweep_create(s, "callsites.csv", path, sizeof(path));

	if (!f)
		return CLI_EXIT_FAIL;
	fputs("function,code,object", f);
	for (size_t i = 0; i < s->nruns; i++)
		fprintf(f, ",%s", s->runs[i].name);
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		csv_put(f, v[i].func);
		fputc(',', f);
		csv_put(f, v[i].code);
		fputc(',', f);
		csv_put(f, v[i].lib);
		for (size_t k = 0; k < s->nruns; k++)
			fprintf(f, ",%" PRIu64, v[i].pages[k]);
		fputc('\n', f);
	}
	return sweep_close(f, path);
}

/* The curve: one series per policy; the ample run, where nothing is evicted, starts each. */
static int sweep_write_curve(const struct sweep *s)
{
	struct svg_curve_point pts[SWEEP_MAX_POLICIES][SWEEP_MAX_RUNS];
	struct svg_curve_series series[SWEEP_MAX_POLICIES];
	char path[PATH_MAX + 32], sub[512], base[96], sz[32], ample[64];
	size_t pos = 0;
	FILE *f;
	int rc;

	for (size_t p = 0; p < s->npolicies; p++) {
		series[p] = (struct svg_curve_series){ .name = s->policies[p], .pts = pts[p] };
		for (size_t i = 0; i < s->nruns; i++) {
			const struct sweep_run *r = &s->runs[i];
			if (!r->ample && strcmp(r->policy, s->policies[p]))
				continue;
			/* The ample run stands at its peak: any -L above it runs the same. */
			pts[p][series[p].n++] = (struct svg_curve_point){
				.localmem = r->ample ? r->st.resident_peak : r->localmem,
				.refetch = r->st.refetch, .slowdown = r->slowdown,
				.label = r->ample ? ample : NULL };
		}
	}
	svg_fmt_bytes(sz, sizeof(sz), (double)s->runs[0].st.resident_peak);
	snprintf(ample, sizeof(ample), "ample (peak %s)", sz);
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

static void sweep_put_sites(FILE *o, const struct sweep *s, const struct callsites *cs)
{
	const struct callsite *v;
	size_t n = callsites_get(cs, &v), show = (size_t)s->top < n ? (size_t)s->top : n;

	fprintf(o, "\nTop callsites (innermost frame), faults (pages) in each run, most at the "
		   "smallest size first:\n");
	sweep_put_cut(o, "FUNCTION", 24);
	fputc(' ', o);
	sweep_put_cut(o, "LOCATION", 32);
	for (size_t i = 0; i < s->nruns; i++)
		fprintf(o, " %*.*s", 14, 14, s->runs[i].name);
	fputc('\n', o);
	for (size_t i = 0; i < show; i++) {
		char inner[4096];
		snprintf(inner, sizeof(inner), "%.*s", callsites_inner_len(v[i].code), v[i].code);
		sweep_put_cut(o, v[i].func, 24);
		fputc(' ', o);
		sweep_put_cut(o, inner, 32);
		for (size_t k = 0; k < s->nruns; k++)
			fprintf(o, " %14" PRIu64, v[i].pages[k]);
		fputc('\n', o);
	}
	if (n > show)
		fprintf(o, "(%zu more callsites in callsites.csv)\n", n - show);
}

static void sweep_put_text(FILE *o, const struct sweep *s, const struct callsites *cs)
{
	fputs("fltrace sweep:", o);
	for (size_t i = 0; s->cmd_argv[i]; i++)
		fprintf(o, " %s", s->cmd_argv[i]);
	fprintf(o, "\n%zu runs in %s; slowdown relative to %s\n\n", s->nruns, s->outdir,
		s->auto_sizes ? "the ample run" : "the largest -L of the same policy");
	sweep_put_runs(o, s);
	sweep_put_sites(o, s, cs);
}

static int sweep_write_text(const struct sweep *s, const struct callsites *cs)
{
	char path[PATH_MAX + 32];
	FILE *f = sweep_create(s, "sweep.txt", path, sizeof(path));

	if (!f)
		return CLI_EXIT_FAIL;
	sweep_put_text(f, s, cs);
	if (sweep_close(f, path))
		return CLI_EXIT_FAIL;
	sweep_put_text(stdout, s, cs);
	printf("\nWritten in %s: sweep.csv, curve.svg, callsites.csv, sweep.txt; the command's "
	       "output: %s/stdout. Look closer at one run with e.g. 'fltrace report -i %s --by line "
	       "--top 20'.\n", s->outdir, s->runs[0].dir, s->runs[s->nruns - 1].dir);
	return 0;
}

int sweep_report(struct sweep *s)
{
	struct callsites *cs = NULL;
	int rc, err;

	sweep_slowdowns(s);
	err = sweep_callsites(s, &cs);
	if (err)
		return cli_error(CLI_EXIT_FAIL, "sweep", "reading the traces failed: %s; check the runs "
				 "with 'fltrace report -i %s/<run>'", strerror(-err), s->outdir);
	rc = sweep_write_csv(s);
	if (!rc)
		rc = sweep_write_sites_csv(s, cs);
	if (!rc)
		rc = sweep_write_curve(s);
	if (!rc)
		rc = sweep_write_text(s, cs);
	callsites_free(cs);
	return rc;
}
