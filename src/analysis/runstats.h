/* The stats files of a run (fltrace-data-stats-<pid>.out): the last line of each process, its
 * counters summed over the processes and its peaks taken as the largest, for summaries. */
#ifndef FLTRACE_RUNSTATS_H
#define FLTRACE_RUNSTATS_H

#include <stdbool.h>
#include <stdint.h>

struct runstats {
	unsigned files;            /* stats files read (processes) */
	/* Counters, summed over processes. */
	uint64_t faults, zero, refetch, file, wp, syscall, nostack, sampled_out;
	/* --prefetch: faults on prefetched pages (hits), pages prefetched, used before eviction,
	 * evicted unused, released by the program unused */
	uint64_t prefetch_hits, prefetch_pages, prefetch_used, prefetch_unused, prefetch_dropped;
	/* --keep-local: allocations kept, their pages handed to the policy (kept pages filled -L) */
	uint64_t keep_allocs, keep_over;
	/* Peaks and sizes, the largest of any process (peaks of processes need not coincide). */
	uint64_t resident_peak, far_peak, vm_hwm, untracked_rss, untracked_map;
	uint64_t keep_peak;        /* --keep-local: bytes of kept pages, at their peak */
	uint64_t untracked_shared_file, untracked_loader_file;
	uint64_t localmem;         /* -L in bytes (the machine's memory when none was given) */
	/* --far memcached: re-fetches a replica answered (summed), servers given up (the most any
	 * process gave up: each has its own connections to the same servers) */
	uint64_t far_replica_gets, far_servers_lost;
};

/* Adds the last complete line of one stats file to *s (an empty file counts as a process with no
 * counts). 0, or -errno if it cannot be read (s is then unchanged). */
int runstats_add_file(struct runstats *s, const char *path);
/* Adds every fltrace-data-stats-*.out of dir to *s (zeroed first). 0 (s->files may be 0), or
 * -errno if dir cannot be listed. */
int runstats_read_dir(struct runstats *s, const char *dir);
/* Whether a directory entry name is a stats file. */
bool runstats_is_stats_name(const char *name);
/* "prefetched P pages: U used before eviction, E evicted unused, D released unused; accuracy
 * A% (used / prefetched); coverage C% (hits / (hits + re-fetches left))" into buf; returns buf. */
const char *runstats_prefetch_text(const struct runstats *s, char *buf, size_t cap);
/* The last complete line of a stats file (malloc'd, without the newline), or NULL. */
char *runstats_last_line(const char *path);

#endif
