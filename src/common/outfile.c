/* fltrace's output files and directories (inc/fltrace/outfile.h): created with O_EXCL|O_NOFOLLOW,
 * or written under a temporary name and renamed into place; a name someone else put there is refused. */
#include <fltrace/outfile.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h> /* renameat */
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OUTFILE_TMP_TRIES 64

/* Whether an existing file is one fltrace may write again. Its own outputs are regular files of
 * the user, with one name: only that user (or root) can make such a file, so one with another
 * owner, another name elsewhere (a hard link) or no data of its own (a link) was put there by
 * someone else. The mode is not asked: outputs of earlier versions were 0644. */
static int outfile_own(const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return -OUTFILE_ESYMLINK;
	if (!S_ISREG(st->st_mode))
		return -OUTFILE_ETYPE;
	if (st->st_nlink != 1)
		return -OUTFILE_ELINKS;
	if (st->st_uid != geteuid())
		return -OUTFILE_EOWNER;
	return 0;
}

int outfile_check(const char *path)
{
	struct stat st;

	if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	return outfile_own(&st);
}

int outfile_open_own(const char *path, int flags)
{
	struct stat st;
	int fd, err;

	/* O_NONBLOCK: a fifo put there must not block the open until someone writes or reads it. */
	fd = openat(AT_FDCWD, path, (flags & ~(O_CREAT | O_TRUNC)) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		int why = err == -ENOENT ? 0 : outfile_check(path);
		return why ? why : err;
	}
	err = fstat(fd, &st) < 0 ? -errno : outfile_own(&st);
	if (!err && !(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int outfile_open(const char *path, int flags)
{
	int fd;

	flags &= ~(O_CREAT | O_TRUNC);
	fd = openat(AT_FDCWD, path, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, OUTFILE_MODE);
	if (fd >= 0)
		return fd;
	if (errno != EEXIST)
		return -errno;
	if (flags & O_EXCL) {
		int why = outfile_check(path);
		return why ? why : -EEXIST;
	}
	return outfile_open_own(path, flags);
}

/* "<dir of path>/.fltrace-tmp-<16 hex digits>": random, so that nobody can put a name there first. */
static int outfile_tmp_name(struct outfile *o)
{
	static const char hex[] = "0123456789abcdef";
	const char *slash = strrchr(o->path, '/');
	size_t dirlen = slash ? (size_t)(slash - o->path) + 1 : 0;
	uint64_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32 ^
		    (uint64_t)ts.tv_sec;
	}
	if (dirlen + 30 > sizeof(o->tmp))
		return -ENAMETOOLONG;
	memcpy(o->tmp, o->path, dirlen);
	memcpy(o->tmp + dirlen, ".fltrace-tmp-", 13);
	for (int i = 0; i < 16; i++)
		o->tmp[dirlen + 13 + i] = hex[(r >> (4 * i)) & 15];
	o->tmp[dirlen + 29] = 0;
	return 0;
}

/* The temporary file beside o->path, 0600. */
static int outfile_tmp_create(struct outfile *o)
{
	int err;

	for (int i = 0; i < OUTFILE_TMP_TRIES; i++) {
		if ((err = outfile_tmp_name(o)))
			return err;
		o->fd = openat(AT_FDCWD, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			       OUTFILE_MODE);
		if (o->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	err = -errno;
	o->tmp[0] = 0;
	return err;
}

static int outfile_set_path(struct outfile *o, const char *path)
{
	size_t len = strlen(path);

	o->fd = -1;
	o->tmp[0] = 0;
	if (len >= sizeof(o->path))
		return -ENAMETOOLONG;
	memcpy(o->path, path, len + 1);
	return 0;
}

int outfile_begin(struct outfile *o, const char *path)
{
	int err = outfile_set_path(o, path);

	if (!err)
		err = outfile_check(path);
	return err ? err : outfile_tmp_create(o);
}

int outfile_try_dir(const char *dir)
{
	struct outfile o;
	char path[PATH_MAX];
	size_t n = strlen(dir);
	int err;

	if (n + 3 > sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, n);
	memcpy(path + n, "/x", 3); /* a name in dir: only its directory is used */
	err = outfile_set_path(&o, path);
	if (!err)
		err = outfile_tmp_create(&o);
	outfile_abort(&o);
	return err;
}

/* rename replaces the name only: even if a link was put under the name after the check, the file
 * it points to is not written. The check is what turns such a name into an error. */
int outfile_commit(struct outfile *o)
{
	int err = 0;

	if (o->fd >= 0 && close(o->fd) < 0)
		err = -errno;
	o->fd = -1;
	if (!o->tmp[0])
		return err ? err : -EBADF;
	if (!err)
		err = outfile_check(o->path);
	if (!err && renameat(AT_FDCWD, o->tmp, AT_FDCWD, o->path) < 0)
		err = -errno;
	if (err)
		unlinkat(AT_FDCWD, o->tmp, 0);
	o->tmp[0] = 0;
	return err;
}

void outfile_abort(struct outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp[0])
		unlinkat(AT_FDCWD, o->tmp, 0);
	o->tmp[0] = 0;
}

int outfile_mkdir(const char *path)
{
	struct stat st;

	if (mkdirat(AT_FDCWD, path, OUTFILE_DIR_MODE) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		return -OUTFILE_ESYMLINK;
	if (!S_ISDIR(st.st_mode))
		return -OUTFILE_ENOTDIR;
	if (st.st_uid != geteuid())
		return -OUTFILE_EOWNER;
	return 0;
}

const char *outfile_strerror(int err)
{
	switch (-err) {
	case OUTFILE_ESYMLINK: return "is a symbolic link that fltrace did not make";
	case OUTFILE_ELINKS: return "has other hard links, so fltrace did not write it";
	case OUTFILE_EOWNER: return "belongs to another user";
	case OUTFILE_ETYPE: return "is not a regular file";
	case OUTFILE_ENOTDIR: return "is not a directory";
	default: return strerror(-err);
	}
}
