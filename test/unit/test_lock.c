/* Unit test of lock.h/lock.c: the one spinlock, and the lock-order check that debug builds run
 * (built here with it on, whatever the build): in-order nesting passes, every inversion stops. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/runtime/lock.h"

static int failures;
static jmp_buf died_at;
static int die_expected;
static char died_why[256];

__attribute__((noreturn)) void rt_die(const char *what, const char *why, const char *todo)
{
	if (die_expected) {
		snprintf(died_why, sizeof(died_why), "%s: %s", what, why);
		longjmp(died_at, 1);
	}
	printf("FAIL rt_die called: %s: %s; %s\n", what, why, todo);
	exit(1);
}

static void check(int ok, const char *name, const char *detail)
{
	if (ok)
		printf("PASS lock_%s\n", name);
	else {
		printf("FAIL lock_%s: %s\n", name, detail);
		failures++;
	}
}

/* Takes `second` while holding `first`; true if the check stopped it, with died_why set. */
static int stops(enum rt_lock_level first, enum rt_lock_level second)
{
	died_why[0] = '\0';
	lock_order_fork_child(); /* a clean thread for each case */
	lock_order_take(first);
	die_expected = 1;
	if (setjmp(died_at) == 0) {
		lock_order_take(second);
		die_expected = 0;
		lock_order_drop(second);
		lock_order_drop(first);
		return 0;
	}
	die_expected = 0;
	lock_order_fork_child();
	return 1;
}

int main(void)
{
	/* Every pair in list order nests; every pair against it, and a lock taken twice, stops. */
	int in_order_ok = 1, inverted_stop = 1, twice_stop = 1;
	for (int a = LOCK_LOADER; a < LOCK_NR; a++) {
		twice_stop &= stops(a, a);
		for (int b = a + 1; b < LOCK_NR; b++) {
			in_order_ok &= !stops(a, b);
			inverted_stop &= stops(b, a);
		}
	}
	check(in_order_ok, "in_order_nests", "a pair taken in lock.h's order was stopped");
	check(inverted_stop, "inversion_stops", "a pair taken against lock.h's order was let through");
	check(twice_stop, "twice_stops", "a lock taken twice by one thread was let through");
	stops(LOCK_FDS, LOCK_RT);
	check(strcmp(died_why, "lock order: taking rt.lock while holding kp.lock, which comes after it in "
			       "lock.h's order") == 0, "message_names_both", died_why);

	/* The whole chain, outermost first, then released: an earlier lock may be taken again. */
	lock_order_fork_child();
	for (int l = LOCK_LOADER; l < LOCK_NR; l++)
		lock_order_take(l);
	for (int l = LOCK_NR - 1; l >= LOCK_LOADER; l--)
		lock_order_drop(l);
	check(!stops(LOCK_LOADER, LOCK_RT), "chain_released", "a released lock still counted as held");

	/* The spinlock: held until unlocked, its level tracked like the others. */
	struct rt_spinlock s = { 0 };
	lock_order_fork_child();
	rt_spin_lock(&s, LOCK_STATS);
	int held = atomic_load(&s.held) == 1;
	die_expected = 1;
	int stopped = setjmp(died_at) != 0;
	if (!stopped)
		lock_order_take(LOCK_RT); /* rt.lock under st.lock: against the order */
	die_expected = 0;
	lock_order_fork_child();
	rt_spin_unlock(&s, LOCK_STATS);
	check(held && stopped && atomic_load(&s.held) == 0, "spinlock_levels",
	      "the spinlock did not hold, or its level was not checked");
	rt_spin_lock(&s, LOCK_STATS);
	rt_spin_reset(&s);
	check(atomic_load(&s.held) == 0, "spinlock_reset", "a reset lock is still held");
	return failures ? 1 : 0;
}
