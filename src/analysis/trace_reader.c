/* Trace reader: opens fltrace-data-trace-<pid>-<gen>.bin files, validates their header and hands
 * out records, each checked (version 2's checksums) before it is handed out; a truncated tail
 * ends the data with a warning, a damaged record ends it with a warning that says so (damaged). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fltrace/crc32c.h>

#include "analysis.h"

/* Version 2: the header's checksum, with data_end and header_crc taken as 0 (see trace_format.h). */
static bool trace_header_intact(const struct trace *t)
{
	struct ft_file_header2 h;

	memcpy(&h, t->base, sizeof(h));
	h.data_end = 0;
	h.header_crc = 0;
	uint32_t crc = crc32c(0, &h, sizeof(h));
	crc = crc32c(crc, t->base + sizeof(h), t->hdr->header_size - sizeof(h));
	return crc == ((const struct ft_file_header2 *)t->base)->header_crc;
}

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
	if (t->hdr->version < FT_VERSION_MIN || t->hdr->version > FT_VERSION) {
		ret = -EPROTO;
		snprintf(err, errlen, "%s: trace format version %u, this fltrace reads versions %u to %u; "
			 "use the fltrace that recorded it", path, t->hdr->version, FT_VERSION_MIN,
			 FT_VERSION);
		goto out;
	}
	t->fixed = ft_header_fixed_size(t->hdr->version);
	if (t->hdr->version >= 2 && t->size >= t->fixed)
		t->prefetch = ((const struct ft_file_header2 *)t->base)->prefetch;
	t->check = ft_check_size(t->hdr->version);
	if (t->size < t->fixed || t->hdr->header_size < t->fixed ||
	    t->hdr->header_size % FT_ALIGN || t->hdr->header_size > t->size) {
		ret = -EINVAL;
		snprintf(err, errlen, "%s: corrupt header (header_size %u); record again", path,
			 t->hdr->header_size);
		goto out;
	}
	if (t->check && !trace_header_intact(t)) {
		ret = -EBADMSG;
		snprintf(err, errlen, "%s: the header is damaged (its checksum does not match), so "
			 "nothing in this trace can be trusted; record again", path);
		goto out;
	}
	t->pid = t->hdr->pid;
	t->gen = t->hdr->exec_gen;
	/* The tail: exe, then argv strings; each must end inside the header. */
	{
		const char *p = (const char *)t->base + t->fixed;
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
			t->argc = i;
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
	t->nrec = t->nstacks = t->nregions = 0;
	t->ended = false;
	t->damaged = false;
	t->warning[0] = 0;
}

static const struct ft_rec_hdr *trace_stop(struct trace *t, const char *why)
{
	snprintf(t->warning, sizeof(t->warning), "%s at byte %zu; reporting what came before", why,
		 t->pos);
	t->ended = true;
	return NULL;
}

/* The records ended where there is no more (t->pos): version 2 knows whether its recorder wrote
 * more, when it closed the trace. Neither case is damage that a checksum could show. */
static const struct ft_rec_hdr *trace_end(struct trace *t)
{
	uint64_t end = t->check ? ((const struct ft_file_header2 *)t->base)->data_end : 0;

	t->ended = true;
	if (end > t->size)
		snprintf(t->warning, sizeof(t->warning), "the file has %zu bytes, %llu fewer than its "
			 "recorder wrote (a copy cut short?); reporting what is there", t->size,
			 (unsigned long long)(end - t->size));
	else if (end > t->pos)
		snprintf(t->warning, sizeof(t->warning), "the records end at byte %zu, before byte %llu "
			 "where the recorder closed the trace: a record there was never finished (the "
			 "trace filled up, or a thread stopped while writing it) or those bytes were "
			 "zeroed; reporting what came before", t->pos, (unsigned long long)end);
	return NULL;
}

/* Bytes that are there but wrong: the data ends at the record before them, and says so. */
static const struct ft_rec_hdr *trace_damaged(struct trace *t, const char *why)
{
	snprintf(t->warning, sizeof(t->warning), "record %llu (at byte %zu) is damaged: %s; what came "
		 "before it is read, nothing after it (record again for all of it)",
		 (unsigned long long)t->nrec + 1, t->pos, why);
	t->damaged = true;
	t->ended = true;
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

/* Variable parts must fit in the record's body (body bytes: its size less the check). */
static const char *trace_body_fits(const struct ft_rec_hdr *h, size_t body)
{
	switch (h->type) {
	case FT_REC_STACK: {
		const struct ft_stack *s = (const void *)h;
		if (s->depth > (body - sizeof(*s)) / 8)
			return "a stack record's depth is beyond its size";
		break;
	}
	case FT_REC_MAPS: {
		const struct ft_maps *m = (const void *)h;
		if (m->len > body - sizeof(*m))
			return "a maps record's length is beyond its size";
		break;
	}
	case FT_REC_OBJECT: {
		const struct ft_object *o = (const void *)h;
		if (o->path_len == 0 || o->path_len > body - sizeof(*o) ||
		    o->path[o->path_len - 1] != 0 || o->build_id_len > sizeof(o->build_id))
			return "an object record's path or build-id is beyond its size";
		break;
	}
	case FT_REC_REGION: {
		const struct ft_region *r = (const void *)h;
		if (r->path_len == 0 || r->path_len > body - sizeof(*r) ||
		    r->path[r->path_len - 1] != 0)
			return "a region record's path is beyond its size";
		break;
	}
	}
	return NULL;
}

/* Stack and region ids are dense from 0 in each file (the writer numbers them as it writes them),
 * and readers index tables by them: an id far beyond the records of its kind read so far can only
 * be damage (a version 1 trace has no checksum to say so), and would make such a table huge. */
#define TRACE_ID_SLACK 65536u
static const char *trace_id_fits(struct trace *t, const struct ft_rec_hdr *h)
{
	if (h->type == FT_REC_STACK) {
		if (((const struct ft_stack *)h)->id >= t->nstacks + TRACE_ID_SLACK)
			return "its stack id is far beyond the stacks before it";
		t->nstacks++;
	} else if (h->type == FT_REC_REGION) {
		if (((const struct ft_region *)h)->id >= t->nregions + TRACE_ID_SLACK)
			return "its region id is far beyond the regions before it";
		t->nregions++;
	}
	return NULL;
}

/* Where the records end: the recorder's word for it (version 2, closed cleanly), else the file's. */
static size_t trace_data_end(const struct trace *t)
{
	uint64_t end = t->check ? ((const struct ft_file_header2 *)t->base)->data_end : 0;
	return end && end < t->size ? (size_t)end : t->size;
}

const struct ft_rec_hdr *trace_next(struct trace *t)
{
	const struct ft_rec_hdr *h;
	size_t min, end = trace_data_end(t);
	const char *why;

	if (t->ended)
		return NULL;
	if (t->pos >= end)
		return trace_end(t);
	if (end - t->pos < sizeof(*h))
		return trace_stop(t, "file ends inside a record header (truncated)");
	h = (const struct ft_rec_hdr *)(t->base + t->pos);
	if (h->size == 0) /* unwritten space: the normal end of a killed or preallocated trace */
		return trace_end(t);
	if (h->size % FT_ALIGN)
		return trace_damaged(t, "its size is not a multiple of 8");
	if (h->size > end - t->pos) {
		/* The recorder never writes past the end it grew the file to: past the end it said it
		 * wrote, this is damage; past the file's end, a copy cut short. */
		if (end < t->size)
			return trace_damaged(t, "its size goes past the end of the trace");
		return trace_stop(t, "file ends inside a record (truncated)");
	}
	if (t->check) {
		const struct ft_rec_check *c = (const void *)(t->base + t->pos + h->size - t->check);
		if (h->size < sizeof(*h) + t->check ||
		    crc32c(0, h, h->size - t->check) != c->crc)
			return trace_damaged(t, "its checksum does not match");
	}
	min = trace_min_size(h->type);
	if (!min)
		return trace_damaged(t, "its type is unknown");
	if (h->size - t->check < min)
		return trace_damaged(t, "it is shorter than its type");
	if ((why = trace_body_fits(h, h->size - t->check)) || (why = trace_id_fits(t, h)))
		return trace_damaged(t, why);
	t->pos += h->size;
	t->nrec++;
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
	static const char *const names[] = { "zero", "refetch", "file", "wp", "prefetch" };
	return kind < 5 ? names[kind] : "unknown";
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
