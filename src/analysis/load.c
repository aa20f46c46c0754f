/* Process loading: one trace file streamed through a filter into a by-stack table and a maps
 * history; the first step of both `report` and `visualize`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

void an_process_free(struct an_process *p)
{
	if (!p)
		return;
	maps_free(p->maps);
	agg_free(p->rows);
	free(p->exe);
	free(p->cmdline);
	free(p->path);
	free(p);
}

char *an_join_args(const char *const *argv, size_t argc, const char *fallback, size_t max)
{
	char *out = malloc(max + 4);
	size_t pos = 0;

	if (!out)
		return NULL;
	out[0] = 0;
	for (size_t i = 0; i < argc && pos < max; i++)
		pos += (size_t)snprintf(out + pos, max + 1 - pos, "%s%s", i ? " " : "", argv[i]);
	if (pos >= max)
		strcpy(out + max, "...");
	if (!out[0])
		snprintf(out, max + 1, "%s", fallback);
	return out;
}

/* Tables indexed by record id; ids are dense from 0, so an array grows to the largest. */
static int an_index_put(const void ***v, size_t *cap, uint32_t id, const void *rec)
{
	if (id >= *cap) {
		size_t c = *cap ? *cap : 256;
		const void **n;
		while (c <= id)
			c *= 2;
		n = realloc(*v, c * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + *cap, 0, (c - *cap) * sizeof(*n));
		*v = n;
		*cap = c;
	}
	(*v)[id] = rec;
	return 0;
}

int an_process_load(const char *path, const struct agg_filter *f, an_fault_cb cb, void *arg,
		    struct an_process **out, char *err, size_t errlen)
{
	const void **stacks = NULL, **regions = NULL;
	size_t nstacks = 0, nregions = 0;
	struct an_process *p;
	const struct ft_rec_hdr *h;
	struct trace *t;
	int ret;

	*out = NULL;
	ret = trace_open(path, &t, err, errlen);
	if (ret)
		return ret;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->maps = maps_new()) || !(p->rows = agg_new()) ||
	    !(p->exe = strdup(t->exe)) || !(p->path = strdup(path)) ||
	    !(p->cmdline = an_join_args(t->argv, t->argc, t->exe, 240))) {
		ret = -ENOMEM;
		goto out;
	}
	p->pid = t->pid;
	p->gen = t->gen;
	p->ppid = t->hdr->ppid;
	p->start_ns = t->hdr->start_realtime_ns;
	while ((h = trace_next(t))) {
		switch (h->type) {
		case FT_REC_STACK:
			ret = an_index_put(&stacks, &nstacks, ((const struct ft_stack *)h)->id, h);
			break;
		case FT_REC_REGION:
			ret = an_index_put(&regions, &nregions, ((const struct ft_region *)h)->id, h);
			break;
		case FT_REC_MAPS: {
			const struct ft_maps *m = (const void *)h;
			ret = maps_add_snapshot(p->maps, m->time_ns, m->text, m->len);
			break;
		}
		case FT_REC_OBJECT:
			ret = maps_add_object(p->maps, (const void *)h);
			break;
		case FT_REC_FAULT: {
			const struct ft_fault *fl = (const void *)h;
			const struct ft_stack *st = NULL;
			const struct ft_region *rg = NULL;

			p->faults_seen++;
			if (f && !agg_filter_match(f, t->hdr, fl))
				break;
			p->faults_kept++;
			if (fl->stack_id != FT_NO_STACK && fl->stack_id < nstacks)
				st = stacks[fl->stack_id];
			if (fl->kind == FT_KIND_FILE && fl->region < nregions)
				rg = regions[fl->region];
			ret = agg_add(p->rows, t->hdr, fl, st, rg);
			if (!ret && cb)
				ret = cb(arg, t, fl, st, rg);
			break;
		}
		}
		if (ret)
			break;
	}
	if (ret && ret != -ENOMEM)
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	else if (ret)
		snprintf(err, errlen, "out of memory");
	if (t->warning[0])
		snprintf(p->warning, sizeof(p->warning), "%s", t->warning);
	p->damaged = t->damaged;
out:
	free(stacks);
	free(regions);
	trace_close(t);
	if (ret) {
		if (ret == -ENOMEM)
			snprintf(err, errlen, "out of memory; report fewer processes (--pid)");
		an_process_free(p);
		return ret;
	}
	*out = p;
	return 0;
}
