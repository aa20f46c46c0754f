/* Reading one line of a stats file fltrace-data-stats-<pid>.out:
 * "<unix time>,name:value,name:value,...". Pure: no allocation, no stdio. */
#ifndef FLTRACE_STATSLINE_H
#define FLTRACE_STATSLINE_H

#include <stddef.h>
#include <stdint.h>

/* The unsigned value of field `name` in the line (len bytes, need not be NUL-terminated; the
 * leading time stamp is skipped). Returns 0, -ENOENT if the field is absent, -EINVAL if its value
 * is not a plain unsigned number. */
int statsline_get(const char *line, size_t len, const char *name, uint64_t *out);

#endif
