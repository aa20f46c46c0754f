/* The preload runtime's internal contracts: the one runtime root (all global state lives in it)
 * and the interfaces of its modules (uffd, region, farmem, evict, threads, handler, trace, maps, stats). */
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
	unsigned far;        /* enum fltrace_backend: a row of inc/fltrace/backends.h */
	const char *far_arg; /* file: the directory (in the environment) */
	uint64_t far_latency_ns; /* --far-latency: waited at each re-fetch */
	unsigned stack_depth;
	bool spin;           /* handler threads busy-poll instead of blocking */
	uint64_t spin_ns;    /* adaptive: poll this long after the last fault before blocking */
	bool files_all;      /* --files=all: the loader's code and read-only data are traced too */
	bool allocs;         /* allocation sites are recorded (FLTRACE_ALLOCS, default on) */
	uint64_t alloc_sample; /* mean bytes between sampled small allocations, 0 = none */
};

/* ---- userfaultfd: the only owner of the fds and their ioctls (uffd.c) ---- */
int uffd_open(bool sigbus, uint64_t *features_out);
/* For the loader's mappings (loader.c): EVENT_REMAP keeps a registration across mremap, the only
 * atomic way to put registered memory in place of a file mapping; the REMAP events are read and
 * ignored by the handler threads. UFFDIO_COPY on it fails with -EAGAIN while an mremap is pending. */
int uffd_open_remap(void);
int uffd_register(int fd, uintptr_t start, size_t len);
int uffd_unregister(int fd, uintptr_t start, size_t len);
int uffd_copy(int fd, uintptr_t dst, const void *src, size_t len, bool wake);
int uffd_wake(int fd, uintptr_t start, size_t len);
/* Moves pages out atomically (no write can be lost); returns bytes moved or -errno. */
long uffd_move(int fd, uintptr_t dst, uintptr_t src, size_t len);

struct region {
	uintptr_t start, end;
	uint32_t *pages; /* one word per page, raw mmap (never program-visible memory) */
	size_t pages_map_len;
	int file;          /* filemap handle of a file region, -1 for anonymous memory */
	uint64_t file_off; /* file offset of start */
	uint32_t id;       /* of the FT_REC_REGION record that names the file */
	bool loader;       /* taken over from the dynamic loader (--files=all): registered on rt.loader_uffd */
};

/* All functions below need rt.lock held, except region_table_init. */
void region_table_init(void);
int region_add(uintptr_t start, size_t len, int prot);    /* track + register */
/* A private file mapping emulated by anonymous memory: takes over the reference `file`. */
int region_add_file(uintptr_t start, size_t len, int prot, int file, uint64_t off);
/* A loader mapping about to be replaced by memory already registered on rt.loader_uffd. */
int region_add_loader(uintptr_t start, size_t len, int prot, int file, uint64_t off);
int region_fd(uintptr_t addr); /* the userfaultfd the page at addr is registered on */
const struct region *region_of(uintptr_t addr);           /* NULL if untracked */
void region_record_files(void);                           /* FT_REC_REGION for every file region */
void region_remove(uintptr_t start, size_t len);          /* forget (unmapped) */
void region_zap(uintptr_t start, size_t len);             /* data gone: reads back zeros */
void region_protect(uintptr_t start, size_t len, int prot);
void region_remap(uintptr_t old, size_t oldlen, uintptr_t new_, size_t newlen);
uint32_t *region_page(uintptr_t addr);                    /* NULL if untracked; state: pagestate.h */
int region_register_all(int fd, int loader_fd);           /* at start-up and after fork */
void region_restore_evicted(void);                        /* fork child: copy far pages in */
uint64_t region_tracked_bytes(void);
unsigned region_missing_pages(uintptr_t start, size_t len, uintptr_t *out, unsigned max);

/* ---- files behind emulated private file mappings (filemap.c); callers hold rt.lock ---- */
int filemap_open(int progfd); /* a handle holding our own fd, or -errno */
/* A handle for a file the loader mapped, by path; -ESTALE if it is no longer that (dev, inode). */
int filemap_open_path(const char *path, uint64_t dev, uint64_t ino);
void filemap_ident(int file, const char **path, uint64_t *dev, uint64_t *ino);
void filemap_ref(int file);
void filemap_unref(int file);
uint64_t filemap_size(int file);                 /* at the time of the first mapping */
/* Reads one page at `off` into buf, zeros past the end of the file; -errno on failure. */
int filemap_read_page(int file, uint64_t off, void *buf);
uint32_t filemap_record(int file, uintptr_t start, size_t len, uint64_t off); /* a region id */
void *filemap_mmap(int file, void *addr, size_t len, int prot, int flags, uint64_t off);
void filemap_fork_prepare(void); /* the files, copied where the fork child inherits them */
void filemap_fork_parent(void);
void filemap_fork_child(void);
void filemap_ids_reset(void);                   /* a new trace file (fork child) */

/* ---- far memory store (farmem.c): where evicted pages live ---- */
int farmem_init(uint64_t slots);
int farmem_alloc_run(uint32_t n, uint32_t *first); /* n contiguous fresh slots */
void farmem_free(uint32_t slot);                   /* released lazily, in batches */
void *farmem_addr(uint32_t slot);
void farmem_drop_local(uint32_t first, unsigned n); /* their pages are kept by the backend (far.c) */
int farmem_register(int fd);

/* ---- eviction (evict.c): keeps resident tracked pages under the cap; the policy (policy.h) picks ---- */
int evict_init(uint64_t cap_pages, uint64_t max_pages);
void evict_note_present(uintptr_t page, uint32_t *pg); /* a page became resident */
void evict_note_touched(uintptr_t page, uint32_t *pg); /* ... back from probation (a soft fault) */
void evict_requeue(uintptr_t page, uint32_t *pg);      /* a resident page moved (mremap) */
bool evict_has_probation(void);                        /* the policy takes soft faults */
/* Makes room for `need` more resident pages; -ENOSPC when -M is exhausted. */
int evict_make_room(unsigned need);

/* ---- program threads (threads.c): per-thread fault request slots ---- */
enum req_state { REQ_IDLE = 0, REQ_PENDING, REQ_TAKEN, REQ_CANCELLED };
struct rt_thread {
	_Atomic int tid;   /* key; 0 = free */
	_Atomic int state; /* enum req_state */
	_Atomic int busy;  /* inside our signal handler: its faults are served without a signal */
	int procfd;        /* /proc/self/task/<tid>/syscall, opened by the handler */
	uint64_t addr, arrival_ns, posted_mono_ns;
	int uffd;          /* the userfaultfd the fault came from (rt.uffd or rt.loader_uffd) */
	uint64_t pc_at_fault; /* from /proc: the signal must arrive exactly there */
	uint64_t sp_at_fault; /* ... and the stack pointer there, to unwind without the signal */
	uint16_t flags;
	uint8_t kind;
	uint32_t region;   /* FT_KIND_FILE: the region record's id */
	bool woken;        /* handler already woke it after a delay */
	bool blocks_signal; /* it blocked the stack signal at its last fault: check at the next one */
	_Atomic int served; /* a signalled request: 0 while its page is on its way, 1 served, 2 failed */
	_Atomic int served_waiter; /* the thread sleeps on `served` (a futex) */
	_Atomic int call_nr;        /* in an interposed system call with a big buffer: its number */
	_Atomic uint32_t call_stack; /* ... and the stack it was called with */
};
int threads_init(void);
struct rt_thread *threads_get(int tid);  /* find or create (handler side) */
struct rt_thread *threads_find(int tid); /* find only */
void threads_forget_all(void);           /* fork child */

/* ---- the fault path (handler.c) ---- */
int handler_start(void);
void handler_signal_init(void); /* installs the stack signal */
bool handler_owns_signal(int sig);
void handler_open_procfile(int tid); /* before the program may drop root: see handler.c */
void handler_watchdog(void);
int fault_bring_in(int fd, uintptr_t addr, uint32_t *pg, bool wake, uint8_t *kind, uint32_t *region);
bool handler_is_current_thread(void);     /* once a second: a stuck handler stops the program */

/* ---- system-call buffers (prefault.c) ---- */
struct rt_prefault {
	int nr;             /* the system call the thread is about to make, -1 if none */
	bool kernel_writes; /* whether that call writes the buffer (read) or reads it (write) */
};
RT_HIDDEN extern __thread struct rt_prefault rt_tls_prefault;
void prefault_init(void);
bool prefault_range(const void *buf, size_t len, int nr, bool kernel_writes); /* true: pages left */
void prefault_call_begin(int nr); /* the kernel will fault in the call: leave the caller's stack */
void prefault_call_end(void);
bool prefault_is_own_frame(uint64_t ip);
uint32_t prefault_caller_stack(void); /* the caller's stack without our frames, interned */

/* ---- stacks of threads inside a system call (sysstack.c) ---- */
void sysstack_objects_refresh(void); /* the loaded objects' unwind tables; never from a handler */
/* Handlers only; the thread (tid, in system call nr) must stay asleep meanwhile. */
/* `fresh`: unwound now (the caller checks the thread stayed asleep), not reused from a cache. */
unsigned sysstack_unwind(int tid, long nr, uint64_t pc, uint64_t sp, uint64_t *ips, unsigned max, bool *fresh);

/* ---- libunwind's memory validation without fds (unwcheck.c) ---- */
void unwcheck_init(void); /* before libunwind's first use */

/* ---- trace writer (trace.c) ---- */
int trace_open(void);
void *trace_reserve(uint32_t size);
void trace_commit(void *rec, uint16_t type, uint32_t size);
uint32_t trace_stack_id(const uint64_t *ips, unsigned depth);
void trace_write_fault(const struct ft_fault *f);
void trace_close(void);
void trace_close_inherited(void); /* fork child: the parent's file is not ours */
void trace_release_written(void); /* drop written pages from our RSS */
uint64_t trace_bytes(void);

/* ---- the dynamic loader's mappings, --files=all (loader.c) ---- */
void loader_take_over(bool permanent); /* after start-up (permanent) and after every dlopen */
void loader_give_back(void);           /* before dlclose: the objects it may unmap get their files back */
void loader_dl_begin(bool exclusive);  /* around dlopen (shared) and dlclose (exclusive, with the */
void loader_dl_end(void);              /* give-back and the pass after it) */
void loader_fork_child(void);          /* in the child, before anything else of ours */
/* Rewrites /proc/self/maps text so taken-over ranges show their file again; returns the length. */
size_t loader_rewrite_maps(const char *in, size_t len, char *out, size_t cap);
/* Puts the files back under taken-over parts of [start, start+len) (rt.lock held): before the
 * program mremaps them (an mremap of memory on rt.loader_uffd must not wait for a handler). */
void loader_release(uintptr_t start, size_t len);

/* ---- allocation sites (allocs.c) ---- */
int allocs_init(uint64_t sample_bytes, bool on);
void allocs_fork_child(void);
RT_HIDDEN extern __thread int64_t rt_tls_alloc_countdown; /* bytes until the next sample */
void allocs_heap_slow(void *p, size_t size);
void allocs_heap_free_slow(void *p);
bool allocs_maybe_recorded(const void *p);
/* The program's mmap / mremap / munmap; `caller` is the wrapper's return address: calls from
 * fltrace's own code (jemalloc's mappings of the heap) are not the program's. */
void allocs_note_map(uintptr_t p, size_t len, unsigned kind, const void *caller);
void allocs_note_unmap(uintptr_t p, size_t len, const void *caller);
/* The malloc family's hooks: a subtraction on the common path. */
static inline void allocs_heap(void *p, size_t size)
{
	if (size >= FT_ALLOC_BIG || (rt_tls_alloc_countdown -= (int64_t)size) <= 0)
		allocs_heap_slow(p, size);
}
static inline void allocs_heap_free(void *p)
{
	if (allocs_maybe_recorded(p))
		allocs_heap_free_slow(p);
}

/* ---- maps history (maps.c) ---- */
void maps_snapshot(void);        /* if /proc/self/maps changed: record it */
void maps_close(void);
void maps_fork_child(void);      /* after fork: a history (and files) of the child's own */

/* ---- stats (stats.c) ---- */
/* Why a fault was recorded without a stack (stats faults_nostack_<name>, in this order). */
enum rt_nostack { NOSTACK_BLOCKED, NOSTACK_MOVED, NOSTACK_UNWIND, NOSTACK_GONE, NOSTACK_STATE, NOSTACK_NR };
/* Where the fault path's time goes, in ns summed over threads (make bench's breakdown; README,
 * "Where a fault's time goes"). Handler threads: */
struct rt_time_stats {
	_Atomic uint64_t serve;    /* a message in hand until its thread is woken: all of what follows */
	_Atomic uint64_t procfs;   /* reading what the faulting thread does (/proc/<tid>/syscall) */
	_Atomic uint64_t lockwait; /* waiting for rt.lock */
	_Atomic uint64_t soft;     /* pages on probation put back (soft faults) */
	_Atomic uint64_t evict;    /* eviction rounds on the fault path (evict_ops rounds, evict_pages pages) */
	_Atomic uint64_t copyin;   /* UFFDIO_COPY of the page: zeros, its far copy or its file data */
	_Atomic uint64_t signal;   /* queueing the stack signal to the faulting thread (tgkill) */
	_Atomic uint64_t far_wait; /* --far-latency: the emulated medium's wait at re-fetches */
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

struct rt_stats {
	_Atomic uint64_t faults, faults_r, faults_w, faults_wp, faults_zero, faults_refetch, faults_file,
		faults_syscall, faults_nostack, faults_sampled_out, faults_dup, faults_self, stacks_cut;
	_Atomic uint64_t faults_nostack_why[NOSTACK_NR]; /* faults_nostack by reason */
	_Atomic uint64_t faults_reraised; /* a message whose thread was never seen asleep: woken to fault again */
	_Atomic uint64_t evict_ops, evict_pages, evict_fallback, evict_failed;
	_Atomic uint64_t evict_file_dropped, evict_file_moved; /* clean file pages dropped, written ones moved */
	_Atomic uint64_t faults_soft; /* resident, probation and far counts: pagestate.h */
	_Atomic uint64_t untracked_map_bytes, untracked_maps;
	_Atomic uint64_t file_map_bytes, file_maps;       /* private file mappings emulated (tracked) */
	_Atomic uint64_t untracked_shared_file_bytes, untracked_shared_file_maps;
	_Atomic uint64_t loader_file_bytes, loader_file_maps;   /* --files=all: loader mappings traced */
	_Atomic uint64_t untracked_loader_file_bytes, untracked_loader_file_maps; /* ... and left alone */
	_Atomic uint64_t allocs_big, allocs_sampled, allocs_maps, allocs_lost; /* allocation records */
	_Atomic uint64_t far_puts, far_gets; /* pages written to and read from the far backend */
	struct rt_time_stats time;
};
int stats_start(void);
void stats_write_line(void);
void stats_stop(void);
void stats_fork_child(void);

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
	_Atomic bool program_catches; /* the program installed a signal handler (sigaction, signal) */
	struct rt_stats stats;
	uint64_t start_realtime_ns, start_mono_ns;
};

RT_HIDDEN extern struct rt rt;
/* Set on threads of ours and while a program thread runs our code: their mmaps are not tracked. */
RT_HIDDEN extern __thread int rt_tls_internal;

void rt_early_init(void);     /* first entry of any wrapper: atfork handlers, region table */
void rt_start_process(void);  /* the fds, files and threads of this process (fork.c calls it again) */
bool rt_active(void);         /* tracking is on */
void rt_lock(void);
void rt_unlock(void);
bool rt_trylock(void);
void rt_lock_unmask_signals(void); /* fork child: the parent's rt_lock masked them */
void rt_fork_prepare(void);
void rt_fork_parent(void);
void rt_fork_child(void);     /* inside fork(), before other atfork handlers */
void rt_fork_child_late(void); /* in our fork wrapper, after fork() returned */
void rt_exit_flush(void);      /* _exit, exit: final stats line, trace truncated */
__attribute__((noreturn)) void rt_die(const char *what, const char *why, const char *todo);
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
int rt_fd_open(const char *path, int flags, mode_t mode, struct stat *st); /* opened in the private table */
int rt_fd_take_program(int progfd, struct stat *st); /* the calling program thread's fd, as ours */
int rt_fd_borrow(int fd, bool *borrowed);  /* usable by the calling thread until rt_fd_unborrow */
void rt_fd_unborrow(int b, bool borrowed);
void rt_fd_borrow_many(const int *fds, int *out, unsigned n); /* copies in the caller's table */
int rt_fd_program_stderr(bool *borrowed);  /* where a message goes, from any thread */

/* helpers (util.c) */
uint64_t rt_now_ns(void);  /* CLOCK_REALTIME */
uint64_t rt_mono_ns(void); /* CLOCK_MONOTONIC */
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
 * the process ends when the program's last thread does; fn's return parks the thread for good. */
int rt_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
