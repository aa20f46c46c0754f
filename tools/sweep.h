/* The pieces of `fltrace sweep`: the runs (cmd_sweep.c: options, one `fltrace record` per size and
 * policy) and what is made of them (sweep_report.c: sweep.csv, the curve, the callsite table). */
#ifndef FLTRACE_SWEEP_H
#define FLTRACE_SWEEP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "../src/analysis/runstats.h"

#define SWEEP_MAX_SIZES 16
#define SWEEP_MAX_POLICIES 4 /* every policy of inc/fltrace/policies.h */
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
};

/* sweep_report.c: writes sweep.csv, curve.svg, callsites.csv and the text tables (sweep.txt,
 * also on stdout). Returns 0 or an exit code after its one-line message. */
int sweep_report(struct sweep *s);

#endif
