/* The trace writer: records go straight into a shared mapping of the trace file, so nothing waits
 * on the disk and whatever was recorded survives _exit, exec, fatal signals and SIGKILL. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fltrace/crc32c.h"
#include "fltrace/fmt.h"
#include "fltrace/outfile.h"
#include "rt.h"
#include "trace.h"

#define TRACE_WINDOW (64ull << 30) /* virtual window; the file grows inside it */
#define TRACE_GROW (16ull << 20)
#define TRACE_RANDOM_HEAD (1ull << 20) /* trace_open */
/* The interning table starts small and doubles at half full: its entries land on random pages,
 * so a table sized for the worst case became up to 24 MB of the program's RSS. */
#define STACK_TABLE_START 256u    /* entries, a power of two: two pages (4,096 made 24, hashed at random) */
#define STACK_TABLE_MAX (1u << 24) /* past it, new stacks are not interned (FT_NO_STACK) */

struct stack_entry {
	uint64_t hash;
	uint64_t off; /* of the FT_REC_STACK record in the file, 0 = free */
	uint32_t id;
};

static struct {
	int fd;
	char *base;
	_Atomic uint64_t tail;      /* next free byte */
	_Atomic uint64_t file_size;
	struct rt_spinlock grow_lock, stack_lock;
	struct stack_entry *stacks;
	uint32_t stacks_cap; /* entries of `stacks` */
	uint32_t nstacks;
	uint64_t released;          /* bytes already dropped from our RSS */
	bool full;
} tr = { .fd = -1 };

static void trace_name(struct fmt *f, unsigned gen)
{
	fmt_str(f, rt.cfg.outdir);
	fmt_str(f, "/fltrace-data-trace-");
	fmt_u64(f, (uint64_t)rt.pid);
	fmt_char(f, '-');
	fmt_u64(f, gen);
	fmt_str(f, ".bin");
}

/* path: the file's name, or the name that was refused. */
static int trace_create_file(char *path, size_t cap)
{
	struct fmt f;
	/* exec keeps the pid: each new program image of the process takes the next generation. A
	 * name that is there and not ours (a link someone put there) is refused, not skipped. */
	for (unsigned gen = 0; gen < 1000; gen++) {
		fmt_init(&f, path, cap);
		trace_name(&f, gen);
		int fd = outfile_open(path, O_RDWR | O_EXCL);
		if (fd >= 0) {
			rt.exec_gen = gen;
			return fd;
		}
		if (fd != -EEXIST)
			return fd;
	}
	return -EEXIST;
}

static int trace_cmdline(char *buf, size_t cap, unsigned *nargs)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = rt_read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return 0;
	if (buf[n - 1] != '\0')
		buf[n++] = '\0';
	*nargs = 0;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			(*nargs)++;
	return (int)n;
}

static void trace_write_header(void)
{
	struct ft_file_header2 *h2 = (struct ft_file_header2 *)tr.base;
	struct ft_file_header *h = &h2->h;
	char *tail = tr.base + sizeof(*h2);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	size_t exelen = strlen(exe) + 1;
	memcpy(tail, exe, exelen);
	unsigned nargs = 0;
	int argbytes = trace_cmdline(tail + exelen, 60000, &nargs);
	memcpy(h->magic, FT_MAGIC, 8);
	h->version = FT_VERSION;
	h->header_size = ft_rec_size((uint32_t)(sizeof(*h2) + exelen + (size_t)argbytes));
	h->page_size = rt.page_size;
	h->pid = (uint32_t)rt.pid;
	h->ppid = (uint32_t)getppid();
	h->exec_gen = rt.exec_gen;
	h->nr_args = nargs;
	h->start_realtime_ns = rt.start_realtime_ns;
	h->localmem_bytes = rt.cfg.localmem;
	h->maxmem_bytes = rt.cfg.maxmem;
	h->handler_threads = rt.cfg.handlers;
	h->samplerate = rt.cfg.samplerate;
	h->policy = (uint32_t)rt.cfg.policy;
	h->stack_depth = rt.cfg.stack_depth;
	h2->prefetch = (uint32_t)rt.cfg.prefetch;
	/* data_end is 0 until trace_close: the checksum takes it as 0. */
	h2->header_crc = crc32c(0, tr.base, h->header_size);
	atomic_store(&tr.tail, h->header_size);
}

/* Version 2 says where its records end, when they are all written (outside the header's checksum). */
static void trace_set_data_end(int fd, uint64_t end)
{
	uint64_t v = end;
	/* A raw call: the C library's pwrite is our own wrapper (preload/syscalls.c). */
	if (syscall(SYS_pwrite64, fd, &v, sizeof(v), (off_t)offsetof(struct ft_file_header2, data_end)) !=
	    (long)sizeof(v))
		rt_log("trace: cannot write where the trace ends into its header");
}

/* The file of the image that exec'd into us (same pid, previous generation) was left at its grown
 * size: exec runs no exit code. That image is gone, so nobody writes it any more: walk its
 * records to their end and cut the zero tail. */
static void trace_seal_previous(unsigned gen)
{
	char path[PATH_MAX + 64];
	struct fmt f;
	struct stat st;
	fmt_init(&f, path, sizeof(path));
	trace_name(&f, gen);
	int fd = outfile_open_own(path, O_RDWR);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(struct ft_file_header) ||
	    st.st_size % (off_t)TRACE_GROW != 0) { /* closed cleanly: already cut */
		close(fd);
		return;
	}
	const char *p = (const char *)syscall(SYS_mmap, NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED) {
		uint64_t size = (uint64_t)st.st_size;
		uint64_t off = ((const struct ft_file_header *)p)->header_size;
		while (off + sizeof(struct ft_rec_hdr) <= size) {
			const struct ft_rec_hdr *h = (const struct ft_rec_hdr *)(p + off);
			if (h->size == 0 || h->size % FT_ALIGN || off + h->size > size)
				break;
			off += h->size;
		}
		bool v2 = ((const struct ft_file_header *)p)->version >= 2;
		syscall(SYS_munmap, p, (size_t)st.st_size);
		if (off <= size && v2)
			trace_set_data_end(fd, off);
		if (off <= size && ftruncate(fd, (off_t)off) < 0)
			rt_log("trace: cannot cut the zero tail of the previous program image's trace");
	}
	close(fd);
}

int trace_open(char *path, size_t cap)
{
	tr.fd = rt_fd_own(trace_create_file(path, cap));
	if (tr.fd < 0)
		return tr.fd;
	if (rt.exec_gen > 0)
		trace_seal_previous(rt.exec_gen - 1);
	if (ftruncate(tr.fd, (off_t)TRACE_GROW) < 0)
		return -errno;
	atomic_store(&tr.file_size, TRACE_GROW);
	tr.base = (char *)syscall(SYS_mmap, NULL, TRACE_WINDOW, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_NORESERVE, tr.fd, 0);
	if (tr.base == MAP_FAILED)
		return -ENOMEM;
	/* The file's first touch (the header) read ahead a window of its holes, zeroing pages the
	 * records would reach only later if ever: 2.5-3 ms of a traced /bin/true's 10 (perf: the fd
	 * keeper's thread in ext4_mpage_readpages under trace_write_header). Pages of the first MB now
	 * come one at a time: a traced /bin/true took 7.5-8.0 ms against 10.8-10.9, 20 runs each
	 * (2026-12-07); fillscan at a quarter, 196,695 faults, 1.33 s either way. Not the whole
	 * window: one page a fault over all of it made that run 3% slower (1.32 s against 1.28). */
	syscall(SYS_madvise, tr.base, TRACE_RANDOM_HEAD, MADV_RANDOM);
	tr.stacks = rt_map(STACK_TABLE_START * sizeof(struct stack_entry));
	if (!tr.stacks)
		return -ENOMEM;
	tr.stacks_cap = STACK_TABLE_START;
	trace_write_header();
	return 0;
}

/* On a program thread (a fault recorded from its signal handler, or exit) the fd is borrowed. */
static int trace_truncate(uint64_t size)
{
	bool borrowed;
	int fd = rt_fd_borrow(tr.fd, &borrowed);
	int ret = fd < 0 ? -1 : ftruncate(fd, (off_t)size);
	rt_fd_unborrow(fd, borrowed);
	return ret;
}

/* Grows the file ahead of the writers; only the writer that crosses the end pays for it. */
static bool trace_ensure(uint64_t end)
{
	if (end <= atomic_load_explicit(&tr.file_size, memory_order_acquire))
		return true;
	if (end > TRACE_WINDOW)
		return false; /* full, or closed (trace_close): never grow the file for it */
	rt_spin_lock(&tr.grow_lock, LOCK_TRACE_GROW);
	uint64_t size = atomic_load(&tr.file_size);
	while (end > size && size + TRACE_GROW <= TRACE_WINDOW) {
		if (trace_truncate(size + TRACE_GROW) < 0)
			break;
		size += TRACE_GROW;
	}
	atomic_store_explicit(&tr.file_size, size, memory_order_release);
	rt_spin_unlock(&tr.grow_lock, LOCK_TRACE_GROW);
	return end <= size;
}

/* size: the record without its check (struct ft_rec_check), which follows it. */
void *trace_reserve(uint32_t size)
{
	if (tr.fd < 0 || tr.full)
		return NULL;
	size += sizeof(struct ft_rec_check);
	uint64_t off = atomic_fetch_add(&tr.tail, size);
	if (!trace_ensure(off + size)) {
		tr.full = true;
		return NULL;
	}
	return tr.base + off;
}

/* The check, then the header, stored last with release order: a reader never sees a half-written
 * record, and a header that is there has its check. The checksum reads the record once more from
 * our own mapping (about 25 ns for a fault record): no allocation, nothing of the program's. */
void trace_commit(void *rec, uint16_t type, uint32_t size)
{
	struct ft_rec_hdr h = { .type = type, .flags = 0, .size = size + sizeof(struct ft_rec_check) };
	struct ft_rec_check *c = (struct ft_rec_check *)((char *)rec + size);
	c->crc = crc32c(crc32c(0, &h, sizeof(h)), (const char *)rec + sizeof(h), size - sizeof(h));
	c->zero = 0;
	uint64_t word;
	memcpy(&word, &h, sizeof(word));
	atomic_store_explicit((_Atomic uint64_t *)rec, word, memory_order_release);
}

static uint64_t stack_hash(const uint64_t *ips, unsigned depth)
{
	uint64_t h = 0xcbf29ce484222325ull ^ depth;
	for (unsigned i = 0; i < depth; i++) {
		h ^= ips[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

static bool stack_equal(uint64_t off, const uint64_t *ips, unsigned depth)
{
	const struct ft_stack *s = (const struct ft_stack *)(tr.base + off);
	return s->depth == depth && memcmp(s->ips, ips, depth * sizeof(uint64_t)) == 0;
}

/* Doubles the table, rehashing from the stored hashes; false if it cannot (it stays as it is). */
static bool stack_table_grow(void)
{
	uint32_t cap = tr.stacks_cap * 2;
	if (cap > STACK_TABLE_MAX)
		return false;
	struct stack_entry *t = rt_map((size_t)cap * sizeof(*t));
	if (!t)
		return false;
	for (uint32_t i = 0; i < tr.stacks_cap; i++) {
		struct stack_entry *e = &tr.stacks[i];
		if (!e->off)
			continue;
		uint32_t j = (uint32_t)e->hash & (cap - 1);
		while (t[j].off)
			j = (j + 1) & (cap - 1);
		t[j] = *e;
	}
	rt_unmap(tr.stacks, (size_t)tr.stacks_cap * sizeof(*t));
	tr.stacks = t;
	tr.stacks_cap = cap;
	return true;
}

/* Writes a new stack record; FT_NO_STACK if the trace is full. */
static uint32_t stack_write(const uint64_t *ips, unsigned depth, uint64_t *off)
{
	uint32_t size = ft_rec_size((uint32_t)(sizeof(struct ft_stack) + depth * sizeof(uint64_t)));
	struct ft_stack *s = trace_reserve(size);
	if (!s)
		return FT_NO_STACK;
	s->id = tr.nstacks++;
	s->depth = depth;
	memcpy(s->ips, ips, depth * sizeof(uint64_t));
	trace_commit(s, FT_REC_STACK, size);
	*off = (uint64_t)((char *)s - tr.base);
	return s->id;
}

/* Interns a stack: each distinct stack is written once and faults refer to it by id. */
uint32_t trace_stack_id(const uint64_t *ips, unsigned depth)
{
	uint64_t h = stack_hash(ips, depth);
	uint32_t id = FT_NO_STACK;
	rt_spin_lock(&tr.stack_lock, LOCK_TRACE_STACKS);
	/* Past half full it grows; one that cannot stays under three quarters full (new stacks are
	 * not interned then, known ones still are), so that a probe always meets an empty slot. */
	bool room = (uint64_t)tr.nstacks * 2 < tr.stacks_cap || stack_table_grow() ||
		    (uint64_t)tr.nstacks * 4 < (uint64_t)tr.stacks_cap * 3;
	for (uint32_t i = (uint32_t)h & (tr.stacks_cap - 1);; i = (i + 1) & (tr.stacks_cap - 1)) {
		struct stack_entry *e = &tr.stacks[i];
		if (e->off && e->hash == h && stack_equal(e->off, ips, depth)) {
			id = e->id;
			break;
		}
		if (e->off)
			continue;
		if (!room)
			break;
		uint64_t off;
		id = stack_write(ips, depth, &off);
		if (id != FT_NO_STACK)
			*e = (struct stack_entry){ .hash = h, .off = off, .id = id };
		break;
	}
	rt_spin_unlock(&tr.stack_lock, LOCK_TRACE_STACKS);
	return id;
}

void trace_write_fault(const struct ft_fault *f)
{
	uint32_t size = ft_rec_size(sizeof(*f));
	struct ft_fault *rec = trace_reserve(size);
	if (!rec)
		return;
	memcpy((char *)rec + sizeof(rec->hdr), (const char *)f + sizeof(f->hdr), sizeof(*f) - sizeof(f->hdr));
	trace_commit(rec, FT_REC_FAULT, size);
}

/* Written pages stay in the page cache; unmapping them keeps the trace out of the program's RSS. */
void trace_release_written(void)
{
	if (tr.fd < 0)
		return;
	uint64_t upto = atomic_load(&tr.tail);
	upto = upto > (1u << 20) ? (upto - (1u << 20)) & ~((uint64_t)rt.page_size - 1) : 0;
	if (upto > tr.released + (4u << 20)) {
		syscall(SYS_madvise, tr.base + tr.released, upto - tr.released, MADV_DONTNEED);
		tr.released = upto;
	}
}

uint64_t trace_unreleased_bytes(void)
{
	uint64_t tail = atomic_load(&tr.tail);
	return tr.fd >= 0 && !tr.full && tail > tr.released ? tail - tr.released : 0;
}

uint64_t trace_bytes(void)
{
	return atomic_load(&tr.tail);
}

void trace_close(void)
{
	if (tr.fd < 0)
		return;
	/* Pushing the tail past the window makes every later reservation fail, so no writer can
	 * store beyond the truncated end. */
	tr.full = true;
	uint64_t end = atomic_fetch_add(&tr.tail, TRACE_WINDOW);
	if (end > atomic_load(&tr.file_size))
		end = atomic_load(&tr.file_size);
	((struct ft_file_header2 *)tr.base)->data_end = end;
	if (trace_truncate(end) < 0)
		rt_log("trace: cannot truncate the trace file; readers stop at its zero tail");
}

void trace_close_inherited(void)
{
	if (tr.fd < 0)
		return;
	syscall(SYS_munmap, tr.base, TRACE_WINDOW); /* tr.fd was in the parent's private fd table */
	rt_unmap(tr.stacks, (size_t)tr.stacks_cap * sizeof(struct stack_entry));
	tr.fd = -1;
	tr.base = NULL;
	tr.stacks = NULL;
	tr.stacks_cap = 0;
	tr.nstacks = 0;
	tr.released = 0;
	tr.full = false;
	atomic_store(&tr.tail, 0);
	rt_spin_reset(&tr.grow_lock);
	rt_spin_reset(&tr.stack_lock);
}
