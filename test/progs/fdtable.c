/* Test workload: the fd table a program sees, and what it does to it (close every fd, dup2 onto
 * any number, a small RLIMIT_NOFILE), then a fill and a scan of 64 MB. Usage: fdtable MODE.
 * Its output (fd lists, numbers, checksum) must not change under tracing. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILL_MB 64

/* The open fds, as /proc/self/fd lists them (the directory's own fd left out). */
static void list_fds(const char *when)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		printf("%s: cannot list\n", when);
		return;
	}
	int seen[1024], n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 1024)
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			seen[n++] = atoi(e->d_name);
	closedir(d);
	for (int i = 1; i < n; i++) /* readdir's order is the kernel's: sort for a stable line */
		for (int j = i; j > 0 && seen[j - 1] > seen[j]; j--) {
			int t = seen[j];
			seen[j] = seen[j - 1];
			seen[j - 1] = t;
		}
	printf("%s:", when);
	for (int i = 0; i < n; i++)
		printf(" %d", seen[i]);
	printf("\n");
	fflush(stdout);
}

static void fill_and_scan(void)
{
	size_t n = (size_t)FILL_MB << 20;
	uint8_t *p = malloc(n);
	if (!p)
		exit(3);
	for (size_t i = 0; i < n; i += 4096)
		p[i] = (uint8_t)(i >> 12); /* FILL */
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i += 4096)
		sum += p[i]; /* SCAN */
	printf("sum %llu\n", (unsigned long long)sum);
	free(p);
}

static void open_reports_lowest(void)
{
	int fd = open("/dev/null", O_RDONLY);
	printf("open: %d\n", fd);
	close(fd);
}

/* Every number a program might move an fd to, fltrace's old ones (200-205) among them. */
static void dup2_everywhere(void)
{
	int src = open("/dev/null", O_RDONLY);
	int moved = 0;
	for (int fd = 3; fd < 1024; fd++) {
		if (fd == src)
			continue;
		if (dup2(src, fd) == fd)
			moved++;
	}
	printf("dup2: %d\n", moved);
	list_fds("dup2ed");
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
}

static void small_ulimit(void)
{
	struct rlimit rl = { 64, 64 };
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		printf("setrlimit failed\n");
		return;
	}
	int fds[64], n = 0;
	while (n < 64 && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
		n++;
	printf("opened %d, first %d, last %d\n", n, n ? fds[0] : -1, n ? fds[n - 1] : -1);
	while (n > 0)
		close(fds[--n]);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "list";
	setvbuf(stdout, NULL, _IOLBF, 0);
	list_fds("start");
	if (strcmp(mode, "list") == 0) {
		open_reports_lowest();
		pid_t pid = fork();
		if (pid == 0) {
			list_fds("child");
			open_reports_lowest();
			fill_and_scan();
			_exit(0);
		}
		int status;
		waitpid(pid, &status, 0);
		printf("child exit %d\n", WEXITSTATUS(status));
		fflush(stdout);
		execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
		printf("exec failed\n");
		return 1;
	}
	if (strcmp(mode, "exec") == 0) {
		open_reports_lowest();
	} else if (strcmp(mode, "close_range") == 0) {
		printf("close_range: %ld\n", syscall(SYS_close_range, 3, ~0u, 0));
	} else if (strcmp(mode, "close_range_libc") == 0) {
		printf("close_range: %d\n", close_range(3, ~0u, 0));
	} else if (strcmp(mode, "closefrom") == 0) {
		closefrom(3);
	} else if (strcmp(mode, "close_loop") == 0) {
		for (int fd = 3; fd < 1024; fd++)
			syscall(SYS_close, fd);
	} else if (strcmp(mode, "dup2") == 0) {
		dup2_everywhere();
	} else if (strcmp(mode, "ulimit") == 0) {
		small_ulimit();
	} else {
		fprintf(stderr, "usage: fdtable list|close_range|close_range_libc|closefrom|close_loop|dup2|ulimit\n");
		return 2;
	}
	list_fds("after");
	open_reports_lowest();
	fill_and_scan();
	list_fds("end");
	return 0;
}
