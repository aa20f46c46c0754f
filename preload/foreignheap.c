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

#include "../src/runtime/got.h"
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
	struct got_relro r;
	got_relro_of(base, ph, eh->e_phnum, &r);
	void **found[F_N] = { 0 };
	int count[F_N] = { 0 };
	for (void **w = (void **)r.lo; (uintptr_t)(w + 1) <= r.hi; w++)
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
			ok &= got_write_slot(found[i], ours[i], &r);
	return ok;
}

/* What a GOT slot of the malloc family in `which` (a mask of 1 << F_*) gets instead. */
static void *replacement(const char *name, void *which)
{
	int f = which_fn(name);
	return f >= 0 && fh.theirs[f] && (*(unsigned *)which & (1u << f)) ? ours[f] : NULL;
}

/* libunwind allocates on fltrace's threads: all of its malloc family. The C library frees what the
 * loader allocated: a thread's cached stack, reused, has its dynamic TLS blocks freed by nptl
 * through libc's own `free` slot. */
static int rebind_libraries(struct dl_phdr_info *info, size_t size, void *loader_rebound)
{
	(void)size;
	const char *slash = strrchr(info->dlpi_name, '/');
	const char *base = slash ? slash + 1 : info->dlpi_name;
	if (strncmp(base, "libunwind", 9) == 0) {
		/* What the loader allocated before we took over stays on the program's heap (a dlopen
		 * in a constructor of the executable's libraries): a handler never binds a slot. */
		got_bind_now(info);
		unsigned all = (1u << F_N) - 1;
		got_rebind(info, replacement, &all);
	}
	else if (strncmp(base, "libc.so", 7) == 0 && *(bool *)loader_rebound) {
		unsigned free_only = 1u << F_FREE;
		got_rebind(info, replacement, &free_only);
	}
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
 * lookup. dlsym would not do: for a non-PIE executable that takes malloc's address it returns that
 * executable's PLT entry, which jumps to the definition. */
static int find_definer(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct definer *d = arg;
	if (!got_defines(info, d->name))
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
	/* Before tracking begins: jemalloc's start is fltrace's, even where the program's own malloc
	 * wins (jemalloc's constructor starts it then too, for the loader's heap). */
	heap_start();
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
