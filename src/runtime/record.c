/* A fault's record: sampling (-S), the fault counters, and the trace record written with the stack
 * the faulting thread took, or without one (then the reason is counted). */
#include <string.h>

#include "fault.h"
#include "threads.h"
#include "trace.h"

static struct {
	_Atomic uint64_t sample_sec, sample_count;
} rs;

/* Faults past the rate of the current second are served, not recorded. */
bool sample_take(void)
{
	if (rt.cfg.samplerate == 0)
		return true;
	uint64_t sec = rt_mono_ns() / 1000000000ull;
	if (atomic_exchange(&rs.sample_sec, sec) != sec)
		atomic_store(&rs.sample_count, 0);
	return atomic_fetch_add(&rs.sample_count, 1) < rt.cfg.samplerate;
}

void fault_fill(struct ft_fault *f, const struct rt_thread *t, int tid)
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

uint32_t latency_since(uint64_t arrival_ns)
{
	uint64_t d = rt_now_ns() - arrival_ns;
	return d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

/* An interposed call with a big buffer left the stack it was made with in the slot (prefault.c). */
bool slot_has_call_stack(const struct rt_thread *slot, long nr)
{
	return slot && nr >= 0 && atomic_load(&slot->call_nr) == nr &&
	       atomic_load(&slot->call_stack) != FT_NO_STACK;
}

void count_nostack(enum rt_nostack why)
{
	atomic_fetch_add(&rt.stats.faults_nostack, 1);
	atomic_fetch_add(&rt.stats.faults_nostack_why[why], 1);
}

/* `slot` is the thread's own slot (t may be a copy of the request); `ips` the stack unwound at a
 * system call (sysstack.c), if any; `why`: the reason counted if that leaves the fault without a
 * stack. */
void record_without_stack(struct rt_thread *t, struct rt_thread *slot, int tid,
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

void count_fault(uint16_t flags, uint8_t kind)
{
	atomic_fetch_add(&rt.stats.faults, 1);
	atomic_fetch_add((flags & FT_FLAG_WRITE) ? &rt.stats.faults_w : &rt.stats.faults_r, 1);
	atomic_fetch_add(kind == FT_KIND_ZERO ? &rt.stats.faults_zero :
			 kind == FT_KIND_FILE ? &rt.stats.faults_file :
			 kind == FT_KIND_PREFETCH ? &rt.stats.faults_prefetch : &rt.stats.faults_refetch, 1);
}
