/* Test tool: a minimal debugger. Runs CMD under ptrace, following every thread as gdb does, passes
 * each signal on, then prints the signals it saw. Usage: ptracer CMD [ARGS...]; exits as CMD did.
 * A traced program must show a debugger the same signals as an untraced one: none from fltrace. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TIDS 4096

static pid_t known[MAX_TIDS];
static unsigned nknown;
static bool seen[NSIG];

/* True the first time tid stops: a new thread's first stop is the SIGSTOP ptrace gives it. */
static bool first_stop(pid_t tid)
{
	for (unsigned i = 0; i < nknown; i++)
		if (known[i] == tid)
			return false;
	if (nknown < MAX_TIDS)
		known[nknown++] = tid;
	return true;
}

static void run_child(char **argv)
{
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0) {
		perror("ptracer: PTRACE_TRACEME");
		_exit(126);
	}
	execvp(argv[0], argv);
	perror("ptracer: exec");
	_exit(127);
}

/* The signal to pass on to a stopped thread, 0 for ptrace's own stops. */
static int signal_to_deliver(pid_t tid, int status, pid_t child, bool *exec_seen)
{
	int sig = WSTOPSIG(status);
	if (status >> 16) /* PTRACE_EVENT_*: a clone */
		return 0;
	if (sig == SIGTRAP && tid == child && !*exec_seen) {
		*exec_seen = true;
		ptrace(PTRACE_SETOPTIONS, tid, NULL, (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL));
		return 0;
	}
	if (sig == SIGSTOP && first_stop(tid))
		return 0;
	seen[sig] = true;
	return sig;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ptracer CMD [ARGS...]\n");
		return 2;
	}
	pid_t child = fork();
	if (child == 0)
		run_child(argv + 1);
	first_stop(child);
	int code = 1, status;
	bool exec_seen = false;
	pid_t tid;
	while ((tid = waitpid(-1, &status, __WALL)) > 0 || errno == EINTR) {
		if (tid < 0)
			continue;
		if (WIFSTOPPED(status)) {
			int sig = signal_to_deliver(tid, status, child, &exec_seen);
			ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig);
		} else if (tid == child) {
			code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
	}
	printf("signals seen by the debugger:");
	bool any = false;
	for (int s = 1; s < NSIG; s++)
		if (seen[s]) {
			printf(" %d", s);
			any = true;
		}
	printf("%s\n", any ? "" : " none");
	return code;
}
