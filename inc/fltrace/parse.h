/* Pure parsers for command-line and environment values: sizes ("140", "2G", "1.5G") and bounded
 * unsigned numbers. No allocation, no stdio: linked into both the CLI and the preload library. */
#ifndef FLTRACE_PARSE_H
#define FLTRACE_PARSE_H

#include <stdint.h>

/* Why a value was refused. Returned negated as the error value of the parsers. */
enum parse_err {
	PARSE_OK = 0,
	PARSE_EMPTY = 1,    /* nothing to parse */
	PARSE_NEGATIVE = 2, /* a negative number ("-5") */
	PARSE_JUNK = 3,     /* not a number */
	PARSE_SUFFIX = 4,   /* a number followed by an unknown unit */
	PARSE_ZERO = 5,     /* zero where a positive value is needed */
	PARSE_RANGE = 6,    /* too large (overflow or above the caller's maximum) */
	PARSE_SMALL = 7,    /* below the caller's minimum */
	PARSE_REVERSED = 8, /* a range N-M with M below N */
};

#define PARSE_KIB (1ull << 10)
#define PARSE_MIB (1ull << 20)
#define PARSE_GIB (1ull << 30)
#define PARSE_TIB (1ull << 40)

/* A positive size. Digits with an optional fraction of up to 9 digits ("1.5"), then an optional
 * unit K, M, G or T (any case, binary multiples, optionally followed by "B" or "iB"). A number
 * without a unit is in `default_unit` bytes. Stores whole bytes (fractions are truncated).
 * Returns 0 or -PARSE_*; zero is refused (-PARSE_ZERO). */
int parse_size(const char *s, uint64_t default_unit, uint64_t *bytes);

/* A plain decimal unsigned number within [min, max]. Returns 0 or -PARSE_*. */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* A short phrase for an error of the parsers: "is not a number", ... */
const char *parse_strerror(int err);

#endif
