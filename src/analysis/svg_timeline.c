/* Faults-over-time renderer: stores the points, splits the address space into the few ranges
 * that hold faults, bins each panel into a 2 px grid and draws one path per (kind, shade). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "svg_timeline.h"

struct tl_point {
	uint64_t t, y;
	uint32_t file; /* 0: address; else index + 1 into files */
	uint8_t kind;
};

struct svg_timeline {
	struct tl_point *pts;
	size_t n, cap;
	char **files;
	size_t nfiles;
	uint32_t last_file; /* consecutive faults tend to hit the same file */
};

#define CELL 2           /* px of a grid cell */
#define LEFT 120         /* room for hex labels */
#define RIGHT 24
#define PANEL_H 180
#define RATE_H 120
#define GAP 56           /* between panels: x labels and the next panel's caption */
#define MAX_FILE_PANELS 12
#define MAX_ADDR_PANELS 8
#define SPLIT_GAP (256ull << 20) /* address ranges further apart than this get their own panel */
#define LEVELS 6          /* shades of a cell's opacity */

struct svg_timeline *svg_timeline_new(void)
{
	return calloc(1, sizeof(struct svg_timeline));
}

void svg_timeline_free(struct svg_timeline *tl)
{
	if (!tl)
		return;
	for (size_t i = 0; i < tl->nfiles; i++)
		free(tl->files[i]);
	free(tl->files);
	free(tl->pts);
	free(tl);
}

static int tl_file_id(struct svg_timeline *tl, const char *file, uint32_t *id)
{
	if (tl->last_file && strcmp(tl->files[tl->last_file - 1], file) == 0) {
		*id = tl->last_file;
		return 0;
	}
	/* Few distinct files per process: a scan is enough once the cache misses. */
	for (size_t i = 0; i < tl->nfiles; i++)
		if (strcmp(tl->files[i], file) == 0) {
			*id = tl->last_file = (uint32_t)i + 1;
			return 0;
		}
	char **files = realloc(tl->files, sizeof(*files) * (tl->nfiles + 1));
	if (!files)
		return -ENOMEM;
	tl->files = files;
	if (!(files[tl->nfiles] = strdup(file)))
		return -ENOMEM;
	*id = tl->last_file = (uint32_t)++tl->nfiles;
	return 0;
}

int svg_timeline_add(struct svg_timeline *tl, uint64_t t_ns, uint64_t y, enum svg_kind kind,
		     const char *file)
{
	uint32_t fid = 0;
	if ((unsigned)kind >= SVG_KIND_NR)
		return -EINVAL;
	if (file) {
		int err = tl_file_id(tl, file, &fid);
		if (err)
			return err;
	}
	if (tl->n == tl->cap) {
		size_t cap = tl->cap ? tl->cap * 2 : 4096;
		struct tl_point *p = realloc(tl->pts, sizeof(*p) * cap);
		if (!p)
			return -ENOMEM;
		tl->pts = p;
		tl->cap = cap;
	}
	tl->pts[tl->n++] = (struct tl_point){ .t = t_ns, .y = y, .file = fid, .kind = (uint8_t)kind };
	return 0;
}

/* ---- axes ---- */

double svg_nice_step(double span, int max_ticks)
{
	if (!(span > 0) || max_ticks < 1)
		return 1;
	double raw = span / max_ticks, mag = pow(10, floor(log10(raw)));
	static const double mult[] = { 1, 2, 5, 10 };
	for (size_t i = 0; i < 4; i++)
		if (mult[i] * mag >= raw)
			return mult[i] * mag;
	return 10 * mag;
}

uint64_t svg_pow2_step(uint64_t span, int max_ticks)
{
	uint64_t step = 1;
	if (max_ticks < 1)
		max_ticks = 1;
	while (step < (1ull << 62) && span / step > (uint64_t)max_ticks)
		step <<= 1;
	return step;
}

static void fmt_seconds(char *buf, size_t len, double s, double step)
{
	int dec = 0;
	while (dec < 6 && step * pow(10, dec) < 0.999)
		dec++;
	snprintf(buf, len, "%.*f s", dec, s);
}

/* ---- panels ---- */

struct tl_panel {
	uint32_t file;     /* 0: an address range */
	uint64_t lo, hi;   /* y range [lo, hi) */
	uint64_t count;
};

struct tl_ctx {
	const struct svg_timeline *tl;
	FILE *out;
	double width, plot_w;
	uint64_t t0, t1;
	uint64_t page;
	unsigned cols;
	uint32_t *grid;    /* cols * rows * SVG_KIND_NR */
	bool kinds_seen[SVG_KIND_NR];
};

static double tl_x(const struct tl_ctx *c, uint64_t t)
{
	double span = (double)(c->t1 - c->t0);
	return LEFT + (t <= c->t0 ? 0 : (double)(t - c->t0) / span * c->plot_w);
}

static unsigned tl_col(const struct tl_ctx *c, uint64_t t)
{
	unsigned col = (unsigned)((tl_x(c, t) - LEFT) / CELL);
	return col >= c->cols ? c->cols - 1 : col;
}

static void time_axis(const struct tl_ctx *c, double y)
{
	double span = (double)(c->t1 - c->t0) / 1e9;
	double step = svg_nice_step(span, 10);
	char buf[64];

	fprintf(c->out, "<line class=\"ax\" x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", LEFT, y,
		LEFT + c->plot_w, y);
	/* Ticks from an integer count, so steps do not add up rounding errors. */
	for (int i = 0; i * step <= span * (1 + 1e-9); i++) {
		double s = i * step, x = LEFT + s / span * c->plot_w;
		fmt_seconds(buf, sizeof(buf), s, step);
		fprintf(c->out, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
				"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
			x, y, x, y + 4, x, y + 16, buf);
	}
}

/* Write cells as one path per (kind, shade): "Mx yh2v2h-2z" is ~15 bytes a cell. */
static void draw_grid(struct tl_ctx *c, unsigned rows, double top)
{
	uint32_t max = 0;
	size_t ncells = (size_t)c->cols * rows;
	for (size_t i = 0; i < ncells * SVG_KIND_NR; i++)
		if (c->grid[i] > max)
			max = c->grid[i];
	if (!max)
		return;
	for (int k = 0; k < SVG_KIND_NR; k++) {
		struct svg_rgb rgb = svg_kind_colour(k);
		for (int lvl = 0; lvl < LEVELS; lvl++) {
			bool open = false;
			for (unsigned col = 0; col < c->cols; col++)
				for (unsigned row = 0; row < rows; row++) {
					const uint32_t *cell = &c->grid[((size_t)col * rows + row) * SVG_KIND_NR];
					uint32_t total = 0;
					int dom = 0;
					for (int j = 0; j < SVG_KIND_NR; j++) {
						total += cell[j];
						if (cell[j] > cell[dom])
							dom = j;
					}
					if (!total || dom != k)
						continue;
					/* Shade by log count: one fault must stay visible next to 10^5. */
					int l = max == 1 ? LEVELS - 1 :
						(int)(log((double)total) / log((double)max) * (LEVELS - 1) + 0.5);
					if (l != lvl)
						continue;
					if (!open) {
						fprintf(c->out, "<path fill=\"rgb(%u,%u,%u)\" fill-opacity=\"%.2f\" d=\"",
							rgb.r, rgb.g, rgb.b, 0.35 + 0.65 * lvl / (LEVELS - 1));
						open = true;
					}
					fprintf(c->out, "M%u %.0fh%dv%dh-%dz", LEFT + col * CELL,
						top + (double)(rows - 1 - row) * CELL, CELL, CELL, CELL);
				}
			if (open)
				fputs("\"/>\n", c->out);
		}
	}
}

static void panel_caption(const struct tl_ctx *c, const struct tl_panel *p, double top)
{
	char lo[64], hi[64];
	fprintf(c->out, "<text class=\"cap\" x=\"%d\" y=\"%.1f\">", LEFT, top - 8);
	if (p->file) {
		fputs("file ", c->out);
		svg_put_escaped(c->out, c->tl->files[p->file - 1]);
		svg_fmt_bytes(hi, sizeof(hi), (double)p->hi);
		fprintf(c->out, " (offset in file, 0 .. %s)", hi);
	} else {
		snprintf(lo, sizeof(lo), "0x%llx", (unsigned long long)p->lo);
		snprintf(hi, sizeof(hi), "0x%llx", (unsigned long long)p->hi);
		fprintf(c->out, "addresses %s .. %s", lo, hi);
	}
	fprintf(c->out, ": %llu faults</text>\n", (unsigned long long)p->count);
}

static int draw_panel(struct tl_ctx *c, const struct tl_panel *p, double top)
{
	unsigned rows = PANEL_H / CELL;
	uint64_t span = p->hi - p->lo;
	size_t ncells = (size_t)c->cols * rows * SVG_KIND_NR;
	char buf[64];

	memset(c->grid, 0, ncells * sizeof(uint32_t));
	for (size_t i = 0; i < c->tl->n; i++) {
		const struct tl_point *pt = &c->tl->pts[i];
		if (pt->file != p->file || pt->y < p->lo || pt->y >= p->hi)
			continue;
		unsigned row = (unsigned)((double)(pt->y - p->lo) / (double)span * rows);
		if (row >= rows)
			row = rows - 1;
		uint32_t *cell = &c->grid[((size_t)tl_col(c, pt->t) * rows + row) * SVG_KIND_NR];
		if (cell[pt->kind] < UINT32_MAX)
			cell[pt->kind]++;
	}
	panel_caption(c, p, top);
	fprintf(c->out, "<rect class=\"pb\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\"/>\n", LEFT,
		top, c->plot_w, PANEL_H);
	draw_grid(c, rows, top);

	/* y ticks: power-of-two steps, hex for addresses, sizes for file offsets. */
	uint64_t step = svg_pow2_step(span, 6);
	uint64_t first = (p->lo + step - 1) / step * step;
	for (uint64_t v = first; v <= p->hi && v >= first; v += step) {
		double y = top + PANEL_H - (double)(v - p->lo) / (double)span * PANEL_H;
		if (p->file)
			svg_fmt_bytes(buf, sizeof(buf), (double)v);
		else
			snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
		fprintf(c->out, "<line class=\"ax\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
				"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			LEFT - 4, y, LEFT, y, LEFT - 6, y + 4, buf);
		if (v > UINT64_MAX - step)
			break;
	}
	time_axis(c, top + PANEL_H);
	return 0;
}

static void draw_rate(struct tl_ctx *c, double top)
{
	/* Few faults in 2 px columns would draw noise: widen the bins until each holds about 20
	 * faults on average, from the grid's columns up to a tenth of the plot. */
	size_t want = c->tl->n / 50;
	unsigned group = 1;
	if (want < 10)
		want = 10;
	while (group < c->cols / 10 && c->cols / group > want)
		group++;
	unsigned nb = (c->cols + group - 1) / group;
	uint64_t *bins = c->tl->n ? calloc((size_t)nb * SVG_KIND_NR, sizeof(uint64_t)) : NULL;
	double bin_s = (double)(c->t1 - c->t0) / 1e9 / c->cols * group, maxrate = 0;

	fprintf(c->out, "<text class=\"cap\" x=\"%d\" y=\"%.1f\">fault rate (faults/s, %.3g s bins)</text>\n",
		LEFT, top - 8, bin_s);
	fprintf(c->out, "<rect class=\"pb\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\"/>\n", LEFT,
		top, c->plot_w, RATE_H);
	if (bins) {
		for (size_t i = 0; i < c->tl->n; i++)
			bins[(size_t)(tl_col(c, c->tl->pts[i].t) / group) * SVG_KIND_NR + c->tl->pts[i].kind]++;
		for (unsigned b = 0; b < nb; b++) {
			uint64_t sum = 0;
			for (int k = 0; k < SVG_KIND_NR; k++)
				sum += bins[(size_t)b * SVG_KIND_NR + k];
			if ((double)sum / bin_s > maxrate)
				maxrate = (double)sum / bin_s;
		}
	}
	if (maxrate > 0) {
		double step = svg_nice_step(maxrate, 4);
		double ymax = ceil(maxrate / step) * step;
		/* Stacked per bin, kinds in enum order from the bottom; one path per kind. */
		for (int k = 0; k < SVG_KIND_NR; k++) {
			struct svg_rgb rgb = svg_kind_colour(k);
			bool open = false;
			for (unsigned b = 0; b < nb; b++) {
				uint64_t below = 0, n = bins[(size_t)b * SVG_KIND_NR + k];
				unsigned w = (b + 1 == nb ? c->cols - b * group : group) * CELL;
				if (!n)
					continue;
				for (int j = 0; j < k; j++)
					below += bins[(size_t)b * SVG_KIND_NR + j];
				double h = (double)n / bin_s / ymax * RATE_H;
				double y = top + RATE_H - (double)below / bin_s / ymax * RATE_H - h;
				if (!open) {
					fprintf(c->out, "<path fill=\"rgb(%u,%u,%u)\" d=\"", rgb.r, rgb.g, rgb.b);
					open = true;
				}
				fprintf(c->out, "M%u %.1fh%uv%.1fh-%uz", LEFT + b * group * CELL, y, w, h, w);
			}
			if (open)
				fputs("\"/>\n", c->out);
		}
		for (int i = 0; i * step <= ymax * (1 + 1e-9); i++) {
			double v = i * step, y = top + RATE_H - v / ymax * RATE_H;
			fprintf(c->out, "<line class=\"ax\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
					"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.6g</text>\n",
				LEFT - 4, y, LEFT, y, LEFT - 6, y + 4, v);
		}
	}
	free(bins);
	time_axis(c, top + RATE_H);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Address ranges that hold faults: split at gaps wider than SPLIT_GAP, keeping the widest gaps
 * when there would be too many panels. */
static int addr_panels(const struct tl_ctx *c, struct tl_panel *out, size_t *n)
{
	const struct svg_timeline *tl = c->tl;
	size_t m = 0, ngaps = 0;
	uint64_t *ys = malloc(sizeof(uint64_t) * (tl->n ? tl->n : 1));
	uint64_t *gaps = NULL;
	int err = 0;

	*n = 0;
	if (!ys)
		return -ENOMEM;
	for (size_t i = 0; i < tl->n; i++)
		if (!tl->pts[i].file)
			ys[m++] = tl->pts[i].y;
	if (!m)
		goto out;
	qsort(ys, m, sizeof(*ys), cmp_u64);
	gaps = malloc(sizeof(uint64_t) * m);
	if (!gaps) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 1; i < m; i++)
		if (ys[i] - ys[i - 1] > SPLIT_GAP)
			gaps[ngaps++] = ys[i] - ys[i - 1];
	uint64_t min_gap = SPLIT_GAP + 1;
	if (ngaps >= MAX_ADDR_PANELS) {
		qsort(gaps, ngaps, sizeof(*gaps), cmp_u64);
		min_gap = gaps[ngaps - (MAX_ADDR_PANELS - 1)];
	}
	/* Highest addresses first, as they are drawn top-down. */
	size_t start = 0;
	struct tl_panel tmp[MAX_ADDR_PANELS];
	size_t k = 0;
	for (size_t i = 1; i <= m; i++) {
		if (i < m && (ys[i] - ys[i - 1] < min_gap || k == MAX_ADDR_PANELS - 1))
			continue;
		uint64_t lo = ys[start] / c->page * c->page;
		uint64_t hi = ys[i - 1] / c->page * c->page + c->page;
		tmp[k++] = (struct tl_panel){ .file = 0, .lo = lo, .hi = hi, .count = i - start };
		start = i;
	}
	for (size_t i = 0; i < k; i++)
		out[i] = tmp[k - 1 - i];
	*n = k;
out:
	free(gaps);
	free(ys);
	return err;
}

static int cmp_file_panels(const void *a, const void *b, void *arg)
{
	const struct tl_panel *x = a, *y = b;
	char **files = arg;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(files[x->file - 1], files[y->file - 1]);
}

int svg_timeline_write(const struct svg_timeline *tl, FILE *out, const struct svg_timeline_opts *opts)
{
	static const struct svg_timeline_opts defaults = { 0 };
	const struct svg_timeline_opts *o = opts ? opts : &defaults;
	struct tl_ctx c = { .tl = tl, .out = out };
	struct tl_panel panels[MAX_ADDR_PANELS + MAX_FILE_PANELS];
	struct tl_panel *fp = NULL;
	size_t npanels = 0, nfp = 0;
	uint64_t hidden_files = 0, hidden_faults = 0;
	int err;

	c.width = o->width ? o->width : 1200;
	if (c.width < LEFT + RIGHT + 100)
		c.width = LEFT + RIGHT + 100;
	c.plot_w = floor((c.width - LEFT - RIGHT) / CELL) * CELL;
	c.cols = (unsigned)(c.plot_w / CELL);
	c.page = o->page_size ? o->page_size : 4096;
	c.t0 = UINT64_MAX;
	for (size_t i = 0; i < tl->n; i++) {
		if (tl->pts[i].t < c.t0)
			c.t0 = tl->pts[i].t;
		if (tl->pts[i].t > c.t1)
			c.t1 = tl->pts[i].t;
		c.kinds_seen[tl->pts[i].kind] = true;
	}
	if (o->t0_ns && o->t0_ns <= c.t0)
		c.t0 = o->t0_ns;
	if (!tl->n)
		c.t0 = c.t1 = o->t0_ns;
	if (c.t1 - c.t0 < 1000000) /* at least 1 ms, so an instant still has a width */
		c.t1 = c.t0 + 1000000;

	err = addr_panels(&c, panels, &npanels);
	if (err)
		return err;
	if (tl->nfiles) {
		fp = calloc(tl->nfiles, sizeof(*fp));
		if (!fp)
			return -ENOMEM;
		for (size_t i = 0; i < tl->nfiles; i++)
			fp[i] = (struct tl_panel){ .file = (uint32_t)i + 1, .lo = 0, .hi = c.page };
		for (size_t i = 0; i < tl->n; i++)
			if (tl->pts[i].file) {
				struct tl_panel *p = &fp[tl->pts[i].file - 1];
				uint64_t end = tl->pts[i].y / c.page * c.page + c.page;
				p->count++;
				if (end > p->hi)
					p->hi = end;
			}
		qsort_r(fp, tl->nfiles, sizeof(*fp), cmp_file_panels, tl->files);
		for (nfp = 0; nfp < tl->nfiles && fp[nfp].count; nfp++) {
			if (nfp < MAX_FILE_PANELS) {
				panels[npanels++] = fp[nfp];
			} else {
				hidden_files++;
				hidden_faults += fp[nfp].count;
			}
		}
	}
	free(fp);

	c.grid = malloc((size_t)c.cols * (PANEL_H / CELL) * SVG_KIND_NR * sizeof(uint32_t));
	if (!c.grid)
		return -ENOMEM;

	double top = 92;
	double height = top + RATE_H + GAP + (double)npanels * (PANEL_H + GAP) + (hidden_files ? 20 : 0) + 10;
	svg_put_head(out, c.width, height, ".ax { stroke: rgb(90,90,90); stroke-width: 1; }\n"
		     ".pb { fill: white; stroke: rgb(200,200,200); }\n.cap { font-size: 12px; }\n",
		     o->title ? o->title : "Faults over time", o->subtitle);
	fputs("<!-- fltrace timeline: each cell is the faults of one time slice and address range, "
	      "coloured by the kind that dominates it, darker when it holds more faults. -->\n", out);
	/* Legend: the kinds present. */
	double lx = LEFT;
	fprintf(out, "<g id=\"legend\"><text x=\"%.1f\" y=\"64\">%zu faults; kind:</text>", lx, tl->n);
	lx += 150;
	for (int k = 0; k < SVG_KIND_NR; k++) {
		if (!c.kinds_seen[k])
			continue;
		struct svg_rgb rgb = svg_kind_colour(k);
		fprintf(out, "<rect x=\"%.1f\" y=\"54\" width=\"12\" height=\"12\" fill=\"rgb(%u,%u,%u)\"/>"
			     "<text x=\"%.1f\" y=\"64\">%s</text>", lx, rgb.r, rgb.g, rgb.b, lx + 16,
			svg_kind_name(k));
		lx += 90;
	}
	fputs("</g>\n", out);

	draw_rate(&c, top);
	top += RATE_H + GAP;
	for (size_t i = 0; i < npanels; i++) {
		draw_panel(&c, &panels[i], top);
		top += PANEL_H + GAP;
	}
	if (hidden_files)
		fprintf(out, "<text x=\"%d\" y=\"%.1f\">%llu more files with %llu faults not shown</text>\n",
			LEFT, top - 20, (unsigned long long)hidden_files, (unsigned long long)hidden_faults);
	fputs("</svg>\n", out);
	free(c.grid);
	return fflush(out) || ferror(out) ? -EIO : 0;
}
