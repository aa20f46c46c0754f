/* Test workload for test/e2e/record_real.sh: a parent with a heap larger than the test's -L starts
 * children in every usual way (fork+exec, posix_spawn, system(), popen()), checks their exit
 * statuses, and re-reads its own heap afterwards. Every process (the parent and each child) appends
 * "<role> <pid>" to PIDFILE, so the test can match processes to trace files; stdout carries only
 * deterministic lines, and must not change under tracing.
 * Usage: real_spawn parent PIDFILE MB        (exits 5 when every child behaved)
 *        real_spawn child PIDFILE MB CODE    (prints a checksum of MB of its own heap, exits CODE) */
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void note_pid(const char *pidfile, const char *role)
{
	char line[64];
	int n = snprintf(line, sizeof line, "%s %d\n", role, (int)getpid());
	int fd = open(pidfile, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0 || write(fd, line, (size_t)n) != n) {
		perror(pidfile);
		exit(90);
	}
	close(fd);
}

static uint64_t *fill(size_t mb, uint64_t seed)
{
	size_t n = (mb << 20) / 8;
	uint64_t *p = malloc(n * 8);
	if (!p) {
		perror("malloc");
		exit(91);
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (i + seed) * 0x9e3779b97f4a7c15ull;
	return p;
}

static uint64_t sum(const uint64_t *p, size_t mb)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < (mb << 20) / 8; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static int status_of(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "child")) {
		size_t mb = strtoul(argv[3], NULL, 10);
		int code = atoi(argv[4]);
		note_pid(argv[2], "child");
		uint64_t *p = fill(mb, (uint64_t)code);
		uint64_t a = sum(p, mb), b = sum(p, mb);
		printf("child %d: %zu MB, sums %s %016llx\n", code, mb, a == b ? "agree" : "DIFFER",
		       (unsigned long long)a);
		return code;
	}
	if (argc != 4 || strcmp(argv[1], "parent")) {
		fprintf(stderr, "usage: real_spawn parent PIDFILE MB | child PIDFILE MB CODE\n");
		return 2;
	}
	const char *pidfile = argv[2], *mbs = argv[3];
	size_t mb = strtoul(mbs, NULL, 10);
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len <= 0)
		return 92;
	self[len] = 0;
	note_pid(pidfile, "parent");
	uint64_t *heap = fill(mb, 1);
	uint64_t before = sum(heap, mb);
	printf("parent: %zu MB, sum %016llx\n", mb, (unsigned long long)before);
	int ok = 1, st;

	/* fork + exec */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "child", pidfile, mbs, "7", (char *)NULL);
		_exit(93);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 94;
	printf("fork+exec: status %d\n", status_of(st));
	ok &= status_of(st) == 7;

	/* posix_spawn */
	char *args[] = { self, "child", (char *)pidfile, (char *)mbs, "8", NULL };
	fflush(stdout);
	if (posix_spawn(&pid, self, NULL, NULL, args, environ) != 0 || waitpid(pid, &st, 0) != pid)
		return 95;
	printf("posix_spawn: status %d\n", status_of(st));
	ok &= status_of(st) == 8;

	/* system(): a shell, which runs the child */
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "'%s' child '%s' %s 9", self, pidfile, mbs);
	fflush(stdout);
	st = system(cmd);
	printf("system: status %d\n", status_of(st));
	ok &= status_of(st) == 9;

	/* popen(): the child's output comes back through a pipe into a heap buffer */
	snprintf(cmd, sizeof cmd, "'%s' child '%s' %s 0", self, pidfile, mbs);
	fflush(stdout);
	FILE *f = popen(cmd, "r");
	if (!f)
		return 96;
	char line[256];
	while (fgets(line, sizeof line, f))
		printf("popen read: %s", line);
	st = pclose(f);
	printf("popen: status %d\n", status_of(st));
	ok &= status_of(st) == 0;

	uint64_t after = sum(heap, mb);
	printf("parent: heap %s after the children\n", after == before ? "unchanged" : "CHANGED");
	ok &= after == before;
	return ok ? 5 : 1;
}
