/* Test workload: the ways a threaded program ends, for comparing its exit status and output with and
 * without tracing. Usage: threadlife MODE [pidfile]. Modes:
 *   bare          main() { pthread_exit(NULL); } after one buffered line (exit(0) flushes it)
 *   main-first    main calls pthread_exit; a worker joins it, fills FILL_PAGES pages, then returns
 *   main-first-x  the same, but the worker ends with pthread_exit
 *   worker-first  main joins the worker (which fills), then calls pthread_exit
 *   dtors         main-first, with a pthread key destructor, a thread_local-style TLS destructor
 *                 and an atexit handler, each printing when it runs (glibc's order)
 *   sigterm       main-first; the worker writes the pid to pidfile and waits for a signal
 *   exit-thread   main waits in pthread_join while the worker fills and calls exit(7)
 *   fork-thread   a worker forks; the child, in that non-main thread, forks again; each process
 *                 fills, and the forked ones end by returning from the thread's start routine */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILL_PAGES 1000

static pthread_t main_thread;
static const char *pidfile;

/* FILL_PAGES fresh pages, each written once: exactly FILL_PAGES faults at the FILL line. */
static unsigned long fill(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, FILL_PAGES * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(3);
	for (size_t i = 0; i < FILL_PAGES; i++)
		p[i * ps] = (char)(i + 1); /* FILL */
	unsigned long sum = 0;
	for (size_t i = 0; i < FILL_PAGES; i++)
		sum += (unsigned char)p[i * ps];
	return sum;
}

static void join_main(void)
{
	int err = pthread_join(main_thread, NULL);
	printf("worker: main joined (%d)\n", err);
}

static void *worker_main_first(void *arg)
{
	join_main();
	printf("worker: fill %lu\n", fill());
	if (arg)
		pthread_exit(NULL);
	return NULL;
}

static void *worker_plain(void *arg)
{
	printf("worker: fill %lu\n", fill());
	return NULL;
}

static pthread_key_t key;

static void key_dtor(void *v)
{
	printf("key destructor: %s\n", (const char *)v);
}

static void at_exit(void)
{
	printf("atexit handler\n");
}

/* What a C++ thread_local's destructor is registered with. */
extern int __cxa_thread_atexit_impl(void (*dtor)(void *), void *obj, void *dso);
extern void *__dso_handle;

static void tls_dtor(void *v)
{
	printf("thread_local destructor: %s\n", (const char *)v);
}

static void *worker_dtors(void *arg)
{
	pthread_setspecific(key, "worker");
	__cxa_thread_atexit_impl(tls_dtor, "worker", &__dso_handle);
	join_main();
	printf("worker: fill %lu\n", fill());
	return NULL;
}

static void *worker_sigterm(void *arg)
{
	join_main();
	printf("worker: fill %lu\n", fill());
	fflush(stdout);
	FILE *f = fopen(pidfile, "w");
	if (!f)
		exit(4);
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	for (;;)
		pause();
}

static void *worker_exit(void *arg)
{
	printf("worker: fill %lu\n", fill());
	exit(7);
}

/* In a forked child this thread is the only one: returning from it ends the process. */
static void *worker_fork(void *arg)
{
	int depth = (int)(intptr_t)arg;
	printf("depth %d: fill %lu\n", depth, fill());
	fflush(stdout);
	if (depth == 2)
		return NULL;
	pid_t pid = fork();
	if (pid < 0)
		exit(5);
	if (pid == 0)
		return worker_fork((void *)(intptr_t)(depth + 1));
	int st;
	if (waitpid(pid, &st, 0) != pid)
		exit(6);
	printf("depth %d: child exited %d (signal %d)\n", depth, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
	       WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	fflush(stdout);
	return NULL;
}

static void start(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	if (pthread_create(&t, NULL, fn, arg) != 0)
		exit(2);
	pthread_detach(t);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "bare";
	pidfile = argc > 2 ? argv[2] : "/dev/null";
	main_thread = pthread_self();
	if (strcmp(mode, "bare") == 0) {
		printf("main: bye\n");
	} else if (strcmp(mode, "main-first") == 0) {
		start(worker_main_first, NULL);
	} else if (strcmp(mode, "main-first-x") == 0) {
		start(worker_main_first, (void *)1);
	} else if (strcmp(mode, "worker-first") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker_plain, NULL) != 0)
			return 2;
		pthread_join(t, NULL);
		printf("main: worker joined\n");
	} else if (strcmp(mode, "dtors") == 0) {
		pthread_key_create(&key, key_dtor);
		atexit(at_exit);
		pthread_setspecific(key, "main");
		__cxa_thread_atexit_impl(tls_dtor, "main", &__dso_handle);
		start(worker_dtors, NULL);
	} else if (strcmp(mode, "sigterm") == 0) {
		start(worker_sigterm, NULL);
	} else if (strcmp(mode, "exit-thread") == 0) {
		atexit(at_exit);
		pthread_t t;
		if (pthread_create(&t, NULL, worker_exit, NULL) != 0)
			return 2;
		pthread_join(t, NULL);
		printf("main: not reached\n");
		return 1;
	} else if (strcmp(mode, "fork-thread") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker_fork, (void *)0) != 0)
			return 2;
		pthread_join(t, NULL);
		printf("main: worker joined\n");
		return 0;
	} else {
		fprintf(stderr, "threadlife: unknown mode %s\n", mode);
		return 2;
	}
	pthread_exit(NULL);
}
