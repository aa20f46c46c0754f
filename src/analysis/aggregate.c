/* Aggregation: faults folded into rows (by stack, line or function) with counts and latency
 * summaries; memory grows with distinct rows, never with the number of faults. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

/* ------------------------------------------------------------------ latency summary */
#define LAT_EXACT 16
#define LAT_BUCKETS 240

struct lat_hist {
	uint64_t n;
	uint32_t exact[LAT_EXACT]; /* the first samples, while n <= LAT_EXACT */
	uint32_t *bucket;          /* log-linear histogram once n > LAT_EXACT */
	uint32_t max;
};

/* 16 linear buckets, then 8 per power of two: relative error under 1/16. */
static unsigned lat_index(uint32_t v)
{
	unsigned e;

	if (v < 16)
		return v;
	e = 31 - __builtin_clz(v);
	return 16 + (e - 4) * 8 + ((v >> (e - 3)) & 7);
}

static uint32_t lat_value(unsigned idx)
{
	unsigned e, m;
	uint64_t lo, w;

	if (idx < 16)
		return idx;
	e = (idx - 16) / 8 + 4;
	m = (idx - 16) % 8;
	lo = ((uint64_t)(8 + m)) << (e - 3);
	w = 1ull << (e - 3);
	lo += w / 2; /* the middle of the bucket */
	return lo > UINT32_MAX ? UINT32_MAX : (uint32_t)lo;
}

static int lat_add_n(struct lat_hist *h, uint32_t v, uint64_t times)
{
	if (v > h->max)
		h->max = v;
	while (times && !h->bucket && h->n < LAT_EXACT) {
		h->exact[h->n++] = v;
		times--;
	}
	if (!times)
		return 0;
	if (!h->bucket) {
		h->bucket = calloc(LAT_BUCKETS, sizeof(uint32_t));
		if (!h->bucket)
			return -ENOMEM;
		for (uint64_t i = 0; i < h->n; i++)
			h->bucket[lat_index(h->exact[i])]++;
	}
	h->bucket[lat_index(v)] += times;
	h->n += times;
	return 0;
}

static int lat_merge(struct lat_hist *dst, const struct lat_hist *src)
{
	int ret = 0;

	if (!src->bucket) {
		for (uint64_t i = 0; i < src->n && !ret; i++)
			ret = lat_add_n(dst, src->exact[i], 1);
		return ret;
	}
	for (unsigned i = 0; i < LAT_BUCKETS && !ret; i++)
		if (src->bucket[i])
			ret = lat_add_n(dst, lat_value(i), src->bucket[i]);
	if (src->max > dst->max)
		dst->max = src->max;
	return ret;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile: exact for small rows, bucket middle (capped at the max) beyond. */
uint64_t lat_percentile(const struct lat_hist *h, double p)
{
	uint64_t rank, seen = 0;

	if (!h || !h->n)
		return 0;
	rank = (uint64_t)(p * h->n);
	if ((double)rank < p * h->n)
		rank++;
	if (rank < 1)
		rank = 1;
	if (!h->bucket) {
		uint32_t v[LAT_EXACT];
		memcpy(v, h->exact, h->n * sizeof(v[0]));
		qsort(v, h->n, sizeof(v[0]), u32_cmp);
		return v[rank - 1];
	}
	for (unsigned i = 0; i < LAT_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			uint32_t v = lat_value(i);
			return v > h->max ? h->max : v;
		}
	}
	return h->max;
}

/* ------------------------------------------------------------------ table */

struct agg_slot {
	uint64_t hash;
	struct agg_row *row; /* NULL: empty */
	char *key;
	size_t keylen;
};

struct agg_table {
	size_t n, cap;
	struct agg_slot *slot;
	struct agg_row **sorted;
	uint64_t total;
	size_t nfiles, capfiles;
	char **files; /* interned file paths of file faults */
};

struct agg_table *agg_new(void)
{
	return calloc(1, sizeof(struct agg_table));
}

static void agg_row_free(struct agg_row *r)
{
	if (r->lat) {
		free(r->lat->bucket);
		free(r->lat);
	}
	free((void *)r->ips);
	free(r->frames);
	free(r);
}

void agg_free(struct agg_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slot[i].row) {
			agg_row_free(t->slot[i].row);
			free(t->slot[i].key);
		}
	for (size_t i = 0; i < t->nfiles; i++)
		free(t->files[i]);
	free(t->files);
	free(t->slot);
	free(t->sorted);
	free(t);
}

uint64_t agg_total(const struct agg_table *t)
{
	return t->total;
}

static uint64_t agg_hash(const void *key, size_t len)
{
	const uint8_t *p = key;
	uint64_t h = 0xcbf29ce484222325ull;

	/* FNV-1a, 8 bytes at a time with a multiply-shift mix: keys are short and aligned. */
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 32;
		p += 8;
		len -= 8;
	}
	while (len--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static int agg_grow(struct agg_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	struct agg_slot *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;
		if (!t->slot[i].row)
			continue;
		for (j = t->slot[i].hash & (cap - 1); v[j].row; j = (j + 1) & (cap - 1))
			;
		v[j] = t->slot[i];
	}
	free(t->slot);
	t->slot = v;
	t->cap = cap;
	return 0;
}

/* The row for key, created empty if new (*created set). */
static struct agg_row *agg_get(struct agg_table *t, const void *key, size_t len, bool *created)
{
	uint64_t h = agg_hash(key, len);
	size_t j;

	*created = false;
	if ((t->n + 1) * 4 > t->cap * 3 && agg_grow(t))
		return NULL;
	for (j = h & (t->cap - 1); t->slot[j].row; j = (j + 1) & (t->cap - 1))
		if (t->slot[j].hash == h && t->slot[j].keylen == len &&
		    memcmp(t->slot[j].key, key, len) == 0)
			return t->slot[j].row;
	t->slot[j].row = calloc(1, sizeof(struct agg_row));
	t->slot[j].key = malloc(len);
	if (!t->slot[j].row || !t->slot[j].key) {
		free(t->slot[j].row);
		free(t->slot[j].key);
		t->slot[j].row = NULL;
		return NULL;
	}
	memcpy(t->slot[j].key, key, len);
	t->slot[j].row->caller = -1;
	t->slot[j].keylen = len;
	t->slot[j].hash = h;
	t->n++;
	free(t->sorted);
	t->sorted = NULL;
	*created = true;
	return t->slot[j].row;
}

static const char *agg_intern_file(struct agg_table *t, const char *path)
{
	for (size_t i = t->nfiles; i-- > 0;)
		if (strcmp(t->files[i], path) == 0)
			return t->files[i];
	if (t->nfiles == t->capfiles) {
		size_t cap = t->capfiles ? t->capfiles * 2 : 16;
		char **v = realloc(t->files, cap * sizeof(*v));
		if (!v)
			return NULL;
		t->files = v;
		t->capfiles = cap;
	}
	t->files[t->nfiles] = strdup(path);
	return t->files[t->nfiles] ? t->files[t->nfiles++] : NULL;
}

bool agg_filter_match(const struct agg_filter *f, const struct ft_file_header *h,
		      const struct ft_fault *fault)
{
	if (f->kinds) {
		unsigned bit = fault->kind == FT_KIND_PREFETCH ? FILTER_KIND_PREFETCH :
			       fault->kind < FT_KIND_PREFETCH ? 1u << fault->kind : 0;
		bool k = f->kinds & bit;
		bool sc = (f->kinds & FILTER_KIND_SYSCALL) && fault->origin == FT_ORIGIN_SYSCALL;
		if (!k && !sc)
			return false;
	}
	if (f->access) {
		unsigned a = (fault->flags & FT_FLAG_WP) ? FILTER_ACC_WP :
			     (fault->flags & FT_FLAG_WRITE) ? FILTER_ACC_WRITE : FILTER_ACC_READ;
		if (!(f->access & a))
			return false;
	}
	if (f->has_time) {
		double s = fault->time_ns >= h->start_realtime_ns ?
			   (fault->time_ns - h->start_realtime_ns) / 1e9 : 0;
		if (s < f->time_start || (f->time_end >= 0 && s >= f->time_end))
			return false;
	}
	return true;
}

/* The part of a row's key after the stack identity. */
struct agg_key_tail {
	uint16_t flags;
	uint8_t kind, origin;
	int32_t syscall_nr;
	const char *file;
};

static int agg_account(struct agg_table *t, struct agg_row *r, uint64_t pages, uint64_t faults,
		       uint64_t nostack, uint64_t first_ns, uint64_t lat_total)
{
	r->count += pages;
	r->faults += faults;
	r->nostack += nostack;
	r->lat_total_ns += lat_total;
	if (!r->first_ns || (first_ns && first_ns < r->first_ns))
		r->first_ns = first_ns;
	t->total += pages;
	if (!r->lat) {
		r->lat = calloc(1, sizeof(*r->lat));
		if (!r->lat)
			return -ENOMEM;
	}
	return 0;
}

int agg_add(struct agg_table *t, const struct ft_file_header *h, const struct ft_fault *f,
	    const struct ft_stack *stack, const struct ft_region *region)
{
	struct {
		const struct ft_stack *stack; /* one record per distinct stack in a trace */
		struct agg_key_tail tail;
	} key;
	struct agg_row *r;
	uint64_t pages = f->pages ? f->pages : 1;
	bool created;
	int ret;

	memset(&key, 0, sizeof(key));
	key.stack = stack;
	key.tail = (struct agg_key_tail){ f->flags, f->kind, f->origin, f->syscall_nr, NULL };
	if (region) {
		key.tail.file = agg_intern_file(t, region->path);
		if (!key.tail.file)
			return -ENOMEM;
	}
	r = agg_get(t, &key, sizeof(key), &created);
	if (!r)
		return -ENOMEM;
	if (created) {
		r->flags = f->flags;
		r->kind = f->kind;
		r->origin = f->origin;
		r->syscall_nr = f->syscall_nr;
		r->file = key.tail.file;
		r->pid = h->pid;
		r->gen = h->exec_gen;
		r->off_lo = UINT64_MAX;
		if (stack && stack->depth) {
			uint64_t *ips = malloc(stack->depth * sizeof(*ips));
			if (!ips)
				return -ENOMEM;
			memcpy(ips, stack->ips, stack->depth * sizeof(*ips));
			r->ips = ips;
			r->depth = stack->depth;
		}
	}
	ret = agg_account(t, r, pages, 1, stack ? 0 : pages, f->time_ns, f->latency_ns);
	if (ret)
		return ret;
	if (region && f->addr >= region->start) {
		uint64_t off = region->offset + (f->addr - region->start);
		uint64_t end = off + pages * h->page_size;
		if (off < r->off_lo)
			r->off_lo = off;
		if (end > r->off_hi)
			r->off_hi = end;
	}
	return lat_add_n(r->lat, f->latency_ns, 1);
}

int agg_symbolize(struct agg_table *t, struct symbolizer *s, const struct maps_history *m)
{
	for (size_t i = 0; i < t->cap; i++) {
		struct agg_row *r = t->slot[i].row;
		if (!r || !r->depth || r->frames)
			continue;
		r->frames = malloc(r->depth * sizeof(*r->frames));
		if (!r->frames)
			return -ENOMEM;
		for (uint32_t k = 0; k < r->depth; k++) {
			/* ips[0] of a user fault is the faulting instruction itself; every other
			 * frame is a return address and belongs to the call before it. */
			bool ret_addr = k > 0 || r->origin != FT_ORIGIN_USER;
			r->frames[k] = sym_add(s, m, r->ips[k], r->first_ns, ret_addr);
			if (r->frames[k] < 0)
				return (int)r->frames[k];
		}
	}
	return 0;
}

/* Append a string (with its NUL) to a key buffer. */
static size_t agg_key_str(char *buf, size_t pos, size_t cap, const char *s)
{
	size_t l = strlen(s) + 1;

	if (pos + l > cap)
		l = cap - pos;
	memcpy(buf + pos, s, l);
	return pos + l;
}

/* The symbolizer id of a row's own frame of the program, or -1 (no stack, unsymbolized). */
static int64_t agg_row_caller_id(const struct agg_row *r, const struct symbolizer *s)
{
	if (r->caller >= 0)
		return r->caller;
	if (!r->depth || !r->frames)
		return -1;
	return r->frames[caller_index(s, r->frames, r->depth)];
}

const struct sym_frame *agg_row_caller(const struct agg_row *r, const struct symbolizer *s)
{
	int64_t id = agg_row_caller_id(r, s);

	return id >= 0 ? sym_frame(s, id) : NULL;
}

/* The key of one frame for the line, function and caller views. */
static size_t agg_key_frame(char *key, size_t pos, size_t cap, const struct sym_frame *f,
			    uint64_t ip, bool by_line)
{
	char tmp[64];

	if (!f || !f->resolved) {
		/* Unknown lines do not merge with each other: keep the address. */
		snprintf(tmp, sizeof(tmp), "%llx", (unsigned long long)ip);
		pos = agg_key_str(key, pos, cap, f ? f->lib : "??");
		return agg_key_str(key, pos, cap, tmp);
	}
	pos = agg_key_str(key, pos, cap, f->lib);
	if (by_line && !f->locs[0].line) {
		/* No line known (no debug info, or only the object file's name: "x.o:?"): group by
		 * function, not into one ??:? row. */
		pos = agg_key_str(key, pos, cap, "\x01function");
		return agg_key_str(key, pos, cap, f->func);
	}
	return agg_key_str(key, pos, cap, by_line ? f->code : f->locs[0].func);
}

int agg_regroup(struct agg_table *dst, struct agg_table *src, enum agg_by by,
		const struct symbolizer *s)
{
	size_t cap = 1 << 16, nsrc;
	char *key = malloc(cap);
	struct agg_row **srows;
	int ret = 0;

	if (!key)
		return -ENOMEM;
	/* In sorted order: the first row of a group (its biggest contributor) gives the group its
	 * representative ips, and the output does not depend on hash order. */
	nsrc = agg_rows(src, &srows);
	for (size_t i = 0; i < nsrc && !ret; i++) {
		const struct agg_row *r = srows[i];
		struct agg_key_tail tail;
		struct agg_row *d;
		size_t pos = 0, need;
		uint32_t depth, leaf_at = 0;
		bool created;

		if (!r)
			continue;
		memset(&tail, 0, sizeof(tail));
		tail = (struct agg_key_tail){ r->flags, r->kind, r->origin, r->syscall_nr, NULL };
		if (r->file) {
			tail.file = agg_intern_file(dst, r->file);
			if (!tail.file) {
				ret = -ENOMEM;
				break;
			}
		}
		depth = by == AGG_BY_STACK ? r->depth : r->depth ? 1 : 0;
		need = sizeof(tail) + 8 + (size_t)r->depth * 8;
		if (need > cap) {
			char *v = realloc(key, need * 2);
			if (!v) {
				ret = -ENOMEM;
				break;
			}
			key = v;
			cap = need * 2;
		}
		memcpy(key, &tail, sizeof(tail));
		pos = sizeof(tail);
		if (!r->depth) {
			memcpy(key + pos, "\0nostack", 8);
			pos += 8;
		} else if (by == AGG_BY_STACK) {
			/* Symbolized identity (object + vaddr), so processes with different
			 * load addresses merge; raw ips where unsymbolized. */
			for (uint32_t k = 0; k < r->depth; k++) {
				int64_t id = r->frames ? r->frames[k] : -1;
				uint64_t v = id >= 0 ? (uint64_t)id : r->ips[k] | (1ull << 63);
				memcpy(key + pos, &v, 8);
				pos += 8;
			}
		} else {
			const struct sym_frame *f = r->frames ? sym_frame(s, r->frames[0]) : NULL;
			uint64_t ip = r->ips[0];
			if (by == AGG_BY_CALLER && r->frames) {
				/* The row stands for the program's frame: it is the one it keeps. */
				uint32_t k = caller_index(s, r->frames, r->depth);
				f = sym_frame(s, r->frames[k]);
				ip = r->ips[k];
				leaf_at = k;
			}
			pos = agg_key_frame(key, pos, cap, f, ip, by != AGG_BY_FUNCTION);
			if (by == AGG_BY_LINE_CALLER) {
				int64_t c = agg_row_caller_id(r, s);
				pos = agg_key_frame(key, pos, cap, c >= 0 ? sym_frame(s, c) : NULL,
						    r->ips[0], true);
			}
		}
		d = agg_get(dst, key, pos, &created);
		if (!d) {
			ret = -ENOMEM;
			break;
		}
		if (created) {
			d->flags = r->flags;
			d->kind = r->kind;
			d->origin = r->origin;
			d->syscall_nr = r->syscall_nr;
			d->file = tail.file;
			d->pid = r->pid;
			d->gen = r->gen;
			d->off_lo = UINT64_MAX;
			d->depth = depth;
			d->caller = agg_row_caller_id(r, s);
			if (depth) {
				uint64_t *ips = malloc(depth * sizeof(*ips));
				d->frames = malloc(depth * sizeof(*d->frames));
				if (!ips || !d->frames) {
					free(ips);
					ret = -ENOMEM;
					break;
				}
				memcpy(ips, r->ips + leaf_at, depth * sizeof(*ips));
				for (uint32_t k = 0; k < depth; k++)
					d->frames[k] = r->frames ? r->frames[leaf_at + k] : -1;
				d->ips = ips;
			}
		}
		ret = agg_account(dst, d, r->count, r->faults, r->nostack, r->first_ns,
				  r->lat_total_ns);
		if (!ret && r->lat)
			ret = lat_merge(d->lat, r->lat);
		if (r->off_lo < d->off_lo)
			d->off_lo = r->off_lo;
		if (r->off_hi > d->off_hi)
			d->off_hi = r->off_hi;
	}
	free(key);
	return ret;
}

static int agg_row_cmp(const void *a, const void *b)
{
	const struct agg_row *x = *(const struct agg_row *const *)a;
	const struct agg_row *y = *(const struct agg_row *const *)b;
	uint32_t n;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	n = x->depth < y->depth ? x->depth : y->depth;
	for (uint32_t k = 0; k < n; k++)
		if (x->ips[k] != y->ips[k])
			return x->ips[k] < y->ips[k] ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	if (x->flags != y->flags)
		return x->flags < y->flags ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->origin != y->origin)
		return x->origin < y->origin ? -1 : 1;
	if (x->syscall_nr != y->syscall_nr)
		return x->syscall_nr < y->syscall_nr ? -1 : 1;
	if ((x->file == NULL) != (y->file == NULL))
		return x->file ? 1 : -1;
	if (x->file && strcmp(x->file, y->file))
		return strcmp(x->file, y->file);
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	return x->first_ns < y->first_ns ? -1 : x->first_ns > y->first_ns;
}

size_t agg_rows(struct agg_table *t, struct agg_row ***rows)
{
	if (!t->sorted && t->n) {
		size_t k = 0;
		t->sorted = malloc(t->n * sizeof(*t->sorted));
		if (!t->sorted) {
			*rows = NULL;
			return 0;
		}
		for (size_t i = 0; i < t->cap; i++)
			if (t->slot[i].row)
				t->sorted[k++] = t->slot[i].row;
		qsort(t->sorted, t->n, sizeof(*t->sorted), agg_row_cmp);
	}
	*rows = t->sorted;
	return t->n;
}
