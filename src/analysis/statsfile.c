/* The runtime's stats file of one process, fltrace-data-stats-<pid>.out, as the offline commands
 * read it: its last line (the totals at exit), and why faults were recorded without a stack. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "runstats.h"
#include "fltrace/statsline.h"

char *stats_last_line(const char *dir, uint32_t pid)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/fltrace-data-stats-%u.out", dir, pid);
	return runstats_last_line(path);
}

/* The reasons in the order the runtime counts them (faults_nostack_<key>), said for a user. */
static const struct {
	const char *key, *said;
} nostack_why[] = {
	{ "faults_nostack_blocked", "the thread blocked the stack signal and had left its fault" },
	{ "faults_nostack_moved", "the stack signal arrived after the thread had left its fault" },
	{ "faults_nostack_unwind", "unwinding found no frame" },
	{ "faults_nostack_gone", "the thread ended first" },
	{ "faults_nostack_state", "the thread's state could not be read" },
};

size_t stats_nostack_why(const char *line, char *out, size_t cap)
{
	size_t pos = 0;

	out[0] = '\0';
	for (size_t i = 0; line && i < sizeof(nostack_why) / sizeof(nostack_why[0]); i++) {
		uint64_t v;
		if (statsline_get(line, strlen(line), nostack_why[i].key, &v) || v == 0)
			continue;
		int w = snprintf(out + pos, cap - pos, "%s%llu: %s", pos ? ", " : "",
				 (unsigned long long)v, nostack_why[i].said);
		if (w < 0 || (size_t)w >= cap - pos)
			break;
		pos += (size_t)w;
	}
	return pos;
}
