/* The subcommands of the fltrace command: one file each (cmd_<name>.c), dispatched from the
 * table in fltrace.c in the manner of perf. Each returns the process exit status. */
#ifndef FLTRACE_BUILTIN_H
#define FLTRACE_BUILTIN_H

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_visualize(int argc, char **argv);
int cmd_sweep(int argc, char **argv);

#endif
