/* Test workload: a set*id call in a multithreaded program, for comparing with and without tracing.
 * Usage: setids CALL WHERE (run as root). CALL: setuid setgid setreuid setregid setresuid setresgid
 * seteuid setegid setgroups initgroups drop (setgroups + setresgid + setresuid to nobody).
 * WHERE: main (main calls it while two workers live), thread (a worker calls it), fork (the child
 * of a parent with two live workers calls it). Then every thread of the process that called prints
 * the credentials the kernel holds for it (they are per thread: glibc makes the call process-wide),
 * and the caller writes FILL_PAGES fresh pages: exactly that many faults at the FILL line. */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 2
#define FILL_PAGES 500

static const char *call, *where;
static pthread_barrier_t ready, called, turn;

/* The calling thread's own credentials, read with raw system calls (never from a glibc cache). */
static void report(const char *who)
{
	unsigned r, e, s, gr, ge, gs;
	gid_t groups[64];
	syscall(SYS_getresuid, &r, &e, &s);
	syscall(SYS_getresgid, &gr, &ge, &gs);
	long n = syscall(SYS_getgroups, 64, groups);
	printf("%s: uid %u %u %u gid %u %u %u groups", who, r, e, s, gr, ge, gs);
	for (long i = 0; i < n; i++)
		printf("%s%u", i ? "," : " ", (unsigned)groups[i]);
	printf("\n");
	fflush(stdout);
}

static void fill(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, FILL_PAGES * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(3);
	for (size_t i = 0; i < FILL_PAGES; i++)
		p[i * ps] = 1; /* FILL */
	unsigned long sum = 0;
	for (size_t i = 0; i < FILL_PAGES; i++)
		sum += (unsigned char)p[i * ps];
	printf("fill %lu\n", sum);
	fflush(stdout);
}

static int do_call(void)
{
	static const gid_t some[] = { 1, 2, 3 };
	if (!strcmp(call, "setuid"))
		return setuid(0);
	if (!strcmp(call, "setgid"))
		return setgid(65534);
	if (!strcmp(call, "setreuid"))
		return setreuid(0, 0);
	if (!strcmp(call, "setregid"))
		return setregid(4, 5);
	if (!strcmp(call, "setresuid"))
		return setresuid(0, 0, 0);
	if (!strcmp(call, "setresgid"))
		return setresgid(6, 7, 8);
	if (!strcmp(call, "seteuid"))
		return seteuid(0);
	if (!strcmp(call, "setegid"))
		return setegid(9);
	if (!strcmp(call, "setgroups"))
		return setgroups(3, some);
	if (!strcmp(call, "initgroups"))
		return initgroups("root", 1234);
	if (!strcmp(call, "drop")) /* a daemon dropping root for good */
		return setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534);
	fprintf(stderr, "setids: unknown call %s\n", call);
	exit(2);
}

static void call_and_say(const char *who)
{
	errno = 0;
	int ret = do_call();
	printf("%s: %s returned %d (%s)\n", who, call, ret, ret ? strerror(errno) : "ok");
	fflush(stdout);
}

/* Every thread reports in turn: main, then worker 0, then worker 1. */
static void report_in_turn(int index, const char *who)
{
	for (int i = 0; i <= WORKERS; i++) {
		if (i == index)
			report(who);
		pthread_barrier_wait(&turn);
	}
}

static void *worker(void *arg)
{
	int index = (int)(long)arg;
	char who[32];
	snprintf(who, sizeof(who), "worker %d", index);
	pthread_barrier_wait(&ready);
	if (index == 1 && !strcmp(where, "thread"))
		call_and_say(who);
	pthread_barrier_wait(&called);
	report_in_turn(index, who);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: setids CALL main|thread|fork\n");
		return 2;
	}
	call = argv[1];
	where = argv[2];
	pthread_t t[WORKERS];
	pthread_barrier_init(&ready, NULL, WORKERS + 1);
	pthread_barrier_init(&called, NULL, WORKERS + 1);
	pthread_barrier_init(&turn, NULL, WORKERS + 1);
	for (long i = 0; i < WORKERS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(i + 1)) != 0)
			return 2;
	pthread_barrier_wait(&ready);
	if (!strcmp(where, "main")) {
		call_and_say("main");
	} else if (!strcmp(where, "fork")) {
		pid_t pid = fork();
		if (pid < 0)
			return 4;
		if (pid == 0) { /* the workers are not here: the child has one thread */
			call_and_say("child");
			report("child");
			fill();
			exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	} else if (strcmp(where, "thread")) {
		fprintf(stderr, "setids: unknown place %s\n", where);
		return 2;
	}
	pthread_barrier_wait(&called);
	report_in_turn(0, "main");
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	if (strcmp(where, "fork"))
		fill();
	return 0;
}
