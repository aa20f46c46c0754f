/* File view: file-backed faults counted per file page, written as contiguous offset ranges with
 * their fault count, first time and read order (the "which part of libxul.so, in what order"). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

struct fileview_page {
	const char *path;
	uint64_t offset; /* page-aligned file offset */
	uint64_t faults;
	uint64_t first_ns;
	uint64_t page_size;
};

struct fileview {
	size_t n, cap;
	struct fileview_page *v; /* open addressing by (path, offset) */
	size_t npaths;
	char **paths;
};

struct fileview *fileview_new(void)
{
	return calloc(1, sizeof(struct fileview));
}

void fileview_free(struct fileview *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->npaths; i++)
		free(v->paths[i]);
	free(v->paths);
	free(v->v);
	free(v);
}

static const char *fileview_intern(struct fileview *v, const char *path)
{
	char **n;

	for (size_t i = v->npaths; i-- > 0;)
		if (strcmp(v->paths[i], path) == 0)
			return v->paths[i];
	n = realloc(v->paths, (v->npaths + 1) * sizeof(*n));
	if (!n)
		return NULL;
	v->paths = n;
	v->paths[v->npaths] = strdup(path);
	return v->paths[v->npaths] ? v->paths[v->npaths++] : NULL;
}

static size_t fileview_slot(const struct fileview_page *tab, size_t cap, const char *path,
			    uint64_t off)
{
	uint64_t h = ((uintptr_t)path * 0x9e3779b97f4a7c15ull) ^ (off * 0xbf58476d1ce4e5b9ull);
	size_t j;

	h ^= h >> 31;
	for (j = h & (cap - 1); tab[j].path && (tab[j].path != path || tab[j].offset != off);
	     j = (j + 1) & (cap - 1))
		;
	return j;
}

static int fileview_put(struct fileview *v, const char *path, uint64_t off, uint64_t psz,
			uint64_t t)
{
	size_t j;

	if ((v->n + 1) * 2 > v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 1024;
		struct fileview_page *n = calloc(cap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < v->cap; i++)
			if (v->v[i].path)
				n[fileview_slot(n, cap, v->v[i].path, v->v[i].offset)] = v->v[i];
		free(v->v);
		v->v = n;
		v->cap = cap;
	}
	j = fileview_slot(v->v, v->cap, path, off);
	if (!v->v[j].path) {
		v->v[j] = (struct fileview_page){ path, off, 0, t, psz };
		v->n++;
	}
	v->v[j].faults++;
	if (t < v->v[j].first_ns)
		v->v[j].first_ns = t;
	return 0;
}

int fileview_add(struct fileview *v, const char *path, uint64_t offset, uint64_t pages,
		 uint64_t page_size, uint64_t time_ns)
{
	const char *p = fileview_intern(v, path);

	if (!p)
		return -ENOMEM;
	if (!page_size)
		page_size = 4096;
	offset -= offset % page_size;
	for (uint64_t i = 0; i < (pages ? pages : 1); i++) {
		int ret = fileview_put(v, p, offset + i * page_size, page_size, time_ns);
		if (ret)
			return ret;
	}
	return 0;
}

static int fileview_page_cmp(const void *a, const void *b)
{
	const struct fileview_page *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c)
		return c;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

struct fileview_range {
	const char *path;
	uint64_t start, end, pages, faults, first_ns;
	size_t order;
};

static int fileview_range_first_cmp(const void *a, const void *b)
{
	const struct fileview_range *x = *(const struct fileview_range *const *)a;
	const struct fileview_range *y = *(const struct fileview_range *const *)b;

	if (x->first_ns != y->first_ns)
		return x->first_ns < y->first_ns ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

int fileview_write_csv(struct fileview *v, FILE *out, uint64_t start_ns)
{
	struct fileview_page *pg = malloc((v->n ? v->n : 1) * sizeof(*pg));
	struct fileview_range *rg = malloc((v->n ? v->n : 1) * sizeof(*rg));
	struct fileview_range **by_time = malloc((v->n ? v->n : 1) * sizeof(*by_time));
	size_t n = 0, nr = 0;

	if (!pg || !rg || !by_time) {
		free(pg);
		free(rg);
		free(by_time);
		return -ENOMEM;
	}
	for (size_t i = 0; i < v->cap; i++)
		if (v->v[i].path)
			pg[n++] = v->v[i];
	qsort(pg, n, sizeof(*pg), fileview_page_cmp);
	for (size_t i = 0; i < n; i++) {
		struct fileview_range *r = nr ? &rg[nr - 1] : NULL;
		if (r && r->path == pg[i].path && r->end == pg[i].offset) {
			r->end += pg[i].page_size;
			r->pages++;
			r->faults += pg[i].faults;
			if (pg[i].first_ns < r->first_ns)
				r->first_ns = pg[i].first_ns;
			continue;
		}
		rg[nr++] = (struct fileview_range){ pg[i].path, pg[i].offset,
						    pg[i].offset + pg[i].page_size, 1, pg[i].faults,
						    pg[i].first_ns, 0 };
	}
	/* Read order within each file: ranges of one file are consecutive in rg. */
	for (size_t i = 0; i < nr;) {
		size_t j = i;
		while (j < nr && rg[j].path == rg[i].path)
			j++;
		for (size_t k = i; k < j; k++)
			by_time[k - i] = &rg[k];
		qsort(by_time, j - i, sizeof(*by_time), fileview_range_first_cmp);
		for (size_t k = 0; k < j - i; k++)
			by_time[k]->order = k + 1;
		i = j;
	}
	fputs("file,offset_start,offset_end,pages,faults,first_s,order\n", out);
	for (size_t i = 0; i < nr; i++) {
		uint64_t t = rg[i].first_ns > start_ns ? rg[i].first_ns - start_ns : 0;
		csv_put(out, rg[i].path);
		fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ".%06" PRIu64
			",%zu\n", rg[i].start, rg[i].end, rg[i].pages, rg[i].faults,
			t / 1000000000, t % 1000000000 / 1000, rg[i].order);
	}
	free(pg);
	free(rg);
	free(by_time);
	return 0;
}
