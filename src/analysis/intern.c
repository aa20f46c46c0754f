/* String interning for the export writers: every distinct string once, with a dense id in the
 * order first seen (pprof's string table, speedscope's frame list). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "svg_common.h"

static size_t intern_slot(const char *s, size_t cap)
{
	return (size_t)svg_hash(s) & (cap - 1);
}

static int intern_grow(struct intern *in)
{
	size_t cap = in->hcap ? in->hcap * 2 : 1024;
	size_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < in->n; i++) {
		size_t k = intern_slot(in->strs[i], cap);
		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i + 1;
	}
	free(in->hash);
	in->hash = h;
	in->hcap = cap;
	return 0;
}

int64_t intern_id(struct intern *in, const char *s, bool *fresh)
{
	size_t k;

	if (fresh)
		*fresh = false;
	if ((in->n + 1) * 2 > in->hcap && intern_grow(in))
		return -ENOMEM;
	for (k = intern_slot(s, in->hcap); in->hash[k]; k = (k + 1) & (in->hcap - 1))
		if (!strcmp(in->strs[in->hash[k] - 1], s))
			return (int64_t)in->hash[k] - 1;
	if (in->n == in->cap) {
		size_t cap = in->cap ? in->cap * 2 : 256;
		char **n = realloc(in->strs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		in->strs = n;
		in->cap = cap;
	}
	if (!(in->strs[in->n] = strdup(s)))
		return -ENOMEM;
	in->hash[k] = ++in->n;
	if (fresh)
		*fresh = true;
	return (int64_t)in->n - 1;
}

void intern_free(struct intern *in)
{
	for (size_t i = 0; i < in->n; i++)
		free(in->strs[i]);
	free(in->strs);
	free(in->hash);
	memset(in, 0, sizeof(*in));
}
