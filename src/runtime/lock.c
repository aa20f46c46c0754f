/* The lock-order check of debug builds (lock.h): each thread's held levels, one bit each; taking a
 * level at or above one held is a bug, reported with both names before it can deadlock. */
#include "rt.h"

#ifdef FLTRACE_DEBUG
#include "fltrace/fmt.h"

static __thread unsigned tls_held;

static const char *const lock_names[LOCK_NR] = {
	[LOCK_LOADER] = "lm.lock", [LOCK_RT] = "rt.lock", [LOCK_LOADER_TABLE] = "lm.table_lock", [LOCK_OBJECTS] = "objs.lock",
	[LOCK_ALLOCS] = "al.lock", [LOCK_KEEP] = "kl.lock", [LOCK_TRACE_STACKS] = "tr.stack_lock", [LOCK_TRACE_GROW] = "tr.grow_lock",
	[LOCK_STATS] = "st.lock", [LOCK_FAR_NET] = "mcf.lock", [LOCK_FDS] = "kp.lock",
};

void lock_order_take(enum rt_lock_level level)
{
	unsigned later = tls_held & ~((1u << level) - 1); /* held: this level or one further down */
	if (later) {
		char buf[160];
		struct fmt f;
		fmt_init(&f, buf, sizeof(buf));
		fmt_str(&f, "taking ");
		fmt_str(&f, lock_names[level]);
		fmt_str(&f, " while holding ");
		fmt_str(&f, lock_names[__builtin_ctz(later)]);
		fmt_str(&f, ", which comes after it in lock.h's order");
		rt_die("lock order", buf, "this is a bug of fltrace: report it with the command that was traced");
	}
	tls_held |= 1u << level;
}

void lock_order_drop(enum rt_lock_level level)
{
	tls_held &= ~(1u << level);
}

void lock_order_fork_child(void)
{
	tls_held = 0;
}
#endif
