/* Program threads as the fault path sees them: one request slot per thread id, in an open-addressing
 * table of our own memory, so a signal handler can find its slot without locks or allocation. */
#include <errno.h>
#include <stddef.h>
#include <sys/rseq.h>
#include <unistd.h>

#include "rt.h"
#include "threads.h"

#define THREADS_MAX 32768 /* power of two */

static struct rt_thread *table;

int threads_init(void)
{
	if (!table)
		table = rt_map(THREADS_MAX * sizeof(struct rt_thread));
	return table ? 0 : -ENOMEM;
}

static unsigned threads_hash(int tid)
{
	return ((unsigned)tid * 2654435761u) & (THREADS_MAX - 1);
}

struct rt_thread *threads_find(int tid)
{
	if (!table) /* a signal of the program's before fltrace started (stack_before_program_handler) */
		return NULL;
	for (unsigned i = threads_hash(tid), n = 0; n < THREADS_MAX; i = (i + 1) & (THREADS_MAX - 1), n++) {
		int key = atomic_load_explicit(&table[i].tid, memory_order_acquire);
		if (key == tid)
			return &table[i];
		if (key == 0)
			return NULL;
	}
	return NULL;
}

/* glibc 2.35+ registers an rseq area per thread, in its thread control block, where the kernel keeps
 * the number of the CPU the thread runs on current on every return to user mode: a handler reads it
 * for a thread asleep in its fault without the stack signal (handler.c). None with
 * GLIBC_TUNABLES=glibc.pthread.rseq=0, or where registration failed (cpu_id negative then). */
void threads_tell_rseq(struct rt_thread *t)
{
	if (__rseq_size < offsetof(struct rseq, cpu_id) + sizeof(uint32_t) ||
	    atomic_load_explicit(&t->rseq_cpu, memory_order_relaxed))
		return;
	const struct rseq *area = (const struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
	if ((int32_t)area->cpu_id >= 0)
		atomic_store(&t->rseq_cpu, &area->cpu_id);
}

/* Slots are never freed: a thread id reused by a new thread takes over its slot (idle by then). */
struct rt_thread *threads_get(int tid)
{
	for (unsigned i = threads_hash(tid), n = 0; n < THREADS_MAX; i = (i + 1) & (THREADS_MAX - 1), n++) {
		int key = atomic_load_explicit(&table[i].tid, memory_order_acquire);
		if (key == tid)
			return &table[i];
		if (key == 0) {
			int expected = 0;
			table[i].procfd = -1;
			table[i].foreign = false;
			atomic_store(&table[i].call_nr, -1);
			atomic_store(&table[i].cpu, -1);
			atomic_store(&table[i].signal_cpu, -1);
			atomic_store(&table[i].rseq_cpu, NULL);
			table[i].rseq_untracked = 0;
			table[i].stacks_reused = table[i].stacks_new = 0;
			table[i].unwinds = table[i].unwinds_lacked_fp = 0;
			if (atomic_compare_exchange_strong(&table[i].tid, &expected, tid))
				return &table[i];
			if (expected == tid)
				return &table[i];
		}
	}
	return NULL;
}

void threads_forget_all(void)
{
	for (unsigned i = 0; i < THREADS_MAX; i++) {
		if (atomic_load(&table[i].tid) == 0)
			continue;
		table[i].procfd = -1; /* the parent's, in the parent's private fd table */
		table[i].fault_ring = NULL; /* the parent's events, and their ring is not mapped here */
		table[i].fault_watch = 0;
		table[i].fault_wanted = table[i].fault_tried = false;
		atomic_store(&table[i].fault_busy, 0);
		atomic_store(&table[i].state, REQ_IDLE);
		atomic_store(&table[i].busy, 0);
		atomic_store(&table[i].tid, 0);
	}
}

struct own_code threads_own_code_begin(void)
{
	/* No table yet (a run stopped at start-up): no handler either, so no signal to keep away. */
	struct rt_thread *t = table ? threads_get(rt_gettid()) : NULL;
	return (struct own_code){ .t = t, .was_busy = t ? atomic_exchange(&t->busy, 1) : 0 };
}

void threads_own_code_end(struct own_code c)
{
	if (c.t)
		atomic_store(&c.t->busy, c.was_busy);
}

/* The walk holds the loader's lock while it reads link maps that dlopen put on the tracked heap. A
 * fault there is served without the stack signal (the thread is busy, as in our signal handler):
 * signalled, it would wait in libunwind for its lock, held by another thread that took a stack
 * signal and waits in its unwind for the loader's lock. Seen: python3, 4 threads importing
 * modules at -L 2 under load, dlopen's wrapper against a signal taken in clock_gettime. */
int threads_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	struct own_code c = threads_own_code_begin();
	int r = dl_iterate_phdr(cb, data);
	threads_own_code_end(c);
	return r;
}
