/* Shared pieces of the SVG/HTML writers: fault kind and access vocabulary, their colours, XML
 * escaping and name cutting. Pure functions of their inputs, so every picture is byte-stable. */
#ifndef FLTRACE_SVG_COMMON_H
#define FLTRACE_SVG_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a fault did, as the pictures colour it. SYSCALL wins over the others: a fault the kernel
 * took inside a system call is attributed to the call whatever it then had to do. */
enum svg_kind {
	SVG_KIND_ZERO = 0,    /* first touch, zero page ("allocation") */
	SVG_KIND_REFETCH = 1, /* evicted page fetched back */
	SVG_KIND_FILE = 2,    /* file-backed page read from its file */
	SVG_KIND_WP = 3,      /* write-protect fault */
	SVG_KIND_SYSCALL = 4, /* taken inside a system call */
	SVG_KIND_PREFETCH = 5, /* first touch of a prefetched page: a fault a prefetcher hid */
	SVG_KIND_NR = 6,
};

enum svg_access {
	SVG_ACC_READ = 0,
	SVG_ACC_WRITE = 1,
	SVG_ACC_WP = 2,
	SVG_ACC_NR = 3,
};

struct svg_rgb {
	uint8_t r, g, b;
};

/* Lower-case name used in legends, filters and CSV-like text: "zero", "refetch", ... */
const char *svg_kind_name(enum svg_kind kind);
/* Parse a kind name (as printed by svg_kind_name); returns the kind or -EINVAL. */
int svg_kind_parse(const char *name);
/* One letter of the leaf suffix: 'r', 'w', 'p'. */
char svg_access_letter(enum svg_access acc);
const char *svg_access_name(enum svg_access acc);

/* Fill of a leaf: the hue says the kind, the shade the access (read light, write mid, wp dark). */
struct svg_rgb svg_leaf_colour(enum svg_kind kind, enum svg_access acc);
/* Base colour of a kind (the write shade), for timelines and histograms. */
struct svg_rgb svg_kind_colour(enum svg_kind kind);
/* Warm colour of an inner frame, derived from a hash of its name: same name, same colour. */
struct svg_rgb svg_name_colour(const char *name);

/* 64-bit FNV-1a: stable across runs and machines, unlike pointer or hash-table order. */
uint64_t svg_hash(const char *s);

/* Write s XML-escaped (& < > " ') to out; control bytes become spaces so the XML stays valid. */
void svg_put_escaped(FILE *out, const char *s);
/* Same, at most n bytes of s. */
void svg_put_escaped_n(FILE *out, const char *s, size_t n);

/* How many bytes of s to show in a box of width_px at font_px so that the text fits; sets *cut
 * when the shown part must be followed by "..". Returns 0 when not even two letters fit.
 * Never cuts inside a UTF-8 sequence. */
size_t svg_fit_text(const char *s, double width_px, double font_px, int *cut);

/* The opening of a picture: the XML declaration, <svg> of width x height, a <style> with the
 * title's and subtitle's rules plus css, the background, the title and (if not NULL) the subtitle.
 * The caller writes the rest and the closing </svg>. */
void svg_put_head(FILE *out, double width, double height, const char *css, const char *title,
		  const char *subtitle);

/* "12 KiB", "1.5 MiB", "3 GiB", "512 B". */
void svg_fmt_bytes(char *buf, size_t len, double bytes);

/* Average glyph advance as a share of the font size (Verdana-like sans at small sizes). */
#define SVG_CHAR_WIDTH 0.59

#endif
