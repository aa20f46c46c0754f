/* The fault path: handler threads read userfaultfd messages, serve each page (zeros or its far copy),
 * and have the faulting thread record its own stack from a signal handler when it faulted in user mode. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "fltrace/fmt.h"
#include "rt.h"

#define MSG_BATCH 64
#define PENDING_MAX 4096
#define WAKE_AFTER_NS (2 * 1000 * 1000ull)      /* a harmless early wake-up */
#define CHECK_BLOCKED_AFTER_NS (50 * 1000 * 1000ull)
#define RUNNING_WAIT_NS (20 * 1000 * 1000ull)  /* a thread still on its way to sleep in its fault */

static struct {
	pthread_t threads[RT_MAX_HANDLERS];
	unsigned n;
	char *zero_page;
	char *file_page; /* a page read from a file on its way in (served under rt.lock: one is enough) */
	_Atomic uint64_t sample_sec, sample_count;
	_Atomic uint64_t progress; /* messages read: the watchdog's sign of life */
	_Atomic unsigned started;  /* threads that got past glibc's thread start-up */
	uint64_t watched_progress;
	unsigned stalled_seconds;
} hd;

static __thread struct rt_thread *tls_thread;
static __thread bool tls_is_handler;

bool handler_is_current_thread(void)
{
	return tls_is_handler;
}

struct handler_ctx {
	struct rt_thread *pending[PENDING_MAX];
	unsigned npending;
};

/* ---- what the faulting thread was doing: /proc/self/task/<tid>/syscall ---- */

struct syscall_state {
	long nr; /* -1: a fault in user mode */
	uint64_t sp, pc;
};

static const char *parse_num(const char *p, uint64_t *v, bool *neg)
{
	while (*p == ' ')
		p++;
	*neg = *p == '-';
	if (*neg)
		p++;
	uint64_t x = 0;
	if (p[0] == '0' && p[1] == 'x') {
		for (p += 2;; p++) {
			unsigned d = (unsigned)(*p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : 99);
			if (d > 15)
				break;
			x = x * 16 + d;
		}
	} else {
		while (*p >= '0' && *p <= '9')
			x = x * 10 + (uint64_t)(*p++ - '0');
	}
	*v = x;
	return p;
}

static int thread_procfd_open(struct rt_thread *t, int tid)
{
	struct fmt f;
	char path[64];
	fmt_init(&f, path, sizeof(path));
	fmt_str(&f, "/proc/self/task/");
	fmt_u64(&f, (uint64_t)tid);
	fmt_str(&f, "/syscall");
	t->procfd = rt_fd_own(open(path, O_RDONLY | O_CLOEXEC));
	return t->procfd < 0 ? -errno : 0;
}

/* A program thread's file, opened before the program can drop root for good: a process whose
 * credentials change becomes non-dumpable, and its /proc files are root's alone from then on (an
 * fd opened before still reads: the thread group is its own). Called as a process's runtime
 * starts (a fork child's too) for the thread that starts it, on the keeper, whose table the fd
 * belongs in. */
void handler_open_procfile(int tid)
{
	struct rt_thread *t = threads_get(tid);
	if (t && t->procfd < 0)
		thread_procfd_open(t, tid);
}

static int thread_syscall_state(struct rt_thread *t, int tid, struct syscall_state *s)
{
	char buf[256];
	for (int attempt = 0; attempt < 2; attempt++) {
		if (t->procfd < 0) {
			int err = thread_procfd_open(t, tid);
			if (err < 0)
				return err;
		}
		ssize_t n = rt_pread(t->procfd, buf, sizeof(buf) - 1, 0);
		/* "running": the message can arrive before the thread has finished going to sleep in
		 * its fault; it will within microseconds, or later if it was preempted on the way (a
		 * busy machine): then yield to it. Never guess (it would read as system call 0). */
		uint64_t since = 0;
		for (int tries = 0; n > 0 && buf[0] == 'r'; tries++) {
			if (tries < 1000) {
				__builtin_ia32_pause();
			} else {
				uint64_t now = rt_mono_ns();
				if (!since)
					since = now;
				else if (now - since > RUNNING_WAIT_NS)
					break;
				sched_yield();
			}
			n = rt_pread(t->procfd, buf, sizeof(buf) - 1, 0);
		}
		if (n > 0 && buf[0] == 'r')
			return -EAGAIN;
		if (n > 0) {
			buf[n] = '\0';
			uint64_t v;
			bool neg;
			const char *p = parse_num(buf, &v, &neg);
			s->nr = neg ? -(long)v : (long)v;
			if (s->nr >= 0)
				for (int i = 0; i < 6; i++)
					p = parse_num(p, &v, &neg);
			p = parse_num(p, &s->sp, &neg);
			parse_num(p, &s->pc, &neg);
			return 0;
		}
		/* The thread id was reused by a new thread, or the file went stale: open again. */
		rt_fd_close(t->procfd);
		t->procfd = -1;
	}
	return -ESRCH;
}

/* ---- sampling (-S): faults past the rate of the current second are served, not recorded ---- */

static bool sample_take(void)
{
	if (rt.cfg.samplerate == 0)
		return true;
	uint64_t sec = rt_mono_ns() / 1000000000ull;
	if (atomic_exchange(&hd.sample_sec, sec) != sec)
		atomic_store(&hd.sample_count, 0);
	return atomic_fetch_add(&hd.sample_count, 1) < rt.cfg.samplerate;
}

/* ---- records ---- */

static void fault_fill(struct ft_fault *f, const struct rt_thread *t, int tid)
{
	memset(f, 0, sizeof(*f));
	f->time_ns = t->arrival_ns;
	f->addr = t->addr;
	f->tid = (uint32_t)tid;
	f->pages = 1;
	f->flags = t->flags;
	f->kind = t->kind;
	f->region = t->kind == FT_KIND_FILE ? t->region : 0;
	f->syscall_nr = -1;
	f->stack_id = FT_NO_STACK;
}

static uint32_t latency_since(uint64_t arrival_ns)
{
	uint64_t d = rt_now_ns() - arrival_ns;
	return d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

/* An interposed call with a big buffer left the stack it was made with in the slot (prefault.c). */
static bool slot_has_call_stack(const struct rt_thread *slot, long nr)
{
	return slot && nr >= 0 && atomic_load(&slot->call_nr) == nr &&
	       atomic_load(&slot->call_stack) != FT_NO_STACK;
}

static void count_nostack(enum rt_nostack why)
{
	atomic_fetch_add(&rt.stats.faults_nostack, 1);
	atomic_fetch_add(&rt.stats.faults_nostack_why[why], 1);
}

/* `slot` is the thread's own slot (t may be a copy of the request); `ips` the stack unwound at a
 * system call (sysstack.c), if any; `why`: the reason counted if that leaves the fault without a
 * stack. */
static void record_without_stack(struct rt_thread *t, struct rt_thread *slot, int tid,
				 const struct syscall_state *s, const uint64_t *ips, unsigned depth,
				 enum rt_nostack why)
{
	struct ft_fault f;
	fault_fill(&f, t, tid);
	if (s && s->nr == -1 && depth && ips[0] == s->pc) {
		/* A user-mode fault of a thread that blocks the stack signal, unwound by the handler. */
		f.origin = FT_ORIGIN_USER;
		f.ip = s->pc;
		f.stack_id = trace_stack_id(ips, depth);
		f.stack_status = FT_STACK_OK;
	} else if (s && s->nr >= 0) {
		uint64_t ip = s->pc;
		f.origin = FT_ORIGIN_SYSCALL;
		f.syscall_nr = (int32_t)s->nr;
		f.ip = ip;
		if (slot_has_call_stack(slot, s->nr)) {
			f.stack_id = atomic_load(&slot->call_stack);
			f.stack_status = FT_STACK_OK;
		} else if (depth) {
			f.stack_id = trace_stack_id(ips, depth);
			f.stack_status = FT_STACK_OK;
		} else {
			/* Only the system call's pc: where the program (or libc) called the kernel. */
			f.stack_id = trace_stack_id(&ip, 1);
			f.stack_status = FT_STACK_PARTIAL;
		}
		atomic_fetch_add(&rt.stats.faults_syscall, 1);
	} else {
		f.stack_status = FT_STACK_NONE;
		count_nostack(why);
	}
	f.latency_ns = latency_since(t->arrival_ns);
	trace_write_fault(&f);
}

/* ---- the stack signal: runs on the faulting thread, at the faulting instruction ---- */

static unsigned stack_from_unwinder(uint64_t *ips, unsigned max, uint64_t fault_ip)
{
	void *buf[FLTRACE_MAX_STACK_DEPTH + 16];
	int n = unw_backtrace(buf, (int)(max + 16));
	for (int i = 0; i < n; i++) {
		if ((uint64_t)buf[i] != fault_ip)
			continue;
		unsigned d = 0;
		for (int j = i; j < n && d < max; j++)
			ips[d++] = (uint64_t)buf[j];
		/* More frames than kept, or the buffer filled up: the stack was cut at --depth. */
		if (n - i > (int)max || n == (int)(max + 16))
			atomic_fetch_add(&rt.stats.stacks_cut, 1);
		return d;
	}
	return 0;
}

/* The slow but sure way: unwind from the signal's context itself. */
static unsigned stack_from_context(uint64_t *ips, unsigned max, ucontext_t *uc)
{
	unw_cursor_t cur;
	unsigned d = 0;
	if (unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
		return 0;
	do {
		unw_word_t ip;
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		ips[d++] = ip;
	} while (d < max && unw_step(&cur) > 0);
	return d;
}

/* The signal arrived in a handler of the program's own signal that interrupted the thread at its
 * fault (the kernel sets up a frame for every deliverable signal on one return to user space; the
 * last one set up runs first): the stack is unwound from the signal's context down through the
 * program's signal frame to the one that holds the fault's pc and stack pointer. 0 frames if
 * there is none (the thread had moved past its fault). */
static unsigned stack_from_fault_frame(uint64_t *ips, unsigned max, ucontext_t *uc, uint64_t pc, uint64_t sp)
{
	unw_cursor_t cur;
	unw_word_t ip, fsp;
	if (unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
		return 0;
	for (unsigned frames = 0;; frames++) {
		if (frames > 4 * FLTRACE_MAX_STACK_DEPTH || unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 ||
		    unw_get_reg(&cur, UNW_REG_SP, &fsp) < 0)
			return 0;
		/* libunwind marks a frame reached through a signal frame as one: its ip is exact,
		 * an interrupted instruction rather than a return address. */
		if (ip == pc && fsp == sp && unw_is_signal_frame(&cur) > 0)
			break;
		if (unw_step(&cur) <= 0)
			return 0;
	}
	unsigned d = 0;
	int more;
	do {
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
			return d;
		ips[d++] = ip;
	} while ((more = unw_step(&cur)) > 0 && d < max);
	if (more > 0)
		atomic_fetch_add(&rt.stats.stacks_cut, 1);
	return d;
}

/* A fault taken while bringing in a system call's buffer (prefault.c) is the system call's: its
 * stack starts at the program's call site, our own frames dropped. */
static unsigned stack_for_syscall(struct ft_fault *f, uint64_t *ips, unsigned d)
{
	unsigned skip = 0;
	while (skip < d && prefault_is_own_frame(ips[skip]))
		skip++;
	for (unsigned i = skip; i < d; i++)
		ips[i - skip] = ips[i];
	d -= skip;
	f->origin = FT_ORIGIN_SYSCALL;
	f->syscall_nr = rt_tls_prefault.nr;
	f->ip = d ? ips[0] : 0;
	f->flags = (uint16_t)((f->flags & ~FT_FLAG_WRITE) | (rt_tls_prefault.kernel_writes ? FT_FLAG_WRITE : 0));
	atomic_fetch_add(&rt.stats.faults_syscall, 1);
	return d;
}

/* The stack at the fault, from the signal's context. The signal was queued before the page was put
 * in place, so the thread has not run past its fault: the signal arrived at the faulting
 * instruction, or in a handler of the program's own signal that interrupted it there. */
static unsigned stack_at_fault(const struct rt_thread *t, ucontext_t *uc, uint64_t *ips)
{
	uint64_t ip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	if (ip != t->pc_at_fault)
		return stack_from_fault_frame(ips, rt.cfg.stack_depth, uc, t->pc_at_fault, t->sp_at_fault);
	unsigned d = stack_from_unwinder(ips, rt.cfg.stack_depth, ip);
	return d ? d : stack_from_context(ips, rt.cfg.stack_depth, uc);
}

/* Returns once the handler has put the page in place: 1, or 2 if it could not (the thread then
 * faults again). Returning earlier would only fault again. Almost always the page is there by now
 * (waking this thread took longer than the copy); if not, the handler thread was most likely
 * preempted by this one on its CPU: sleep, so that it runs (spinning or yielding measured 5x
 * slower on a busy machine), and it wakes us. */
static int wait_served(struct rt_thread *t)
{
	int served;
	for (unsigned spins = 0; spins < 200; spins++) {
		if ((served = atomic_load(&t->served)) != 0)
			return served;
		__builtin_ia32_pause();
	}
	atomic_store(&t->served_waiter, 1);
	while ((served = atomic_load(&t->served)) == 0)
		syscall(SYS_futex, (int *)&t->served, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	atomic_store(&t->served_waiter, 0);
	return served;
}

static void handler_on_signal(int sig, siginfo_t *si, void *ucv)
{
	int saved_errno = errno;
	struct rt_thread *t = tls_thread;
	if (!t || atomic_load(&t->tid) != rt_gettid())
		t = tls_thread = threads_find(rt_gettid());
	int expected = REQ_PENDING;
	if (!t || !atomic_compare_exchange_strong(&t->state, &expected, REQ_TAKEN))
		goto out;
	atomic_store(&t->busy, 1);
	rt_tls_internal++;
	uint64_t ips[FLTRACE_MAX_STACK_DEPTH];
	unsigned d = stack_at_fault(t, ucv, ips); /* meanwhile the handler puts the page in */
	if (wait_served(t) == 1) {
		/* The request is complete only now (its kind: zero, re-fetch or file). */
		struct ft_fault f;
		fault_fill(&f, t, atomic_load(&t->tid));
		f.ip = t->pc_at_fault;
		f.origin = FT_ORIGIN_USER;
		if (rt_tls_prefault.nr >= 0)
			d = stack_for_syscall(&f, ips, d);
		if (d) {
			f.stack_id = trace_stack_id(ips, d);
			f.stack_status = FT_STACK_OK;
		} else {
			f.stack_status = FT_STACK_NONE;
			bool at_fault = (uint64_t)((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP] == t->pc_at_fault;
			count_nostack(at_fault ? NOSTACK_UNWIND : NOSTACK_MOVED);
		}
		f.latency_ns = latency_since(t->arrival_ns);
		trace_write_fault(&f);
	}
	rt_tls_internal--;
	atomic_store(&t->busy, 0);
	atomic_store(&t->state, REQ_IDLE);
out:
	errno = saved_errno;
}

void handler_signal_init(void)
{
	rt.sig = SIGRTMAX - 2;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler_on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	syscall(SYS_rt_sigaction, rt.sig, NULL, NULL, 8); /* probe: the signal exists */
	rt_real_sigaction(rt.sig, &sa, NULL);
}

bool handler_owns_signal(int sig)
{
	return rt.phase != RT_OFF && sig == rt.sig;
}

/* ---- serving one fault ---- */

static __attribute__((noreturn)) void handler_die_maxmem(void)
{
	char why[160], todo[160];
	struct fmt f;
	uint64_t mb = rt.cfg.maxmem >> 20;
	fmt_init(&f, why, sizeof(why));
	fmt_str(&f, "the program needs more than ");
	fmt_u64(&f, mb);
	fmt_str(&f, " MB of local + far memory");
	fmt_init(&f, todo, sizeof(todo));
	fmt_str(&f, "run again with a larger -M, e.g. -M ");
	fmt_u64(&f, mb * 2 > 16 ? mb * 2 : 16);
	rt_die("-M exhausted", why, todo);
}

static void count_fault(uint16_t flags, uint8_t kind)
{
	atomic_fetch_add(&rt.stats.faults, 1);
	atomic_fetch_add((flags & FT_FLAG_WRITE) ? &rt.stats.faults_w : &rt.stats.faults_r, 1);
	atomic_fetch_add(kind == FT_KIND_ZERO ? &rt.stats.faults_zero :
			 kind == FT_KIND_FILE ? &rt.stats.faults_file : &rt.stats.faults_refetch, 1);
}

static __attribute__((noreturn)) void handler_die_file(uintptr_t addr, int err)
{
	char why[160];
	struct fmt f;
	fmt_init(&f, why, sizeof(why));
	fmt_str(&f, "cannot read the file behind a mapped page (");
	fmt_str(&f, strerror(-err));
	fmt_str(&f, ")");
	(void)addr;
	rt_die("file mapping", why, "check the file is still readable (the kernel would raise SIGBUS here)");
}

/* A fault that does not end: reported again and again on a page fltrace has in place (or no longer
 * tracks), or on a page fltrace fails to put in place each time. The program would spin in it
 * forever, so it is stopped with a message naming the page's state and its last changes, and the
 * stats count it (faults_stuck). Another thread's fault on the same page is served as a duplicate
 * a few times at most; any page served resets the count. */
#define STUCK_REPEATS 100000
static __thread uintptr_t tls_stuck_addr;
static __thread uint64_t tls_stuck_count;

static void handler_served(void)
{
	tls_stuck_count = 0;
}

enum stuck_why { STUCK_IN_PLACE, STUCK_UNTRACKED, STUCK_FAILING };

static void handler_check_stuck(uintptr_t addr, const uint32_t *pg, enum stuck_why why)
{
	if (addr != tls_stuck_addr) {
		tls_stuck_addr = addr;
		tls_stuck_count = 0;
	}
	if (++tls_stuck_count < STUCK_REPEATS)
		return;
	atomic_fetch_add(&pagestate_counts.stuck, 1);
	char msg[1024];
	struct fmt f;
	fmt_init(&f, msg, sizeof(msg));
	fmt_str(&f, why == STUCK_FAILING ? "fltrace failed 100000 times to put the page at 0x" :
					   "the kernel reported the fault at 0x");
	fmt_hex(&f, addr);
	fmt_str(&f, why == STUCK_IN_PLACE ? " 100000 times though fltrace has its page in place (emptied "
					    "behind its back: a raw madvise or munmap system call?)" :
		    why == STUCK_UNTRACKED ? " 100000 times though fltrace no longer tracks that address" :
					     " back in place");
	if (why != STUCK_UNTRACKED) { /* what the kernel says of it: evidence for a bug report */
		unsigned char vec = 0;
		bool mapped = syscall(SYS_mincore, addr, rt.page_size, &vec) == 0 && (vec & 1);
		fmt_str(&f, mapped ? "; the kernel has it mapped" : "; the kernel has it unmapped");
	}
	fmt_str(&f, "; page ");
	size_t n = fmt_len(&f);
	pagestate_describe(addr, pg, msg + n, sizeof(msg) - n);
	rt_die("handler", msg, why == STUCK_IN_PLACE ?
	       "make such calls through libc, or report this as a bug of fltrace with the command that "
	       "was traced" : "report this as a bug of fltrace with the command that was traced");
}

/* Probation (clock, sfifo): the page is still local memory; it comes back without a recorded fault
 * (a real far-memory system would have found it resident), which marks it as in use. Returns
 * false if the page is not on probation. */
static bool fault_serve_soft(uintptr_t addr, int fd)
{
	uint32_t *pg = region_page(addr);
	if (!pg || pg_state(*pg) != PAGE_INACTIVE)
		return false;
	uint32_t slot = pg_slot(*pg);
	int err = uffd_copy(fd, addr, farmem_addr(slot), rt.page_size, true);
	if (err < 0 && err != -EEXIST) {
		/* Not in place (EAGAIN: an mremap's event is pending on the fd): the page stays on
		 * probation with its far copy, and the thread, woken, faults again. */
		pagestate_note_failure(addr, pg, PS_SOFT, err);
		uffd_wake(fd, addr, rt.page_size);
		handler_check_stuck(addr, pg, STUCK_FAILING);
		return true;
	}
	farmem_free(slot);
	pagestate_set(addr, pg, PAGE_PRESENT, 0, PS_SOFT);
	atomic_fetch_add(&rt.stats.faults_soft, 1);
	evict_note_touched(addr, pg);
	handler_served();
	return true;
}

/* Puts the page's content in place through `fd`: zeros, its far copy, or its file data. The page
 * is missing (EMPTY or EVICTED). Returns 0, -EEXIST (it was there already) or another -errno. */
int fault_bring_in(int fd, uintptr_t addr, uint32_t *pg, bool wake, uint8_t *kind, uint32_t *region)
{
	bool evicted = pg_state(*pg) == PAGE_EVICTED;
	bool from_file = !evicted && (*pg & PG_FILE);
	uint32_t slot = pg_slot(*pg);
	const void *src = evicted ? farmem_addr(slot) : hd.zero_page;
	*kind = evicted ? FT_KIND_REFETCH : FT_KIND_ZERO;
	if (from_file) {
		/* Never written (or dropped clean): the file holds the page. */
		const struct region *r = region_of(addr);
		int err = filemap_read_page(r->file, r->file_off + (addr - r->start), hd.file_page);
		if (err < 0)
			handler_die_file(addr, err);
		src = hd.file_page;
		*kind = FT_KIND_FILE;
		*region = r->id;
	}
	int err = uffd_copy(fd, addr, src, rt.page_size, wake);
	enum ps_why why = evicted ? PS_REFETCH : from_file ? PS_FILL_FILE : PS_FILL_ZERO;
	if (err < 0 && err != -EEXIST) {
		/* ENOENT/ESRCH: the mapping or the process went away meanwhile. Nothing changed: the
		 * page keeps its far copy, and its next fault tries again. */
		pagestate_note_failure(addr, pg, why, err);
		return err;
	}
	if (evicted)
		farmem_free(slot);
	pagestate_set(addr, pg, PAGE_PRESENT, 0, why);
	/* Clean until it could be written: a page of a writable mapping may change without a fault. */
	*pg &= ~PG_CLEAN;
	if (from_file && !(*pg & PG_WRITABLE))
		*pg |= PG_CLEAN;
	evict_note_present(addr, pg);
	return err;
}

/* Queues the stack signal to a thread asleep in its fault. Sent before its page is in place,
 * whatever else wakes the thread meanwhile (a signal of the program's own), it cannot run past the
 * faulting instruction without taking the signal first; sent after, the thread wakes once, when
 * its page is there (cheaper: measured 1.2-1.7x faster on a busy machine). */
static bool signal_post(struct rt_thread *t, int tid, int served)
{
	t->posted_mono_ns = rt_mono_ns();
	t->woken = false;
	atomic_store(&t->served, served);
	atomic_store(&t->state, REQ_PENDING);
	if (syscall(SYS_tgkill, rt.pid, tid, rt.sig) == 0)
		return true;
	atomic_store(&t->state, REQ_IDLE);
	return false;
}

/* Tells the signalled thread, waiting in its stack handler, that its page is in place (or could not
 * be placed: then it records nothing and faults again). */
static void signal_served(struct rt_thread *t, bool ok)
{
	atomic_store(&t->served, ok ? 1 : 2);
	if (atomic_load(&t->served_waiter))
		syscall(SYS_futex, (int *)&t->served, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	int expected = REQ_PENDING;
	if (!ok)
		atomic_compare_exchange_strong(&t->state, &expected, REQ_IDLE);
}

/* Brings the page in; returns false if there was nothing to serve (already present, or no longer
 * ours). A served thread is left asleep: the caller wakes it once the fault is noted. With *signal,
 * the thread (tid) is sent the stack signal just before its page goes in; *signal says whether it
 * was. */
static bool fault_serve(struct rt_thread *t, uintptr_t addr, int tid, bool *signal)
{
	bool want_signal = *signal;
	*signal = false;
	int fd = t->uffd;
	if (fault_serve_soft(addr, fd))
		return false;
	uint32_t *pg = region_page(addr);
	if (!pg || pg_state(*pg) == PAGE_PRESENT) {
		uffd_wake(fd, addr, rt.page_size);
		atomic_fetch_add(&rt.stats.faults_dup, 1);
		handler_check_stuck(addr, pg, pg ? STUCK_IN_PLACE : STUCK_UNTRACKED);
		return false;
	}
	if (evict_make_room(1) == -ENOSPC)
		handler_die_maxmem();
	/* Only a handler of the program's own can wake the thread from its fault and run it back to
	 * the faulting instruction before the signal is queued (anything else that wakes it waits
	 * for this lock): without one, the cheaper order is as safe. */
	bool early = want_signal && atomic_load(&rt.program_catches);
	*signal = early && signal_post(t, tid, 0);
	int err = fault_bring_in(fd, addr, pg, false, &t->kind, &t->region);
	if (t->kind == FT_KIND_ZERO)
		t->flags |= FT_FLAG_ZERO;
	if (*signal)
		signal_served(t, err >= 0);
	else if (want_signal && !early && err >= 0)
		*signal = signal_post(t, tid, 1); /* served already */
	if (err < 0) {
		*signal = false;
		uffd_wake(fd, addr, rt.page_size);
		handler_check_stuck(addr, pg, STUCK_FAILING);
		return false;
	}
	handler_served();
	return true;
}

/* SigPnd and SigBlk of a thread (its own pending signals, and the ones it blocks); false if it is
 * gone. */
static bool thread_signal_masks(int tid, uint64_t *pending, uint64_t *blocked)
{
	char path[64], buf[2048];
	struct fmt f;
	fmt_init(&f, path, sizeof(path));
	fmt_str(&f, "/proc/self/task/");
	fmt_u64(&f, (uint64_t)tid);
	fmt_str(&f, "/status");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = rt_read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *keys[2] = { "SigPnd:", "SigBlk:" };
	uint64_t *out[2] = { pending, blocked };
	for (int k = 0; k < 2; k++) {
		const char *p = strstr(buf, keys[k]);
		*out[k] = 0;
		if (!p)
			continue;
		bool neg;
		char hex[24] = "0x";
		p += 7;
		while (*p == '\t' || *p == ' ')
			p++;
		memcpy(hex + 2, p, 16);
		hex[18] = '\0';
		parse_num(hex, out[k], &neg);
	}
	return true;
}

static bool has_sig(uint64_t mask)
{
	return (mask >> (rt.sig - 1)) & 1;
}

/* Whether a thread blocks our signal (then it never runs the stack handler); true if it is gone. */
static bool thread_blocks_signal(int tid)
{
	uint64_t pending, blocked;
	return !thread_signal_masks(tid, &pending, &blocked) || has_sig(blocked);
}

/* Where the stack signal queued to a thread stands: blocked and still pending means it cannot be
 * delivered. Blocked but no longer pending means the thread is taking it right now (the kernel
 * blocks a signal while its handler runs): it is only late. */
enum sig_fate { SIG_COMING, SIG_HELD, SIG_GONE };
static enum sig_fate thread_signal_fate(int tid)
{
	uint64_t pending, blocked;
	if (!thread_signal_masks(tid, &pending, &blocked))
		return SIG_GONE;
	return has_sig(blocked) && has_sig(pending) ? SIG_HELD : SIG_COMING;
}

/* Whether the thread still sleeps where it was seen (same system call or none, pc and sp): an
 * unrelated signal may have woken it meanwhile (its page is there), and then its stack moves. */
static bool still_in_state(struct rt_thread *t, int tid, const struct syscall_state *was)
{
	struct syscall_state s;
	return thread_syscall_state(t, tid, &s) == 0 && s.nr == was->nr && s.pc == was->pc && s.sp == was->sp;
}

/* The stack of a sleeping thread, unwound from here; 0 frames if it did not stay asleep. */
static unsigned unwind_sleeping(struct rt_thread *t, int tid, const struct syscall_state *s, uint64_t *ips)
{
	bool fresh;
	unsigned depth = sysstack_unwind(tid, s->nr, s->pc, s->sp, ips, rt.cfg.stack_depth, &fresh);
	/* A stack reused from the cache had its return addresses checked in place already. */
	if (depth && fresh && !still_in_state(t, tid, s))
		depth = 0;
	return depth;
}

/* A fault served without the stack signal: fltrace's own, sampled out, or in a system call (whose
 * stack is unwound here, `unwind`, while the thread still sleeps). */
static void handler_note_unsignalled(struct rt_thread *req, struct rt_thread *t, int tid, bool record,
				     const struct syscall_state *s, bool unwind, enum rt_nostack why)
{
	if (t && atomic_load(&t->busy)) {
		/* Taken inside our stack handler (libunwind's TLS lookups read the thread's TLS vector,
		 * which glibc allocated on the program's heap): fltrace's fault, not the program's. */
		atomic_fetch_add(&rt.stats.faults_self, 1);
		return;
	}
	count_fault(req->flags, req->kind);
	if (!record) {
		atomic_fetch_add(&rt.stats.faults_sampled_out, 1);
		return;
	}
	uint64_t ips[FLTRACE_MAX_STACK_DEPTH];
	unsigned depth = unwind && t ? unwind_sleeping(t, tid, s, ips) : 0;
	record_without_stack(req, t, tid, s, ips, depth, why);
}

static void handler_fault(struct handler_ctx *ctx, const struct uffd_msg *m, int fd)
{
	uintptr_t addr = m->arg.pagefault.address & ~((uintptr_t)rt.page_size - 1);
	int tid = (int)m->arg.pagefault.feat.ptid;
	uint64_t arrival = rt_now_ns();
	if (evict_has_probation()) {
		rt_lock();
		bool soft = fault_serve_soft(addr, fd);
		rt_unlock();
		if (soft)
			return;
	}
	struct rt_thread *t = threads_get(tid);
	bool record = sample_take();
	struct syscall_state s = { .nr = -2 };
	/* A thread inside our signal handler, or with a request still open, gets no second signal. */
	bool busy = !t || atomic_load(&t->busy) || atomic_load(&t->state) != REQ_IDLE;
	int state_err = record && !busy ? thread_syscall_state(t, tid, &s) : 0;
	if (state_err == -EAGAIN) {
		/* Never seen asleep in its fault: the thread left it (something else woke it) or was
		 * kept from going to sleep there for long (a busy machine). Either way, woken, it
		 * retries the access, and faults again if the page is still missing: that fault is
		 * the one served and recorded, with the state read then. */
		uffd_wake(fd, addr, rt.page_size);
		atomic_fetch_add(&rt.stats.faults_reraised, 1);
		return;
	}
	if (state_err < 0)
		s.nr = -2;
	bool signal = record && !busy && s.nr == -1;
	/* A thread that blocked the signal at its last fault is asked first, rather than waited
	 * for 2 ms at each fault. */
	if (signal && t->blocks_signal) {
		t->blocks_signal = thread_blocks_signal(tid);
		signal = !t->blocks_signal;
	}
	/* In a system call, or blocking the signal: the stack is unwound from here, the thread kept
	 * asleep meanwhile (it must not run on and change what is being read). */
	bool unwind = record && !busy && !signal && s.nr >= -1 && !slot_has_call_stack(t, s.nr);
	struct rt_thread local;
	struct rt_thread *req = signal ? t : &local; /* only a signalled request lives in the slot */

	rt_lock();
	req->addr = addr;
	req->uffd = fd;
	req->arrival_ns = arrival;
	req->flags = (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) ? FT_FLAG_WRITE : 0;
	req->kind = FT_KIND_ZERO;
	req->region = 0;
	req->pc_at_fault = s.pc;
	req->sp_at_fault = s.sp;
	/* Under the lock: no other handler may serve the page before the signal is queued. */
	bool wanted_signal = signal;
	bool served = fault_serve(req, addr, tid, &signal);
	rt_unlock();
	if (!served)
		return;
	if (signal) {
		count_fault(req->flags, req->kind);
		if (ctx->npending < PENDING_MAX)
			ctx->pending[ctx->npending++] = t;
		return;
	}
	/* The thread sleeps until the record is written: a program that exits right after its last
	 * fault must still find that fault in its trace. */
	enum rt_nostack why = wanted_signal ? NOSTACK_GONE : s.nr >= -1 ? NOSTACK_UNWIND : NOSTACK_STATE;
	handler_note_unsignalled(req, t, tid, record, s.nr >= -1 ? &s : NULL, unwind, why);
	uffd_wake(fd, addr, rt.page_size);
}

/* A thread that blocks the stack signal (glibc blocks every signal in a new thread until its
 * start-up code is done) sleeps on at its fault: its stack is unwound from here, the same way as
 * inside a system call. Returns false if the signal is on its way to the thread (it is just late). */
static bool record_blocked_thread(struct rt_thread *t, int tid)
{
	enum sig_fate fate = thread_signal_fate(tid);
	if (fate == SIG_COMING)
		return false;
	t->blocks_signal = true;
	int expected = REQ_PENDING;
	if (!atomic_compare_exchange_strong(&t->state, &expected, REQ_CANCELLED))
		return true; /* it took the signal after all */
	uint64_t ips[FLTRACE_MAX_STACK_DEPTH];
	unsigned depth = 0;
	struct syscall_state at = { .nr = -1, .pc = t->pc_at_fault, .sp = t->sp_at_fault };
	bool asleep = fate == SIG_HELD && still_in_state(t, tid, &at);
	if (asleep)
		depth = unwind_sleeping(t, tid, &at, ips);
	record_without_stack(t, t, tid, &at, ips, depth,
			     fate == SIG_GONE ? NOSTACK_GONE : asleep ? NOSTACK_UNWIND : NOSTACK_BLOCKED);
	atomic_store(&t->state, REQ_IDLE);
	uffd_wake(t->uffd, t->addr, rt.page_size);
	return true;
}

/* Requests the signal has not answered: a thread that blocks it is unwound from here; any other
 * is woken (harmless: the signal, if deliverable, is taken on the way back to the faulting
 * instruction) and waited for however long the machine makes it wait, unless it has blocked the
 * signal since or ended. */
static void handler_check_pending(struct handler_ctx *ctx)
{
	uint64_t now = rt_mono_ns();
	for (unsigned i = 0; i < ctx->npending;) {
		struct rt_thread *t = ctx->pending[i];
		if (atomic_load(&t->state) != REQ_PENDING) {
			ctx->pending[i] = ctx->pending[--ctx->npending];
			continue;
		}
		uint64_t age = now - t->posted_mono_ns;
		int tid = atomic_load(&t->tid);
		if (age > WAKE_AFTER_NS && !t->woken) {
			t->woken = true;
			if (record_blocked_thread(t, tid)) {
				ctx->pending[i] = ctx->pending[--ctx->npending];
				continue;
			}
			uffd_wake(t->uffd, t->addr, rt.page_size);
		}
		enum sig_fate fate = age > CHECK_BLOCKED_AFTER_NS ? thread_signal_fate(tid) : SIG_COMING;
		if (fate != SIG_COMING) {
			int expected = REQ_PENDING;
			if (atomic_compare_exchange_strong(&t->state, &expected, REQ_CANCELLED)) {
				record_without_stack(t, t, tid, NULL, NULL, 0,
						     fate == SIG_GONE ? NOSTACK_GONE : NOSTACK_BLOCKED);
				atomic_store(&t->state, REQ_IDLE);
			}
			ctx->pending[i] = ctx->pending[--ctx->npending];
			continue;
		}
		i++;
	}
}

static void handler_pin(unsigned index)
{
	if (!rt.cfg.cores_mask)
		return;
	unsigned cpus[64], n = 0;
	for (unsigned c = 0; c < 64; c++)
		if (rt.cfg.cores_mask & (1ull << c))
			cpus[n++] = c;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpus[index % n], &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *handler_main(void *arg)
{
	rt_tls_internal = 1;
	tls_is_handler = true;
	fdtable_thread_enter();
	atomic_fetch_add(&hd.started, 1);
	handler_pin((unsigned)(uintptr_t)arg);
	static __thread struct handler_ctx ctx;
	struct uffd_msg msgs[MSG_BATCH];
	/* Two fds with --files=all: the program's memory, and the loader's mappings taken over (whose
	 * REMAP events are only read: reading one lets the mremap that raised it return). */
	struct pollfd pfd[2] = { { .fd = rt.uffd, .events = POLLIN }, { .fd = rt.loader_uffd, .events = POLLIN } };
	nfds_t nfds = rt.loader_uffd >= 0 ? 2 : 1;
	uint64_t last_msg = 0;
	for (;;) {
		ssize_t n = 0;
		bool failed = false;
		for (nfds_t k = 0; k < nfds; k++) {
			ssize_t got = rt_read(pfd[k].fd, msgs, sizeof(msgs));
			if (got < 0 && errno != EAGAIN && errno != EINTR)
				failed = true;
			if (got <= 0)
				continue;
			n += got;
			for (ssize_t i = 0; i < got / (ssize_t)sizeof(msgs[0]); i++)
				if (msgs[i].event == UFFD_EVENT_PAGEFAULT)
					handler_fault(&ctx, &msgs[i], pfd[k].fd);
		}
		if (n > 0) {
			atomic_fetch_add_explicit(&hd.progress, 1, memory_order_relaxed);
			if (ctx.npending)
				handler_check_pending(&ctx);
			last_msg = rt_mono_ns();
			continue;
		}
		if (failed)
			break;
		if (ctx.npending)
			handler_check_pending(&ctx);
		/* Faults come in bursts: polling a little longer before sleeping saves the wake-up of an
		 * idle vCPU, which costs 100+ us on these VMs (kernel-facts). */
		if (rt.cfg.spin || rt_mono_ns() - last_msg < rt.cfg.spin_ns) {
			__builtin_ia32_pause();
			continue;
		}
		if (poll(pfd, nfds, ctx.npending ? 1 : 200) < 0 && errno != EINTR)
			break;
	}
	return NULL;
}

int handler_start(void)
{
	if (!hd.zero_page)
		hd.zero_page = rt_map(rt.page_size);
	if (!hd.file_page)
		hd.file_page = rt_map(rt.page_size);
	if (!hd.zero_page || !hd.file_page)
		return -ENOMEM;
	unsigned n = rt.cfg.handlers ? rt.cfg.handlers : 1;
	if (n > RT_MAX_HANDLERS)
		n = RT_MAX_HANDLERS;
	rt_tls_internal++; /* the new thread's TLS vector comes from untracked memory */
	atomic_store(&hd.started, 0);
	for (hd.n = 0; hd.n < n; hd.n++) {
		if (rt_thread_create(&hd.threads[hd.n], handler_main, (void *)(uintptr_t)hd.n) != 0)
			break;
		pthread_setname_np(hd.threads[hd.n], "fltrace-handler");
	}
	/* glibc's thread start-up reads the program's locale data (__ctype_init), which may be on the
	 * heap: it must be done before the heap is registered (a fork child's is, until its runtime
	 * starts), or a handler would wait for a fault only it can serve. */
	while (atomic_load(&hd.started) < hd.n)
		sched_yield();
	rt_tls_internal--;
	return hd.n == n ? 0 : -EAGAIN;
}

/* Called once a second (stats thread): faults waiting while no handler has read a message for
 * HANDLER_STALL_SECONDS means a handler is stuck; stop with a message rather than hang forever. */
#define HANDLER_STALL_SECONDS 10
void handler_watchdog(void)
{
	struct pollfd p[2] = { { .fd = rt.uffd, .events = POLLIN }, { .fd = rt.loader_uffd, .events = POLLIN } };
	uint64_t now = atomic_load(&hd.progress);
	if (now != hd.watched_progress || poll(p, rt.loader_uffd >= 0 ? 2 : 1, 0) < 1) {
		hd.watched_progress = now;
		hd.stalled_seconds = 0;
		return;
	}
	if (++hd.stalled_seconds >= HANDLER_STALL_SECONDS)
		rt_die("handler", "no fault has been served for 10 s while the program waits for one",
		       "this is a bug of fltrace: report it with the command that was traced");
}
