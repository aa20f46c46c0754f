/* The pieces of `fltrace record`: parsed options (cmd_record.c), checks (record_check.c), the run
 * (record_run.c). Each returns 0, or an exit code after printing its one-line error (cli.h). */
#ifndef FLTRACE_RECORD_H
#define FLTRACE_RECORD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <fltrace/config.h>
#include <fltrace/cpulist.h>

struct record_opts {
	uint64_t localmem;          /* -L, bytes; 0 = not given (record_check_memory defaults it) */
	uint64_t maxmem;            /* -M, bytes; 0 = not given (ditto) */
	bool localmem_default;      /* -L was not given: it is -M (nothing is evicted) */
	bool maxmem_default;        /* -M was not given: it is the machine's memory */
	uint64_t handlers;          /* -C */
	uint64_t samplerate;        /* -S, faults per second, 0 = all */
	uint64_t depth;             /* --depth */
	enum fltrace_policy policy; /* --policy */
	int prefetch;               /* --prefetch: a row of inc/fltrace/prefetchers.h (0: none) */
	const char *keep_sites;     /* --keep-local as given: sites, comma-separated; NULL = none */
	char *keep_env;             /* FLTRACE_KEEP_LOCAL, made by record_resolve_keep */
	int far;                    /* --far: a row of inc/fltrace/backends.h */
	char far_dir[PATH_MAX];     /* --far file:<dir>, absolute; memcached: the servers, numeric */
	uint64_t far_replicas;      /* --far-replicas (memcached), 0 = not given (1) */
	uint64_t far_timeout_ms;    /* --far-timeout (memcached), 0 = not given (the default) */
	char far_auth_path[PATH_MAX]; /* --far-auth, absolute */
	const char *far_auth;       /* far_auth_path if given, else NULL */
	char far_run[17];           /* memcached: this run's id, made by record_check_far */
	const char *far_clear;      /* --far-clear: the run whose items to delete (no command) */
	uint64_t far_latency_us;    /* --far-latency */
	const char *poll;           /* --poll: adaptive (default), block or spin */
	const char *files;          /* --files: mapped (default) or all */
	uint64_t alloc_sample;      /* --alloc-sample, bytes; 0 = the default */
	bool alloc_sample_off;      /* --alloc-sample off */
	bool have_cores;            /* --cores given */
	struct cpulist cores;       /* --cores */
	const char *outdir_arg;     /* -o as given */
	char **cmd_argv;            /* the command and its own arguments, untouched */
	char cmd_path[PATH_MAX];    /* the command's file, found as execvp finds it */
	char preload[PATH_MAX];     /* absolute path of libfltrace.so */
	char outdir[PATH_MAX];      /* absolute output directory */
};

/* cmd_record.c: checks the value of one option by its long name as record would (for sweep,
 * which passes options on); 0, or an exit code after the message. */
int record_check_option(const char *name, const char *arg);
/* record_check.c: MemTotal of /proc/meminfo in bytes (the most -M can be), 0 if unknown. */
uint64_t record_memtotal(void);

/* record_check.c: validation against the machine, before anything is changed. */
/* Also fills in -L and -M when not given: -M the machine's memory, -L all of -M. */
int record_check_memory(struct record_opts *o);
void record_note_spinning(const struct record_opts *o);
int record_check_cores(const struct record_opts *o);
int record_resolve_command(struct record_opts *o);
int record_check_program(const char *path);
int record_check_uffd(void);
int record_find_preload(struct record_opts *o);

/* record_far.c: --far memcached: names resolved (into o->far_dir), servers checked before the run
 * (reachable, SASL, never evicting, with room), the run's items cleared after it. */
int record_parse_far_servers(const char *list, struct record_opts *o);
int record_check_far(struct record_opts *o);
void record_clear_far(const struct record_opts *o);
/* --far-clear <run id>: no command; that run's items deleted from the servers (what a `fltrace
 * record` killed with SIGKILL leaves). Returns the exit status. */
int record_far_clear_only(struct record_opts *o);

/* record_keep.c: --keep-local's sites resolved to code ranges of the command (o->keep_env). */
int record_resolve_keep(struct record_opts *o);

/* record_run.c: the output directory, the traced run, the summary. */
int record_prepare_outdir(struct record_opts *o);
int record_clean_outdir(const struct record_opts *o);
int record_run(const struct record_opts *o, int *status);
int record_summarize(const struct record_opts *o, int status);

#endif
