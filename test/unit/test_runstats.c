/* Unit tests of src/analysis/runstats.c: the last line of each stats file of a directory, counters
 * summed over processes and peaks the largest, a line being written ignored. One line per case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/analysis/runstats.h"

static int failures;

static void expect(const char *name, int ok, const char *why)
{
	if (ok)
		printf("PASS %s\n", name);
	else
		printf("FAIL %s: %s\n", name, why), failures++;
}

static int put(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "w")))
		return -1;
	fputs(text, f);
	return fclose(f);
}

int main(void)
{
	char dir[] = "/tmp/fltrace-runstats.XXXXXX", cmd[4200];
	struct runstats s;
	char *line;

	if (!mkdtemp(dir)) {
		printf("FAIL runstats_setup: cannot make a directory in /tmp\n");
		return 1;
	}
	/* Process 1: an old line, its last line, then a line cut off mid-write (SIGKILL). */
	put(dir, "fltrace-data-stats-1.out",
	    "1,faults:5,faults_zp:5,resident_peak_bytes:4096\n"
	    "2,faults:30,faults_zp:10,faults_refetch:20,resident_peak_bytes:8192,far_peak_bytes:100,"
	    "untracked_rss_bytes:7\n"
	    "3,faults:99,faults_zp:9");
	put(dir, "fltrace-data-stats-2.out",
	    "2,faults:12,faults_zp:2,faults_refetch:10,faults_file:0,resident_peak_bytes:40960,"
	    "far_peak_bytes:50,untracked_rss_bytes:3\n");
	put(dir, "fltrace-data-stats-3.txt", "2,faults:1000\n"); /* not a stats file */
	put(dir, "fltrace-data-stats-4.out", ""); /* killed within its first second */
	put(dir, "fltrace-data-trace-1-0.bin", "x");

	expect("runstats_read_dir", runstats_read_dir(&s, dir) == 0, "could not read the directory");
	expect("runstats_files", s.files == 3, "expected 3 stats files (one empty)");
	expect("runstats_sums_counters", s.faults == 42 && s.zero == 12 && s.refetch == 30,
	       "faults/zero/refetch not the sums of the last complete lines");
	expect("runstats_peaks_are_max", s.resident_peak == 40960 && s.far_peak == 100 &&
	       s.untracked_rss == 7, "peaks not the largest of the processes");
	line = runstats_last_line(strcat(strcpy(cmd, dir), "/fltrace-data-stats-2.out"));
	expect("runstats_last_line", line && !strcmp(line, "2,faults:12,faults_zp:2,faults_refetch:10,"
	       "faults_file:0,resident_peak_bytes:40960,far_peak_bytes:50,untracked_rss_bytes:3"),
	       line ? line : "NULL");
	free(line);
	expect("runstats_missing_file", runstats_add_file(&s, "/nonexistent/x") < 0 && s.files == 3,
	       "a missing file changed the totals");
	expect("runstats_names", runstats_is_stats_name("fltrace-data-stats-12.out") &&
	       !runstats_is_stats_name("fltrace-data-stats-.out") &&
	       !runstats_is_stats_name("fltrace-data-stats-1.txt"), "stats file names");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("note: could not remove %s\n", dir);
	return failures ? 1 : 0;
}
