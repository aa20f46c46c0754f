/* A program that brings its own malloc (rustc, programs linking tcmalloc or mimalloc statically):
 * the loader's allocator and libunwind's malloc slots are pointed at fltrace's untracked heaps. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../src/runtime/rt.h"
#include "heap.h"
#include "loaderheap.h"

/* Why: the executable's definitions come first in symbol lookup, before LD_PRELOAD. The loader
 * then allocates link maps, scope lists and every thread's TLS vector with the program's malloc,
 * and libunwind, on fltrace's handler threads, allocates from the program's heap: tracked,
 * evictable memory that only the handler can bring back, and a heap whose locks the program may
 * hold in the very call (an mmap from its malloc) that fltrace is unwinding. The handler waits
 * for itself, and the program hangs. Both are given the heaps our own malloc gives them. */

enum { F_MALLOC, F_CALLOC, F_REALLOC, F_FREE, F_N };
static const char *const fnames[F_N] = { "malloc", "calloc", "realloc", "free" };

static struct {
	void *theirs[F_N]; /* the program's malloc family, as the loader found it */
} fh;

/* ---- the allocator they are given: untracked, and the program's own for its earlier blocks ---- */

/* fltrace's threads take the internal arena, as from our malloc: jemalloc's own metadata is on
 * the traced heap. So does everyone if the loader's arena could not be made. */
static bool internal_only(void)
{
	return rt_tls_internal != 0 || !loaderheap_ready();
}

static void *own_malloc(size_t n)
{
	return internal_only() ? heap_internal_alloc(n, 16) : loaderheap_alloc(n, 16, false);
}

static void *own_calloc(size_t n, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	/* The internal arena is a fresh mapping, never reused: already zero. */
	return internal_only() ? heap_internal_alloc(bytes, 16) : loaderheap_alloc(bytes, 16, true);
}

/* A block neither heap owns came from the program's malloc, before we took over (a constructor
 * that ran before ours dlopened, or started a thread): it goes back there. */
static void own_free(void *p)
{
	if (!p || heap_internal_owns(p))
		return;
	if (loaderheap_owns(p))
		loaderheap_free(p);
	else
		((void (*)(void *))fh.theirs[F_FREE])(p);
}

static void *own_realloc(void *p, size_t n)
{
	if (heap_internal_owns(p) || (!p && internal_only()))
		return heap_internal_realloc(p, n);
	if (!p || loaderheap_owns(p))
		return loaderheap_realloc(p, n);
	return ((void *(*)(void *, size_t))fh.theirs[F_REALLOC])(p, n);
}

static void *const ours[F_N] = { own_malloc, own_calloc, own_realloc, own_free };

/* ---- finding the slots ---- */

static int which_fn(const char *name)
{
	for (int i = 0; i < F_N; i++)
		if (strcmp(name, fnames[i]) == 0)
			return i;
	return -1;
}

/* Writes one pointer in a page that RELRO may have made read-only; put back as it was. */
static bool write_slot(void **slot, void *value, uintptr_t relro_lo, uintptr_t relro_hi)
{
	uintptr_t a = (uintptr_t)slot;
	bool ro = a >= relro_lo && a < relro_hi;
	uintptr_t page = a & ~(uintptr_t)(rt.page_size - 1);
	if (ro && syscall(SYS_mprotect, page, rt.page_size, PROT_READ | PROT_WRITE) != 0)
		return false;
	__atomic_store_n(slot, value, __ATOMIC_RELEASE);
	if (ro)
		syscall(SYS_mprotect, page, rt.page_size, PROT_READ);
	return true;
}

static void relro_range(uintptr_t base, const ElfW(Phdr) *ph, int n, uintptr_t *lo, uintptr_t *hi)
{
	*lo = *hi = 0;
	for (int i = 0; i < n; i++)
		if (ph[i].p_type == PT_GNU_RELRO) {
			*lo = base + ph[i].p_vaddr;
			*hi = *lo + ph[i].p_memsz;
		}
}

/* The loader keeps its allocator in four pointers (glibc's __rtld_malloc and siblings, in its
 * RELRO data, not exported): each holds the program's function, and nothing else there does.
 * Found by value, and rewritten only if every one of the program's is found exactly once: a
 * loader that allocated from us and freed to the program would corrupt its heap. */
static bool rebind_loader(void)
{
	uintptr_t base = getauxval(AT_BASE);
	if (!base)
		return false; /* the loader was run as the program: nothing to rebind */
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
	uintptr_t lo, hi;
	relro_range(base, ph, eh->e_phnum, &lo, &hi);
	void **found[F_N] = { 0 };
	int count[F_N] = { 0 };
	for (void **w = (void **)((lo + 7) & ~(uintptr_t)7); (uintptr_t)(w + 1) <= hi; w++)
		for (int i = 0; i < F_N; i++)
			if (fh.theirs[i] && *w == fh.theirs[i]) {
				found[i] = w;
				count[i]++;
			}
	for (int i = 0; i < F_N; i++)
		if (fh.theirs[i] && count[i] != 1)
			return false;
	bool ok = true;
	for (int i = 0; i < F_N; i++)
		if (fh.theirs[i])
			ok &= write_slot(found[i], ours[i], lo, hi);
	return ok;
}

struct dyn_tables {
	const ElfW(Sym) *symtab;
	const char *strtab;
	const uint32_t *gnu_hash, *sysv_hash;
	const ElfW(Rela) *rel[2];
	size_t rel_bytes[2];
};

/* The loader relocated most of .dynamic's pointers in place; some loaders leave them offsets. */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v;
}

static void read_dynamic(uintptr_t base, const ElfW(Dyn) *d, struct dyn_tables *t)
{
	memset(t, 0, sizeof(*t));
	for (; d->d_tag != DT_NULL; d++)
		switch (d->d_tag) {
		case DT_SYMTAB: t->symtab = (const ElfW(Sym) *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_STRTAB: t->strtab = (const char *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_GNU_HASH: t->gnu_hash = (const uint32_t *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_HASH: t->sysv_hash = (const uint32_t *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_JMPREL: t->rel[0] = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: t->rel_bytes[0] = d->d_un.d_val; break;
		case DT_RELA: t->rel[1] = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_RELASZ: t->rel_bytes[1] = d->d_un.d_val; break;
		}
}

static bool object_tables(const struct dl_phdr_info *info, struct dyn_tables *t)
{
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
			read_dynamic(info->dlpi_addr, (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr), t);
			return t->symtab && t->strtab;
		}
	return false;
}

/* The object's dynamic symbol `name` (GNU hash, or the older SysV one), or NULL. */
static const ElfW(Sym) *symbol_of(const struct dyn_tables *t, const char *name)
{
	if (t->gnu_hash) {
		uint32_t nbuckets = t->gnu_hash[0], symoffset = t->gnu_hash[1], bloom_words = t->gnu_hash[2];
		const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)&t->gnu_hash[4] + bloom_words);
		const uint32_t *chain = buckets + nbuckets;
		uint32_t h = 5381;
		for (const unsigned char *c = (const unsigned char *)name; *c; c++)
			h = h * 33 + *c;
		for (uint32_t i = nbuckets ? buckets[h % nbuckets] : 0; i >= symoffset && i; i++) {
			uint32_t ch = chain[i - symoffset];
			if ((ch | 1) == (h | 1) && strcmp(t->strtab + t->symtab[i].st_name, name) == 0)
				return &t->symtab[i];
			if (ch & 1)
				break;
		}
		return NULL;
	}
	if (t->sysv_hash) {
		uint32_t nbucket = t->sysv_hash[0], h = 0;
		const uint32_t *bucket = &t->sysv_hash[2], *chain = bucket + nbucket;
		for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
			h = (h << 4) + *c;
			h ^= (h >> 24) & 0xf0;
		}
		h &= 0x0fffffff;
		for (uint32_t i = nbucket ? bucket[h % nbucket] : 0; i; i = chain[i])
			if (strcmp(t->strtab + t->symtab[i].st_name, name) == 0)
				return &t->symtab[i];
	}
	return NULL;
}

/* The GOT slots of one object that the loader bound to the program's malloc family (those of
 * `which`, a mask of 1 << F_*). */
static void rebind_object(struct dl_phdr_info *info, unsigned which)
{
	struct dyn_tables t;
	if (!object_tables(info, &t))
		return;
	uintptr_t lo, hi;
	relro_range(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, &lo, &hi);
	for (int k = 0; k < 2; k++)
		for (size_t j = 0; t.rel[k] && j < t.rel_bytes[k] / sizeof(ElfW(Rela)); j++) {
			const ElfW(Rela) *r = &t.rel[k][j];
			unsigned type = ELF64_R_TYPE(r->r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			int f = which_fn(t.strtab + t.symtab[ELF64_R_SYM(r->r_info)].st_name);
			if (f < 0 || !fh.theirs[f] || !(which & (1u << f)))
				continue;
			/* A lazy slot not yet bound holds its PLT stub: binding it now is what the
			 * loader would do at the first call, with our function. */
			write_slot((void **)(info->dlpi_addr + r->r_offset), ours[f], lo, hi);
		}
}

/* libunwind allocates on fltrace's threads: all of its malloc family. The C library frees what the
 * loader allocated: a thread's cached stack, reused, has its dynamic TLS blocks freed by nptl
 * through libc's own `free` slot. */
static int rebind_libraries(struct dl_phdr_info *info, size_t size, void *loader_rebound)
{
	(void)size;
	const char *slash = strrchr(info->dlpi_name, '/');
	const char *base = slash ? slash + 1 : info->dlpi_name;
	if (strncmp(base, "libunwind", 9) == 0)
		rebind_object(info, (1u << F_N) - 1);
	else if (strncmp(base, "libc.so", 7) == 0 && *(bool *)loader_rebound)
		rebind_object(info, 1u << F_FREE);
	return 0;
}

/* ---- who defines the malloc family ---- */

struct definer {
	const char *name;
	bool ours;  /* the first object of the lookup order that defines `name` is this library */
	bool found;
};

static bool object_contains(const struct dl_phdr_info *info, const void *addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (uintptr_t)addr - lo < ph->p_memsz)
			return true;
	}
	return false;
}

/* Objects come in load order, the executable first, then LD_PRELOAD's: the order of the global
 * lookup. An undefined symbol does not count: a non-PIE executable that takes malloc's address has
 * one with a value (its PLT entry, which jumps to the definition), and dlsym returns that. */
static int find_definer(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct definer *d = arg;
	struct dyn_tables t;
	if (d->found || !object_tables(info, &t))
		return d->found;
	const ElfW(Sym) *sym = symbol_of(&t, d->name);
	if (!sym || sym->st_shndx == SHN_UNDEF || ELF64_ST_BIND(sym->st_info) == STB_LOCAL)
		return 0;
	d->found = true;
	d->ours = object_contains(info, heap_own_fn(d->name));
	return 1;
}

static bool defined_before_us(const char *name)
{
	struct definer d = { .name = name };
	dl_iterate_phdr(find_definer, &d);
	return d.found && !d.ours;
}

/* ---- taking over, before the runtime starts its threads ---- */

__attribute__((constructor(101))) static void foreignheap_init(void)
{
	rt_early_init();
	bool foreign = false;
	for (int i = 0; i < F_N; i++)
		if (defined_before_us(fnames[i])) {
			/* What the loader stored, and what a call there reaches (a PLT entry jumps on). */
			fh.theirs[i] = dlsym(RTLD_DEFAULT, fnames[i]);
			foreign |= fh.theirs[i] != NULL;
		}
	if (!foreign)
		return;
	/* A block the program's malloc gave the loader goes back through its free (and realloc, if it
	 * has one): without a free of its own, the loader keeps the program's allocator. */
	bool whole = fh.theirs[F_MALLOC] && fh.theirs[F_FREE];
	bool loader = whole && rebind_loader();
	dl_iterate_phdr(rebind_libraries, &loader);
	if (whole && !loader)
		rt_log("note: the program brings its own malloc, and fltrace did not find where the dynamic "
		       "loader keeps its allocator (another C library?): if the run stops with 'no fault has "
		       "been served', report it");
}
