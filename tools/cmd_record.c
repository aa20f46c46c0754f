/* `fltrace record`: parses the options, checks everything that can be checked before the
 * command starts, then runs it under the preload runtime and sums up what was recorded. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <fltrace/parse.h>

#include "builtin.h"
#include "cli.h"
#include "record.h"

#define RECORD_MAX_HANDLERS FLTRACE_MAX_HANDLERS
#define RECORD_MAX_SAMPLERATE 1000000000ull

enum { OPT_CORES = 256, OPT_POLICY, OPT_DEPTH, OPT_POLL, OPT_FILES, OPT_ALLOC_SAMPLE, OPT_FAR, OPT_FAR_LATENCY,
       OPT_FAR_REPLICAS, OPT_FAR_AUTH, OPT_FAR_TIMEOUT, OPT_FAR_CLEAR, OPT_PREFETCH, OPT_KEEP_LOCAL };

static const struct option record_longopts[] = {
	{ "localmem", required_argument, NULL, 'L' },
	{ "maxmem", required_argument, NULL, 'M' },
	{ "handlers", required_argument, NULL, 'C' },
	{ "cores", required_argument, NULL, OPT_CORES },
	{ "samplerate", required_argument, NULL, 'S' },
	{ "output", required_argument, NULL, 'o' },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "prefetch", required_argument, NULL, OPT_PREFETCH },
	{ "keep-local", required_argument, NULL, OPT_KEEP_LOCAL },
	{ "depth", required_argument, NULL, OPT_DEPTH },
	{ "poll", required_argument, NULL, OPT_POLL },
	{ "files", required_argument, NULL, OPT_FILES },
	{ "alloc-sample", required_argument, NULL, OPT_ALLOC_SAMPLE },
	{ "far", required_argument, NULL, OPT_FAR },
	{ "far-latency", required_argument, NULL, OPT_FAR_LATENCY },
	{ "far-replicas", required_argument, NULL, OPT_FAR_REPLICAS },
	{ "far-auth", required_argument, NULL, OPT_FAR_AUTH },
	{ "far-timeout", required_argument, NULL, OPT_FAR_TIMEOUT },
	{ "far-clear", required_argument, NULL, OPT_FAR_CLEAR },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* '+': stop at the first non-option, so the command's own arguments are never parsed.
 * ':': report a missing value as ':' so that we word the message. */
static const char record_optstring[] = "+:L:M:C:S:o:h";

/* "<name>  <help>" under the option column, the help wrapped at word ends. */
static void record_help_policy(const char *name, const char *help)
{
	enum { INDENT = 26, HELP_COL = INDENT + 9, WIDTH = 96 };
	int col = printf("%*s%-8s", INDENT, "", name);

	while (*help) {
		int word = (int)strcspn(help, " ");
		if (col + 1 + word > WIDTH)
			col = printf("\n%*s", HELP_COL, "") - 1;
		else
			col += printf(" ");
		col += printf("%.*s", word, help);
		help += word;
		help += *help == ' ';
	}
	printf("\n");
}

/* --help's lines for --far: every backend of the table, with what it costs. */
static void record_help_backends(void)
{
	printf("      --far <backend>     where evicted pages go (default %s):\n", FLTRACE_BACKEND_DEFAULT);
	for (unsigned i = 0; i < FLTRACE_BACKEND_COUNT; i++)
		record_help_policy(fltrace_backend_name(i), fltrace_backend_help(i));
	printf("      --far-latency <us>  wait this long at each re-fetch from far memory, as a slower\n"
	       "                          medium would (default 0); counted apart: t_far_wait_ns\n"
	       "      --far-replicas <n>  memcached: keep each page on n servers of the list (default 1),\n"
	       "                          so that a run survives n - 1 of them dying\n"
	       "      --far-auth <file>   memcached: SASL user:password (the file's first line) for\n"
	       "                          servers started with -S\n"
	       "      --far-timeout <ms>  memcached: a server that does not answer this long is given\n"
	       "                          up (default %d): its pages are lost unless replicated\n"
	       "      --far-clear <run>   memcached: trace nothing; delete the items run <run> left on\n"
	       "                          the servers of --far (the 16 hex digits its first note named:\n"
	       "                          a run whose 'fltrace record' was killed with SIGKILL leaves\n"
	       "                          them); with --far-auth, the run's stats files in -o's directory\n"
	       "                          name its keys\n",
	       FLTRACE_DEFAULT_FAR_TIMEOUT_MS);
}

/* --help's lines for --policy: every policy of the table, with what it costs. */
static void record_help_policies(void)
{
	printf("      --policy <p>        eviction policy (default %s):\n", FLTRACE_POLICY_DEFAULT);
	for (unsigned i = 0; i < FLTRACE_POLICY_COUNT; i++)
		record_help_policy(fltrace_policy_name(i), fltrace_policy_help(i));
	printf("      --prefetch <p>      prefetcher: brings far pages in ahead of their use (default %s):\n",
	       FLTRACE_PREFETCH_DEFAULT);
	for (unsigned i = 0; i < FLTRACE_PREFETCH_COUNT; i++)
		record_help_policy(fltrace_prefetch_name(i), fltrace_prefetch_help(i));
}

static void record_help(void)
{
	printf(
"usage: fltrace record [-L <size>] [-M <size>] [options] [--] <command> [<args>...]\n"
"\n"
"Runs <command> with its tracked memory capped at -L, evicting the rest to emulated far memory,\n"
"and records every page fault it takes, with its stack, into fltrace-data-* files.\n"
"Everything after '--' (or from the first argument that is not an option) is the command and\n"
"its own arguments, passed to it untouched.\n"
"\n"
"memory (without either, a learning run: every first touch is traced and nothing evicted):\n"
"  -L, --localmem <size>   local memory: the cap on resident tracked memory (default: all of -M)\n"
"  -M, --maxmem <size>     the most memory the command needs in all (local + far); at most the\n"
"                          machine's memory (the default), and not less than -L\n"
"      Sizes are in MB unless a unit is given: 140, 140M, 512K, 2G, 1.5G (binary units).\n"
"      Spellings: -L 140, -L140, -L=140, --localmem 140, --localmem=140.\n"
"\n"
"options:\n"
"  -C, --handlers <n>      fault-handler threads (default 1, at most %d); with --poll percpu\n"
"                          the backstops that serve when every CPU is busy\n"
"      --cores <list>      CPUs to pin the handler threads to, e.g. 0,1 or 0-3 (default: none);\n"
"                          with --poll percpu the CPUs that get a poller (default: all the\n"
"                          program may use)\n"
"  -S, --samplerate <n>    faults recorded per second, 0 = all (default 0)\n"
"  -o, --output <dir>      where the trace goes (default: the current directory); created if\n"
"                          missing. fltrace-data-* files of an earlier recording there are\n"
"                          moved into DIR/fltrace-data.old/ first (replacing the one before),\n"
"                          so that a report never mixes two runs and the last one is kept\n",
RECORD_MAX_HANDLERS);
	record_help_policies();
	record_help_backends();
	printf(
"      --keep-local <sites>  never evict the pages of allocations made at these sites\n"
"                          (comma-separated, named as 'fltrace report --by alloc' names them:\n"
"                          file:line or a function of the command's executable); they still\n"
"                          count against -L (see 'fltrace report --advise')\n"
"      --depth <n>         stack frames recorded per fault (default %d, at most %d)\n"
"      --poll <mode>       how faults are waited for and served: percpu (default: a poller per\n"
"                          CPU at the lowest priority, SCHED_IDLE, serves each fault on the CPU\n"
"                          it was taken on; it uses only CPU time no program thread wants,\n"
"                          polls while faults come and sleeps 100 us after the last),\n"
"                          adaptive (-C threads poll 100 us after a fault, then block), block\n"
"                          (always block: the fewest CPU cycles, the slowest), or spin\n"
"                          (busy-poll: one core per -C thread, taken from the program)\n"
"      --files <which>     file pages traced: mapped (default: the private file mappings the\n"
"                          program makes with mmap) or all (also the code and read-only data\n"
"                          of the executable and its libraries that the loader mapped, except\n"
"                          libc, ld.so, libm, libunwind, liblzma, whose code fltrace runs)\n"
"      --alloc-sample <size>  allocation sites (report --by alloc): every mmap and every\n"
"                          malloc of 64K or more is recorded with its stack, and one small\n"
"                          allocation per <size> bytes allocated on average (default 512K;\n"
"                          bytes unless a unit is given; off: none)\n"
"  -h, --help              this help\n"
"\n"
"exit status: the command's own status (if it died of signal N, fltrace dies of N too: 128+N\n"
"in a shell); 1 if fltrace could not write its own output; 2 for a usage error or a program\n"
"LD_PRELOAD cannot reach (static, setuid); 122 if far memory lost or refused a page the program\n"
"needed (--far memcached:); 125 if fltrace could not trace it; 127 if the command was not found\n"
"or is not executable.\n"
"\n"
"examples:\n"
"  fltrace record -- ./bfs -g 20 -n 1\n"
"      a learning run: every first touch, nothing evicted; the summary gives the peak\n"
"  fltrace record -L 140 -M 1000 -- ./bfs -g 20 -n 1\n"
"      trace bfs with 140 MB of local memory, out of at most 1000 MB\n"
"  fltrace record -L 2G -M 4G -o runs/full -- sort big.txt\n"
"      ample local memory: learn the peak from the stats file, then run again at half of it\n"
"  fltrace record -L 70 -M 1000 -C 2 --cores 0,1 -S 1000 -- python3 train.py --epochs 1\n"
"      two handler threads pinned to CPUs 0 and 1, at most 1000 faults recorded per second\n"
"  fltrace record -L 16 -M 1000 --files=all -- python3 -c 'import json'\n"
"      which pages of python's and libpython's code are read, in what order, at 16 MB\n"
"  fltrace record -L 140 -M 1000 -- ./prog -L 5 -- x\n"
"      the command's own -L 5 and -- reach ./prog untouched\n",
		FLTRACE_DEFAULT_STACK_DEPTH, FLTRACE_MAX_STACK_DEPTH);
}

/* getopt gives "=140" for "-L=140": accept that spelling too. */
static const char *record_value(const char *arg)
{
	return arg[0] == '=' ? arg + 1 : arg;
}

static int record_bad_value(const char *opt, const char *arg, int err, const char *todo)
{
	return cli_error(CLI_EXIT_USAGE, opt, "'%s' %s; %s", arg, parse_strerror(err), todo);
}

static int record_parse_size(const char *opt, const char *arg, uint64_t *out)
{
	int err = parse_size(arg, PARSE_MIB, out);

	if (err)
		return record_bad_value(opt, arg, err, "give a positive size in MB, e.g. 140, "
					"or with a unit K, M, G, e.g. 2G");
	return 0;
}

static int record_parse_number(const char *opt, const char *arg, uint64_t min, uint64_t max,
			       uint64_t *out, const char *what)
{
	int err = parse_u64(arg, min, max, out);

	if (err)
		return cli_error(CLI_EXIT_USAGE, opt, "'%s' %s; give %s, %llu to %llu", arg,
				 parse_strerror(err), what, (unsigned long long)min,
				 (unsigned long long)max);
	return 0;
}

static int record_parse_cores(const char *arg, struct record_opts *o)
{
	int err = cpulist_parse(arg, &o->cores);

	if (err)
		return record_bad_value("--cores", arg, err, "give a CPU list such as 0,1 or 0-3");
	o->have_cores = true;
	return 0;
}

static int record_parse_policy(const char *arg, struct record_opts *o)
{
	char list[128];
	int id = fltrace_policy_find(arg);

	if (id < 0)
		return cli_error(CLI_EXIT_USAGE, "--policy", "'%s' is not a policy; give %s", arg,
				 fltrace_policy_list(list, sizeof(list)));
	o->policy = id;
	return 0;
}

static int record_parse_prefetch(const char *arg, struct record_opts *o)
{
	char list[128];
	int id = fltrace_prefetch_find(arg);

	if (id < 0)
		return cli_error(CLI_EXIT_USAGE, "--prefetch", "'%s' is not a prefetcher; give %s", arg,
				 fltrace_prefetch_list(list, sizeof(list)));
	o->prefetch = id;
	return 0;
}

/* --far: a backend of the table; file:<dir> needs a directory that exists. */
static int record_parse_far(const char *arg, struct record_opts *o)
{
	char list[96];
	const char *dir;
	int id = fltrace_backend_parse(arg, &dir);
	if (id < 0)
		return cli_error(CLI_EXIT_USAGE, "--far", "'%s' %s; give %s", arg,
				 id == -1 ? "is not a far-memory backend" : id == -3 ? "takes no argument" :
									  "lacks its argument (where the pages go)",
				 fltrace_backend_list(list, sizeof(list)));
	if (id == FLTRACE_BACKEND_memcached) {
		o->far = id;
		return record_parse_far_servers(dir, o);
	}
	struct stat st;
	if (dir && (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)))
		return cli_error(CLI_EXIT_USAGE, "--far", "'%s' is not a directory; give file:<an existing "
				 "directory>", dir);
	if (dir && !realpath(dir, o->far_dir))
		return cli_error(CLI_EXIT_USAGE, "--far", "cannot resolve '%s' (%s)", dir, strerror(errno));
	o->far = id;
	return 0;
}

static int record_parse_poll(const char *arg, struct record_opts *o)
{
	if (strcmp(arg, "percpu") && strcmp(arg, "adaptive") && strcmp(arg, "block") && strcmp(arg, "spin"))
		return cli_error(CLI_EXIT_USAGE, "--poll", "'%s' is not a mode; give percpu, adaptive, block or spin",
				 arg);
	o->poll = arg;
	return 0;
}

static int record_parse_alloc_sample(const char *arg, struct record_opts *o)
{
	if (!strcmp(arg, "off") || !strcmp(arg, "0")) {
		o->alloc_sample_off = true;
		return 0;
	}
	int err = parse_size(arg, 1, &o->alloc_sample);
	if (err)
		return record_bad_value("--alloc-sample", arg, err, "give a size in bytes, e.g. 512K "
					"or 1M, or off");
	o->alloc_sample_off = false;
	return 0;
}

static int record_parse_files(const char *arg, struct record_opts *o)
{
	if (strcmp(arg, "mapped") && strcmp(arg, "all"))
		return cli_error(CLI_EXIT_USAGE, "--files", "'%s' is not a choice; give mapped or all", arg);
	o->files = arg;
	return 0;
}

/* One option with its value; returns 0 or an exit code. */
static int record_parse_one(int c, const char *arg, struct record_opts *o)
{
	switch (c) {
	case 'L': return record_parse_size("-L", arg, &o->localmem);
	case 'M': return record_parse_size("-M", arg, &o->maxmem);
	case 'C': return record_parse_number("-C", arg, 1, RECORD_MAX_HANDLERS, &o->handlers,
					     "the number of handler threads");
	case 'S': return record_parse_number("-S", arg, 0, RECORD_MAX_SAMPLERATE, &o->samplerate,
					     "faults per second (0 = all)");
	case OPT_DEPTH: return record_parse_number("--depth", arg, 1, FLTRACE_MAX_STACK_DEPTH,
						   &o->depth, "stack frames per fault");
	case OPT_CORES: return record_parse_cores(arg, o);
	case OPT_POLICY: return record_parse_policy(arg, o);
	case OPT_PREFETCH: return record_parse_prefetch(arg, o);
	case OPT_KEEP_LOCAL:
		if (!*arg || strspn(arg, ",") == strlen(arg))
			return cli_error(CLI_EXIT_USAGE, "--keep-local", "no site given; give allocation sites "
					 "as 'fltrace report --by alloc' names them, e.g. prog.c:42,prog.c:57");
		o->keep_sites = arg;
		return 0;
	case OPT_POLL: return record_parse_poll(arg, o);
	case OPT_FILES: return record_parse_files(arg, o);
	case OPT_ALLOC_SAMPLE: return record_parse_alloc_sample(arg, o);
	case OPT_FAR: return record_parse_far(arg, o);
	case OPT_FAR_LATENCY: return record_parse_number("--far-latency", arg, 0, FLTRACE_MAX_FAR_LATENCY_US,
							 &o->far_latency_us, "microseconds per re-fetch");
	case OPT_FAR_REPLICAS: return record_parse_number("--far-replicas", arg, 1, FLTRACE_MAX_FAR_REPLICAS,
							  &o->far_replicas, "servers that keep each page");
	case OPT_FAR_TIMEOUT: return record_parse_number("--far-timeout", arg, 10, FLTRACE_MAX_FAR_TIMEOUT_MS,
							 &o->far_timeout_ms, "milliseconds");
	case OPT_FAR_CLEAR:
		o->far_clear = arg;
		return 0;
	case OPT_FAR_AUTH:
		if (!realpath(arg, o->far_auth_path))
			return cli_error(CLI_EXIT_USAGE, "--far-auth", "cannot read '%s' (%s); give a file holding "
					 "one line user:password", arg, strerror(errno));
		o->far_auth = o->far_auth_path;
		return 0;
	case 'o':
		o->outdir_arg = arg;
		if (!*arg)
			return cli_error(CLI_EXIT_USAGE, "-o", "the directory name is empty; "
					 "give a directory, e.g. -o runs/1");
		return 0;
	default: return 0;
	}
}

/* Names the option getopt refused: "-x", or "--foo" without any "=value". */
static int record_unknown_option(char **argv)
{
	char name[64];
	const char *arg = argv[optind - 1];

	if (optopt)
		snprintf(name, sizeof(name), "-%c", optopt);
	else
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg, "="), arg);
	return cli_error(CLI_EXIT_USAGE, name, "unknown option of record; run 'fltrace record --help' "
			 "(put the command after '--' if the option is the command's)");
}

static int record_missing_value(char **argv)
{
	char name[64];

	if (optopt)
		snprintf(name, sizeof(name), "-%c", optopt);
	else
		snprintf(name, sizeof(name), "%s", argv[optind - 1]);
	return cli_error(CLI_EXIT_USAGE, name, "needs a value; run 'fltrace record --help'");
}

/* Returns 0 with o filled, -1 for --help (printed), or an exit code. */
static int record_parse(int argc, char **argv, struct record_opts *o)
{
	int c, err;

	optind = 0; /* glibc: full re-initialisation */
	opterr = 0;
	while ((c = getopt_long(argc, argv, record_optstring, record_longopts, NULL)) != -1) {
		if (c == 'h') {
			record_help();
			return -1;
		}
		if (c == '?')
			return record_unknown_option(argv);
		if (c == ':')
			return record_missing_value(argv);
		if ((err = cli_value_left_out(argv, "record", record_optstring, record_longopts)))
			return err;
		err = record_parse_one(c, record_value(optarg), o);
		if (err)
			return err;
	}
	o->cmd_argv = argv + optind;
	return 0;
}

static int record_check_command(const struct record_opts *o)
{
	if (!o->cmd_argv[0])
		return cli_error(CLI_EXIT_USAGE, "record", "no command given; put it after the options, "
				 "e.g. 'fltrace record -L 140 -M 1000 -- ./prog args'");
	return 0;
}

/* The checks, cheapest and side-effect free first; the output directory is touched last. */
static int record_check_all(struct record_opts *o)
{
	int err;

	if ((err = record_check_command(o)) || (err = record_check_memory(o)) ||
	    (err = record_check_cores(o)) || (err = record_resolve_command(o)) ||
	    (err = record_check_program(o->cmd_path)) || (err = record_resolve_keep(o)) ||
	    (err = record_check_uffd()) ||
	    (err = record_find_preload(o)) || (err = record_check_far(o)) || (err = record_prepare_outdir(o)))
		return err;
	record_note_spinning(o);
	return 0;
}

int record_check_option(const char *name, const char *arg)
{
	static struct record_opts scratch; /* large (paths): not on the stack */

	for (const struct option *opt = record_longopts; opt->name; opt++)
		if (!strcmp(opt->name, name)) {
			memset(&scratch, 0, sizeof(scratch));
			return record_parse_one(opt->val, record_value(arg), &scratch);
		}
	return cli_error(CLI_EXIT_USAGE, name, "not an option of record; run 'fltrace record --help'");
}

int cmd_record(int argc, char **argv)
{
	static struct record_opts o; /* large (paths): not on the stack */
	int err, status;

	memset(&o, 0, sizeof(o));
	o.handlers = 1;
	o.depth = FLTRACE_DEFAULT_STACK_DEPTH;
	o.policy = fltrace_policy_find(FLTRACE_POLICY_DEFAULT);
	o.outdir_arg = ".";

	err = record_parse(argc, argv, &o);
	if (err)
		return err < 0 ? CLI_EXIT_OK : err;
	if (o.far_clear)
		return record_far_clear_only(&o);
	if ((err = record_check_all(&o)) || (err = record_clean_outdir(&o)))
		return err;
	err = record_run(&o, &status);
	record_clear_far(&o); /* however the command ended */
	if (err)
		return err;
	return record_summarize(&o, status);
}
