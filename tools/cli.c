/* The one place where fltrace formats its own messages (see tools/cli.h): one line each, built
 * in a buffer first so that a message is a single write and never interleaves with the child's. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* The errno of stdout's first failed flush: a message's flush (stdout before stderr, in order) may
 * be the one that meets a full disk, and glibc does not keep it for the final check. */
static int stdout_errno;

static int cli_flush_noting(void)
{
	errno = 0;
	int r = fflush(stdout);
	if (r && errno && !stdout_errno)
		stdout_errno = errno;
	return r;
}

static void cli_vline(const char *what, const char *fmt, va_list ap)
{
	char buf[2048];
	size_t n = 0;
	int r;

	r = what ? snprintf(buf, sizeof(buf), "fltrace: %s: ", what)
		 : snprintf(buf, sizeof(buf), "fltrace: ");
	if (r > 0)
		n = (size_t)r < sizeof(buf) ? (size_t)r : sizeof(buf) - 1;
	r = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (r > 0)
		n += (size_t)r < sizeof(buf) - n ? (size_t)r : sizeof(buf) - n - 1;
	/* Keep it one line even if an argument (a file name) carries a newline. */
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = ' ';
	if (n >= sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	cli_flush_noting();
	if (write(STDERR_FILENO, buf, n) < 0)
		return; /* nowhere left to report it */
}

int cli_error(int code, const char *what, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vline(what, fmt, ap);
	va_end(ap);
	return code;
}

void cli_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vline(NULL, fmt, ap);
	va_end(ap);
}

/* mkdir -p: an output directory like runs/L140 may be new, and its parent too; the user named
 * it, so a link on the way is followed. */
int cli_mkdir_p(const char *path)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, OUTFILE_DIR_MODE) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, OUTFILE_DIR_MODE) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int cli_out_error(const char *path, int err)
{
	if (outfile_refused(err))
		return cli_error(CLI_EXIT_FAIL, path, "%s; remove it (someone else may have put it "
				 "there) or write elsewhere", outfile_strerror(err));
	return cli_error(CLI_EXIT_FAIL, path, "cannot write it (%s); make its directory writable, "
			 "or write elsewhere with -o", outfile_strerror(err));
}

#define CLI_OUT_BUF (1u << 20) /* a report of a few MB leaves in a few writes, not in 4 KiB ones */

FILE *cli_out_open(struct cli_out *o, const char *path)
{
	int err = outfile_begin(&o->of, path);

	o->f = NULL;
	o->buf = NULL;
	if (err) {
		cli_out_error(path, err);
		return NULL;
	}
	o->f = fdopen(o->of.fd, "w");
	if (!o->f) {
		err = -errno;
		outfile_abort(&o->of);
		cli_out_error(path, err);
		return NULL;
	}
	o->of.fd = -1; /* the stream's now: fclose closes it */
	o->buf = malloc(CLI_OUT_BUF);
	if (o->buf)
		setvbuf(o->f, o->buf, _IOFBF, CLI_OUT_BUF);
	return o->f;
}

static void cli_out_release(struct cli_out *o)
{
	free(o->buf);
	o->buf = NULL;
	o->f = NULL;
}

int cli_out_close(struct cli_out *o)
{
	int bad = ferror(o->f), err = 0;

	errno = 0;
	if (fclose(o->f) || bad)
		err = -(errno ? errno : EIO);
	cli_out_release(o);
	if (err) {
		outfile_abort(&o->of);
		return cli_error(CLI_EXIT_FAIL, o->of.path, "writing it failed (%s); free some space "
				 "or write elsewhere", strerror(-err));
	}
	err = outfile_commit(&o->of);
	return err ? cli_out_error(o->of.path, err) : 0;
}

void cli_out_abort(struct cli_out *o)
{
	if (o->f)
		fclose(o->f);
	cli_out_release(o);
	outfile_abort(&o->of);
}

/* "--", "-x" with x a short option of the command, or "--name[=...]" with name a long one. */
static bool cli_is_own_option(const char *w, const char *optstring, const struct option *longopts)
{
	if (w[0] != '-' || !w[1])
		return false;
	if (w[1] != '-')
		return w[1] != ':' && w[1] != '+' && strchr(optstring, w[1]) != NULL;
	if (!w[2])
		return true; /* "--": the end of the options */
	size_t n = strcspn(w + 2, "=");
	for (const struct option *o = longopts; o->name; o++)
		if (strlen(o->name) == n && !strncmp(o->name, w + 2, n))
			return true;
	return false;
}

int cli_value_left_out(char **argv, const char *cmd, const char *optstring, const struct option *longopts)
{
	if (!optarg || optind < 2 || optarg != argv[optind - 1] || !cli_is_own_option(optarg, optstring, longopts))
		return 0;
	return cli_error(CLI_EXIT_USAGE, argv[optind - 2], "needs a value, and '%s' is an option; "
			 "run 'fltrace %s --help'", optarg, cmd);
}

int cli_stdout_flush(int status)
{
	static bool reported;
	if (cli_flush_noting() == 0 && !ferror(stdout))
		return status;
	/* EIO when nothing says: glibc keeps no errno of a write that failed earlier. */
	int err = stdout_errno ? stdout_errno : EIO;
	if (!reported)
		cli_error(CLI_EXIT_FAIL, "stdout", "write error: %s; free space or write the output elsewhere",
			  strerror(err));
	reported = true;
	return status ? status : CLI_EXIT_FAIL;
}

static int exit_signal;

void cli_exit_like_signal(int sig)
{
	exit_signal = sig;
}

int cli_exit(int status)
{
	if (!exit_signal || status != 128 + exit_signal)
		return status;
	/* No core of fltrace's own: the command's core, if it dumped one, is the one that counts. */
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
	signal(exit_signal, SIG_DFL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, exit_signal);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	raise(exit_signal);
	return status; /* a signal that does not end a process by default cannot have ended it */
}
