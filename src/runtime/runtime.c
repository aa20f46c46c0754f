/* The runtime root: configuration from the environment, start-up inside the traced process,
 * fork and exit handling, and the one way to stop the program with a clear message. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "prefetch.h"
#include "keep.h"
#include "fltrace/fmt.h"
#include "fltrace/outfile.h"
#include "fltrace/rtconfig.h"
#include "far.h"
#include "dlwalk.h"
#include "uffd.h"
#include "region.h"
#include "evict.h"
#include "threads.h"
#include "handler.h"
#include "prefault.h"
#include "unwcheck.h"
#include "trace.h"
#include "loader.h"
#include "allocs.h"
#include "maps.h"
#include "stats.h"

struct rt rt = { .lock = PTHREAD_MUTEX_INITIALIZER, .uffd = -1, .far_uffd = -1, .loader_uffd = -1 };
__thread int rt_tls_internal;

static bool early_done;

/* A signal handler of the program's that ran while its thread holds rt.lock could fault on tracked
 * memory (the heap it counts into; with --files=all its own code), which no handler can serve
 * without that lock: the thread waits in its fault for a handler that waits for its lock (sigalarm
 * at -L 1 hung so in 3 runs of 4 under load). So a program thread holding it takes no signals
 * (delivered at rt_unlock): two rt_sigprocmask calls per lock, in mmap-family wrappers only. Our
 * own threads take none of the program's signals anyway, and keep their mask as they know it. */
static __thread uint64_t tls_lock_saved_mask;
static __thread bool tls_lock_masked;

static void rt_lock_mask_signals(void)
{
	if (tls_lock_masked || rt_own_thread()) /* the handlers are our threads too */
		return;
	uint64_t all = ~0ull;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &tls_lock_saved_mask, 8);
	tls_lock_masked = true;
}

void rt_lock_unmask_signals(void)
{
	if (!tls_lock_masked)
		return;
	tls_lock_masked = false;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &tls_lock_saved_mask, NULL, 8);
}

/* Set while this handler serves a fault of the thread that holds rt.lock across fork: that thread
 * sleeps in the fault, so nothing it guards can change under the handler. */
static __thread bool tls_lock_borrowed;

bool rt_lock_borrow(void)
{
	int none = 0;
	if (!atomic_compare_exchange_strong(&rt.fork_borrower, &none, rt_gettid()))
		return false;
	tls_lock_borrowed = true;
	return true;
}

void rt_lock_return(void)
{
	tls_lock_borrowed = false;
	atomic_store(&rt.fork_borrower, 0);
}

/* A program signal can wake the holder out of its fault while a handler still changes what the
 * hold guards: the holder must not release the hold, or fork, before that handler is done. */
void rt_lock_wait_borrower(void)
{
	while (atomic_load(&rt.fork_borrower))
		sched_yield();
}

bool rt_lock_borrowed(void)
{
	return tls_lock_borrowed;
}

void rt_lock(void)
{
	if (tls_lock_borrowed)
		return;
	rt_lock_mask_signals();
	lock_order_take(LOCK_RT);
	pthread_mutex_lock(&rt.lock);
}

bool rt_trylock(void)
{
	if (tls_lock_borrowed)
		return true;
	rt_lock_mask_signals();
	lock_order_take(LOCK_RT);
	if (pthread_mutex_trylock(&rt.lock) == 0)
		return true;
	lock_order_drop(LOCK_RT);
	rt_lock_unmask_signals();
	return false;
}

bool rt_lock_within(uint64_t ns)
{
	if (tls_lock_borrowed)
		return true;
	rt_lock_mask_signals();
	lock_order_take(LOCK_RT);
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(ns / 1000000000ull);
	until.tv_nsec += (long)(ns % 1000000000ull);
	if (until.tv_nsec >= 1000000000l) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000l;
	}
	if (pthread_mutex_clocklock(&rt.lock, CLOCK_MONOTONIC, &until) == 0)
		return true;
	lock_order_drop(LOCK_RT);
	rt_lock_unmask_signals();
	return false;
}

bool rt_lock_unless_fork(void)
{
	while (!rt_trylock()) {
		if (atomic_load(&rt.fork_holder))
			return false;
		if (rt_lock_within(1000 * 1000))
			return true;
	}
	return true;
}

void rt_unlock(void)
{
	if (tls_lock_borrowed)
		return;
	pthread_mutex_unlock(&rt.lock);
	lock_order_drop(LOCK_RT);
	rt_lock_unmask_signals();
}

bool rt_active(void)
{
	return atomic_load_explicit(&rt.phase, memory_order_acquire) != RT_DISABLED && !rt_tls_internal;
}

__attribute__((noreturn)) void rt_die(const char *what, const char *why, const char *todo)
{
	rt_die_status(FLTRACE_EXIT_RUNTIME, what, why, todo);
}

__attribute__((noreturn)) void rt_die_status(int status, const char *what, const char *why, const char *todo)
{
	char buf[1024];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_str(&f, what);
	fmt_str(&f, ": ");
	fmt_str(&f, why);
	fmt_str(&f, "; ");
	fmt_str(&f, todo);
	rt_log(buf);
	rt_exit_flush();
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

__attribute__((noreturn)) void rt_die_bug(const char *file, int line, const char *cond)
{
	char buf[512];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_str(&f, file);
	fmt_char(&f, ':');
	fmt_u64(&f, (uint64_t)line);
	fmt_str(&f, ": ");
	fmt_str(&f, cond);
	rt_die("internal error", buf, "please report it with the command that was traced");
}

/* ---- configuration ---- */

static const char *config_getenv(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

/* Every FLTRACE_* setting through the one parser; a bad value stops the program with its name. */
static void config_parse(struct rt_config *c)
{
	struct rtconfig rc;
	struct rtconfig_error err;
	if (rtconfig_parse(config_getenv, NULL, &rc, &err) < 0)
		rt_die(err.name, err.why, err.todo);
	size_t n = strlen(rc.outdir);
	if (n >= sizeof(c->outdir))
		rt_die(FLTRACE_ENV_OUTDIR, "the output directory's path is too long", "use a shorter -o path");
	memcpy(c->outdir, rc.outdir, n + 1);
	c->localmem = rc.localmem;
	c->maxmem = rc.maxmem;
	c->handlers = rc.handlers;
	c->pinned = rc.pinned;
	c->cores = rc.cores;
	c->samplerate = rc.samplerate;
	c->policy = rc.policy;
	c->prefetch = rc.prefetch;
	c->far = (unsigned)rc.far;
	c->far_arg = rc.far_arg;
	c->far_latency_ns = rc.far_latency_ns;
	c->far_replicas = rc.far_replicas;
	c->far_timeout_ms = rc.far_timeout_ms;
	c->far_run = rc.far_run;
	c->far_auth = rc.far_auth;
	c->stack_depth = rc.stack_depth;
	/* percpu (default): a poller per CPU, see pollers.c; adaptive: faults come in bursts, and
	 * waking an idle vCPU costs 50-100 us here, so a handler polls 100 us after a fault before it
	 * blocks. */
	c->spin = rc.poll == RTCONFIG_POLL_SPIN;
	c->percpu = rc.poll == RTCONFIG_POLL_PERCPU;
	c->spin_ns = rc.spin_ns;
	c->files_all = rc.files_all;
	c->stacks_by_handler = rc.stacks != RTCONFIG_STACKS_SIGNAL;
	c->fault_samples = rc.stacks == RTCONFIG_STACKS_HANDLER || rc.stacks == RTCONFIG_STACKS_PERF;
	c->fault_samples_all = rc.stacks == RTCONFIG_STACKS_PERF;
	c->allocs = rc.allocs;
	c->keep_local = rc.keep_local;
	c->alloc_sample = rc.alloc_sample;
	c->test_move_misreport = rc.test_move_misreport;
	c->test_handler_lag_ns = rc.test_handler_lag_ns;
}

/* ---- start-up ---- */

/* Runs before anything else of ours and before jemalloc's first use (the malloc wrappers call it),
 * so our fork handlers are registered before jemalloc's and run first in a child. */
void rt_early_init(void)
{
	if (early_done)
		return;
	early_done = true;
	rt.page_size = (size_t)sysconf(_SC_PAGESIZE);
	rt.page_shift = (unsigned)__builtin_ctzl(rt.page_size);
	rt.pid = getpid();
	region_table_init();
	pthread_atfork(rt_fork_prepare, rt_fork_parent, rt_fork_child);
}

static void rt_die_uffd(int err)
{
	if (err == -EPERM || err == -EACCES)
		rt_die("userfaultfd", "permission denied",
		       "run as root, or set 'sysctl vm.unprivileged_userfaultfd=1', or give read+write access to /dev/userfaultfd");
	rt_die("userfaultfd", strerror(-err), "fltrace needs a kernel with userfaultfd (Linux 6.9 or later)");
}

/* The fds and threads of the process, made on the keeper thread: the fds go into its private
 * table, and the threads it creates share that table. */
static int rt_open_process_fds(void *starter_tid)
{
	int fd = uffd_open(false, &rt.uffd_features);
	if (fd == -EPERM || fd == -EACCES)
		return fd; /* a process that gave up root before this exec: rt_start_process decides */
	if (fd < 0)
		rt_die_uffd(fd);
	rt.uffd = rt_fd_own(fd);
	fd = uffd_open(true, NULL);
	if (fd < 0)
		rt_die_uffd(fd);
	rt.far_uffd = rt_fd_own(fd);
	if (farmem_register(rt.far_uffd) < 0)
		rt_die("far memory", "cannot register the far store", "report this as a bug");
	if (rt.cfg.files_all) {
		fd = uffd_open_remap();
		if (fd < 0)
			rt_die("--files=all", "this kernel's userfaultfd lacks UFFD_FEATURE_EVENT_REMAP",
			       "run without --files=all");
		rt.loader_uffd = rt_fd_own(fd);
	}
	char path[PATH_MAX + 64];
	int err = trace_open(path, sizeof(path));
	if (err >= 0)
		err = stats_open(path, sizeof(path));
	if (err >= 0)
		err = maps_open(path, sizeof(path));
	if (err < 0)
		rt_die(path, outfile_strerror(err), outfile_refused(err) ?
		       "remove it (someone else may have put it there), or record into a directory only you can write (-o DIR)" :
		       "check that the output directory is writable and has space");
	rt_lock();
	region_record_files(); /* a fork child's file regions, named in its own trace */
	rt_unlock();
	handler_open_procfile((int)(intptr_t)starter_tid);
	/* Threads first: creating one allocates (its TLS vector) from the heap, which must not be
	 * registered before someone is there to serve its faults. */
	if (handler_start() < 0 || stats_start() < 0)
		rt_die("runtime", "cannot start the handler threads", "check the process and thread limits (ulimit -u)");
	rt_lock();
	atomic_store(&rt.phase, RT_ON);
	err = region_register_all(rt.uffd, rt.loader_uffd);
	/* Pages touched before tracking began (jemalloc's start) may exceed -L: from now on, they
	 * may not. The peak counts from here. */
	evict_make_room(0);
	pagestate_peaks_restart();
	rt_unlock();
	if (err < 0)
		rt_die("userfaultfd", "cannot register the program's memory", "report this as a bug");
	return 0;
}

/* "pid N runs untraced: uid U <why><what>", one line on stderr. */
static void rt_untraced_note(const char *why, const char *what)
{
	char buf[PATH_MAX + 256];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_str(&f, "pid ");
	fmt_u64(&f, (uint64_t)getpid());
	fmt_str(&f, " runs untraced: uid ");
	fmt_u64(&f, (uint64_t)geteuid());
	fmt_str(&f, " ");
	fmt_str(&f, why);
	if (what)
		fmt_str(&f, what);
	rt_log(buf);
}

/* `record` checked that the command may use userfaultfd, so a process refused it is a descendant
 * that gave up root and then exec'd (subprocess with user=, a daemon dropping privileges): it runs
 * as it would untraced, its memory the kernel's, rather than being stopped. Said once, on stderr. */
static void rt_run_untraced(void)
{
	rt_untraced_note("may not use userfaultfd (the program gave up root before this exec)", NULL);
	atomic_store(&rt.phase, RT_DISABLED);
}

/* envp's value of NAME, or NULL. */
static const char *rt_env_find(char *const envp[], const char *name)
{
	size_t len = strlen(name);
	for (; envp && *envp; envp++)
		if (!strncmp(*envp, name, len) && (*envp)[len] == '=')
			return *envp + len + 1;
	return NULL;
}

/* Before an exec that keeps fltrace in LD_PRELOAD: a process that changed its user (subprocess
 * with user=, a daemon dropping root) may no longer read the preload library - fltrace installed
 * in a directory only its owner enters. ld.so then skips it with its own error and the program runs
 * untraced; say why, and what to do, as rt_run_untraced does for userfaultfd. */
void rt_exec_check(char *const envp[])
{
	const char *lib = rt_env_find(envp, FLTRACE_ENV_PRELOAD_PATH);
	const char *preload = rt_env_find(envp, "LD_PRELOAD");
	if (!lib || !*lib || !preload || !strstr(preload, lib))
		return;
	long r = syscall(SYS_faccessat2, AT_FDCWD, lib, R_OK, AT_EACCESS);
	if (r == 0 || (errno != EACCES && errno != EPERM))
		return;
	/* the library's path, then what to do */
	char what[PATH_MAX + 128];
	struct fmt f;
	fmt_init(&f, what, sizeof(what));
	fmt_str(&f, lib);
	fmt_str(&f, " (permission denied); install fltrace where every user can read it (make install, "
		"or the Debian package)");
	rt_untraced_note("cannot read the preload library ", what);
}

/* Everything that needs the process's identity: the fds, the far store, the files, the threads. */
void rt_start_process(void)
{
	rt.pid = getpid();
	rt.start_realtime_ns = rt_now_ns();
	rt.start_mono_ns = rt_mono_ns();
	int err = fdtable_start();
	if (err == -EINVAL)
		rt_die("runtime", "this kernel's pidfd_open lacks PIDFD_THREAD", "fltrace needs Linux 6.9 or later");
	if (err < 0)
		rt_die("runtime", "cannot give fltrace's fds a table of their own (a thread with unshare)",
		       "check the thread limit (ulimit -u) and that unshare(CLONE_FILES) is allowed");
	err = fdtable_call(rt_open_process_fds, (void *)(intptr_t)rt_gettid());
	if (err == -EPERM || err == -EACCES) {
		rt_run_untraced();
		return;
	}
	/* Faults can be served now: the loader's code and read-only data may become tracked too. */
	loader_take_over(true);
	maps_snapshot();
}

/* 102: preload/foreignheap.c's constructor (101) rebinds the loader's allocator before our threads
 * are created. */
__attribute__((constructor(102))) static void rt_init(void)
{
	/* Not marked internal: jemalloc may start here (creating our threads allocates), and what it
	 * maps is the program's heap, to be tracked like the rest. */
	rt_early_init();
	unwcheck_init();
	atomic_store(&rt.phase, RT_STARTING);
	config_parse(&rt.cfg);
	uint64_t ps = rt.page_size;
	/* Slots for evicted pages (at most -M minus -L: evict.c enforces it) and CLOCK's probation. */
	if (farmem_init((rt.cfg.maxmem + ps - 1) / ps + 1024) < 0 ||
	    evict_init(rt.cfg.localmem / ps, rt.cfg.maxmem / ps) < 0 ||
	    prefetch_init(rt.cfg.localmem / ps, farmem_slots()) < 0 || threads_init() < 0 ||
	    allocs_init(rt.cfg.alloc_sample, rt.cfg.allocs) < 0 || far_init() < 0)
		rt_die("runtime", "cannot reserve its bookkeeping memory", "lower -M");
	if (keep_init(rt.cfg.keep_local) < 0)
		rt_die(FLTRACE_ENV_KEEP_LOCAL, "is not '<executable>|<lo>-<hi>,...' of hex code addresses",
		       "give --keep-local to 'fltrace record', which sets it");
	handler_signal_init();
	prefault_init();
	dlwalk_init();
	rt_start_process();
}

/* ---- exit ---- */

void rt_exit_flush(void)
{
	static _Atomic int done;
	if (rt.pid != getpid() || atomic_exchange(&done, 1))
		return; /* a vfork child shares our memory: the parent's files are not its to close */
	/* maps_snapshot walks the loader's link maps, which for dlopen'ed objects live on the heap:
	 * not from a handler thread (rt_die), which must never fault on tracked memory. */
	if (!handler_is_current_thread())
		maps_snapshot();
	rt_tls_internal++;
	handler_before_exit();
	stats_stop();
	trace_close();
	rt_tls_internal--;
}

__attribute__((destructor)) static void rt_fini(void)
{
	if (atomic_load(&rt.phase) == RT_ON)
		rt_exit_flush();
}
