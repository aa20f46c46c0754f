/* Interposed process-level calls: fork and daemon (the child gets its evicted pages back and a runtime
 * of its own), execve (a note when the new program cannot load fltrace), _exit, dlopen/dlclose. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../src/runtime/rt.h"
#include "../src/runtime/loader.h"
#include "../src/runtime/maps.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT pid_t fork(void)
{
	static pid_t (*real_fork)(void);
	rt_early_init();
	if (!real_fork)
		real_fork = (pid_t (*)(void))rt_libc_next("fork");
	pid_t pid = real_fork();
	if (pid == 0)
		rt_fork_child_late();
	return pid;
}

/* Only a note: each exec itself is glibc's. glibc's exec functions reach the kernel through its
 * internal execve, past an interposed one: each of those a program calls by name is here (CPython's
 * subprocess calls execv or execve, shells execve); execl* are left to reach glibc. */
#define EXEC_WRAP(name, first_type, env)                                                           \
	EXPORT int name(first_type first, char *const argv[] EXEC_ENVP_##env)                     \
	{                                                                                          \
		static int (*real)(first_type, char *const[] EXEC_ENVP_##env);                      \
		rt_early_init();                                                                   \
		if (!real)                                                                         \
			real = (int (*)(first_type, char *const[] EXEC_ENVP_##env))rt_libc_next(#name); \
		rt_exec_check(EXEC_ENV_##env);                                                     \
		return real(first, argv EXEC_ARG_##env);                                           \
	}
#define EXEC_ENVP_own , char *const envp[]
#define EXEC_ENVP_environ
#define EXEC_ENV_own envp
#define EXEC_ENV_environ environ
#define EXEC_ARG_own , envp
#define EXEC_ARG_environ
EXEC_WRAP(execve, const char *, own)
EXEC_WRAP(execvpe, const char *, own)
EXEC_WRAP(execv, const char *, environ)
EXEC_WRAP(execvp, const char *, environ)

/* glibc's daemon(3) forks through its internal fork, past the wrapper above: its child kept the
 * fork window's SIGBUS handling and never started a runtime of its own. The same steps as
 * daemon(3)'s manual page gives, through fork(). */
EXPORT int daemon(int nochdir, int noclose)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0)
		_exit(0);
	if (setsid() < 0)
		return -1;
	if (!nochdir)
		(void)chdir("/");
	if (noclose)
		return 0;
	int fd = open("/dev/null", O_RDWR);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
		close(fd);
		return -1;
	}
	for (int std = 0; std <= 2; std++)
		(void)dup2(fd, std);
	if (fd > 2)
		close(fd);
	return 0;
}

EXPORT void _exit(int status)
{
	rt_exit_flush();
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	_exit(status);
}

EXPORT void *dlopen(const char *file, int mode)
{
	static void *(*real_dlopen)(const char *, int);
	if (!real_dlopen)
		real_dlopen = (void *(*)(const char *, int))rt_libc_next("dlopen");
	bool ours = rt.phase == RT_ON && !rt_tls_internal && rt.cfg.files_all;
	if (ours)
		loader_dl_begin(false);
	void *h = real_dlopen(file, mode);
	if (ours)
		loader_dl_end();
	if (h && rt.phase == RT_ON && !rt_tls_internal) {
		loader_take_over(false);
		maps_snapshot();
	}
	return h;
}

EXPORT int dlclose(void *handle)
{
	static int (*real_dlclose)(void *);
	if (!real_dlclose)
		real_dlclose = (int (*)(void *))rt_libc_next("dlclose");
	bool ours = rt.phase == RT_ON && !rt_tls_internal;
	bool files_all = ours && rt.cfg.files_all;
	if (ours)
		maps_snapshot(); /* before the object goes: its code may be on recorded stacks */
	if (files_all) {
		loader_dl_begin(true);
		loader_give_back();
	}
	int ret = real_dlclose(handle);
	if (files_all) {
		loader_take_over(false);
		loader_dl_end();
	}
	return ret;
}
