/* The eviction policies, one row each: the one list that `fltrace record` (names, --help), the
 * runtime (src/runtime/policy.c: name -> operations) and the trace reader (a header's policy number
 * is its row) share. Adding a policy: src/runtime/policy_<name>.c defining `policy_<name>`, a row here. */
#ifndef FLTRACE_POLICIES_H
#define FLTRACE_POLICIES_H

#include <stddef.h>

/* X(name, what it does and what it costs): rows keep their place (traces store the row number). */
#define FLTRACE_POLICIES(X)                                                                        \
	X(fifo, "evict in arrival order; no recency, no extra faults")                             \
	X(clock, "second chance with a quarter of -L on probation: recency close to LRU, at one " \
		 "soft fault per touch of a page there (up to 5x the real faults on bfs)")           \
	X(random, "evict resident pages at random (a baseline; seeded, reproducible)")             \
	X(sfifo, "segmented FIFO: probation only for the next pages to go, sized to keep soft "    \
		 "faults under 1/40 of the pages brought in: fewer faults than fifo where pages are "    \
		 "reused, at about its time")                                                             \
	X(2q, "two FIFOs as in 2Q, recency from re-fetches alone: a page re-fetched soon after it "  \
	      "left the short one joins the long one. 4-37% fewer faults than fifo where pages are "  \
	      "reused, none more on scans; no soft faults, 8-16 bytes per page of -L")

/* The default: measured in make bench (src/runtime/README.md, "Eviction policies"). */
#define FLTRACE_POLICY_DEFAULT "2q"

#define FLTRACE_POLICY_ENUM_ROW(name, help) FLTRACE_POLICY_##name,
enum fltrace_policy { FLTRACE_POLICIES(FLTRACE_POLICY_ENUM_ROW) FLTRACE_POLICY_COUNT };
#undef FLTRACE_POLICY_ENUM_ROW

int fltrace_policy_find(const char *name);    /* its row, -1 if there is no such policy */
const char *fltrace_policy_name(unsigned id); /* "?" past the table */
const char *fltrace_policy_help(unsigned id);
/* "fifo, clock, random, sfifo or 2q" into buf (for error messages); returns buf */
const char *fltrace_policy_list(char *buf, size_t cap);

#endif
