/* Symbolizer: runtime address -> object, object vaddr (ELF program headers), function (symbol
 * tables), file:line with inlines (one addr2line per object, all its addresses in one batch). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis.h"

struct sym_symbol {
	uint64_t addr, size;
	const char *name;
	int rank; /* lower is preferred among aliases */
};

struct sym_range {
	uint64_t start, end;
};

struct sym_object {
	char *path;        /* as mapped */
	char *debug_path;  /* separate debug info, or NULL */
	char *dwarf_path;  /* what addr2line reads: debug_path or path; NULL if no DWARF anywhere */
	struct sym_segment *segs;
	size_t nsegs;
	uint8_t build_id[32];
	uint32_t build_id_len;
	struct sym_symbol *syms;
	size_t nsyms;
	struct sym_range *fns;  /* function extents from the unwind table, sorted by start */
	size_t nfns;
	char *strtab;      /* names of syms, one block */
	size_t strtab_len, strtab_cap;
	bool loaded, broken, mismatch;
	/* Frames waiting for addr2line. */
	size_t npend, cappend;
	int64_t *pend;
};

struct sym_frame_int {
	struct sym_frame pub;
	int obj; /* index in objects, -1 if none */
};

struct sym_key {
	uint64_t a, b;
	int64_t id; /* -1: empty slot */
};

struct symbolizer {
	size_t nobj, capobj;
	struct sym_object *obj;
	size_t nfr, capfr;
	struct sym_frame_int *fr;
	size_t hcap, hn;
	struct sym_key *hash;
	size_t nstr, capstr;
	char **str; /* owned strings (lib names, codes), freed at the end */
};

static const struct sym_loc sym_unknown_loc = { "??", "??", 0 };

/* libelf wants its version declared once before any other call. */
static bool sym_elf_init(void)
{
	static bool elf_ready;

	if (!elf_ready && elf_version(EV_CURRENT) != EV_NONE)
		elf_ready = true;
	return elf_ready;
}

struct symbolizer *sym_new(void)
{
	if (!sym_elf_init())
		return NULL;
	return calloc(1, sizeof(struct symbolizer));
}

void sym_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nobj; i++) {
		struct sym_object *o = &s->obj[i];
		free(o->path);
		free(o->debug_path);
		free(o->segs);
		free(o->syms);
		free(o->fns);
		free(o->strtab);
		free(o->pend);
	}
	for (size_t i = 0; i < s->nfr; i++)
		if (s->fr[i].pub.locs != &sym_unknown_loc)
			free((void *)s->fr[i].pub.locs);
	for (size_t i = 0; i < s->nstr; i++)
		free(s->str[i]);
	free(s->obj);
	free(s->fr);
	free(s->hash);
	free(s->str);
	free(s);
}

/* Keep a malloc'd string for the symbolizer's lifetime. */
static char *sym_keep(struct symbolizer *s, char *p)
{
	if (!p)
		return NULL;
	if (s->nstr == s->capstr) {
		size_t cap = s->capstr ? s->capstr * 2 : 256;
		char **v = realloc(s->str, cap * sizeof(*v));
		if (!v) {
			free(p);
			return NULL;
		}
		s->str = v;
		s->capstr = cap;
	}
	s->str[s->nstr++] = p;
	return p;
}

/* ------------------------------------------------------------------ ELF */

int sym_map_to_vaddr(const struct sym_segment *segs, size_t n, uint64_t map_start,
		     uint64_t map_offset, const char *perms, uint64_t addr, uint64_t *vaddr)
{
	bool x = perms && perms[0] && perms[1] && perms[2] == 'x';

	/* The mapping shows file bytes from map_offset at map_start. A PT_LOAD segment puts file
	 * offset p_offset at p_vaddr, so file offset map_offset sits at p_vaddr - p_offset +
	 * map_offset. This holds whatever the page size and wherever the object's first segment
	 * starts; a segment is the right one when the translated address falls inside it. */
	/* Pass 0: ld.so maps each segment from its page-aligned file offset, so an exact match
	 * names the segment even when two segments share a file page. Pass 1: a mapping split
	 * later (mprotect of RELRO or of part of the text) starts inside its segment. Both first
	 * with the mapping's execute bit matching the segment's (two segments can share a page),
	 * then without (a debugger may have changed the permissions). */
	for (int pass = 0; pass < 4; pass++) {
		for (size_t i = 0; i < n; i++) {
			const struct sym_segment *g = &segs[i];
			uint64_t down = g->offset & ~(uint64_t)0xfff, v;

			if (pass < 2 && perms && x != !!(g->flags & PF_X))
				continue;
			if (pass % 2 == 0 ? map_offset != down :
			    map_offset < down || map_offset >= g->offset + g->filesz)
				continue;
			v = g->vaddr - g->offset + map_offset + (addr - map_start);
			if (v >= (g->vaddr & ~(uint64_t)0xfff) && v < g->vaddr + g->memsz) {
				*vaddr = v;
				return 0;
			}
		}
	}
	return -ENOENT;
}

static int sym_read_note_build_id(Elf *e, uint8_t *id, uint32_t *len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	*len = 0;
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((char *)d->d_buf + noff, "GNU", 4) == 0) {
				*len = nh.n_descsz > 32 ? 32 : nh.n_descsz;
				memcpy(id, (char *)d->d_buf + doff, *len);
				return 0;
			}
		}
	}
	return -ENOENT;
}

static int sym_elf_open(const char *path, int *fd, Elf **e)
{
	if (!sym_elf_init())
		return -ENOEXEC;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	*e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!*e || elf_kind(*e) != ELF_K_ELF) {
		if (*e)
			elf_end(*e);
		close(*fd);
		return -ENOEXEC;
	}
	return 0;
}

int sym_elf_info(const char *path, struct sym_segment **segs, size_t *nsegs, uint8_t *build_id,
		 uint32_t *build_id_len)
{
	size_t nph, n = 0;
	Elf *e;
	int fd, ret;

	*segs = NULL;
	*nsegs = 0;
	ret = sym_elf_open(path, &fd, &e);
	if (ret)
		return ret;
	if (elf_getphdrnum(e, &nph) != 0) {
		ret = -ENOEXEC;
		goto out;
	}
	*segs = calloc(nph ? nph : 1, sizeof(**segs));
	if (!*segs) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		(*segs)[n++] = (struct sym_segment){ ph.p_vaddr, ph.p_offset, ph.p_filesz,
						     ph.p_memsz, ph.p_flags };
	}
	*nsegs = n;
	sym_read_note_build_id(e, build_id, build_id_len);
out:
	elf_end(e);
	close(fd);
	return ret;
}

static int sym_symbol_cmp(const void *a, const void *b)
{
	const struct sym_symbol *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(x->name, y->name);
}

/* Which alias names a function best: fewer leading underscores, then global, weak, local. */
static int sym_rank(const char *name, int bind)
{
	int u = 0;

	while (name[u] == '_')
		u++;
	return u * 4 + (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
}

/* Function symbols of .symtab and .dynsym of one ELF file into o->syms. Names are copied into
 * one block so the file can be closed; pointers are fixed up once the block stops growing. */
static int sym_load_symbols(struct sym_object *o, const char *path, bool *has_dwarf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *e;
	int fd, ret;

	ret = sym_elf_open(path, &fd, &e);
	if (ret)
		return ret;
	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		shstrndx = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *sname;

		if (!gelf_getshdr(scn, &sh))
			continue;
		sname = shstrndx ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
		if (sname && strcmp(sname, ".debug_info") == 0 && sh.sh_type != SHT_NOBITS)
			*has_dwarf = true;
		if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sy;
			const char *name;
			size_t len;
			int type;

			if (!gelf_getsym(d, i, &sy))
				break;
			type = GELF_ST_TYPE(sy.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sy.st_shndx == SHN_UNDEF ||
			    !sy.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, sy.st_name);
			if (!name || !*name)
				continue;
			len = strlen(name) + 1;
			if (o->strtab_len + len > o->strtab_cap) {
				size_t cap = o->strtab_cap ? o->strtab_cap * 2 : 65536;
				char *v;
				while (cap < o->strtab_len + len)
					cap *= 2;
				v = realloc(o->strtab, cap);
				if (!v)
					goto nomem;
				o->strtab = v;
				o->strtab_cap = cap;
			}
			if (o->nsyms % 1024 == 0) {
				struct sym_symbol *v = realloc(o->syms, (o->nsyms + 1024) * sizeof(*v));
				if (!v)
					goto nomem;
				o->syms = v;
			}
			memcpy(o->strtab + o->strtab_len, name, len);
			o->syms[o->nsyms++] = (struct sym_symbol){
				sy.st_value, sy.st_size, (const char *)(uintptr_t)o->strtab_len,
				sym_rank(name, GELF_ST_BIND(sy.st_info)) };
			o->strtab_len += len;
		}
	}
	elf_end(e);
	close(fd);
	return 0;
nomem:
	elf_end(e);
	close(fd);
	return -ENOMEM;
}

static void sym_finish_symbols(struct sym_object *o)
{
	size_t i, n = 0;

	for (i = 0; i < o->nsyms; i++)
		o->syms[i].name = o->strtab + (uintptr_t)o->syms[i].name;
	if (!o->nsyms)
		return;
	qsort(o->syms, o->nsyms, sizeof(o->syms[0]), sym_symbol_cmp);
	/* One symbol per address: the best-ranked alias sorts first. */
	for (i = 0; i < o->nsyms; i++)
		if (n == 0 || o->syms[n - 1].addr != o->syms[i].addr)
			o->syms[n++] = o->syms[i];
		else if (!o->syms[n - 1].size)
			o->syms[n - 1].size = o->syms[i].size;
	o->nsyms = n;
}

/* How many of n sorted records (stride bytes each, a uint64_t address first) start at or below
 * a: the one before that index is the candidate for a. */
static size_t sym_count_at_or_below(const void *base, size_t n, size_t stride, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		uint64_t start;
		memcpy(&start, (const char *)base + mid * stride, sizeof(start));
		if (start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const char *sym_lookup_func(const struct sym_object *o, uint64_t a)
{
	size_t lo = sym_count_at_or_below(o->syms, o->nsyms, sizeof(*o->syms), a);

	/* lo - 1 is the last symbol at or below a; a sized symbol must contain it. */
	if (lo == 0)
		return NULL;
	if (o->syms[lo - 1].size && a >= o->syms[lo - 1].addr + o->syms[lo - 1].size)
		return NULL;
	return o->syms[lo - 1].name;
}

/* ------------------------------------------------------------------ unwind table */

static int32_t sym_s32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* The section called name: its address and contents (NULL if absent or empty). */
static const uint8_t *sym_section(Elf *e, size_t shstrndx, const char *name, uint64_t *addr,
				  size_t *size)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *sname;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		sname = elf_strptr(e, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, name) || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		*addr = sh.sh_addr;
		*size = d->d_size;
		return d->d_buf;
	}
	return NULL;
}

/* Function extents of a stripped object from its unwind table: .eh_frame_hdr lists every FDE
 * by start address, and each FDE gives its length. Only the layout every x86-64 toolchain
 * writes is read (a table of datarel sdata4 pairs, FDEs with pcrel sdata4 addresses); another
 * layout leaves the object without extents, never with wrong ones. */
static int sym_load_fdes(struct sym_object *o, const char *path)
{
	const uint8_t *hdr, *ehf;
	uint64_t hdr_addr, ehf_addr;
	size_t hdr_size, ehf_size, shstrndx, n;
	Elf *e;
	int fd, ret = sym_elf_open(path, &fd, &e);

	if (ret)
		return ret;
	if (elf_getshdrstrndx(e, &shstrndx) != 0 ||
	    !(hdr = sym_section(e, shstrndx, ".eh_frame_hdr", &hdr_addr, &hdr_size)) ||
	    !(ehf = sym_section(e, shstrndx, ".eh_frame", &ehf_addr, &ehf_size)) ||
	    hdr_size < 12 || hdr[0] != 1 || hdr[2] != 0x03 || hdr[3] != 0x3b)
		goto out;
	n = (uint32_t)sym_s32(hdr + 8);
	if (n > (hdr_size - 12) / 8 || !(o->fns = calloc(n + 1, sizeof(*o->fns))))
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint64_t start = hdr_addr + (int64_t)sym_s32(hdr + 12 + 8 * i);
		uint64_t fde = hdr_addr + (int64_t)sym_s32(hdr + 16 + 8 * i), off = fde - ehf_addr;

		/* The FDE: length, CIE pointer, pc_begin (pcrel), pc_range. Its pc_begin must be
		 * the table's start, else the encoding is not the one assumed. */
		if (fde < ehf_addr || off + 16 > ehf_size ||
		    fde + 8 + (int64_t)sym_s32(ehf + off + 8) != start)
			continue;
		o->fns[o->nfns++] = (struct sym_range){ start, start + (uint32_t)sym_s32(ehf + off + 12) };
	}
out:
	elf_end(e);
	close(fd);
	return 0;
}

/* The start of the function holding a, from the unwind table; 0 with *found false if none. */
static uint64_t sym_lookup_fde(const struct sym_object *o, uint64_t a, bool *found)
{
	size_t lo = sym_count_at_or_below(o->fns, o->nfns, sizeof(*o->fns), a);

	*found = lo && a < o->fns[lo - 1].end;
	return *found ? o->fns[lo - 1].start : 0;
}

static void sym_warn_once(struct sym_object *o, const char *fmt, const char *what)
{
	if (o->broken || o->mismatch)
		return;
	fprintf(stderr, "fltrace: report: %s: ", o->path);
	fprintf(stderr, fmt, what);
	fputc('\n', stderr);
}

static void sym_object_load(struct sym_object *o)
{
	char dbg[512];
	struct stat st;
	bool dwarf = false, dbg_dwarf = false;
	int ret;

	o->loaded = true;
	ret = sym_elf_info(o->path, &o->segs, &o->nsegs, o->build_id, &o->build_id_len);
	if (ret) {
		sym_warn_once(o, "%s; its frames are named by object and offset", ret == -ENOENT ?
			      "no longer exists (changed or removed since recording)" :
			      "not a readable ELF object");
		o->broken = true;
		return;
	}
	if (sym_load_symbols(o, o->path, &dwarf))
		o->nsyms = 0;
	/* Separate debug info, found by build-id as gdb and addr2line do. */
	if (o->build_id_len >= 2) {
		int n = snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%02x/", o->build_id[0]);
		for (uint32_t i = 1; i < o->build_id_len && n < (int)sizeof(dbg) - 8; i++)
			n += snprintf(dbg + n, sizeof(dbg) - n, "%02x", o->build_id[i]);
		snprintf(dbg + n, sizeof(dbg) - n, ".debug");
		if (stat(dbg, &st) == 0) {
			o->debug_path = strdup(dbg);
			/* The debug file's .symtab names the static functions a stripped object lacks. */
			if (o->debug_path && sym_load_symbols(o, o->debug_path, &dbg_dwarf))
				o->nsyms = 0;
		}
	}
	sym_finish_symbols(o);
	/* No symbol table worth the name (a stripped object): functions from the unwind table. */
	if (!dbg_dwarf && !dwarf && sym_load_fdes(o, o->path))
		o->nfns = 0;
	if (dbg_dwarf)
		o->dwarf_path = o->debug_path;
	else if (dwarf)
		o->dwarf_path = o->path;
}

static int sym_object_get(struct symbolizer *s, const char *path)
{
	for (size_t i = s->nobj; i-- > 0;)
		if (strcmp(s->obj[i].path, path) == 0)
			return i;
	if (s->nobj == s->capobj) {
		size_t cap = s->capobj ? s->capobj * 2 : 16;
		struct sym_object *v = realloc(s->obj, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->obj = v;
		s->capobj = cap;
	}
	memset(&s->obj[s->nobj], 0, sizeof(s->obj[0]));
	s->obj[s->nobj].path = strdup(path);
	if (!s->obj[s->nobj].path)
		return -ENOMEM;
	sym_object_load(&s->obj[s->nobj]);
	return s->nobj++;
}

/* ------------------------------------------------------------------ frames */

static uint64_t sym_hash64(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6));
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

static int sym_hash_grow(struct symbolizer *s)
{
	size_t cap = s->hcap ? s->hcap * 2 : 1024;
	struct sym_key *v = malloc(cap * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		v[i].id = -1;
	for (size_t i = 0; i < s->hcap; i++) {
		size_t j;
		if (s->hash[i].id < 0)
			continue;
		for (j = sym_hash64(s->hash[i].a, s->hash[i].b) & (cap - 1); v[j].id >= 0;
		     j = (j + 1) & (cap - 1))
			;
		v[j] = s->hash[i];
	}
	free(s->hash);
	s->hash = v;
	s->hcap = cap;
	return 0;
}

/* Find or create the frame keyed (a, b). */
static int64_t sym_frame_get(struct symbolizer *s, uint64_t a, uint64_t b, bool *created)
{
	size_t j;

	*created = false;
	if ((s->hn + 1) * 2 > s->hcap && sym_hash_grow(s))
		return -ENOMEM;
	for (j = sym_hash64(a, b) & (s->hcap - 1); s->hash[j].id >= 0; j = (j + 1) & (s->hcap - 1))
		if (s->hash[j].a == a && s->hash[j].b == b)
			return s->hash[j].id;
	if (s->nfr == s->capfr) {
		size_t cap = s->capfr ? s->capfr * 2 : 1024;
		struct sym_frame_int *v = realloc(s->fr, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->fr = v;
		s->capfr = cap;
	}
	memset(&s->fr[s->nfr], 0, sizeof(s->fr[0]));
	s->hash[j] = (struct sym_key){ a, b, (int64_t)s->nfr };
	s->hn++;
	*created = true;
	return s->nfr++;
}

static void sym_frame_unknown(struct sym_frame *f, const char *lib)
{
	f->lib = lib;
	f->func = "??";
	f->code = "??:?";
	f->funcs = "??";
	f->nr_locs = 1;
	f->locs = &sym_unknown_loc;
	f->resolved = false;
}

/* The last resort name of a frame whose object is known: "object+0xoffset" (the offset in the
 * object, as objdump and addr2line count), kept for the symbolizer's lifetime. */
static const char *sym_offset_name(struct symbolizer *s, const char *lib, uint64_t off)
{
	const char *base = strrchr(lib, '/');
	char *p;

	if (asprintf(&p, "%s+0x%" PRIx64, base ? base + 1 : lib, off) < 0)
		return NULL;
	return sym_keep(s, p);
}

/* A frame known only by that name: no file, no line. */
static int sym_frame_offset_named(struct symbolizer *s, struct sym_frame *f, const char *lib,
				  uint64_t off)
{
	const char *name = sym_offset_name(s, lib, off);
	struct sym_loc *l = name ? malloc(sizeof(*l)) : NULL;

	if (!l)
		return -ENOMEM;
	*l = (struct sym_loc){ name, "??", 0 };
	f->locs = l;
	f->nr_locs = 1;
	f->func = f->funcs = name;
	return 0;
}

/* Intern a lib name for unresolved frames (pseudo paths like [vdso], or a vanished object). */
static const char *sym_lib_name(struct symbolizer *s, const char *path)
{
	for (size_t i = 0; i < s->nstr; i++)
		if (s->str[i][0] == '\x01' && strcmp(s->str[i] + 1, path) == 0)
			return s->str[i] + 1;
	{
		char *p = malloc(strlen(path) + 2);
		if (!p)
			return "??";
		p[0] = '\x01'; /* marks a lib name among the kept strings */
		strcpy(p + 1, path);
		return sym_keep(s, p) ? p + 1 : "??";
	}
}

static bool sym_build_id_matches(const struct sym_object *o, const struct maps_history *m)
{
	uint32_t len;
	const uint8_t *id = maps_build_id(m, o->path, &len);

	/* No record of it, or an object without a build-id: nothing to compare. */
	if (!id || !len || !o->build_id_len)
		return true;
	return len == o->build_id_len && memcmp(id, o->build_id, len) == 0;
}

int64_t sym_add(struct symbolizer *s, const struct maps_history *m, uint64_t ip, uint64_t t,
		bool is_return)
{
	uint64_t a = is_return && ip ? ip - 1 : ip, vaddr = 0;
	const struct maps_entry *e = maps_lookup(m, a, t);
	char path[4096];
	const char *lib = NULL;
	int oi = -1;
	int64_t id;
	bool created;

	if (e && e->path[0] == '/') {
		size_t len = strlen(e->path);
		const char *del = " (deleted)";
		snprintf(path, sizeof(path), "%s", e->path);
		/* A replaced file: look at what is there now; its build-id decides if it is usable. */
		if (len > strlen(del) && strcmp(e->path + len - strlen(del), del) == 0)
			path[len - strlen(del)] = 0;
		oi = sym_object_get(s, path);
		if (oi < 0)
			return oi;
		if (!s->obj[oi].broken && !s->obj[oi].mismatch && !sym_build_id_matches(&s->obj[oi], m)) {
			sym_warn_once(&s->obj[oi], "%s", "build-id differs from the recorded one (the "
				      "file changed since recording); its frames are named by object and offset");
			s->obj[oi].mismatch = true;
		}
		if (s->obj[oi].broken || s->obj[oi].mismatch ||
		    sym_map_to_vaddr(s->obj[oi].segs, s->obj[oi].nsegs, e->start, e->offset,
				     e->perms, a, &vaddr)) {
			lib = s->obj[oi].path;
			oi = -1;
		}
	} else if (e) {
		lib = e->path[0] ? e->path : "[anon]";
	} else {
		/* No snapshot held it (mapped and unmapped between snapshots): the object records
		 * give a load bias; accept the object whose segments contain the address. */
		for (size_t i = maps_nr_objects(m); i-- > 0 && oi < 0;) {
			const struct ft_object *ob = maps_object(m, i);
			int k;
			/* The vDSO is recorded by the loader's name for it, no file to read. */
			if (!ob->path[0] || a < ob->base || !strncmp(ob->path, "linux-vdso", 10) ||
			    !strncmp(ob->path, "linux-gate", 10))
				continue;
			k = sym_object_get(s, ob->path);
			if (k < 0)
				return k;
			if (s->obj[k].broken || s->obj[k].mismatch)
				continue;
			for (size_t g = 0; g < s->obj[k].nsegs; g++) {
				const struct sym_segment *sg = &s->obj[k].segs[g];
				if (a - ob->base >= sg->vaddr && a - ob->base < sg->vaddr + sg->memsz) {
					oi = k;
					vaddr = a - ob->base;
					break;
				}
			}
		}
		if (oi < 0)
			lib = "??";
	}
	if (oi >= 0)
		id = sym_frame_get(s, (uint64_t)oi + 1, vaddr, &created);
	else
		id = sym_frame_get(s, (uint64_t)(uintptr_t)sym_lib_name(s, lib) | (1ull << 63),
				   ip ^ (is_return ? 1ull << 63 : 0), &created);
	if (id < 0 || !created)
		return id;
	s->fr[id].pub.ip = ip;
	s->fr[id].pub.obj_addr = vaddr;
	s->fr[id].obj = oi;
	if (oi < 0) {
		sym_frame_unknown(&s->fr[id].pub, sym_lib_name(s, lib));
		/* Never a bare ?? where the object is known (changed, vanished, [vdso]...): the
		 * offset in its mapping, which is the file offset for a file. */
		if (e && strcmp(s->fr[id].pub.lib, "??") &&
		    sym_frame_offset_named(s, &s->fr[id].pub, s->fr[id].pub.lib,
					   a - e->start + e->offset))
			return -ENOMEM;
		return id;
	}
	s->fr[id].pub.lib = s->obj[oi].path;
	s->fr[id].pub.resolved = true;
	{
		struct sym_object *o = &s->obj[oi];
		if (o->npend == o->cappend) {
			size_t cap = o->cappend ? o->cappend * 2 : 64;
			int64_t *v = realloc(o->pend, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			o->pend = v;
			o->cappend = cap;
		}
		o->pend[o->npend++] = id;
	}
	return id;
}

const struct sym_frame *sym_frame(const struct symbolizer *s, int64_t id)
{
	return id >= 0 && (size_t)id < s->nfr ? &s->fr[id].pub : NULL;
}

size_t sym_nr_frames(const struct symbolizer *s)
{
	return s->nfr;
}

/* ------------------------------------------------------------------ addr2line */

/* Run addr2line on path with the addresses in a temporary file as its stdin: it reads them at
 * its own pace while we read its output, so neither side can block the other. Returns the whole
 * output (NUL-terminated) or NULL. */
static char *sym_run_addr2line(const char *path, const uint64_t *addrs, size_t n)
{
	char tmpl[] = "/tmp/fltrace-a2l-XXXXXX";
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fd, pfd[2], status;
	pid_t pid;
	FILE *f;

	fd = mkstemp(tmpl);
	if (fd < 0)
		return NULL;
	unlink(tmpl);
	f = fdopen(fd, "w+");
	if (!f) {
		close(fd);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%" PRIx64 "\n", addrs[i]);
	if (fflush(f) || fseek(f, 0, SEEK_SET) || pipe2(pfd, O_CLOEXEC)) {
		fclose(f);
		return NULL;
	}
	pid = fork();
	if (pid == 0) {
		dup2(fileno(f), 0);
		dup2(pfd[1], 1);
		execlp("addr2line", "addr2line", "-a", "-f", "-i", "-C", "-e", path, (char *)NULL);
		_exit(127);
	}
	fclose(f);
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return NULL;
	}
	for (;;) {
		ssize_t r;
		if (cap - len < 65536) {
			char *v = realloc(buf, cap ? cap * 2 : 1 << 20);
			if (!v)
				break;
			buf = v;
			cap = cap ? cap * 2 : 1 << 20;
		}
		r = read(pfd[0], buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += r;
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!buf || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		static bool warned;
		if (!warned && WIFEXITED(status) && WEXITSTATUS(status) == 127)
			fprintf(stderr, "fltrace: report: addr2line not found; file:line columns are "
				"??:?; install binutils\n");
		warned = true;
		free(buf);
		return NULL;
	}
	buf[len] = 0;
	return buf;
}

static int sym_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* "file:line (discriminator N)" or "??:0" -> file and line. */
static void sym_parse_fileline(char *s, const char **file, unsigned *line)
{
	char *p = strstr(s, " (discriminator");
	char *colon;

	if (p)
		*p = 0;
	colon = strrchr(s, ':');
	*line = 0;
	*file = "??";
	if (!colon)
		return;
	*colon = 0;
	if (strcmp(s, "??") != 0 && *s)
		*file = s;
	if (colon[1] != '?')
		*line = strtoul(colon + 1, NULL, 10);
}

/* Build code/funcs strings of a frame from its locations. */
static int sym_frame_finish(struct symbolizer *s, struct sym_frame *f)
{
	size_t lc = 1, lf = 1;
	char *code, *funcs, *pc, *pf;

	for (unsigned i = 0; i < f->nr_locs; i++) {
		lc += strlen(f->locs[i].file) + 16;
		lf += strlen(f->locs[i].func) + 3;
	}
	pc = code = malloc(lc);
	pf = funcs = malloc(lf);
	if (!code || !funcs) {
		free(code);
		free(funcs);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < f->nr_locs; i++) {
		const struct sym_loc *l = &f->locs[i];
		if (i) {
			pc = stpcpy(pc, "<<<");
			pf = stpcpy(pf, "<<<");
		}
		if (l->line)
			pc += sprintf(pc, "%s:%u", l->file, l->line);
		else
			pc += sprintf(pc, "%s:?", l->file);
		pf = stpcpy(pf, l->func);
	}
	f->code = sym_keep(s, code);
	f->funcs = sym_keep(s, funcs);
	if (!f->code || !f->funcs) {
		if (!f->code)
			free(funcs);
		return -ENOMEM;
	}
	f->func = f->locs[f->nr_locs - 1].func;
	return 0;
}

/* Per address of one object: its parsed addr2line block. */
struct sym_block {
	uint64_t addr;
	unsigned n;
	struct sym_loc *locs;
};

static int sym_block_cmp(const void *a, const void *b)
{
	const struct sym_block *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int sym_resolve_object(struct symbolizer *s, struct sym_object *o)
{
	uint64_t *addrs;
	struct sym_block *blk = NULL;
	size_t n = 0, nblk = 0, capblk = 0;
	char *out = NULL, *line, *save = NULL;
	int ret = 0;

	addrs = malloc(o->npend * sizeof(*addrs));
	if (!addrs)
		return -ENOMEM;
	for (size_t i = 0; i < o->npend; i++)
		addrs[i] = s->fr[o->pend[i]].pub.obj_addr;
	qsort(addrs, o->npend, sizeof(*addrs), sym_u64_cmp);
	for (size_t i = 0; i < o->npend; i++)
		if (!n || addrs[n - 1] != addrs[i])
			addrs[n++] = addrs[i];
	if (o->dwarf_path)
		out = sym_run_addr2line(o->dwarf_path, addrs, n);
	if (out)
		out = sym_keep(s, out);
	/* Parse: "0x<addr>" then (function, file:line) pairs, innermost inline first. */
	for (line = out ? strtok_r(out, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '0' && line[1] == 'x') {
			if (nblk == capblk) {
				size_t cap = capblk ? capblk * 2 : 256;
				struct sym_block *v = realloc(blk, cap * sizeof(*v));
				if (!v) {
					ret = -ENOMEM;
					goto out;
				}
				blk = v;
				capblk = cap;
			}
			blk[nblk++] = (struct sym_block){ strtoull(line, NULL, 16), 0, NULL };
			continue;
		}
		if (!nblk)
			continue;
		{
			struct sym_block *b = &blk[nblk - 1];
			char *fl = strtok_r(NULL, "\n", &save);
			struct sym_loc *v;
			if (!fl)
				break;
			v = realloc(b->locs, (b->n + 1) * sizeof(*v));
			if (!v) {
				ret = -ENOMEM;
				goto out;
			}
			b->locs = v;
			v[b->n].func = strcmp(line, "??") ? line : "??";
			sym_parse_fileline(fl, &v[b->n].file, &v[b->n].line);
			b->n++;
		}
	}
	if (nblk)
		qsort(blk, nblk, sizeof(*blk), sym_block_cmp);
	for (size_t i = 0; i < o->npend; i++) {
		struct sym_frame *f = &s->fr[o->pend[i]].pub;
		struct sym_block key = { .addr = f->obj_addr }, *b = NULL;
		const char *symname = sym_lookup_func(o, f->obj_addr);
		struct sym_loc *locs;
		unsigned nl;

		if (nblk)
			b = bsearch(&key, blk, nblk, sizeof(*blk), sym_block_cmp);
		nl = b && b->n ? b->n : 1;
		locs = malloc(nl * sizeof(*locs));
		if (!locs) {
			ret = -ENOMEM;
			goto out;
		}
		if (b && b->n)
			memcpy(locs, b->locs, nl * sizeof(*locs));
		else
			locs[0] = sym_unknown_loc;
		/* Debug info names the function demangled; without it the symbol table does
		 * (.symtab, of the object or of its debug file, then .dynsym); without either, the
		 * object and the offset of the function's entry (from the unwind table), or of the
		 * address itself. */
		if (strcmp(locs[nl - 1].func, "??") == 0 && symname) {
			locs[nl - 1].func = symname;
		} else if (strcmp(locs[nl - 1].func, "??") == 0) {
			bool found;
			uint64_t entry = sym_lookup_fde(o, f->obj_addr, &found);
			locs[nl - 1].func = sym_offset_name(s, o->path, found ? entry : f->obj_addr);
		}
		if (!locs[nl - 1].func) {
			free(locs);
			ret = -ENOMEM;
			goto out;
		}
		f->locs = locs;
		f->nr_locs = nl;
		ret = sym_frame_finish(s, f);
		if (ret)
			goto out;
	}
	o->npend = 0;
out:
	for (size_t i = 0; i < nblk; i++)
		free(blk[i].locs);
	free(blk);
	free(addrs);
	return ret;
}

int sym_resolve(struct symbolizer *s)
{
	for (size_t i = 0; i < s->nobj; i++) {
		int ret;
		if (!s->obj[i].npend)
			continue;
		ret = sym_resolve_object(s, &s->obj[i]);
		if (ret)
			return ret;
	}
	return 0;
}
