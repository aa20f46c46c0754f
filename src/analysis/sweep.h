/* What `fltrace sweep` made: its runs (one `fltrace record` per size and policy) and their results,
 * and what is made of them (slowdowns, every callsite's faults in every run) for its writers. */
#ifndef FLTRACE_ANALYSIS_SWEEP_H
#define FLTRACE_ANALYSIS_SWEEP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "callsites.h"
#include "runstats.h"

#define SWEEP_MAX_SIZES 16
#define SWEEP_MAX_POLICIES 8 /* series: policies, or policies times prefetchers (--prefetch) */
#define SWEEP_MAX_RUNS (1 + SWEEP_MAX_SIZES * SWEEP_MAX_POLICIES)

struct sweep_run {
	char name[64];           /* its directory under the sweep's: "ample", "L4M-clock" */
	char dir[PATH_MAX];
	uint64_t localmem;       /* -L, bytes */
	const char *policy;
	bool ample;              /* -L = -M: nothing evicted; the baseline of every policy */
	/* Results. */
	bool done;               /* ran and wrote a trace */
	int status;              /* the command's exit status */
	double wall_s;           /* the whole `fltrace record` run */
	double slowdown;         /* wall_s / its baseline's; < 0 unknown */
	bool output_differs;     /* stdout or status differs from the first run's */
	char differs_how[160];
	struct runstats st;
};

struct sweep {
	const char *outdir;      /* -o */
	char **cmd_argv;
	long top;                /* callsites shown in the text table */
	struct sweep_run runs[SWEEP_MAX_RUNS];
	size_t nruns;
	const char *policies[SWEEP_MAX_POLICIES];
	size_t npolicies;
	uint64_t maxmem;
	bool auto_sizes;         /* sizes from the ample run's peak */
	/* Progress and problems while the traces are read (stderr); may be NULL. */
	void (*note)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
};

/* What a sweep writer gets (a row of the writers table, report.h). */
struct sweep_view {
	const struct sweep *s;
	const struct callsites *cs; /* by callsite, a column per run, most at the smallest sizes first */
};

/* Each run's slowdown against its baseline, and the callsites of every run (*cs, to free with
 * callsites_free). 0 or -errno. */
int sweep_analyse(struct sweep *s, struct callsites **cs);

#endif
