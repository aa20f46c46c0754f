/* The picture writers of `fltrace visualize`, rows of the writers table (report_writers.c): the
 * flamegraphs, the timeline, the latency histograms, the index page and the --diff flamegraph. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fltrace/policies.h>
#include <fltrace/prefetchers.h>
#include <fltrace/statsline.h>

#include "allocsite.h"
#include "picture.h"
#include "report.h"
#include "svg_flame.h"
#include "svg_index.h"
#include "svg_latency.h"
#include "svg_timeline.h"

#define PICTURE_INDEX_SITES 12 /* callsites in the index's table: with the flamegraph on the first screen */

static const char *picture_cmd(const struct picture_proc *p)
{
	const char *cmd = p->argc ? p->argv[0] : p->exe ? p->exe : "?";
	const char *base = strrchr(cmd, '/');
	return base ? base + 1 : cmd;
}

/* The second line of every picture: the command line, cut well before it would overflow any
 * width, and the kinds shown. */
static void picture_subtitle(const struct picture_view *v, char *sub, size_t len)
{
	size_t pos = 0;
	sub[0] = 0;
	for (size_t i = 0; i < v->p->argc && pos < 200; i++)
		pos += (size_t)snprintf(sub + pos, len - pos, "%s%s", i ? " " : "", v->p->argv[i]);
	if (pos >= 200)
		snprintf(sub + 196, len - 196, " ...");
	if (v->o->kinds_text[0])
		snprintf(sub + strlen(sub), len - strlen(sub), "   [kinds: %s]", v->o->kinds_text);
}

/* Whose pictures: "pid 42", or "all 3 processes" merged. */
static const char *picture_who(const struct picture_proc *p, char *buf, size_t len)
{
	if (p->merged)
		snprintf(buf, len, "all %zu processes", p->nprocs);
	else
		snprintf(buf, len, "pid %u", p->pid);
	return buf;
}

static void picture_flame_title(const struct picture_view *v, char *title, size_t len)
{
	char who[64];

	if (v->o->title)
		snprintf(title, len, "%s", v->o->title);
	else
		snprintf(title, len, "Page faults of %s (%s)", picture_cmd(v->p),
			 picture_who(v->p, who, sizeof(who)));
}

static int picture_flame(FILE *out, const struct picture_view *v, const struct svg_flame *fl,
			 const char *suffix)
{
	char title[512], full[600], sub[1024];
	picture_flame_title(v, title, sizeof(title));
	snprintf(full, sizeof(full), "%s%s", title, suffix);
	picture_subtitle(v, sub, sizeof(sub));
	struct svg_flame_opts fo = { .title = full, .subtitle = sub, .width = v->o->width,
				     .minwidth = v->o->minwidth, .inverted = v->o->inverted,
				     .fold = v->o->fold };
	return svg_flame_write(fl, out, &fo);
}

int picture_draw_flamegraph(FILE *out, const struct picture_view *v)
{
	return picture_flame(out, v, v->p->all, "");
}

int picture_draw_alloc(FILE *out, const struct picture_view *v)
{
	return picture_flame(out, v, v->p->alloc, ": first touches (allocations)");
}

/* A leaf's faults of one class, coloured and told in its tooltip as the flamegraph of faults does. */
static int picture_allocsite_add(void *arg, const char *const *frames, size_t n, uint64_t count, unsigned cls)
{
	uint8_t kind, origin;
	uint16_t flags;
	as_class_fields(cls, &kind, &origin, &flags);
	return svg_flame_add(arg, frames, n, count, picture_access(flags), picture_kind(kind, origin));
}

/* Faults by the allocation site of the memory they hit: allocation stacks outermost first, the
 * line that faulted on top (report --by alloc drawn). */
int picture_draw_allocsite(FILE *out, const struct picture_view *v)
{
	struct as_report r;
	/* No warning: loading this trace for the other pictures gave it. */
	if (as_report_load(v->o->indir, v->p->merged ? -1 : (long)v->p->pid, &v->o->filter, &r, NULL,
			   v->err, v->errlen)) {
		as_report_free(&r);
		return -EINVAL;
	}
	struct svg_flame *fl = svg_flame_new();
	int rc = fl ? as_report_foreach_stack(&r, picture_allocsite_add, fl) : -ENOMEM;
	as_report_free(&r);
	if (!rc)
		rc = picture_flame(out, v, fl, ": by allocation site");
	svg_flame_free(fl);
	return rc;
}

int picture_draw_timeline(FILE *out, const struct picture_view *v)
{
	char title[512], sub[1024], who[64];
	snprintf(title, sizeof(title), "Faults over time: %s (%s)", picture_cmd(v->p),
		 picture_who(v->p, who, sizeof(who)));
	picture_subtitle(v, sub, sizeof(sub));
	struct svg_timeline_opts to = { .title = title, .subtitle = sub, .width = v->o->width,
					.t0_ns = v->p->t0, .page_size = v->p->page_size };
	return svg_timeline_write(v->p->tl, out, &to);
}

int picture_draw_latency(FILE *out, const struct picture_view *v)
{
	char title[512], sub[1024], who[64];
	snprintf(title, sizeof(title), "Fault service time: %s (%s)", picture_cmd(v->p),
		 picture_who(v->p, who, sizeof(who)));
	picture_subtitle(v, sub, sizeof(sub));
	struct svg_latency_opts lo = { .title = title, .subtitle = sub, .width = v->o->width };
	return svg_latency_write(v->p->lat, out, &lo);
}

/* A run of `fltrace sweep` (DIR/<run>) has its slowdown in DIR/sweep.csv, the row named <run>. */
static bool picture_sweep_slowdown(const char *indir, double *slowdown, char *of, size_t len)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], *line = NULL;
	size_t cap = 0, nlen;
	const char *name;
	bool found = false, ample = false;
	FILE *f;

	if (!realpath(indir, dir) || !(name = strrchr(dir, '/')) || name == dir)
		return false;
	name++;
	nlen = strlen(name);
	snprintf(path, sizeof(path), "%.*s/sweep.csv", (int)(name - 1 - dir), dir);
	if (!(f = fopen(path, "re")))
		return false;
	/* Columns 1 and 14 (run, slowdown) as sweep writes them: names never hold a comma. */
	while (getline(&line, &cap, f) > 0) {
		const char *p = line;
		ample |= !strncmp(line, "ample,", 6);
		if (strncmp(line, name, nlen) || line[nlen] != ',')
			continue;
		for (int col = 1; col < 14 && p; col++)
			if ((p = strchr(p, ',')))
				p++;
		found = p && sscanf(p, "%lf", slowdown) == 1 && *slowdown > 0;
	}
	free(line);
	fclose(f);
	snprintf(of, len, "%s", ample ? "the ample run of its sweep" :
		 "the run at the largest -L of the same policy in its sweep");
	return found;
}

/* The options the run was recorded with, from its trace header. */
static void picture_index_options(const struct picture_proc *p, struct svg_index_info *in,
				  char opt[][64])
{
	const struct ft_file_header *h = &p->hdr;
	char s1[32], s2[32];
	svg_fmt_bytes(s1, sizeof(s1), (double)h->localmem_bytes);
	svg_fmt_bytes(s2, sizeof(s2), (double)h->maxmem_bytes);
	snprintf(opt[0], 64, "%s", s1);
	snprintf(opt[1], 64, "%s", s2);
	snprintf(opt[2], 64, "%u", h->handler_threads);
	snprintf(opt[3], 64, "%u%s", h->samplerate, h->samplerate ? " faults/s" : " (all)");
	snprintf(opt[4], 64, "%s", fltrace_policy_name(h->policy));
	snprintf(opt[5], 64, "%u", h->stack_depth);
	snprintf(opt[6], 64, "%llu", (unsigned long long)h->page_size);
	snprintf(opt[7], 64, "%s", fltrace_prefetch_name(p->prefetch));
	static const char *const names[] = { "local memory (-L)", "max memory (-M)",
		"handler threads (-C)", "sample rate (-S)", "policy", "stack depth", "page size",
		"prefetcher" };
	for (size_t i = 0; i < 8; i++) {
		in->options[i].name = names[i];
		in->options[i].value = opt[i];
	}
	in->noptions = 8;
}

/* The index embeds every picture of the writers table that has a caption, in its order. */
static void picture_index_images(const struct picture_proc *p, struct svg_index_info *in,
				 char files[][64])
{
	size_t n;
	const struct report_writer *w = report_writers(&n);
	in->nimages = 0;
	for (size_t i = 0; i < n && in->nimages < SVG_INDEX_MAX_IMAGES; i++) {
		if (w[i].cmd != WR_VISUALIZE || !w[i].caption)
			continue;
		char sfx[16];
		report_writer_file(&w[i], picture_proc_suffix(p, sfx, sizeof(sfx)), files[in->nimages], 64);
		in->images[in->nimages].caption = w[i].caption;
		in->images[in->nimages].file = files[in->nimages];
		in->nimages++;
	}
}

/* The index: what ran, with which options, what happened, then the pictures. */
int picture_draw_index(FILE *out, const struct picture_view *v)
{
	const struct picture_proc *p = v->p;
	struct svg_index_info in = { 0 };
	char opt[8][64], files[SVG_INDEX_MAX_IMAGES][64], slow_of[96];
	char *stats = p->merged ? NULL : stats_last_line(v->o->indir, p->pid);

	in.pid = p->pid;
	in.merged = p->merged ? p->nprocs : 0;
	in.exe = p->exe;
	in.argv = (const char *const *)p->argv;
	in.argc = p->argc;
	if (p->has_hdr)
		picture_index_options(p, &in, opt);
	if (p->execs[0]) {
		in.options[in.noptions].name = "earlier execs of this pid";
		in.options[in.noptions++].value = p->execs;
	}
	if (v->o->kinds_text[0]) {
		in.options[in.noptions].name = "shown kinds (--kind)";
		in.options[in.noptions++].value = v->o->kinds_text;
	}
	in.faults = p->faults;
	memcpy(in.by_kind, p->by_kind, sizeof(in.by_kind));
	in.nostack = p->nostack;
	in.stats_line = stats;
	if (stats && statsline_get(stats, strlen(stats), "vm_hwm", &in.peak_bytes) == 0)
		in.has_peak = true;
	in.warning = p->warning;
	in.localmem_bytes = p->has_hdr ? p->hdr.localmem_bytes : 0;
	in.has_slowdown = picture_sweep_slowdown(v->o->indir, &in.slowdown, slow_of, sizeof(slow_of));
	in.slowdown_of = slow_of;
	const struct callsite *sites = NULL;
	size_t nsites = callsites_sort(p->sites, NULL) ? 0 : callsites_get(p->sites, &sites);
	in.sites = sites;
	in.nsites = nsites < PICTURE_INDEX_SITES ? nsites : PICTURE_INDEX_SITES;
	picture_index_images(p, &in, files);
	int rc = svg_index_write(out, &in);
	free(stats);
	return rc;
}

/* --diff A B: widths are B's faults, colours the change since A. */
int picture_draw_diff(FILE *out, const struct picture_view *v)
{
	char title[1024];
	if (v->o->title)
		snprintf(title, sizeof(title), "%s", v->o->title);
	else
		snprintf(title, sizeof(title), "Page faults: %s -> %s", v->o->diff_a, v->o->diff_b);
	struct svg_flame_opts fo = { .title = title, .subtitle = v->o->kinds_text[0] ?
				     v->o->kinds_text : NULL, .width = v->o->width,
				     .minwidth = v->o->minwidth, .inverted = v->o->inverted,
				     .diff = true, .fold = v->o->fold };
	return svg_flame_write(v->p->all, out, &fo);
}

static int picture_proc_cmp(const void *a, const void *b)
{
	const struct svg_index_proc *x = a, *y = b;

	if (x->faults != y->faults)
		return x->faults > y->faults ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The processes page: ranked by faults, each row linked to the process's index page (a row of
 * the writers table), or, merged, one link to the page of them all. */
int picture_draw_processes(FILE *out, struct svg_index_proc *v, size_t n, bool merged)
{
	const struct report_writer *index = NULL, *w;
	size_t nw;
	char (*pages)[64] = calloc(n ? n : 1, sizeof(*pages)), all[64];
	int rc;

	if (!pages)
		return -ENOMEM;
	w = report_writers(&nw);
	for (size_t i = 0; i < nw; i++)
		if (w[i].cmd == WR_VISUALIZE && w[i].draw == picture_draw_index)
			index = &w[i];
	qsort(v, n, sizeof(*v), picture_proc_cmp);
	for (size_t i = 0; i < n; i++) {
		char pid[16];
		snprintf(pid, sizeof(pid), "%u", v[i].pid);
		report_writer_file(index, pid, pages[i], sizeof(pages[i]));
		v[i].page = merged ? NULL : pages[i];
	}
	report_writer_file(index, "all", all, sizeof(all));
	rc = svg_index_write_processes(out, v, n, merged ? all : NULL);
	for (size_t i = 0; i < n; i++)
		v[i].page = NULL;
	free(pages);
	return rc;
}
