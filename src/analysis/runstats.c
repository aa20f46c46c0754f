/* Stats files of a run: the last line of each process (written once a second and at exit) read
 * from the file's tail, summed over the processes, for record's summary, sweep and the index. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fltrace/statsline.h>

#include "runstats.h"

#define RUNSTATS_PREFIX "fltrace-data-stats-"
#define RUNSTATS_SUFFIX ".out"
#define RUNSTATS_TAIL 65536 /* a stats line is far shorter; only the last one is read */

/* How a field folds into struct runstats: summed counters, or the largest of the processes. */
static const struct runstats_field {
	const char *name;
	size_t off;
	bool max;
} runstats_fields[] = {
	{ "faults", offsetof(struct runstats, faults), false },
	{ "faults_zp", offsetof(struct runstats, zero), false },
	{ "faults_refetch", offsetof(struct runstats, refetch), false },
	{ "faults_file", offsetof(struct runstats, file), false },
	{ "faults_wp", offsetof(struct runstats, wp), false },
	{ "faults_syscall", offsetof(struct runstats, syscall), false },
	{ "faults_nostack", offsetof(struct runstats, nostack), false },
	{ "faults_sampled_out", offsetof(struct runstats, sampled_out), false },
	{ "faults_prefetch", offsetof(struct runstats, prefetch_hits), false },
	{ "prefetch_pages", offsetof(struct runstats, prefetch_pages), false },
	{ "prefetch_used", offsetof(struct runstats, prefetch_used), false },
	{ "prefetch_unused", offsetof(struct runstats, prefetch_unused), false },
	{ "prefetch_dropped", offsetof(struct runstats, prefetch_dropped), false },
	{ "keep_local_allocs", offsetof(struct runstats, keep_allocs), false },
	{ "keep_local_over", offsetof(struct runstats, keep_over), false },
	{ "keep_local_peak_bytes", offsetof(struct runstats, keep_peak), true },
	{ "resident_peak_bytes", offsetof(struct runstats, resident_peak), true },
	{ "far_peak_bytes", offsetof(struct runstats, far_peak), true },
	{ "vm_hwm", offsetof(struct runstats, vm_hwm), true },
	{ "untracked_rss_bytes", offsetof(struct runstats, untracked_rss), true },
	{ "untracked_map_bytes", offsetof(struct runstats, untracked_map), true },
	{ "untracked_shared_file_bytes", offsetof(struct runstats, untracked_shared_file), true },
	{ "untracked_loader_file_bytes", offsetof(struct runstats, untracked_loader_file), true },
	{ "localmem", offsetof(struct runstats, localmem), true },
	{ "far_replica_gets", offsetof(struct runstats, far_replica_gets), false },
	/* each process has its own connections and counts the same lost server: the largest */
	{ "far_servers_lost", offsetof(struct runstats, far_servers_lost), true },
};

/* The last complete line in buf[0, n) (the one before a line still being written, if any). */
static const char *runstats_pick_line(char *buf, size_t n, size_t *len)
{
	char *end = buf + n, *start;

	if (end[-1] == '\n') {
		end--;
	} else {
		char *nl = memrchr(buf, '\n', n);
		if (nl)
			end = nl;
	}
	start = memrchr(buf, '\n', (size_t)(end - buf));
	start = start ? start + 1 : buf;
	*len = (size_t)(end - start);
	return start;
}

/* Reads the tail of the file into buf and points *line at its last line; -errno on failure. */
static int runstats_tail(const char *path, char *buf, size_t size, const char **line, size_t *len)
{
	struct stat st;
	ssize_t n;
	off_t off;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		err = -errno;
	} else {
		off = st.st_size > (off_t)size ? st.st_size - (off_t)size : 0;
		n = pread(fd, buf, size, off);
		if (n < 0)
			err = -errno;
		else if (n == 0)
			err = -ENODATA;
		else
			*line = runstats_pick_line(buf, (size_t)n, len);
	}
	close(fd);
	return err;
}

/* The last line, malloc'd, in *out; 0 or -errno. */
static int runstats_read_last(const char *path, char **out)
{
	char *buf = malloc(RUNSTATS_TAIL);
	const char *line = NULL;
	size_t len = 0;
	int err = buf ? runstats_tail(path, buf, RUNSTATS_TAIL, &line, &len) : -ENOMEM;

	if (!err && !len)
		err = -ENODATA;
	if (!err && !(*out = strndup(line, len)))
		err = -ENOMEM;
	free(buf);
	return err;
}

char *runstats_last_line(const char *path)
{
	char *line = NULL;

	return runstats_read_last(path, &line) ? NULL : line;
}

int runstats_add_file(struct runstats *s, const char *path)
{
	char *line = NULL;
	size_t len;
	int err = runstats_read_last(path, &line);

	/* A process killed within its first second has an empty stats file: still a process. */
	if (err == -ENODATA)
		s->files++;
	if (err)
		return err == -ENODATA ? 0 : err;
	len = strlen(line);
	s->files++;
	for (size_t i = 0; i < sizeof(runstats_fields) / sizeof(runstats_fields[0]); i++) {
		const struct runstats_field *f = &runstats_fields[i];
		uint64_t *dst = (uint64_t *)((char *)s + f->off), v;

		if (statsline_get(line, len, f->name, &v) != 0)
			continue;
		if (!f->max)
			*dst += v;
		else if (v > *dst)
			*dst = v;
	}
	free(line);
	return 0;
}

bool runstats_is_stats_name(const char *name)
{
	size_t n = strlen(name), pn = strlen(RUNSTATS_PREFIX), sn = strlen(RUNSTATS_SUFFIX);

	return n > pn + sn && !strncmp(name, RUNSTATS_PREFIX, pn) &&
	       !strcmp(name + n - sn, RUNSTATS_SUFFIX);
}

int runstats_read_dir(struct runstats *s, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4096];

	memset(s, 0, sizeof(*s));
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!runstats_is_stats_name(de->d_name))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		/* Not a regular file (a directory named like one): open or read fails, skipped. */
		runstats_add_file(s, path);
	}
	closedir(d);
	return 0;
}

/* Accuracy as Leap and the readahead literature define it (prefetched pages used before they left
 * local memory), coverage as the share of this run's far accesses the prefetcher hid: a page hit
 * would have been a re-fetch without it. A paired run with --prefetch none gives the exact count
 * without it (sweep --prefetch does both). */
const char *runstats_prefetch_text(const struct runstats *s, char *buf, size_t cap)
{
	uint64_t far = s->prefetch_hits + s->refetch;
	char acc[48], cov[96];
	/* A ratio of nothing is not 0%: no page prefetched, or no far access at all. */
	if (s->prefetch_pages)
		snprintf(acc, sizeof(acc), "%.1f%%", 100.0 * (double)s->prefetch_used / (double)s->prefetch_pages);
	else
		snprintf(acc, sizeof(acc), "n/a");
	if (far)
		snprintf(cov, sizeof(cov), "%.1f%% (%llu hits / (hits + %llu re-fetches left))",
			 100.0 * (double)s->prefetch_hits / (double)far, (unsigned long long)s->prefetch_hits,
			 (unsigned long long)s->refetch);
	else
		snprintf(cov, sizeof(cov), "n/a (no page came back from far memory)");
	snprintf(buf, cap, "prefetched %llu pages: %llu used before eviction, %llu evicted unused, %llu "
		 "released unused; accuracy %s (used / prefetched); coverage %s",
		 (unsigned long long)s->prefetch_pages, (unsigned long long)s->prefetch_used,
		 (unsigned long long)s->prefetch_unused, (unsigned long long)s->prefetch_dropped, acc, cov);
	return buf;
}
