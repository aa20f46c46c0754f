/* Tables of names (inc/fltrace/names.h): the lookup and the "a, b or c" list every table's error
 * messages use. */
#include <fltrace/fmt.h>
#include <fltrace/names.h>

#include <string.h>

int names_find(const char *const *names, unsigned n, const char *name)
{
	for (unsigned i = 0; i < n; i++)
		if (name && strcmp(name, names[i]) == 0)
			return (int)i;
	return -1;
}

const char *names_list(const char *const *names, unsigned n, char *buf, size_t cap)
{
	struct fmt f;
	fmt_init(&f, buf, cap);
	for (unsigned i = 0; i < n; i++) {
		if (i)
			fmt_str(&f, i + 1 == n ? " or " : ", ");
		fmt_str(&f, names[i]);
	}
	return buf;
}
