/* --keep-local: pages of allocations made at chosen sites are never evicted. The sites come as code
 * ranges of the executable; an allocation whose stack returns into one is kept; its pages, as each
 * comes in, stay out of the policy's queues (PG_KEPT), so no policy ever picks them. */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lock.h"
#include "keep.h"

#define KEEP_RANGES 256   /* code ranges of the kept sites */
#define KEEP_ALLOCS 4096  /* live kept allocations at once; more are counted (keep_lost) */
/* Room an instruction may need resident (the -L floor, 16 pages): kept pages never take it. */
#define KEEP_ROOM_PAGES 16

struct keep_span {
	uintptr_t lo, hi; /* [lo, hi) */
};

static struct {
	bool on;
	struct keep_span code[KEEP_RANGES]; /* run-time addresses, sorted */
	unsigned ncode;
	struct rt_spinlock lock;            /* allocs: program threads add and remove, handlers look up */
	struct keep_span allocs[KEEP_ALLOCS]; /* page-aligned, sorted, disjoint */
	unsigned nallocs;
} kl;

static int hexval(const char **s, uintptr_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(*s, &end, 16);
	if (end == *s || errno)
		return -EINVAL;
	*s = end;
	*out = (uintptr_t)v;
	return 0;
}

/* Where the executable is loaded: its program headers' address less their link-time address. */
static uintptr_t keep_exe_base(void)
{
	const Elf64_Phdr *ph = (const Elf64_Phdr *)getauxval(AT_PHDR);
	unsigned long n = getauxval(AT_PHNUM);
	for (unsigned long i = 0; ph && i < n; i++)
		if (ph[i].p_type == PT_PHDR)
			return (uintptr_t)ph - ph[i].p_vaddr;
	for (unsigned long i = 0; ph && i < n; i++) /* no PT_PHDR: the headers follow the ELF header */
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
			return (uintptr_t)ph - sizeof(Elf64_Ehdr) - ph[i].p_vaddr;
	return 0;
}

/* Insertion by lo: a few hundred ranges at most, and qsort may allocate. */
static void keep_code_insert(struct keep_span s)
{
	unsigned i = kl.ncode++;
	for (; i > 0 && kl.code[i - 1].lo > s.lo; i--)
		kl.code[i] = kl.code[i - 1];
	kl.code[i] = s;
}

int keep_init(const char *spec)
{
	kl.on = false;
	kl.ncode = 0;
	kl.nallocs = 0;
	if (!spec || !*spec)
		return 0;
	const char *bar = strchr(spec, '|');
	char exe[PATH_MAX];
	ssize_t len = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof(exe) - 1);
	if (!bar)
		return -EINVAL;
	/* Another program of the command's tree (a shell that runs it): its sites are not these. */
	if (len < 0 || (size_t)len != (size_t)(bar - spec) || memcmp(exe, spec, (size_t)len))
		return 0;
	uintptr_t base = keep_exe_base();
	for (const char *s = bar + 1; *s;) {
		uintptr_t lo, hi;
		if (kl.ncode == KEEP_RANGES || hexval(&s, &lo) || *s++ != '-' || hexval(&s, &hi) || hi <= lo)
			return -EINVAL;
		keep_code_insert((struct keep_span){ base + lo, base + hi });
		if (*s == ',')
			s++;
		else if (*s)
			return -EINVAL;
	}
	kl.on = kl.ncode > 0;
	return 0;
}

bool keep_on(void)
{
	return kl.on;
}

/* The index of the first span whose hi is above a, in a sorted disjoint array. */
static unsigned span_find(const struct keep_span *v, unsigned n, uintptr_t a)
{
	unsigned lo = 0, hi = n;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (v[mid].hi <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool keep_stack_matches(const uint64_t *ips, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uintptr_t call = (uintptr_t)ips[i] - 1; /* a return address: the call is just before it */
		/* A few ranges, perhaps overlapping (a line inlined in another): each is looked at. */
		for (unsigned k = 0; k < kl.ncode; k++)
			if (kl.code[k].lo <= call && call < kl.code[k].hi)
				return true;
	}
	return false;
}

void keep_add(uintptr_t p, size_t len)
{
	uintptr_t mask = rt.page_size - 1;
	struct keep_span s = { p & ~mask, (p + (len ? len : 1) + mask) & ~mask };
	rt_spin_lock(&kl.lock, LOCK_KEEP);
	unsigned i = span_find(kl.allocs, kl.nallocs, s.lo);
	/* Overlapping spans (two kept allocations on one page) merge. */
	while (i < kl.nallocs && kl.allocs[i].lo < s.hi) {
		s.lo = kl.allocs[i].lo < s.lo ? kl.allocs[i].lo : s.lo;
		s.hi = kl.allocs[i].hi > s.hi ? kl.allocs[i].hi : s.hi;
		memmove(&kl.allocs[i], &kl.allocs[i + 1], (kl.nallocs - i - 1) * sizeof(s));
		kl.nallocs--;
	}
	bool room = kl.nallocs < KEEP_ALLOCS;
	if (room) {
		memmove(&kl.allocs[i + 1], &kl.allocs[i], (kl.nallocs - i) * sizeof(s));
		kl.allocs[i] = s;
		kl.nallocs++;
	}
	rt_spin_unlock(&kl.lock, LOCK_KEEP);
	atomic_fetch_add(room ? &rt.stats.keep_allocs : &rt.stats.keep_lost, 1);
}

void keep_remove(uintptr_t p, size_t len)
{
	if (!kl.on)
		return;
	uintptr_t mask = rt.page_size - 1;
	rt_spin_lock(&kl.lock, LOCK_KEEP);
	unsigned i = span_find(kl.allocs, kl.nallocs, p & ~mask);
	if (!len) { /* a free: the span holding p goes (its other allocations, if merged, with it) */
		if (i < kl.nallocs && kl.allocs[i].lo <= p) {
			memmove(&kl.allocs[i], &kl.allocs[i + 1], (kl.nallocs - i - 1) * sizeof(kl.allocs[0]));
			kl.nallocs--;
		}
		rt_spin_unlock(&kl.lock, LOCK_KEEP);
		return;
	}
	uintptr_t lo = p & ~mask, hi = (p + len + mask) & ~mask;
	while (i < kl.nallocs && kl.allocs[i].lo < hi) {
		struct keep_span *s = &kl.allocs[i];
		if (s->lo < lo && s->hi > hi && kl.nallocs < KEEP_ALLOCS) { /* a hole in the middle */
			memmove(s + 1, s, (kl.nallocs - i) * sizeof(*s));
			kl.nallocs++;
			s[0].hi = lo;
			s[1].lo = hi;
			break;
		}
		if (s->lo < lo) {
			s->hi = lo;
			i++;
		} else if (s->hi > hi) {
			s->lo = hi;
			break;
		} else {
			memmove(s, s + 1, (kl.nallocs - i - 1) * sizeof(*s));
			kl.nallocs--;
		}
	}
	rt_spin_unlock(&kl.lock, LOCK_KEEP);
}

bool keep_page_in(uintptr_t page, uint32_t *pg)
{
	if (pg_state(*pg) != PAGE_PRESENT) /* a prefetcher's staged page: the policy's until touched */
		return false;
	rt_spin_lock(&kl.lock, LOCK_KEEP);
	unsigned i = span_find(kl.allocs, kl.nallocs, page);
	bool kept = i < kl.nallocs && kl.allocs[i].lo <= page;
	rt_spin_unlock(&kl.lock, LOCK_KEEP);
	if (!kept)
		return false;
	uint64_t cap = rt.cfg.localmem >> rt.page_shift;
	if (pagestate_kept() + KEEP_ROOM_PAGES >= cap) {
		atomic_fetch_add(&rt.stats.keep_over, 1);
		return false;
	}
	pagestate_keep(page, pg);
	return true;
}

void keep_fork_child(void)
{
	rt_spin_reset(&kl.lock);
}
