/* The stats file fltrace-data-stats-<pid>.out: one line a second (and one at exit) of
 * `<unix time>,name:value,...`, so a user can read the peak memory and pick -L for the next run. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fltrace/fmt.h"
#include "rt.h"
#include "region.h"
#include "far.h"
#include "threads.h"
#include "handler.h"
#include "trace.h"
#include "maps.h"
#include "stats.h"

static struct {
	int fd;
	pthread_t thread;
	_Atomic int stop;
	bool started;
	struct rt_spinlock lock;
	_Atomic uint32_t running;
} st = { .fd = -1 };

/* What the stats line and the handlers need from /proc/self/status (the thread group leader's). */
struct proc_status {
	uint64_t hwm, rss; /* VmHWM, VmRSS, in bytes */
	uint64_t tracer;   /* TracerPid: a debugger (gdb, strace) is attached */
};

/* The number after `key` in buf, 0 if there is none. */
static uint64_t status_field(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);
	if (!p)
		return 0;
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	uint64_t v = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return v;
}

static void stats_read_status(struct proc_status *ps)
{
	char buf[4096];
	*ps = (struct proc_status){ 0 };
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = rt_read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	ps->hwm = status_field(buf, "VmHWM:") * 1024;
	ps->rss = status_field(buf, "VmRSS:") * 1024;
	ps->tracer = status_field(buf, "TracerPid:");
}

/* A debugger stops the program at every signal it is sent, ours too (gdb --batch ends the run
 * there): while one is attached, stacks are unwound by the handlers instead. Noticed at start and
 * with each stats line (an attach in between sees at most a second of them). */
static void stats_note_debugger(const struct proc_status *ps)
{
	atomic_store(&rt.ptraced, ps->tracer != 0);
}

static void kv(struct fmt *f, const char *name, uint64_t v)
{
	fmt_char(f, ',');
	fmt_str(f, name);
	fmt_char(f, ':');
	fmt_u64(f, v);
}

/* Where the fault path's time went (rt.h, struct rt_time_stats): t_<what>_ns, summed over threads. */
static void stats_time_kv(struct fmt *f, struct rt_time_stats *t)
{
	kv(f, "t_serve_ns", atomic_load(&t->serve));
	kv(f, "t_procfs_ns", atomic_load(&t->procfs));
	kv(f, "t_lockwait_ns", atomic_load(&t->lockwait));
	kv(f, "t_soft_ns", atomic_load(&t->soft));
	kv(f, "t_prefetch_ns", atomic_load(&t->prefetch));
	kv(f, "t_evict_ns", atomic_load(&t->evict));
	kv(f, "t_copyin_ns", atomic_load(&t->copyin));
	kv(f, "t_far_wait_ns", atomic_load(&t->far_wait));
	kv(f, "t_far_get_ns", atomic_load(&t->far_get));
	kv(f, "t_far_put_ns", atomic_load(&t->far_put));
	kv(f, "t_far_seal_ns", atomic_load(&t->far_seal));
	kv(f, "t_signal_ns", atomic_load(&t->signal));
	kv(f, "t_unwind_ns", atomic_load(&t->unwind));
	kv(f, "t_record_ns", atomic_load(&t->record));
	kv(f, "t_idle_ns", atomic_load(&t->idle));
	kv(f, "t_cpu_ns", handler_cpu_ns()); /* the handler threads' CPU time, polling included */
	kv(f, "handler_sleeps", atomic_load(&t->wakeups));
	kv(f, "t_sigstack_ns", atomic_load(&t->sigstack));
	kv(f, "t_sigwait_ns", atomic_load(&t->sigwait));
	kv(f, "t_sigrecord_ns", atomic_load(&t->sigrecord));
}

void stats_write_line(void)
{
	if (st.fd < 0)
		return;
	struct rt_stats *s = &rt.stats;
	char buf[4096];
	struct fmt f;
	uint64_t ps = rt.page_size;
	struct proc_status status;
	stats_read_status(&status);
	stats_note_debugger(&status);
	uint64_t hwm = status.hwm, rss = status.rss;
	const struct pagestate_counts *pc = &pagestate_counts;
	uint64_t resident = atomic_load(&pc->resident) * ps;
	fmt_init(&f, buf, sizeof(buf));
	fmt_u64(&f, rt_now_ns() / 1000000000ull);
	kv(&f, "faults", atomic_load(&s->faults));
	kv(&f, "faults_r", atomic_load(&s->faults_r));
	kv(&f, "faults_w", atomic_load(&s->faults_w));
	kv(&f, "faults_wp", atomic_load(&s->faults_wp));
	kv(&f, "faults_zp", atomic_load(&s->faults_zero));
	kv(&f, "faults_refetch", atomic_load(&s->faults_refetch));
	kv(&f, "faults_file", atomic_load(&s->faults_file));
	kv(&f, "faults_syscall", atomic_load(&s->faults_syscall));
	kv(&f, "faults_nostack", atomic_load(&s->faults_nostack));
	static const char *const why[NOSTACK_NR] = { "faults_nostack_blocked", "faults_nostack_moved",
		"faults_nostack_unwind", "faults_nostack_gone", "faults_nostack_state" };
	for (int i = 0; i < NOSTACK_NR; i++)
		kv(&f, why[i], atomic_load(&s->faults_nostack_why[i]));
	kv(&f, "faults_reraised", atomic_load(&s->faults_reraised));
	kv(&f, "faults_signal_first", atomic_load(&s->faults_signal_first));
	kv(&f, "faults_dup", atomic_load(&s->faults_dup));
	kv(&f, "faults_self", atomic_load(&s->faults_self));
	kv(&f, "faults_soft", atomic_load(&s->faults_soft));
	kv(&f, "faults_prefetch", atomic_load(&s->faults_prefetch));
	kv(&f, "prefetch_pages", atomic_load(&s->prefetch_pages));
	kv(&f, "prefetch_used", atomic_load(&s->prefetch_used));
	kv(&f, "prefetch_unused", atomic_load(&s->prefetch_unused));
	kv(&f, "prefetch_dropped", atomic_load(&s->prefetch_dropped));
	kv(&f, "keep_local_allocs", atomic_load(&s->keep_allocs));
	kv(&f, "keep_local_lost", atomic_load(&s->keep_lost));
	kv(&f, "keep_local_bytes", atomic_load(&pc->kept) * ps);
	kv(&f, "keep_local_peak_bytes", atomic_load(&pc->kept_peak) * ps);
	kv(&f, "keep_local_over", atomic_load(&s->keep_over));
	kv(&f, "faults_sampled_out", atomic_load(&s->faults_sampled_out));
	kv(&f, "stacks_cut", atomic_load(&s->stacks_cut));
	kv(&f, "stacks_by_handler", atomic_load(&s->stacks_by_handler));
	kv(&f, "faults_regs_sampled", atomic_load(&s->faults_regs_sampled));
	kv(&f, "evict_ops", atomic_load(&s->evict_ops));
	kv(&f, "evict_pages_done", atomic_load(&s->evict_pages));
	kv(&f, "evict_fallback", atomic_load(&s->evict_fallback));
	kv(&f, "evict_failed", atomic_load(&s->evict_failed));
	kv(&f, "evict_move_misreported", atomic_load(&s->evict_move_misreported));
	kv(&f, "evict_file_dropped", atomic_load(&s->evict_file_dropped));
	kv(&f, "evict_file_moved", atomic_load(&s->evict_file_moved));
	kv(&f, "memory_used", resident);
	kv(&f, "resident_bytes", resident);
	kv(&f, "resident_peak_bytes", atomic_load(&pc->resident_peak) * ps);
	kv(&f, "inactive_bytes", atomic_load(&pc->inactive) * ps);
	kv(&f, "far_bytes", atomic_load(&pc->far) * ps);
	kv(&f, "far_peak_bytes", atomic_load(&pc->far_peak) * ps);
	kv(&f, "page_state_illegal", atomic_load(&pc->illegal));
	kv(&f, "faults_stuck", atomic_load(&pc->stuck));
	kv(&f, "tracked_bytes", region_tracked_bytes());
	/* The far store lives in the process too (evicted pages and probation), and so does the
	 * trace's unreleased tail: not the program's untracked memory. What is left: stacks, static
	 * data, code, shared and file mappings, and fltrace's own small bookkeeping. */
	uint64_t far_held = (atomic_load(&pc->far) + atomic_load(&pc->inactive)) * ps;
	uint64_t ours = resident + far_held + trace_unreleased_bytes();
	kv(&f, "untracked_rss_bytes", rss > ours ? rss - ours : 0);
	kv(&f, "untracked_map_bytes", atomic_load(&s->untracked_map_bytes));
	kv(&f, "untracked_maps", atomic_load(&s->untracked_maps));
	kv(&f, "file_map_bytes", atomic_load(&s->file_map_bytes));
	kv(&f, "file_maps", atomic_load(&s->file_maps));
	kv(&f, "untracked_shared_file_bytes", atomic_load(&s->untracked_shared_file_bytes));
	kv(&f, "untracked_shared_file_maps", atomic_load(&s->untracked_shared_file_maps));
	kv(&f, "loader_file_bytes", atomic_load(&s->loader_file_bytes));
	kv(&f, "loader_file_maps", atomic_load(&s->loader_file_maps));
	kv(&f, "untracked_loader_file_bytes", atomic_load(&s->untracked_loader_file_bytes));
	kv(&f, "untracked_loader_file_maps", atomic_load(&s->untracked_loader_file_maps));
	kv(&f, "allocs_big", atomic_load(&s->allocs_big));
	kv(&f, "allocs_sampled", atomic_load(&s->allocs_sampled));
	kv(&f, "allocs_page", atomic_load(&s->allocs_page));
	kv(&f, "allocs_maps", atomic_load(&s->allocs_maps));
	kv(&f, "allocs_lost", atomic_load(&s->allocs_lost));
	kv(&f, "alloc_sample_bytes", rt.cfg.allocs ? rt.cfg.alloc_sample : 0);
	kv(&f, "trace_bytes", trace_bytes());
	kv(&f, "vm_hwm", hwm);
	kv(&f, "vm_rss", rss);
	kv(&f, "localmem", rt.cfg.localmem);
	kv(&f, "maxmem", rt.cfg.maxmem);
	kv(&f, "exec_gen", rt.exec_gen);
	kv(&f, "tracer_pid", status.tracer);
	kv(&f, "far_puts", atomic_load(&s->far_puts));
	kv(&f, "far_gets", atomic_load(&s->far_gets));
	kv(&f, "far_put_rounds", atomic_load(&s->far_put_rounds));
	kv(&f, "far_replica_gets", atomic_load(&s->far_replica_gets));
	kv(&f, "far_servers_lost", atomic_load(&s->far_servers_lost));
	kv(&f, "faults_routed", atomic_load(&s->faults_routed));
	kv(&f, "signals_remote", atomic_load(&s->signals_remote));
	kv(&f, "pollers_starved", atomic_load(&s->pollers_starved));
	kv(&f, "faults_stolen", atomic_load(&s->faults_stolen));
	kv(&f, "faults_backstop", atomic_load(&s->faults_backstop));
	kv(&f, "pollers_boosted", atomic_load(&s->pollers_boosted));
	kv(&f, "far_latency_ns", rt.cfg.far_latency_ns);
	uint64_t far_ns, far_slots;
	far_keys(&far_ns, &far_slots);
	if (far_slots) {
		kv(&f, "far_ns", far_ns);
		kv(&f, "far_slots", far_slots);
	}
	stats_time_kv(&f, &s->time);
	fmt_char(&f, '\n');
	rt_spin_lock(&st.lock, LOCK_STATS);
	bool borrowed; /* the last line, at exit, comes from a program thread */
	int fd = rt_fd_borrow(st.fd, &borrowed);
	if (fd >= 0)
		rt_write_all(fd, buf, fmt_len(&f));
	rt_fd_unborrow(fd, borrowed);
	rt_spin_unlock(&st.lock, LOCK_STATS);
}

static void *stats_main(void *arg)
{
	rt_tls_internal = 1;
	fdtable_thread_enter();
	/* This thread reads the program's heap (maps_snapshot walks the loader's link maps, which
	 * dlopen allocated) and may fault there: such a fault is served without the stack signal, as
	 * in our signal handler. Signalled, it would unwind while holding the loader's lock
	 * (dl_iterate_phdr) and wait for libunwind's, which a program thread unwinding in our
	 * handler holds while it waits for the loader's: python3 with 4 threads importing modules
	 * at -L 2 hung so in 1 run of 4. */
	struct rt_thread *self = threads_get(rt_gettid());
	if (self)
		atomic_store(&self->busy, 1);
	struct proc_status status;
	stats_read_status(&status);
	stats_note_debugger(&status); /* one there from the start: before the program runs on */
	atomic_store(&st.running, 1);
	rt_wake_waiters(&st.running);
	while (!atomic_load(&st.stop)) {
		for (int i = 0; i < 10 && !atomic_load(&st.stop); i++) {
			struct timespec ts = { .tv_sec = 0, .tv_nsec = 100 * 1000 * 1000 };
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR) /* glibc's SIGSETXID */
				;
		}
		if (atomic_load(&st.stop))
			break;
		stats_write_line();
		handler_watchdog();
		maps_snapshot();
		trace_release_written();
	}
	return NULL;
}

/* fltrace-data-stats-<pid>.out, appended to by every program image of the process (exec keeps
 * the pid): one that is there already is opened if it is ours. */
int stats_open(char *path, size_t cap)
{
	struct fmt f;
	fmt_init(&f, path, cap);
	fmt_str(&f, rt.cfg.outdir);
	fmt_str(&f, "/fltrace-data-stats-");
	fmt_u64(&f, (uint64_t)rt.pid);
	fmt_str(&f, ".out");
	/* On the keeper: in the private table. (A fork child's st.fd was the parent's, in the
	 * parent's private table: nothing to close here.) */
	int fd = rt_fd_open(path, O_WRONLY | O_CREAT | O_APPEND, 0600, NULL);
	st.fd = fd < 0 ? -1 : fd;
	return fd < 0 ? fd : 0;
}

int stats_start(void)
{
	if (st.fd < 0)
		return -1;
	atomic_store(&st.stop, 0);
	atomic_store(&st.running, 0);
	rt_tls_internal++; /* the new thread's TLS vector comes from untracked memory */
	int err = rt_thread_create(&st.thread, stats_main, NULL, "fltrace-stats");
	rt_tls_internal--;
	if (err != 0)
		return -1;
	while (!atomic_load(&st.running)) /* past glibc's thread start-up: see handler_start */
		rt_wait_while(&st.running, 0);
	st.started = true;
	return 0;
}

void stats_fork_child(void)
{
	st.fd = -1; /* the parent's, in the parent's private fd table */
}

void stats_stop(void)
{
	atomic_store(&st.stop, 1);
	/* Not joined: at exit the thread may be blocked; one last line comes from the caller. */
	stats_write_line();
}
