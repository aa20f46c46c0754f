/* Unit tests of src/common/cpulist.c: parsing the sysfs CPU-list syntax, subset checks and the
 * canonical form written into FLTRACE_CORES. One line per case. */
#include <stdio.h>
#include <string.h>

#include <fltrace/cpulist.h>
#include <fltrace/parse.h>

static int failures;

/* Parses `in`, expects `want_err`, and on success the canonical form `want`. */
static void check(const char *name, const char *in, int want_err, const char *want)
{
	struct cpulist l;
	char buf[256];
	int err = cpulist_parse(in, &l);

	if (err != want_err) {
		printf("FAIL %s: cpulist_parse(\"%s\") = %d, expected %d\n", name, in, err, want_err);
		failures++;
		return;
	}
	if (!err && (cpulist_format(&l, buf, sizeof(buf)) < 0 || strcmp(buf, want))) {
		printf("FAIL %s: \"%s\" formats as \"%s\", expected \"%s\"\n", name, in, buf, want);
		failures++;
		return;
	}
	printf("PASS %s\n", name);
}

static void check_true(const char *name, int cond, const char *why)
{
	if (cond)
		printf("PASS %s\n", name);
	else
		printf("FAIL %s: %s\n", name, why), failures++;
}

static void check_sets(void)
{
	struct cpulist want, have, big;
	char small[4];

	cpulist_parse("0,1", &want);
	cpulist_parse("0-3", &have);
	check_true("cpulist_subset", cpulist_first_missing(&want, &have) == -1, "0,1 within 0-3");
	cpulist_parse("1,5", &want);
	check_true("cpulist_first_missing", cpulist_first_missing(&want, &have) == 5, "5 missing");
	check_true("cpulist_count", cpulist_count(&have) == 4, "0-3 has 4");
	check_true("cpulist_has", cpulist_has(&have, 3) && !cpulist_has(&have, 4) &&
		   !cpulist_has(&have, CPULIST_MAX), "3 in, 4 and CPULIST_MAX out");
	cpulist_parse("0-1023", &big);
	check_true("cpulist_format_too_small", cpulist_format(&want, small, sizeof(small)) == 3 &&
		   cpulist_format(&big, small, 3) == -1, "'1,5' fits 4 bytes, '0-1023' not 3");
	check_true("cpulist_format_full", cpulist_count(&big) == CPULIST_MAX, "all CPUs");
}

int main(void)
{
	check("cpulist_single", "0", 0, "0");
	check("cpulist_comma", "0,1", 0, "0-1");
	check("cpulist_range", "0-1", 0, "0-1");
	check("cpulist_mixed", "0-3,6,8-9", 0, "0-3,6,8-9");
	check("cpulist_unsorted_dup", "6,0-2,1", 0, "0-2,6");
	check("cpulist_sysfs_newline", "0-1\n", 0, "0-1");
	check("cpulist_degenerate_range", "3-3", 0, "3");
	check("cpulist_last_cpu", "1023", 0, "1023");
	check("cpulist_empty", "", -PARSE_EMPTY, "");
	check("cpulist_junk", "a", -PARSE_JUNK, "");
	check("cpulist_trailing_comma", "0,", -PARSE_JUNK, "");
	check("cpulist_leading_comma", ",0", -PARSE_JUNK, "");
	check("cpulist_reversed", "3-1", -PARSE_REVERSED, "");
	check("cpulist_open_range", "1-", -PARSE_JUNK, "");
	check("cpulist_negative", "-1", -PARSE_JUNK, "");
	check("cpulist_space", "0, 1", -PARSE_JUNK, "");
	check("cpulist_too_large", "1024", -PARSE_RANGE, "");
	check("cpulist_overflow", "99999999999", -PARSE_RANGE, "");
	check_sets();
	return failures ? 1 : 0;
}
