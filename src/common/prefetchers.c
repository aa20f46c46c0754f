/* Names and help of the prefetchers (inc/fltrace/prefetchers.h): looked up by the CLI and by the
 * runtime, which both refuse a name that is not in the table. */
#include <fltrace/names.h>
#include <fltrace/prefetchers.h>

#define PREFETCH_NAME_ROW(name, help) #name,
#define PREFETCH_HELP_ROW(name, help) help,
static const char *const prefetch_names[] = { FLTRACE_PREFETCHERS(PREFETCH_NAME_ROW) };
static const char *const prefetch_helps[] = { FLTRACE_PREFETCHERS(PREFETCH_HELP_ROW) };

int fltrace_prefetch_find(const char *name)
{
	return names_find(prefetch_names, FLTRACE_PREFETCH_COUNT, name);
}

const char *fltrace_prefetch_name(unsigned id)
{
	return id < FLTRACE_PREFETCH_COUNT ? prefetch_names[id] : "?";
}

const char *fltrace_prefetch_help(unsigned id)
{
	return id < FLTRACE_PREFETCH_COUNT ? prefetch_helps[id] : "";
}

const char *fltrace_prefetch_list(char *buf, size_t cap)
{
	return names_list(prefetch_names, FLTRACE_PREFETCH_COUNT, buf, cap);
}
