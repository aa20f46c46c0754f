/* A tiny text builder for code that must not call stdio or touch locale data (the preload
 * runtime formats from stack buffers; glibc's printf may read locale data from the program's heap). */
#ifndef FLTRACE_FMT_H
#define FLTRACE_FMT_H

#include <stddef.h>
#include <stdint.h>

struct fmt {
	char *buf;
	size_t cap, len; /* len may exceed cap-1: the text was cut; buf stays NUL-terminated */
};

void fmt_init(struct fmt *f, char *buf, size_t cap);
void fmt_str(struct fmt *f, const char *s);
void fmt_mem(struct fmt *f, const char *s, size_t n);
void fmt_char(struct fmt *f, char c);
void fmt_u64(struct fmt *f, uint64_t v);
void fmt_i64(struct fmt *f, int64_t v);
void fmt_hex(struct fmt *f, uint64_t v); /* lowercase, no 0x */
/* v / 10^decimals with exactly `decimals` digits after the point, e.g. (1234, 3) -> 1.234 */
void fmt_fixed(struct fmt *f, uint64_t v, unsigned decimals);
size_t fmt_len(const struct fmt *f); /* bytes actually in buf */

#endif
