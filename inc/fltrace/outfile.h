/* Creating fltrace's output files and directories: never through a symbolic link, never over a file
 * that is not fltrace's own. Used by the commands and by the runtime (no stdio, no malloc). */
#ifndef FLTRACE_OUTFILE_H
#define FLTRACE_OUTFILE_H

#include <limits.h>
#include <sys/types.h>

/* Why a name that is already there is refused, returned negated like an -errno; past the
 * kernel's errno values (MAX_ERRNO 4095), so that outfile_strerror alone names them. */
#define OUTFILE_ESYMLINK 4097 /* a symbolic link */
#define OUTFILE_ELINKS 4098   /* a regular file that has other hard links */
#define OUTFILE_EOWNER 4099   /* owned by another user */
#define OUTFILE_ETYPE 4100    /* not a regular file */
#define OUTFILE_ENOTDIR 4101  /* not a directory, where fltrace makes one */

/* Files are created 0600 (the traces' mode), directories 0700. */
#define OUTFILE_MODE 0600
#define OUTFILE_DIR_MODE 0700

/* The name `path` (not followed) as a file fltrace may write again: 0 if nothing is there, or a
 * regular file with one link, owned by the effective user; else -OUTFILE_E* (or -errno of lstat). */
int outfile_check(const char *path);

/* Opens `path` for writing: created 0600 if it is not there (O_EXCL, O_NOFOLLOW, never through a
 * link); if it is, only when outfile_check accepts it and `flags` has no O_EXCL (an earlier program
 * image of the same process appends to its own stats, say); with O_EXCL, -EEXIST for a file of
 * ours and -OUTFILE_E* for any other name. Never truncates. An fd, or -errno / -OUTFILE_E*. */
int outfile_open(const char *path, int flags);
/* Opens an existing file that outfile_check accepts (checked on the open fd), never creating it. */
int outfile_open_own(const char *path, int flags);

/* A file written under a temporary name in its directory and renamed over `path` at the end, so
 * that a name is never written through and an earlier output is replaced whole, never truncated. */
struct outfile {
	int fd;               /* the temporary file, -1 once closed by its user (fclose of fdopen) */
	char path[PATH_MAX];  /* its final name */
	char tmp[PATH_MAX];   /* its name until outfile_commit, "" when none */
};
/* 0 or -errno / -OUTFILE_E* (the final name is refused already here, before anything is written). */
int outfile_begin(struct outfile *o, const char *path);
/* Closes the fd if still open, checks the final name again and renames the file into place; on
 * any failure the temporary file is removed. 0 or -errno / -OUTFILE_E*. */
int outfile_commit(struct outfile *o);
/* Closes the fd if still open and removes the temporary file. */
void outfile_abort(struct outfile *o);

/* Whether fltrace can create files in `dir` (access(W_OK) says yes to root on a read-only file
 * system): a temporary file made and removed. 0 or -errno. */
int outfile_try_dir(const char *dir);

/* mkdir `path` 0700; one already there must be a directory (not a link to one) of this user.
 * 0 or -errno / -OUTFILE_E*. */
int outfile_mkdir(const char *path);

/* Whether err is one of the refusals above (someone else's name is in the way). */
static inline int outfile_refused(int err)
{
	return err <= -OUTFILE_ESYMLINK && err >= -OUTFILE_ENOTDIR;
}

/* What a refusal means, as a phrase after the file's name ("is a symbolic link"); strerror for
 * any other error. */
const char *outfile_strerror(int err);

#endif
