/* CPU lists as the kernel writes them ("0-3,6"): parse, test, format. Pure (no allocation, no
 * stdio), so the CLI validates --cores and the runtime reads FLTRACE_CORES with the same code. */
#ifndef FLTRACE_CPULIST_H
#define FLTRACE_CPULIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPULIST_MAX 1024 /* CPU ids 0 .. CPULIST_MAX-1 */

struct cpulist {
	uint64_t bits[CPULIST_MAX / 64];
};

/* Parses "0", "0,1", "0-3,6" (a trailing newline is allowed, as in sysfs files) into *out.
 * Returns 0 or -PARSE_* (inc/fltrace/parse.h): -PARSE_EMPTY, -PARSE_JUNK for syntax or a
 * reversed range, -PARSE_RANGE for a CPU id >= CPULIST_MAX. */
int cpulist_parse(const char *s, struct cpulist *out);

bool cpulist_has(const struct cpulist *l, unsigned cpu);
unsigned cpulist_count(const struct cpulist *l);

/* The lowest CPU of `want` that `have` lacks, or -1 if `want` is a subset of `have`. */
int cpulist_first_missing(const struct cpulist *want, const struct cpulist *have);

/* Writes the canonical form ("0-3,6") with its NUL into buf. Returns the length without the NUL,
 * or -1 if buf is too small. */
int cpulist_format(const struct cpulist *l, char *buf, size_t len);

#endif
