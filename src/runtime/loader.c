/* --files=all: the code and read-only data the dynamic loader mapped (the executable, its
 * libraries, dlopen'ed objects) are taken over like the program's own private file mappings:
 * anonymous memory filled from the file on fault. Objects whose code fltrace runs itself (in its
 * handler threads or its stack signal handler) are left to the kernel, and so are the pages the
 * loader and the unwinder read on any thread's behalf. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fltrace/fmt.h"
#include "rt.h"
#include "uffd.h"
#include "region.h"
#include "filemap.h"
#include "loader.h"
#include "threads.h"

#define LOADER_OBJ_MAX 2048
#define LOADER_CAND_MAX 4096
#define LOADER_TAKEN_MAX 4096
#define LOADER_NAMES_MAX 64
#define SMAPS_MAX (64u << 20)

/* An address range of an object that may be taken over (a non-writable PT_LOAD segment that holds
 * none of the loader's or the unwinder's tables). */
struct loader_cand {
	uintptr_t lo, hi;
};

/* The extent of a loaded object, to count what was left alone. */
struct loader_obj {
	uintptr_t lo, hi;
	bool excluded;
};

/* A range taken over: what /proc/self/maps showed for it, so the maps history can show it again. */
struct loader_taken {
	uintptr_t lo, hi;
	uint64_t off, dev, ino;
	int prot;
	bool permanent; /* loaded at start-up: never unloaded */
	bool used;
	char path[PATH_MAX];
};

static struct {
	/* Passes and the loader's own changes through dlopen/dlclose exclude each other: a pass must
	 * not move memory over an object another thread's dlclose is unmapping. dlopen runs shared
	 * (the loader serializes it anyway), a pass and a whole dlclose exclusive. */
	pthread_rwlock_t lock;
	struct rt_spinlock table_lock; /* the taken table: changed by passes, read by maps snapshots */
	struct loader_cand *cand;
	size_t ncand;
	struct loader_obj *obj;
	size_t nobj;
	struct loader_taken *taken;
	size_t ntaken;
	char *smaps;
	char names[LOADER_NAMES_MAX][64]; /* sonames whose code fltrace runs */
	unsigned nnames;
	uintptr_t self_lo, self_hi; /* an address inside libfltrace.so */
} lm = { .lock = PTHREAD_RWLOCK_INITIALIZER };

static __thread unsigned tls_dl_depth; /* this thread holds lm.lock (nested dlopen in a constructor) */

void loader_dl_begin(bool exclusive)
{
	if (tls_dl_depth++ == 0) {
		lock_order_take(LOCK_LOADER);
		if (exclusive)
			pthread_rwlock_wrlock(&lm.lock);
		else
			pthread_rwlock_rdlock(&lm.lock);
	}
}

void loader_dl_end(void)
{
	if (tls_dl_depth == 0) /* begun in the parent of a fork child (loader_fork_child) */
		return;
	if (--tls_dl_depth == 0) {
		pthread_rwlock_unlock(&lm.lock);
		lock_order_drop(LOCK_LOADER);
	}
}

static uintptr_t page_floor(uintptr_t a)
{
	return a & ~((uintptr_t)rt.page_size - 1);
}

static uintptr_t page_ceil(uintptr_t a)
{
	return (a + rt.page_size - 1) & ~((uintptr_t)rt.page_size - 1);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static bool name_known(const char *n)
{
	for (unsigned i = 0; i < lm.nnames; i++)
		if (strcmp(lm.names[i], n) == 0)
			return true;
	return false;
}

static bool name_add(const char *n)
{
	if (name_known(n) || lm.nnames == LOADER_NAMES_MAX || strlen(n) >= sizeof(lm.names[0]))
		return false;
	memcpy(lm.names[lm.nnames++], n, strlen(n) + 1);
	return true;
}

static const ElfW(Dyn) *object_dynamic(const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			return (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	return NULL;
}

/* The loader relocates the dynamic section's pointers in place here (x86_64); be safe anyway. */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, uintptr_t v)
{
	return v < info->dlpi_addr ? v + info->dlpi_addr : v;
}

/* ---- which objects run fltrace's code: libfltrace.so and everything it needs, and ld.so ---- */

static bool object_is_self(const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && lm.self_lo >= lo && lm.self_lo < lo + ph->p_memsz)
			return true;
	}
	return false;
}

static int needed_collect(struct dl_phdr_info *info, size_t size, void *changed)
{
	(void)size;
	const char *name = info->dlpi_name ? base_name(info->dlpi_name) : "";
	if (!object_is_self(info) && !(*name && name_known(name)))
		return 0;
	const ElfW(Dyn) *d = object_dynamic(info);
	if (!d)
		return 0;
	const char *strtab = NULL;
	for (const ElfW(Dyn) *e = d; e->d_tag != DT_NULL; e++)
		if (e->d_tag == DT_STRTAB)
			strtab = (const char *)dyn_ptr(info, e->d_un.d_ptr);
	if (!strtab)
		return 0;
	for (const ElfW(Dyn) *e = d; e->d_tag != DT_NULL; e++)
		if (e->d_tag == DT_NEEDED && name_add(strtab + e->d_un.d_val))
			*(bool *)changed = true;
	return 0;
}

/* Run by our threads or in our signal handler: the closure of libfltrace.so's DT_NEEDED (ldd's
 * list: libunwind, liblzma, libm, libc, ld.so), and what glibc may load for them later. */
static void excluded_names_init(void)
{
	if (lm.nnames)
		return;
	lm.self_lo = (uintptr_t)&excluded_names_init;
	name_add("libgcc_s.so.1"); /* glibc's pthread_cancel and backtrace load it */
	name_add("libpthread.so.0");
	name_add("libdl.so.2");
	bool changed = true;
	while (changed) {
		changed = false;
		threads_dl_iterate_phdr(needed_collect, &changed);
	}
}

static bool object_excluded(const struct dl_phdr_info *info)
{
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	if (object_is_self(info) || info->dlpi_addr == getauxval(AT_BASE))
		return true;
	return *name && (name_known(base_name(name)) || strncmp(base_name(name), "ld-linux", 8) == 0);
}

/* ---- candidate ranges ---- */

static bool in_range(uintptr_t a, uintptr_t lo, uintptr_t hi)
{
	return a >= lo && a < hi;
}

/* A segment is a candidate unless it holds what the loader reads for any thread (ELF header and
 * program headers at offset 0, notes, the dynamic symbol and hash tables: lazy binding by our own
 * threads walks them) or what the unwinder reads in our signal handler (.eh_frame_hdr and the
 * .eh_frame after it: the segment's tail from there is left out). */
static int candidates_collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	bool excluded = object_excluded(info);
	uintptr_t olo = UINTPTR_MAX, ohi = 0, eh = 0;
	uintptr_t tables[16];
	unsigned ntables = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD) {
			olo = page_floor(a) < olo ? page_floor(a) : olo;
			ohi = page_ceil(a + ph->p_memsz) > ohi ? page_ceil(a + ph->p_memsz) : ohi;
		} else if (ph->p_type == PT_GNU_EH_FRAME) {
			eh = a;
		} else if ((ph->p_type == PT_NOTE || ph->p_type == PT_INTERP || ph->p_type == PT_DYNAMIC ||
			    ph->p_type == PT_PHDR || ph->p_type == PT_TLS) && ntables < 16) {
			tables[ntables++] = a;
		}
	}
	const ElfW(Dyn) *d = object_dynamic(info);
	for (const ElfW(Dyn) *e = d; e && e->d_tag != DT_NULL && ntables < 16; e++)
		if (e->d_tag == DT_GNU_HASH || e->d_tag == DT_HASH || e->d_tag == DT_SYMTAB ||
		    e->d_tag == DT_STRTAB || e->d_tag == DT_VERSYM || e->d_tag == DT_VERNEED ||
		    e->d_tag == DT_VERDEF || e->d_tag == DT_JMPREL || e->d_tag == DT_RELA)
			tables[ntables++] = dyn_ptr(info, e->d_un.d_ptr);
	if (olo < ohi && lm.nobj < LOADER_OBJ_MAX)
		lm.obj[lm.nobj++] = (struct loader_obj){ .lo = olo, .hi = ohi, .excluded = excluded };
	if (excluded || !info->dlpi_name)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || page_floor(ph->p_offset) == 0)
			continue;
		uintptr_t lo = page_floor(info->dlpi_addr + ph->p_vaddr);
		uintptr_t hi = page_ceil(info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
		if (eh && in_range(eh, lo, hi))
			hi = page_floor(eh);
		bool holds_tables = false;
		for (unsigned t = 0; t < ntables; t++)
			holds_tables |= in_range(tables[t], lo, hi);
		if (!holds_tables && lo < hi && lm.ncand < LOADER_CAND_MAX)
			lm.cand[lm.ncand++] = (struct loader_cand){ .lo = lo, .hi = hi };
	}
	return 0;
}

/* ---- /proc/self/smaps ---- */

struct vma {
	uintptr_t lo, hi;
	uint64_t off, dev, ino;
	char perms[5];
	const char *path; /* in the smaps buffer, not terminated */
	size_t path_len;
	uint64_t anon_kb;
};

static const char *parse_hex(const char *p, uint64_t *v)
{
	uint64_t x = 0;
	for (;; p++) {
		unsigned c = (unsigned char)*p;
		unsigned d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : 99;
		if (d > 15)
			break;
		x = x * 16 + d;
	}
	*v = x;
	return p;
}

static const char *parse_dec(const char *p, uint64_t *v)
{
	uint64_t x = 0;
	while (*p == ' ')
		p++;
	while (*p >= '0' && *p <= '9')
		x = x * 10 + (uint64_t)(*p++ - '0');
	*v = x;
	return p;
}

/* "start-end perms offset maj:min inode   path": false if the line is not a VMA header. */
static bool parse_vma_header(const char *line, const char *eol, struct vma *v)
{
	uint64_t lo, hi, maj, min;
	const char *p = parse_hex(line, &lo);
	if (*p != '-')
		return false;
	p = parse_hex(p + 1, &hi);
	if (*p != ' ' || eol - p < 6)
		return false;
	memcpy(v->perms, p + 1, 4);
	v->perms[4] = '\0';
	p = parse_hex(p + 6, &v->off);
	p = parse_hex(p + 1, &maj);
	p = parse_hex(p + 1, &min);
	p = parse_dec(p, &v->ino);
	while (p < eol && *p == ' ')
		p++;
	v->lo = lo;
	v->hi = hi;
	v->dev = makedev(maj, min);
	v->path = p;
	v->path_len = (size_t)(eol - p);
	v->anon_kb = 0;
	return true;
}

static size_t smaps_read(void)
{
	size_t len = rt_read_file("/proc/self/smaps", lm.smaps, SMAPS_MAX - 1);
	lm.smaps[len] = '\0';
	return len;
}

/* ---- the taken table ---- */

static void table_lock(void)
{
	rt_spin_lock(&lm.table_lock, LOCK_LOADER_TABLE);
}

static void table_unlock(void)
{
	rt_spin_unlock(&lm.table_lock, LOCK_LOADER_TABLE);
}

static void taken_add(const struct vma *v, uintptr_t lo, uintptr_t hi, int prot, bool permanent)
{
	table_lock();
	size_t i = 0;
	while (i < lm.ntaken && lm.taken[i].used)
		i++;
	if (i < LOADER_TAKEN_MAX) {
		struct loader_taken *t = &lm.taken[i];
		t->lo = lo;
		t->hi = hi;
		t->off = v->off + (lo - v->lo);
		t->dev = v->dev;
		t->ino = v->ino;
		t->prot = prot;
		t->permanent = permanent;
		size_t n = v->path_len < PATH_MAX - 1 ? v->path_len : PATH_MAX - 1;
		memcpy(t->path, v->path, n);
		t->path[n] = '\0';
		t->used = true;
		if (i == lm.ntaken)
			lm.ntaken++;
	}
	table_unlock();
}

/* ---- taking a range over ---- */

/* The replacement is built off to the side and registered, then moved over the file mapping in one
 * mremap: no thread executing there can see a page that is neither the file's nor registered.
 * rt.loader_uffd has UFFD_FEATURE_EVENT_REMAP, which keeps the registration across the move (without
 * it the kernel drops it, and the range would read zeros); the mremap returns once a handler thread
 * has read the REMAP event, so rt.lock is not held across it. */
static bool take_over(const struct vma *v, uintptr_t lo, uintptr_t hi, bool permanent)
{
	char path[PATH_MAX];
	if (v->path_len >= sizeof(path))
		return false;
	memcpy(path, v->path, v->path_len);
	path[v->path_len] = '\0';
	size_t len = hi - lo;
	int prot = (v->perms[0] == 'r' ? PROT_READ : 0) | (v->perms[2] == 'x' ? PROT_EXEC : 0);
	uint64_t off = v->off + (lo - v->lo);
	rt_lock();
	int file = filemap_open_path(path, v->dev, v->ino);
	if (file < 0) {
		rt_unlock();
		return false;
	}
	void *a = (void *)syscall(SYS_mmap, NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a == MAP_FAILED) {
		filemap_unref(file);
		rt_unlock();
		return false;
	}
	if (uffd_register(rt.loader_uffd, (uintptr_t)a, len) < 0 || region_add_loader(lo, len, prot, file, off) < 0) {
		filemap_unref(file);
		syscall(SYS_munmap, a, len);
		rt_unlock();
		return false;
	}
	rt_unlock();
	void *p = (void *)syscall(SYS_mremap, a, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, lo);
	if (p != (void *)lo) {
		rt_lock();
		region_remove(lo, len);
		rt_unlock();
		syscall(SYS_munmap, a, len);
		return false;
	}
	taken_add(v, lo, hi, prot, permanent);
	atomic_fetch_add(&rt.stats.loader_file_bytes, len);
	atomic_fetch_add(&rt.stats.loader_file_maps, 1);
	return true;
}

static bool vma_candidate(const struct vma *v)
{
	return v->path_len && v->path[0] == '/' && v->perms[1] != 'w' && v->perms[3] == 'p';
}

static bool path_deleted(const struct vma *v)
{
	static const char tag[] = " (deleted)";
	return v->path_len >= sizeof(tag) - 1 &&
	       memcmp(v->path + v->path_len - (sizeof(tag) - 1), tag, sizeof(tag) - 1) == 0;
}

/* One VMA of smaps, fully read: take over its clean candidate parts; returns bytes left alone. */
static uint64_t vma_decide(const struct vma *v, bool permanent)
{
	bool in_object = false;
	for (size_t i = 0; i < lm.nobj; i++)
		in_object |= v->lo < lm.obj[i].hi && v->hi > lm.obj[i].lo;
	if (!vma_candidate(v) || !in_object)
		return 0;
	uint64_t taken = 0;
	/* Pages that differ from the file (text relocations, a debugger's breakpoint) are copies
	 * made on write: smaps counts them as Anonymous, and then the whole mapping stays the kernel's.
	 * Private_Dirty is no sign: it also counts page-cache pages not yet written back (a library
	 * built a moment ago shows Private_Dirty 4 kB, Anonymous 0 kB). */
	if (v->anon_kb == 0 && !path_deleted(v))
		for (size_t i = 0; i < lm.ncand; i++) {
			uintptr_t lo = v->lo > lm.cand[i].lo ? v->lo : lm.cand[i].lo;
			uintptr_t hi = v->hi < lm.cand[i].hi ? v->hi : lm.cand[i].hi;
			if (lo < hi && take_over(v, lo, hi, permanent))
				taken += hi - lo;
		}
	return (v->hi - v->lo) - taken;
}

void loader_take_over(bool permanent)
{
	if (!rt.cfg.files_all || atomic_load(&rt.phase) != RT_ON || rt.loader_uffd < 0)
		return;
	/* Inside an exclusive dlclose already (or, nested in a constructor, a shared dlopen: the
	 * loader then holds its own lock, so no other thread changes the objects either). */
	bool locked = tls_dl_depth == 0;
	if (locked) {
		lock_order_take(LOCK_LOADER);
		pthread_rwlock_wrlock(&lm.lock);
	}
	rt_tls_internal++;
	if (!lm.smaps) {
		lm.smaps = rt_map(SMAPS_MAX);
		lm.cand = rt_map(LOADER_CAND_MAX * sizeof(*lm.cand));
		lm.obj = rt_map(LOADER_OBJ_MAX * sizeof(*lm.obj));
		lm.taken = rt_map(LOADER_TAKEN_MAX * sizeof(*lm.taken));
	}
	if (!lm.smaps || !lm.cand || !lm.obj || !lm.taken)
		goto out;
	excluded_names_init();
	lm.ncand = lm.nobj = 0;
	threads_dl_iterate_phdr(candidates_collect, NULL);
	size_t len = smaps_read();
	uint64_t untracked = 0, untracked_maps = 0;
	struct vma v = { 0 };
	bool have = false;
	for (const char *line = lm.smaps, *end = lm.smaps + len; line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			eol = end;
		struct vma next;
		if (parse_vma_header(line, eol, &next)) {
			if (have) {
				uint64_t left = vma_decide(&v, permanent);
				untracked += left;
				untracked_maps += left != 0;
			}
			v = next;
			have = true;
		} else if (have && strncmp(line, "Anonymous:", 10) == 0) {
			parse_dec(line + 10, &v.anon_kb);
		}
		line = eol + 1;
	}
	if (have) {
		uint64_t left = vma_decide(&v, permanent);
		untracked += left;
		untracked_maps += left != 0;
	}
	/* What is left alone now (a snapshot: objects come and go with dlopen and dlclose). */
	atomic_store(&rt.stats.untracked_loader_file_bytes, untracked);
	atomic_store(&rt.stats.untracked_loader_file_maps, untracked_maps);
out:
	rt_tls_internal--;
	if (locked) {
		pthread_rwlock_unlock(&lm.lock);
		lock_order_drop(LOCK_LOADER);
	}
}

/* A fork child has one thread: locks another thread of the parent held stay free here. */
void loader_fork_child(void)
{
	pthread_rwlock_init(&lm.lock, NULL);
	tls_dl_depth = 0;
	rt_spin_reset(&lm.table_lock);
}

/* ---- giving ranges back ---- */

/* The file mapped again over the range (one mmap: the new mapping replaces the old atomically, and
 * its pages are the file's, as the taken-over pages were), and the region forgotten. rt.lock held. */
static void give_back(struct loader_taken *t)
{
	const struct region *r = region_of(t->lo);
	if (r && r->loader && r->file >= 0) {
		void *p = filemap_mmap(r->file, (void *)t->lo, t->hi - t->lo, t->prot, MAP_PRIVATE | MAP_FIXED,
				       t->off);
		if (p == MAP_FAILED)
			rt_die("--files=all", "cannot map a library's file back", "run without --files=all");
	}
	region_remove(t->lo, t->hi - t->lo);
	atomic_fetch_sub(&rt.stats.loader_file_bytes, t->hi - t->lo);
	atomic_fetch_sub(&rt.stats.loader_file_maps, 1);
	table_lock();
	t->used = false;
	table_unlock();
}

void loader_release(uintptr_t start, size_t len)
{
	if (!lm.taken)
		return;
	for (size_t i = 0; i < lm.ntaken; i++) {
		struct loader_taken *t = &lm.taken[i];
		if (t->used && t->lo < start + len && t->hi > start)
			give_back(t);
	}
}

/* dlclose may unmap objects loaded by dlopen, with the loader's own munmap, which fltrace does not
 * see: they get their files back first, and what is still loaded afterwards is taken over again.
 * The caller holds lm.lock exclusively across the three steps (loader_dl_begin(true)). */
void loader_give_back(void)
{
	if (!rt.cfg.files_all || !lm.taken)
		return;
	rt_lock();
	for (size_t i = 0; i < lm.ntaken; i++)
		if (lm.taken[i].used && !lm.taken[i].permanent)
			give_back(&lm.taken[i]);
	rt_unlock();
}

/* ---- the maps history ---- */

static void fmt_pad_hex(struct fmt *f, uint64_t v, unsigned width)
{
	char tmp[24];
	struct fmt t;
	fmt_init(&t, tmp, sizeof(tmp));
	fmt_hex(&t, v);
	for (size_t n = fmt_len(&t); n < width; n++)
		fmt_char(f, '0');
	fmt_mem(f, tmp, fmt_len(&t));
}

static void maps_line(struct fmt *f, uintptr_t lo, uintptr_t hi, const char *perms, const struct loader_taken *t)
{
	size_t start = fmt_len(f);
	fmt_pad_hex(f, lo, 8);
	fmt_char(f, '-');
	fmt_pad_hex(f, hi, 8);
	fmt_char(f, ' ');
	fmt_mem(f, perms, 4);
	fmt_char(f, ' ');
	fmt_pad_hex(f, t->off + (lo - t->lo), 8);
	fmt_char(f, ' ');
	fmt_pad_hex(f, major(t->dev), 2);
	fmt_char(f, ':');
	fmt_pad_hex(f, minor(t->dev), 2);
	fmt_char(f, ' ');
	fmt_u64(f, t->ino);
	fmt_char(f, ' ');
	while (fmt_len(f) - start < 73) /* the kernel pads paths to this column */
		fmt_char(f, ' ');
	fmt_str(f, t->path);
	fmt_char(f, '\n');
}

size_t loader_rewrite_maps(const char *in, size_t len, char *out, size_t cap)
{
	struct fmt f;
	fmt_init(&f, out, cap);
	table_lock();
	for (size_t i = 0; i < len;) {
		const char *line = in + i;
		const char *nl = memchr(line, '\n', len - i);
		const char *eol = nl ? nl : in + len;
		i = (size_t)(eol - in) + 1;
		struct vma v;
		bool anon = lm.taken && parse_vma_header(line, eol, &v) && v.path_len == 0;
		uintptr_t cur = anon ? v.lo : 0;
		for (size_t k = 0; anon && k < lm.ntaken; k++) {
			/* Pieces in address order: the table is small, so look for the next one each time. */
			const struct loader_taken *best = NULL;
			for (size_t j = 0; j < lm.ntaken; j++) {
				const struct loader_taken *t = &lm.taken[j];
				if (t->used && t->hi > cur && t->lo < v.hi && (!best || t->lo < best->lo))
					best = t;
			}
			if (!best)
				break;
			uintptr_t lo = best->lo > cur ? best->lo : cur, hi = best->hi < v.hi ? best->hi : v.hi;
			if (lo > cur) { /* an anonymous part before it */
				fmt_pad_hex(&f, cur, 8);
				fmt_char(&f, '-');
				fmt_pad_hex(&f, lo, 8);
				fmt_mem(&f, line + (strchr(line, ' ') - line), (size_t)(eol - strchr(line, ' ')));
				fmt_char(&f, '\n');
			}
			maps_line(&f, lo, hi, v.perms, best);
			cur = hi;
		}
		if (!anon || cur == v.lo) {
			fmt_mem(&f, line, (size_t)(eol - line));
			fmt_char(&f, '\n');
		} else if (cur < v.hi) {
			fmt_pad_hex(&f, cur, 8);
			fmt_char(&f, '-');
			fmt_pad_hex(&f, v.hi, 8);
			fmt_mem(&f, line + (strchr(line, ' ') - line), (size_t)(eol - strchr(line, ' ')));
			fmt_char(&f, '\n');
		}
	}
	table_unlock();
	return fmt_len(&f);
}
