/* Shared pieces of the SVG/HTML writers: kind/access names and colours, XML escaping, text
 * cutting. No state; every function depends only on its arguments. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "svg_common.h"

static const char *const kind_names[SVG_KIND_NR] = {
	[SVG_KIND_ZERO] = "zero",
	[SVG_KIND_REFETCH] = "refetch",
	[SVG_KIND_FILE] = "file",
	[SVG_KIND_WP] = "wp",
	[SVG_KIND_SYSCALL] = "syscall",
	[SVG_KIND_PREFETCH] = "prefetch",
};

/* Per kind: read (light), write (mid), wp (dark) shades of one hue. The hues keep away from the
 * red-yellow of inner frames and from the magenta of search matches. */
static const struct svg_rgb leaf_colours[SVG_KIND_NR][SVG_ACC_NR] = {
	[SVG_KIND_ZERO] = { { 166, 219, 160 }, { 90, 180, 90 }, { 46, 139, 58 } },
	[SVG_KIND_REFETCH] = { { 158, 202, 225 }, { 80, 145, 205 }, { 43, 108, 176 } },
	[SVG_KIND_FILE] = { { 203, 201, 226 }, { 158, 154, 200 }, { 123, 95, 181 } },
	[SVG_KIND_WP] = { { 128, 205, 193 }, { 72, 170, 160 }, { 42, 143, 136 } },
	[SVG_KIND_SYSCALL] = { { 217, 217, 217 }, { 165, 165, 165 }, { 122, 122, 122 } },
	[SVG_KIND_PREFETCH] = { { 253, 208, 162 }, { 241, 150, 80 }, { 204, 102, 30 } },
};

const char *svg_kind_name(enum svg_kind kind)
{
	return (unsigned)kind < SVG_KIND_NR ? kind_names[kind] : "?";
}

int svg_kind_parse(const char *name)
{
	for (int k = 0; k < SVG_KIND_NR; k++)
		if (strcmp(name, kind_names[k]) == 0)
			return k;
	return -EINVAL;
}

char svg_access_letter(enum svg_access acc)
{
	return acc == SVG_ACC_WRITE ? 'w' : acc == SVG_ACC_WP ? 'p' : 'r';
}

const char *svg_access_name(enum svg_access acc)
{
	return acc == SVG_ACC_WRITE ? "write" : acc == SVG_ACC_WP ? "wrprotect" : "read";
}

struct svg_rgb svg_leaf_colour(enum svg_kind kind, enum svg_access acc)
{
	if ((unsigned)kind >= SVG_KIND_NR)
		kind = SVG_KIND_SYSCALL;
	if ((unsigned)acc >= SVG_ACC_NR)
		acc = SVG_ACC_READ;
	return leaf_colours[kind][acc];
}

struct svg_rgb svg_kind_colour(enum svg_kind kind)
{
	return svg_leaf_colour(kind, SVG_ACC_WRITE);
}

uint64_t svg_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

struct svg_rgb svg_name_colour(const char *name)
{
	/* Three independent-looking bytes of one hash give red 205..254, green 0..229 and a little
	 * blue: the "hot" look readers expect from a flamegraph, stable per name. */
	uint64_t h = svg_hash(name);
	struct svg_rgb c = {
		.r = (uint8_t)(205 + (h & 0xffff) % 50),
		.g = (uint8_t)((h >> 16 & 0xffff) % 230),
		.b = (uint8_t)((h >> 32 & 0xffff) % 55),
	};
	return c;
}

void svg_put_escaped_n(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default:
			/* XML 1.0 forbids most control characters even as references. */
			fputc(c < 0x20 || c == 0x7f ? ' ' : c, out);
		}
	}
}

void svg_put_escaped(FILE *out, const char *s)
{
	svg_put_escaped_n(out, s, SIZE_MAX);
}

static int utf8_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

size_t svg_fit_text(const char *s, double width_px, double font_px, int *cut)
{
	double adv = font_px * SVG_CHAR_WIDTH;
	size_t fit = adv > 0 && width_px > 0 ? (size_t)(width_px / adv) : 0;
	size_t chars = 0, len = strlen(s);

	*cut = 0;
	for (size_t i = 0; i < len; i++)
		chars += !utf8_cont((unsigned char)s[i]);
	if (chars <= fit)
		return len;
	if (fit < 3) /* room for at most one letter and "..": show nothing */
		return 0;
	/* Keep fit-2 characters, then "..". */
	size_t keep = fit - 2, i = 0, seen = 0;
	while (i < len) {
		if (!utf8_cont((unsigned char)s[i])) {
			if (seen == keep)
				break;
			seen++;
		}
		i++;
	}
	*cut = 1;
	return i;
}

void svg_put_head(FILE *out, double width, double height, const char *css, const char *title,
		  const char *subtitle)
{
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		     "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		     "viewBox=\"0 0 %.0f %.0f\" font-family=\"Verdana, sans-serif\" font-size=\"11\">\n",
		width, height, width, height);
	fprintf(out, "<style>\n%s#title { font-size: 17px; text-anchor: middle; }\n"
		     "#subtitle { fill: rgb(90,90,90); text-anchor: middle; }\n</style>\n", css ? css : "");
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"rgb(248,248,244)\"/>\n",
		width, height);
	fprintf(out, "<text id=\"title\" x=\"%.1f\" y=\"24\">", width / 2);
	svg_put_escaped(out, title);
	fputs("</text>\n", out);
	if (subtitle) {
		fprintf(out, "<text id=\"subtitle\" x=\"%.1f\" y=\"42\">", width / 2);
		svg_put_escaped(out, subtitle);
		fputs("</text>\n", out);
	}
}

void svg_fmt_bytes(char *buf, size_t len, double bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	size_t u = 0;
	while (bytes >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		bytes /= 1024;
		u++;
	}
	/* One decimal, none when it is 0: "8 MiB" beside "4.5 MiB", never "8.0 MiB" (7.97 MiB). */
	if (floor(bytes * 10 + 0.5) == floor(bytes + 0.5) * 10)
		snprintf(buf, len, "%.0f %s", floor(bytes + 0.5), units[u]);
	else
		snprintf(buf, len, "%.1f %s", bytes, units[u]);
}
