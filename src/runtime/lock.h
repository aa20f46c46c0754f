/* The runtime's locks: their one order, the one spinlock, and (debug builds) the check that every
 * thread takes them in that order. Base floor: includes nothing of the runtime. */
#ifndef FLTRACE_LOCK_H
#define FLTRACE_LOCK_H

#include <sched.h>
#include <stdatomic.h>

/* A thread holding a lock takes only locks further down this list. */
enum rt_lock_level {
	LOCK_LOADER = 1,   /* lm.lock (loader.c), rwlock: the loader's objects, across dlopen/dlclose */
	LOCK_RT,           /* rt.lock (runtime.c), mutex: regions, page states, resident set, far store */
	LOCK_LOADER_TABLE, /* lm.table_lock (loader.c): the ranges taken over from the loader */
	LOCK_OBJECTS,      /* objs.lock (sysstack.c): the loaded objects' table that handlers unwind with */
	LOCK_ALLOCS,       /* al.lock (allocs.c), mutex: the live allocations recorded */
	LOCK_KEEP,         /* kl.lock (keep.c): the live allocations of --keep-local's sites */
	LOCK_TRACE_STACKS, /* tr.stack_lock (trace.c): the interned stacks */
	LOCK_TRACE_GROW,   /* tr.grow_lock (trace.c): growing the trace file */
	LOCK_STATS,        /* st.lock (stats.c): one stats line at a time */
	LOCK_FAR_NET,      /* mcf.lock (far_memcached.c), mutex: the connections to the memory servers */
	LOCK_FDS,          /* kp.lock (fdtable.c): one request to the fd keeper at a time */
	LOCK_NR
};

#ifdef FLTRACE_DEBUG
/* Stops the run with both locks named when a thread takes a lock out of order. */
void lock_order_take(enum rt_lock_level level);
void lock_order_drop(enum rt_lock_level level);
void lock_order_fork_child(void); /* every lock is new in the child: its one thread holds none */
#else
static inline void lock_order_take(enum rt_lock_level level) { (void)level; }
static inline void lock_order_drop(enum rt_lock_level level) { (void)level; }
static inline void lock_order_fork_child(void) {}
#endif

/* For sections of a few instructions that a mutex would only slow down; after 100 tries the
 * holder is most likely preempted on this vCPU, so it is given the CPU. */
struct rt_spinlock {
	_Atomic int held;
};

static inline void rt_spin_lock(struct rt_spinlock *l, enum rt_lock_level level)
{
	lock_order_take(level);
	for (unsigned n = 0; atomic_exchange_explicit(&l->held, 1, memory_order_acquire); n++)
		if (n > 100)
			sched_yield();
}

static inline void rt_spin_unlock(struct rt_spinlock *l, enum rt_lock_level level)
{
	atomic_store_explicit(&l->held, 0, memory_order_release);
	lock_order_drop(level);
}

/* A fork child, or a lock known to be free: no thread holds it. */
static inline void rt_spin_reset(struct rt_spinlock *l)
{
	atomic_store(&l->held, 0);
}

#endif
