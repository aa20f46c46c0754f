/* `fltrace sweep`: one `fltrace record` per local-memory size (given, or halvings of an ample run's
 * peak) and policy, each in its directory, the output checked unchanged; sweep_report.c writes. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fltrace/policies.h"

#include <fltrace/parse.h>

#include "../src/analysis/report.h"
#include "../src/analysis/svg_common.h"
#include "builtin.h"
#include "cli.h"
#include "record.h"
#include "sweep.h"

#define SWEEP_DEFAULT_DIR "fltrace-sweep"
#define SWEEP_MAX_FORWARD 16
#define SWEEP_AUTO_STEPS 4          /* ample, 1/2, 1/4, 1/8, 1/16 */
#define SWEEP_MIN_LOCAL (64 << 10)  /* record's least -L: 16 pages of 4 KiB */
#define SWEEP_PAGE 4096ull

enum { OPT_POLICY = 256, OPT_TOP, OPT_CORES, OPT_DEPTH, OPT_POLL, OPT_FILES, OPT_PREFETCH };

static const struct option sweep_longopts[] = {
	{ "localmem", required_argument, NULL, 'L' },
	{ "maxmem", required_argument, NULL, 'M' },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "prefetch", required_argument, NULL, OPT_PREFETCH },
	{ "output", required_argument, NULL, 'o' },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "handlers", required_argument, NULL, 'C' },
	{ "samplerate", required_argument, NULL, 'S' },
	{ "cores", required_argument, NULL, OPT_CORES },
	{ "depth", required_argument, NULL, OPT_DEPTH },
	{ "poll", required_argument, NULL, OPT_POLL },
	{ "files", required_argument, NULL, OPT_FILES },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char sweep_usage[] =
"usage: fltrace sweep [-L <sizes>] [--policy <list>] [-M <size>] [-o <dir>] [record options]\n"
"                     [--] <command> [<args>...]\n"
"\n"
"Runs <command> under 'fltrace record' once per local-memory size and eviction policy, each run\n"
"in its own directory under <dir>, and draws how the faults and the run time grow as local\n"
"memory shrinks: the miss-ratio curve. The command's output and exit status must be the same in\n"
"every run; a difference is reported and the sweep exits 1.\n"
"\n"
"options:\n"
"  -L, --localmem <sizes>  comma-separated local-memory sizes, e.g. 16,32,64,128 or 512K,1G\n"
"                          (MB unless a unit is given). Without -L, a first run with ample\n"
"                          memory (-L = -M) measures the peak resident memory P, and the\n"
"                          sizes are P/2, P/4, P/8 and P/16\n"
"      --policy <list>     eviction policies to compare, e.g. 2q,fifo,clock (default: record's,\n"
"                          " FLTRACE_POLICY_DEFAULT "); every size runs once per policy\n"
"      --prefetch <list>   prefetchers to compare, e.g. none,readahead: every size and policy\n"
"                          runs once per prefetcher, a curve each, named <policy>+<prefetcher>\n"
"                          (<policy> alone for none)\n"
"  -M, --maxmem <size>     local + far memory of every run (default: this machine's memory)\n"
"  -o, --output <dir>      where the runs go (default ./" SWEEP_DEFAULT_DIR "); each run in\n"
"                          <dir>/ample or <dir>/L<size>-<policy>, a trace 'fltrace report' and\n"
"                          'fltrace visualize' read\n"
"      --top <n>           callsites shown in the table on stdout (default 15; all in the CSV)\n"
"  -C, -S, --cores, --depth, --poll, --files\n"
"                          passed to every 'fltrace record' (see 'fltrace record --help')\n"
"  -h, --help              this help\n"
"\n"
"Written in <dir>:\n";

static const char sweep_usage_rest[] =
"  <run>/stdout, <run>/stderr\n"
"                  the command's own output in that run (its stderr also holds record's notes)\n"
"Slowdown is wall time relative to the ample run, or with -L to the largest size of the same\n"
"policy. Wall time is that of the whole 'fltrace record' run. The command's stdin, if it is\n"
"not a terminal, is read once and given again to every run; a terminal is not read (each run\n"
"gets /dev/null).\n"
"\n"
"exit status: 0 when every run went and printed the same; 1 when the output differed between\n"
"runs or the results could not be written; 2 for a usage error; else the status of the run that\n"
"could not be traced (as 'fltrace record').\n"
"\n"
"examples:\n"
"  fltrace sweep -- ./bfs -g 18 -n 1\n"
"      ample run, then 1/2 .. 1/16 of its peak; open fltrace-sweep/curve.svg\n"
"  fltrace sweep -L 16,32,64,128 --policy clock,fifo -M 1000 -o runs -- python3 train.py\n"
"      four sizes under both policies: eight runs in runs/L16M-clock .. runs/L128M-fifo\n"
"  fltrace report -i runs/L16M-fifo --by line --top 20\n"
"      then look closer at one run, as at any recording\n";

/* The usage text with the files of the writers table. */
static void sweep_help(void)
{
	fputs(sweep_usage, stdout);
	report_writers_usage(stdout, WR_SWEEP, 16);
	fputs(sweep_usage_rest, stdout);
}

/* ---- options ---- */

struct sweep_opts {
	uint64_t sizes[SWEEP_MAX_SIZES];
	size_t nsizes;
	uint64_t maxmem;
	char *forward[SWEEP_MAX_FORWARD]; /* record options, as "--name=value" */
	size_t nforward;
	char policy_buf[64];
	char prefetch_buf[64];
	const char *prefetches[FLTRACE_PREFETCH_COUNT]; /* --prefetch: each size and policy runs under each */
	size_t nprefetches;
	char labels[SWEEP_MAX_POLICIES][48];            /* "policy+prefetcher", the curves' series */
};

static int sweep_bad_size(const char *arg, const char *tok, int err)
{
	return cli_error(CLI_EXIT_USAGE, "-L", "'%s' in '%s' %s; give sizes separated by commas, "
			 "e.g. -L 16,32,64 (MB) or -L 512K,1G", tok, arg, parse_strerror(err));
}

static int sweep_cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x > y ? -1 : x < y;
}

/* A list with an empty item ("2q,,fifo", "none,"): strtok would skip it, and a typo would go
 * unseen; refused with one message (CLI_EXIT_USAGE), e.g. "give sizes such as 16,32,64". An empty
 * list is the callers' own "no size" message. */
static int sweep_list_empty_item(const char *opt, const char *arg, const char *example)
{
	size_t n = strlen(arg);
	if (!n || (arg[0] != ',' && arg[n - 1] != ',' && !strstr(arg, ",,")))
		return 0;
	return cli_error(CLI_EXIT_USAGE, opt, "'%s' has an empty item; give a list without one, e.g. %s",
			 arg, example);
}

/* "-L 16,32,64": sorted largest first, duplicates dropped. */
static int sweep_parse_sizes(const char *arg, struct sweep_opts *o)
{
	char buf[512], *save = NULL;
	size_t n = 0;

	if (strlen(arg) >= sizeof(buf))
		return cli_error(CLI_EXIT_USAGE, "-L", "the list is too long; give at most %d sizes",
				 SWEEP_MAX_SIZES);
	int empty = sweep_list_empty_item("-L", arg, "16,32,64");
	if (empty)
		return empty;
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		int err = parse_size(tok, PARSE_MIB, &v);
		if (err)
			return sweep_bad_size(arg, tok, err);
		if (n == SWEEP_MAX_SIZES)
			return cli_error(CLI_EXIT_USAGE, "-L", "more than %d sizes in '%s'; give fewer",
					 SWEEP_MAX_SIZES, arg);
		o->sizes[n++] = v;
	}
	if (!n)
		return sweep_bad_size(arg, arg, -PARSE_EMPTY);
	qsort(o->sizes, n, sizeof(o->sizes[0]), sweep_cmp_desc);
	o->nsizes = 0;
	for (size_t i = 0; i < n; i++)
		if (!o->nsizes || o->sizes[o->nsizes - 1] != o->sizes[i])
			o->sizes[o->nsizes++] = o->sizes[i];
	return 0;
}

static int sweep_parse_policies(const char *arg, struct sweep_opts *o, struct sweep *s)
{
	char *save = NULL;

	int empty = sweep_list_empty_item("--policy", arg, "2q,fifo");
	if (empty)
		return empty;
	snprintf(o->policy_buf, sizeof(o->policy_buf), "%s", arg);
	s->npolicies = 0;
	for (char *tok = strtok_r(o->policy_buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char names[256];
		if (fltrace_policy_find(tok) < 0)
			return cli_error(CLI_EXIT_USAGE, "--policy", "'%s' is not a policy; give a list of "
					 "%s, e.g. 2q,fifo", tok, fltrace_policy_list(names, sizeof(names)));
		if (s->npolicies == SWEEP_MAX_POLICIES)
			return cli_error(CLI_EXIT_USAGE, "--policy", "more than %d policies in '%s'; give "
					 "fewer", SWEEP_MAX_POLICIES, arg);
		for (size_t i = 0; i < s->npolicies; i++)
			if (!strcmp(s->policies[i], tok))
				return cli_error(CLI_EXIT_USAGE, "--policy", "'%s' is given twice; give "
						 "each policy once, e.g. 2q,fifo", tok);
		s->policies[s->npolicies++] = tok;
	}
	if (!s->npolicies)
		return cli_error(CLI_EXIT_USAGE, "--policy", "no policy in '%s'; give one or more, "
				 "e.g. 2q,fifo", arg);
	return 0;
}

/* A record option passed on as "--name=value", checked first as record checks it: a bad value
 * stops the sweep before any run. */
static int sweep_forward(struct sweep_opts *o, const char *name, const char *arg)
{
	char *opt;
	int err = record_check_option(name, arg);

	if (err)
		return err;
	if (o->nforward == SWEEP_MAX_FORWARD)
		return cli_error(CLI_EXIT_USAGE, "sweep", "too many record options; give each once");
	if (asprintf(&opt, "--%s=%s", name, arg[0] == '=' ? arg + 1 : arg) < 0)
		return cli_error(CLI_EXIT_FAIL, "sweep", "out of memory; retry");
	o->forward[o->nforward++] = opt;
	return 0;
}

/* --prefetch a,b: each prefetcher of the list once. */
static int sweep_parse_prefetches(const char *arg, struct sweep_opts *o)
{
	char *save = NULL, names[128];

	int empty = sweep_list_empty_item("--prefetch", arg, "none,readahead");
	if (empty)
		return empty;
	snprintf(o->prefetch_buf, sizeof(o->prefetch_buf), "%s", arg);
	o->nprefetches = 0;
	for (char *tok = strtok_r(o->prefetch_buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (fltrace_prefetch_find(tok) < 0)
			return cli_error(CLI_EXIT_USAGE, "--prefetch", "'%s' is not a prefetcher; give a list "
					 "of %s, e.g. none,readahead", tok, fltrace_prefetch_list(names, sizeof(names)));
		for (size_t i = 0; i < o->nprefetches; i++)
			if (!strcmp(o->prefetches[i], tok))
				return cli_error(CLI_EXIT_USAGE, "--prefetch", "'%s' is given twice; give each "
						 "prefetcher once, e.g. none,readahead", tok);
		o->prefetches[o->nprefetches++] = tok;
	}
	if (!o->nprefetches)
		return cli_error(CLI_EXIT_USAGE, "--prefetch", "no prefetcher in '%s'; give one or more, "
				 "e.g. none,readahead", arg);
	return 0;
}

/* With --prefetch, each policy runs under each prefetcher: a series "policy+prefetcher" each
 * ("policy" alone for none), which the runs, their directories and the curves are named by. */
static int sweep_series(struct sweep_opts *o, struct sweep *s)
{
	if (!o->nprefetches)
		return 0;
	if (s->npolicies * o->nprefetches > SWEEP_MAX_POLICIES)
		return cli_error(CLI_EXIT_USAGE, "--prefetch", "%zu policies times %zu prefetchers is more "
				 "than %d series; give fewer of either", s->npolicies, o->nprefetches,
				 SWEEP_MAX_POLICIES);
	const char *pol[SWEEP_MAX_POLICIES];
	size_t npol = s->npolicies, n = 0;
	memcpy(pol, s->policies, sizeof(pol));
	for (size_t p = 0; p < npol; p++)
		for (size_t f = 0; f < o->nprefetches; f++, n++) {
			if (strcmp(o->prefetches[f], "none"))
				snprintf(o->labels[n], sizeof(o->labels[n]), "%s+%s", pol[p], o->prefetches[f]);
			else
				snprintf(o->labels[n], sizeof(o->labels[n]), "%s", pol[p]);
			s->policies[n] = o->labels[n];
		}
	s->npolicies = n;
	return 0;
}

static int sweep_parse_one(int c, const char *arg, struct sweep_opts *o, struct sweep *s)
{
	uint64_t v;
	int err;

	if (arg && arg[0] == '=') /* "-L=16" */
		arg++;
	switch (c) {
	case 'L': return sweep_parse_sizes(arg, o);
	case 'M':
		err = parse_size(arg, PARSE_MIB, &o->maxmem);
		return err ? cli_error(CLI_EXIT_USAGE, "-M", "'%s' %s; give a size in MB, e.g. 1000, "
				       "or with a unit, e.g. 2G", arg, parse_strerror(err)) : 0;
	case OPT_POLICY: return sweep_parse_policies(arg, o, s);
	case OPT_PREFETCH: return sweep_parse_prefetches(arg, o);
	case 'o':
		if (!*arg)
			return cli_error(CLI_EXIT_USAGE, "-o", "the directory name is empty; give a "
					 "directory, e.g. -o runs");
		s->outdir = arg;
		return 0;
	case OPT_TOP:
		err = parse_u64(arg, 1, 100000, &v);
		if (err)
			return cli_error(CLI_EXIT_USAGE, "--top", "'%s' %s; give a number of callsites, "
					 "e.g. --top 20", arg, parse_strerror(err));
		s->top = (long)v;
		return 0;
	case 'C': return sweep_forward(o, "handlers", arg);
	case 'S': return sweep_forward(o, "samplerate", arg);
	case OPT_CORES: return sweep_forward(o, "cores", arg);
	case OPT_DEPTH: return sweep_forward(o, "depth", arg);
	case OPT_POLL: return sweep_forward(o, "poll", arg);
	case OPT_FILES: return sweep_forward(o, "files", arg);
	default: return 0;
	}
}

/* Returns 0, -1 for --help (printed), or an exit code. */
static int sweep_parse(int argc, char **argv, struct sweep_opts *o, struct sweep *s)
{
	int c, err;

	optind = 0; /* glibc: full re-initialisation */
	opterr = 0;
	static const char optstring[] = "+:L:M:C:S:o:h";
	while ((c = getopt_long(argc, argv, optstring, sweep_longopts, NULL)) != -1) {
		if (c == 'h') {
			sweep_help();
			return -1;
		}
		if (c == '?')
			return cli_error(CLI_EXIT_USAGE, argv[optind - 1], "unknown option of sweep; run "
					 "'fltrace sweep --help' (put the command after '--' if the "
					 "option is the command's)");
		if (c == ':')
			return cli_error(CLI_EXIT_USAGE, argv[optind - 1], "needs a value; run 'fltrace "
					 "sweep --help'");
		if ((err = cli_value_left_out(argv, "sweep", optstring, sweep_longopts)))
			return err;
		if ((err = sweep_parse_one(c, optarg, o, s)))
			return err;
	}
	s->cmd_argv = argv + optind;
	if (!s->cmd_argv[0])
		return cli_error(CLI_EXIT_USAGE, "sweep", "no command given; put it after the options, "
				 "e.g. 'fltrace sweep -L 16,32,64 -- ./prog args'");
	return 0;
}

/* ---- the run list ---- */

/* A size chosen by sweep: rounded up to two significant digits of K, M or G (then to a page), so
 * that its run is named as people say it ("L110M", "L4.1M", not "L111716K") and its tick reads
 * "110 MiB". The name goes to name. */
static uint64_t sweep_round_size(uint64_t bytes, char *name, size_t len)
{
	char c = bytes >= (1ull << 30) ? 'G' : bytes >= (1ull << 20) ? 'M' : 'K';
	double unit = c == 'G' ? 1073741824.0 : c == 'M' ? 1048576.0 : 1024.0;
	double v = (double)bytes / unit, step = v >= 100 ? 10 : v >= 10 ? 1 : 0.1;
	double r = ceil(v / step - 1e-9) * step;

	if (step < 1 && r != floor(r))
		snprintf(name, len, "%.1f%c", r, c);
	else
		snprintf(name, len, "%.0f%c", r, c);
	return ((uint64_t)ceil(r * unit) + SWEEP_PAGE - 1) & ~(SWEEP_PAGE - 1);
}

static void sweep_size_name(char *buf, size_t len, uint64_t bytes)
{
	if (bytes % (1ull << 20) == 0)
		snprintf(buf, len, "%lluM", (unsigned long long)(bytes >> 20));
	else
		snprintf(buf, len, "%lluK", (unsigned long long)((bytes + 1023) >> 10));
}

/* sz: the size's name, or NULL to name it from localmem. */
static int sweep_add_run(struct sweep *s, uint64_t localmem, const char *policy, bool ample,
			 const char *sz)
{
	struct sweep_run *r = &s->runs[s->nruns];
	char own[32];

	if (s->nruns == SWEEP_MAX_RUNS)
		return -E2BIG;
	memset(r, 0, sizeof(*r));
	r->localmem = localmem;
	r->policy = policy;
	r->ample = ample;
	r->slowdown = -1;
	if (!sz) {
		sweep_size_name(own, sizeof(own), localmem);
		sz = own;
	}
	if (ample)
		snprintf(r->name, sizeof(r->name), "ample");
	else
		snprintf(r->name, sizeof(r->name), "L%s-%s", sz, policy);
	size_t dl = strlen(s->outdir), nl = strlen(r->name);
	if (dl + 1 + nl >= sizeof(r->dir))
		return -ENAMETOOLONG;
	memcpy(r->dir, s->outdir, dl);
	r->dir[dl] = '/';
	memcpy(r->dir + dl + 1, r->name, nl + 1);
	s->nruns++;
	return 0;
}

/* Halvings of the ample run's peak, rounded up to two significant digits, down to record's least
 * -L. */
static int sweep_add_auto_runs(struct sweep *s, uint64_t peak)
{
	int err = 0;
	char sz[32];

	for (size_t p = 0; p < s->npolicies && !err; p++)
		for (int k = 1; k <= SWEEP_AUTO_STEPS && !err; k++) {
			if ((peak >> k) < SWEEP_MIN_LOCAL)
				break;
			err = sweep_add_run(s, sweep_round_size(peak >> k, sz, sizeof(sz)), s->policies[p],
					    false, sz);
		}
	return err;
}

/* ---- one run ---- */

/* The command's stdin for every run: a file to reopen, or none (/dev/null). */
struct sweep_stdin {
	char path[PATH_MAX]; /* "" for /dev/null */
	off_t offset;        /* where a seekable stdin was when the sweep started */
	bool seekable;       /* fd 0 itself, rewound before each run */
};

/* A terminal is not read (each run would wait for the user); a file is rewound before each run;
 * a pipe is read once into <dir>/stdin. */
static int sweep_prepare_stdin(const struct sweep *s, struct sweep_stdin *in)
{
	struct stat st;
	char buf[65536];
	ssize_t n, saved = 0;

	memset(in, 0, sizeof(*in));
	if (fstat(0, &st) != 0 || isatty(0))
		return 0;
	if (S_ISREG(st.st_mode) && (in->offset = lseek(0, 0, SEEK_CUR)) >= 0) {
		in->seekable = true;
		return 0;
	}
	struct outfile out;
	snprintf(in->path, sizeof(in->path), "%s/stdin", s->outdir);
	int err = outfile_begin(&out, in->path);
	if (err)
		return cli_out_error(in->path, err);
	while ((n = read(0, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out.fd, buf, (size_t)n) != n) {
			int e = errno;
			outfile_abort(&out);
			return cli_error(CLI_EXIT_FAIL, in->path, "cannot save the command's stdin (%s); "
					 "free some space or give another -o DIR", strerror(e));
		}
		saved += n;
	}
	if (!saved) { /* /dev/null, an empty pipe: nothing to keep */
		outfile_abort(&out);
		in->path[0] = 0;
	} else if ((err = outfile_commit(&out))) {
		return cli_out_error(in->path, err);
	}
	return 0;
}

/* The run's stdout and stderr files, made by the sweep before the run (and renamed into place
 * after it), so that a name in the way is one message of the sweep's own. */
struct sweep_outputs {
	struct outfile out, err;
};

/* In the child: stdin, stdout and stderr as the run wants them, then `fltrace record`. */
static void sweep_exec_record(const struct sweep_stdin *in, const struct sweep_outputs *o,
			      char **argv)
{
	int fd;

	if (in->seekable) {
		lseek(0, in->offset, SEEK_SET);
	} else {
		fd = open(in->path[0] ? in->path : "/dev/null", O_RDONLY);
		if (fd < 0 || dup2(fd, 0) < 0)
			_exit(CLI_EXIT_NOTRACE);
		close(fd);
	}
	if (dup2(o->out.fd, 1) < 0 || dup2(o->err.fd, 2) < 0)
		_exit(CLI_EXIT_NOTRACE);
	execv("/proc/self/exe", argv);
	fprintf(stderr, "fltrace: sweep: cannot run fltrace record (%s)\n", strerror(errno));
	_exit(CLI_EXIT_NOTRACE);
}

static int sweep_outputs_begin(const struct sweep_run *r, struct sweep_outputs *o)
{
	char path[PATH_MAX + 16];
	int err;

	snprintf(path, sizeof(path), "%s/stdout", r->dir);
	if ((err = outfile_begin(&o->out, path)))
		return cli_out_error(path, err);
	snprintf(path, sizeof(path), "%s/stderr", r->dir);
	if ((err = outfile_begin(&o->err, path))) {
		outfile_abort(&o->out);
		return cli_out_error(path, err);
	}
	return 0;
}

static void sweep_outputs_abort(struct sweep_outputs *o)
{
	outfile_abort(&o->out);
	outfile_abort(&o->err);
}

static int sweep_outputs_commit(struct sweep_outputs *o)
{
	int err = outfile_commit(&o->out);
	if (err) {
		outfile_abort(&o->err);
		return cli_out_error(o->out.path, err);
	}
	if ((err = outfile_commit(&o->err)))
		return cli_out_error(o->err.path, err);
	return 0;
}

/* The record child, for the forwarding handler: a signal handler can reach nothing else. */
static volatile sig_atomic_t sweep_child, sweep_stop;

static void sweep_on_signal(int sig)
{
	int saved = errno;

	sweep_stop = sig;
	if (sweep_child > 0)
		kill((pid_t)sweep_child, sig);
	errno = saved;
}

/* SIGINT/SIGQUIT from the terminal reach the whole group (record ignores them, the command
 * dies): the sweep stops after the run. SIGTERM/SIGHUP to the sweep alone are passed on. */
static void sweep_signals(void)
{
	struct sigaction sa = { .sa_handler = sweep_on_signal, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static double sweep_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The argv of `fltrace record` for one run. */
static char **sweep_record_argv(const struct sweep *s, const struct sweep_opts *o,
				const struct sweep_run *r, char *lbuf, char *mbuf, char *pbuf)
{
	size_t n = 0, ncmd = 0;
	char **argv;

	while (s->cmd_argv[ncmd])
		ncmd++;
	argv = calloc(14 + o->nforward + ncmd, sizeof(*argv));
	if (!argv)
		return NULL;
	/* Whole KiB: record reads a bare number as MB. */
	snprintf(lbuf, 32, "%lluK", (unsigned long long)((r->localmem + 1023) >> 10));
	snprintf(mbuf, 32, "%lluK", (unsigned long long)((s->maxmem + 1023) >> 10));
	argv[n++] = "fltrace";
	argv[n++] = "record";
	argv[n++] = "-L";
	argv[n++] = lbuf;
	argv[n++] = "-M";
	argv[n++] = mbuf;
	/* A series "policy+prefetcher" runs as --policy policy --prefetch prefetcher. */
	const char *plus = strchr(r->policy, '+');
	snprintf(pbuf, 32, "%.*s", plus ? (int)(plus - r->policy) : (int)strlen(r->policy), r->policy);
	argv[n++] = "--policy";
	argv[n++] = pbuf;
	argv[n++] = "--prefetch";
	argv[n++] = (char *)(plus ? plus + 1 : "none");
	argv[n++] = "-o";
	argv[n++] = (char *)r->dir;
	for (size_t i = 0; i < o->nforward; i++)
		argv[n++] = o->forward[i];
	argv[n++] = "--";
	for (size_t i = 0; i < ncmd; i++)
		argv[n++] = s->cmd_argv[i];
	return argv;
}

static int sweep_run_one(const struct sweep *s, const struct sweep_opts *o, struct sweep_run *r,
			 const struct sweep_stdin *in)
{
	struct sweep_outputs out;
	char lbuf[32], mbuf[32], pbuf[32];
	char **argv;
	double t0;
	pid_t pid;
	int ws, err = outfile_mkdir(r->dir);

	if (err)
		return cli_out_error(r->dir, err);
	if ((err = sweep_outputs_begin(r, &out)))
		return err;
	argv = sweep_record_argv(s, o, r, lbuf, mbuf, pbuf);
	if (!argv) {
		sweep_outputs_abort(&out);
		return cli_error(CLI_EXIT_FAIL, "sweep", "out of memory; retry");
	}
	fflush(NULL);
	t0 = sweep_now();
	pid = fork();
	if (pid == 0)
		sweep_exec_record(in, &out, argv);
	free(argv);
	if (pid < 0) {
		sweep_outputs_abort(&out);
		return cli_error(CLI_EXIT_NOTRACE, "sweep", "cannot start fltrace record (fork: %s); "
				 "free some memory or processes and retry", strerror(errno));
	}
	sweep_child = pid;
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR) {
			err = errno;
			sweep_outputs_abort(&out);
			return cli_error(CLI_EXIT_NOTRACE, "sweep", "cannot wait for fltrace record (%s); "
					 "this should not happen, please report it", strerror(err));
		}
	sweep_child = 0;
	r->wall_s = sweep_now() - t0;
	r->status = WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
	if ((err = sweep_outputs_commit(&out)))
		return err;
	runstats_read_dir(&r->st, r->dir);
	r->done = r->st.files > 0;
	return 0;
}

/* ---- output checks ---- */

/* Whether two files have the same bytes; else *line is the first line that differs (1-based). */
static int sweep_same_file(const char *a, const char *b, bool *same, long *line)
{
	FILE *fa = fopen(a, "re"), *fb = fopen(b, "re");
	int ca, cb, err = 0;

	*same = true;
	*line = 1;
	if (!fa || !fb) {
		err = -errno;
	} else {
		do {
			ca = getc(fa);
			cb = getc(fb);
			if (ca != cb)
				*same = false;
			else if (ca == '\n')
				(*line)++;
		} while (*same && ca != EOF);
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return err;
}

static void sweep_check_output(const struct sweep_run *first, struct sweep_run *r)
{
	char pa[PATH_MAX + 16], pb[PATH_MAX + 16];
	bool same;
	long line;

	snprintf(pa, sizeof(pa), "%s/stdout", first->dir);
	snprintf(pb, sizeof(pb), "%s/stdout", r->dir);
	if (sweep_same_file(pa, pb, &same, &line)) {
		r->output_differs = true;
		snprintf(r->differs_how, sizeof(r->differs_how), "its stdout could not be read");
	} else if (!same) {
		r->output_differs = true;
		snprintf(r->differs_how, sizeof(r->differs_how), "stdout differs from line %ld", line);
	} else if (r->status != first->status) {
		r->output_differs = true;
		snprintf(r->differs_how, sizeof(r->differs_how), "exit status %d, not %d (see its "
			 "stderr)", r->status, first->status);
	}
	if (r->output_differs)
		cli_note("sweep: %s: %s of %s (see %s/stdout)", r->name, r->differs_how, first->name,
			 r->dir);
}

/* A run that wrote no trace stops the sweep: what record said (one line for a usage error) is
 * shown as it is, then where the rest is. */
static int sweep_failed_run(const struct sweep_run *r)
{
	char path[PATH_MAX + 16], line[1024];
	FILE *f;
	unsigned shown = 0;

	snprintf(path, sizeof(path), "%s/stderr", r->dir);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f) && shown < 20) {
		fputs(line, stderr);
		shown++;
	}
	if (f)
		fclose(f);
	if (shown && (r->status == CLI_EXIT_USAGE || r->status == CLI_EXIT_NOTFOUND))
		return r->status;
	cli_error(r->status ? r->status : CLI_EXIT_NOTRACE, "sweep", "the run %s wrote no trace (exit "
		  "status %d); see %s/stderr and fix what it says, then run the sweep again",
		  r->name, r->status, r->dir);
	return r->status ? r->status : CLI_EXIT_NOTRACE;
}

static void sweep_progress(const struct sweep *s, size_t i, double last_s)
{
	const struct sweep_run *r = &s->runs[i];
	char sz[32], last[64] = "";

	svg_fmt_bytes(sz, sizeof(sz), (double)r->localmem);
	if (i)
		snprintf(last, sizeof(last), " (the last run took %.2f s)", last_s);
	/* Before the ample run has measured the peak, the sizes (not their number) are unknown. */
	size_t total = s->auto_sizes && s->nruns == 1 ? 1 + SWEEP_AUTO_STEPS * s->npolicies : s->nruns;
	cli_note("sweep: run %zu/%zu: %s, -L %s%s%s%s", i + 1, total, r->name, sz,
		 r->ample ? "" : ", ", r->ample ? "" : r->policy, last);
}

/* The first run's command ended in failure: how, in one note. */
static void sweep_note_command_failed(const struct sweep_run *r)
{
	char how[96];
	int sig = r->status - 128;
	if (sig > 0 && sig < NSIG)
		snprintf(how, sizeof(how), "was killed by signal %d (%s)", sig, strsignal(sig));
	else
		snprintf(how, sizeof(how), "exited with status %d", r->status);
	cli_note("sweep: %s: the command %s; its stderr is in %s/stderr, and the other runs are compared "
		 "with this one", r->name, how, r->dir);
}

/* Runs s->runs[from..] in order; stops at the first run that could not be traced. */
static int sweep_run_from(struct sweep *s, const struct sweep_opts *o, size_t from,
			  const struct sweep_stdin *in)
{
	for (size_t i = from; i < s->nruns; i++) {
		struct sweep_run *r = &s->runs[i];
		int err;

		sweep_progress(s, i, i ? s->runs[i - 1].wall_s : 0);
		if ((err = sweep_run_one(s, o, r, in)))
			return err;
		if (!r->done)
			return sweep_failed_run(r);
		if (i)
			sweep_check_output(&s->runs[0], r);
		else if (r->status) /* the same in every run is no difference: said once, here */
			sweep_note_command_failed(r);
		if (sweep_stop)
			return cli_error(128 + sweep_stop, "sweep", "stopped by signal %d after the run "
					 "%s; the runs so far are in %s", (int)sweep_stop, r->name,
					 s->outdir);
	}
	return 0;
}

static int sweep_plan_given(struct sweep *s, const struct sweep_opts *o)
{
	for (size_t p = 0; p < s->npolicies; p++)
		for (size_t i = 0; i < o->nsizes; i++)
			if (sweep_add_run(s, o->sizes[i], s->policies[p], false, NULL))
				return cli_error(CLI_EXIT_USAGE, "-o", "the output directory's path is too "
						 "long; give a shorter -o DIR");
	return 0;
}

/* The ample run first; its peak gives the sizes of the others. */
static int sweep_run_auto(struct sweep *s, const struct sweep_opts *o, const struct sweep_stdin *in)
{
	int err;

	if (sweep_add_run(s, s->maxmem, s->policies[0], true, NULL))
		return cli_error(CLI_EXIT_USAGE, "-o", "the output directory's path is too long; give "
				 "a shorter -o DIR");
	if ((err = sweep_run_from(s, o, 0, in)))
		return err;
	if (s->runs[0].st.resident_peak < 2 * SWEEP_MIN_LOCAL)
		return cli_error(CLI_EXIT_FAIL, "sweep", "the ample run's peak resident memory is %llu "
				 "bytes: too little to sweep below it; give the sizes with -L, or check "
				 "%s/stderr", (unsigned long long)s->runs[0].st.resident_peak, s->runs[0].dir);
	sweep_add_auto_runs(s, s->runs[0].st.resident_peak);
	return sweep_run_from(s, o, 1, in);
}

/* The command, checked as record checks it, before any run starts or any directory is made: a
 * misspelt command is one line and nothing on disk, not "run 1/5" and an empty run directory. */
static int sweep_check_command(const struct sweep *s)
{
	static struct record_opts ro; /* large (paths): not on the stack */
	int err;

	memset(&ro, 0, sizeof(ro));
	ro.cmd_argv = s->cmd_argv;
	if ((err = record_resolve_command(&ro)))
		return err;
	return record_check_program(ro.cmd_path);
}

static int sweep_prepare(struct sweep *s, struct sweep_opts *o)
{
	/* Whole MB: record's upper bound for -M. */
	uint64_t total = record_memtotal() & ~((1ull << 20) - 1);
	int err;

	if ((err = sweep_check_command(s)))
		return err;

	if (!o->maxmem)
		o->maxmem = total;
	if (!o->maxmem)
		return cli_error(CLI_EXIT_USAGE, "-M", "this machine's memory is unknown (no "
				 "/proc/meminfo); give -M, e.g. -M 1000");
	if (o->nsizes && o->sizes[0] > o->maxmem)
		return cli_error(CLI_EXIT_USAGE, "-L", "the largest size is more than -M (%llu MB); give "
				 "sizes up to -M, or raise -M", (unsigned long long)(o->maxmem >> 20));
	s->maxmem = o->maxmem;
	s->auto_sizes = !o->nsizes;
	/* A directory the user named is followed if it is a link; the default one is fltrace's own. */
	if (!strcmp(s->outdir, SWEEP_DEFAULT_DIR)) {
		if ((err = outfile_mkdir(s->outdir)))
			return cli_out_error(s->outdir, err);
	} else if ((err = cli_mkdir_p(s->outdir))) {
		return cli_error(CLI_EXIT_FAIL, s->outdir, "cannot create the output directory (%s); "
				 "give a writable directory with -o DIR", strerror(-err));
	}
	/* Said of the directory, before its first file (the saved stdin) would say it of that. */
	if ((err = outfile_try_dir(s->outdir)))
		return cli_error(CLI_EXIT_FAIL, s->outdir, "cannot write in the output directory (%s); "
				 "give a writable directory with -o DIR", strerror(-err));
	return 0;
}

int cmd_sweep(int argc, char **argv)
{
	static struct sweep s; /* large (paths): not on the stack */
	struct sweep_opts o;
	struct sweep_stdin in;
	size_t differ = 0;
	int err;

	memset(&s, 0, sizeof(s));
	memset(&o, 0, sizeof(o));
	s.outdir = SWEEP_DEFAULT_DIR;
	s.top = 15;
	s.policies[0] = FLTRACE_POLICY_DEFAULT;
	s.npolicies = 1;
	err = sweep_parse(argc, argv, &o, &s);
	if (!err)
		err = sweep_series(&o, &s);
	if (!err)
		err = sweep_prepare(&s, &o);
	if (!err)
		err = sweep_prepare_stdin(&s, &in);
	if (!err) {
		sweep_signals();
		if (s.auto_sizes)
			err = sweep_run_auto(&s, &o, &in);
		else if (!(err = sweep_plan_given(&s, &o)))
			err = sweep_run_from(&s, &o, 0, &in);
	}
	for (size_t i = 0; i < o.nforward; i++)
		free(o.forward[i]);
	if (err)
		return err < 0 ? CLI_EXIT_OK : err;
	if ((err = sweep_report(&s)))
		return err;
	for (size_t i = 0; i < s.nruns; i++)
		differ += s.runs[i].output_differs;
	if (differ)
		return cli_error(CLI_EXIT_FAIL, "sweep", "the command's output differed in %zu of %zu "
				 "runs (see the notes above and the output column of %s/sweep.csv); a "
				 "program whose output depends on time, randomness or its environment "
				 "cannot be compared across runs", differ, s.nruns, s.outdir);
	return CLI_EXIT_OK;
}
