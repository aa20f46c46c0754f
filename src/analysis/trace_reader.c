/* Trace reader: opens fltrace-data-trace-<pid>-<gen>.bin files, validates their header and hands
 * out records; a truncated or corrupt tail ends the data with a warning, never a crash. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"

int trace_open(const char *path, struct trace **out, char *err, size_t errlen)
{
	struct trace *t = NULL;
	struct stat st;
	int fd, ret = 0;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot open: %s; check the path", path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	t->path = strdup(path);
	t->size = st.st_size;
	if (t->size < sizeof(struct ft_file_header)) {
		ret = -EINVAL;
		snprintf(err, errlen, "%s: not a fltrace trace (%zu bytes, shorter than a header); "
			 "it was cut off before the recorder started, record again", path, t->size);
		goto out;
	}
	t->base = mmap(NULL, t->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (t->base == MAP_FAILED) {
		t->base = NULL;
		ret = -errno;
		snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
		goto out;
	}
	/* The reader walks records front to back exactly once per pass. */
	madvise((void *)t->base, t->size, MADV_SEQUENTIAL);
	t->hdr = (const struct ft_file_header *)t->base;
	if (memcmp(t->hdr->magic, FT_MAGIC, 8) != 0) {
		ret = -EINVAL;
		snprintf(err, errlen, "%s: not a fltrace trace (bad magic); only files written by "
			 "'fltrace record' can be reported", path);
		goto out;
	}
	if (t->hdr->version != FT_VERSION) {
		ret = -EPROTO;
		snprintf(err, errlen, "%s: trace format version %u, this fltrace reads version %u; "
			 "use the fltrace that recorded it", path, t->hdr->version, FT_VERSION);
		goto out;
	}
	if (t->hdr->header_size < sizeof(struct ft_file_header) ||
	    t->hdr->header_size % FT_ALIGN || t->hdr->header_size > t->size) {
		ret = -EINVAL;
		snprintf(err, errlen, "%s: corrupt header (header_size %u); record again", path,
			 t->hdr->header_size);
		goto out;
	}
	t->pid = t->hdr->pid;
	t->gen = t->hdr->exec_gen;
	/* The tail: exe, then argv strings; each must end inside the header. */
	{
		const char *p = (const char *)t->base + sizeof(struct ft_file_header);
		const char *end = (const char *)t->base + t->hdr->header_size;
		uint32_t i, n = t->hdr->nr_args;

		t->exe = "";
		if (n > (uint32_t)(end - p))
			n = 0;
		t->argv = calloc(n + 1, sizeof(char *));
		if (!t->argv) {
			ret = -ENOMEM;
			goto out;
		}
		if (p < end && memchr(p, 0, end - p)) {
			t->exe = p;
			p += strlen(p) + 1;
			for (i = 0; i < n && p < end && memchr(p, 0, end - p); i++) {
				t->argv[i] = p;
				p += strlen(p) + 1;
			}
		}
	}
	t->pos = t->hdr->header_size;
out:
	close(fd);
	if (ret) {
		trace_close(t);
		return ret;
	}
	*out = t;
	return 0;
}

void trace_rewind(struct trace *t)
{
	t->pos = t->hdr->header_size;
	t->warning[0] = 0;
}

static const struct ft_rec_hdr *trace_stop(struct trace *t, const char *why)
{
	snprintf(t->warning, sizeof(t->warning), "%s at byte %zu; reporting what came before", why,
		 t->pos);
	t->pos = t->size;
	return NULL;
}

/* The smallest valid size of each record type, so a reader never looks past a record's end. */
static size_t trace_min_size(unsigned type)
{
	switch (type) {
	case FT_REC_STACK: return sizeof(struct ft_stack);
	case FT_REC_FAULT: return sizeof(struct ft_fault);
	case FT_REC_MAPS: return sizeof(struct ft_maps);
	case FT_REC_OBJECT: return sizeof(struct ft_object);
	case FT_REC_REGION: return sizeof(struct ft_region);
	case FT_REC_ALLOC: return sizeof(struct ft_alloc);
	case FT_REC_FREE: return sizeof(struct ft_free);
	default: return 0;
	}
}

const struct ft_rec_hdr *trace_next(struct trace *t)
{
	const struct ft_rec_hdr *h;
	size_t min;

	if (t->pos >= t->size)
		return NULL;
	if (t->size - t->pos < sizeof(*h))
		return trace_stop(t, "file ends inside a record header (truncated)");
	h = (const struct ft_rec_hdr *)(t->base + t->pos);
	if (h->size == 0) {
		/* Unwritten space: the normal end of a killed or preallocated trace. */
		t->pos = t->size;
		return NULL;
	}
	if (h->size % FT_ALIGN)
		return trace_stop(t, "corrupt record (size not a multiple of 8)");
	if (h->size > t->size - t->pos)
		return trace_stop(t, "file ends inside a record (truncated)");
	min = trace_min_size(h->type);
	if (!min)
		return trace_stop(t, "corrupt record (unknown type)");
	if (h->size < min)
		return trace_stop(t, "corrupt record (shorter than its type)");
	/* Variable parts must fit in the record. */
	switch (h->type) {
	case FT_REC_STACK: {
		const struct ft_stack *s = (const void *)h;
		if (s->depth > (h->size - sizeof(*s)) / 8)
			return trace_stop(t, "corrupt stack record (depth beyond its size)");
		break;
	}
	case FT_REC_MAPS: {
		const struct ft_maps *m = (const void *)h;
		if (m->len > h->size - sizeof(*m))
			return trace_stop(t, "corrupt maps record (length beyond its size)");
		break;
	}
	case FT_REC_OBJECT: {
		const struct ft_object *o = (const void *)h;
		if (o->path_len == 0 || o->path_len > h->size - sizeof(*o) ||
		    o->path[o->path_len - 1] != 0 || o->build_id_len > sizeof(o->build_id))
			return trace_stop(t, "corrupt object record");
		break;
	}
	case FT_REC_REGION: {
		const struct ft_region *r = (const void *)h;
		if (r->path_len == 0 || r->path_len > h->size - sizeof(*r) ||
		    r->path[r->path_len - 1] != 0)
			return trace_stop(t, "corrupt region record");
		break;
	}
	}
	t->pos += h->size;
	return h;
}

void trace_close(struct trace *t)
{
	if (!t)
		return;
	if (t->base)
		munmap((void *)t->base, t->size);
	free(t->argv);
	free(t->path);
	free(t);
}

static int trace_entry_cmp(const void *a, const void *b)
{
	const struct trace_entry *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	return strcmp(x->path, y->path);
}

int trace_list_dir(const char *dir, struct trace_list *out)
{
	struct dirent *de;
	size_t cap = 0;
	DIR *d;

	memset(out, 0, sizeof(*out));
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		unsigned pid, gen;
		int len = 0;

		if (sscanf(de->d_name, "fltrace-data-trace-%u-%u.bin%n", &pid, &gen, &len) != 2 ||
		    de->d_name[len] != 0)
			continue;
		if (out->n == cap) {
			struct trace_entry *v;
			cap = cap ? cap * 2 : 16;
			v = realloc(out->v, cap * sizeof(*v));
			if (!v)
				goto nomem;
			out->v = v;
		}
		if (asprintf(&out->v[out->n].path, "%s/%s", dir, de->d_name) < 0)
			goto nomem;
		out->v[out->n].pid = pid;
		out->v[out->n].gen = gen;
		out->n++;
	}
	closedir(d);
	if (out->n)
		qsort(out->v, out->n, sizeof(out->v[0]), trace_entry_cmp);
	return 0;
nomem:
	closedir(d);
	trace_list_free(out);
	return -ENOMEM;
}

void trace_list_free(struct trace_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

const char *trace_kind_name(unsigned kind)
{
	static const char *const names[] = { "zero", "refetch", "file", "wp" };
	return kind < 4 ? names[kind] : "unknown";
}

const char *trace_origin_name(unsigned origin)
{
	return origin == FT_ORIGIN_USER ? "user" : origin == FT_ORIGIN_SYSCALL ? "syscall" : "unknown";
}

const char *trace_status_name(unsigned status)
{
	static const char *const names[] = { "ok", "none", "partial" };
	return status < 3 ? names[status] : "unknown";
}

/* The earlier tool's decoding of flags & 0x1f: 0 read, 1 write, 3 wrprotect. */
const char *trace_op_name(unsigned flags)
{
	if (flags & FT_FLAG_WP)
		return "wrprotect";
	return (flags & FT_FLAG_WRITE) ? "write" : "read";
}

const char *trace_type_name(unsigned flags)
{
	return (flags >> 5) ? "zero" : "regular";
}

/* The system calls that touch user memory most often (x86_64 numbers). */
const char *trace_syscall_name(int nr)
{
	static const struct { int nr; const char *name; } tab[] = {
		{ 0, "read" }, { 1, "write" }, { 2, "open" }, { 4, "stat" }, { 5, "fstat" },
		{ 6, "lstat" }, { 7, "poll" }, { 9, "mmap" }, { 16, "ioctl" }, { 17, "pread64" },
		{ 18, "pwrite64" }, { 19, "readv" }, { 20, "writev" }, { 23, "select" },
		{ 44, "sendto" }, { 45, "recvfrom" }, { 46, "sendmsg" }, { 47, "recvmsg" },
		{ 51, "getsockname" }, { 52, "getpeername" }, { 54, "setsockopt" },
		{ 55, "getsockopt" }, { 59, "execve" }, { 61, "wait4" }, { 63, "uname" },
		{ 72, "fcntl" }, { 78, "getdents" }, { 79, "getcwd" }, { 89, "readlink" },
		{ 96, "gettimeofday" }, { 97, "getrlimit" }, { 98, "getrusage" }, { 99, "sysinfo" },
		{ 131, "sigaltstack" }, { 137, "statfs" }, { 138, "fstatfs" },
		{ 202, "futex" }, { 204, "sched_getaffinity" }, { 217, "getdents64" },
		{ 228, "clock_gettime" }, { 230, "clock_nanosleep" }, { 232, "epoll_wait" },
		{ 257, "openat" }, { 262, "newfstatat" }, { 270, "pselect6" }, { 271, "ppoll" },
		{ 281, "epoll_pwait" }, { 295, "preadv" }, { 296, "pwritev" },
		{ 299, "recvmmsg" }, { 302, "prlimit64" }, { 307, "sendmmsg" },
		{ 318, "getrandom" }, { 326, "copy_file_range" }, { 332, "statx" },
		{ 13, "rt_sigaction" }, { 14, "rt_sigprocmask" }, { 40, "sendfile" },
		{ 275, "splice" }, { 278, "vmsplice" }, { 310, "process_vm_readv" },
		{ 311, "process_vm_writev" },
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (tab[i].nr == nr)
			return tab[i].name;
	return NULL;
}
