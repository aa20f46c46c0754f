/* The maps history: /proc/self/maps snapshots, taken when it changed. */
#ifndef FLTRACE_RT_MAPS_H
#define FLTRACE_RT_MAPS_H

#include "rt.h"

int maps_open(char *path, size_t cap); /* the text history file; 0 or -errno (path: its name) */
void maps_snapshot(void);        /* if /proc/self/maps changed: record it */
void maps_fork_prepare(void);    /* no snapshot under way across a fork (until maps_fork_parent) */
void maps_fork_parent(void);
void maps_close(void);
void maps_fork_child(void);      /* after fork: a history (and files) of the child's own */

#endif
