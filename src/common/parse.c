/* Pure parsers of sizes and bounded numbers (see inc/fltrace/parse.h). Hand-written rather than
 * strtoull because strtoull accepts "-5", leading spaces and "0x", which must be refused here. */
#include <fltrace/parse.h>

#include <stdbool.h>
#include <stddef.h>

#define PARSE_FRAC_DIGITS_MAX 9

static bool parse_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char parse_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Reads the digits at *p into *out, advancing *p. Returns 0, -PARSE_JUNK (no digit) or
 * -PARSE_RANGE (does not fit in 64 bits). */
static int parse_digits(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (!parse_is_digit(*s))
		return -PARSE_JUNK;
	for (; parse_is_digit(*s); s++) {
		uint64_t d = (uint64_t)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -PARSE_RANGE;
		v = v * 10 + d;
	}
	*p = s;
	*out = v;
	return 0;
}

/* The unit at s ("", "k", "M", "GiB", "tb"...): stores its multiplier, or returns -PARSE_SUFFIX. */
static int parse_unit(const char *s, uint64_t default_unit, uint64_t *unit)
{
	const char *rest = s + 1;

	switch (parse_lower(*s)) {
	case '\0': *unit = default_unit; return 0;
	case 'k': *unit = PARSE_KIB; break;
	case 'm': *unit = PARSE_MIB; break;
	case 'g': *unit = PARSE_GIB; break;
	case 't': *unit = PARSE_TIB; break;
	default: return -PARSE_SUFFIX;
	}
	if (parse_lower(rest[0]) == 'i' && parse_lower(rest[1]) == 'b')
		rest += 2;
	else if (parse_lower(rest[0]) == 'b')
		rest += 1;
	return *rest == '\0' ? 0 : -PARSE_SUFFIX;
}

/* The fraction digits after '.', as numerator over 10^digits. */
static int parse_fraction(const char **p, uint64_t *num, uint64_t *den)
{
	const char *s = *p;
	int n = 0;

	*num = 0;
	*den = 1;
	if (!parse_is_digit(*s))
		return -PARSE_JUNK;
	for (; parse_is_digit(*s); s++, n++) {
		if (n == PARSE_FRAC_DIGITS_MAX)
			return -PARSE_JUNK;
		*num = *num * 10 + (uint64_t)(*s - '0');
		*den *= 10;
	}
	*p = s;
	return 0;
}

/* A value starting with '-': a negative number, or words ("-x": not a number at all). */
static int parse_minus(const char *s)
{
	return (s[1] >= '0' && s[1] <= '9') || s[1] == '.' ? -PARSE_NEGATIVE : -PARSE_JUNK;
}

int parse_size(const char *s, uint64_t default_unit, uint64_t *bytes)
{
	uint64_t whole, num = 0, den = 1, unit, frac;
	int err;

	if (!s || !*s)
		return -PARSE_EMPTY;
	if (*s == '-')
		return parse_minus(s);
	err = parse_digits(&s, &whole);
	if (err)
		return err;
	if (*s == '.') {
		s++;
		err = parse_fraction(&s, &num, &den);
		if (err)
			return err;
	}
	err = parse_unit(s, default_unit, &unit);
	if (err)
		return err;
	if (whole > UINT64_MAX / unit)
		return -PARSE_RANGE;
	/* num * unit could overflow; split unit so that each product stays below 2^64
	 * (num < den <= 10^9, so num * (unit % den) < 10^18 and num * (unit / den) < unit). */
	frac = num * (unit / den) + num * (unit % den) / den;
	if (whole * unit > UINT64_MAX - frac)
		return -PARSE_RANGE;
	*bytes = whole * unit + frac;
	return *bytes == 0 ? -PARSE_ZERO : 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int err;

	if (!s || !*s)
		return -PARSE_EMPTY;
	if (*s == '-')
		return parse_minus(s);
	err = parse_digits(&s, &v);
	if (err)
		return err;
	if (*s != '\0')
		return -PARSE_JUNK;
	if (v > max)
		return -PARSE_RANGE;
	if (v < min)
		return v == 0 ? -PARSE_ZERO : -PARSE_SMALL;
	*out = v;
	return 0;
}

const char *parse_strerror(int err)
{
	switch (-err) {
	case PARSE_OK: return "is valid";
	case PARSE_EMPTY: return "is empty";
	case PARSE_NEGATIVE: return "is negative";
	case PARSE_JUNK: return "is not a number";
	case PARSE_SUFFIX: return "has an unknown unit (use K, M, G or T)";
	case PARSE_ZERO: return "is zero";
	case PARSE_RANGE: return "is too large";
	case PARSE_SMALL: return "is too small";
	case PARSE_REVERSED: return "is a range that ends before it starts";
	default: return "is invalid";
	}
}
