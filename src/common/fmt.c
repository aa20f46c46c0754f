/* A tiny text builder without stdio or locale (see inc/fltrace/fmt.h for why it exists).
 * Output is cut, never overflowed, when the buffer is too small. */
#include "fltrace/fmt.h"

void fmt_init(struct fmt *f, char *buf, size_t cap)
{
	f->buf = buf;
	f->cap = cap;
	f->len = 0;
	if (cap)
		buf[0] = '\0';
}

void fmt_char(struct fmt *f, char c)
{
	if (f->len + 1 < f->cap) {
		f->buf[f->len] = c;
		f->buf[f->len + 1] = '\0';
	}
	f->len++;
}

void fmt_mem(struct fmt *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fmt_char(f, s[i]);
}

void fmt_str(struct fmt *f, const char *s)
{
	while (*s)
		fmt_char(f, *s++);
}

static void fmt_digits(struct fmt *f, uint64_t v, unsigned base, unsigned min_digits)
{
	char tmp[24];
	int n = 0;
	do {
		unsigned d = (unsigned)(v % base);
		tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
		v /= base;
	} while (v);
	while ((unsigned)n < min_digits)
		tmp[n++] = '0';
	while (n)
		fmt_char(f, tmp[--n]);
}

void fmt_u64(struct fmt *f, uint64_t v)
{
	fmt_digits(f, v, 10, 1);
}

void fmt_i64(struct fmt *f, int64_t v)
{
	if (v < 0) {
		fmt_char(f, '-');
		fmt_digits(f, (uint64_t)0 - (uint64_t)v, 10, 1);
	} else {
		fmt_digits(f, (uint64_t)v, 10, 1);
	}
}

void fmt_hex(struct fmt *f, uint64_t v)
{
	fmt_digits(f, v, 16, 1);
}

void fmt_fixed(struct fmt *f, uint64_t v, unsigned decimals)
{
	uint64_t scale = 1;
	for (unsigned i = 0; i < decimals; i++)
		scale *= 10;
	fmt_digits(f, v / scale, 10, 1);
	if (decimals) {
		fmt_char(f, '.');
		fmt_digits(f, v % scale, 10, decimals);
	}
}

size_t fmt_len(const struct fmt *f)
{
	if (!f->cap)
		return 0;
	return f->len < f->cap ? f->len : f->cap - 1;
}
