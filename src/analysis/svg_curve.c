/* Miss-ratio curve renderer: two stacked panels sharing a log2 local-memory axis whose ticks are
 * the swept sizes, a line and a dot (with a tooltip) per run, one colour per policy. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "svg_curve.h"
#include "svg_timeline.h" /* svg_nice_step */

#define CURVE_LEFT 96.0
#define CURVE_RIGHT 170.0 /* legend */
#define CURVE_TOP 64.0
#define CURVE_PANEL_H 260.0
#define CURVE_GAP 70.0
#define CURVE_MAX_TICKS 64

/* Line colours per series, in order; darker than the flamegraph hues so lines read on white. */
static const struct svg_rgb curve_colours[] = {
	{ 43, 108, 176 }, { 217, 95, 2 }, { 27, 158, 119 }, { 117, 112, 179 }, { 231, 41, 138 },
	{ 102, 102, 102 },
};
#define CURVE_NCOLOURS (sizeof(curve_colours) / sizeof(curve_colours[0]))

struct curve_ctx {
	FILE *out;
	const struct svg_curve_series *s;
	size_t ns;
	double width, plot_w;
	double lx_min, lx_max;            /* log2 of the smallest and largest size */
	uint64_t ticks[CURVE_MAX_TICKS];  /* distinct sizes, ascending */
	size_t nticks;
};

enum curve_panel { CURVE_REFETCH, CURVE_SLOWDOWN };

/* A panel's y axis: linear from 0 to hi, or logarithmic (re-fetches: log10(1 + v), so that 0
 * has a place; slowdown: log2 v) from lo to hi, in the mapped values. */
struct curve_scale {
	bool log;
	enum curve_panel which;
	double lo, hi;
};

static double curve_map(const struct curve_scale *sc, double v)
{
	if (!sc->log)
		return v;
	return sc->which == CURVE_REFETCH ? log10(1 + v) : log2(v > 1e-3 ? v : 1e-3);
}

static double curve_y(const struct curve_scale *sc, double top, double v)
{
	double span = sc->hi - sc->lo;

	return top + CURVE_PANEL_H - CURVE_PANEL_H * (span > 0 ? (curve_map(sc, v) - sc->lo) / span : 0);
}

static double curve_value(const struct svg_curve_point *p, enum curve_panel which)
{
	return which == CURVE_REFETCH ? (double)p->refetch : p->slowdown;
}

static double curve_x(const struct curve_ctx *c, uint64_t bytes)
{
	double span = c->lx_max - c->lx_min;

	if (!(span > 0))
		return CURVE_LEFT + c->plot_w / 2;
	/* 4% padding either side keeps the end dots off the frame. */
	return CURVE_LEFT + c->plot_w * (0.04 + 0.92 * (log2((double)bytes) - c->lx_min) / span);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void curve_collect_ticks(struct curve_ctx *c)
{
	size_t n = 0;

	for (size_t i = 0; i < c->ns; i++)
		for (size_t k = 0; k < c->s[i].n && n < CURVE_MAX_TICKS; k++)
			c->ticks[n++] = c->s[i].pts[k].localmem;
	qsort(c->ticks, n, sizeof(c->ticks[0]), cmp_u64);
	c->nticks = 0;
	for (size_t i = 0; i < n; i++)
		if (c->ticks[i] && (!c->nticks || c->ticks[c->nticks - 1] != c->ticks[i]))
			c->ticks[c->nticks++] = c->ticks[i];
	c->lx_min = c->nticks ? log2((double)c->ticks[0]) : 0;
	c->lx_max = c->nticks ? log2((double)c->ticks[c->nticks - 1]) : 1;
}

/* The points of a series sorted by size (a copy). */
static struct svg_curve_point *curve_sorted(const struct svg_curve_series *s)
{
	struct svg_curve_point *p = malloc((s->n ? s->n : 1) * sizeof(*p));

	if (!p)
		return NULL;
	memcpy(p, s->pts, s->n * sizeof(*p));
	/* Insertion sort: a sweep has a handful of sizes, and this keeps equal sizes in order. */
	for (size_t i = 1; i < s->n; i++)
		for (size_t k = i; k > 0 && p[k - 1].localmem > p[k].localmem; k--) {
			struct svg_curve_point t = p[k];
			p[k] = p[k - 1];
			p[k - 1] = t;
		}
	return p;
}

static double curve_max(const struct curve_ctx *c, enum curve_panel which)
{
	double max = 0;

	for (size_t i = 0; i < c->ns; i++)
		for (size_t k = 0; k < c->s[i].n; k++) {
			double v = curve_value(&c->s[i].pts[k], which);
			if (v > max)
				max = v;
		}
	return max;
}

static void curve_fmt_value(char *buf, size_t len, double v, enum curve_panel which)
{
	if (which == CURVE_REFETCH)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.2f", v);
}

/* A tick's text: the label of a point at that size if one has it, else the size. */
static void curve_tick_label(const struct curve_ctx *c, uint64_t size, char *buf, size_t len)
{
	for (size_t i = 0; i < c->ns; i++)
		for (size_t k = 0; k < c->s[i].n; k++)
			if (c->s[i].pts[k].localmem == size && c->s[i].pts[k].label) {
				snprintf(buf, len, "%s", c->s[i].pts[k].label);
				return;
			}
	svg_fmt_bytes(buf, len, (double)size);
}

static void curve_grid_line(const struct curve_ctx *c, const struct curve_scale *sc, double top,
			    double v, const char *text)
{
	double y = curve_y(sc, top, v);

	fprintf(c->out, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
		CURVE_LEFT, y, CURVE_LEFT + c->plot_w, y, CURVE_LEFT - 6, y + 4, text);
}

/* Frame, y grid with labels, x ticks at the swept sizes, axis titles. */
static void curve_axes(const struct curve_ctx *c, double top, const struct curve_scale *sc,
		       double step)
{
	FILE *o = c->out;
	double bottom = top + CURVE_PANEL_H, ymax = sc->hi;
	enum curve_panel which = sc->which;
	char buf[64];

	fprintf(o, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
		CURVE_LEFT, top, c->plot_w, CURVE_PANEL_H);
	if (sc->log) {
		/* Re-fetches: 0, 1, 10, 100...; slowdown: powers of two. */
		if (which == CURVE_REFETCH)
			curve_grid_line(c, sc, top, 0, "0");
		for (double e = which == CURVE_REFETCH ? 0 : sc->lo; e <= sc->hi + 1e-9; e++) {
			double v = which == CURVE_REFETCH ? pow(10, e) : pow(2, e);
			if (which == CURVE_REFETCH)
				snprintf(buf, sizeof(buf), "%.0f", v);
			else
				snprintf(buf, sizeof(buf), v < 1 ? "%.2g" : "%.0f", v);
			curve_grid_line(c, sc, top, v, buf);
		}
	}
	for (double v = 0; !sc->log && v <= ymax * (1 + 1e-9); v += step) {
		curve_fmt_value(buf, sizeof(buf), v, which);
		if (which == CURVE_SLOWDOWN && step >= 1)
			snprintf(buf, sizeof(buf), "%.0f", v);
		curve_grid_line(c, sc, top, v, buf);
	}
	for (size_t i = 0; i < c->nticks; i++) {
		double x = curve_x(c, c->ticks[i]);
		curve_tick_label(c, c->ticks[i], buf, sizeof(buf));
		fprintf(o, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x, bottom, x, bottom + 5,
			x, bottom + 18);
		svg_put_escaped(o, buf);
		fputs("</text>\n", o);
	}
	fprintf(o, "<text class=\"axt\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">local memory "
		   "(-L, log scale)</text>\n", CURVE_LEFT + c->plot_w / 2, bottom + 36);
	fprintf(o, "<text class=\"axt\" transform=\"translate(%.1f,%.1f) rotate(-90)\" "
		   "text-anchor=\"middle\">%s%s</text>\n", 18.0, top + CURVE_PANEL_H / 2,
		which == CURVE_REFETCH ? "re-fetches (pages)" : "slowdown (\xc3\x97)",
		sc->log ? ", log scale" : "");
}

static int curve_series(const struct curve_ctx *c, size_t i, double top,
			const struct curve_scale *sc)
{
	enum curve_panel which = sc->which;
	const struct svg_curve_series *s = &c->s[i];
	struct svg_rgb rgb = curve_colours[i % CURVE_NCOLOURS];
	struct svg_curve_point *p = curve_sorted(s);
	FILE *o = c->out;
	char v[64], sz[32];

	if (!p)
		return -ENOMEM;
	fputs("<polyline class=\"curve\" data-panel=\"", o);
	fputs(which == CURVE_REFETCH ? "refetch" : "slowdown", o);
	fputs("\" data-policy=\"", o);
	svg_put_escaped(o, s->name);
	fprintf(o, "\" stroke=\"rgb(%u,%u,%u)\"", rgb.r, rgb.g, rgb.b);
	/* Policies often agree (a scan misses under both): dashes keep a hidden line visible. */
	if (i % 2)
		fputs(" stroke-dasharray=\"9,5\"", o);
	fputs(" points=\"", o);
	for (size_t k = 0, first = 1; k < s->n; k++) {
		double val = curve_value(&p[k], which);
		if (val < 0)
			continue;
		fprintf(o, "%s%.1f,%.1f", first ? "" : " ", curve_x(c, p[k].localmem),
			curve_y(sc, top, val));
		first = 0;
	}
	fputs("\"/>\n", o);
	for (size_t k = 0; k < s->n; k++) {
		double val = curve_value(&p[k], which);
		if (val < 0)
			continue;
		curve_fmt_value(v, sizeof(v), val, which);
		svg_fmt_bytes(sz, sizeof(sz), (double)p[k].localmem);
		fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"rgb(%u,%u,%u)\"><title>",
			curve_x(c, p[k].localmem), curve_y(sc, top, val), rgb.r, rgb.g, rgb.b);
		svg_put_escaped(o, s->name);
		fprintf(o, " at %s: %s%s</title></circle>\n", sz, v,
			which == CURVE_REFETCH ? " re-fetches" : "\xc3\x97");
	}
	free(p);
	return 0;
}

static void curve_legend(const struct curve_ctx *c, double top)
{
	double x = CURVE_LEFT + c->plot_w + 16;

	for (size_t i = 0; i < c->ns; i++) {
		struct svg_rgb rgb = curve_colours[i % CURVE_NCOLOURS];
		double y = top + 14 + 20.0 * (double)i;
		fprintf(c->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"rgb(%u,%u,%u)\" "
				"stroke-width=\"3\"%s/><text x=\"%.1f\" y=\"%.1f\">", x, y, x + 24, y,
			rgb.r, rgb.g, rgb.b, i % 2 ? " stroke-dasharray=\"9,5\"" : "", x + 30, y + 4);
		svg_put_escaped(c->out, c->s[i].name);
		fputs("</text>\n", c->out);
	}
}

/* The smallest positive slowdown of any run (1 if none is below it). */
static double curve_min_slowdown(const struct curve_ctx *c)
{
	double min = 1;

	for (size_t i = 0; i < c->ns; i++)
		for (size_t k = 0; k < c->s[i].n; k++)
			if (c->s[i].pts[k].slowdown > 0 && c->s[i].pts[k].slowdown < min)
				min = c->s[i].pts[k].slowdown;
	return min;
}

/* One panel, linear (class "lin") or logarithmic (class "log", shown instead when the picture's
 * root has class "logy": the "log scale" button and #log toggle it). */
static int curve_panel(const struct curve_ctx *c, double top, enum curve_panel which,
		       const char *caption, bool log)
{
	double max = curve_max(c, which), step = 0;
	struct curve_scale sc = { .log = log, .which = which };
	int err = 0;

	if (which == CURVE_SLOWDOWN && max < 1)
		max = 1;
	if (!log) {
		step = svg_nice_step(max > 0 ? max : 1, 5);
		sc.hi = ceil((max > 0 ? max : 1) / step - 1e-9) * step;
	} else if (which == CURVE_REFETCH) {
		sc.hi = ceil(log10(1 + (max > 0 ? max : 1)) - 1e-9); /* up to a power of ten */
	} else {
		sc.lo = floor(log2(curve_min_slowdown(c)) + 1e-9);
		sc.hi = ceil(log2(max) - 1e-9);
		if (sc.hi <= sc.lo)
			sc.hi = sc.lo + 1;
	}
	fprintf(c->out, "<g class=\"panel %s\" id=\"%s%s\">\n<text class=\"cap\" x=\"%.1f\" y=\"%.1f\">",
		log ? "log" : "lin", which == CURVE_REFETCH ? "refetch" : "slowdown", log ? "-log" : "",
		CURVE_LEFT, top - 10);
	svg_put_escaped(c->out, caption);
	fputs("</text>\n", c->out);
	curve_axes(c, top, &sc, step);
	for (size_t i = 0; i < c->ns && !err; i++)
		err = curve_series(c, i, top, &sc);
	curve_legend(c, top);
	fputs("</g>\n", c->out);
	return err;
}

int svg_curve_write(FILE *out, const struct svg_curve_series *s, size_t nseries,
		    const struct svg_curve_opts *opts)
{
	static const struct svg_curve_opts defaults = { 0 };
	const struct svg_curve_opts *o = opts ? opts : &defaults;
	struct curve_ctx c = { .out = out, .s = s, .ns = nseries };
	double height = CURVE_TOP + 2 * CURVE_PANEL_H + CURVE_GAP + 60;
	char cap[512];
	int err;

	c.width = o->width >= 500 ? o->width : 1000;
	c.plot_w = c.width - CURVE_LEFT - CURVE_RIGHT;
	curve_collect_ticks(&c);
	svg_put_head(out, c.width, height, ".cap { font-size: 12px; font-weight: bold; }\n"
		     ".axt { fill: rgb(60,60,60); }\n.frame { fill: white; stroke: rgb(90,90,90); }\n"
		     ".ax { stroke: rgb(90,90,90); }\n.grid { stroke: rgb(225,225,225); }\n"
		     ".curve { fill: none; stroke-width: 2.5; }\n.log, .logy .lin { display: none; }\n"
		     ".logy .log { display: inline; }\n.btn { cursor: pointer; fill: rgb(40,40,40); "
		     "text-decoration: underline; }\n",
		     o->title ? o->title : "Miss-ratio curve", o->subtitle);
	/* The y axes, linear or logarithmic: both are drawn, a click (or #log in the link) picks. */
	fprintf(out, "<text id=\"scale\" class=\"btn\" x=\"%.1f\" y=\"24\" text-anchor=\"end\">log "
		     "scale</text>\n<script type=\"text/ecmascript\"><![CDATA[\n"
		     "function setLog(on) {\n"
		     "  document.documentElement.classList.toggle('logy', on);\n"
		     "  document.getElementById('scale').textContent = on ? 'linear scale' : 'log scale';\n"
		     "  document.documentElement.setAttribute('data-state', on ? 'log' : 'linear');\n"
		     "}\n"
		     "window.addEventListener('load', function () {\n"
		     "  document.getElementById('scale').addEventListener('click', function () {\n"
		     "    setLog(!document.documentElement.classList.contains('logy')); });\n"
		     "  setLog(window.location.hash === '#log');\n"
		     "});\n]]></script>\n", c.width - 12);
	snprintf(cap, sizeof(cap), "Slowdown: wall time relative to %s",
		 o->baseline ? o->baseline : "the largest size");
	err = 0;
	for (int log = 0; log < 2 && !err; log++) {
		err = curve_panel(&c, CURVE_TOP + 10, CURVE_REFETCH,
				  "Re-fetches: pages fetched back from far memory", log);
		if (!err)
			err = curve_panel(&c, CURVE_TOP + 10 + CURVE_PANEL_H + CURVE_GAP, CURVE_SLOWDOWN,
					  cap, log);
	}
	fputs("</svg>\n", out);
	if (err)
		return err;
	return fflush(out) || ferror(out) ? -EIO : 0;
}
