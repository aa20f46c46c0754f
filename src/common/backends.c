/* Names and help of the far-memory backends (inc/fltrace/backends.h): parsed by the CLI and by the
 * runtime, which both refuse a backend that is not in the table. */
#include <fltrace/backends.h>
#include <fltrace/fmt.h>

#include <stdbool.h>
#include <string.h>

#define BACKEND_NAME_ROW(name, arg, help) #name,
#define BACKEND_ARG_ROW(name, arg, help) arg,
#define BACKEND_HELP_ROW(name, arg, help) help,
static const char *const backend_names[] = { FLTRACE_BACKENDS(BACKEND_NAME_ROW) };
static const char *const backend_args[] = { FLTRACE_BACKENDS(BACKEND_ARG_ROW) };
static const char *const backend_helps[] = { FLTRACE_BACKENDS(BACKEND_HELP_ROW) };

int fltrace_backend_parse(const char *spec, const char **arg)
{
	*arg = NULL;
	if (!spec)
		return -1;
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	for (unsigned i = 0; i < FLTRACE_BACKEND_COUNT; i++) {
		if (strlen(backend_names[i]) != n || strncmp(spec, backend_names[i], n) != 0)
			continue;
		bool has_arg = colon && colon[1], takes = backend_args[i][0] != 0;
		if (!takes && colon)
			return -3;
		if (!has_arg && takes)
			return -2;
		*arg = has_arg ? colon + 1 : NULL;
		return (int)i;
	}
	return -1;
}

const char *fltrace_backend_name(unsigned id)
{
	return id < FLTRACE_BACKEND_COUNT ? backend_names[id] : "?";
}

const char *fltrace_backend_help(unsigned id)
{
	return id < FLTRACE_BACKEND_COUNT ? backend_helps[id] : "";
}

const char *fltrace_backend_list(char *buf, size_t cap)
{
	struct fmt f;
	fmt_init(&f, buf, cap);
	for (unsigned i = 0; i < FLTRACE_BACKEND_COUNT; i++) {
		if (i)
			fmt_str(&f, i + 1 == FLTRACE_BACKEND_COUNT ? " or " : ", ");
		fmt_str(&f, backend_names[i]);
		if (backend_args[i][0]) {
			fmt_str(&f, ":");
			fmt_str(&f, backend_args[i]);
		}
	}
	return buf;
}
