/* Latency renderer: fault service time per kind as log2 histograms (µs buckets), one panel per
 * kind with min/avg/percentiles, in the manner of SystemTap's @hist_log output. */
#ifndef FLTRACE_SVG_LATENCY_H
#define FLTRACE_SVG_LATENCY_H

#include <stdint.h>
#include <stdio.h>

#include "svg_common.h"

/* Bucket 0 holds < 1 µs; bucket i >= 1 holds [2^(i-1), 2^i) µs. 2^32 ns is about 2^22 µs. */
#define SVG_LAT_BUCKETS 24

struct svg_latency;

struct svg_latency_opts {
	const char *title;    /* NULL: "Fault service time" */
	const char *subtitle;
	unsigned width;       /* px; 0 means 1200 */
};

struct svg_latency *svg_latency_new(void);
void svg_latency_free(struct svg_latency *lt);
int svg_latency_add(struct svg_latency *lt, enum svg_kind kind, uint64_t latency_ns);
/* Count in a bucket (for tests). */
uint64_t svg_latency_bucket(const struct svg_latency *lt, enum svg_kind kind, unsigned bucket);
/* The bucket of a latency. */
unsigned svg_latency_bucket_of(uint64_t latency_ns);
int svg_latency_write(const struct svg_latency *lt, FILE *out, const struct svg_latency_opts *opts);
/* "850 ns", "12.3 µs", "4.50 ms", "1.20 s" */
void svg_fmt_ns(char *buf, size_t len, double ns);

#endif
