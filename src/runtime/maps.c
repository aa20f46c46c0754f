/* Memory-map history: every distinct /proc/self/maps is recorded in the trace (with the loaded
 * objects' build-ids) and its lines are kept in fltrace-data-procmaps-<pid>.out, never overwritten. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "fltrace/fmt.h"
#include "rt.h"
#include "sysstack.h"
#include "trace.h"
#include "loader.h"
#include "threads.h"
#include "maps.h"

#define MAPS_MAX (8u << 20)
/* Hashes of lines and objects already written: a set that doubles past half full, from a size
 * whose pages a short run touches all the same (at 65,536 from the start, its first snapshot's
 * hundred lines, hashed at random, were a hundred page faults of a traced /bin/true's 666). */
#define SEEN_START 512u
#define SEEN_MAX 65536u

static struct {
	char *buf;          /* scratch for one snapshot */
	char *shown;        /* --files=all: the snapshot with taken-over ranges showing their files */
	uint64_t last_hash;
	uint64_t *seen;     /* open addressing set of line and object hashes */
	unsigned seen_cap, seen_n;
	int procmaps_fd;
	_Atomic int lock;
} mh = { .procmaps_fd = -1 };

static uint64_t hash_bytes(const char *p, size_t n, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

static bool seen_add(uint64_t *set, unsigned cap, uint64_t h) /* true if new */
{
	for (unsigned i = (unsigned)h & (cap - 1), n = 0; n < cap; i = (i + 1) & (cap - 1), n++) {
		if (set[i] == h)
			return false;
		if (set[i] == 0) {
			set[i] = h;
			return true;
		}
	}
	return true; /* full: writing twice is harmless */
}

static void seen_grow(void)
{
	unsigned cap = mh.seen_cap * 2;
	uint64_t *set = cap <= SEEN_MAX ? rt_map(cap * sizeof(uint64_t)) : NULL;
	if (!set)
		return;
	for (unsigned i = 0; i < mh.seen_cap; i++)
		if (mh.seen[i])
			seen_add(set, cap, mh.seen[i]);
	rt_unmap(mh.seen, mh.seen_cap * sizeof(uint64_t));
	mh.seen = set;
	mh.seen_cap = cap;
}

static bool seen_insert(uint64_t h) /* true if new */
{
	if (!mh.seen)
		return true;
	if (mh.seen_n * 2 >= mh.seen_cap)
		seen_grow();
	bool added = seen_add(mh.seen, mh.seen_cap, h);
	mh.seen_n += added;
	return added;
}

static size_t maps_read(void)
{
	return rt_read_file("/proc/self/maps", mh.buf, MAPS_MAX);
}

/* From a program thread (dlopen, dlclose, exit) the file is borrowed for the snapshot. New lines
 * that follow one another go out in one write: a line a write, a process's first snapshot took 80
 * of them. */
static void maps_append_new_lines(const char *text, size_t len)
{
	bool borrowed;
	int fd = rt_fd_borrow(mh.procmaps_fd, &borrowed);
	if (fd < 0)
		return;
	size_t i = 0, run = 0; /* run: where the new lines before i begin */
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) + 1 : len;
		if (!seen_insert(hash_bytes(text + i, end - i, 1))) {
			if (run < i)
				rt_write_all(fd, text + run, i - run);
			run = end;
		}
		i = end;
	}
	if (run < len)
		rt_write_all(fd, text + run, len - run);
	rt_fd_unborrow(fd, borrowed);
}

static void maps_record(const char *text, size_t len)
{
	uint32_t size = ft_rec_size((uint32_t)(sizeof(struct ft_maps) + len));
	struct own_code c = threads_own_code_begin(); /* see allocs_write */
	struct ft_maps *m = trace_reserve(size);
	threads_own_code_end(c);
	if (!m)
		return;
	m->time_ns = rt_now_ns();
	m->len = (uint32_t)len;
	memcpy(m->text, text, len);
	trace_commit(m, FT_REC_MAPS, size);
}

static const uint8_t *object_build_id(const struct dl_phdr_info *info, uint32_t *len)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*nh);
			const uint8_t *desc = (const uint8_t *)name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
				*len = nh->n_descsz > 32 ? 32 : nh->n_descsz;
				return desc;
			}
			p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	*len = 0;
	return NULL;
}

static int object_record(struct dl_phdr_info *info, size_t size, void *arg)
{
	char exe[PATH_MAX];
	const char *path = info->dlpi_name;
	if (!path || !*path) { /* the executable itself */
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		path = exe;
	}
	size_t plen = strlen(path) + 1;
	if (!seen_insert(hash_bytes(path, plen, info->dlpi_addr ^ 0x5bd1e995u)))
		return 0;
	uint32_t rsize = ft_rec_size((uint32_t)(sizeof(struct ft_object) + plen));
	struct ft_object *o = trace_reserve(rsize);
	if (!o)
		return 0;
	o->time_ns = rt_now_ns();
	o->base = info->dlpi_addr;
	const uint8_t *bid = object_build_id(info, &o->build_id_len);
	if (bid)
		memcpy(o->build_id, bid, o->build_id_len);
	o->path_len = (uint32_t)plen;
	memcpy(o->path, path, plen);
	trace_commit(o, FT_REC_OBJECT, rsize);
	return 0;
}

/* The text history, fltrace-data-procmaps-<pid>.out: appended to by every program image of the
 * process (exec keeps the pid), so one that is there already is opened if it is ours. */
int maps_open(char *path, size_t cap)
{
	struct fmt f;
	fmt_init(&f, path, cap);
	fmt_str(&f, rt.cfg.outdir);
	fmt_str(&f, "/fltrace-data-procmaps-");
	fmt_u64(&f, (uint64_t)rt.pid);
	fmt_str(&f, ".out");
	int fd = rt_fd_open(path, O_WRONLY | O_CREAT | O_APPEND, 0600, NULL);
	if (fd < 0)
		return fd;
	mh.procmaps_fd = fd;
	return 0;
}

/* One snapshot at a time; a fork waits for the one under way (maps_fork_prepare). */
static void maps_lock(void)
{
	while (atomic_exchange(&mh.lock, 1))
		sched_yield();
}

/* Cheap when nothing changed (one read of /proc/self/maps); called at start, around dlopen and
 * dlclose, and once a second. */
void maps_snapshot(void)
{
	maps_lock();
	if (!mh.buf) {
		mh.buf = rt_map(MAPS_MAX);
		mh.seen = rt_map(SEEN_START * sizeof(uint64_t));
		mh.seen_cap = SEEN_START;
		mh.seen_n = 0;
	}
	size_t len = maps_read();
	uint64_t h = hash_bytes(mh.buf, len, 0);
	if (len && h != mh.last_hash) {
		mh.last_hash = h;
		const char *text = mh.buf;
		if (rt.cfg.files_all && (mh.shown || (mh.shown = rt_map(MAPS_MAX + (1u << 20))))) {
			len = loader_rewrite_maps(mh.buf, len, mh.shown, MAPS_MAX + (1u << 20));
			text = mh.shown;
		}
		maps_record(text, len);
		maps_append_new_lines(text, len);
		threads_dl_iterate_phdr(object_record, NULL);
		sysstack_objects_refresh();
	}
	atomic_store(&mh.lock, 0);
}

/* A snapshot walks the loader's list under the loader's lock (dl_iterate_phdr); one under way at
 * fork leaves that lock held in the child by a thread the child does not have (glibc 2.36 does not
 * reset it), and the child's own first snapshot waited for it for ever (CPython's
 * test_many_processes, 2 runs in 4). */
void maps_fork_prepare(void)
{
	maps_lock();
}

void maps_fork_parent(void)
{
	atomic_store(&mh.lock, 0);
}

/* A fork child keeps a history of its own, in files named by its pid, from a first snapshot of
 * its own; a snapshot the parent was taking during fork left the lock held (its thread is gone). */
void maps_fork_child(void)
{
	mh.procmaps_fd = -1; /* the parent's, in the parent's private fd table */
	if (mh.buf)
		rt_unmap(mh.buf, MAPS_MAX);
	if (mh.seen)
		rt_unmap(mh.seen, mh.seen_cap * sizeof(uint64_t));
	mh.buf = NULL;
	mh.seen = NULL;
	mh.last_hash = 0;
	atomic_store(&mh.lock, 0);
}

void maps_close(void)
{
	rt_fd_close(mh.procmaps_fd); /* nothing in a fork child: the parent's was in its private table */
	mh.procmaps_fd = -1;
}
