/* Bench helper: runs a command, then writes its wall time (s), peak RSS (KiB, the largest among it
 * and its reaped descendants), exit status and CPU time (s, user + system of it and its reaped
 * descendants) to a file. Usage: runstat OUTFILE CMD [ARGS...] */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: runstat OUTFILE CMD [ARGS...]\n");
		return 2;
	}
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0) {
		perror("runstat: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "runstat: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	int status = 0;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("runstat: wait4");
			return 2;
		}
	}
	double t1 = now_s();
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror("runstat: open output");
		return 2;
	}
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
		     (double)ru.ru_stime.tv_usec / 1e6;
	fprintf(f, "%.6f %ld %d %.6f\n", t1 - t0, ru.ru_maxrss, code, cpu);
	if (fclose(f) != 0) {
		perror("runstat: write output");
		return 2;
	}
	return code;
}
