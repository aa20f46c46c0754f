/* Buffers the program hands to system calls: their missing pages are brought in by the calling
 * thread just before the call, so the fault is taken in user mode and recorded with the caller's
 * stack (a fault the kernel takes inside the call can only be recorded with the call's address). */
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdint.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "rt.h"
#include "region.h"
#include "threads.h"
#include "prefault.h"
#include "trace.h"

#define PREFAULT_BATCH 64

__thread struct rt_prefault rt_tls_prefault = { .nr = -1 };

static struct {
	uintptr_t lo, hi; /* our own library's mapped range: its frames are not the program's */
} self;

static int self_find(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t probe = (uintptr_t)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && probe >= lo && probe < lo + ph->p_memsz) {
			self.lo = lo;
			self.hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

void prefault_init(void)
{
	dl_iterate_phdr(self_find, (void *)(uintptr_t)prefault_init);
}

bool prefault_is_own_frame(uint64_t ip)
{
	return ip >= self.lo && ip < self.hi;
}

/* The stack of the program's call into one of our wrappers, without our own frames, interned in
 * the trace (FT_NO_STACK if none). Callers set rt_tls_internal: the unwinder's memory is ours.
 * The thread is marked busy meanwhile, as in our stack handler: libunwind holds its cache lock
 * while it walks the loader's list (dl_iterate_phdr), whose link_maps of dlopen'd objects are on
 * the tracked heap; a fault there must be served without the stack signal, whose handler would
 * take that lock again on this thread and never return (seen: python3 at -L 2, threads importing). */
uint32_t prefault_caller_stack(void)
{
	uint64_t ips[PREFAULT_IPS_MAX];
	unsigned n;
	return prefault_caller_stack_ips(ips, &n);
}

/* ips holds PREFAULT_IPS_MAX entries, sized by --depth: this runs on the program's stack, which
 * may be small (a thread's of 16 KiB). */
uint32_t prefault_caller_stack_ips(uint64_t *ips, unsigned *depth)
{
	struct own_code c = threads_own_code_begin();
	/* libunwind's masks inside, answered without system calls: 30 calls an unwind otherwise at
	 * a python3's start (rt_known_sigmask). Not cancelled inside (glibc 2.34+: no system call),
	 * which would leave the seal behind. */
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	struct rt_seal seal = rt_signals_seal(&c);
	int n = unw_backtrace((void **)ips, (int)PREFAULT_IPS_MAX);
	rt_signals_unseal(seal);
	pthread_setcancelstate(cancel, NULL);
	unsigned d = 0;
	for (int i = 0; i < n && d < rt.cfg.stack_depth; i++) /* in place: d <= i */
		if (d || !prefault_is_own_frame(ips[i]))
			ips[d++] = ips[i];
	/* Still busy while the stack is interned: a signal of the program's whose handler faults
	 * while this thread holds the trace's stack lock would otherwise bring the stack signal,
	 * whose handler takes that lock again (sigalarm --files=all at -L 1 hung so). */
	uint32_t id = d ? trace_stack_id(ips, d) : FT_NO_STACK;
	threads_own_code_end(c);
	*depth = d;
	return id;
}

/* Touches (reads) the missing pages of [buf, buf+len) in batches, at most half of local memory:
 * a larger buffer would only evict its own first pages again. */
bool prefault_range(const void *buf, size_t len, int nr, bool kernel_writes)
{
	/* STARTING too: in a fork child's window, touching the pages serves them (fork.c) where the
	 * kernel touching them would fail the call with EFAULT. */
	int phase = atomic_load(&rt.phase);
	if (!len || rt_tls_internal || (phase != RT_ON && phase != RT_STARTING))
		return false;
	uintptr_t pages[PREFAULT_BATCH];
	uintptr_t start = (uintptr_t)buf, end = start + len;
	uint64_t budget = (rt.cfg.localmem >> rt.page_shift) / 2;
	rt_tls_prefault.nr = nr;
	rt_tls_prefault.kernel_writes = kernel_writes;
	while (start < end && budget) {
		/* A program's signal handler may call write(2) while this thread holds the lock in one
		 * of our wrappers: never wait for it here (the kernel then takes the faults instead). */
		if (!rt_trylock()) {
			sched_yield(); /* a handler holds it for a fault or two: try once more */
			if (!rt_trylock()) {
				rt_tls_prefault.nr = -1;
				return true; /* the kernel may take the faults: leave the caller's stack */
			}
		}
		rt_tls_internal++;
		unsigned n = region_missing_pages(start, end - start, pages,
						  budget < PREFAULT_BATCH ? (unsigned)budget : PREFAULT_BATCH);
		rt_tls_internal--;
		rt_unlock();
		if (n == 0)
			break;
		for (unsigned i = 0; i < n; i++)
			(void)*(volatile const char *)pages[i];
		budget -= n;
		start = pages[n - 1] + rt.page_size;
	}
	rt_tls_prefault.nr = -1;
	return budget == 0 && start < end;
}

/* For a buffer too big to bring in first: the kernel will fault inside the call, where no signal
 * may reach the thread; the stack it was called with is left in its slot for the handler. */
void prefault_call_begin(int nr)
{
	int saved_errno = errno;
	struct rt_thread *t = threads_get(rt_gettid());
	if (t) {
		rt_tls_internal++;
		atomic_store(&t->call_stack, prefault_caller_stack());
		atomic_store(&t->call_nr, nr);
		rt_tls_internal--;
	}
	errno = saved_errno;
}

void prefault_call_end(void)
{
	struct rt_thread *t = threads_find(rt_gettid());
	if (t)
		atomic_store(&t->call_nr, -1);
}
