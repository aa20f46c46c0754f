/* `fltrace visualize`: reads every trace of a directory through the analysis API and draws, per
 * process, the flamegraphs, the faults-over-time and latency pictures and an index page. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fltrace/config.h>
#include <fltrace/parse.h>
#include <fltrace/statsline.h>

#include "../src/analysis/analysis.h"
#include "../src/analysis/allocsite.h"
#include "../src/analysis/callsites.h"
#include "../src/analysis/runstats.h"
#include "../src/analysis/svg_flame.h"
#include "../src/analysis/svg_index.h"
#include "../src/analysis/svg_latency.h"
#include "../src/analysis/svg_timeline.h"
#include "builtin.h"
#include "cli.h"

#define VIS_MAX_WIDTH 100000u
#define VIS_INDEX_SITES 15 /* callsites in the index's table */

enum vis_names { VIS_NAMES_FUNC = 0, VIS_NAMES_LIB = 1 };

/* The options, parsed once. */
struct vis_env {
	const char *indir;
	const char *outdir;   /* NULL: indir */
	const char *title;    /* NULL: "<exe> (pid N)" */
	unsigned width;
	double minwidth;
	bool inverted;
	bool has_pid;
	uint32_t pid;
	enum vis_names names;
	struct agg_filter filter;
	char kinds_text[96];  /* the --kind value, for subtitles */
	const char *diff_a, *diff_b; /* --diff A B */
};

enum { OPT_TITLE = 256, OPT_WIDTH, OPT_MINWIDTH, OPT_INVERTED, OPT_KIND, OPT_PID, OPT_NAMES,
       OPT_DIFF };

static const struct option vis_longopts[] = {
	{ "input", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "title", required_argument, NULL, OPT_TITLE },
	{ "width", required_argument, NULL, OPT_WIDTH },
	{ "minwidth", required_argument, NULL, OPT_MINWIDTH },
	{ "inverted", no_argument, NULL, OPT_INVERTED },
	{ "kind", required_argument, NULL, OPT_KIND },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "names", required_argument, NULL, OPT_NAMES },
	{ "diff", required_argument, NULL, OPT_DIFF },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void vis_help(void)
{
	printf(
"usage: fltrace visualize [-i <dir>] [-o <dir>] [options]\n"
"\n"
"Draws the traces of a directory (fltrace-data-trace-<pid>-<n>.bin, as written by\n"
"'fltrace record'). For every process it writes:\n"
"  fltrace-data-flamegraph-<pid>.svg        all faults, by stack (click to zoom, Ctrl-F to search)\n"
"  fltrace-data-flamegraph-alloc-<pid>.svg  first-touch (zero-page, \"allocation\") faults only\n"
"  fltrace-data-flamegraph-allocsite-<pid>.svg  faults by the allocation site of the memory hit\n"
"  fltrace-data-timeline-<pid>.svg          faulting address (or file offset) over time, fault rate\n"
"  fltrace-data-latency-<pid>.svg           fault service time by kind, log2 histograms\n"
"  fltrace-data-index-<pid>.html            the run's summary with all of the above: open this one\n"
"Frames are named 'func (file:line)'; a leaf ends in [r], [w] or [p] (read, write,\n"
"write-protect) and is coloured by the fault kind, its shade by the access.\n"
"\n"
"options:\n"
"  -i, --input <dir>     where the traces are (default: the current directory)\n"
"  -o, --output <dir>    where the pictures go (default: the input directory; created if\n"
"                        missing)\n"
"      --title <text>    title of the flamegraphs (default: the command and pid)\n"
"      --width <px>      width of the pictures (default 1200)\n"
"      --minwidth <px>   leave out flamegraph frames narrower than this (default 0.1)\n"
"      --inverted        icicle layout: callers at the top, growing down\n"
"      --kind <list>     only faults of these kinds, comma-separated: zero, refetch, file,\n"
"                        wp, syscall (taken inside a system call)\n"
"      --pid <pid>       only this process (default: every process of the directory)\n"
"      --names <style>   frame names: func ('func (file:line)', default) or lib\n"
"                        ('lib|file:line', as the earlier tool wrote them)\n"
"      --diff <A> <B>    a differential flamegraph of two recordings instead,\n"
"                        fltrace-data-flamegraph-diff.svg: widths are B's faults, red frames\n"
"                        grew since A, blue ones shrank (-o sets where it goes)\n"
"  -h, --help            this help\n"
"\n"
"exit status: 0 when every picture was written; 1 when there is no trace or one could not be\n"
"read or written; 2 for a usage error.\n"
"\n"
"examples:\n"
"  fltrace record -L 140 -M 1000 -- ./bfs -g 20 -n 1 && fltrace visualize\n"
"      trace, then draw; open fltrace-data-index-<pid>.html in a browser\n"
"  fltrace visualize -i runs/full -o /tmp/pics --width 1800 --minwidth 1\n"
"      wide pictures of a trace recorded with -o runs/full, tiny frames left out\n"
"  fltrace visualize --kind refetch,wp --inverted --title 'bfs at 140 MB'\n"
"      only faults that far memory caused, as an icicle graph\n"
"  fltrace visualize --pid 4242\n"
"      one process of a traced process tree\n"
"  firefox 'fltrace-data-flamegraph-4242.svg#s=malloc'\n"
"      open a flamegraph with the frames matching 'malloc' highlighted (#z=<frame> zooms)\n");
}

static int vis_parse_kinds(struct vis_env *env, const char *arg)
{
	char buf[96];
	char *save = NULL;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", arg);
	snprintf(env->kinds_text, sizeof(env->kinds_text), "%s", arg);
	env->filter.kinds = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k = svg_kind_parse(tok);
		if (k < 0)
			return -EINVAL;
		/* svg kinds 0..3 are the trace kinds, 4 is "inside a syscall": the filter's bits. */
		env->filter.kinds |= 1u << k;
	}
	return env->filter.kinds ? 0 : -EINVAL;
}

static int vis_parse(int argc, char **argv, struct vis_env *env)
{
	uint64_t v;
	int c, err;

	*env = (struct vis_env){ .indir = ".", .width = 1200, .minwidth = 0.1 };
	optind = 0; /* glibc: full re-initialisation */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:h", vis_longopts, NULL)) != -1) {
		switch (c) {
		case 'i': env->indir = optarg; break;
		case 'o': env->outdir = optarg; break;
		case OPT_TITLE: env->title = optarg; break;
		case OPT_INVERTED: env->inverted = true; break;
		case OPT_WIDTH:
			err = parse_u64(optarg, 400, VIS_MAX_WIDTH, &v);
			if (err)
				return cli_error(CLI_EXIT_USAGE, "visualize", "--width %s: %s; give pixels "
						 "from 400 to %u, e.g. --width 1800", optarg,
						 parse_strerror(err), VIS_MAX_WIDTH);
			env->width = (unsigned)v;
			break;
		case OPT_MINWIDTH: {
			char *end;
			errno = 0;
			env->minwidth = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(env->minwidth >= 0) || env->minwidth > 1000)
				return cli_error(CLI_EXIT_USAGE, "visualize", "--minwidth %s: not a width "
						 "in pixels; give e.g. --minwidth 0.5 (0 draws every frame)", optarg);
			break;
		}
		case OPT_KIND:
			if (vis_parse_kinds(env, optarg))
				return cli_error(CLI_EXIT_USAGE, "visualize", "--kind %s: unknown kind; give "
						 "a comma-separated list of zero, refetch, file, wp, syscall", optarg);
			break;
		case OPT_PID:
			err = parse_u64(optarg, 1, UINT32_MAX, &v);
			if (err)
				return cli_error(CLI_EXIT_USAGE, "visualize", "--pid %s: %s; give the pid of a "
						 "trace file fltrace-data-trace-<pid>-<n>.bin", optarg, parse_strerror(err));
			env->has_pid = true;
			env->pid = (uint32_t)v;
			break;
		case OPT_NAMES:
			if (!strcmp(optarg, "func"))
				env->names = VIS_NAMES_FUNC;
			else if (!strcmp(optarg, "lib"))
				env->names = VIS_NAMES_LIB;
			else
				return cli_error(CLI_EXIT_USAGE, "visualize", "--names %s: unknown style; "
						 "give func or lib", optarg);
			break;
		case OPT_DIFF:
			env->diff_a = optarg;
			break;
		case 'h':
			vis_help();
			return -1;
		case ':':
			return cli_error(CLI_EXIT_USAGE, "visualize", "%s needs a value; run 'fltrace "
					 "visualize --help'", argv[optind - 1]);
		default:
			return cli_error(CLI_EXIT_USAGE, "visualize", "%s: unknown option; run 'fltrace "
					 "visualize --help'", argv[optind - 1]);
		}
	}
	if (env->diff_a) {
		if (optind >= argc)
			return cli_error(CLI_EXIT_USAGE, "visualize", "--diff needs two trace "
					 "directories; give --diff A B");
		env->diff_b = argv[optind++];
	}
	if (optind < argc)
		return cli_error(CLI_EXIT_USAGE, "visualize", "%s: unexpected argument; give the "
				 "trace directory with -i <dir>", argv[optind]);
	if (!env->outdir)
		env->outdir = env->indir;
	else if ((err = cli_mkdir_p(env->outdir)) < 0)
		return cli_error(CLI_EXIT_FAIL, env->outdir, "cannot create the output directory (%s); "
				 "give a writable directory with -o DIR", strerror(-err));
	return 0;
}

/* ---- one process ---- */

/* Everything drawn for one pid (all of its exec generations). */
struct vis_proc {
	const struct vis_env *env;
	uint32_t pid;
	struct svg_flame *all, *alloc;
	struct svg_timeline *tl;
	struct svg_latency *lat;
	struct callsites *sites;  /* by line, in columns by kind: the index's table */
	uint64_t faults, by_kind[SVG_KIND_NR], nostack;
	uint64_t t0;
	uint64_t page_size;
	/* From the first generation's header: what ran and how. */
	char *exe;
	char **argv;
	size_t argc;
	struct ft_file_header hdr;
	bool has_hdr;
	char execs[512];          /* argv[0] of earlier generations, "a -> b" */
	char warning[512];
	/* Frame-name scratch, reused across rows. */
	char *namebuf;
	size_t namelen;
	const char **frames;
	size_t nframes_cap;
	bool before;              /* --diff: rows of the earlier run */
};

static enum svg_kind vis_kind(uint8_t kind, uint8_t origin)
{
	if (origin == FT_ORIGIN_SYSCALL)
		return SVG_KIND_SYSCALL;
	return kind <= FT_KIND_WP ? (enum svg_kind)kind : SVG_KIND_REFETCH;
}

static enum svg_access vis_access(uint16_t flags)
{
	return (flags & FT_FLAG_WP) ? SVG_ACC_WP : (flags & FT_FLAG_WRITE) ? SVG_ACC_WRITE : SVG_ACC_READ;
}

/* Per fault: the timeline point, the latency sample, the counts. */
static int vis_fault_cb(void *arg, const struct trace *t, const struct ft_fault *f,
			const struct ft_stack *stack, const struct ft_region *region)
{
	struct vis_proc *vp = arg;
	enum svg_kind kind = vis_kind(f->kind, f->origin);
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
static void vis_put_frame(const struct vis_proc *vp, FILE *m, const struct sym_frame *fr)
{
	if (vp->env->names == VIS_NAMES_FUNC) {
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
static int vis_add_row(struct vis_proc *vp, const struct symbolizer *sym, const struct agg_row *r)
{
	enum svg_access acc = vis_access(r->flags);
	enum svg_kind kind = vis_kind(r->kind, r->origin);
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
			vis_put_frame(vp, m, fr);
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

static void vis_drop_header(struct vis_proc *vp)
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
static int vis_keep_header(struct vis_proc *vp, const char *path, char *err, size_t errlen)
{
	struct trace *t;
	int ret = trace_open(path, &t, err, errlen);
	if (ret)
		return ret;
	if (vp->has_hdr && vp->argc) {
		size_t len = strlen(vp->execs);
		snprintf(vp->execs + len, sizeof(vp->execs) - len, "%s%s", len ? " -> " : "", vp->argv[0]);
	}
	vis_drop_header(vp);
	vp->hdr = *t->hdr;
	vp->has_hdr = true;
	vp->page_size = t->hdr->page_size;
	if (!vp->t0 || t->hdr->start_realtime_ns < vp->t0)
		vp->t0 = t->hdr->start_realtime_ns;
	vp->exe = strdup(t->exe);
	vp->argv = calloc(t->hdr->nr_args + 1, sizeof(*vp->argv));
	if (!vp->exe || !vp->argv)
		ret = -ENOMEM;
	for (uint32_t i = 0; !ret && i < t->hdr->nr_args; i++) {
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
static int vis_add_process(struct vis_proc *vp, struct an_process *p)
{
	struct symbolizer *sym = sym_new();
	struct agg_row **rows;
	size_t n;
	int ret = sym ? agg_symbolize(p->rows, sym, p->maps) : -ENOMEM;

	if (!ret)
		ret = sym_resolve(sym);
	n = ret ? 0 : agg_rows(p->rows, &rows);
	for (size_t k = 0; !ret && k < n; k++)
		ret = vis_add_row(vp, sym, rows[k]);
	if (!ret && vp->sites) /* the index's top callsites (not drawn for --diff) */
		ret = callsites_add(vp->sites, p->rows, sym, CALLSITES_BY_KIND);
	sym_free(sym);
	return ret;
}

/* Load every generation of one pid: entries [first, last) of the sorted trace list. */
static int vis_load(struct vis_proc *vp, const struct trace_list *l, size_t first, size_t last,
		    char *err, size_t errlen)
{
	for (size_t i = first; i < last; i++) {
		struct an_process *p = NULL;
		int ret;

		if ((ret = vis_keep_header(vp, l->v[i].path, err, errlen)))
			return ret;
		ret = an_process_load(l->v[i].path, &vp->env->filter, vis_fault_cb, vp, &p, err, errlen);
		if (ret)
			return ret;
		if (p->warning[0]) {
			cli_note("%s: %s", l->v[i].path, p->warning);
			snprintf(vp->warning, sizeof(vp->warning), "%s: %s", l->v[i].path, p->warning);
		}
		ret = vis_add_process(vp, p);
		an_process_free(p);
		if (ret) {
			snprintf(err, errlen, "%s: %s", l->v[i].path,
				 ret == -ENOMEM ? "out of memory; draw one process at a time (--pid)" :
				 strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* ---- writing ---- */

static int vis_open(const struct vis_env *env, const char *name, uint32_t pid, char *path,
		    size_t len, FILE **out)
{
	snprintf(path, len, "%s/fltrace-data-%s-%u.%s", env->outdir, name, pid,
		 strcmp(name, "index") ? "svg" : "html");
	*out = fopen(path, "w");
	if (!*out)
		return cli_error(-errno, "visualize", "cannot write %s: %s; check that -o names a "
				 "writable directory", path, strerror(errno));
	return 0;
}

/* Close a picture written by a renderer that returned rc; one message on failure. */
static int vis_close(FILE *f, const char *path, int rc)
{
	if (fclose(f) && !rc)
		rc = -EIO;
	if (rc)
		return cli_error(rc, "visualize", "writing %s failed: %s; free some space or write "
				 "elsewhere with -o", path, strerror(-rc));
	printf("%s\n", path);
	return 0;
}

/* A run of `fltrace sweep` (DIR/<run>) has its slowdown in DIR/sweep.csv, the row named <run>. */
static bool vis_sweep_slowdown(const struct vis_env *env, double *slowdown, char *of, size_t len)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], *line = NULL;
	size_t cap = 0, nlen;
	const char *name;
	bool found = false, ample = false;
	FILE *f;

	if (!realpath(env->indir, dir) || !(name = strrchr(dir, '/')) || name == dir)
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

static int vis_allocsite_add(void *arg, const char *const *frames, size_t n, uint64_t count,
			     bool first_touch)
{
	return svg_flame_add(arg, frames, n, count, SVG_ACC_READ,
			     first_touch ? SVG_KIND_ZERO : SVG_KIND_REFETCH);
}

/* Faults by the allocation site of the memory they hit: allocation stacks outermost first, the
 * line that faulted on top (report --by alloc drawn). */
static int vis_write_allocsite(const struct vis_proc *vp, struct svg_flame_opts *fo, const char *title)
{
	const struct vis_env *env = vp->env;
	struct as_report r;
	char err[512], path[4096], atitle[600];
	FILE *f;
	int rc;

	if (as_report_load(env->indir, vp->pid, &env->filter, &r, err, sizeof(err))) {
		as_report_free(&r);
		return cli_error(CLI_EXIT_FAIL, "visualize", "%s", err);
	}
	struct svg_flame *fl = svg_flame_new();
	rc = fl ? as_report_foreach_stack(&r, vis_allocsite_add, fl) : -ENOMEM;
	as_report_free(&r);
	if (rc) {
		svg_flame_free(fl);
		return cli_error(CLI_EXIT_FAIL, "visualize", "out of memory; draw one process at a time (--pid)");
	}
	snprintf(atitle, sizeof(atitle), "%s: by allocation site", title);
	fo->title = atitle;
	if (!(rc = vis_open(env, "flamegraph-allocsite", vp->pid, path, sizeof(path), &f)))
		rc = vis_close(f, path, svg_flame_write(fl, f, fo));
	svg_flame_free(fl);
	return rc;
}

static int vis_write(struct vis_proc *vp)
{
	const struct vis_env *env = vp->env;
	char title[512], sub[1024], path[4096], opt[8][64];
	const char *cmd = vp->argc ? vp->argv[0] : vp->exe ? vp->exe : "?";
	const char *base = strrchr(cmd, '/');
	char *stats;
	struct svg_index_info in = { 0 };
	FILE *f;
	int rc;

	/* Subtitle: the command line, cut well before it would overflow any width. */
	size_t pos = 0;
	sub[0] = 0;
	for (size_t i = 0; i < vp->argc && pos < 200; i++)
		pos += (size_t)snprintf(sub + pos, sizeof(sub) - pos, "%s%s", i ? " " : "", vp->argv[i]);
	if (pos >= 200)
		snprintf(sub + 196, sizeof(sub) - 196, " ...");
	if (env->kinds_text[0])
		snprintf(sub + strlen(sub), sizeof(sub) - strlen(sub), "   [kinds: %s]", env->kinds_text);

	if (env->title)
		snprintf(title, sizeof(title), "%s", env->title);
	else
		snprintf(title, sizeof(title), "Page faults of %s (pid %u)", base ? base + 1 : cmd, vp->pid);
	struct svg_flame_opts fo = { .title = title, .subtitle = sub, .width = env->width,
				     .minwidth = env->minwidth, .inverted = env->inverted };
	if ((rc = vis_open(env, "flamegraph", vp->pid, path, sizeof(path), &f)) ||
	    (rc = vis_close(f, path, svg_flame_write(vp->all, f, &fo))))
		return rc;
	char atitle[600];
	snprintf(atitle, sizeof(atitle), "%s: first touches (allocations)", title);
	fo.title = atitle;
	if ((rc = vis_open(env, "flamegraph-alloc", vp->pid, path, sizeof(path), &f)) ||
	    (rc = vis_close(f, path, svg_flame_write(vp->alloc, f, &fo))))
		return rc;
	if ((rc = vis_write_allocsite(vp, &fo, title)))
		return rc;

	snprintf(title, sizeof(title), "Faults over time: %s (pid %u)", base ? base + 1 : cmd, vp->pid);
	struct svg_timeline_opts to = { .title = title, .subtitle = sub, .width = env->width,
					.t0_ns = vp->t0, .page_size = vp->page_size };
	if ((rc = vis_open(env, "timeline", vp->pid, path, sizeof(path), &f)) ||
	    (rc = vis_close(f, path, svg_timeline_write(vp->tl, f, &to))))
		return rc;

	snprintf(title, sizeof(title), "Fault service time: %s (pid %u)", base ? base + 1 : cmd, vp->pid);
	struct svg_latency_opts lo = { .title = title, .subtitle = sub, .width = env->width };
	if ((rc = vis_open(env, "latency", vp->pid, path, sizeof(path), &f)) ||
	    (rc = vis_close(f, path, svg_latency_write(vp->lat, f, &lo))))
		return rc;

	/* The index: what ran, with which options, what happened. */
	stats = stats_last_line(env->indir, vp->pid);
	in.pid = vp->pid;
	in.exe = vp->exe;
	in.argv = (const char *const *)vp->argv;
	in.argc = vp->argc;
	if (vp->has_hdr) {
		const struct ft_file_header *h = &vp->hdr;
		char s1[32], s2[32];
		svg_fmt_bytes(s1, sizeof(s1), (double)h->localmem_bytes);
		svg_fmt_bytes(s2, sizeof(s2), (double)h->maxmem_bytes);
		snprintf(opt[0], sizeof(opt[0]), "%s", s1);
		snprintf(opt[1], sizeof(opt[1]), "%s", s2);
		snprintf(opt[2], sizeof(opt[2]), "%u", h->handler_threads);
		snprintf(opt[3], sizeof(opt[3]), "%u%s", h->samplerate, h->samplerate ? " faults/s" : " (all)");
		snprintf(opt[4], sizeof(opt[4]), "%s", fltrace_policy_name(h->policy));
		snprintf(opt[5], sizeof(opt[5]), "%u", h->stack_depth);
		snprintf(opt[6], sizeof(opt[6]), "%llu", (unsigned long long)h->page_size);
		static const char *const names[] = { "local memory (-L)", "max memory (-M)",
			"handler threads (-C)", "sample rate (-S)", "policy", "stack depth", "page size" };
		for (size_t i = 0; i < 7; i++) {
			in.options[i].name = names[i];
			in.options[i].value = opt[i];
		}
		in.noptions = 7;
	}
	if (vp->execs[0]) {
		in.options[in.noptions].name = "earlier execs of this pid";
		in.options[in.noptions++].value = vp->execs;
	}
	if (env->kinds_text[0]) {
		in.options[in.noptions].name = "shown kinds (--kind)";
		in.options[in.noptions++].value = env->kinds_text;
	}
	in.faults = vp->faults;
	memcpy(in.by_kind, vp->by_kind, sizeof(in.by_kind));
	in.nostack = vp->nostack;
	in.stats_line = stats;
	if (stats && statsline_get(stats, strlen(stats), "vm_hwm", &in.peak_bytes) == 0)
		in.has_peak = true;
	in.warning = vp->warning;
	in.localmem_bytes = vp->has_hdr ? vp->hdr.localmem_bytes : 0;
	char slow_of[96];
	in.has_slowdown = vis_sweep_slowdown(env, &in.slowdown, slow_of, sizeof(slow_of));
	in.slowdown_of = slow_of;
	const struct callsite *sites = NULL;
	size_t nsites = callsites_sort(vp->sites, NULL) ? 0 : callsites_get(vp->sites, &sites);
	in.sites = sites;
	in.nsites = nsites < VIS_INDEX_SITES ? nsites : VIS_INDEX_SITES;
	static const char *const caps[] = { "Flamegraph: all faults", "Flamegraph: first touches",
					    "Flamegraph: by allocation site", "Faults over time",
					    "Fault service time" };
	static const char *const kinds[] = { "flamegraph", "flamegraph-alloc", "flamegraph-allocsite",
					     "timeline", "latency" };
	char files[5][64];
	for (size_t i = 0; i < 5; i++) {
		snprintf(files[i], sizeof(files[i]), "fltrace-data-%s-%u.svg", kinds[i], vp->pid);
		in.images[i].caption = caps[i];
		in.images[i].file = files[i];
	}
	in.nimages = 5;
	rc = vis_open(env, "index", vp->pid, path, sizeof(path), &f);
	if (!rc)
		rc = vis_close(f, path, svg_index_write(f, &in));
	free(stats);
	return rc;
}

static void vis_proc_free(struct vis_proc *vp)
{
	svg_flame_free(vp->all);
	svg_flame_free(vp->alloc);
	svg_timeline_free(vp->tl);
	svg_latency_free(vp->lat);
	callsites_free(vp->sites);
	vis_drop_header(vp);
	free(vp->frames);
	free(vp->namebuf);
}

/* ---- --diff A B ---- */

/* Every process of dir into vp->all, as the earlier run (before) or the later one. */
static int vis_diff_load(struct vis_proc *vp, const char *dir, char *err, size_t errlen)
{
	struct trace_list l = { 0 };
	int ret = trace_list_dir(dir, &l);

	if (ret) {
		snprintf(err, errlen, "cannot read %s: %s; give two directories of recordings to "
			 "--diff", dir, strerror(-ret));
		return ret;
	}
	if (!l.n) {
		snprintf(err, errlen, "no trace (fltrace-data-trace-*.bin) in %s; give the output "
			 "directory of a 'fltrace record' run to --diff", dir);
		ret = -ENOENT;
	}
	for (size_t i = 0; i < l.n && !ret; i++) {
		struct an_process *p = NULL;

		if (vp->env->has_pid && l.v[i].pid != vp->env->pid)
			continue;
		ret = an_process_load(l.v[i].path, &vp->env->filter, NULL, NULL, &p, err, errlen);
		if (ret)
			break;
		ret = vis_add_process(vp, p);
		an_process_free(p);
		if (ret)
			snprintf(err, errlen, "%s: %s", l.v[i].path, strerror(-ret));
	}
	trace_list_free(&l);
	return ret;
}

static int vis_diff(const struct vis_env *env)
{
	struct vis_proc vp = { .env = env, .all = svg_flame_new() };
	char err[1024] = "out of memory", title[1024], path[4096];
	int rc = vp.all ? 0 : -ENOMEM;
	FILE *f;

	vp.before = true;
	if (!rc)
		rc = vis_diff_load(&vp, env->diff_a, err, sizeof(err));
	vp.before = false;
	if (!rc)
		rc = vis_diff_load(&vp, env->diff_b, err, sizeof(err));
	if (rc) {
		vis_proc_free(&vp);
		return cli_error(CLI_EXIT_FAIL, "visualize", "%s", err);
	}
	if (env->title)
		snprintf(title, sizeof(title), "%s", env->title);
	else
		snprintf(title, sizeof(title), "Page faults: %s -> %s", env->diff_a, env->diff_b);
	struct svg_flame_opts fo = { .title = title, .subtitle = env->kinds_text[0] ?
				     env->kinds_text : NULL, .width = env->width,
				     .minwidth = env->minwidth, .inverted = env->inverted,
				     .diff = true };
	snprintf(path, sizeof(path), "%s/fltrace-data-flamegraph-diff.svg", env->outdir);
	f = fopen(path, "w");
	if (!f)
		rc = cli_error(CLI_EXIT_FAIL, "visualize", "cannot write %s: %s; check that -o "
			       "names a writable directory", path, strerror(errno));
	else
		rc = vis_close(f, path, svg_flame_write(vp.all, f, &fo)) ? CLI_EXIT_FAIL : 0;
	vis_proc_free(&vp);
	return rc;
}

int cmd_visualize(int argc, char **argv)
{
	struct vis_env env;
	struct trace_list l = { 0 };
	char err[512];
	int rc = vis_parse(argc, argv, &env), drawn = 0;

	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc; /* -1: --help */
	if (env.diff_a)
		return vis_diff(&env);
	rc = trace_list_dir(env.indir, &l);
	if (rc)
		return cli_error(CLI_EXIT_FAIL, "visualize", "cannot read directory %s: %s; give the "
				 "directory of a recording with -i <dir>", env.indir, strerror(-rc));
	if (!l.n) {
		rc = cli_error(CLI_EXIT_FAIL, "visualize", "no trace (fltrace-data-trace-*.bin) in %s; "
			       "run 'fltrace record' first, or give its output directory with -i <dir>",
			       env.indir);
		goto out;
	}
	for (size_t i = 0; i < l.n;) {
		size_t j = i;
		while (j < l.n && l.v[j].pid == l.v[i].pid)
			j++;
		if (env.has_pid && l.v[i].pid != env.pid) {
			i = j;
			continue;
		}
		struct vis_proc vp = { .env = &env, .pid = l.v[i].pid };
		vp.all = svg_flame_new();
		vp.alloc = svg_flame_new();
		vp.tl = svg_timeline_new();
		vp.lat = svg_latency_new();
		vp.sites = callsites_new(SVG_KIND_NR);
		if (!vp.all || !vp.alloc || !vp.tl || !vp.lat || !vp.sites) {
			snprintf(err, sizeof(err), "out of memory; draw one process at a time (--pid)");
			rc = -ENOMEM;
		} else {
			err[0] = 0;
			rc = vis_load(&vp, &l, i, j, err, sizeof(err));
		}
		if (rc) {
			rc = cli_error(CLI_EXIT_FAIL, "visualize", "%s", err[0] ? err : strerror(-rc));
		} else {
			rc = vis_write(&vp) ? CLI_EXIT_FAIL : 0;
			drawn++;
		}
		vis_proc_free(&vp);
		if (rc)
			goto out;
		i = j;
	}
	if (env.has_pid && !drawn)
		rc = cli_error(CLI_EXIT_FAIL, "visualize", "no trace of pid %u in %s; run without --pid "
			       "to draw every process there", env.pid, env.indir);
out:
	trace_list_free(&l);
	return rc;
}
