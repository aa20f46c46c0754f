/* Tables of names (policies, prefetchers): looking a name up and listing them for a message, shared
 * so that every table answers the same way. */
#ifndef FLTRACE_NAMES_H
#define FLTRACE_NAMES_H

#include <stddef.h>

/* The index of `name` in names[0..n), -1 if it is not there (or is NULL). */
int names_find(const char *const *names, unsigned n, const char *name);
/* "a, b or c" into buf; returns buf. */
const char *names_list(const char *const *names, unsigned n, char *buf, size_t cap);

#endif
