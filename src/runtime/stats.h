/* The stats file: one line of counters per second and at exit, and the thread that writes
 * it (and runs the runtime's other once-a-second work). */
#ifndef FLTRACE_RT_STATS_H
#define FLTRACE_RT_STATS_H

#include "rt.h"

int stats_open(char *path, size_t cap); /* the stats file; 0 or -errno (path: its name) */
int stats_start(void);                 /* the once-a-second thread, writing to that file */
void stats_write_line(void);
void stats_stop(void);
void stats_fork_child(void);

#endif
