/* Unit tests of the SVG/HTML writers (src/analysis/svg_*.c): determinism, escaping, cutting,
 * tooltip counts, layout options, binning of large timelines, latency buckets, the index page. */
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/analysis/svg_common.h"
#include "../../src/analysis/svg_flame.h"
#include "../../src/analysis/svg_curve.h"
#include "../../src/analysis/svg_index.h"
#include "../../src/analysis/svg_latency.h"
#include "../../src/analysis/svg_timeline.h"

static char why[512];

#define CHECK(cond, ...)                                             \
	do {                                                         \
		if (!(cond)) {                                       \
			snprintf(why, sizeof(why), __VA_ARGS__);     \
			goto fail;                                   \
		}                                                    \
	} while (0)

/* Render into a malloc'ed string (caller frees). */
static char *flame_render(const struct svg_flame *fl, const struct svg_flame_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	if (svg_flame_write(fl, f, o) != 0) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static size_t count_str(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static int add3(struct svg_flame *fl, const char *a, const char *b, const char *c, uint64_t n,
		enum svg_access acc, enum svg_kind kind)
{
	const char *fr[] = { a, b, c };
	return svg_flame_add(fl, fr, c ? 3 : b ? 2 : 1, n, acc, kind);
}

static int t_flame_deterministic(void)
{
	struct svg_flame *x = svg_flame_new(), *y = svg_flame_new();
	char *a = NULL, *b = NULL, *c = NULL;
	int ok = 0;
	CHECK(x && y, "out of memory");
	/* Same samples, opposite order of adding. */
	add3(x, "main", "alloc", "memset [w]", 30, SVG_ACC_WRITE, SVG_KIND_ZERO);
	add3(x, "main", "scan", "load [r]", 10, SVG_ACC_READ, SVG_KIND_REFETCH);
	add3(x, "main", "alloc", "memset [w]", 5, SVG_ACC_WRITE, SVG_KIND_ZERO);
	add3(y, "main", "alloc", "memset [w]", 5, SVG_ACC_WRITE, SVG_KIND_ZERO);
	add3(y, "main", "scan", "load [r]", 10, SVG_ACC_READ, SVG_KIND_REFETCH);
	add3(y, "main", "alloc", "memset [w]", 30, SVG_ACC_WRITE, SVG_KIND_ZERO);
	a = flame_render(x, NULL);
	b = flame_render(x, NULL);
	c = flame_render(y, NULL);
	CHECK(a && b && c, "render failed");
	CHECK(strcmp(a, b) == 0, "two renders of the same graph differ");
	CHECK(strcmp(a, c) == 0, "order of adding changed the output");
	ok = 1;
fail:
	free(a), free(b), free(c);
	svg_flame_free(x), svg_flame_free(y);
	return ok;
}

static int t_flame_escape(void)
{
	struct svg_flame *x = svg_flame_new();
	char *s = NULL;
	int ok = 0;
	CHECK(x, "out of memory");
	add3(x, "main", "f<T>(a&b, \"q\", 'c')", NULL, 1, SVG_ACC_READ, SVG_KIND_ZERO);
	s = flame_render(x, &(struct svg_flame_opts){ .title = "t<&>", .width = 2000, .minwidth = 0 });
	CHECK(s, "render failed");
	CHECK(strstr(s, "f&lt;T&gt;(a&amp;b, &quot;q&quot;, &#39;c&#39;) (1 faults, 100.00%)"),
	      "escaped name with its tooltip not found");
	CHECK(strstr(s, "t&lt;&amp;&gt;"), "title not escaped");
	CHECK(!strstr(s, "f<T>") && !strstr(s, "a&b"), "raw special characters in the output");
	ok = 1;
fail:
	free(s);
	svg_flame_free(x);
	return ok;
}

static int t_fit_text(void)
{
	int cut;
	/* 12 px font: 7.08 px a letter. */
	CHECK(svg_fit_text("abc", 100, 12, &cut) == 3 && !cut, "short text was cut");
	size_t n = svg_fit_text("abcdefghijklmnopqrstuvwxyz", 71, 12, &cut); /* 10 letters fit */
	CHECK(cut && n == 8, "expected 8 letters and .., got %zu cut=%d", n, cut);
	CHECK(svg_fit_text("abcdefgh", 15, 12, &cut) == 0, "a 2-letter box must stay empty");
	/* "é" is two bytes: never split it. */
	n = svg_fit_text("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 30, 12, &cut); /* 4 fit */
	CHECK(cut && n == 4, "UTF-8 cut at %zu bytes, expected 4", n);
	return 1;
fail:
	return 0;
}

static int t_flame_cut(void)
{
	struct svg_flame *x = svg_flame_new();
	char *s = NULL;
	int ok = 0;
	CHECK(x, "out of memory");
	/* A frame of ~1/10 of 1180 px: ~118 px, 16 letters at most. */
	add3(x, "main", "a_very_long_function_name_that_cannot_fit_in_its_frame", NULL, 1,
	     SVG_ACC_READ, SVG_KIND_ZERO);
	add3(x, "main", "other", NULL, 9, SVG_ACC_READ, SVG_KIND_ZERO);
	s = flame_render(x, NULL);
	CHECK(s, "render failed");
	const char *t = strstr(s, "a_very_long_function_name_that_cannot_fit_in_its_frame (1 faults, 10.00%)");
	CHECK(t, "full name missing from the tooltip");
	t = strstr(t, "<text");
	CHECK(t, "no label");
	t = strchr(t, '>') + 1;
	const char *end = strstr(t, "</text>");
	CHECK(end - t >= 4 && end - t <= 16 && !memcmp(end - 2, "..", 2),
	      "label '%.*s' not cut to fit with ..", (int)(end - t), t);
	ok = 1;
fail:
	free(s);
	svg_flame_free(x);
	return ok;
}

static int t_flame_tooltips(void)
{
	struct svg_flame *x = svg_flame_new();
	char *s = NULL;
	int ok = 0;
	CHECK(x, "out of memory");
	add3(x, "main", "foo", "leaf [w]", 30, SVG_ACC_WRITE, SVG_KIND_ZERO);
	add3(x, "main", "bar", NULL, 10, SVG_ACC_READ, SVG_KIND_FILE);
	CHECK(svg_flame_total(x) == 40, "total %llu", (unsigned long long)svg_flame_total(x));
	s = flame_render(x, &(struct svg_flame_opts){ .title = "T", .minwidth = -1 });
	CHECK(s, "render failed");
	CHECK(strstr(s, "<title>all (40 faults, 100.00%)"), "root tooltip");
	CHECK(strstr(s, "<title>main (40 faults, 100.00%)"), "main tooltip");
	CHECK(strstr(s, "<title>foo (30 faults, 75.00%)"), "foo tooltip");
	CHECK(strstr(s, "<title>bar (10 faults, 25.00%)&#10;ends here: file/read 10 (100.00%)"),
	      "bar tooltip with its leaf line");
	CHECK(count_str(s, "<g class=\"f\">") == 5, "expected 5 frames, got %zu",
	      count_str(s, "<g class=\"f\">"));
	/* Leaves take the kind/access colour. */
	struct svg_rgb c = svg_leaf_colour(SVG_KIND_ZERO, SVG_ACC_WRITE);
	char fill[64];
	snprintf(fill, sizeof(fill), "fill=\"rgb(%u,%u,%u)\"", c.r, c.g, c.b);
	CHECK(strstr(strstr(s, "leaf [w] ("), fill), "leaf not coloured zero/write");
	CHECK(strstr(s, "Reset Zoom") && strstr(s, ">Search<") && strstr(s, "Matched: "),
	      "zoom/search controls missing");
	CHECK(count_str(s, "<g") == count_str(s, "</g>"), "unbalanced <g>");
	ok = 1;
fail:
	free(s);
	svg_flame_free(x);
	return ok;
}

static int t_flame_minwidth_inverted(void)
{
	struct svg_flame *x = svg_flame_new();
	char *s = NULL, *inv = NULL;
	int ok = 0;
	CHECK(x, "out of memory");
	add3(x, "main", "big", NULL, 100000, SVG_ACC_READ, SVG_KIND_ZERO);
	add3(x, "main", "tiny", "deeper", 1, SVG_ACC_READ, SVG_KIND_ZERO);
	s = flame_render(x, &(struct svg_flame_opts){ .minwidth = 1 });
	CHECK(s, "render failed");
	CHECK(!strstr(s, "tiny (") && !strstr(s, "deeper ("), "a frame under minwidth was drawn");
	inv = flame_render(x, &(struct svg_flame_opts){ .minwidth = 1, .inverted = true });
	CHECK(inv, "render failed");
	/* Icicle: the root sits right under the header; flame: at the bottom. */
	const char *r = strstr(strstr(inv, "all (100001"), "<rect");
	CHECK(r && !strncmp(strstr(r, "y=\""), "y=\"64.0\"", 8), "inverted root not at the top");
	r = strstr(strstr(s, "all (100001"), "<rect");
	CHECK(r && strncmp(strstr(r, "y=\""), "y=\"64.0\"", 8), "flame root at the top");
	CHECK(strstr(inv, "inv: 1") && strstr(s, "inv: 0"), "script not told the layout");
	ok = 1;
fail:
	free(s), free(inv);
	svg_flame_free(x);
	return ok;
}

static int t_flame_empty(void)
{
	struct svg_flame *x = svg_flame_new();
	char *s = NULL;
	int ok = 0;
	CHECK(x, "out of memory");
	s = flame_render(x, NULL);
	CHECK(s && strstr(s, "no faults to show") && strstr(s, "</svg>"), "empty graph not drawn");
	CHECK(svg_flame_add(x, NULL, 0, 2, SVG_ACC_READ, SVG_KIND_ZERO) == 0, "add of no stack");
	free(s);
	s = flame_render(x, NULL);
	CHECK(s && strstr(s, "[no stack] (2 faults"), "no-stack sample not filed under [no stack]");
	CHECK(svg_flame_add(x, NULL, 0, 1, SVG_ACC_NR, SVG_KIND_ZERO) == -EINVAL, "bad access accepted");
	/* A stack deeper than the renderer's stack buffer still goes in. */
	const char *deep[2000];
	for (size_t i = 0; i < 2000; i++)
		deep[i] = i % 2 ? "odd" : "even";
	CHECK(svg_flame_add(x, deep, 2000, 1, SVG_ACC_READ, SVG_KIND_ZERO) == 0, "deep stack refused");
	free(s);
	s = flame_render(x, &(struct svg_flame_opts){ .minwidth = 0 });
	CHECK(s && count_str(s, "<title>odd (1 faults") == 1000, "deep stack not drawn whole");
	ok = 1;
fail:
	free(s);
	svg_flame_free(x);
	return ok;
}

static int t_flame_colours(void)
{
	struct svg_rgb a = svg_name_colour("main"), b = svg_name_colour("main");
	CHECK(a.r == b.r && a.g == b.g && a.b == b.b, "name colour not stable");
	CHECK(a.r >= 205, "inner frames are warm");
	CHECK(svg_kind_parse("refetch") == SVG_KIND_REFETCH && svg_kind_parse("nope") == -EINVAL,
	      "kind names");
	return 1;
fail:
	return 0;
}

static char *timeline_render(const struct svg_timeline *tl, const struct svg_timeline_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	int err = svg_timeline_write(tl, f, o);
	fclose(f);
	if (err) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int t_timeline_million(void)
{
	struct svg_timeline *tl = svg_timeline_new();
	char *s = NULL, *s2 = NULL;
	int ok = 0;
	CHECK(tl, "out of memory");
	/* A heap scan and a mmap area far apart, plus a file read backwards. */
	uint64_t t0 = 1700000000ull * 1000000000ull;
	for (uint64_t i = 0; i < 1000000; i++) {
		uint64_t t = t0 + i * 3000; /* 3 s */
		if (i % 10 == 0)
			CHECK(!svg_timeline_add(tl, t, (1000000 - i) * 4096, SVG_KIND_FILE, "/lib/x<y>.so"), "add");
		else if (i % 3 == 0)
			CHECK(!svg_timeline_add(tl, t, 0x7f0000000000ull + (i % 50000) * 4096,
						SVG_KIND_REFETCH, NULL), "add");
		else
			CHECK(!svg_timeline_add(tl, t, 0x555500000000ull + i * 64, SVG_KIND_ZERO, NULL), "add");
	}
	s = timeline_render(tl, &(struct svg_timeline_opts){ .t0_ns = t0 });
	s2 = timeline_render(tl, &(struct svg_timeline_opts){ .t0_ns = t0 });
	CHECK(s && s2, "render failed");
	CHECK(strcmp(s, s2) == 0, "not deterministic");
	CHECK(strlen(s) < 3u << 20, "1M points gave %zu bytes", strlen(s));
	CHECK(count_str(s, ">addresses 0x") == 2, "expected 2 address panels, got %zu",
	      count_str(s, ">addresses 0x"));
	CHECK(strstr(s, "file /lib/x&lt;y&gt;.so (offset in file"), "file panel caption");
	CHECK(strstr(s, "text-anchor=\"end\">0x7f00"), "hex tick labels");
	CHECK(strstr(s, ">0.0 s<") && strstr(s, ">2.5 s<"), "time ticks 0.0 s .. 2.5 s");
	CHECK(strstr(s, "fault rate"), "rate panel");
	ok = 1;
fail:
	free(s), free(s2);
	svg_timeline_free(tl);
	return ok;
}

static int t_timeline_empty(void)
{
	struct svg_timeline *tl = svg_timeline_new();
	char *s = NULL;
	int ok = 0;
	CHECK(tl, "out of memory");
	s = timeline_render(tl, NULL);
	CHECK(s && strstr(s, "</svg>") && strstr(s, "0 faults"), "empty timeline");
	ok = 1;
fail:
	free(s);
	svg_timeline_free(tl);
	return ok;
}

static int t_axes(void)
{
	CHECK(svg_nice_step(10, 10) == 1, "nice 10/10 = %g", svg_nice_step(10, 10));
	CHECK(svg_nice_step(3, 10) > 0.49 && svg_nice_step(3, 10) < 0.51, "nice 3/10 = %g",
	      svg_nice_step(3, 10));
	CHECK(svg_nice_step(0.0042, 5) > 0.00099 && svg_nice_step(0.0042, 5) < 0.00101, "nice small");
	CHECK(svg_pow2_step(1 << 20, 4) == 1 << 18, "pow2 1M/4");
	CHECK(svg_pow2_step(0, 4) == 1, "pow2 of 0");
	char b[32];
	svg_fmt_bytes(b, sizeof(b), 1536 * 1024);
	CHECK(!strcmp(b, "1.5 MiB"), "fmt_bytes: %s", b);
	svg_fmt_bytes(b, sizeof(b), 512);
	CHECK(!strcmp(b, "512 B"), "fmt_bytes: %s", b);
	return 1;
fail:
	return 0;
}

static int t_latency(void)
{
	struct svg_latency *lt = svg_latency_new();
	char *buf = NULL;
	size_t len = 0;
	int ok = 0;
	CHECK(lt, "out of memory");
	CHECK(svg_latency_bucket_of(0) == 0 && svg_latency_bucket_of(999) == 0, "bucket < 1 µs");
	CHECK(svg_latency_bucket_of(1000) == 1 && svg_latency_bucket_of(1999) == 1, "bucket 1..2");
	CHECK(svg_latency_bucket_of(2000) == 2 && svg_latency_bucket_of(4000) == 3, "buckets 2, 4");
	CHECK(svg_latency_bucket_of(UINT64_MAX) == SVG_LAT_BUCKETS - 1, "saturation");
	for (int i = 0; i < 100; i++)
		svg_latency_add(lt, SVG_KIND_ZERO, 3000); /* 2..4 µs */
	svg_latency_add(lt, SVG_KIND_REFETCH, 150000);
	svg_latency_add(lt, SVG_KIND_WP, 500);
	CHECK(svg_latency_bucket(lt, SVG_KIND_ZERO, 2) == 100, "zero bucket 2");
	CHECK(svg_latency_bucket(lt, SVG_KIND_REFETCH, 8) == 1, "refetch bucket 8 (128..256 µs)");
	FILE *f = open_memstream(&buf, &len);
	CHECK(f, "memstream");
	CHECK(svg_latency_write(lt, f, NULL) == 0, "write");
	fclose(f);
	CHECK(strstr(buf, "zero faults: 100; min 3 \xc2\xb5s"), "zero summary");
	CHECK(strstr(buf, "2 .. 4 \xc2\xb5s: 100 faults (100.00%)"), "zero bucket tooltip");
	CHECK(strstr(buf, "refetch faults: 1;") && !strstr(buf, "file faults:"), "panels per kind present");
	CHECK(strstr(buf, "&lt; 1 \xc2\xb5s") && !strstr(buf, ">< "), "bucket label not escaped");
	ok = 1;
fail:
	free(buf);
	svg_latency_free(lt);
	return ok;
}

static int t_index(void)
{
	const char *argv[] = { "./prog", "<arg>", "a&b" };
	uint64_t p1[SVG_KIND_NR] = { 7, 0, 0, 0, 0 }, p2[SVG_KIND_NR] = { 0, 0, 3, 0, 0 };
	const struct callsite sites[] = { { "fill<T>", "prog.c:19<<<prog.c:40", "prog", p1, 7, 7,
					    "prog.c:19" },
					  { "__memcpy_evex", "memcpy.S:3", "libc.so.6", p2, 3, 3,
					    "prog.c:30" } };
	struct svg_index_info in = {
		.pid = 42, .exe = "/bin/prog", .argv = argv, .argc = 3,
		.options = { { "localmem", "64 MiB" } }, .noptions = 1,
		.faults = 10, .by_kind = { [SVG_KIND_ZERO] = 7, [SVG_KIND_FILE] = 3 },
		.has_peak = true, .peak_bytes = 3u << 20,
		.stats_line = "1795343161,faults:10,resident_peak_bytes:2097152,far_peak_bytes:1048576,"
			      "untracked_rss_bytes:524288,untracked_map_bytes:8192,untracked_maps:2,"
			      "vm_hwm:3145728\n",
		.localmem_bytes = 2u << 20, .has_slowdown = true, .slowdown = 2.5,
		.slowdown_of = "the ample run", .sites = sites, .nsites = 2,
		.images = { { "Flamegraph", "fltrace-data-flamegraph-42.svg" } }, .nimages = 1,
	};
	char *buf = NULL;
	size_t len = 0;
	int ok = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f, "memstream");
	CHECK(svg_index_write(f, &in) == 0, "write");
	fclose(f);
	CHECK(strstr(buf, "<code>./prog &lt;arg&gt; a&amp;b</code>"), "command line");
	CHECK(strstr(buf, "<th>zero</th><td>7 (70.00%)</td>"), "counts by kind");
	CHECK(strstr(buf, "3 MiB (3145728 bytes)"), "peak memory");
	CHECK(strstr(buf, "<th>vm_hwm</th><td>3145728</td>"), "stats table");
	CHECK(strstr(buf, "<p class=\"summary\"><b>10 faults</b>: 7 zero-filled first touches (70.0%), "
			  "3 file pages read (30.0%). It ran <b>2.50&times;</b> as long as the ample run. "
			  "Peak resident tracked memory <b>2 MiB</b> (local memory -L 2 MiB), peak far "
			  "memory <b>1 MiB</b>; peak RSS of the process 3 MiB. Not tracked: up to 512 KiB "),
	      "summary paragraph: %.400s", strstr(buf, "<p class=\"summary\">"));
	CHECK(strstr(buf, "8 KiB in 2 mappings mapped by the program but not tracked"), "untracked maps");
	CHECK(strstr(buf, "<tr><td>fill&lt;T&gt;</td><td title=\"prog.c:19&lt;&lt;&lt;prog.c:40\">"
			  "<code>prog.c:19</code></td><td title=\"prog.c:19\"><code>prog.c:19</code></td><td>prog</td>"
			  "<td class=\"n\">7</td><td class=\"n\">70.0</td><td class=\"n\">7</td>"),
	      "callsites row");
	CHECK(strstr(buf, "<code>memcpy.S:3</code></td><td title=\"prog.c:30\"><code>prog.c:30</code>"
			  "</td><td>libc.so.6"), "a leaf in libc beside the program's line that called it");
	/* The answer first, the pictures next, the raw stats last and folded. */
	const char *sum = strstr(buf, "class=\"summary\""), *tab = strstr(buf, "Top callsites"),
		   *obj = strstr(buf, "<object"), *det = strstr(buf, "<details>");
	CHECK(sum && tab && obj && det && sum < tab && tab < obj && obj < det &&
	      strstr(det, "</details>\n</body>"), "order of the index");
	CHECK(strstr(buf, "<object type=\"image/svg+xml\" data=\"fltrace-data-flamegraph-42.svg\">"),
	      "embedded image");
	ok = 1;
fail:
	free(buf);
	return ok;
}


static char *curve_render(const struct svg_curve_series *s, size_t n)
{
	struct svg_curve_opts o = { .title = "T", .subtitle = "./prog <x>", .baseline = "the ample run" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (svg_curve_write(f, s, n, &o)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static int t_curve(void)
{
	const struct svg_curve_point a[] = { { 16u << 20, 0, 1.0, "ample <16>" },
					     { 8u << 20, 6147, 1.5, NULL }, { 4u << 20, 6147, 2.0, NULL } };
	const struct svg_curve_point a_shuffled[] = { a[1], a[2], a[0] };
	const struct svg_curve_point b[] = { { 16u << 20, 0, 1.0, NULL }, { 4u << 20, 6000, -1, NULL } };
	struct svg_curve_series s[] = { { "clock", a, 3 }, { "f<i>fo", b, 2 } };
	struct svg_curve_series s2[] = { { "clock", a_shuffled, 3 }, { "f<i>fo", b, 2 } };
	char *x = curve_render(s, 2), *y = curve_render(s, 2), *z = curve_render(s2, 2);
	const char *line;
	int ok = 0;

	CHECK(x && y && z, "render failed");
	CHECK(!strcmp(x, y) && !strcmp(x, z), "two renders of the same points differ");
	CHECK(count_str(x, "<polyline class=\"curve\"") == 8, "expected 8 lines (2 scales x 2 panels x "
	      "2 policies), got %zu", count_str(x, "<polyline"));
	CHECK(count_str(x, "data-policy=\"f&lt;i&gt;fo\"") == 4, "policy name not escaped");
	/* fifo's unknown slowdown is left out of its slowdown line and gets no dot. */
	line = strstr(x, "data-panel=\"slowdown\" data-policy=\"f&lt;i&gt;fo\"");
	CHECK(line, "no fifo slowdown line");
	line = strstr(line, "points=\"");
	CHECK(line && strchr(line + 8, '"') - (line + 8) > 0 && !memchr(line + 8, ' ',
	      (size_t)(strchr(line + 8, '"') - (line + 8))), "fifo's slowdown line has more than one point");
	CHECK(count_str(x, "<circle") == 18, "expected 9 dots a scale, got %zu", count_str(x, "<circle"));
	/* The log scale: its own panels, hidden until the button or #log picks them; the re-fetch axis
	 * at 0 and powers of ten up to the 6147 re-fetches, the slowdown's at powers of two. */
	const char *lg = strstr(x, "<g class=\"panel log\" id=\"refetch-log\">");
	const char *lgs = strstr(x, "<g class=\"panel log\" id=\"slowdown-log\">");
	CHECK(lg && lgs && strstr(x, ".log, .logy .lin { display: none; }") &&
	      strstr(x, "<text id=\"scale\" class=\"btn\"") && strstr(x, "window.location.hash === '#log'"),
	      "no log panels or no switch");
	CHECK(strstr(lg, ">0</text>") && strstr(lg, ">10</text>") && strstr(lg, ">10000</text>") &&
	      !strstr(lg, ">100000</text>") && strstr(lg, "re-fetches (pages), log scale"), "log re-fetch axis");
	CHECK(strstr(lgs, ">1</text>") && strstr(lgs, ">2</text>") && !strstr(lgs, ">4</text>"),
	      "log slowdown axis");
	{
		char b8[32];
		svg_fmt_bytes(b8, sizeof(b8), 8357888); /* 7.97 MiB */
		CHECK(!strcmp(b8, "8 MiB"), "7.97 MiB printed as %s, not 8 MiB", b8);
	}
	CHECK(strstr(x, ">4 MiB</text>") && strstr(x, ">8 MiB</text>") &&
	      strstr(x, ">ample &lt;16&gt;</text>") && !strstr(x, ">16 MiB</text>"),
	      "x ticks are not the swept sizes, or the label of a point did not name its tick");
	CHECK(strstr(x, "clock at 8 MiB: 6147 re-fetches"), "dot tooltip");
	CHECK(strstr(x, "local memory (-L, log scale)") && strstr(x, ">re-fetches (pages)<") &&
	      strstr(x, "relative to the ample run"), "axis titles");
	/* Log axis: the 8 MiB tick lies halfway between the 4 and 16 MiB ones. */
	double tx[3] = { 0 };
	line = x;
	for (int i = 0; i < 3; i++) {
		line = strstr(line, "<line class=\"ax\" x1=\"");
		CHECK(line && sscanf(line, "<line class=\"ax\" x1=\"%lf\"", &tx[i]) == 1, "tick %d", i);
		line++;
	}
	CHECK(tx[0] < tx[1] && tx[1] < tx[2] && fabs((tx[1] - tx[0]) - (tx[2] - tx[1])) < 0.2,
	      "ticks at %.1f %.1f %.1f: not a log axis", tx[0], tx[1], tx[2]);
	ok = 1;
fail:
	free(x);
	free(y);
	free(z);
	return ok;
}

static const struct {
	const char *name;
	int (*fn)(void);
} cases[] = {
	{ "svg_flame_deterministic", t_flame_deterministic },
	{ "svg_flame_escape", t_flame_escape },
	{ "svg_fit_text", t_fit_text },
	{ "svg_flame_cut", t_flame_cut },
	{ "svg_flame_tooltips", t_flame_tooltips },
	{ "svg_flame_minwidth_inverted", t_flame_minwidth_inverted },
	{ "svg_flame_empty", t_flame_empty },
	{ "svg_colours", t_flame_colours },
	{ "svg_timeline_million", t_timeline_million },
	{ "svg_timeline_empty", t_timeline_empty },
	{ "svg_axes", t_axes },
	{ "svg_latency", t_latency },
	{ "svg_index", t_index },
	{ "svg_curve", t_curve },
};

int main(void)
{
	int failed = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why[0] = 0;
		if (cases[i].fn()) {
			printf("PASS %s\n", cases[i].name);
		} else {
			printf("FAIL %s: %s\n", cases[i].name, why);
			failed++;
		}
	}
	return failed ? 1 : 0;
}
