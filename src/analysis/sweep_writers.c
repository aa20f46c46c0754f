/* The writers of `fltrace sweep`'s files, rows of the writers table (report_writers.c): sweep.csv,
 * the miss-ratio curve (curve.svg), callsites.csv and the text tables (sweep.txt, also on stdout). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "svg_curve.h"
#include "sweep.h"

static const char sweep_csv_header[] =
	"run,policy,localmem_bytes,processes,faults,first_touch,refetch,file,wp,in_syscall,nostack,"
	"sampled_out,wall_s,slowdown,resident_peak_bytes,far_peak_bytes,vm_hwm_bytes,exit_status,"
	"output,prefetch_hits,prefetch_pages,prefetch_used\n";

int sweep_write_csv(FILE *f, const struct sweep_view *v)
{
	const struct sweep *s = v->s;

	fputs(sweep_csv_header, f);
	for (size_t i = 0; i < s->nruns; i++) {
		const struct sweep_run *r = &s->runs[i];
		const struct runstats *t = &r->st;
		fprintf(f, "%s,%s,%" PRIu64 ",%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			   ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
			   ",%d,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", r->name, r->policy, r->localmem, t->files, t->faults, t->zero,
			t->refetch, t->file, t->wp, t->syscall, t->nostack, t->sampled_out, r->wall_s,
			r->slowdown, t->resident_peak, t->far_peak, t->vm_hwm, r->status,
			r->output_differs ? "differs" : "same", t->prefetch_hits, t->prefetch_pages,
			t->prefetch_used);
	}
	return ferror(f) ? -EIO : 0;
}

int sweep_write_sites_csv(FILE *f, const struct sweep_view *sv)
{
	const struct sweep *s = sv->s;
	const struct callsite *v;
	size_t n = callsites_get(sv->cs, &v);

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
	return ferror(f) ? -EIO : 0;
}

/* The curve: one series per policy; the ample run, where nothing is evicted, starts each. */
int sweep_write_curve(FILE *f, const struct sweep_view *v)
{
	const struct sweep *s = v->s;
	struct svg_curve_point pts[SWEEP_MAX_POLICIES][SWEEP_MAX_RUNS];
	struct svg_curve_series series[SWEEP_MAX_POLICIES];
	char sub[512], base[96], sz[32], ample[64];
	size_t pos = 0;

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
	return svg_curve_write(f, series, s->npolicies, &o);
}

/* ---- text tables ---- */

/* The run of the same size and policy without a prefetcher (series "2q" for "2q+readahead"), or
 * NULL: coverage is measured against it (faults avoided / re-fetches without the prefetcher). */
static const struct sweep_run *sweep_paired_none(const struct sweep *s, const struct sweep_run *r)
{
	const char *plus = r->ample ? NULL : strchr(r->policy, '+');
	if (!plus)
		return NULL;
	size_t n = (size_t)(plus - r->policy);
	for (size_t i = 0; i < s->nruns; i++) {
		const struct sweep_run *q = &s->runs[i];
		if (!q->ample && q->done && q->localmem == r->localmem && strlen(q->policy) == n &&
		    !strncmp(q->policy, r->policy, n))
			return q;
	}
	return NULL;
}

static bool sweep_prefetches(const struct sweep *s)
{
	for (size_t i = 0; i < s->nruns; i++)
		if (!s->runs[i].ample && strchr(s->runs[i].policy, '+'))
			return true;
	return false;
}

/* With --prefetch: the faults prefetched pages took (hits) and the coverage against the paired
 * run without a prefetcher ("-" for that run itself). */
static void sweep_put_prefetch(FILE *o, const struct sweep *s, const struct sweep_run *r)
{
	const struct sweep_run *none = sweep_paired_none(s, r);
	char cov[16] = "-";
	if (none && none->st.refetch)
		snprintf(cov, sizeof(cov), "%.1f%%", 100.0 * ((double)none->st.refetch - (double)r->st.refetch) /
							  (double)none->st.refetch);
	fprintf(o, " %10" PRIu64 " %9s", r->st.prefetch_hits, cov);
}

static void sweep_put_runs(FILE *o, const struct sweep *s)
{
	char sz[32], res[32], far[32];
	int wname = 16, wpol = 6;
	bool pf = sweep_prefetches(s);

	for (size_t i = 0; i < s->nruns; i++) {
		int n = (int)strlen(s->runs[i].name), p = s->runs[i].ample ? 1 : (int)strlen(s->runs[i].policy);
		wname = n > wname ? n : wname;
		wpol = p > wpol ? p : wpol;
	}
	fprintf(o, "%-*s %-*s %10s %10s %11s %10s %8s", wname, "RUN", wpol, "POLICY", "LOCALMEM", "FAULTS",
		"FIRST-TOUCH", "REFETCH", "FILE");
	if (pf)
		fprintf(o, " %10s %9s", "PF-HITS", "COVERAGE");
	fprintf(o, " %9s %9s %10s %10s  %s\n", "WALL(s)", "SLOWDOWN", "PEAK-RES", "PEAK-FAR", "OUTPUT");
	for (size_t i = 0; i < s->nruns; i++) {
		const struct sweep_run *r = &s->runs[i];
		svg_fmt_bytes(sz, sizeof(sz), (double)r->localmem);
		svg_fmt_bytes(res, sizeof(res), (double)r->st.resident_peak);
		svg_fmt_bytes(far, sizeof(far), (double)r->st.far_peak);
		fprintf(o, "%-*s %-*s %10s %10" PRIu64 " %11" PRIu64 " %10" PRIu64 " %8" PRIu64, wname, r->name,
			wpol, r->ample ? "-" : r->policy, sz, r->st.faults, r->st.zero, r->st.refetch, r->st.file);
		if (pf)
			sweep_put_prefetch(o, s, r);
		fprintf(o, " %9.2f %8.2fx %10s %10s  %s\n", r->wall_s, r->slowdown, res, far,
			r->output_differs ? r->differs_how : "same");
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

int sweep_write_text(FILE *f, const struct sweep_view *v)
{
	sweep_put_text(f, v->s, v->cs);
	return ferror(f) ? -EIO : 0;
}
