/* What `fltrace visualize` draws of one process (or of two runs, --diff): its faults loaded into
 * flamegraphs, a timeline, latency histograms and its top callsites, with what ran and how. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "picture.h"
#include "svg_flame.h"
#include "svg_latency.h"
#include "svg_timeline.h"

enum svg_kind picture_kind(uint8_t kind, uint8_t origin)
{
	if (origin == FT_ORIGIN_SYSCALL)
		return SVG_KIND_SYSCALL;
	if (kind == FT_KIND_PREFETCH)
		return SVG_KIND_PREFETCH;
	return kind <= FT_KIND_WP ? (enum svg_kind)kind : SVG_KIND_REFETCH;
}

enum svg_access picture_access(uint16_t flags)
{
	return (flags & FT_FLAG_WP) ? SVG_ACC_WP : (flags & FT_FLAG_WRITE) ? SVG_ACC_WRITE : SVG_ACC_READ;
}

/* Per fault: the timeline point, the latency sample, the counts. */
static int picture_fault_cb(void *arg, const struct trace *t, const struct ft_fault *f,
			const struct ft_stack *stack, const struct ft_region *region)
{
	struct picture_proc *vp = arg;
	enum svg_kind kind = picture_kind(f->kind, f->origin);
	const char *file = NULL;
	uint64_t y = f->addr;
	int err;

	vp->faults++;
	vp->by_kind[kind]++;
	vp->nostack += !stack;
	if (region && f->addr >= region->start) {
		file = region->path;
		y = region->offset + (f->addr - region->start);
	}
	err = svg_timeline_add(vp->tl, f->time_ns, y, kind, file);
	if (!err)
		err = svg_latency_add(vp->lat, kind, f->latency_ns);
	return err;
}

/* One symbolized frame as names, outermost inline first, appended to the memstream. */
static void picture_put_frame(const struct picture_proc *vp, FILE *m, const struct sym_frame *fr)
{
	if (vp->opts->names == PICTURE_NAMES_FUNC) {
		folded_put_frame(m, fr);
		return;
	}
	/* The earlier tool's "lib|file:line", one name per inline level. */
	const char *lb = strrchr(fr->lib, '/');
	for (unsigned i = fr->nr_locs; i-- > 0;) {
		const struct sym_loc *l = &fr->locs[i];
		const char *fb = strrchr(l->file, '/');
		fprintf(m, "%s|%s", lb ? lb + 1 : fr->lib, fb ? fb + 1 : l->file);
		if (l->line)
			fprintf(m, ":%u", l->line);
		else
			fputs(":?", m);
		if (i)
			fputc(';', m);
	}
}

/* Build the frame names of a row, outer to inner, with the access suffix on the leaf, and add
 * it to the flamegraphs it belongs to. */
static int picture_add_row(struct picture_proc *vp, const struct symbolizer *sym, const struct agg_row *r)
{
	enum svg_access acc = picture_access(r->flags);
	enum svg_kind kind = picture_kind(r->kind, r->origin);
	FILE *m = open_memstream(&vp->namebuf, &vp->namelen);
	size_t n = 0;
	int err = 0;

	if (!m)
		return -ENOMEM;
	/* Innermost first in the trace; the graph wants the root first. Frames are ';'-joined
	 * (folded_put_frame already turns ';' inside names into ':'). */
	for (uint32_t k = r->depth; k-- > 0;) {
		const struct sym_frame *fr = r->frames ? sym_frame(sym, r->frames[k]) : NULL;
		if (k + 1 != r->depth)
			fputc(';', m);
		if (fr)
			picture_put_frame(vp, m, fr);
		else
			fprintf(m, "0x%llx", (unsigned long long)r->ips[k]);
	}
	if (!r->depth)
		fputs("[no stack]", m);
	if (r->origin == FT_ORIGIN_SYSCALL) {
		const char *sc = trace_syscall_name(r->syscall_nr);
		if (sc)
			fprintf(m, ";[syscall %s]", sc);
		else
			fprintf(m, ";[syscall %d]", r->syscall_nr);
	}
	fprintf(m, " [%c]", svg_access_letter(acc));
	if (fclose(m))
		return -ENOMEM;

	n = 1;
	for (const char *p = vp->namebuf; *p; p++)
		n += *p == ';';
	if (n > vp->nframes_cap) {
		const char **fr = realloc(vp->frames, n * sizeof(*fr));
		if (!fr)
			return -ENOMEM;
		vp->frames = fr;
		vp->nframes_cap = n;
	}
	n = 0;
	for (char *p = vp->namebuf, *next; p; p = next) {
		next = strchr(p, ';');
		if (next)
			*next++ = 0;
		vp->frames[n++] = p;
	}
	if (vp->before)
		err = svg_flame_add_before(vp->all, vp->frames, n, r->count);
	else
		err = svg_flame_add(vp->all, vp->frames, n, r->count, acc, kind);
	if (!err && vp->alloc && r->kind == FT_KIND_ZERO)
		err = svg_flame_add(vp->alloc, vp->frames, n, r->count, acc, kind);
	free(vp->namebuf);
	vp->namebuf = NULL;
	return err;
}

static void picture_drop_header(struct picture_proc *vp)
{
	for (size_t i = 0; vp->argv && i < vp->argc; i++)
		free(vp->argv[i]);
	free(vp->argv);
	free(vp->exe);
	vp->argv = NULL;
	vp->exe = NULL;
	vp->argc = 0;
}

/* Keep the header of the latest generation: after exec() the program that did the work is
 * the last one (a shell or `env` usually comes first); earlier ones are listed in execs. */
static int picture_keep_header(struct picture_proc *vp, const char *path, char *err, size_t errlen)
{
	struct trace *t;
	int ret = trace_open(path, &t, err, errlen);
	if (ret)
		return ret;
	vp->nprocs++;
	if (vp->merged && vp->has_hdr && t->hdr->start_realtime_ns >= vp->hdr.start_realtime_ns) {
		/* All processes: the header of the one that started first, the tree's root. */
		trace_close(t);
		return 0;
	}
	if (vp->has_hdr && vp->argc && !vp->merged) {
		size_t len = strlen(vp->execs);
		snprintf(vp->execs + len, sizeof(vp->execs) - len, "%s%s", len ? " -> " : "", vp->argv[0]);
	}
	picture_drop_header(vp);
	vp->hdr = *t->hdr;
	vp->prefetch = t->prefetch;
	vp->has_hdr = true;
	vp->page_size = t->hdr->page_size;
	if (!vp->t0 || t->hdr->start_realtime_ns < vp->t0)
		vp->t0 = t->hdr->start_realtime_ns;
	vp->exe = strdup(t->exe);
	vp->argv = calloc(t->argc + 1, sizeof(*vp->argv));
	if (!vp->exe || !vp->argv)
		ret = -ENOMEM;
	for (uint32_t i = 0; !ret && i < t->argc; i++) {
		if (!(vp->argv[i] = strdup(t->argv[i])))
			ret = -ENOMEM;
		vp->argc = i + 1;
	}
	trace_close(t);
	if (ret)
		snprintf(err, errlen, "out of memory");
	return ret;
}

/* Symbolize the rows of one loaded trace and add them to the flamegraphs. */
static int picture_add_process(struct picture_proc *vp, struct an_process *p)
{
	struct symbolizer *sym = sym_new();
	struct agg_row **rows;
	size_t n;
	int ret = sym ? agg_symbolize(p->rows, sym, p->maps) : -ENOMEM;

	if (!ret)
		ret = sym_resolve(sym);
	n = ret ? 0 : agg_rows(p->rows, &rows);
	for (size_t k = 0; !ret && k < n; k++)
		ret = picture_add_row(vp, sym, rows[k]);
	if (!ret && vp->sites) /* the index's top callsites (not drawn for --diff) */
		ret = callsites_add(vp->sites, p->rows, sym, CALLSITES_BY_KIND);
	sym_free(sym);
	return ret;
}

/* Load every generation of one pid: entries [first, last) of the sorted trace list. */
/* The processes page's line of one pid: its latest generation's command line and parent, and the
 * faults loaded since (before, kinds). */
static int picture_line(const struct picture_proc *vp, const char *path, uint64_t before,
			const uint64_t *kinds, struct svg_index_proc *line, char *err, size_t errlen)
{
	struct trace *t;
	int ret = trace_open(path, &t, err, errlen);

	if (ret)
		return ret;
	*line = (struct svg_index_proc){ .pid = t->pid, .ppid = t->hdr->ppid,
					 .faults = vp->faults - before };
	for (int k = 0; k < SVG_KIND_NR; k++)
		line->by_kind[k] = vp->by_kind[k] - kinds[k];
	line->cmdline = an_join_args(t->argv, t->argc, t->exe, 240);
	trace_close(t);
	if (!line->cmdline) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int picture_proc_load(struct picture_proc *vp, const struct trace_list *l, size_t first, size_t last,
		      struct svg_index_proc *line, char *err, size_t errlen)
{
	uint64_t before = vp->faults, kinds[SVG_KIND_NR];

	memcpy(kinds, vp->by_kind, sizeof(kinds));
	for (size_t i = first; i < last; i++) {
		struct an_process *p = NULL;
		int ret;

		if ((ret = picture_keep_header(vp, l->v[i].path, err, errlen)))
			return ret;
		ret = an_process_load(l->v[i].path, &vp->opts->filter, picture_fault_cb, vp, &p, err, errlen);
		if (ret)
			return ret;
		if (p->warning[0]) {
			if (vp->opts->note)
				vp->opts->note(l->v[i].path, p->warning);
			snprintf(vp->warning, sizeof(vp->warning), "%s: %s", l->v[i].path, p->warning);
		}
		ret = picture_add_process(vp, p);
		an_process_free(p);
		if (ret) {
			snprintf(err, errlen, "%s: %s", l->v[i].path,
				 ret == -ENOMEM ? "out of memory; draw one process at a time (--pid)" :
				 strerror(-ret));
			return ret;
		}
	}
	return line && last > first ? picture_line(vp, l->v[last - 1].path, before, kinds, line, err,
						   errlen) : 0;
}

void picture_proc_free(struct picture_proc *vp)
{
	svg_flame_free(vp->all);
	svg_flame_free(vp->alloc);
	svg_timeline_free(vp->tl);
	svg_latency_free(vp->lat);
	callsites_free(vp->sites);
	picture_drop_header(vp);
	free(vp->frames);
	free(vp->namebuf);
}

int picture_diff_load(struct picture_proc *vp, const char *dir, bool before, char *err, size_t errlen)
{
	struct trace_list l = { 0 };
	int ret = trace_list_dir(dir, &l);

	if (ret) {
		snprintf(err, errlen, "cannot read %s: %s; give two directories of recordings to "
			 "--diff", dir, strerror(-ret));
		return ret;
	}
	vp->before = before;
	if (!l.n) {
		snprintf(err, errlen, "no trace (fltrace-data-trace-*.bin) in %s; give the output "
			 "directory of a 'fltrace record' run to --diff", dir);
		ret = -ENOENT;
	}
	for (size_t i = 0; i < l.n && !ret; i++) {
		struct an_process *p = NULL;

		if (vp->opts->has_pid && l.v[i].pid != vp->opts->pid)
			continue;
		ret = an_process_load(l.v[i].path, &vp->opts->filter, NULL, NULL, &p, err, errlen);
		if (ret)
			break;
		ret = picture_add_process(vp, p);
		an_process_free(p);
		if (ret)
			snprintf(err, errlen, "%s: %s", l.v[i].path, strerror(-ret));
	}
	trace_list_free(&l);
	return ret;
}

int picture_proc_init(struct picture_proc *vp, const struct picture_opts *o, uint32_t pid)
{
	*vp = (struct picture_proc){ .opts = o, .pid = pid };
	vp->all = svg_flame_new();
	vp->alloc = svg_flame_new();
	vp->tl = svg_timeline_new();
	vp->lat = svg_latency_new();
	vp->sites = callsites_new(SVG_KIND_NR);
	if (vp->sites)
		callsites_by_caller(vp->sites);
	return vp->all && vp->alloc && vp->tl && vp->lat && vp->sites ? 0 : -ENOMEM;
}

const char *picture_proc_suffix(const struct picture_proc *vp, char *buf, size_t len)
{
	if (vp->merged)
		snprintf(buf, len, "all");
	else
		snprintf(buf, len, "%u", vp->pid);
	return buf;
}

int picture_diff_init(struct picture_proc *vp, const struct picture_opts *o)
{
	*vp = (struct picture_proc){ .opts = o, .all = svg_flame_new() };
	return vp->all ? 0 : -ENOMEM;
}
