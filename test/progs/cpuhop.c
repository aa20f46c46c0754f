/* Test workload: threads that fill and scan heap memory while they change CPUs, printing a checksum.
 * Usage: cpuhop MB THREADS MODE [TASKS_FILE]
 *   stay   threads run where the scheduler puts them
 *   pin    each thread pins itself to one CPU it may use (round robin)
 *   hop    each thread moves itself to the next CPU it may use every 16 pages
 *   midrun halfway through the fill, every thread moves itself to the last CPU it may use
 * With TASKS_FILE, the threads of the process (as /proc lists them: name, the CPUs each may use, the
 * one it last ran on and the signals it blocks) are written there at the end, for the test to check
 * fltrace's own threads.
 * Its output must not change under tracing. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum mode { STAY, PIN, HOP, MIDRUN };

static cpu_set_t allowed;
static int ncpus, cpus[CPU_SETSIZE];
static enum mode mode;
static pthread_barrier_t half;

struct part {
	uint64_t *p;
	size_t n;
	int index;
	uint64_t sum;
};

static void move_to(int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0) {
		perror("sched_setaffinity");
		exit(4);
	}
}

static void *work(void *arg)
{
	struct part *w = arg;
	const size_t per_page = 4096 / sizeof(uint64_t);
	if (mode == PIN)
		move_to(cpus[w->index % ncpus]);
	for (size_t i = 0; i < w->n; i++) {
		if (mode == HOP && i % (16 * per_page) == 0)
			move_to(cpus[((size_t)w->index + i / (16 * per_page)) % (size_t)ncpus]);
		if (mode == MIDRUN && i == w->n / 2) {
			pthread_barrier_wait(&half);
			move_to(cpus[ncpus - 1]);
		}
		w->p[i] = i * 0x9e3779b97f4a7c15ull + (uintptr_t)w->n;
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < w->n; i += 8) {
			if (mode == HOP && i % (16 * per_page) == 0)
				move_to(cpus[((size_t)(w->index + pass) + i / (16 * per_page)) % (size_t)ncpus]);
			w->sum += w->p[i] ^ (uint64_t)pass;
		}
	return NULL;
}

/* name, Cpus_allowed_list, the last CPU and SigBlk of every thread of this process, one line each. */
static void write_tasks(const char *path)
{
	FILE *out = fopen(path, "w");
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	if (!out || !d) {
		perror(path);
		exit(5);
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[300], comm[64] = "", line[4096], allowed_list[256] = "", blocked[64] = "-";
		snprintf(p, sizeof(p), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(p, "r");
		if (f && fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		if (f)
			fclose(f);
		snprintf(p, sizeof(p), "/proc/self/task/%s/status", e->d_name);
		if ((f = fopen(p, "r"))) {
			while (fgets(line, sizeof(line), f)) {
				sscanf(line, "SigBlk: %63s", blocked);
				if (sscanf(line, "Cpus_allowed_list: %255s", allowed_list) == 1)
					break;
			}
			fclose(f);
		}
		int last = -1;
		snprintf(p, sizeof(p), "/proc/self/task/%s/stat", e->d_name);
		if ((f = fopen(p, "r"))) {
			if (fgets(line, sizeof(line), f)) {
				char *s = strrchr(line, ')');
				for (int field = 2; s && field < 39; field++)
					s = strchr(s + 1, ' ');
				if (s)
					last = atoi(s + 1);
			}
			fclose(f);
		}
		fprintf(out, "%s %s %d %s\n", comm, allowed_list, last, blocked);
	}
	closedir(d);
	fclose(out);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	size_t mb = strtoul(argv[1], NULL, 10);
	int nthreads = atoi(argv[2]);
	const char *m = argv[3];
	mode = !strcmp(m, "pin") ? PIN : !strcmp(m, "hop") ? HOP : !strcmp(m, "midrun") ? MIDRUN : STAY;
	if (nthreads < 1 || nthreads > 64 || sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return 2;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[ncpus++] = c;
	pthread_barrier_init(&half, NULL, (unsigned)nthreads);
	pthread_t tids[64];
	struct part parts[64];
	size_t words = (mb << 20) / sizeof(uint64_t) / (size_t)nthreads;
	for (int t = 0; t < nthreads; t++) {
		parts[t] = (struct part){ .p = malloc(words * sizeof(uint64_t)), .n = words, .index = t };
		if (!parts[t].p)
			return 3;
		pthread_create(&tids[t], NULL, work, &parts[t]);
	}
	uint64_t sum = 0;
	for (int t = 0; t < nthreads; t++) {
		pthread_join(tids[t], NULL);
		sum += parts[t].sum;
		free(parts[t].p);
	}
	if (argc > 4)
		write_tasks(argv[4]);
	printf("cpuhop %zu MB, %d threads, %s: %016llx\n", mb, nthreads, m, (unsigned long long)sum);
	return 0;
}
