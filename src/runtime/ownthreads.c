/* fltrace's own threads inside the traced process, kept out of the program's sight (none of its signals
 * but glibc's set*id broadcast, not counted among its live threads, never ending); the masks they and seals keep. */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt.h"

/* glibc's internal signals (internal-signals.h, glibc 2.34-2.41): SIGCANCEL is the kernel's first
 * real-time signal, SIGSETXID the next. set*id in a process glibc knows to be multithreaded sends
 * SIGSETXID to every thread on its list and waits until each has changed its own credentials (the
 * kernel's are per thread); a thread that blocks it hangs the call for ever. Only glibc's handler
 * runs for it: sigaction refuses it to programs. SIGCANCEL only ever targets one thread
 * (pthread_cancel, timers), and no other glibc code signals its whole thread list. */
#define GLIBC_SIGSETXID (__SIGRTMIN + 1)

static uint64_t own_signal_mask(void)
{
	return ~0ull & ~(1ull << (GLIBC_SIGSETXID - 1));
}

/* Whether this thread is one of ours, and its signal mask as the kernel keeps it (set by own_main,
 * changed only by rt_known_sigmask: rt_lock masks no signals on our threads). */
static __thread bool tls_own;
static __thread uint64_t tls_own_mask;

/* What the kernel keeps of a mask asked for: it never blocks SIGKILL or SIGSTOP. */
static uint64_t kernel_mask(uint64_t m)
{
	return m & ~(1ull << (SIGKILL - 1) | 1ull << (SIGSTOP - 1));
}

bool rt_own_thread(void)
{
	return tls_own;
}

/* The mask `how` and `set` ask for, from `now`: what glibc's pthread_sigmask would set (it never
 * blocks its two internal signals) as the kernel keeps it (never SIGKILL or SIGSTOP). False for an
 * invalid `how`. */
static bool mask_wanted(int how, const sigset_t *set, uint64_t now, uint64_t *want)
{
	uint64_t s = 0;
	memcpy(&s, set, sizeof(s));
	s &= ~(1ull << (__SIGRTMIN - 1) | 1ull << (GLIBC_SIGSETXID - 1));
	if (how == SIG_BLOCK)
		*want = now | s;
	else if (how == SIG_UNBLOCK)
		*want = now & ~s;
	else if (how == SIG_SETMASK)
		*want = s;
	else
		return false;
	*want = kernel_mask(*want);
	return true;
}

/* A program thread inside a seal: fltrace's code running with the program's signals blocked (the
 * stack signal's handler, by its sa_mask; an unwind of the thread's own stack, by rt_signals_seal).
 * What libunwind sets there is only what it believes it set, the seal's view; the real mask only
 * ever blocks more, up to the seal's end. `at`: the sealing frame, below which everything in the
 * seal runs: a call from above it (the seal left by a longjmp or a cancellation that bypassed its
 * end) finds the seal stale. */
static __thread unsigned tls_sealed;
static __thread uint64_t tls_sealed_view, tls_sealed_real;
static __thread uintptr_t tls_sealed_at;

static bool seal_holds(void)
{
	if (tls_sealed && (uintptr_t)__builtin_frame_address(0) > tls_sealed_at)
		tls_sealed = 0;
	return tls_sealed;
}

/* libunwind blocks every signal around each lock it takes (its caches, its memory pools, the
 * loader's list), two rt_sigprocmask calls each time, 0.17-0.25 us each here: 17 calls a fault for a
 * handler thread unwinding python's stacks at ample -L (strace); on program threads, 7,100 for the
 * 378 stacks and 109 allocation sites of a traced `python3 -c pass`. Where the thread's mask is
 * known they are answered here: on our threads from the mask the thread keeps, with the system call
 * only where it changes; inside a seal from its view, with a call only to block what the real mask
 * lets through (in the stack signal's handler, the CPU's own faults: a kill -SEGV must not run the
 * program's handler while libunwind holds a lock it may take too), once a seal; there that stays
 * blocked until the handler returns (sigreturn puts the interrupted mask back). */
bool rt_known_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	uint64_t *kept = tls_own ? &tls_own_mask : seal_holds() ? &tls_sealed_view : NULL;
	if (!kept)
		return false;
	uint64_t now = *kept, want = now;
	if (set && !mask_wanted(how, set, now, &want))
		return false;
	if (want != now && tls_own)
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &want, NULL, sizeof(want));
	if (!tls_own && (want & ~tls_sealed_real)) {
		uint64_t more = want & ~tls_sealed_real;
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &more, NULL, sizeof(more));
		tls_sealed_real |= more;
	}
	*kept = want;
	if (old)
		memcpy(old, &now, sizeof(now)); /* what the kernel writes: its 64 signals */
	return true;
}

static void seal_enter(uint64_t view, uint64_t real, const void *at)
{
	tls_sealed_view = view;
	tls_sealed_real = real;
	tls_sealed_at = (uintptr_t)at;
}

/* Every signal but glibc's SIGSETXID (whose handler sets no mask, and for which set*id in another
 * thread waits), the CPU's own faults too. */
struct rt_seal rt_signals_seal(const void *at)
{
	struct rt_seal s = { .blocked = false, .saved = 0 };
	if (tls_own)
		return s;
	if (!seal_holds()) {
		uint64_t block = own_signal_mask();
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &block, &s.saved, sizeof(block));
		seal_enter(s.saved, kernel_mask(s.saved | block), at);
		s.blocked = true;
	}
	tls_sealed++; /* only once blocked: a signal taken before sees no seal */
	return s;
}

struct rt_seal rt_signals_seal_blocked(uint64_t view, uint64_t real, const void *at)
{
	if (!tls_own && !seal_holds())
		seal_enter(view, kernel_mask(real), at);
	if (!tls_own)
		tls_sealed++;
	return (struct rt_seal){ .blocked = false, .saved = 0 };
}

void rt_signals_unseal(struct rt_seal s)
{
	if (tls_own)
		return;
	if (tls_sealed)
		tls_sealed--; /* before the mask comes back: a signal taken after sees no seal */
	if (s.blocked)
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &s.saved, NULL, sizeof(s.saved));
}

/* A program's handler that runs inside a seal (a signal the seal's mask lets through: the CPU's
 * own faults, SIGSETXID) sets masks of its own, for real; a seal of its own inside it leaves the
 * hidden one as it was. */
struct rt_seal_hidden rt_signals_seal_hide(void)
{
	struct rt_seal_hidden h = { tls_sealed, tls_sealed_view, tls_sealed_real, tls_sealed_at };
	tls_sealed = 0;
	return h;
}

void rt_signals_seal_show(struct rt_seal_hidden h)
{
	tls_sealed = h.depth;
	tls_sealed_view = h.view;
	tls_sealed_real = h.real;
	tls_sealed_at = h.at;
}

/* glibc counts live threads in __nptl_nthreads: whichever thread takes it to zero calls exit(0)
 * (start_thread for a returning thread, __libc_start_call_main for main's pthread_exit). Ours would
 * keep it above zero for ever, so a program whose last thread ended with pthread_exit would live
 * on as a zombie nobody can stop. It is exported (GLIBC_PRIVATE) for libthread_db, which reads its
 * size from _thread_db___nptl_nthreads ({bits, count, offset}): only a 32-bit count is used. */
static unsigned *glibc_thread_count(void)
{
	static unsigned *count;
	static bool looked;
	if (!looked) {
		looked = true;
		const uint32_t *desc = dlsym(RTLD_DEFAULT, "_thread_db___nptl_nthreads");
		unsigned *n = dlsym(RTLD_DEFAULT, "__nptl_nthreads");
		if (desc && n && desc[0] == 32 && desc[1] == 1)
			count = n;
	}
	return count;
}

struct own_start {
	void *(*fn)(void *);
	void *arg;
	const char *name;
	_Atomic int busy; /* 1 from its creator's claim until the new thread has read it */
};

/* Where a new thread finds what to run: not on its creator's stack, so that the creator goes on
 * without waiting for it to start (threads started one after another, each waiting for the last
 * to run, cost a wake-up across vCPUs apiece at every process's start). */
#define OWN_STARTS 16
static struct own_start own_start_slots[OWN_STARTS];

static struct own_start *own_start_claim(void)
{
	for (;;) {
		for (unsigned i = 0; i < OWN_STARTS; i++) {
			int idle = 0;
			if (atomic_compare_exchange_strong(&own_start_slots[i].busy, &idle, 1))
				return &own_start_slots[i];
		}
		sched_yield(); /* 16 threads of ours starting at once: never seen */
	}
}

/* A thread of ours outlives its work: returning would take glibc's count down for a thread it
 * no longer counts (and at zero, exit(0) in the middle of the program's own exit). */
static __attribute__((noreturn)) void own_park(void)
{
	for (;;)
		pause(); /* only SIGSETXID can wake it: handled, and back to sleep */
}

static void *own_main(void *p)
{
	struct own_start *s = p;
	void *(*fn)(void *) = s->fn;
	void *arg = s->arg;
	/* Named by the thread itself: pthread_setname_np from the creator refuses names of 16 bytes
	 * or more (ERANGE), and the thread then kept the name of whichever thread made it. */
	prctl(PR_SET_NAME, s->name);
	atomic_store(&s->busy, 0); /* another start may take the slot from here on */
	/* glibc unblocked SIGCANCEL in the new thread: nobody cancels ours, and a stray one (kill -32)
	 * is none of their business either. */
	uint64_t mask = own_signal_mask();
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, NULL, 8);
	tls_own_mask = kernel_mask(mask);
	tls_own = true;
	fn(arg);
	own_park();
}

/* A stack of our own, with a guard page: given one, glibc neither takes a stack from its cache
 * (whose last thread's TLS vector it would resize through the program's heap: in a fork child,
 * between the window's userfaultfd and the new runtime's, an evicted page there reads as zeros)
 * nor allocates one. The TLS vector comes from untracked memory (rt_tls_internal). */
#define OWN_STACK_SIZE (8u << 20)

static int own_thread_attr(pthread_attr_t *attr)
{
	char *stack = rt_map(OWN_STACK_SIZE);
	if (!stack)
		return ENOMEM;
	syscall(SYS_mprotect, stack, rt.page_size, PROT_NONE);
	pthread_attr_init(attr);
	return pthread_attr_setstack(attr, stack, OWN_STACK_SIZE);
}

/* Called where the program has one thread (the constructor, a fork child's first moments) or at
 * least the caller alive: the count never passes through zero on our account. */
int rt_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
	RT_BUG_ON(strlen(name) >= 16); /* the kernel's TASK_COMM_LEN: cut silently otherwise */
	pthread_attr_t attr;
	int err = own_thread_attr(&attr);
	if (err)
		return err;
	struct own_start *s = own_start_claim();
	s->fn = fn;
	s->arg = arg;
	s->name = name;
	uint64_t mask = own_signal_mask(), old;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, &old, 8); /* inherited by the new thread */
	rt_tls_internal++;
	err = pthread_create(t, &attr, own_main, s);
	rt_tls_internal--;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, 8);
	if (err) {
		atomic_store(&s->busy, 0);
		void *stack;
		size_t size;
		if (pthread_attr_getstack(&attr, &stack, &size) == 0)
			rt_unmap(stack, size);
	}
	pthread_attr_destroy(&attr);
	if (err)
		return err;
	unsigned *count = glibc_thread_count();
	if (count)
		__atomic_fetch_sub(count, 1, __ATOMIC_SEQ_CST);
	return 0;
}
