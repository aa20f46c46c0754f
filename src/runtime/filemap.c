/* Files behind emulated private file mappings: an fd of our own per mapped file (the program may
 * close its fd at once), the file's size and path, page reads for the fault path, region records. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fltrace/fmt.h"
#include "rt.h"
#include "filemap.h"
#include "trace.h"
#include "threads.h"

#define FILEMAP_MAX 4096

struct filemap_file {
	int fd;        /* ours, O_RDONLY, in fltrace's private fd table: the program cannot close it */
	int refs;      /* regions (or parts of regions) that read from it; 0 = free slot */
	uint64_t size; /* at the first mapping: pages past it are left to the kernel (SIGBUS) */
	uint64_t dev, ino; /* what /proc/self/maps showed for it */
	uint32_t path_len;
	char path[PATH_MAX];
};

static struct {
	struct filemap_file *v; /* raw mmap: never memory the program could evict under us */
	uint32_t next_id;       /* FT_REC_REGION ids, dense from 0 in each trace file */
} fm;

static int filemap_free_slot(void)
{
	if (!fm.v) {
		fm.v = rt_map(FILEMAP_MAX * sizeof(struct filemap_file));
		if (!fm.v)
			return -ENOMEM;
	}
	for (int i = 0; i < FILEMAP_MAX; i++)
		if (fm.v[i].refs == 0)
			return i;
	return -ENFILE;
}

/* Slot h takes over our fd of the file at `path` (n bytes, its name as /proc shows it). */
static int filemap_fill(int h, const char *path, size_t n, int fd, const struct stat *st)
{
	struct filemap_file *file = &fm.v[h];
	memcpy(file->path, path, n);
	file->path[n] = '\0';
	file->path_len = (uint32_t)n + 1;
	file->fd = fd;
	file->size = (uint64_t)st->st_size;
	file->dev = (uint64_t)st->st_dev;
	file->ino = (uint64_t)st->st_ino;
	file->refs = 1;
	return h;
}

int filemap_open(int progfd)
{
	int h = filemap_free_slot();
	if (h < 0)
		return h;
	struct stat st;
	int fd = rt_fd_take_program(progfd, &st); /* our own reference, in our fd table */
	if (fd < 0)
		return fd;
	char link[64], path[PATH_MAX];
	struct fmt f;
	fmt_init(&f, link, sizeof(link));
	fmt_str(&f, "/proc/self/fd/");
	fmt_u64(&f, (uint64_t)progfd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	return filemap_fill(h, path, n < 0 ? 0 : (size_t)n, fd, &st);
}

/* The loader's files are opened again by path; a file replaced since it was mapped (a rebuilt
 * binary) is not the one mapped, and is left alone. Open files are shared between regions. */
int filemap_open_path(const char *path, uint64_t dev, uint64_t ino)
{
	size_t n = strlen(path);
	if (n + 1 > PATH_MAX)
		return -ENAMETOOLONG;
	for (int i = 0; fm.v && i < FILEMAP_MAX; i++)
		if (fm.v[i].refs > 0 && fm.v[i].dev == dev && fm.v[i].ino == ino &&
		    fm.v[i].path_len == n + 1 && memcmp(fm.v[i].path, path, n + 1) == 0) {
			fm.v[i].refs++;
			return i;
		}
	int h = filemap_free_slot();
	if (h < 0)
		return h;
	struct stat st;
	int fd = rt_fd_open(path, O_RDONLY, 0, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino) {
		rt_fd_close(fd);
		return -ESTALE;
	}
	return filemap_fill(h, path, n, fd, &st);
}

void filemap_ident(int file, const char **path, uint64_t *dev, uint64_t *ino)
{
	*path = fm.v[file].path;
	*dev = fm.v[file].dev;
	*ino = fm.v[file].ino;
}

void filemap_ref(int file)
{
	RT_BUG_ON(file < 0 || file >= FILEMAP_MAX || fm.v[file].refs <= 0);
	fm.v[file].refs++;
}

void filemap_unref(int file)
{
	RT_BUG_ON(file < 0 || file >= FILEMAP_MAX || fm.v[file].refs <= 0);
	if (--fm.v[file].refs == 0) {
		rt_fd_close(fm.v[file].fd);
		fm.v[file].fd = -1;
	}
}

uint64_t filemap_size(int file)
{
	return fm.v[file].size;
}

/* The kernel's mapping of the file (the part of a region past its end, or a loader range given
 * back), made from any thread. */
void *filemap_mmap(int file, void *addr, size_t len, int prot, int flags, uint64_t off)
{
	bool borrowed;
	int fd = rt_fd_borrow(fm.v[file].fd, &borrowed);
	if (fd < 0)
		return MAP_FAILED;
	void *p = (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, (off_t)off);
	rt_fd_unborrow(fd, borrowed);
	return p;
}

/* Fork: the child's table is a copy of the forking thread's, without our private fds. Before the
 * fork (rt.lock held) the files are copied into the forking thread's table, so the child inherits
 * them; its new private table takes them over, and the parent closes its copies. */
static int *fork_fds;

void filemap_fork_prepare(void)
{
	if (!fm.v)
		return;
	if (!fork_fds && !(fork_fds = rt_map(FILEMAP_MAX * sizeof(int))))
		return;
	int fds[FILEMAP_MAX];
	for (int i = 0; i < FILEMAP_MAX; i++)
		fds[i] = fm.v[i].refs > 0 ? fm.v[i].fd : -1;
	rt_fd_borrow_many(fds, fork_fds, FILEMAP_MAX);
}

void filemap_fork_parent(void)
{
	for (int i = 0; fork_fds && fm.v && i < FILEMAP_MAX; i++)
		rt_fd_unborrow(fork_fds[i], fork_fds[i] >= 0);
}

void filemap_fork_child(void)
{
	for (int i = 0; fork_fds && fm.v && i < FILEMAP_MAX; i++)
		if (fm.v[i].refs > 0)
			fm.v[i].fd = rt_fd_own(fork_fds[i]);
}

int filemap_read_page(int file, uint64_t off, void *buf)
{
	size_t got = 0;
	while (got < rt.page_size) {
		ssize_t n = rt_pread(fm.v[file].fd, (char *)buf + got, rt.page_size - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* end of file: the rest of the page reads as zeros, as the kernel's does */
		got += (size_t)n;
	}
	memset((char *)buf + got, 0, rt.page_size - got);
	return 0;
}

/* The record that lets reports turn a faulting address into (path, offset). A region split later
 * keeps its id: offset = addr - start + offset holds for every part. */
uint32_t filemap_record(int file, uintptr_t start, size_t len, uint64_t off)
{
	uint32_t id = fm.next_id++;
	const struct filemap_file *fl = &fm.v[file];
	uint32_t size = ft_rec_size((uint32_t)(sizeof(struct ft_region) + fl->path_len));
	struct own_code c = threads_own_code_begin(); /* see allocs_write */
	struct ft_region *r = trace_reserve(size);
	threads_own_code_end(c);
	if (!r)
		return id;
	r->time_ns = rt_now_ns();
	r->id = id;
	r->path_len = fl->path_len;
	r->start = start;
	r->len = len;
	r->offset = off;
	memcpy(r->path, fl->path, fl->path_len);
	trace_commit(r, FT_REC_REGION, size);
	return id;
}

void filemap_ids_reset(void)
{
	fm.next_id = 0;
}
