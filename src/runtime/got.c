/* Loaded objects' dynamic tables: symbol lookup through their hash tables, and GOT slots rewritten
 * by symbol name (libunwind's imports in unwcheck.c, the malloc family in preload/foreignheap.c). */
#include <dlfcn.h>
#include <elf.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "got.h"
#include "rt.h"

struct dyn_tables {
	const ElfW(Sym) *symtab;
	const char *strtab;
	const uint32_t *gnu_hash, *sysv_hash;
	const ElfW(Versym) *versym;
	const ElfW(Verneed) *verneed;
	const ElfW(Rela) *rel[2];
	size_t rel_bytes[2];
};

void got_relro_of(uintptr_t base, const ElfW(Phdr) *ph, unsigned n, struct got_relro *r)
{
	r->lo = r->hi = 0;
	for (unsigned i = 0; i < n; i++)
		if (ph[i].p_type == PT_GNU_RELRO) {
			/* The loader protects whole pages: the end is rounded down, the rest stays writable. */
			r->lo = (base + ph[i].p_vaddr) & ~(uintptr_t)(rt.page_size - 1);
			r->hi = (base + ph[i].p_vaddr + ph[i].p_memsz) & ~(uintptr_t)(rt.page_size - 1);
		}
}

bool got_write_slot(void **slot, void *value, const struct got_relro *r)
{
	uintptr_t a = (uintptr_t)slot;
	bool ro = a >= r->lo && a < r->hi;
	uintptr_t page = a & ~(uintptr_t)(rt.page_size - 1);
	if (ro && syscall(SYS_mprotect, page, rt.page_size, PROT_READ | PROT_WRITE) != 0)
		return false;
	__atomic_store_n(slot, value, __ATOMIC_RELEASE);
	if (ro)
		syscall(SYS_mprotect, page, rt.page_size, PROT_READ);
	return true;
}

/* glibc's loader relocated .dynamic's pointers in place; others may leave them offsets. */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v;
}

static bool tables_of(const struct dl_phdr_info *info, struct dyn_tables *t)
{
	memset(t, 0, sizeof(*t));
	const ElfW(Dyn) *d = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	for (uintptr_t b = info->dlpi_addr; d && d->d_tag != DT_NULL; d++)
		switch (d->d_tag) {
		case DT_SYMTAB: t->symtab = (const ElfW(Sym) *)dyn_ptr(b, d->d_un.d_ptr); break;
		case DT_STRTAB: t->strtab = (const char *)dyn_ptr(b, d->d_un.d_ptr); break;
		case DT_GNU_HASH: t->gnu_hash = (const uint32_t *)dyn_ptr(b, d->d_un.d_ptr); break;
		case DT_HASH: t->sysv_hash = (const uint32_t *)dyn_ptr(b, d->d_un.d_ptr); break;
		case DT_VERSYM: t->versym = (const ElfW(Versym) *)dyn_ptr(b, d->d_un.d_ptr); break;
		case DT_VERNEED: t->verneed = (const ElfW(Verneed) *)dyn_ptr(b, d->d_un.d_ptr); break;
		case DT_JMPREL: t->rel[0] = (const ElfW(Rela) *)dyn_ptr(b, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: t->rel_bytes[0] = d->d_un.d_val; break;
		case DT_RELA: t->rel[1] = (const ElfW(Rela) *)dyn_ptr(b, d->d_un.d_ptr); break;
		case DT_RELASZ: t->rel_bytes[1] = d->d_un.d_val; break;
		}
	return t->symtab && t->strtab;
}

static const ElfW(Sym) *gnu_lookup(const struct dyn_tables *t, const char *name)
{
	const uint32_t *h = t->gnu_hash;
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_words = h[2];
	const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)&h[4] + bloom_words);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t hash = 5381;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		hash = hash * 33 + *c;
	for (uint32_t i = nbuckets ? buckets[hash % nbuckets] : 0; i && i >= symoffset; i++) {
		uint32_t ch = chain[i - symoffset];
		if ((ch | 1) == (hash | 1) && strcmp(t->strtab + t->symtab[i].st_name, name) == 0)
			return &t->symtab[i];
		if (ch & 1)
			break;
	}
	return NULL;
}

static const ElfW(Sym) *sysv_lookup(const struct dyn_tables *t, const char *name)
{
	const uint32_t *h = t->sysv_hash;
	uint32_t nbucket = h[0], hash = 0;
	const uint32_t *bucket = &h[2], *chain = bucket + nbucket;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
		hash = (hash << 4) + *c;
		hash ^= (hash >> 24) & 0xf0;
	}
	hash &= 0x0fffffff;
	for (uint32_t i = nbucket ? bucket[hash % nbucket] : 0; i; i = chain[i])
		if (strcmp(t->strtab + t->symtab[i].st_name, name) == 0)
			return &t->symtab[i];
	return NULL;
}

bool got_defines(const struct dl_phdr_info *info, const char *name)
{
	struct dyn_tables t;
	if (!tables_of(info, &t))
		return false;
	const ElfW(Sym) *s = t.gnu_hash ? gnu_lookup(&t, name) : t.sysv_hash ? sysv_lookup(&t, name) : NULL;
	return s && s->st_shndx != SHN_UNDEF && ELF64_ST_BIND(s->st_info) != STB_LOCAL;
}

void got_rebind(const struct dl_phdr_info *info, void *(*replace)(const char *name, void *arg), void *arg)
{
	struct dyn_tables t;
	if (!tables_of(info, &t))
		return;
	struct got_relro r;
	got_relro_of(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, &r);
	for (int k = 0; k < 2; k++)
		for (size_t j = 0; t.rel[k] && j < t.rel_bytes[k] / sizeof(ElfW(Rela)); j++) {
			const ElfW(Rela) *rel = &t.rel[k][j];
			unsigned type = ELF64_R_TYPE(rel->r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			void *v = replace(t.strtab + t.symtab[ELF64_R_SYM(rel->r_info)].st_name, arg);
			if (v)
				got_write_slot((void **)(info->dlpi_addr + rel->r_offset), v, &r);
		}
}

/* The version the object asks for its import number `sym`, or NULL for none. */
static const char *version_needed(const struct dyn_tables *t, size_t sym)
{
	if (!t->versym || !t->verneed)
		return NULL;
	unsigned v = t->versym[sym] & 0x7fff;
	for (const ElfW(Verneed) *n = t->verneed; v >= 2;
	     n = (const ElfW(Verneed) *)((const char *)n + n->vn_next)) {
		const ElfW(Vernaux) *a = (const ElfW(Vernaux) *)((const char *)n + n->vn_aux);
		for (unsigned i = 0; i < n->vn_cnt; i++, a = (const ElfW(Vernaux) *)((const char *)a + a->vna_next))
			if (a->vna_other == v)
				return t->strtab + a->vna_name;
		if (!n->vn_next)
			break;
	}
	return NULL;
}

void got_bind_now(const struct dl_phdr_info *info)
{
	struct dyn_tables t;
	if (!tables_of(info, &t) || !t.rel[0])
		return;
	struct got_relro r;
	got_relro_of(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, &r);
	for (size_t j = 0; j < t.rel_bytes[0] / sizeof(ElfW(Rela)); j++) {
		const ElfW(Rela) *rel = &t.rel[0][j];
		if (ELF64_R_TYPE(rel->r_info) != R_X86_64_JUMP_SLOT)
			continue;
		size_t sym = ELF64_R_SYM(rel->r_info);
		const char *name = t.strtab + t.symtab[sym].st_name, *version = version_needed(&t, sym);
		void *f = version ? dlvsym(RTLD_DEFAULT, name, version) : dlsym(RTLD_DEFAULT, name);
		if (f)
			got_write_slot((void **)(info->dlpi_addr + rel->r_offset), f, &r);
	}
}
