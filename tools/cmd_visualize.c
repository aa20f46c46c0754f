/* `fltrace visualize`: parses the options, then draws every picture row of the writers table
 * (src/analysis/report_writers.c) for each process of a directory, or the --diff picture. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fltrace/config.h>
#include <fltrace/parse.h>

#include "../src/analysis/picture.h"
#include "../src/analysis/report.h"
#include "builtin.h"
#include "cli.h"

#define VIS_MAX_WIDTH 100000u
/* Flamegraph levels in view: the index page's first screen (1400x1000) holds the summary, the top
 * callsites and a flamegraph of this many levels, its widest frames at the bottom included. */
#define VIS_FOLD 16u

/* The options, parsed once: how to draw, and where the pictures go. */
struct vis_env {
	struct picture_opts o;
	const char *outdir;   /* NULL: the input directory */
};

enum { OPT_TITLE = 256, OPT_WIDTH, OPT_MINWIDTH, OPT_INVERTED, OPT_KIND, OPT_PID, OPT_NAMES,
       OPT_DIFF, OPT_MERGE, OPT_FOLD };

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
	{ "merge", no_argument, NULL, OPT_MERGE },
	{ "fold", required_argument, NULL, OPT_FOLD },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char vis_usage[] =
"usage: fltrace visualize [-i <dir>] [-o <dir>] [options]\n"
"\n"
"Draws the traces of a directory (fltrace-data-trace-<pid>-<n>.bin, as written by\n"
"'fltrace record'): fltrace-data-index.html lists the processes, most faults first, and\n"
"links each one's pages. For every process (or, with --merge, once for all) it writes:\n";

static const char vis_usage_rest[] =
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
"      --fold <levels>   flamegraph levels in view (default 16; 0: all): a deeper stack is\n"
"                        folded out of view until a click on one of its frames brings it in\n"
"      --inverted        icicle layout: callers at the top, growing down\n"
"      --kind <list>     only faults of these kinds, comma-separated: zero, refetch, file,\n"
"                        wp, syscall (taken inside a system call), prefetch (faults a prefetcher hid)\n"
"      --pid <pid>       only this process (default: every process of the directory)\n"
"      --merge           one set of pictures for all processes together, files named\n"
"                        fltrace-data-<picture>-all.<ext>, instead of one set per process\n"
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
"      open a flamegraph with the frames matching 'malloc' highlighted (#z=<frame> zooms)\n";

/* The usage text with the pictures of the writers table. */
static void vis_help(void)
{
	fputs(vis_usage, stdout);
	report_writers_usage(stdout, WR_VISUALIZE, 41);
	fputs(vis_usage_rest, stdout);
}

static int vis_parse_kinds(struct vis_env *env, const char *arg)
{
	char buf[96];
	char *save = NULL;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", arg);
	snprintf(env->o.kinds_text, sizeof(env->o.kinds_text), "%s", arg);
	env->o.filter.kinds = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k = svg_kind_parse(tok);
		if (k < 0)
			return -EINVAL;
		/* svg kinds 0..3 are the trace kinds, 4 is "inside a syscall": the filter's bits. */
		env->o.filter.kinds |= 1u << k;
	}
	return env->o.filter.kinds ? 0 : -EINVAL;
}

static int vis_parse(int argc, char **argv, struct vis_env *env)
{
	uint64_t v;
	int c, err;

	*env = (struct vis_env){ .o = { .indir = ".", .width = 1200, .minwidth = 0.1,
					.fold = VIS_FOLD } };
	optind = 0; /* glibc: full re-initialisation */
	opterr = 0;
	static const char optstring[] = ":i:o:h";
	while ((c = getopt_long(argc, argv, optstring, vis_longopts, NULL)) != -1) {
		int left_out = c != ':' && c != '?' ? cli_value_left_out(argv, "visualize", optstring, vis_longopts) : 0;
		if (left_out)
			return left_out;
		switch (c) {
		case 'i': env->o.indir = optarg; break;
		case 'o': env->outdir = optarg; break;
		case OPT_TITLE: env->o.title = optarg; break;
		case OPT_INVERTED: env->o.inverted = true; break;
		case OPT_WIDTH:
			err = parse_u64(optarg, 400, VIS_MAX_WIDTH, &v);
			if (err)
				return cli_error(CLI_EXIT_USAGE, "visualize", "--width: '%s' %s; give pixels "
						 "from 400 to %u, e.g. --width 1800", optarg,
						 parse_strerror(err), VIS_MAX_WIDTH);
			env->o.width = (unsigned)v;
			break;
		case OPT_MINWIDTH: {
			char *end;
			errno = 0;
			env->o.minwidth = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(env->o.minwidth >= 0) || env->o.minwidth > 1000)
				return cli_error(CLI_EXIT_USAGE, "visualize", "--minwidth: '%s' is not a width "
						 "in pixels; give e.g. --minwidth 0.5 (0 draws every frame)", optarg);
			break;
		}
		case OPT_KIND:
			if (vis_parse_kinds(env, optarg))
				return cli_error(CLI_EXIT_USAGE, "visualize", "--kind: '%s' is not a list of kinds; give "
						 "a comma-separated list of zero, refetch, file, wp, syscall, prefetch", optarg);
			break;
		case OPT_PID:
			err = parse_u64(optarg, 1, UINT32_MAX, &v);
			if (err)
				return cli_error(CLI_EXIT_USAGE, "visualize", "--pid: '%s' %s; give the pid of a "
						 "trace file fltrace-data-trace-<pid>-<n>.bin", optarg, parse_strerror(err));
			env->o.has_pid = true;
			env->o.pid = (uint32_t)v;
			break;
		case OPT_NAMES:
			if (!strcmp(optarg, "func"))
				env->o.names = PICTURE_NAMES_FUNC;
			else if (!strcmp(optarg, "lib"))
				env->o.names = PICTURE_NAMES_LIB;
			else
				return cli_error(CLI_EXIT_USAGE, "visualize", "--names: '%s' is not a style; "
						 "give func or lib", optarg);
			break;
		case OPT_DIFF:
			env->o.diff_a = optarg;
			break;
		case OPT_MERGE:
			env->o.merge = true;
			break;
		case OPT_FOLD:
			err = parse_u64(optarg, 0, 10000, &v);
			if (err)
				return cli_error(CLI_EXIT_USAGE, "visualize", "--fold: '%s' %s; give the "
						 "flamegraph levels to show, e.g. --fold 30 (0 shows all)",
						 optarg, parse_strerror(err));
			env->o.fold = (unsigned)v;
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
	if (env->o.diff_a) {
		if (optind >= argc)
			return cli_error(CLI_EXIT_USAGE, "visualize", "--diff needs two trace "
					 "directories; give --diff A B");
		env->o.diff_b = argv[optind++];
	}
	if (optind < argc)
		return cli_error(CLI_EXIT_USAGE, "visualize", "%s: unexpected argument; give the "
				 "trace directory with -i <dir>", argv[optind]);
	if (env->o.merge && (env->o.has_pid || env->o.diff_a))
		return cli_error(CLI_EXIT_USAGE, "visualize", "--merge draws all processes together; "
				 "leave out %s", env->o.has_pid ? "--pid" : "--diff");
	if (!env->outdir)
		env->outdir = env->o.indir;
	else if ((err = cli_mkdir_p(env->outdir)) < 0)
		return cli_error(CLI_EXIT_FAIL, env->outdir, "cannot create the output directory (%s); "
				 "give a writable directory with -o DIR", strerror(-err));
	return 0;
}

/* ---- writing ---- */

static void vis_note(const char *path, const char *warning)
{
	cli_note("%s: %s", path, warning);
}

/* One picture of a writer row into path; one message on failure (and no file under the name). */
static int vis_draw(const char *path, int (*draw)(FILE *, const struct picture_view *),
		    const struct picture_view *v)
{
	struct cli_out out;
	FILE *f = cli_out_open(&out, path);
	if (!f)
		return CLI_EXIT_FAIL;
	v->err[0] = 0;
	int rc = draw(f, v);
	if (rc) {
		cli_out_abort(&out);
		if (v->err[0])
			return cli_error(CLI_EXIT_FAIL, "visualize", "%s", v->err);
		return cli_error(rc, "visualize", "writing %s failed: %s; free some space or write "
				 "elsewhere with -o", path, strerror(-rc));
	}
	if (cli_out_close(&out))
		return CLI_EXIT_FAIL;
	printf("%s\n", path);
	return 0;
}

/* Every picture row of the writers table, for one process. */
static int vis_write(const struct vis_env *env, const struct picture_proc *vp)
{
	char path[4096], err[1024];
	struct picture_view v = { .p = vp, .o = &env->o, .err = err, .errlen = sizeof(err) };
	size_t n;
	const struct report_writer *w = report_writers(&n);

	for (size_t i = 0; i < n; i++) {
		if (w[i].cmd != WR_VISUALIZE || !w[i].draw)
			continue;
		char sfx[16], name[256];
		snprintf(path, sizeof(path), "%s/%s", env->outdir,
			 report_writer_file(&w[i], picture_proc_suffix(vp, sfx, sizeof(sfx)), name,
					    sizeof(name)));
		int rc = vis_draw(path, w[i].draw, &v);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- --diff A B: the picture rows that have a diff form ---- */

static int vis_diff(const struct vis_env *env)
{
	struct picture_proc vp;
	char err[1024] = "out of memory", path[4096];
	int rc = picture_diff_init(&vp, &env->o);

	if (!rc)
		rc = picture_diff_load(&vp, env->o.diff_a, true, err, sizeof(err));
	if (!rc)
		rc = picture_diff_load(&vp, env->o.diff_b, false, err, sizeof(err));
	if (rc) {
		picture_proc_free(&vp);
		return cli_error(CLI_EXIT_FAIL, "visualize", "%s", err);
	}
	struct picture_view v = { .p = &vp, .o = &env->o, .err = err, .errlen = sizeof(err) };
	size_t n;
	const struct report_writer *w = report_writers(&n);
	for (size_t i = 0; i < n && !rc; i++) {
		if (w[i].cmd != WR_VISUALIZE || !w[i].draw_diff)
			continue;
		char name[256];
		snprintf(path, sizeof(path), "%s/%s", env->outdir,
			 report_writer_file(&w[i], "diff", name, sizeof(name)));
		rc = vis_draw(path, w[i].draw_diff, &v) ? CLI_EXIT_FAIL : 0;
	}
	picture_proc_free(&vp);
	return rc;
}

/* The processes of the recording, one line each. */
struct vis_procs {
	struct svg_index_proc *v;
	size_t n;
};

static void vis_procs_free(struct vis_procs *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->v[i].cmdline);
	free(ps->v);
}

/* Each pid's traces of the list (or --pid's), loaded into vp (every one into one vp when merged;
 * drawn after each pid otherwise); ps gets their lines. */
static int vis_load_all(const struct vis_env *env, const struct trace_list *l, struct vis_procs *ps)
{
	struct picture_proc vp;
	char err[512] = "";
	int rc = 0;
	bool merged = env->o.merge;

	if (!(ps->v = calloc(l->n, sizeof(*ps->v))))
		return cli_error(CLI_EXIT_FAIL, "visualize", "out of memory");
	if (merged) {
		if ((rc = picture_proc_init(&vp, &env->o, 0)))
			return cli_error(CLI_EXIT_FAIL, "visualize", "out of memory");
		vp.merged = true;
	}
	for (size_t i = 0, j; i < l->n && !rc; i = j) {
		for (j = i; j < l->n && l->v[j].pid == l->v[i].pid; j++)
			;
		if (env->o.has_pid && l->v[i].pid != env->o.pid)
			continue;
		if (!merged && picture_proc_init(&vp, &env->o, l->v[i].pid)) {
			rc = cli_error(CLI_EXIT_FAIL, "visualize", "out of memory; draw one process at "
				       "a time (--pid)");
			break;
		}
		rc = picture_proc_load(&vp, l, i, j, &ps->v[ps->n], err, sizeof(err));
		if (rc)
			rc = cli_error(CLI_EXIT_FAIL, "visualize", "%s", err[0] ? err : strerror(-rc));
		else
			ps->n++;
		if (!rc && !merged)
			rc = vis_write(env, &vp) ? CLI_EXIT_FAIL : 0;
		if (!merged)
			picture_proc_free(&vp);
	}
	if (merged) {
		if (!rc)
			rc = vis_write(env, &vp) ? CLI_EXIT_FAIL : 0;
		picture_proc_free(&vp);
	}
	return rc;
}

/* fltrace-data-index.html: the processes, most faults first, linked to their pages. Written as
 * every picture is (cli_out_open: 0600, never through a link planted under its name). */
static int vis_write_processes(const struct vis_env *env, struct vis_procs *ps)
{
	char path[4096];
	struct cli_out out;

	snprintf(path, sizeof(path), "%s/fltrace-data-index.html", env->outdir);
	FILE *f = cli_out_open(&out, path);
	if (!f)
		return CLI_EXIT_FAIL;
	int rc = picture_draw_processes(f, ps->v, ps->n, env->o.merge);
	if (rc) {
		cli_out_abort(&out);
		return cli_error(CLI_EXIT_FAIL, "visualize", "writing %s failed: %s; free some space or "
				 "write elsewhere with -o", path, strerror(-rc));
	}
	if (cli_out_close(&out))
		return CLI_EXIT_FAIL;
	printf("%s\n", path);
	return 0;
}

int cmd_visualize(int argc, char **argv)
{
	struct vis_env env;
	struct trace_list l = { 0 };
	struct vis_procs procs = { 0 };
	int rc = vis_parse(argc, argv, &env), drawn = 0;

	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc; /* -1: --help */
	env.o.note = vis_note;
	if (env.o.diff_a)
		return vis_diff(&env);
	rc = trace_list_dir(env.o.indir, &l);
	if (rc)
		return cli_error(CLI_EXIT_FAIL, "visualize", "cannot read directory %s: %s; give the "
				 "directory of a recording with -i <dir>", env.o.indir, strerror(-rc));
	if (!l.n) {
		rc = cli_error(CLI_EXIT_FAIL, "visualize", "no trace (fltrace-data-trace-*.bin) in %s; "
			       "run 'fltrace record' first, or give its output directory with -i <dir>",
			       env.o.indir);
		goto out;
	}
	rc = vis_load_all(&env, &l, &procs);
	drawn = (int)procs.n;
	if (!rc && drawn)
		rc = vis_write_processes(&env, &procs);
	if (env.o.has_pid && !drawn)
		rc = cli_error(CLI_EXIT_FAIL, "visualize", "no trace of pid %u in %s; run without --pid "
			       "to draw every process there", env.o.pid, env.o.indir);
out:
	vis_procs_free(&procs);
	trace_list_free(&l);
	return rc;
}
