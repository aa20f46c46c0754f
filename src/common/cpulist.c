/* CPU list parsing and formatting (see inc/fltrace/cpulist.h): the sysfs "0-3,6" syntax,
 * kept in a fixed bitmap so that the runtime can use it without allocating. */
#include <fltrace/cpulist.h>
#include <fltrace/parse.h>

#include <string.h>

static void cpulist_set(struct cpulist *l, unsigned cpu)
{
	l->bits[cpu / 64] |= 1ull << (cpu % 64);
}

bool cpulist_has(const struct cpulist *l, unsigned cpu)
{
	return cpu < CPULIST_MAX && (l->bits[cpu / 64] >> (cpu % 64)) & 1;
}

unsigned cpulist_count(const struct cpulist *l)
{
	unsigned n = 0;

	for (unsigned i = 0; i < CPULIST_MAX / 64; i++)
		n += (unsigned)__builtin_popcountll(l->bits[i]);
	return n;
}

/* One CPU id at *p, advancing *p. */
static int cpulist_number(const char **p, unsigned *cpu)
{
	const char *s = *p;
	unsigned v = 0;

	if (*s < '0' || *s > '9')
		return -PARSE_JUNK;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (unsigned)(*s - '0');
		if (v >= CPULIST_MAX)
			return -PARSE_RANGE;
	}
	*p = s;
	*cpu = v;
	return 0;
}

/* One element "N" or "N-M" at *p, advancing *p. */
static int cpulist_element(const char **p, struct cpulist *out)
{
	unsigned lo, hi;
	int err = cpulist_number(p, &lo);

	if (err)
		return err;
	hi = lo;
	if (**p == '-') {
		(*p)++;
		err = cpulist_number(p, &hi);
		if (err)
			return err;
		if (hi < lo)
			return -PARSE_REVERSED;
	}
	for (unsigned c = lo; c <= hi; c++)
		cpulist_set(out, c);
	return 0;
}

int cpulist_parse(const char *s, struct cpulist *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (!s || !*s || *s == '\n')
		return -PARSE_EMPTY;
	for (;;) {
		err = cpulist_element(&s, out);
		if (err)
			return err;
		if (*s == ',') {
			s++;
			continue;
		}
		if (*s == '\n')
			s++;
		return *s == '\0' ? 0 : -PARSE_JUNK;
	}
}

int cpulist_first_missing(const struct cpulist *want, const struct cpulist *have)
{
	for (unsigned c = 0; c < CPULIST_MAX; c++)
		if (cpulist_has(want, c) && !cpulist_has(have, c))
			return (int)c;
	return -1;
}

/* Appends the decimal form of v at buf[*pos], keeping room for the NUL. */
static int cpulist_put_number(char *buf, size_t len, size_t *pos, unsigned v)
{
	char tmp[12];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (*pos + (size_t)n + 1 > len)
		return -1;
	while (n)
		buf[(*pos)++] = tmp[--n];
	return 0;
}

static int cpulist_put_char(char *buf, size_t len, size_t *pos, char c)
{
	if (*pos + 2 > len)
		return -1;
	buf[(*pos)++] = c;
	return 0;
}

int cpulist_format(const struct cpulist *l, char *buf, size_t len)
{
	size_t pos = 0;
	unsigned c = 0;

	if (len == 0)
		return -1;
	while (c < CPULIST_MAX) {
		unsigned lo;

		if (!cpulist_has(l, c)) {
			c++;
			continue;
		}
		lo = c;
		while (c + 1 < CPULIST_MAX && cpulist_has(l, c + 1))
			c++;
		if ((pos && cpulist_put_char(buf, len, &pos, ',')) ||
		    cpulist_put_number(buf, len, &pos, lo) ||
		    (c > lo && (cpulist_put_char(buf, len, &pos, '-') ||
				cpulist_put_number(buf, len, &pos, c))))
			return -1;
		c++;
	}
	buf[pos] = '\0';
	return (int)pos;
}
