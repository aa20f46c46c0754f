/* Messages of the fltrace command: every error is one line on stderr,
 * "fltrace: <what>: <why>; <what to do>", and the exit codes they go with. */
#ifndef FLTRACE_CLI_H
#define FLTRACE_CLI_H

#include <stdio.h>

#include <fltrace/outfile.h>

/* Exit codes of fltrace itself; otherwise `record` exits with the command's own status. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1       /* an error of fltrace itself (e.g. writing stdout failed) */
#define CLI_EXIT_USAGE 2      /* bad command line, or a program LD_PRELOAD cannot reach */
#define CLI_EXIT_NOTRACE 125  /* could not trace: same as FLTRACE_EXIT_RUNTIME of the runtime */
#define CLI_EXIT_NOTFOUND 127 /* command not found or not executable, like a shell */

/* Prints "fltrace: <what>: <fmt...>\n" on stderr and returns `code`, so that a caller writes
 * `return cli_error(CLI_EXIT_USAGE, "record", "...; ...", ...)`. */
int cli_error(int code, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* After getopt_long returned an option with a value: when that value is the next word and is one
 * of this command's own options (in `optstring` or `longopts`), or "--" ("report --advise -i rec":
 * the size was left out), one message naming the option and CLI_EXIT_USAGE; otherwise 0 (a path
 * or a title may well start with '-'). `cmd` names the command for its --help. */
struct option;
int cli_value_left_out(char **argv, const char *cmd, const char *optstring, const struct option *longopts);

/* Prints an informational line "fltrace: <fmt...>" on stderr. */
void cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* mkdir -p of a directory the user named (an output directory like runs/L140 may be new, and its
 * parent too); what it creates is 0700. 0 or -errno. */
int cli_mkdir_p(const char *path);

/* An output file of a command (fltrace/outfile.h): written under a temporary name in its
 * directory and renamed over `path` when closed, never through a link nor over a file that is not
 * fltrace's own; 0600. */
struct cli_out {
	struct outfile of;
	FILE *f;
	char *buf; /* the stream's buffer (glibc's setvbuf takes a size only with a buffer) */
};
/* The stream to write, or NULL after one message naming the file. */
FILE *cli_out_open(struct cli_out *o, const char *path);
/* Closes and renames it into place: 0, or CLI_EXIT_FAIL after one message (a full disk, a name
 * someone put there meanwhile); the temporary file is gone either way. */
int cli_out_close(struct cli_out *o);
/* Closes it and removes the temporary file: nothing is written under the name. */
void cli_out_abort(struct cli_out *o);
/* The message for an output (file or directory) that cannot be made, `err` from fltrace/outfile.h
 * or -errno; returns CLI_EXIT_FAIL. */
int cli_out_error(const char *path, int err);

/* The command fltrace ran died of signal sig: fltrace ends the same way (cli_exit), so that its
 * own parent sees what the command's would have (a shell's "Segmentation fault", a wait status
 * that WIFSIGNALED, python's returncode -11), not an exit with 128+sig. */
void cli_exit_like_signal(int sig);
/* Returns status; does not return when a noted signal stands for it (status is 128+sig). */
int cli_exit(int status);

/* Flushes stdout; on a write error says so once (a command's own check and main's final one share
 * it) and returns status, or CLI_EXIT_FAIL if status was 0. */
int cli_stdout_flush(int status);

#endif
