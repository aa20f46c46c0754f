/* Unit tests of src/common/crc32c.c, the checksum of trace records: the standard check value,
 * the instruction and the bit-by-bit loop agreeing at every length and split. One line per case. */
#include <stdio.h>
#include <string.h>

#include <fltrace/crc32c.h>

static int failures;

static void report(const char *name, int ok, const char *why)
{
	if (ok)
		printf("PASS %s\n", name);
	else
		printf("FAIL %s: %s\n", name, why), failures++;
}

int main(void)
{
	unsigned char buf[300];
	char why[128] = "";
	int ok = 1;

	report("crc32c_check_value", crc32c(0, "123456789", 9) == 0xe3069283u &&
	       crc32c_portable(0, "123456789", 9) == 0xe3069283u, "CRC-32C of \"123456789\" is not e3069283");
	report("crc32c_empty", crc32c(0, "", 0) == 0 && crc32c(0x1234u, "", 0) == 0x1234u,
	       "no bytes must change nothing");
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 131 + 7);
	/* Every length (the 8-byte steps and the byte tail), and continuing across a split. */
	for (size_t n = 0; n <= sizeof(buf) && ok; n++) {
		uint32_t whole = crc32c(0, buf, n);
		if (whole != crc32c_portable(0, buf, n)) {
			snprintf(why, sizeof(why), "length %zu: %08x vs %08x", n, whole,
				 crc32c_portable(0, buf, n));
			ok = 0;
		}
		for (size_t k = 0; k <= n && ok; k += 7)
			if (crc32c(crc32c(0, buf, k), buf + k, n - k) != whole) {
				snprintf(why, sizeof(why), "length %zu split at %zu differs", n, k);
				ok = 0;
			}
	}
	report("crc32c_instruction_matches_loop", ok, why);
	/* One bit flipped anywhere changes it. */
	ok = 1;
	uint32_t base = crc32c(0, buf, 72);
	for (size_t bit = 0; bit < 72 * 8 && ok; bit++) {
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		if (crc32c(0, buf, 72) == base) {
			snprintf(why, sizeof(why), "bit %zu flipped went unnoticed", bit);
			ok = 0;
		}
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
	}
	report("crc32c_every_bit_flip_seen", ok, why);
	return failures ? 1 : 0;
}
