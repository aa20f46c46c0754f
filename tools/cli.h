/* Messages of the fltrace command: every error is one line on stderr,
 * "fltrace: <what>: <why>; <what to do>", and the exit codes they go with. */
#ifndef FLTRACE_CLI_H
#define FLTRACE_CLI_H

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

/* Prints an informational line "fltrace: <fmt...>" on stderr. */
void cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* mkdir -p (an output directory like runs/L140 may be new, and its parent too); 0 or -errno. */
int cli_mkdir_p(const char *path);

#endif
