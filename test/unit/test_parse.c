/* Unit tests of src/common/parse.c: every spelling of a size, and the refusals (zero, negative,
 * junk, unknown unit, overflow); bounded numbers. One line per case. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <fltrace/parse.h>

static int failures;

static void check_size(const char *name, const char *in, int want_err, uint64_t want)
{
	uint64_t got = 0xdeadbeef;
	int err = parse_size(in, PARSE_MIB, &got);

	if (err != want_err)
		printf("FAIL %s: parse_size(\"%s\") returned %d (%s), expected %d\n", name, in, err,
		       parse_strerror(err), want_err), failures++;
	else if (!err && got != want)
		printf("FAIL %s: parse_size(\"%s\") = %llu, expected %llu\n", name, in,
		       (unsigned long long)got, (unsigned long long)want), failures++;
	else
		printf("PASS %s\n", name);
}

static void check_u64(const char *name, const char *in, uint64_t min, uint64_t max, int want_err,
		      uint64_t want)
{
	uint64_t got = 0;
	int err = parse_u64(in, min, max, &got);

	if (err != want_err || (!err && got != want))
		printf("FAIL %s: parse_u64(\"%s\", %llu, %llu) = %d/%llu, expected %d/%llu\n", name, in,
		       (unsigned long long)min, (unsigned long long)max, err, (unsigned long long)got,
		       want_err, (unsigned long long)want), failures++;
	else
		printf("PASS %s\n", name);
}

static void check_strerror(void)
{
	int ok = 1;

	for (int e = 1; e <= PARSE_REVERSED; e++)
		if (!strncmp(parse_strerror(-e), "is invalid", 10))
			ok = 0;
	if (ok)
		printf("PASS parse_strerror_names_every_error\n");
	else
		printf("FAIL parse_strerror_names_every_error: a code has no message\n"), failures++;
}

int main(void)
{
	const uint64_t M = PARSE_MIB;

	check_size("size_plain_is_mb", "140", 0, 140 * M);
	check_size("size_suffix_M", "140M", 0, 140 * M);
	check_size("size_suffix_m", "140m", 0, 140 * M);
	check_size("size_suffix_MB", "140MB", 0, 140 * M);
	check_size("size_suffix_MiB", "140MiB", 0, 140 * M);
	check_size("size_suffix_K", "512K", 0, 512 * 1024);
	check_size("size_suffix_k", "512k", 0, 512 * 1024);
	check_size("size_suffix_G", "2G", 0, 2 * PARSE_GIB);
	check_size("size_suffix_g", "2g", 0, 2 * PARSE_GIB);
	check_size("size_suffix_gb", "2gb", 0, 2 * PARSE_GIB);
	check_size("size_suffix_T", "1T", 0, PARSE_TIB);
	check_size("size_fraction_G", "1.5G", 0, 3 * PARSE_GIB / 2);
	check_size("size_fraction_plain", "0.5", 0, M / 2);
	check_size("size_fraction_K_truncates", "1.0001K", 0, 1024);
	check_size("size_fraction_9_digits", "1.123456789G", 0,
		   PARSE_GIB + 123456789ull * PARSE_GIB / 1000000000ull);
	check_size("size_leading_zeros", "0140", 0, 140 * M);
	check_size("size_max_T", "16777215T", 0, 16777215ull * PARSE_TIB);
	check_size("size_zero", "0", -PARSE_ZERO, 0);
	check_size("size_zero_G", "0G", -PARSE_ZERO, 0);
	check_size("size_zero_fraction", "0.0", -PARSE_ZERO, 0);
	check_size("size_tiny_fraction_is_zero_bytes", "0.000000001K", -PARSE_ZERO, 0);
	check_size("size_negative", "-5", -PARSE_NEGATIVE, 0);
	check_size("size_negative_unit", "-5G", -PARSE_NEGATIVE, 0);
	check_size("size_dash_word_is_junk", "-x", -PARSE_JUNK, 0);
	check_size("size_empty", "", -PARSE_EMPTY, 0);
	check_size("size_null", NULL, -PARSE_EMPTY, 0);
	check_size("size_junk", "abc", -PARSE_JUNK, 0);
	check_size("size_plus_sign", "+5", -PARSE_JUNK, 0);
	check_size("size_leading_space", " 5", -PARSE_JUNK, 0);
	check_size("size_hex", "0x10", -PARSE_SUFFIX, 0);
	check_size("size_trailing_space", "5 ", -PARSE_SUFFIX, 0);
	check_size("size_unknown_unit", "5X", -PARSE_SUFFIX, 0);
	check_size("size_unit_then_junk", "5Gx", -PARSE_SUFFIX, 0);
	check_size("size_double_unit", "5MM", -PARSE_SUFFIX, 0);
	check_size("size_bare_B_refused", "4096B", -PARSE_SUFFIX, 0);
	check_size("size_dot_without_digits", "1.", -PARSE_JUNK, 0);
	check_size("size_dot_first", ".5", -PARSE_JUNK, 0);
	check_size("size_two_dots", "1.2.3", -PARSE_SUFFIX, 0);
	check_size("size_10_fraction_digits", "1.1234567891", -PARSE_JUNK, 0);
	check_size("size_overflow_digits", "99999999999999999999", -PARSE_RANGE, 0);
	check_size("size_overflow_unit", "99999999999999", -PARSE_RANGE, 0);
	check_size("size_overflow_T", "16777216T", -PARSE_RANGE, 0);
	check_size("size_near_max_with_fraction", "16777215.9999999T", 0,
		   16777215ull * PARSE_TIB + 9999999ull * PARSE_TIB / 10000000ull);
	check_size("size_overflow_max_plus_one_byte", "18446744073709551616K", -PARSE_RANGE, 0);

	check_u64("u64_plain", "64", 1, 512, 0, 64);
	check_u64("u64_min_edge", "1", 1, 512, 0, 1);
	check_u64("u64_max_edge", "512", 1, 512, 0, 512);
	check_u64("u64_above_max", "513", 1, 512, -PARSE_RANGE, 0);
	check_u64("u64_zero_refused", "0", 1, 512, -PARSE_ZERO, 0);
	check_u64("u64_zero_allowed", "0", 0, 10, 0, 0);
	check_u64("u64_below_min", "2", 3, 10, -PARSE_SMALL, 0);
	check_u64("u64_negative", "-1", 0, 10, -PARSE_NEGATIVE, 0);
	check_u64("u64_dash_word_is_junk", "-o", 0, 10, -PARSE_JUNK, 0);
	check_u64("u64_unit_refused", "5K", 0, 10, -PARSE_JUNK, 0);
	check_u64("u64_junk", "x", 0, 10, -PARSE_JUNK, 0);
	check_u64("u64_empty", "", 0, 10, -PARSE_EMPTY, 0);
	check_u64("u64_overflow", "18446744073709551616", 0, UINT64_MAX, -PARSE_RANGE, 0);
	check_u64("u64_max", "18446744073709551615", 0, UINT64_MAX, 0, UINT64_MAX);
	check_strerror();
	return failures ? 1 : 0;
}
