/* The preload runtime's base: the runtime root `rt` (the state modules share), its configuration
 * and counters, dying cleanly, fltrace's own fds and threads; each module's interface is its own header.
 *
 * Where state lives: what several modules read is in `rt`; what one module owns is one static in
 * its own file (a struct named for it: `ev` in evict.c, `far` in farmem.c, `hd` in handler.c...;
 * a table or queue where that is all it has); per-thread state is that module's `tls_*`
 * thread-locals (the few shared ones, `rt_tls_*`, are declared in the owner's header). The page
 * states and their counts are pagestate.h's. Nothing else is global. */
#ifndef FLTRACE_RT_H
#define FLTRACE_RT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fltrace/config.h"
#include "fltrace/cpulist.h"
#include "fltrace/trace_format.h"
#include "lock.h"
#include "pagestate.h"

#define RT_HIDDEN __attribute__((visibility("hidden")))
#define RT_MAX_HANDLERS 16

/* Invariant checks that survive release builds: a broken invariant stops the program with one line. */
#define RT_BUG_ON(cond)                                                            \
	do {                                                                       \
		if (__builtin_expect(!!(cond), 0))                                 \
			rt_die_bug(__FILE__, __LINE__, #cond);                     \
	} while (0)

/* ---- configuration (parsed once from the environment by src/common/rtconfig.c) ---- */
struct rt_config {
	uint64_t localmem, maxmem; /* bytes */
	char outdir[PATH_MAX];
	unsigned handlers;
	bool pinned;         /* handler threads run on `cores` */
	struct cpulist cores;
	unsigned samplerate; /* faults recorded per second, 0 = all */
	int policy;          /* enum fltrace_policy: a row of inc/fltrace/policies.h */
	int prefetch;        /* enum fltrace_prefetch: a row of inc/fltrace/prefetchers.h */
	unsigned far;        /* enum fltrace_backend: a row of inc/fltrace/backends.h */
	const char *far_arg; /* file: the directory (in the environment) */
	uint64_t far_latency_ns; /* --far-latency: waited at each re-fetch */
	unsigned far_replicas;   /* --far-replicas (memcached): servers that keep each page */
	uint64_t far_timeout_ms; /* --far-timeout (memcached): a server silent this long is given up */
	const char *far_run;     /* memcached: the run's id (16 hex digits, in the environment), or NULL */
	const char *far_auth;    /* --far-auth (memcached): "user:password" file, or NULL */
	unsigned stack_depth;
	bool percpu;         /* --poll percpu: a SCHED_IDLE poller per CPU, faults routed (pollers.c) */
	bool spin;           /* handler threads busy-poll instead of blocking */
	uint64_t spin_ns;    /* adaptive: poll this long after the last fault before blocking */
	bool files_all;      /* --files=all: the loader's code and read-only data are traced too */
	bool stacks_by_handler; /* FLTRACE_STACKS=handler (default): see handler_user_stack */
	bool fault_samples;     /* ... with faults' registers from perf's records where needed (faultregs.c); not =proc */
	bool fault_samples_all; /* ... for every thread (FLTRACE_STACKS=perf) */
	bool allocs;         /* allocation sites are recorded (FLTRACE_ALLOCS, default on) */
	const char *keep_local; /* --keep-local: FLTRACE_KEEP_LOCAL (in the environment), or NULL */
	uint64_t alloc_sample; /* mean bytes between sampled small allocations, 0 = none */
	uint64_t test_move_misreport; /* tests: every Nth page moved reported unmoved (uffd.c) */
	uint64_t test_handler_lag_ns; /* tests: a handler's pause after a signalled fault (handler.c) */
};

/* ---- stats (stats.c) ---- */
/* Why a fault was recorded without a stack (stats faults_nostack_<name>, in this order). */
enum rt_nostack { NOSTACK_BLOCKED, NOSTACK_MOVED, NOSTACK_UNWIND, NOSTACK_GONE, NOSTACK_STATE, NOSTACK_NR };
/* Where the fault path's time goes, in ns summed over threads (make bench's breakdown; test/bench/README.md,
 * "Where a fault's time goes"). Handler threads: */
struct rt_time_stats {
	_Atomic uint64_t serve;    /* a message in hand until its thread is woken: all of what follows */
	_Atomic uint64_t procfs;   /* reading what the faulting thread does (/proc/<tid>/syscall) */
	_Atomic uint64_t lockwait; /* waiting for rt.lock */
	_Atomic uint64_t soft;     /* pages on probation put back (soft faults) */
	_Atomic uint64_t evict;    /* eviction rounds on the fault path (evict_ops rounds, evict_pages pages) */
	_Atomic uint64_t copyin;   /* UFFDIO_COPY of the page: zeros, its far copy or its file data */
	_Atomic uint64_t signal;   /* queueing the stack signal to the faulting thread (tgkill) */
	_Atomic uint64_t prefetch; /* asking the prefetcher and staging what it names (prefetch.c) */
	_Atomic uint64_t far_wait; /* --far-latency: the emulated medium's wait at re-fetches */
	_Atomic uint64_t far_get;  /* a backend's re-fetch, all in (memcached: the get round trip and opening) */
	_Atomic uint64_t far_put;  /* a backend's writes of evicted pages, all in */
	_Atomic uint64_t far_seal; /* memcached: encrypting and authenticating pages, and opening them */
	_Atomic uint64_t unwind;   /* stacks unwound by a handler (threads in system calls) */
	_Atomic uint64_t record;   /* records written by a handler (stack interned, record appended) */
	_Atomic uint64_t idle;     /* waiting for messages in poll */
	_Atomic uint64_t wakeups;  /* polls that slept (count, not ns) */
	/* Faulting threads, in the stack signal's handler: */
	_Atomic uint64_t sigstack; /* unwinding their own stack */
	_Atomic uint64_t sigwait;  /* waiting for the handler to put the page in place */
	_Atomic uint64_t sigrecord; /* writing their record */
};
/* Adds the time since `t0` (rt_mono_ns) to a counter; returns now. */
uint64_t rt_time_add(_Atomic uint64_t *counter, uint64_t t0);
/* Sleeps while *word is still `seen` (may return early: callers look again); wakes every sleeper. */
void rt_wait_while(_Atomic uint32_t *word, uint32_t seen);
void rt_wake_waiters(_Atomic uint32_t *word);

struct rt_stats {
	_Atomic uint64_t faults, faults_r, faults_w, faults_wp, faults_zero, faults_refetch, faults_file,
		faults_syscall, faults_nostack, faults_sampled_out, faults_dup, faults_self, stacks_cut,
		stacks_by_handler, /* user-mode faults' stacks a handler read, without the stack signal */
		faults_regs_sampled; /* faults whose registers came from their perf sample, not /proc */
	_Atomic uint64_t faults_nostack_why[NOSTACK_NR]; /* faults_nostack by reason */
	_Atomic uint64_t faults_signal_first; /* stack signals sent before the page (the program's signals were arriving) */
	_Atomic uint64_t faults_reraised; /* a message whose thread was never seen asleep: woken to fault again */
	_Atomic uint64_t evict_ops, evict_pages, evict_fallback, evict_failed;
	_Atomic uint64_t evict_move_misreported; /* moves the kernel called failed that happened */
	_Atomic uint64_t evict_file_dropped, evict_file_moved; /* clean file pages dropped, written ones moved */
	_Atomic uint64_t faults_soft; /* resident, probation and far counts: pagestate.h */
	/* --prefetch (prefetch.c): faults on staged pages (hits, recorded), pages staged, staged pages
	 * first touched (used), evicted untouched (unused), released by the program untouched */
	_Atomic uint64_t faults_prefetch, prefetch_pages, prefetch_used, prefetch_unused, prefetch_dropped;
	/* --keep-local (keep.c): allocations at kept sites, ones the table had no room for, pages of
	 * them handed to the policy because kept pages filled -L (less the 16 pages of its floor) */
	_Atomic uint64_t keep_allocs, keep_lost, keep_over;
	_Atomic uint64_t untracked_map_bytes, untracked_maps;
	_Atomic uint64_t file_map_bytes, file_maps;       /* private file mappings emulated (tracked) */
	_Atomic uint64_t untracked_shared_file_bytes, untracked_shared_file_maps;
	_Atomic uint64_t loader_file_bytes, loader_file_maps;   /* --files=all: loader mappings traced */
	_Atomic uint64_t untracked_loader_file_bytes, untracked_loader_file_maps; /* ... and left alone */
	_Atomic uint64_t allocs_big, allocs_sampled, allocs_page, allocs_maps, allocs_lost; /* allocation records */
	_Atomic uint64_t far_puts, far_gets; /* pages written to and read from the far backend */
	/* memcached: pipelined requests that carried evicted pages (one per server and connection per
	 * eviction round), re-fetches
	 * a replica served (the first server failed or lacked the page), servers given up */
	_Atomic uint64_t far_put_rounds, far_replica_gets, far_servers_lost;
	/* --poll percpu (pollers.c): faults routed to another CPU's poller, routed faults another
	 * poller took after they waited, faults the backstop served, pollers it gave normal priority
	 * (stuck in a fault, starved while awake), stack signals taken on another CPU than the
	 * serving poller's */
	_Atomic uint64_t faults_routed, faults_stolen, faults_backstop, pollers_boosted, pollers_starved, signals_remote;
	struct rt_time_stats time;
};
/* ---- the runtime root (runtime.c) ---- */
enum rt_phase { RT_OFF = 0, RT_STARTING, RT_ON, RT_DISABLED };

struct rt {
	_Atomic int phase;
	struct rt_config cfg;
	pthread_mutex_t lock; /* regions, page states, resident set, far store */
	int uffd;             /* program memory */
	int far_uffd;         /* far store: registered only so UFFDIO_MOVE may target it */
	int loader_uffd;      /* --files=all: the loader's mappings taken over, -1 otherwise */
	uint64_t uffd_features;
	size_t page_size;
	unsigned page_shift;
	pid_t pid;
	unsigned exec_gen;
	int sig;              /* the signal that asks a thread for its stack */
	_Atomic uint64_t program_signal_ns; /* when a signal of the program's own last arrived (rt_mono_ns) */
	_Atomic bool ptraced; /* a debugger is attached: no stack signal (stats.c) */
	/* The thread that holds rt.lock across a fork (fork.c), 0 if none: the only fault it can sleep
	 * in meanwhile is one of its own, which a handler serves under that hold (rt_lock_borrow). */
	_Atomic int fork_holder;
	/* The handler thread that acts under that hold now, 0 if none: one at a time (a program signal
	 * can wake the holder out of its fault, and its next fault reach another handler). */
	_Atomic int fork_borrower;
	struct rt_stats stats;
	uint64_t start_realtime_ns, start_mono_ns;
};

RT_HIDDEN extern struct rt rt;
/* Set on threads of ours and while a program thread runs our code: their mmaps are not tracked. */
RT_HIDDEN extern __thread int rt_tls_internal;

void rt_early_init(void);     /* first entry of any wrapper: atfork handlers, region table */
void rt_exec_check(char *const envp[]); /* before execve: a note if the new program loses fltrace */
void rt_start_process(void);  /* the fds, files and threads of this process (fork.c calls it again) */
bool rt_active(void);         /* tracking is on */
void rt_lock(void);
void rt_unlock(void);
bool rt_trylock(void);
bool rt_lock_within(uint64_t ns); /* rt_lock, giving up after `ns` nanoseconds (false) */
/* rt_lock for a handler thread: false while a fork holds the lock, whose thread may be waiting
 * for this very handler to serve its fault. */
bool rt_lock_unless_fork(void);
/* A handler serving a fault of rt.fork_holder acts under the holder's hold: rt_lock, rt_trylock
 * and rt_unlock do nothing in this thread until rt_lock_return. False if another handler acts
 * under it now. */
bool rt_lock_borrow(void);
void rt_lock_return(void);
bool rt_lock_borrowed(void);
void rt_lock_wait_borrower(void); /* the fork holder: until no handler acts under its hold */
void rt_lock_unmask_signals(void); /* fork child: the parent's rt_lock masked them */
void rt_fork_prepare(void);
void rt_fork_parent(void);
void rt_fork_child(void);     /* inside fork(), before other atfork handlers */
void rt_fork_child_late(void); /* in our fork wrapper, after fork() returned */
void rt_exit_flush(void);      /* _exit, exit: final stats line, trace truncated */
__attribute__((noreturn)) void rt_die(const char *what, const char *why, const char *todo);
/* rt_die with another exit status (FLTRACE_EXIT_FAR_LOST). */
__attribute__((noreturn)) void rt_die_status(int status, const char *what, const char *why, const char *todo);
__attribute__((noreturn)) void rt_die_bug(const char *file, int line, const char *cond);

/* The C library's functions behind the ones preload/ interposes (libc.c). */
void *rt_libc_next(const char *name); /* stops the run if there is none */
int rt_real_sigaction(int sig, const struct sigaction *sa, struct sigaction *old);

/* fltrace's own fds (userfaultfds, mapped files, trace, stats, maps history, /proc files of the
 * handlers) live in a private fd table that only the runtime's threads share (fdtable.c): the
 * program never sees, lists, closes or dup2s over one. Handler, stats and keeper threads use them
 * as they are; a program thread borrows one for a call, or has the keeper open or close it. */
int fdtable_start(void);        /* the keeper thread and its table (taking over fds owned so far) */
void fdtable_fork_child(void);  /* first in a fork child: the parent's private table is not there */
void fdtable_thread_enter(void); /* first in a thread the keeper created: it uses the private table */
int fdtable_call(int (*fn)(void *), void *arg); /* runs fn on the keeper (directly on our threads) */
int rt_fd_own(int fd);          /* an fd just created on one of our threads: ours, returned as is */
void rt_fd_close(int fd);       /* ours only: anything else (a parent's number in a child) is left */
/* Opened in the private table; with O_CREAT through outfile_open (fltrace/outfile.h): 0600, never
 * through a link nor over a file that is not ours, errors -errno or -OUTFILE_E*. */
int rt_fd_open(const char *path, int flags, mode_t mode, struct stat *st);
int rt_fd_take_program(int progfd, struct stat *st); /* the calling program thread's fd, as ours */
int rt_fd_borrow(int fd, bool *borrowed);  /* usable by the calling thread until rt_fd_unborrow */
void rt_fd_unborrow(int b, bool borrowed);
void rt_fd_borrow_many(const int *fds, int *out, unsigned n); /* copies in the caller's table */
int rt_fd_program_stderr(bool *borrowed);  /* where a message goes, from any thread */
bool rt_on_own_thread(void);              /* a thread of fltrace's (handlers, keeper, stats) */

/* helpers (util.c) */
uint64_t rt_now_ns(void);  /* CLOCK_REALTIME */
uint64_t rt_mono_ns(void); /* CLOCK_MONOTONIC */
#define RT_ZAP_MAX 1024 /* UIO_MAXIOV: ranges process_madvise takes in one call */
struct iovec;
void rt_zap_ranges(const struct iovec *v, unsigned n); /* MADV_DONTNEED, one TLB flush if it can */
void *rt_map(size_t len);  /* untracked anonymous memory, MAP_NORESERVE, zeroed */
void rt_unmap(void *p, size_t len);
void rt_log(const char *msg);           /* one line to stderr, prefixed "fltrace: " */
int rt_gettid(void);
ssize_t rt_write_all(int fd, const void *buf, size_t len);
ssize_t rt_read(int fd, void *buf, size_t n);
ssize_t rt_pread(int fd, void *buf, size_t n, off_t off);
ssize_t rt_write(int fd, const void *buf, size_t n);
size_t rt_read_file(const char *path, char *buf, size_t cap);
void rt_sort_u64(uint64_t *v, size_t n);
void rt_sort_u32(uint32_t *v, size_t n);

/* fltrace's own threads (ownthreads.c): pthread_create with every signal blocked but glibc's
 * SIGSETXID, so the program's process-wide signals (SIGALRM, SIGCHLD...) never run its handlers on
 * them - a handler that touched tracked memory (its heap, or with --files=all its code) would fault
 * on a handler thread - while set*id still completes; left out of glibc's count of live threads, so
 * the process ends when the program's last thread does; fn's return parks the thread for good.
 * `name` (15 bytes at most, the kernel's limit) is what ps and perf show. */
int rt_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, const char *name);
/* sigprocmask/pthread_sigmask called where the thread's mask is known (by libunwind, around each of
 * its locks): on a thread of ours, done from the mask it keeps, without a system call where it
 * changes nothing; inside a seal, answered from the seal's view. False elsewhere, or for an invalid
 * `how` (the caller makes the real call). */
bool rt_known_sigmask(int how, const sigset_t *set, sigset_t *old);
/* A seal: a stretch of fltrace's code on a program thread with the program's signals blocked, in
 * which libunwind's masks cost no system call (rt_known_sigmask). rt_signals_seal blocks them (two
 * system calls, none inside another seal or on our threads); rt_signals_seal_blocked is for code
 * that runs with them blocked already (the stack signal's handler): `view`, the mask it was entered
 * from, `real`, the one it runs with. `at`: an address in the sealing function's frame (a call from
 * above it finds the seal stale). Hidden while a program's handler runs inside one. */
struct rt_seal {
	bool blocked;
	uint64_t saved;
};
struct rt_seal rt_signals_seal(const void *at);
struct rt_seal rt_signals_seal_blocked(uint64_t view, uint64_t real, const void *at);
void rt_signals_unseal(struct rt_seal s);
struct rt_seal_hidden {
	unsigned depth;
	uint64_t view, real;
	uintptr_t at;
};
struct rt_seal_hidden rt_signals_seal_hide(void);
void rt_signals_seal_show(struct rt_seal_hidden h);
bool rt_own_thread(void); /* the calling thread is one of fltrace's (rt_thread_create) */

#endif
