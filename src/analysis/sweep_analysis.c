/* What `fltrace sweep` makes of its runs before writing anything: each run's slowdown against its
 * baseline, and every callsite's faults in every run (one symbolizer for all of them). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "sweep.h"

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
static int sweep_load_run(const struct sweep *s, struct sweep_procs *ps, size_t run, const char *dir,
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
			if (s->note)
				s->note("sweep: %s: %s", l.v[i].path, err);
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
		if (s->note)
			s->note("sweep: reading the trace of run %zu/%zu: %s", i + 1, s->nruns, s->runs[i].name);
		err = sweep_load_run(s, &ps, i, s->runs[i].dir, sym);
	}
	if (!err) {
		if (s->note)
			s->note("sweep: symbolizing the callsites of %zu process%s", ps.n, ps.n == 1 ? "" : "es");
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

int sweep_analyse(struct sweep *s, struct callsites **cs)
{
	sweep_slowdowns(s);
	return sweep_callsites(s, cs);
}
