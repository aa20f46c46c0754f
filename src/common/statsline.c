/* Field lookup in a stats line (see inc/fltrace/statsline.h), used by `fltrace record` for its
 * summary; kept pure so that a unit test covers it. */
#include <fltrace/statsline.h>

#include <errno.h>
#include <string.h>

/* Parses the digits of [s, end) into *out: -EINVAL unless it is all digits and fits. */
static int statsline_value(const char *s, const char *end, uint64_t *out)
{
	uint64_t v = 0;

	if (s == end)
		return -EINVAL;
	for (; s < end; s++) {
		uint64_t d;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		d = (uint64_t)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int statsline_get(const char *line, size_t len, const char *name, uint64_t *out)
{
	const char *end = line + len;
	const char *p = memchr(line, ',', len);
	size_t nlen = strlen(name);

	while (end > line && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	while (p && p < end) {
		const char *field = p + 1;
		const char *next = memchr(field, ',', (size_t)(end - field));
		const char *fend = next ? next : end;

		if ((size_t)(fend - field) > nlen && !memcmp(field, name, nlen) && field[nlen] == ':')
			return statsline_value(field + nlen + 1, fend, out);
		p = next;
	}
	return -ENOENT;
}
