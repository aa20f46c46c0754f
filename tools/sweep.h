/* The pieces of `fltrace sweep`: the runs (cmd_sweep.c: options, one `fltrace record` per size and
 * policy) and what is made of them (sweep_report.c: sweep.csv, the curve, the callsite table). */
#ifndef FLTRACE_SWEEP_H
#define FLTRACE_SWEEP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "../src/analysis/sweep.h"

/* sweep_report.c: writes sweep.csv, curve.svg, callsites.csv and the text tables (sweep.txt,
 * also on stdout). Returns 0 or an exit code after its one-line message. */
int sweep_report(struct sweep *s);

#endif
