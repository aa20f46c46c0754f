/* `fltrace report`: reads every trace of a directory and writes the callsite CSVs (and the raw,
 * file, folded and terminal views); the analysis itself lives in src/analysis. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../src/analysis/analysis.h"
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
"  -o, --output FILE     with --folded: write to FILE instead of stdout\n"
"      --by VIEW         stack (default) | line | function: group by full stack, by the\n"
"                        innermost frame's file:line, or by its function\n"
"      --kind LIST       keep faults of these kinds: zero,refetch,file,wp,syscall\n"
"      --access LIST     keep faults of these accesses: read,write,wp\n"
"      --pid N           only the process N\n"
"      --time START:END  only faults in this window, seconds from the trace start\n"
"                        (either side may be left out: 2.5: or :10)\n"
"      --top N           print the N biggest rows as a table on stdout, no CSV files\n"
"      --folded          print folded stacks (flamegraph.pl, speedscope, inferno) to stdout\n"
"      --merge           combine all processes into fltrace-data-report-all.out\n"
"      --files           also write fltrace-data-files-<pid>.out: file-backed faults per\n"
"                        file offset range, with the order the ranges were read in\n"
"      --raw             also write fltrace-data-faults-<pid>-<gen>.out: one row per fault\n"
"  -h, --help            this text\n"
"\n"
"examples:\n"
"  fltrace report                          # CSV per process in the current directory\n"
"  fltrace report -i out --top 20          # the 20 call stacks with most faults, as a table\n"
"  fltrace report --by line --kind refetch # which lines re-fetch evicted pages\n"
"  fltrace report --folded -o f.folded && flamegraph.pl f.folded > f.svg\n"
"  fltrace report --kind file --files      # which parts of which files were read, in order\n"
"  fltrace report --time 10:20 --access write --merge\n";

struct report_env {
	const char *dir;
	const char *output;
	enum agg_by by;
	struct agg_filter filter;
	long pid;
	long top;
	bool folded, merge, files, raw;
	bool progress;
	struct timespec t0;
};

/* A growing text buffer for the joined fields of one row. */
struct report_buf {
	char *p;
	size_t len, cap;
};

static int report_buf_put(struct report_buf *b, const char *s)
{
	size_t l = strlen(s);

	if (b->len + l + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *n;
		while (cap < b->len + l + 1)
			cap *= 2;
		n = realloc(b->p, cap);
		if (!n)
			return -ENOMEM;
		b->p = n;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, l + 1);
	b->len += l;
	return 0;
}

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
		if (*end || f->time_end < f->time_start)
			return -EINVAL;
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
       OPT_FILES, OPT_RAW };

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
		{ NULL, 0, NULL, 0 },
	};
	static const char *const kinds[] = { "zero", "refetch", "file", "wp", "syscall" };
	static const unsigned kind_bits[] = { 1u << FT_KIND_ZERO, 1u << FT_KIND_REFETCH,
					      1u << FT_KIND_FILE, 1u << FT_KIND_WP,
					      FILTER_KIND_SYSCALL };
	static const char *const accs[] = { "read", "write", "wp" };
	static const unsigned acc_bits[] = { FILTER_ACC_READ, FILTER_ACC_WRITE, FILTER_ACC_WP };
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': env->dir = optarg; break;
		case 'o': env->output = optarg; break;
		case 'h': fputs(report_usage, stdout); return CLI_EXIT_OK;
		case OPT_BY:
			if (!strcmp(optarg, "stack")) env->by = AGG_BY_STACK;
			else if (!strcmp(optarg, "line")) env->by = AGG_BY_LINE;
			else if (!strcmp(optarg, "function")) env->by = AGG_BY_FUNCTION;
			else
				return cli_error(CLI_EXIT_USAGE, "report", "--by: unknown view '%s'; "
						 "use stack, line or function", optarg);
			break;
		case OPT_KIND:
			if (report_parse_list("kind", optarg, kinds, kind_bits, 5, &env->filter.kinds))
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
		case OPT_TIME:
			if (report_parse_time(optarg, &env->filter))
				return cli_error(CLI_EXIT_USAGE, "report", "--time: '%s' is not a "
						 "window; give START:END in seconds, e.g. 2.5:10",
						 optarg);
			break;
		case OPT_TOP:
			env->top = report_parse_long(optarg, 1);
			if (env->top < 0)
				return cli_error(CLI_EXIT_USAGE, "report", "--top: '%s' is not a "
						 "positive number", optarg);
			break;
		case OPT_FOLDED: env->folded = true; break;
		case OPT_MERGE: env->merge = true; break;
		case OPT_FILES: env->files = true; break;
		case OPT_RAW: env->raw = true; break;
		case ':':
			return cli_error(CLI_EXIT_USAGE, "report", "%s needs a value; see 'fltrace "
					 "report --help'", argv[optind - 1]);
		default:
			return cli_error(CLI_EXIT_USAGE, "report", "unknown option '%s'; see "
					 "'fltrace report --help'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_error(CLI_EXIT_USAGE, "report", "unexpected argument '%s'; the trace "
				 "directory is given with -i DIR", argv[optind]);
	if (env->output && !env->folded)
		return cli_error(CLI_EXIT_USAGE, "report", "-o goes with --folded; the CSV files "
				 "are written next to the traces");
	return -1;
}

/* ------------------------------------------------------------------ per-fault writers */

/* What the per-fault callbacks of one process write to. */
struct report_sink {
	FILE *raw;
	struct fileview *files;
};

static int report_fault_cb(void *arg, const struct trace *t, const struct ft_fault *f,
			   const struct ft_stack *st, const struct ft_region *rg)
{
	struct report_sink *k = arg;

	if (k->raw) {
		FILE *o = k->raw;
		/* Columns and encodings of the earlier tool's faults file, then the new ones. */
		fprintf(o, "%" PRIu64 ".%06" PRIu64 ",%" PRIx64 ",%" PRIx64 ",%u,%u,%u,",
			f->time_ns / 1000000000, f->time_ns % 1000000000 / 1000, f->ip, f->addr,
			f->pages, f->flags, f->tid);
		for (uint32_t i = 0; st && i < st->depth; i++)
			fprintf(o, "0x%" PRIx64 "|", st->ips[i]);
		fprintf(o, ",%s,%s,%d,%u,%s\n", trace_kind_name(f->kind),
			trace_origin_name(f->origin), f->syscall_nr, f->latency_ns,
			trace_status_name(f->stack_status));
	}
	if (k->files && rg && f->addr >= rg->start)
		return fileview_add(k->files, rg->path, rg->offset + (f->addr - rg->start),
				    f->pages, t->hdr->page_size, f->time_ns);
	return 0;
}

/* ------------------------------------------------------------------ output files */

static FILE *report_create(const char *dir, const char *name, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		cli_error(CLI_EXIT_FAIL, "report", "cannot write %s: %s; check that the directory "
			  "is writable", path, strerror(errno));
		return NULL;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	return f;
}

/* A full disk must be an error, not a short file. */
static int report_close(FILE *f, const char *path)
{
	int bad = ferror(f);

	if (fclose(f) || bad)
		return cli_error(CLI_EXIT_FAIL, "report", "writing %s failed: %s; free some space "
				 "and run again", path, strerror(errno ? errno : EIO));
	printf("%s\n", path); /* what was written, as visualize says it */
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

/* ------------------------------------------------------------------ CSV rows */

static const char report_header[] = "ips,flags,count,percent,op,type,lib,code,functions,kind,"
	"origin,syscall,file,offset,latency_total_us,latency_mean_us,latency_p99_us,nostack\n";

static int report_write_row(FILE *o, const struct agg_row *r, uint64_t total,
			    const struct symbolizer *s, struct report_buf *b)
{
	static const char *const part[3] = { "lib", "code", "functions" };
	char num[64];
	uint64_t p99;

	for (uint32_t k = 0; k < r->depth; k++)
		fprintf(o, "0x%" PRIx64 "|", r->ips[k]);
	fprintf(o, ",%u,%" PRIu64 ",%" PRIu64 ",%s,%s", r->flags, r->count,
		total ? r->count * 100 / total : 0, trace_op_name(r->flags),
		trace_type_name(r->flags));
	for (int p = 0; p < 3; p++) {
		b->len = 0;
		if (b->p)
			b->p[0] = 0;
		for (uint32_t k = 0; k < r->depth; k++) {
			const struct sym_frame *f = r->frames ? sym_frame(s, r->frames[k]) : NULL;
			const char *v = !f ? "??" : p == 0 ? f->lib : p == 1 ? f->code : f->funcs;
			if ((k && report_buf_put(b, "<//>")) || report_buf_put(b, v))
				return -ENOMEM;
		}
		(void)part;
		fputc(',', o);
		csv_put(o, b->p ? b->p : "");
	}
	fprintf(o, ",%s,%s,", trace_kind_name(r->kind), trace_origin_name(r->origin));
	if (r->origin == FT_ORIGIN_SYSCALL) {
		const char *name = trace_syscall_name(r->syscall_nr);
		if (name)
			fputs(name, o);
		else
			fprintf(o, "%d", r->syscall_nr);
	}
	fputc(',', o);
	if (r->file)
		csv_put(o, r->file);
	fputc(',', o);
	if (r->file && r->off_hi)
		fprintf(o, "%" PRIu64 "-%" PRIu64, r->off_lo, r->off_hi);
	p99 = lat_percentile(r->lat, 0.99);
	snprintf(num, sizeof(num), "%.1f", r->faults ? r->lat_total_ns / 1e3 / r->faults : 0.0);
	fprintf(o, ",%.1f,%s,%.1f,%" PRIu64 "\n", r->lat_total_ns / 1e3, num, p99 / 1e3,
		r->nostack);
	return 0;
}

static int report_write_csv(const char *dir, const char *name, struct agg_table *t,
			    const struct symbolizer *s)
{
	struct report_buf b = { 0 };
	struct agg_row **rows;
	char path[4096];
	size_t n = agg_rows(t, &rows);
	FILE *o = report_create(dir, name, path, sizeof(path));
	int ret = 0;

	if (!o)
		return CLI_EXIT_FAIL;
	fputs(report_header, o);
	for (size_t i = 0; i < n && !ret; i++)
		ret = report_write_row(o, rows[i], agg_total(t), s, &b);
	free(b.p);
	if (ret) {
		fclose(o);
		return cli_error(CLI_EXIT_FAIL, "report", "out of memory writing %s", path);
	}
	return report_close(o, path);
}

/* ------------------------------------------------------------------ terminal table */

static const struct sym_frame *report_leaf(const struct agg_row *r, const struct symbolizer *s)
{
	return r->depth && r->frames ? sym_frame(s, r->frames[0]) : NULL;
}

static void report_put_cut(FILE *o, const char *s, int width)
{
	int len = (int)strlen(s);

	/* Keep the end of long names: the function and file name are at the end of a path. */
	if (len > width)
		fprintf(o, "..%-*s", width - 2, s + len - (width - 2));
	else
		fprintf(o, "%-*s", width, s);
}

static void report_write_top(FILE *o, const char *title, struct agg_table *t,
			     const struct symbolizer *s, long top)
{
	struct agg_row **rows;
	size_t n = agg_rows(t, &rows), show = (size_t)top < n ? (size_t)top : n;
	int wf = 8, wl = 8;

	for (size_t i = 0; i < show; i++) {
		const struct sym_frame *f = report_leaf(rows[i], s);
		int lf = f ? (int)strlen(f->func) : 10, ll = f ? (int)strlen(f->code) : 2;
		wf = lf > wf ? lf : wf;
		wl = ll > wl ? ll : wl;
	}
	wf = wf > 40 ? 40 : wf;
	wl = wl > 60 ? 60 : wl;
	fprintf(o, "%s: %" PRIu64 " faults, %zu rows\n", title, agg_total(t), n);
	fprintf(o, "%10s %4s  %-9s %-7s %-7s  ", "COUNT", "%", "OP", "KIND", "ORIGIN");
	report_put_cut(o, "FUNCTION", wf);
	fputs("  ", o);
	report_put_cut(o, "LOCATION", wl);
	fputs("  OBJECT\n", o);
	for (size_t i = 0; i < show; i++) {
		const struct agg_row *r = rows[i];
		const struct sym_frame *f = report_leaf(r, s);
		const char *lib = f ? f->lib : "", *slash = strrchr(lib, '/');

		fprintf(o, "%10" PRIu64 " %4" PRIu64 "  %-9s %-7s %-7s  ", r->count,
			agg_total(t) ? r->count * 100 / agg_total(t) : 0, trace_op_name(r->flags),
			trace_kind_name(r->kind), trace_origin_name(r->origin));
		report_put_cut(o, f ? f->func : "[no stack]", wf);
		fputs("  ", o);
		report_put_cut(o, f ? f->code : "", wl);
		fprintf(o, "  %s\n", slash ? slash + 1 : lib);
	}
	fputc('\n', o);
}

/* ------------------------------------------------------------------ folded */

static void report_write_folded(FILE *o, struct agg_table *t, const struct symbolizer *s)
{
	struct agg_row **rows;
	size_t n = agg_rows(t, &rows);

	for (size_t i = 0; i < n; i++) {
		const struct agg_row *r = rows[i];
		if (!r->depth)
			fputs("[no stack]", o);
		for (uint32_t k = r->depth; k-- > 0;) {
			const struct sym_frame *f = r->frames ? sym_frame(s, r->frames[k]) : NULL;
			if (f)
				folded_put_frame(o, f);
			else
				fprintf(o, "0x%" PRIx64, r->ips[k]);
			if (k)
				fputc(';', o);
		}
		fprintf(o, " %" PRIu64 "\n", r->count);
	}
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

/* ------------------------------------------------------------------ main */

int cmd_report(int argc, char **argv)
{
	struct report_env env = { .dir = ".", .pid = -1 };
	struct an_process **procs = NULL;
	struct agg_table **views = NULL, *merged = NULL;
	struct symbolizer *sym = NULL;
	struct trace_list list = { 0 };
	size_t nprocs = 0;
	char err[512], path[4096], sfx[64], name[256];
	int ret, status = CLI_EXIT_OK;

	ret = report_parse_args(argc, argv, &env);
	if (ret >= 0)
		return ret;
	clock_gettime(CLOCK_MONOTONIC, &env.t0);
	env.progress = isatty(STDERR_FILENO);

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
		struct report_sink sink = { 0 };
		char rawpath[4096];

		if (env.pid >= 0 && list.v[i].pid != (uint32_t)env.pid)
			continue;
		report_progress(&env, "reading %s", list.v[i].path);
		if (env.raw && !env.folded && !env.top) {
			snprintf(name, sizeof(name), "fltrace-data-faults-%u-%u.out", list.v[i].pid,
				 list.v[i].gen);
			sink.raw = report_create(env.dir, name, rawpath, sizeof(rawpath));
			if (!sink.raw) {
				status = CLI_EXIT_FAIL;
				goto out;
			}
			fputs("tstamp,ip,addr,pages,flags,tid,trace,kind,origin,syscall_nr,latency_ns,"
			      "stack_status\n", sink.raw);
		}
		if (env.files && !env.folded && !env.top && !(sink.files = fileview_new())) {
			status = cli_error(CLI_EXIT_FAIL, "report", "out of memory");
			goto out;
		}
		ret = an_process_load(list.v[i].path, &env.filter,
				      sink.raw || sink.files ? report_fault_cb : NULL, &sink,
				      &procs[nprocs], err, sizeof(err));
		if (sink.raw && report_close(sink.raw, rawpath))
			status = CLI_EXIT_FAIL;
		if (ret) {
			/* One bad file does not hide the other processes. */
			fileview_free(sink.files);
			cli_error(CLI_EXIT_FAIL, "report", "%s", err);
			status = CLI_EXIT_FAIL;
			continue;
		}
		if (procs[nprocs]->warning[0])
			cli_error(CLI_EXIT_FAIL, "report", "warning: %s: %s", list.v[i].path,
				  procs[nprocs]->warning);
		if (sink.files) {
			FILE *o;
			snprintf(name, sizeof(name), "fltrace-data-files-%s.out",
				 report_suffix(list.v[i].pid, list.v[i].gen, sfx, sizeof(sfx)));
			o = report_create(env.dir, name, path, sizeof(path));
			if (!o || fileview_write_csv(sink.files, o, procs[nprocs]->start_ns) ||
			    report_close(o, path))
				status = CLI_EXIT_FAIL;
			fileview_free(sink.files);
		}
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
	if (env.merge || env.folded) {
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

	if (env.folded) {
		FILE *o = stdout;
		if (env.output && !(o = fopen(env.output, "w"))) {
			status = cli_error(CLI_EXIT_FAIL, "report", "cannot write %s: %s; check the "
					   "path", env.output, strerror(errno));
			goto out;
		}
		report_write_folded(o, merged, sym);
		if (o != stdout && report_close(o, env.output))
			status = CLI_EXIT_FAIL;
	} else if (env.top) {
		if (merged) {
			report_write_top(stdout, "all processes", merged, sym, env.top);
		} else {
			size_t quiet = 0;
			for (size_t i = 0; i < nprocs; i++) {
				char title[4200];
				/* Wrappers (env, a pyenv shim's bash) fault nothing tracked: one line for all. */
				if (agg_total(views[i]) == 0 && nprocs > 1) {
					quiet++;
					continue;
				}
				snprintf(title, sizeof(title), "pid %s (%s)",
					 report_suffix(procs[i]->pid, procs[i]->gen, sfx, sizeof(sfx)),
					 procs[i]->exe);
				report_write_top(stdout, title, views[i], sym, env.top);
			}
			if (quiet)
				printf("(%zu more process%s with no faults)\n", quiet, quiet == 1 ? "" : "es");
		}
	} else if (merged) {
		if (report_write_csv(env.dir, "fltrace-data-report-all.out", merged, sym))
			status = CLI_EXIT_FAIL;
	} else {
		for (size_t i = 0; i < nprocs; i++) {
			snprintf(name, sizeof(name), "fltrace-data-report-%s.out",
				 report_suffix(procs[i]->pid, procs[i]->gen, sfx, sizeof(sfx)));
			if (report_write_csv(env.dir, name, views[i], sym))
				status = CLI_EXIT_FAIL;
		}
	}
	for (size_t i = 0; i < nprocs; i++)
		report_note_nostack(env.dir, procs[i]);
	if (env.folded || env.top) {
		int bad = fflush(stdout) || ferror(stdout);
		if (bad)
			status = cli_error(CLI_EXIT_FAIL, "report", "writing stdout failed: %s",
					   strerror(errno));
	}
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
