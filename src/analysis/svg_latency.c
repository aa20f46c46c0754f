/* Latency renderer: keeps every sample per kind (4 bytes each, so percentiles are exact) and
 * draws one horizontal-bar log2 histogram per kind. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "svg_latency.h"

struct lat_kind {
	uint32_t *v; /* latencies in ns, saturated like the trace field */
	size_t n, cap;
	uint64_t sum;
	uint64_t buckets[SVG_LAT_BUCKETS];
};

struct svg_latency {
	struct lat_kind k[SVG_KIND_NR];
};

struct svg_latency *svg_latency_new(void)
{
	return calloc(1, sizeof(struct svg_latency));
}

void svg_latency_free(struct svg_latency *lt)
{
	if (!lt)
		return;
	for (int k = 0; k < SVG_KIND_NR; k++)
		free(lt->k[k].v);
	free(lt);
}

unsigned svg_latency_bucket_of(uint64_t latency_ns)
{
	uint64_t us = latency_ns / 1000;
	unsigned b = 0;
	while (us) { /* bucket = bit length of the µs value */
		b++;
		us >>= 1;
	}
	return b < SVG_LAT_BUCKETS ? b : SVG_LAT_BUCKETS - 1;
}

int svg_latency_add(struct svg_latency *lt, enum svg_kind kind, uint64_t latency_ns)
{
	struct lat_kind *k;
	if ((unsigned)kind >= SVG_KIND_NR)
		return -EINVAL;
	k = &lt->k[kind];
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 1024;
		uint32_t *v = realloc(k->v, sizeof(*v) * cap);
		if (!v)
			return -ENOMEM;
		k->v = v;
		k->cap = cap;
	}
	if (latency_ns > UINT32_MAX)
		latency_ns = UINT32_MAX;
	k->v[k->n++] = (uint32_t)latency_ns;
	k->sum += latency_ns;
	k->buckets[svg_latency_bucket_of(latency_ns)]++;
	return 0;
}

uint64_t svg_latency_bucket(const struct svg_latency *lt, enum svg_kind kind, unsigned bucket)
{
	if ((unsigned)kind >= SVG_KIND_NR || bucket >= SVG_LAT_BUCKETS)
		return 0;
	return lt->k[kind].buckets[bucket];
}

void svg_fmt_ns(char *buf, size_t len, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.3g \xc2\xb5s", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.3g ms", ns / 1e6);
	else
		snprintf(buf, len, "%.3g s", ns / 1e9);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v. */
static uint32_t pct(const uint32_t *v, size_t n, double p)
{
	size_t r = (size_t)(p / 100 * (double)n + 0.999999);
	if (r < 1)
		r = 1;
	return v[(r > n ? n : r) - 1];
}

static void bucket_label(char *buf, size_t len, unsigned b)
{
	if (b == 0)
		snprintf(buf, len, "< 1");
	else if (b == SVG_LAT_BUCKETS - 1)
		snprintf(buf, len, "\xe2\x89\xa5 %llu", 1ull << (b - 1));
	else
		snprintf(buf, len, "%llu .. %llu", 1ull << (b - 1), 1ull << b);
}

#define ROW_H 16
#define LABEL_W 130
#define COUNT_W 120

int svg_latency_write(const struct svg_latency *lt, FILE *out, const struct svg_latency_opts *opts)
{
	static const struct svg_latency_opts defaults = { 0 };
	const struct svg_latency_opts *o = opts ? opts : &defaults;
	double width = o->width ? o->width : 1200;
	unsigned lo[SVG_KIND_NR], hi[SVG_KIND_NR];
	double height = 70, bar_w;
	int npanels = 0;
	uint32_t *sorted = NULL;

	if (width < LABEL_W + COUNT_W + 200)
		width = LABEL_W + COUNT_W + 200;
	bar_w = width - LABEL_W - COUNT_W - 20;
	for (int k = 0; k < SVG_KIND_NR; k++) {
		const struct lat_kind *lk = &lt->k[k];
		lo[k] = SVG_LAT_BUCKETS;
		hi[k] = 0;
		for (unsigned b = 0; b < SVG_LAT_BUCKETS; b++)
			if (lk->buckets[b]) {
				if (lo[k] == SVG_LAT_BUCKETS)
					lo[k] = b;
				hi[k] = b;
			}
		if (!lk->n)
			continue;
		/* Like stap: one empty bucket either side shows where the distribution ends. */
		lo[k] = lo[k] ? lo[k] - 1 : 0;
		hi[k] = hi[k] + 1 < SVG_LAT_BUCKETS ? hi[k] + 1 : hi[k];
		height += 50 + (hi[k] - lo[k] + 1) * ROW_H;
		npanels++;
	}
	if (!npanels)
		height += 30;

	svg_put_head(out, width, height, ".cap { font-size: 12px; font-weight: bold; }\n"
		     ".ax { stroke: rgb(90,90,90); }\n", o->title ? o->title : "Fault service time",
		     o->subtitle);
	double y = 70;
	if (!npanels)
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no latencies recorded</text>\n",
			width / 2, y + 10);
	for (int k = 0; k < SVG_KIND_NR; k++) {
		const struct lat_kind *lk = &lt->k[k];
		struct svg_rgb rgb = svg_kind_colour(k);
		char a[32], b[32], c[32], d[32], e[32], f[32], label[48];
		uint64_t max = 0;

		if (!lk->n)
			continue;
		sorted = malloc(sizeof(*sorted) * lk->n);
		if (!sorted)
			return -ENOMEM;
		memcpy(sorted, lk->v, sizeof(*sorted) * lk->n);
		qsort(sorted, lk->n, sizeof(*sorted), cmp_u32);
		svg_fmt_ns(a, sizeof(a), sorted[0]);
		svg_fmt_ns(b, sizeof(b), (double)lk->sum / (double)lk->n);
		svg_fmt_ns(c, sizeof(c), pct(sorted, lk->n, 50));
		svg_fmt_ns(d, sizeof(d), pct(sorted, lk->n, 90));
		svg_fmt_ns(e, sizeof(e), pct(sorted, lk->n, 99));
		svg_fmt_ns(f, sizeof(f), sorted[lk->n - 1]);
		free(sorted);
		sorted = NULL;
		fprintf(out, "<text class=\"cap\" x=\"10\" y=\"%.1f\">%s faults: %zu; min %s, avg %s, "
			     "p50 %s, p90 %s, p99 %s, max %s</text>\n",
			y + 14, svg_kind_name(k), lk->n, a, b, c, d, e, f);
		fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">value (\xc2\xb5s)</text>"
			     "<text x=\"%.1f\" y=\"%.1f\">count</text>\n",
			LABEL_W - 8, y + 32, LABEL_W + bar_w + 8, y + 32);
		y += 40;
		for (unsigned bk = lo[k]; bk <= hi[k]; bk++)
			if (lk->buckets[bk] > max)
				max = lk->buckets[bk];
		fprintf(out, "<line class=\"ax\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", LABEL_W,
			y, LABEL_W, y + (hi[k] - lo[k] + 1) * ROW_H);
		for (unsigned bk = lo[k]; bk <= hi[k]; bk++) {
			uint64_t n = lk->buckets[bk];
			double w = max ? (double)n / (double)max * bar_w : 0;
			bucket_label(label, sizeof(label), bk);
			fputs("<g><title>", out);
			svg_put_escaped(out, label); /* "< 1" */
			fprintf(out, " \xc2\xb5s: %llu faults (%.2f%%)</title>"
				     "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">",
				(unsigned long long)n, 100.0 * (double)n / (double)lk->n, LABEL_W - 8,
				y + ROW_H - 4);
			svg_put_escaped(out, label);
			fputs("</text>", out);
			if (n)
				fprintf(out, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
					     "fill=\"rgb(%u,%u,%u)\"/>",
					LABEL_W, y + 1, w < 1 ? 1 : w, ROW_H - 2, rgb.r, rgb.g, rgb.b);
			fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%llu</text></g>\n", LABEL_W + bar_w + 8,
				y + ROW_H - 4, (unsigned long long)n);
			y += ROW_H;
		}
		y += 10;
	}
	fputs("</svg>\n", out);
	return fflush(out) || ferror(out) ? -EIO : 0;
}
