/* `fltrace report`: parses the options, loads the traces of a directory and hands them to the
 * writers picked by --format; the analysis and every writer live in src/analysis. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fltrace/parse.h>

#include "../src/analysis/allocsite.h"
#include "../src/analysis/advise.h"
#include "../src/analysis/analysis.h"
#include "../src/analysis/report.h"
#include "../src/analysis/runstats.h"
#include "builtin.h"
#include "cli.h"

static const char report_usage[] =
"usage: fltrace report [-i DIR] [options]\n"
"\n"
"Reads every fltrace-data-trace-<pid>-<gen>.bin in DIR (default: the current directory) and\n"
"writes fltrace-data-report-<pid>.out (CSV, one row per call stack and access, most faults\n"
"first) for each traced process into DIR.\n"
"\n"
"options:\n"
"  -i, --input DIR       directory holding the traces (default .)\n"
"  -o, --output FILE     write one output, all processes merged, to FILE (- is stdout)\n"
"      --format NAME     what to write (default csv); the formats are listed below\n"
"      --by VIEW         stack (default) | line | function | caller | alloc: group by full\n"
"                        stack, by the innermost frame's file:line, by its function, by the\n"
"                        program's own frame (the innermost outside libc, libstdc++,\n"
"                        libgcc, ld.so and fltrace: the line that called memset), or by the\n"
"                        allocation site of the memory each fault hit (alloc: writes\n"
"                        fltrace-data-report-alloc-<pid|all>.out, or a table with --top)\n"
"      --kind LIST       keep faults of these kinds: zero,refetch,file,wp,syscall,prefetch\n"
"                        (prefetch: first touches of pages a prefetcher brought in, faults it hid)\n"
"      --access LIST     keep faults of these accesses: read,write,wp\n"
"      --pid N           only the process N\n"
"      --time START:END  only faults in this window, seconds from the trace start\n"
"                        (either side may be left out: 2.5: or :10)\n"
"      --top N           print the N biggest rows as a table on stdout (latency p50, p99), no CSV files\n"
"      --folded          print folded stacks (flamegraph.pl, speedscope, inferno) to stdout\n"
"      --merge           combine all processes into fltrace-data-report-all.out\n"
"      --files           also write fltrace-data-files-<pid>.out: file-backed faults per\n"
"                        file offset range, with the order the ranges were read in\n"
"      --raw             also write fltrace-data-faults-<pid>-<gen>.out: one row per fault\n"
"      --advise SIZE     placement advice for a local memory of SIZE (MB unless a unit is\n"
"                        given, as record -L): the allocation sites to keep local, ranked by\n"
"                        re-fetches per byte, the bytes each needs and the re-fetches keeping\n"
"                        it is predicted to save (CSV on stdout, or -o FILE); check it with\n"
"                        'fltrace record -L SIZE --keep-local SITE,...'\n"
"      --diff A B        compare two recordings (trace directories): faults per callsite in\n"
"                        each and the change, biggest change first, to fltrace-data-diff.out\n"
"                        (or -o FILE); with --top N a table, with --folded 'stack A B' lines\n"
"  -h, --help            this text\n"
"\n"
"formats (--format NAME):\n";

static const char report_examples[] =
"\n"
"examples:\n"
"  fltrace report                          # CSV per process in the current directory\n"
"  fltrace report -i out --top 20          # the 20 call stacks with most faults, as a table\n"
"  fltrace report --by line --kind refetch # which lines re-fetch evicted pages\n"
"  fltrace report --by caller --top 10     # which lines of the program itself fault most\n"
"  fltrace report --by alloc --top 10      # which allocations' memory faults most\n"
"  fltrace report --advise 64              # which sites to keep local with 64 MB\n"
"  fltrace report --folded -o f.folded && flamegraph.pl f.folded > f.svg\n"
"  fltrace report --kind file --files      # which parts of which files were read, in order\n"
"  fltrace report --time 10:20 --access write --merge\n"
"  fltrace report --format pprof && pprof -top fltrace-data-report-<pid>.pb.gz\n"
"  fltrace report --diff L64 L32 --kind refetch --top 10 # what re-fetches more at -L 32\n";

/* The usage text with the formats of the writers table. */
static void report_help(void)
{
	fputs(report_usage, stdout);
	report_writers_usage(stdout, WR_REPORT, 18);
	fputs(report_examples, stdout);
}

struct report_env {
	const char *dir;
	const char *output;
	enum agg_by by;
	struct agg_filter filter;
	long pid;
	long top;
	bool merge;
	const char *diff_a, *diff_b;            /* --diff A B */
	const struct report_writer *fmt;        /* the grouped output */
	const struct report_writer *per_fault[2]; /* --raw, --files */
	size_t nper_fault;
	bool progress;
	struct timespec t0;
	uint64_t advise;                        /* --advise: the local size in bytes, 0 = not asked */
};

static double report_elapsed(const struct report_env *env)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - env->t0.tv_sec) + (t.tv_nsec - env->t0.tv_nsec) / 1e9;
}

/* A progress line, only on a terminal and only once the work is slow enough to wonder. */
static void report_progress(const struct report_env *env, const char *fmt, const char *what)
{
	if (!env->progress || report_elapsed(env) < 1.0)
		return;
	fprintf(stderr, "\rfltrace: report: ");
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\033[K");
}

static void report_progress_end(const struct report_env *env)
{
	if (env->progress && report_elapsed(env) >= 1.0)
		fprintf(stderr, "\r\033[K");
}

/* ------------------------------------------------------------------ options */

static int report_parse_list(const char *what, const char *s, const char *const *names,
			     const unsigned *bits, size_t n, unsigned *out)
{
	char *copy = strdup(s), *tok, *save = NULL;

	if (!copy)
		return -ENOMEM;
	*out = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < n; i++)
			if (strcmp(tok, names[i]) == 0)
				break;
		if (i == n) {
			cli_error(CLI_EXIT_USAGE, "report", "--%s: unknown value '%s'; see "
				  "'fltrace report --help'", what, tok);
			free(copy);
			return -EINVAL;
		}
		*out |= bits[i];
	}
	free(copy);
	return 0;
}

static int report_parse_time(const char *s, struct agg_filter *f)
{
	const char *colon = strchr(s, ':');
	char *end;

	if (!colon)
		return -EINVAL;
	f->has_time = true;
	f->time_start = 0;
	f->time_end = -1;
	if (colon != s) {
		f->time_start = strtod(s, &end);
		if (end != colon || f->time_start < 0)
			return -EINVAL;
	}
	if (colon[1]) {
		f->time_end = strtod(colon + 1, &end);
		if (*end)
			return -EINVAL;
		if (f->time_end < f->time_start)
			return -ERANGE;
	}
	return 0;
}

static long report_parse_long(const char *s, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min)
		return -1;
	return v;
}

enum { OPT_BY = 256, OPT_KIND, OPT_ACCESS, OPT_PID, OPT_TIME, OPT_TOP, OPT_FOLDED, OPT_MERGE,
       OPT_FILES, OPT_RAW, OPT_FORMAT, OPT_DIFF, OPT_ADVISE };

/* --raw and --files add a per-fault writer to the grouped output. */
static void report_add_per_fault(struct report_env *env, const char *name)
{
	const struct report_writer *w = report_writer_find(name);

	for (size_t i = 0; i < env->nper_fault; i++)
		if (env->per_fault[i] == w)
			return;
	env->per_fault[env->nper_fault++] = w;
}

static int report_set_format(struct report_env *env, const char *name)
{
	const struct report_writer *w = report_writer_find(name);

	if (!w)
		return cli_error(CLI_EXIT_USAGE, "report", "--format: unknown format '%s'; see "
				 "'fltrace report --help' for the list", name);
	if (w->write) {
		env->fmt = w;
	} else {
		env->fmt = NULL; /* only this per-fault view */
		report_add_per_fault(env, name);
	}
	return -1;
}

/* Returns -1 to go on, else the exit status. */
static int report_parse_args(int argc, char **argv, struct report_env *env)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "by", required_argument, NULL, OPT_BY },
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "access", required_argument, NULL, OPT_ACCESS },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "folded", no_argument, NULL, OPT_FOLDED },
		{ "merge", no_argument, NULL, OPT_MERGE },
		{ "files", no_argument, NULL, OPT_FILES },
		{ "raw", no_argument, NULL, OPT_RAW },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "diff", required_argument, NULL, OPT_DIFF },
		{ "advise", required_argument, NULL, OPT_ADVISE },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const kinds[] = { "zero", "refetch", "file", "wp", "syscall", "prefetch" };
	static const unsigned kind_bits[] = { 1u << FT_KIND_ZERO, 1u << FT_KIND_REFETCH,
					      1u << FT_KIND_FILE, 1u << FT_KIND_WP,
					      FILTER_KIND_SYSCALL, FILTER_KIND_PREFETCH };
	static const char *const accs[] = { "read", "write", "wp" };
	static const unsigned acc_bits[] = { FILTER_ACC_READ, FILTER_ACC_WRITE, FILTER_ACC_WP };
	int c;

	optind = 1;
	opterr = 0;
	static const char optstring[] = ":i:o:h";
	while ((c = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
		int left_out = c != ':' && c != '?' ? cli_value_left_out(argv, "report", optstring, opts) : 0;
		if (left_out)
			return left_out;
		switch (c) {
		case 'i': env->dir = optarg; break;
		case 'o': env->output = optarg; break;
		case 'h': report_help(); return CLI_EXIT_OK;
		case OPT_BY:
			if (!strcmp(optarg, "stack")) env->by = AGG_BY_STACK;
			else if (!strcmp(optarg, "line")) env->by = AGG_BY_LINE;
			else if (!strcmp(optarg, "function")) env->by = AGG_BY_FUNCTION;
			else if (!strcmp(optarg, "alloc")) env->by = AGG_BY_ALLOC;
			else if (!strcmp(optarg, "caller")) env->by = AGG_BY_CALLER;
			else
				return cli_error(CLI_EXIT_USAGE, "report", "--by: unknown view '%s'; "
						 "use stack, line, function, caller or alloc", optarg);
			break;
		case OPT_KIND:
			if (report_parse_list("kind", optarg, kinds, kind_bits, 6, &env->filter.kinds))
				return CLI_EXIT_USAGE;
			break;
		case OPT_ACCESS:
			if (report_parse_list("access", optarg, accs, acc_bits, 3, &env->filter.access))
				return CLI_EXIT_USAGE;
			break;
		case OPT_PID:
			env->pid = report_parse_long(optarg, 0);
			if (env->pid < 0)
				return cli_error(CLI_EXIT_USAGE, "report", "--pid: '%s' is not a "
						 "process id; give a number", optarg);
			break;
		case OPT_TIME: {
			int err = report_parse_time(optarg, &env->filter);
			if (err == -ERANGE)
				return cli_error(CLI_EXIT_USAGE, "report", "--time: '%s' ends before it "
						 "starts; give START:END with START at most END, e.g. 1:5",
						 optarg);
			if (err)
				return cli_error(CLI_EXIT_USAGE, "report", "--time: '%s' is not a "
						 "window; give START:END in seconds, e.g. 2.5:10",
						 optarg);
			break;
		}
		case OPT_TOP:
			env->top = report_parse_long(optarg, 1);
			if (env->top < 0)
				return cli_error(CLI_EXIT_USAGE, "report", "--top: '%s' is not a "
						 "positive number; give how many rows to show, e.g. --top 20",
						 optarg);
			env->fmt = report_writer_find("top");
			break;
		case OPT_FOLDED: env->fmt = report_writer_find("folded"); break;
		case OPT_MERGE: env->merge = true; break;
		case OPT_FILES: report_add_per_fault(env, "files"); break;
		case OPT_RAW: report_add_per_fault(env, "raw"); break;
		case OPT_DIFF: env->diff_a = optarg; break;
		case OPT_ADVISE: {
			int e = parse_size(optarg, PARSE_MIB, &env->advise);
			if (e)
				return cli_error(CLI_EXIT_USAGE, "report", "--advise: '%s' %s; give the "
						 "local size in MB, e.g. 64, or with a unit K, M, G, e.g. 1G",
						 optarg, parse_strerror(e));
			break;
		}
		case OPT_FORMAT:
			if ((c = report_set_format(env, optarg)) >= 0)
				return c;
			break;
		case ':':
			return cli_error(CLI_EXIT_USAGE, "report", "%s needs a value; see 'fltrace "
					 "report --help'", argv[optind - 1]);
		default:
			return cli_error(CLI_EXIT_USAGE, "report", "unknown option '%s'; see "
					 "'fltrace report --help'", argv[optind - 1]);
		}
	}
	if (env->diff_a) {
		if (optind >= argc)
			return cli_error(CLI_EXIT_USAGE, "report", "--diff needs two trace "
					 "directories; give --diff A B");
		env->diff_b = argv[optind++];
		if (!env->fmt || !env->fmt->write_diff)
			return cli_error(CLI_EXIT_USAGE, "report", "--diff writes csv, top or folded, "
					 "not %s; leave out --format or pick one of those",
					 env->fmt ? env->fmt->name : "per-fault views");
		if (env->nper_fault)
			return cli_error(CLI_EXIT_USAGE, "report", "--raw and --files describe one "
					 "run; leave them out with --diff");
	}
	if (optind < argc)
		return cli_error(CLI_EXIT_USAGE, "report", "unexpected argument '%s'; the trace "
				 "directory is given with -i DIR", argv[optind]);
	if (env->output && !env->fmt)
		return cli_error(CLI_EXIT_USAGE, "report", "-o goes with a grouped format; the "
				 "per-fault files are written next to the traces");
	if (env->fmt && !env->fmt->ext && !env->diff_a)
		env->nper_fault = 0; /* a terminal view: no files beside it, as before */
	if (env->fmt && env->fmt->write == report_write_top && !env->top)
		env->top = 20;
	return -1;
}

/* ------------------------------------------------------------------ output files */

/* dir/name, or name alone (-o FILE), written under a temporary name and renamed at the end. */
/* A trace read up to damage it could step over (a cut-short last record): reported, not fatal. */
static void report_warn_damaged(const char *path, const char *what)
{
	cli_error(CLI_EXIT_FAIL, "report", "warning: %s: %s", path, what);
}

static FILE *report_create(struct cli_out *o, const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (dir)
		snprintf(path, sizeof(path), "%s/%s", dir, name);
	else
		snprintf(path, sizeof(path), "%s", name);
	return cli_out_open(o, path);
}

/* A full disk must be an error, not a short file. */
static int report_close(struct cli_out *o)
{
	if (cli_out_close(o))
		return CLI_EXIT_FAIL;
	printf("%s\n", o->of.path); /* what was written, as visualize says it */
	return 0;
}

static const char *report_suffix(uint32_t pid, uint32_t gen, char *buf, size_t len)
{
	if (gen)
		snprintf(buf, len, "%u-%u", pid, gen);
	else
		snprintf(buf, len, "%u", pid);
	return buf;
}

/* ------------------------------------------------------------------ per-fault writers */

/* The per-fault writers of one trace file, with their files and states. */
struct report_sink {
	size_t n;
	struct report_sink_one {
		const struct report_writer *w;
		FILE *out;
		void *state;
		struct cli_out file;
	} v[2];
};

static int report_fault_cb(void *arg, const struct trace *t, const struct ft_fault *f,
			   const struct ft_stack *st, const struct ft_region *rg)
{
	struct report_sink *k = arg;
	int ret = 0;

	for (size_t i = 0; i < k->n && !ret; i++)
		ret = k->v[i].w->fault(k->v[i].state, k->v[i].out, t, f, st, rg);
	return ret;
}

static int report_sink_open(struct report_sink *k, const struct report_env *env,
			    const struct trace_entry *e)
{
	char name[256], sfx[64];

	for (size_t i = 0; i < k->n; i++) {
		struct report_sink_one *o = &k->v[i];
		if (o->w->per_gen)
			snprintf(sfx, sizeof(sfx), "%u-%u", e->pid, e->gen);
		else
			report_suffix(e->pid, e->gen, sfx, sizeof(sfx));
		report_writer_file(o->w, sfx, name, sizeof(name));
		o->out = report_create(&o->file, env->dir, name);
		if (!o->out || o->w->begin(o->out, &o->state)) {
			if (o->out)
				cli_error(CLI_EXIT_FAIL, "report", "out of memory");
			return -1;
		}
	}
	return 0;
}

/* Finish every writer of the sink; loaded says whether the trace could be read at all (if not,
 * its files are removed rather than left half-written). Returns 0 or CLI_EXIT_FAIL. */
static int report_sink_close(struct report_sink *k, bool loaded, uint64_t start_ns)
{
	int status = 0;

	for (size_t i = 0; i < k->n; i++) {
		struct report_sink_one *o = &k->v[i];
		if (!o->out)
			continue;
		if (o->state || o->w->per_gen)
			if (o->w->end(o->state, loaded ? o->out : NULL, start_ns) && loaded)
				status = cli_error(CLI_EXIT_FAIL, "report", "out of memory writing "
						   "%s", o->file.of.path);
		o->state = NULL;
		if (!loaded) {
			cli_out_abort(&o->file);
		} else if (report_close(&o->file)) {
			status = CLI_EXIT_FAIL;
		}
		o->out = NULL;
	}
	return status;
}

/* ------------------------------------------------------------------ grouped outputs */

/* Write one grouped output: to env->output if given ("-" is stdout), else to a file next to the
 * traces named after sfx, else (no file extension) to stdout. */
static int report_emit(const struct report_env *env, const struct report_view *v, const char *sfx)
{
	const struct report_writer *w = env->fmt;
	char name[256];
	bool to_stdout = env->output ? !strcmp(env->output, "-") : !w->ext;
	struct cli_out file;
	FILE *o;
	int ret;

	if (to_stdout) {
		if (w->binary && isatty(STDOUT_FILENO))
			return cli_error(CLI_EXIT_USAGE, "report", "--format %s is binary; give a file "
					 "with -o FILE", w->name);
		return w->write(stdout, v) ? cli_error(CLI_EXIT_FAIL, "report", "out of memory") : 0;
	}
	if (env->output) {
		o = report_create(&file, NULL, env->output);
	} else {
		report_writer_file(w, sfx, name, sizeof(name));
		o = report_create(&file, env->dir, name);
	}
	if (!o)
		return CLI_EXIT_FAIL;
	ret = w->write(o, v);
	if (ret) {
		cli_out_abort(&file);
		return cli_error(CLI_EXIT_FAIL, "report", "writing %s failed: %s", file.of.path,
				 strerror(-ret));
	}
	return report_close(&file);
}
/* ------------------------------------------------------------------ --diff A B */

static void report_diff_progress(void *arg, const char *path)
{
	report_progress(arg, "reading %s", path);
}

static int report_diff(struct report_env *env)
{
	const char *dirs[2] = { env->diff_a, env->diff_b };
	struct diff_load_opts lo = { .filter = &env->filter, .pid = env->pid, .by = env->by,
				     .progress = report_diff_progress, .arg = env };
	struct symbolizer *sym = sym_new();
	struct diff_table *d = diff_new();
	char err[512];
	int status = sym && d ? 0 : cli_error(CLI_EXIT_FAIL, "report", "out of memory");

	if (!status && diff_load(d, sym, dirs, &lo, err, sizeof(err)))
		status = cli_error(CLI_EXIT_FAIL, "report", "%s", err);
	report_progress_end(env);
	if (!status) {
		struct report_diff_view v = { .diff = d, .a = dirs[0], .b = dirs[1],
					      .top = env->top ? env->top : 20 };
		const char *out = env->output ? env->output :
			env->fmt->ext ? "fltrace-data-diff.out" : "-";
		struct cli_out file;
		FILE *o = strcmp(out, "-") ? report_create(&file, NULL, out) : stdout;

		if (!o) {
			status = CLI_EXIT_FAIL;
		} else if (env->fmt->write_diff(o, &v)) {
			status = cli_error(CLI_EXIT_FAIL, "report", "writing %s failed", out);
			if (o != stdout)
				cli_out_abort(&file);
		} else if (o != stdout && report_close(&file)) {
			status = CLI_EXIT_FAIL;
		}
		status = cli_stdout_flush(status);
	}
	diff_free(d);
	sym_free(sym);
	return status;
}

/* ------------------------------------------------------------------ faults without a stack */

/* One line on stderr per process whose trace holds faults without a stack: how many, and why
 * (the runtime counts the reasons in the stats file). */
static void report_note_nostack(const char *dir, const struct an_process *p)
{
	struct agg_row **rows;
	size_t n = agg_rows(p->rows, &rows);
	uint64_t none = 0, all = 0;
	char why[1024], *line;

	for (size_t i = 0; i < n; i++) {
		none += rows[i]->nostack;
		all += rows[i]->count;
	}
	if (!none)
		return;
	line = stats_last_line(dir, p->pid);
	stats_nostack_why(line, why, sizeof(why));
	cli_note("report: pid %u: %" PRIu64 " of %" PRIu64 " faults have no stack%s%s%s", p->pid,
		 none, all, why[0] ? " (" : "", why, why[0] ? ")" : "");
	free(line);
}

/* A recording of a command that touched no tracked memory for the first time (a shell builtin's
 * wrapper, /bin/true: fltrace's own heap starts before tracking does) writes a header only; said,
 * so that an empty table is not mistaken for a lost trace. */
static void report_note_no_faults(struct an_process **procs, size_t n)
{
	uint64_t seen = 0;
	for (size_t i = 0; i < n; i++)
		seen += procs[i]->faults_seen;
	if (!seen)
		cli_note("report: the recording holds no faults: the command touched no tracked memory "
			 "(its heap, anonymous or private file mappings) for the first time");
}

/* ------------------------------------------------------------------ many processes */

/* Processes ranked by faults (then by pid and exec generation): the order of their tables. */
static struct agg_table **rank_views;
static struct an_process **rank_procs;

static int report_rank_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	uint64_t fx = agg_total(rank_views[x]), fy = agg_total(rank_views[y]);

	if (fx != fy)
		return fx > fy ? -1 : 1;
	if (rank_procs[x]->pid != rank_procs[y]->pid)
		return rank_procs[x]->pid < rank_procs[y]->pid ? -1 : 1;
	return rank_procs[x]->gen < rank_procs[y]->gen ? -1 : rank_procs[x]->gen > rank_procs[y]->gen;
}

static void report_rank(struct an_process **procs, struct agg_table **views, size_t n, size_t *order)
{
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	rank_views = views;
	rank_procs = procs;
	qsort(order, n, sizeof(*order), report_rank_cmp);
}

/* A recording of a process tree starts with its processes, most faults first: which one to look
 * at (a wrapper's shells fault nothing tracked, the interpreter everything). */
static void report_print_processes(struct an_process **procs, struct agg_table **views, size_t n,
				   const size_t *order)
{
	uint64_t all = 0;
	size_t quiet = 0, pids = 0;
	char sfx[64];

	for (size_t i = 0; i < n; i++) {
		all += agg_total(views[i]);
		pids += !i || procs[i]->pid != procs[i - 1]->pid; /* traces are sorted by pid */
	}
	printf("processes by faults: %zu process%s", pids, pids == 1 ? "" : "es");
	if (pids != n)
		printf(" (%zu programs with their execs, as pid-exec)", n);
	printf(", %" PRIu64 " faults\n", all);
	printf("%10s %6s  %-12s %8s  %s\n", "FAULTS", "%", "PID", "PPID", "COMMAND");
	for (size_t k = 0; k < n; k++) {
		const struct an_process *p = procs[order[k]];
		uint64_t f = agg_total(views[order[k]]);
		if (!f) {
			quiet++;
			continue;
		}
		printf("%10" PRIu64 " %5.1f%%  %-12s %8u  %s\n", f, all ? 100.0 * (double)f / (double)all : 0,
		       report_suffix(p->pid, p->gen, sfx, sizeof(sfx)), p->ppid, p->cmdline);
	}
	if (quiet)
		printf("(%zu more process%s with no faults)\n", quiet, quiet == 1 ? "" : "es");
	putchar('\n');
}

/* ------------------------------------------------------------------ main */

/* The advice models re-fetches measured at -L SIZE (advise.h): a recording that re-fetched nothing
 * has nothing to advise on, one made at another -L advises from another program's misses. Said on
 * stderr; the CSV is written all the same. */
static void report_advise_check_recording(const struct report_env *env)
{
	struct runstats s;
	if (runstats_read_dir(&s, env->dir) || !s.files)
		return;
	double mb = 1024.0 * 1024.0;
	if (s.prefetch_hits)
		cli_note("warning: --advise: the recording ran with a prefetcher, whose %llu hits were far "
			 "transfers the advice does not count; record with --prefetch none for advice",
			 (unsigned long long)s.prefetch_hits);
	else if (!s.refetch)
		cli_note("warning: --advise: the recording re-fetched no page (recorded without -L, or with "
			 "-L above its peak), so no site has anything to save; record with -L %g", env->advise / mb);
	if (s.refetch && s.localmem != env->advise)
		cli_note("warning: --advise: the recording ran at -L %g, not %g: the advice counts its "
			 "re-fetches at %g MB; record with -L %g to advise for that size", s.localmem / mb,
			 env->advise / mb, s.localmem / mb, env->advise / mb);
}

/* --advise SIZE: the sites to keep local (advise.h), all processes (or --pid), as CSV. */
static int report_advise(const struct report_env *env)
{
	struct as_report r;
	struct advise_site *sites = NULL;
	struct advise_row *rows = NULL;
	size_t n = 0;
	char err[512];
	int status = CLI_EXIT_OK;

	report_progress(env, "%s", "reading and symbolizing");
	int ret = as_report_load(env->dir, env->pid, NULL, &r, report_warn_damaged, err, sizeof(err));
	report_progress_end(env);
	if (ret) {
		as_report_free(&r);
		return cli_error(CLI_EXIT_FAIL, "report", "%s", err);
	}
	if (advise_sites_of(&r, &sites, &n) || !(rows = calloc(n ? n : 1, sizeof(*rows)))) {
		status = cli_error(CLI_EXIT_FAIL, "report", "--advise: out of memory; report one "
				   "process (--pid)");
		goto out;
	}
	n = advise_plan(sites, n, env->advise, 4096, rows);
	report_advise_check_recording(env);
	bool to_stdout = !env->output || !strcmp(env->output, "-");
	if (to_stdout) {
		advise_write_csv(stdout, rows, n); /* its only failure is stdout's */
		status = cli_stdout_flush(status);
	} else {
		struct cli_out file;
		FILE *o = report_create(&file, NULL, env->output);
		if (!o)
			status = CLI_EXIT_FAIL;
		else if (advise_write_csv(o, rows, n)) {
			status = cli_error(CLI_EXIT_FAIL, "report", "writing %s failed", file.of.path);
			cli_out_abort(&file);
		} else if (report_close(&file)) {
			status = CLI_EXIT_FAIL;
		}
	}
out:
	free(sites);
	free(rows);
	as_report_free(&r);
	return status;
}

/* --by alloc: faults by the allocation site of the memory they hit, all processes (or --pid), to
 * the picked format's alloc form (the CSV when only per-fault views were picked). */
static int report_by_alloc(const struct report_env *env)
{
	const struct report_writer *w = env->fmt ? env->fmt : report_writer_find("csv");
	struct as_report r;
	char err[512], name[256], sfx[32];
	int status = CLI_EXIT_OK;

	report_progress(env, "%s", "reading and symbolizing");
	if (as_report_load(env->dir, env->pid, &env->filter, &r, report_warn_damaged, err, sizeof(err))) {
		report_progress_end(env);
		as_report_free(&r);
		return cli_error(CLI_EXIT_FAIL, "report", "%s", err);
	}
	report_progress_end(env);
	struct report_alloc_view v = { .sites = &r, .top = env->top };
	/* Where it goes, as for the other outputs: -o FILE (- is stdout), else stdout for a table
	 * and a file next to the traces for the CSV. */
	bool to_stdout = env->output ? !strcmp(env->output, "-") : !w->ext;
	if (to_stdout) {
		int werr = w->write_alloc(stdout, &v);
		status = cli_stdout_flush(status);
		if (werr && !status)
			status = cli_error(CLI_EXIT_FAIL, "report", "writing the allocation sites failed: %s",
					   strerror(-werr));
	} else {
		struct cli_out file;
		FILE *o;
		if (env->output) {
			o = report_create(&file, NULL, env->output);
		} else {
			if (env->pid >= 0)
				snprintf(sfx, sizeof(sfx), "alloc-%ld", env->pid);
			else
				snprintf(sfx, sizeof(sfx), "alloc-all");
			report_writer_file(w, sfx, name, sizeof(name));
			o = report_create(&file, env->dir, name);
		}
		if (!o) {
			status = CLI_EXIT_FAIL;
		} else if (w->write_alloc(o, &v)) {
			status = cli_error(CLI_EXIT_FAIL, "report", "writing %s failed: out of memory; "
					   "report one process (--pid)", file.of.path);
			cli_out_abort(&file);
		} else if (report_close(&file)) {
			status = CLI_EXIT_FAIL;
		}
	}
	as_report_free(&r);
	return status;
}

int cmd_report(int argc, char **argv)
{
	struct report_env env = { .dir = ".", .pid = -1, .fmt = report_writer_find("csv") };
	struct an_process **procs = NULL;
	struct agg_table **views = NULL, *merged = NULL;
	struct symbolizer *sym = NULL;
	struct trace_list list = { 0 };
	size_t nprocs = 0;
	char err[512], sfx[64];
	int ret, status = CLI_EXIT_OK;

	ret = report_parse_args(argc, argv, &env);
	if (ret >= 0)
		return ret;
	clock_gettime(CLOCK_MONOTONIC, &env.t0);
	env.progress = isatty(STDERR_FILENO);
	if (env.by == AGG_BY_ALLOC && (env.diff_a || (env.fmt && !env.fmt->write_alloc)))
		return cli_error(CLI_EXIT_USAGE, "report", "--by alloc writes its own CSV (or a table "
				 "with --top); leave out --diff and --format");
	if (env.by == AGG_BY_ALLOC && (env.per_fault[0] || env.per_fault[1]))
		return cli_error(CLI_EXIT_USAGE, "report", "--by alloc groups by allocation site only; "
				 "run --raw or --files in a report of their own");
	if (env.advise && (env.diff_a || env.by != AGG_BY_STACK || env.nper_fault ||
			   env.filter.kinds || env.filter.access || env.filter.has_time || env.top))
		return cli_error(CLI_EXIT_USAGE, "report", "--advise reads the whole recording by "
				 "allocation site; leave out --diff, --by, --kind, --access, --time, --top, "
				 "--raw and --files");
	if (env.advise)
		return report_advise(&env);
	if (env.diff_a)
		return report_diff(&env);
	if (env.by == AGG_BY_ALLOC)
		return report_by_alloc(&env);

	ret = trace_list_dir(env.dir, &list);
	if (ret)
		return cli_error(CLI_EXIT_FAIL, "report", "cannot read %s: %s; give the directory "
				 "of a recording with -i DIR", env.dir, strerror(-ret));
	procs = calloc(list.n + 1, sizeof(*procs));
	views = calloc(list.n + 1, sizeof(*views));
	sym = sym_new();
	if (!procs || !views || !sym) {
		status = cli_error(CLI_EXIT_FAIL, "report", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < list.n; i++) {
		struct report_sink sink = { .n = env.nper_fault };

		if (env.pid >= 0 && list.v[i].pid != (uint32_t)env.pid)
			continue;
		report_progress(&env, "reading %s", list.v[i].path);
		for (size_t k = 0; k < sink.n; k++)
			sink.v[k].w = env.per_fault[k];
		if (report_sink_open(&sink, &env, &list.v[i])) {
			report_sink_close(&sink, false, 0);
			status = CLI_EXIT_FAIL;
			goto out;
		}
		ret = an_process_load(list.v[i].path, &env.filter, sink.n ? report_fault_cb : NULL,
				      &sink, &procs[nprocs], err, sizeof(err));
		if (report_sink_close(&sink, !ret, ret ? 0 : procs[nprocs]->start_ns))
			status = CLI_EXIT_FAIL;
		if (ret) {
			/* One bad file does not hide the other processes. */
			cli_error(CLI_EXIT_FAIL, "report", "%s", err);
			status = CLI_EXIT_FAIL;
			continue;
		}
		/* A damaged trace is reported up to the damage, and the exit status says so. */
		if (procs[nprocs]->damaged)
			status = cli_error(CLI_EXIT_FAIL, list.v[i].path, "%s", procs[nprocs]->warning);
		else if (procs[nprocs]->warning[0])
			report_warn_damaged(list.v[i].path, procs[nprocs]->warning);
		nprocs++;
	}
	if (!nprocs) {
		if (status == CLI_EXIT_OK) {
			if (env.pid >= 0 && list.n)
				status = cli_error(CLI_EXIT_FAIL, "report", "no trace of pid %ld in "
						   "%s; leave out --pid to see all processes",
						   env.pid, env.dir);
			else
				status = cli_error(CLI_EXIT_FAIL, "report", "no trace in %s; run "
						   "'fltrace record' first", env.dir);
		}
		goto out;
	}
	if (!env.fmt)
		goto out; /* only per-fault views were asked for */

	report_progress(&env, "%s", "symbolizing");
	for (size_t i = 0; i < nprocs; i++) {
		ret = agg_symbolize(procs[i]->rows, sym, procs[i]->maps);
		if (ret)
			break;
	}
	if (!ret)
		ret = sym_resolve(sym);
	if (ret) {
		status = cli_error(CLI_EXIT_FAIL, "report", "symbolization failed: %s",
				   strerror(-ret));
		goto out;
	}
	report_progress(&env, "%s", "writing");
	if (env.merge || env.output || env.fmt->merge_always) {
		merged = agg_new();
		if (!merged) {
			ret = -ENOMEM;
			goto nomem;
		}
	}
	for (size_t i = 0; i < nprocs; i++) {
		if (merged) {
			ret = agg_regroup(merged, procs[i]->rows, env.by, sym);
		} else {
			views[i] = agg_new();
			ret = views[i] ? agg_regroup(views[i], procs[i]->rows, env.by, sym) : -ENOMEM;
		}
		if (ret)
			goto nomem;
	}
	report_progress_end(&env);

	if (merged) {
		struct report_view v = { .rows = merged, .sym = sym, .title = "all processes",
					 .exe = procs[0]->exe, .pid = procs[0]->pid,
					 .start_ns = procs[0]->start_ns, .top = env.top,
					 .by = env.by };
		status = report_emit(&env, &v, "all");
	} else {
		size_t quiet = 0, *order = calloc(nprocs, sizeof(*order));
		bool terminal = !env.fmt->ext;
		if (!order)
			goto nomem;
		report_rank(procs, views, nprocs, order);
		if (terminal && nprocs > 1)
			report_print_processes(procs, views, nprocs, order);
		for (size_t k = 0; k < nprocs; k++) {
			size_t i = terminal ? order[k] : k;
			char title[4200];
			/* Wrappers (env, a pyenv shim's bash) fault nothing tracked: one line for all. */
			if (terminal && agg_total(views[i]) == 0 && nprocs > 1) {
				quiet++;
				continue;
			}
			report_suffix(procs[i]->pid, procs[i]->gen, sfx, sizeof(sfx));
			snprintf(title, sizeof(title), "pid %s (%s)", sfx, procs[i]->cmdline);
			struct report_view v = { .rows = views[i], .sym = sym, .title = title,
						 .exe = procs[i]->exe, .pid = procs[i]->pid,
						 .start_ns = procs[i]->start_ns, .top = env.top,
						 .by = env.by };
			if (report_emit(&env, &v, sfx))
				status = CLI_EXIT_FAIL;
		}
		free(order);
		if (quiet)
			printf("(%zu more process%s with no faults)\n", quiet, quiet == 1 ? "" : "es");
	}
	for (size_t i = 0; i < nprocs && status == CLI_EXIT_OK; i++) /* a failure: its one line */
		report_note_nostack(env.dir, procs[i]);
	if (status == CLI_EXIT_OK && env.pid < 0) /* one process chosen: the others may have faults */
		report_note_no_faults(procs, nprocs);
	status = cli_stdout_flush(status);
	goto out;
nomem:
	status = cli_error(CLI_EXIT_FAIL, "report", "out of memory; report fewer processes "
			   "(--pid) or a shorter window (--time)");
out:
	for (size_t i = 0; i < nprocs; i++) {
		an_process_free(procs[i]);
		agg_free(views[i]);
	}
	agg_free(merged);
	free(procs);
	free(views);
	sym_free(sym);
	trace_list_free(&list);
	return status;
}
