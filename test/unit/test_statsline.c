/* Unit tests of src/common/statsline.c: reading name:value fields from a stats line, as
 * `fltrace record` does for its summary. One line per case. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <fltrace/statsline.h>

static int failures;

static void check(const char *name, const char *line, const char *field, int want_err,
		  uint64_t want)
{
	uint64_t got = 0;
	int err = statsline_get(line, strlen(line), field, &got);

	if (err != want_err || (!err && got != want))
		printf("FAIL %s: %s in \"%s\" = %d/%llu, expected %d/%llu\n", name, field, line, err,
		       (unsigned long long)got, want_err, (unsigned long long)want), failures++;
	else
		printf("PASS %s\n", name);
}

int main(void)
{
	const char *line = "1795343161,faults:319077,faults_r:88094,resident_peak_bytes:146804736,"
			   "far_peak_bytes:0\n";

	check("statsline_first_field", line, "faults", 0, 319077);
	check("statsline_prefix_not_confused", line, "faults_r", 0, 88094);
	check("statsline_middle_field", line, "resident_peak_bytes", 0, 146804736);
	check("statsline_last_field_newline", line, "far_peak_bytes", 0, 0);
	check("statsline_absent", line, "evict_ops", -ENOENT, 0);
	check("statsline_timestamp_skipped", "1795343161.5,faults:3", "1795343161.5", -ENOENT, 0);
	check("statsline_no_fields", "1795343161", "faults", -ENOENT, 0);
	check("statsline_not_a_number", "1,faults:12x", "faults", -EINVAL, 0);
	check("statsline_empty_value", "1,faults:", "faults", -EINVAL, 0);
	check("statsline_overflow", "1,faults:18446744073709551616", "faults", -EINVAL, 0);
	check("statsline_crlf", "1,faults:7\r\n", "faults", 0, 7);
	/* Only the given length counts: a line cut out of a larger buffer. */
	{
		const char *buf = "1,faults:123\n2,faults:456\n";
		uint64_t v = 0;
		int err = statsline_get(buf, 12, "faults", &v);
		if (err || v != 123)
			printf("FAIL statsline_length_bounded: got %d/%llu\n", err,
			       (unsigned long long)v), failures++;
		else
			printf("PASS statsline_length_bounded\n");
	}
	return failures ? 1 : 0;
}
