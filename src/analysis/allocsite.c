/* Faults by allocation site: each fault is matched to the allocation live at its address when it
 * happened (FT_REC_ALLOC/FREE, in trace order), and faults are summed per allocation stack. */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "allocsite.h"

/* A live allocation: [start, end) and its site. Live ranges never overlap, so a tree ordered by
 * "wholly below / wholly above" finds the one holding an address with tfind. */
struct as_live {
	uint64_t start, end;
	uint32_t site;
};

static int live_cmp(const void *a, const void *b)
{
	const struct as_live *x = a, *y = b;
	if (x->end <= y->start)
		return -1;
	if (y->end <= x->start)
		return 1;
	return 0;
}

/* (site, fault stack) -> faults: the code that faulted on each site's objects. */
struct as_hit {
	uint64_t key; /* site << 32 | fault stack id; 0 = free slot (site 0 is never keyed with 0) */
	uint64_t count, time_ns;
	uint8_t origin;
	uint8_t cls;  /* as_class: a site's stack has a hit for each class of its faults */
};

/* A heap page's first recorded allocation (FT_ALLOC_PAGE): its site holds the page's faults while
 * no live recorded allocation does. Open addressing on the page number; 0 = free slot. */
struct as_claim {
	uint64_t page1;  /* page number + 1 */
	uint32_t site;
};

struct as_claims {
	struct as_claim *v;
	size_t n, cap;
};

struct allocsites {
	struct as_claims claims;  /* the latest claim of each page, in trace order */
	/* Faults on no recorded allocation, held until their thread's next allocation record: the
	 * allocator touches memory before it returns it (calloc zeroes, realloc copies), so such a
	 * fault comes just before the record of the allocation it belongs to. */
	struct ft_fault *pending;
	size_t npending, cappending;
	struct as_site *sites; /* [0]: no recorded allocation, [1]: allocations without a stack */
	size_t nsites, capsites;
	struct as_stack {
		const struct ft_stack *st; /* of the trace being read: valid until it is closed */
		uint32_t site1;            /* its site + 1, 0 = none yet */
	} *stacks;                         /* by stack id */
	size_t cap_stack;
	void *live;                     /* tsearch root */
	struct as_hit *hits;
	size_t nhits, caphits;
	uint64_t total, attributed;
};

static size_t as_claim_slot(const struct as_claim *v, size_t cap, uint64_t page1)
{
	size_t j = (page1 * 0x9e3779b97f4a7c15ull >> 17) & (cap - 1);

	while (v[j].page1 && v[j].page1 != page1)
		j = (j + 1) & (cap - 1);
	return j;
}

/* Sets the page's claim. */
static int as_claim(struct as_claims *c, uint64_t page, uint32_t site)
{
	if ((c->n + 1) * 2 > c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 4096;
		struct as_claim *n = calloc(cap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < c->cap; i++)
			if (c->v[i].page1)
				n[as_claim_slot(n, cap, c->v[i].page1)] = c->v[i];
		free(c->v);
		c->v = n;
		c->cap = cap;
	}
	size_t j = as_claim_slot(c->v, c->cap, page + 1);
	if (!c->v[j].page1)
		c->n++;
	c->v[j] = (struct as_claim){ page + 1, site };
	return 0;
}

/* The page's claim, or false. */
static bool as_claimed(const struct as_claims *c, uint64_t page, uint32_t *site)
{
	if (!c->cap)
		return false;
	const struct as_claim *e = &c->v[as_claim_slot(c->v, c->cap, page + 1)];
	*site = e->site;
	return e->page1 != 0;
}

static void as_claims_free(struct as_claims *c)
{
	free(c->v);
	*c = (struct as_claims){ 0 };
}

static int as_grow(void **v, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *n = realloc(*v, c * size);
	if (!n)
		return -ENOMEM;
	memset((char *)n + *cap * size, 0, (c - *cap) * size);
	*v = n;
	*cap = c;
	return 0;
}

static int as_new_site(struct allocsites *a, const uint64_t *ips, uint32_t depth, uint64_t t, uint8_t kind)
{
	if (as_grow((void **)&a->sites, &a->capsites, a->nsites + 1, sizeof(*a->sites)))
		return -ENOMEM;
	struct as_site *s = &a->sites[a->nsites];
	memset(s, 0, sizeof(*s));
	if (depth) {
		s->ips = malloc(depth * sizeof(*ips));
		if (!s->ips)
			return -ENOMEM;
		memcpy(s->ips, ips, depth * sizeof(*ips));
	}
	s->depth = depth;
	s->time_ns = t;
	s->kind = kind;
	return (int)a->nsites++;
}

struct allocsites *allocsites_new(void)
{
	struct allocsites *a = calloc(1, sizeof(*a));
	if (!a || as_new_site(a, NULL, 0, 0, 0) < 0 || as_new_site(a, NULL, 0, 0, 0) < 0) {
		allocsites_free(a);
		return NULL;
	}
	return a;
}

static void live_free(void *p)
{
	free(p);
}

void allocsites_free(struct allocsites *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nsites; i++) {
		free(a->sites[i].ips);
		free(a->sites[i].frames);
	}
	free(a->sites);
	free(a->stacks);
	tdestroy(a->live, live_free);
	free(a->hits);
	as_claims_free(&a->claims);
	free(a->pending);
	free(a);
}

/* The site of an allocation stack of the current trace. */
static int as_site_of_stack(struct allocsites *a, uint32_t stack_id, uint64_t time_ns, uint8_t kind)
{
	if (stack_id == FT_NO_STACK || stack_id >= a->cap_stack || !a->stacks[stack_id].st)
		return 1;
	struct as_stack *e = &a->stacks[stack_id];
	if (e->site1)
		return (int)e->site1 - 1;
	int s = as_new_site(a, e->st->ips, e->st->depth, time_ns, kind);
	if (s >= 0)
		a->stacks[stack_id].site1 = (uint32_t)s + 1; /* sites may have moved, stacks not */
	return s;
}

static int as_site_of(struct allocsites *a, const struct ft_alloc *al)
{
	return as_site_of_stack(a, al->stack_id, al->time_ns, al->kind);
}

/* A stack record, kept by id. */
static int as_stack_add(struct allocsites *a, const struct ft_stack *st)
{
	if (as_grow((void **)&a->stacks, &a->cap_stack, (size_t)st->id + 1, sizeof(*a->stacks)))
		return -ENOMEM;
	a->stacks[st->id] = (struct as_stack){ st, 0 };
	return 0;
}


/* Forgets every live range overlapping [start, end), keeping the parts outside it. */
static int live_cut(struct allocsites *a, uint64_t start, uint64_t end)
{
	struct as_live key = { start, end, 0 };
	void **found;
	while ((found = tfind(&key, &a->live, live_cmp))) {
		struct as_live *l = *found, keep = *l;
		tdelete(l, &a->live, live_cmp);
		free(l);
		struct as_live parts[2] = { { keep.start, start, keep.site }, { end, keep.end, keep.site } };
		for (int i = 0; i < 2; i++) {
			if (parts[i].start >= parts[i].end)
				continue;
			struct as_live *n = malloc(sizeof(*n));
			if (!n || !tsearch(n, &a->live, live_cmp)) {
				free(n);
				return -ENOMEM;
			}
			*n = parts[i];
		}
	}
	return 0;
}

static int as_alloc(struct allocsites *a, const struct ft_alloc *al, uint64_t page_size)
{
	int site = as_site_of(a, al);
	if (site < 0)
		return site;
	a->sites[site].objects++;
	a->sites[site].bytes += al->size;
	if (!al->size)
		return 0;
	/* Only small allocations claim pages (allocs.c): a big one flagged so is a damaged record,
	 * and would claim a page for every page of its size. */
	if ((al->flags & FT_ALLOC_PAGE) && al->size < FT_ALLOC_BIG)
		for (uint64_t pg = al->addr / page_size; pg <= (al->addr + al->size - 1) / page_size; pg++)
			if (as_claim(&a->claims, pg, (uint32_t)site))
				return -ENOMEM;
	/* A newer allocation over an older one means the older one's end was not recorded. */
	if (live_cut(a, al->addr, al->addr + al->size))
		return -ENOMEM;
	struct as_live *n = malloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	*n = (struct as_live){ al->addr, al->addr + al->size, (uint32_t)site };
	if (!tsearch(n, &a->live, live_cmp)) {
		free(n);
		return -ENOMEM;
	}
	return 0;
}

static int as_free(struct allocsites *a, const struct ft_free *fr)
{
	if (fr->len)
		return live_cut(a, fr->addr, fr->addr + fr->len);
	struct as_live key = { fr->addr, fr->addr + 1, 0 };
	void **found = tfind(&key, &a->live, live_cmp);
	if (found && (*(struct as_live **)found)->start == fr->addr) {
		struct as_live *l = *found;
		tdelete(l, &a->live, live_cmp);
		free(l);
	}
	return 0;
}

static int as_pending_settle(struct allocsites *a, const struct ft_file_header *hdr, uint32_t tid);

int allocsites_record(struct allocsites *a, const struct ft_file_header *hdr,
		      const struct ft_rec_hdr *h)
{
	switch (h->type) {
	case FT_REC_STACK:
		return as_stack_add(a, (const void *)h);
	case FT_REC_ALLOC: {
		const struct ft_alloc *al = (const void *)h;
		int ret = as_alloc(a, al, hdr->page_size ? hdr->page_size : 4096);
		return ret || !a->npending ? ret : as_pending_settle(a, hdr, al->tid);
	}
	case FT_REC_FREE:
		return as_free(a, (const void *)h);
	}
	return 0;
}

static size_t as_hit_hash(uint64_t key, uint8_t cls, size_t cap)
{
	return ((key ^ (uint64_t)cls << 56) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

static struct as_hit *as_hit_slot(struct allocsites *a, uint64_t key, uint8_t cls)
{
	if (a->nhits * 2 >= a->caphits) {
		size_t cap = a->caphits ? a->caphits * 2 : 1024;
		struct as_hit *n = calloc(cap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; i < a->caphits; i++) {
			if (!a->hits[i].key)
				continue;
			size_t j = as_hit_hash(a->hits[i].key, a->hits[i].cls, cap);
			while (n[j].key)
				j = (j + 1) & (cap - 1);
			n[j] = a->hits[i];
		}
		free(a->hits);
		a->hits = n;
		a->caphits = cap;
	}
	size_t j = as_hit_hash(key, cls, a->caphits);
	while (a->hits[j].key && (a->hits[j].key != key || a->hits[j].cls != cls))
		j = (j + 1) & (a->caphits - 1);
	if (!a->hits[j].key) {
		a->hits[j].key = key;
		a->hits[j].cls = cls;
		a->nhits++;
	}
	return &a->hits[j];
}

unsigned as_class(const struct ft_fault *f)
{
	/* A kind this build does not know is drawn as a re-fetch, as the flamegraph of faults does. */
	unsigned kind = f->kind <= FT_KIND_PREFETCH ? f->kind : FT_KIND_REFETCH;
	unsigned access = (f->flags & FT_FLAG_WP) ? 2 : (f->flags & FT_FLAG_WRITE) ? 1 : 0;
	return (kind * 2 + (f->origin == FT_ORIGIN_SYSCALL)) * 3 + access;
}

void as_class_fields(unsigned cls, uint8_t *kind, uint8_t *origin, uint16_t *flags)
{
	unsigned access = cls % 3;
	*kind = (uint8_t)(cls / 6);
	*origin = (cls / 3) % 2 ? FT_ORIGIN_SYSCALL : FT_ORIGIN_USER;
	*flags = access == 2 ? FT_FLAG_WP : access == 1 ? FT_FLAG_WRITE : 0;
}

/* The site of the memory a fault hit now: a live recorded allocation, else the page's claim. */
static uint32_t as_site_at(struct allocsites *a, const struct ft_file_header *hdr,
			   const struct ft_fault *f)
{
	uint64_t ps = hdr->page_size ? hdr->page_size : 4096;
	struct as_live key = { f->addr, f->addr + (uint64_t)(f->pages ? f->pages : 1) * ps, 0 };
	void **found = tfind(&key, &a->live, live_cmp);
	uint32_t site = 0;

	if (found)
		return (*(struct as_live **)found)->site;
	as_claimed(&a->claims, f->addr / ps, &site);
	return site;
}

static int as_account(struct allocsites *a, const struct ft_fault *f, uint32_t site)
{
	struct as_site *s = &a->sites[site];
	uint64_t n = f->pages ? f->pages : 1;
	s->faults += n;
	if (f->kind == FT_KIND_ZERO)
		s->zero += n;
	else if (f->kind == FT_KIND_REFETCH)
		s->refetch += n;
	else
		s->other += n;
	unsigned cls = as_class(f);
	s->by_class[cls] += n;
	a->total += n;
	if (site)
		a->attributed += n;
	if (f->stack_id == FT_NO_STACK || f->stack_id >= a->cap_stack || !a->stacks[f->stack_id].st)
		return 0;
	/* +1: site 0 with stack 0 must not be the free-slot key. */
	struct as_hit *hit = as_hit_slot(a, ((uint64_t)site << 32 | f->stack_id) + 1, (uint8_t)cls);
	if (!hit)
		return -ENOMEM;
	if (!hit->count)
		hit->time_ns = f->time_ns;
	hit->count += n;
	hit->origin = f->origin;
	return 0;
}

int allocsites_fault(struct allocsites *a, const struct ft_file_header *hdr, const struct ft_fault *f)
{
	uint32_t site = as_site_at(a, hdr, f);

	if (site)
		return as_account(a, f, site);
	if (as_grow((void **)&a->pending, &a->cappending, a->npending + 1, sizeof(*a->pending)))
		return -ENOMEM;
	a->pending[a->npending++] = *f;
	return 0;
}

/* The held faults of a thread (tid 0: of every thread) are matched again, now that it made an
 * allocation (or the trace ended), and accounted. */
static int as_pending_settle(struct allocsites *a, const struct ft_file_header *hdr, uint32_t tid)
{
	size_t keep = 0;
	int ret = 0;

	for (size_t i = 0; i < a->npending; i++) {
		const struct ft_fault *f = &a->pending[i];
		if (tid && f->tid != tid)
			a->pending[keep++] = *f;
		else if (!ret)
			ret = as_account(a, f, as_site_at(a, hdr, f));
	}
	a->npending = keep;
	return ret;
}

/* The trace is about to be closed: its stacks go, the hits keep the frames they need. */
static int as_hit_frames(struct allocsites *a, struct symbolizer *sym, const struct maps_history *m)
{
	for (size_t i = 0; i < a->caphits; i++) {
		struct as_hit *h = &a->hits[i];
		if (!h->key)
			continue;
		uint64_t k = h->key - 1;
		uint32_t site = (uint32_t)(k >> 32), stack = (uint32_t)k;
		const struct ft_stack *st = a->stacks[stack].st;
		struct as_site *s = &a->sites[site];
		/* The callsite: the first frame with a known source line, found after resolving; keep
		 * the first few frames' ids. */
		uint32_t n = st->depth < AS_CALLSITE_FRAMES ? st->depth : AS_CALLSITE_FRAMES;
		if (as_grow((void **)&s->calls, &s->capcalls, s->ncalls + 1, sizeof(*s->calls)))
			return -ENOMEM;
		struct as_call *c = &s->calls[s->ncalls++];
		c->count = h->count;
		c->cls = h->cls;
		c->nframes = n;
		for (uint32_t k2 = 0; k2 < n; k2++) {
			bool ret_addr = k2 > 0 || h->origin != FT_ORIGIN_USER;
			c->frames[k2] = sym_add(sym, m, st->ips[k2], h->time_ns, ret_addr);
			if (c->frames[k2] < 0)
				return (int)c->frames[k2];
		}
	}
	return 0;
}

int allocsites_symbolize(struct allocsites *a, const struct ft_file_header *hdr,
			 struct symbolizer *sym, const struct maps_history *m)
{
	int ret = as_pending_settle(a, hdr, 0);

	if (ret)
		return ret;
	for (size_t i = 2; i < a->nsites; i++) {
		struct as_site *s = &a->sites[i];
		if (s->frames || !s->depth)
			continue;
		s->frames = malloc(s->depth * sizeof(*s->frames));
		if (!s->frames)
			return -ENOMEM;
		for (uint32_t k = 0; k < s->depth; k++) {
			s->frames[k] = sym_add(sym, m, s->ips[k], s->time_ns, true);
			if (s->frames[k] < 0)
				return (int)s->frames[k];
		}
	}
	return as_hit_frames(a, sym, m);
}

/* Between traces: what pointed into the closed one is dropped; sites and sums stay. */
void allocsites_trace_done(struct allocsites *a)
{
	tdestroy(a->live, live_free);
	a->live = NULL;
	if (a->stacks) /* none yet in a trace without stacks: memset(NULL, 0, 0) is undefined */
		memset(a->stacks, 0, a->cap_stack * sizeof(*a->stacks));
	free(a->hits);
	a->hits = NULL;
	a->nhits = a->caphits = 0;
	as_claims_free(&a->claims);
	free(a->pending);
	a->pending = NULL;
	a->npending = a->cappending = 0;
}

size_t allocsites_sites(const struct allocsites *a, const struct as_site **out)
{
	*out = a->sites;
	return a->nsites;
}

uint64_t allocsites_total(const struct allocsites *a)
{
	return a->total;
}

uint64_t allocsites_attributed(const struct allocsites *a)
{
	return a->attributed;
}
