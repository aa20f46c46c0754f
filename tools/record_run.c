/* The side of `fltrace record` that acts: prepares the output directory, runs the command under
 * the preload runtime and waits for it like a shell, then sums up the runtime's stats files. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/analysis/analysis.h"
#include "../src/analysis/runstats.h"
#include "cli.h"
#include "record.h"

#define RUN_DATA_PREFIX "fltrace-data-"
#define RUN_OLD_DIR "fltrace-data.old" /* the earlier recording: one generation is kept */
#define RUN_MB (1024.0 * 1024.0)

int record_prepare_outdir(struct record_opts *o)
{
	const char *dir = o->outdir_arg;
	struct stat st;
	int err = cli_mkdir_p(dir);

	if (!err && stat(dir, &st) != 0)
		err = -errno;
	if (!err && !S_ISDIR(st.st_mode))
		err = -ENOTDIR;
	if (err)
		return cli_error(CLI_EXIT_NOTRACE, dir, "cannot use it as the output directory (%s); "
				 "give a writable directory with -o DIR", strerror(-err));
	err = outfile_try_dir(dir);
	if (err)
		return cli_error(CLI_EXIT_NOTRACE, dir, "cannot write in the output directory (%s); "
				 "give a writable directory with -o DIR", strerror(-err));
	if (!realpath(dir, o->outdir))
		return cli_error(CLI_EXIT_NOTRACE, dir, "cannot resolve the output directory (%s); "
				 "give another one with -o DIR", strerror(errno));
	return 0;
}

static bool run_has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* A file of an earlier recording, to remove: 0; a link or someone else's file under one of our
 * names (-OUTFILE_E*) is left for the user to look at; a directory is skipped (1). */
static int run_earlier_file(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 1;
	return outfile_check(path);
}

/* Removes the fltrace-data-* files of directory dfd; how many, or -errno (err says which). */
static int run_remove_data(int dfd, char *err, size_t errlen)
{
	DIR *d = fdopendir(dup(dfd));
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while (n >= 0 && (de = readdir(d))) {
		struct stat st;
		/* A link is removed itself, never followed; a directory is not ours to remove. */
		if (!run_has_prefix(de->d_name, RUN_DATA_PREFIX) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || S_ISDIR(st.st_mode))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0) {
			n++;
		} else {
			n = -errno;
			snprintf(err, errlen, "%s", de->d_name);
		}
	}
	closedir(d);
	return n;
}

/* An earlier recording in the output directory is kept one generation, as perf keeps
 * perf.data.old: its fltrace-data-* files move into fltrace-data.old/ (whose own fltrace-data-*
 * files, the generation before, are removed first), so a new run never mixes with it and never
 * loses it. */
int record_clean_outdir(const struct record_opts *o)
{
	DIR *d = opendir(o->outdir);
	struct dirent *de;
	unsigned moved = 0;
	int err = 0, old = -1, dropped = 0;
	char which[256] = "";

	if (!d)
		return cli_error(CLI_EXIT_NOTRACE, o->outdir, "cannot list the output directory (%s); "
				 "give another one with -o DIR", strerror(errno));
	while (!err && (de = readdir(d))) {
		if (!run_has_prefix(de->d_name, RUN_DATA_PREFIX))
			continue;
		char path[PATH_MAX + 256];
		snprintf(path, sizeof(path), "%s/%s", o->outdir, de->d_name);
		int why = run_earlier_file(path);
		if (why > 0)
			continue;
		if (why < 0) {
			err = cli_error(CLI_EXIT_NOTRACE, path, "%s; remove it (someone else may have put "
					"it there) or give another -o DIR", outfile_strerror(why));
			break;
		}
		if (old < 0) {
			/* A link or another user's directory under the name is refused by name. */
			char old_path[PATH_MAX + 32];
			snprintf(old_path, sizeof(old_path), "%s/%s", o->outdir, RUN_OLD_DIR);
			int mk = outfile_mkdir(old_path);
			if (outfile_refused(mk)) {
				err = cli_error(CLI_EXIT_NOTRACE, old_path, "%s; remove it (someone else may "
						"have put it there) or give another -o DIR", outfile_strerror(mk));
				break;
			}
			if (mk) {
				err = cli_error(CLI_EXIT_NOTRACE, o->outdir, "cannot make %s for the earlier "
						"recording (%s); move it away by hand or give another -o DIR",
						RUN_OLD_DIR, strerror(-mk));
				break;
			}
			old = openat(dirfd(d), RUN_OLD_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			dropped = old < 0 ? -errno : run_remove_data(old, which, sizeof(which));
			if (dropped < 0) {
				err = cli_error(CLI_EXIT_NOTRACE, o->outdir, "cannot clear %s/%s for the "
						"earlier recording (%s%s%s); remove it by hand or give another "
						"-o DIR", RUN_OLD_DIR, which, strerror(-dropped),
						which[0] ? ": " : "", which);
				break;
			}
		}
		if (renameat(dirfd(d), de->d_name, old, de->d_name) == 0)
			moved++;
		else
			err = cli_error(CLI_EXIT_NOTRACE, o->outdir, "cannot move %s of an earlier "
					"recording into %s (%s); move it by hand or give another -o DIR",
					de->d_name, RUN_OLD_DIR, strerror(errno));
	}
	closedir(d);
	if (old >= 0)
		close(old);
	if (moved)
		cli_note("record: moved the earlier recording (%u " RUN_DATA_PREFIX "* file%s) to "
			 "%s/" RUN_OLD_DIR "%s", moved, moved == 1 ? "" : "s", o->outdir,
			 dropped ? ", replacing the one before it" : "");
	return err;
}

static int run_setenv_u64(const char *name, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return setenv(name, buf, 1);
}

/* --far and --far-latency: set only when given, so an untouched run's environment is as before. */
static int run_set_far(const struct record_opts *o)
{
	char spec[PATH_MAX + 16];
	int err = unsetenv(FLTRACE_ENV_FAR) | unsetenv(FLTRACE_ENV_FAR_LATENCY) | unsetenv(FLTRACE_ENV_FAR_REPLICAS) |
		  unsetenv(FLTRACE_ENV_FAR_RUN) | unsetenv(FLTRACE_ENV_FAR_AUTH) | unsetenv(FLTRACE_ENV_FAR_TIMEOUT);
	if (o->far > 0) {
		snprintf(spec, sizeof(spec), "%s%s%s", fltrace_backend_name((unsigned)o->far), o->far_dir[0] ? ":" : "",
			 o->far_dir);
		err |= setenv(FLTRACE_ENV_FAR, spec, 1);
	}
	if (o->far_latency_us)
		err |= run_setenv_u64(FLTRACE_ENV_FAR_LATENCY, o->far_latency_us);
	if (o->far_replicas)
		err |= run_setenv_u64(FLTRACE_ENV_FAR_REPLICAS, o->far_replicas);
	if (o->far_timeout_ms)
		err |= run_setenv_u64(FLTRACE_ENV_FAR_TIMEOUT, o->far_timeout_ms);
	if (o->far_run[0])
		err |= setenv(FLTRACE_ENV_FAR_RUN, o->far_run, 1);
	if (o->far_auth)
		err |= setenv(FLTRACE_ENV_FAR_AUTH, o->far_auth, 1);
	return err;
}

/* The contract of inc/fltrace/config.h: every option, for every process of the command. */
static int run_set_environment(const struct record_opts *o)
{
	const char *old = getenv("LD_PRELOAD");
	char preload[2 * PATH_MAX + 2], cores[CPULIST_MAX * 4];
	int err = 0;

	if (old && *old)
		snprintf(preload, sizeof(preload), "%s:%s", o->preload, old);
	else
		snprintf(preload, sizeof(preload), "%s", o->preload);
	err |= run_setenv_u64(FLTRACE_ENV_LOCALMEM, o->localmem);
	err |= run_setenv_u64(FLTRACE_ENV_MAXMEM, o->maxmem);
	err |= setenv(FLTRACE_ENV_OUTDIR, o->outdir, 1);
	err |= run_setenv_u64(FLTRACE_ENV_HANDLERS, o->handlers);
	err |= run_setenv_u64(FLTRACE_ENV_SAMPLERATE, o->samplerate);
	err |= setenv(FLTRACE_ENV_POLICY, fltrace_policy_name((unsigned)o->policy), 1);
	err |= setenv(FLTRACE_ENV_PREFETCH, fltrace_prefetch_name((unsigned)o->prefetch), 1);
	err |= run_set_far(o);
	err |= run_setenv_u64(FLTRACE_ENV_STACK_DEPTH, o->depth);
	err |= setenv(FLTRACE_ENV_POLL, o->poll ? o->poll : "percpu", 1);
	err |= setenv(FLTRACE_ENV_FILES, o->files ? o->files : "mapped", 1);
	err |= run_setenv_u64(FLTRACE_ENV_ALLOC_SAMPLE, o->alloc_sample_off ? 0 :
			      o->alloc_sample ? o->alloc_sample : FLTRACE_DEFAULT_ALLOC_SAMPLE);
	err |= setenv(FLTRACE_ENV_PRELOAD_PATH, o->preload, 1);
	err |= o->keep_env ? setenv(FLTRACE_ENV_KEEP_LOCAL, o->keep_env, 1) : unsetenv(FLTRACE_ENV_KEEP_LOCAL);
	/* Never let a stale value from the caller's environment pin the handlers. */
	err |= unsetenv(FLTRACE_ENV_CORES);
	if (o->have_cores && cpulist_format(&o->cores, cores, sizeof(cores)) >= 0)
		err |= setenv(FLTRACE_ENV_CORES, cores, 1);
	err |= setenv("LD_PRELOAD", preload, 1);
	if (err)
		return cli_error(CLI_EXIT_NOTRACE, "record", "cannot set the environment (%s); "
				 "free some memory and retry", strerror(errno));
	return 0;
}

/* In the child: exec as execvp would, including its /bin/sh fallback for a file without "#!". */
static void run_exec_child(const struct record_opts *o)
{
	int argc = 0, err;

	execv(o->cmd_path, o->cmd_argv);
	err = errno;
	if (err == ENOEXEC) {
		while (o->cmd_argv[argc])
			argc++;
		char *sh_argv[argc + 2];
		sh_argv[0] = "/bin/sh";
		sh_argv[1] = (char *)o->cmd_path;
		memcpy(sh_argv + 2, o->cmd_argv + 1, (size_t)argc * sizeof(char *));
		execv("/bin/sh", sh_argv);
		err = errno;
	}
	_exit(cli_error(CLI_EXIT_NOTFOUND, o->cmd_argv[0], "cannot run %s (%s); check that it is a "
			"program for this machine", o->cmd_path, strerror(err)));
}

/* The child, for the forwarding handler: a signal handler can reach nothing else. */
static volatile sig_atomic_t run_child;

static void run_forward(int sig)
{
	int saved = errno;

	if (run_child > 0)
		kill((pid_t)run_child, sig);
	errno = saved;
}

struct run_signals {
	struct sigaction old_int, old_quit, old_term, old_hup;
};

/* Like a shell with a foreground child: the terminal's SIGINT/SIGQUIT reach the child directly,
 * so fltrace ignores them and outlives it to write the summary; SIGTERM/SIGHUP sent to fltrace
 * alone are passed on. */
static void run_signals_parent(struct run_signals *s)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct sigaction fwd = { .sa_handler = run_forward, .sa_flags = SA_RESTART };

	sigemptyset(&ign.sa_mask);
	sigemptyset(&fwd.sa_mask);
	sigaction(SIGINT, &ign, &s->old_int);
	sigaction(SIGQUIT, &ign, &s->old_quit);
	sigaction(SIGTERM, &fwd, &s->old_term);
	sigaction(SIGHUP, &fwd, &s->old_hup);
}

static void run_signals_restore(const struct run_signals *s)
{
	sigaction(SIGINT, &s->old_int, NULL);
	sigaction(SIGQUIT, &s->old_quit, NULL);
	sigaction(SIGTERM, &s->old_term, NULL);
	sigaction(SIGHUP, &s->old_hup, NULL);
}

static int run_wait(pid_t pid, int *status)
{
	int ws;

	while (waitpid(pid, &ws, 0) < 0) {
		if (errno != EINTR)
			return cli_error(CLI_EXIT_NOTRACE, "record", "cannot wait for the command (%s); "
					 "this should not happen, please report it", strerror(errno));
	}
	if (WIFSIGNALED(ws)) {
		*status = 128 + WTERMSIG(ws);
		cli_exit_like_signal(WTERMSIG(ws));
		cli_note("record: the command was killed by signal %d (%s)", WTERMSIG(ws),
			 strsignal(WTERMSIG(ws)));
	} else {
		*status = WEXITSTATUS(ws);
	}
	return 0;
}

int record_run(const struct record_opts *o, int *status)
{
	sigset_t block, old;
	struct run_signals saved;
	pid_t pid;
	int err = run_set_environment(o);

	if (err)
		return err;
	/* Blocked across fork: the parent's handlers go in before any of these can arrive, and the
	 * child keeps the dispositions fltrace was started with. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGQUIT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return cli_error(CLI_EXIT_NOTRACE, "record", "cannot start the command (fork: %s); "
				 "free some memory or processes and retry", strerror(errno));
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		run_exec_child(o);
	}
	run_child = pid;
	run_signals_parent(&saved);
	sigprocmask(SIG_SETMASK, &old, NULL);
	err = run_wait(pid, status);
	run_signals_restore(&saved);
	run_child = 0;
	return err;
}

/* Whether `dir` is the current directory, where a bare 'fltrace report' finds the trace. */
static bool run_is_cwd(const char *dir)
{
	char cwd[PATH_MAX], real[PATH_MAX];

	return getcwd(cwd, sizeof(cwd)) && realpath(cwd, real) && !strcmp(real, dir);
}

/* The fault records the traces hold: exact even when a process died by a signal before its last
 * stats line (stats are written once a second and at a normal exit). -1 if none could be read. */
static int64_t run_count_recorded(const char *dir)
{
	struct trace_list l;
	int64_t n = -1;
	char err[256];

	if (trace_list_dir(dir, &l) < 0)
		return -1;
	for (size_t i = 0; i < l.n; i++) {
		struct trace *t;
		if (trace_open(l.v[i].path, &t, err, sizeof(err)) < 0)
			continue;
		if (n < 0)
			n = 0;
		for (const struct ft_rec_hdr *h; (h = trace_next(t));)
			n += h->type == FT_REC_FAULT;
		trace_close(t);
	}
	trace_list_free(&l);
	return n;
}

int record_summarize(const struct record_opts *o, int status)
{
	struct runstats t;

	runstats_read_dir(&t, o->outdir);
	if (!t.files) {
		cli_error(CLI_EXIT_NOTRACE, "record", "no trace was written in %s (the tracer did not "
			  "start in the command); see any message above, and check that the command "
			  "keeps LD_PRELOAD in the environment of its processes", o->outdir);
		return status ? status : CLI_EXIT_NOTRACE;
	}
	/* With -S, most faults are served without a record: say both numbers. */
	char served[64] = "";
	if (t.sampled_out)
		snprintf(served, sizeof(served), " of %llu served (-S)", (unsigned long long)t.faults);
	int64_t recorded = run_count_recorded(o->outdir);
	/* Sizes the user did not give: say what was chosen. */
	char sizes[128] = "";
	if (o->localmem_default && o->maxmem_default)
		snprintf(sizes, sizeof(sizes), "no -L/-M: uncapped, up to the machine's %.1f MB, nothing "
			 "evicted; ", o->maxmem / RUN_MB);
	else if (o->maxmem_default)
		snprintf(sizes, sizeof(sizes), "-M not given: the machine's %.1f MB; ", o->maxmem / RUN_MB);
	else if (o->localmem_default)
		snprintf(sizes, sizeof(sizes), "-L not given: all of -M, nothing evicted; ");
	cli_note("recorded %llu faults%s in %u process%s (%speak tracked resident %.1f MB, far %.1f MB); "
		 "trace in %s; run 'fltrace report'%s",
		 (unsigned long long)(recorded >= 0 ? (uint64_t)recorded : t.faults - t.sampled_out),
		 served, t.files, t.files == 1 ? "" : "es", sizes, t.resident_peak / RUN_MB,
		 t.far_peak / RUN_MB, o->outdir, run_is_cwd(o->outdir) ? "" : " there");
	if (o->prefetch != FLTRACE_PREFETCH_none) {
		char text[512];
		cli_note("prefetch %s: %s", fltrace_prefetch_name((unsigned)o->prefetch),
			 runstats_prefetch_text(&t, text, sizeof(text)));
	}
	/* With replicas a lost server is survived: say what that took (far_memcached.c notes the loss). */
	if (o->far_replicas > 1)
		cli_note("far memory replicas: %llu re-fetch%s read from a replica; %llu server%s given up",
			 (unsigned long long)t.far_replica_gets, t.far_replica_gets == 1 ? "" : "es",
			 (unsigned long long)t.far_servers_lost, t.far_servers_lost == 1 ? "" : "s");
	if (o->keep_sites)
		cli_note("keep-local: %llu allocation%s at %s kept, up to %.1f MB of their pages held local%s",
			 (unsigned long long)t.keep_allocs, t.keep_allocs == 1 ? "" : "s", o->keep_sites,
			 t.keep_peak / RUN_MB, t.keep_over ? "" : "; none evicted");
	if (t.keep_over)
		cli_note("warning: keep-local: the kept pages filled -L (less the 16 pages an instruction "
			 "may need): %llu page%s of kept allocations went to the policy and may have been "
			 "evicted; raise -L or keep fewer sites", (unsigned long long)t.keep_over,
			 t.keep_over == 1 ? "" : "s");
	if (o->keep_sites && !t.keep_allocs)
		cli_note("warning: keep-local: no allocation was made at %s; check the site names with "
			 "'fltrace report --by alloc'", o->keep_sites);
	/* A program whose memory is mostly static data, stacks or shared mappings faults little
	 * under fltrace: say so rather than let a small count pass for the whole story. */
	if (t.untracked_rss > t.resident_peak && t.untracked_rss > 8 * RUN_MB)
		cli_note("note: up to %.1f MB of a process's memory was not tracked (stacks, static "
			 "data, code, shared or file mappings): see untracked_* in the stats files",
			 t.untracked_rss / RUN_MB);
	return status;
}
