/* The fltrace command: dispatches to a subcommand from a table (in the manner of perf), prints
 * the top-level help and version, and checks at exit that stdout was really written. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <fltrace/backends.h>
#include <fltrace/config.h>
#include <fltrace/policies.h>
#include <fltrace/prefetchers.h>

#include "../src/analysis/report.h"
#include "builtin.h"
#include "cli.h"

struct cmd_struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct cmd_struct fltrace_cmds[] = {
	{ "record", cmd_record, "run a command with a local-memory cap and trace its page faults" },
	{ "report", cmd_report, "turn a trace into a CSV of faulting call sites, most faults first" },
	{ "visualize", cmd_visualize, "draw flame graphs (SVG) of a trace: all faults, first touches" },
	{ "sweep", cmd_sweep, "record at several local-memory sizes and policies: the miss-ratio curve" },
};

#define FLTRACE_NR_CMDS (sizeof(fltrace_cmds) / sizeof(fltrace_cmds[0]))

static void fltrace_usage(FILE *f)
{
	fprintf(f,
		"usage: fltrace [--version] [--help] <command> [<args>]\n"
		"\n"
		"fltrace runs an unmodified program with less local memory than it needs and records\n"
		"every page fault it takes, with the stack of code that caused it.\n"
		"\n"
		"commands:\n");
	for (size_t i = 0; i < FLTRACE_NR_CMDS; i++)
		fprintf(f, "  %-10s %s\n", fltrace_cmds[i].name, fltrace_cmds[i].summary);
	fprintf(f,
		"  %-10s show the help of a command (same as 'fltrace <command> --help')\n"
		"\n"
		"examples:\n"
		"  fltrace record -L 140 -M 1000 -- ./bfs -g 20 -n 1   # trace with 140 MB local memory\n"
		"  fltrace report                                      # CSV of call sites\n"
		"  fltrace visualize                                   # flame graphs\n"
		"  fltrace sweep -- ./bfs -g 18 -n 1                   # faults and time as memory shrinks\n"
		"  fltrace help record                                 # all options of record\n",
		"help");
}

static const struct cmd_struct *fltrace_find(const char *name)
{
	for (size_t i = 0; i < FLTRACE_NR_CMDS; i++)
		if (!strcmp(fltrace_cmds[i].name, name))
			return &fltrace_cmds[i];
	return NULL;
}

static int fltrace_unknown(const char *name)
{
	return cli_error(CLI_EXIT_USAGE, name,
			 "not a fltrace command; run 'fltrace help' for the list "
			 "(record, report, visualize, sweep)");
}

/* `fltrace help [cmd]`: the top-level help, or `fltrace <cmd> --help`. */
static int fltrace_help(int argc, char **argv)
{
	const struct cmd_struct *cmd;
	char help_opt[] = "--help";

	if (argc < 2 || !strcmp(argv[1], "help")) { /* help's own help is the list it shows */
		fltrace_usage(stdout);
		return CLI_EXIT_OK;
	}
	if (argc > 2)
		return cli_error(CLI_EXIT_USAGE, "help", "too many arguments; run 'fltrace help <command>'");
	cmd = fltrace_find(argv[1]);
	if (!cmd)
		return fltrace_unknown(argv[1]);
	char *cmd_argv[] = { argv[1], help_opt, NULL };
	return cmd->fn(2, cmd_argv);
}

/* `fltrace --complete WHAT` (hidden; tools/fltrace.bash-completion calls it): the words of one of
 * the tables --help prints from, one a line, so that completion offers exactly what --help lists. */
static int fltrace_complete(int argc, char **argv)
{
	const char *what = argc > 2 ? argv[2] : "";

	if (!strcmp(what, "commands")) {
		for (size_t i = 0; i < FLTRACE_NR_CMDS; i++)
			printf("%s\n", fltrace_cmds[i].name);
		printf("help\n");
	} else if (!strcmp(what, "policies")) {
		for (unsigned i = 0; i < FLTRACE_POLICY_COUNT; i++)
			printf("%s\n", fltrace_policy_name(i));
	} else if (!strcmp(what, "backends")) {
		/* one that takes an argument is offered as "name:", the argument to be typed */
		for (unsigned i = 0; i < FLTRACE_BACKEND_COUNT; i++) {
			const char *arg, *name = fltrace_backend_name(i);
			printf("%s%s\n", name, fltrace_backend_parse(name, &arg) == -2 ? ":" : "");
		}
	} else if (!strcmp(what, "prefetchers")) {
		for (unsigned i = 0; i < FLTRACE_PREFETCH_COUNT; i++)
			printf("%s\n", fltrace_prefetch_name(i));
	} else if (!strcmp(what, "formats")) {
		size_t n;
		const struct report_writer *w = report_writers(&n);
		for (size_t i = 0; i < n; i++)
			if (w[i].cmd == WR_REPORT)
				printf("%s\n", w[i].name);
	} else {
		return cli_error(CLI_EXIT_USAGE, "--complete", "'%s' is not a list fltrace completes; "
				 "give commands, policies, prefetchers, backends or formats", what);
	}
	return CLI_EXIT_OK;
}

static int fltrace_dispatch(int argc, char **argv)
{
	const struct cmd_struct *cmd;

	if (argc < 2)
		return cli_error(CLI_EXIT_USAGE, "usage", "no command given; run e.g. 'fltrace record "
				 "-L 140 -M 1000 -- ./prog', or 'fltrace help' for the list of commands");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return fltrace_help(1, argv + 1);
	if (!strcmp(argv[1], "--version")) {
		printf("fltrace %s\n", FLTRACE_VERSION_STRING);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "help"))
		return fltrace_help(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--complete"))
		return fltrace_complete(argc, argv);
	if (argv[1][0] == '-')
		return cli_error(CLI_EXIT_USAGE, argv[1], "unknown option; run 'fltrace help' "
				 "(options go after the command, e.g. 'fltrace record --help')");
	cmd = fltrace_find(argv[1]);
	if (!cmd)
		return fltrace_unknown(argv[1]);
	return cmd->fn(argc - 1, argv + 1);
}

/* A report cut short by a full disk must not look like a success (as perf does it). A failed
 * close of a stdout that was closed from the start (EBADF, nothing written) is not an error. */
static int fltrace_close_stdout(int status)
{
	status = cli_stdout_flush(status);
	errno = 0;
	if (fclose(stdout) != 0 && errno != EBADF && !status)
		return cli_error(CLI_EXIT_FAIL, "stdout", "write error: %s; free space or write the output "
				 "elsewhere", strerror(errno ? errno : EIO));
	return status;
}

int main(int argc, char **argv)
{
	/* Output to a file or pipe leaves in one write where it fits, so that a write error is
	 * told with its own errno (glibc forgets it once a write failed) rather than as EIO. */
	static char out_buf[1 << 16];
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, out_buf, _IOFBF, sizeof(out_buf));
	return cli_exit(fltrace_close_stdout(fltrace_dispatch(argc, argv)));
}
