/* Placement advice: sites ranked by re-fetches per byte and kept greedily while they fit in the
 * local size, as a knapsack by value density (advise.h says the model, the README why). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "allocsite.h"

static int advise_cmp(const void *a, const void *b)
{
	const struct advise_row *x = a, *y = b;
	/* refetch / bytes compared without division: x.r * y.b against y.r * x.b (128 bits). */
	unsigned __int128 l = (unsigned __int128)x->refetch * (y->bytes ? y->bytes : 1);
	unsigned __int128 r = (unsigned __int128)y->refetch * (x->bytes ? x->bytes : 1);
	if (l != r)
		return l > r ? -1 : 1;
	if (x->refetch != y->refetch)
		return x->refetch > y->refetch ? -1 : 1;
	return strcmp(x->where, y->where);
}

size_t advise_plan(const struct advise_site *sites, size_t n, uint64_t local, uint64_t page_size,
		   struct advise_row *out)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (sites[i].refetch)
			out[m++] = (struct advise_row){ .where = sites[i].where,
							.bytes = sites[i].pages * page_size,
							.refetch = sites[i].refetch };
	qsort(out, m, sizeof(*out), advise_cmp);
	uint64_t room = ADVISE_ROOM_PAGES * page_size;
	uint64_t budget = local > room ? local - room : 0, kept = 0;
	for (size_t i = 0; i < m; i++) {
		out[i].keep = out[i].bytes <= budget - kept;
		if (out[i].keep) {
			kept += out[i].bytes;
			out[i].saved = out[i].refetch;
		}
		out[i].kept_bytes = kept;
	}
	return m;
}

int advise_sites_of(const struct as_report *r, struct advise_site **out, size_t *n)
{
	struct advise_site *v = calloc(r->nrows ? r->nrows : 1, sizeof(*v));
	size_t m = 0;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < r->nrows; i++) {
		const struct as_row *w = &r->rows[i];
		if (!w->where || w->where[0] == '[') /* no recorded allocation, or no stack: no name */
			continue;
		size_t j = 0;
		while (j < m && strcmp(v[j].where, w->where))
			j++;
		if (j == m)
			v[m++] = (struct advise_site){ .where = w->where };
		v[j].pages += w->zero;
		v[j].refetch += w->refetch;
	}
	*out = v;
	*n = m;
	return 0;
}

int advise_write_csv(FILE *out, const struct advise_row *rows, size_t n)
{
	fputs("rank,alloc_site,bytes,refetch,refetch_per_mb,keep,predicted_saved,kept_bytes\n", out);
	for (size_t i = 0; i < n; i++) {
		const struct advise_row *w = &rows[i];
		fprintf(out, "%zu,", i + 1);
		csv_put(out, w->where);
		fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%.1f,%s,%" PRIu64 ",%" PRIu64 "\n", w->bytes,
			w->refetch, w->bytes ? (double)w->refetch * (1 << 20) / (double)w->bytes : 0.0,
			w->keep ? "yes" : "no", w->saved, w->kept_bytes);
	}
	return ferror(out) ? -EIO : 0;
}
