/* Unit tests of src/runtime/pagestate.c, outside a traced process: every legal change accepted and
 * counted, every illegal one refused (the word unchanged) and counted, the derived counts, and the
 * history the watchdog prints. One line per case. */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/runtime/pagestate.h"

static int failures;

/* The release build counts an illegal change; a debug build (make DEBUG=1) stops the run: here,
 * rt_die returns to the case that expected it. */
static jmp_buf died_at;
static int die_expected;

__attribute__((noreturn)) void rt_die(const char *what, const char *why, const char *todo)
{
	if (die_expected)
		longjmp(died_at, 1);
	printf("FAIL rt_die called: %s: %s; %s\n", what, why, todo);
	exit(1);
}

/* An illegal change: refused (release) or stopped (debug), counted either way. */
static bool refused(uintptr_t page, uint32_t *pg, unsigned to, uint32_t slot, enum ps_why why)
{
#ifdef FLTRACE_DEBUG
	die_expected = 1;
	if (setjmp(died_at) == 0) {
		pagestate_set(page, pg, to, slot, why);
		die_expected = 0;
		return false; /* it should have stopped */
	}
	die_expected = 0;
	return true;
#else
	return !pagestate_set(page, pg, to, slot, why);
#endif
}

static void check(const char *name, int cond, const char *why)
{
	if (cond) {
		printf("PASS %s\n", name);
	} else {
		printf("FAIL %s: %s\n", name, why);
		failures++;
	}
}

static const char *const names[PAGE_NSTATES] = { "empty", "present", "far", "probation" };

/* A page word in state s (with a slot when it holds one) and a few flags that must survive. */
static uint32_t word_in(unsigned s)
{
	uint32_t w = PG_READABLE | PG_WRITABLE | PG_FILE | PG_QUEUED | s;
	if (s == PAGE_EVICTED || s == PAGE_INACTIVE)
		w |= 77u << PG_SLOT_SHIFT;
	return w;
}

static void check_every_change(void)
{
	/* The legal changes, by hand (pagestate.h's picture). */
	static const int want[PAGE_NSTATES][PAGE_NSTATES] = {
		[PAGE_EMPTY] = { [PAGE_PRESENT] = 1 },
		[PAGE_PRESENT] = { [PAGE_EMPTY] = 1, [PAGE_EVICTED] = 1, [PAGE_INACTIVE] = 1 },
		[PAGE_EVICTED] = { [PAGE_EMPTY] = 1, [PAGE_PRESENT] = 1, [PAGE_INACTIVE] = 1 }, /* staged */
		[PAGE_INACTIVE] = { [PAGE_EMPTY] = 1, [PAGE_PRESENT] = 1, [PAGE_EVICTED] = 1 },
	};
	uintptr_t page = 0x700000000000;
	for (unsigned from = 0; from < PAGE_NSTATES; from++)
		for (unsigned to = 0; to < PAGE_NSTATES; to++) {
			char name[96];
			snprintf(name, sizeof(name), "%s_to_%s_%s", names[from], names[to],
				 want[from][to] ? "accepted" : "refused");
			page += 4096;
			uint32_t w = word_in(from);
			uint64_t illegal = atomic_load(&pagestate_counts.illegal);
			bool ok = want[from][to] ? pagestate_set(page, &w, to, 123, PS_RELEASE) :
						   !refused(page, &w, to, 123, PS_RELEASE);
			uint64_t nrefused = atomic_load(&pagestate_counts.illegal) - illegal;
			if (want[from][to]) {
				bool holds = to == PAGE_EVICTED || to == PAGE_INACTIVE;
				check(name, ok && nrefused == 0 && pg_state(w) == to &&
						    pg_slot(w) == (holds ? 123u : 0u) && !(w & PG_QUEUED) &&
						    (w & (PG_READABLE | PG_WRITABLE | PG_FILE)) ==
							    (PG_READABLE | PG_WRITABLE | PG_FILE),
				      "not applied as expected");
			} else {
				check(name, !ok && nrefused == 1 && w == word_in(from) && !pagestate_legal(from, to),
				      "an illegal change was not refused and counted");
			}
			/* Put the counts back: the next case starts from the same totals. */
			if (ok && to != PAGE_EMPTY)
				pagestate_set(page, &w, PAGE_EMPTY, 0, PS_RELEASE);
		}
}

static void check_counts(void)
{
	struct pagestate_counts *c = &pagestate_counts;
	uint64_t r0 = atomic_load(&c->resident), i0 = atomic_load(&c->inactive), f0 = atomic_load(&c->far);
	uint32_t pages[8] = { 0 };
	uintptr_t base = 0x710000000000;
	for (unsigned i = 0; i < 8; i++)
		pagestate_set(base + i * 4096, &pages[i], PAGE_PRESENT, 0, PS_FILL_ZERO);
	check("counts_present", atomic_load(&c->resident) == r0 + 8 && atomic_load(&c->far) == f0,
	      "8 present pages are 8 resident ones");
	for (unsigned i = 0; i < 4; i++)
		pagestate_set(base + i * 4096, &pages[i], PAGE_INACTIVE, i + 1, PS_PROBATION);
	check("counts_probation", atomic_load(&c->resident) == r0 + 8 && atomic_load(&c->inactive) == i0 + 4,
	      "probation still counts as resident");
	for (unsigned i = 0; i < 2; i++)
		pagestate_set(base + i * 4096, &pages[i], PAGE_EVICTED, pg_slot(pages[i]), PS_PROBATION_END);
	pagestate_set(base + 7 * 4096, &pages[7], PAGE_EVICTED, 9, PS_EVICT);
	check("counts_far", atomic_load(&c->resident) == r0 + 5 && atomic_load(&c->inactive) == i0 + 2 &&
				    atomic_load(&c->far) == f0 + 3 && atomic_load(&c->far_peak) >= f0 + 3,
	      "3 far pages, 5 resident of which 2 on probation");
	check("slot_kept_at_probation_end", pg_slot(pages[0]) == 1 && pg_slot(pages[1]) == 2,
	      "the far copy of a page leaving probation is its probation slot");
	/* A refused change leaves the counts alone. */
	uint64_t r = atomic_load(&c->resident);
	bool was_refused = refused(base, &pages[0], PAGE_EVICTED, 5, PS_EVICT);
	check("counts_unchanged_when_refused",
	      was_refused && atomic_load(&c->resident) == r && pg_state(pages[0]) == PAGE_EVICTED,
	      "far -> far must be refused");
	/* A prefetcher stages a far page: local memory again (probation's count), its slot kept. */
	pagestate_set(base, &pages[0], PAGE_INACTIVE, pg_slot(pages[0]), PS_PREFETCH);
	check("counts_prefetch_staged", atomic_load(&c->resident) == r + 1 && atomic_load(&c->far) == f0 + 2 &&
						pg_slot(pages[0]) == 1,
	      "a staged page counts as local memory and keeps its far slot");
	for (unsigned i = 0; i < 8; i++)
		if (pg_state(pages[i]) != PAGE_EMPTY)
			pagestate_set(base + i * 4096, &pages[i], PAGE_EMPTY, 0, PS_RELEASE);
	check("counts_back_to_zero", atomic_load(&c->resident) == r0 && atomic_load(&c->inactive) == i0 &&
					     atomic_load(&c->far) == f0,
	      "releasing every page gives the counts back");
	uint32_t clean = PG_FILE;
	pagestate_set(base, &clean, PAGE_PRESENT, 0, PS_FILL_FILE);
	clean |= PG_CLEAN;
	pagestate_set(base, &clean, PAGE_EMPTY, 0, PS_DROP_CLEAN);
	check("empty_is_not_clean", !(clean & PG_CLEAN) && (clean & PG_FILE), "an emptied file page must read the file again");
}

static void check_move(void)
{
	uint32_t a = 0, b = 0;
	pagestate_set(0x720000000000, &a, PAGE_PRESENT, 0, PS_FILL_ZERO);
	pagestate_set(0x720000000000, &a, PAGE_EVICTED, 42, PS_EVICT);
	uint64_t f = atomic_load(&pagestate_counts.far);
	pagestate_move(0x720000000000, &a, 0x730000000000, &b);
	check("move", pg_state(a) == PAGE_EMPTY && pg_slot(a) == 0 && pg_state(b) == PAGE_EVICTED &&
			      pg_slot(b) == 42 && atomic_load(&pagestate_counts.far) == f,
	      "a moved page keeps its state and slot at its new address; nothing is released");
	pagestate_set(0x730000000000, &b, PAGE_EMPTY, 0, PS_RELEASE);
}

static void check_history(void)
{
	uintptr_t page = 0x740000000000;
	uint32_t w = 0;
	pagestate_set(page, &w, PAGE_PRESENT, 0, PS_FILL_ZERO);
	pagestate_set(page, &w, PAGE_INACTIVE, 3, PS_PROBATION);
	pagestate_note_failure(page, &w, PS_SOFT, -EFAULT);
	refused(page, &w, PAGE_INACTIVE, 4, PS_PROBATION); /* illegal */
	char buf[1024];
	pagestate_describe(page, &w, buf, sizeof(buf));
	printf("# %s\n", buf);
	check("history_state", strstr(buf, "state probation (far slot 3)") != NULL, buf);
	check("history_newest_first",
	      strstr(buf, "probation->probation (probation, illegal: refused) 0 changes ago") != NULL &&
		      strstr(buf, "probation->probation (soft fault failed: EFAULT)") != NULL &&
		      strstr(buf, "present->probation (probation)") != NULL &&
		      strstr(buf, "empty->present (zero fill)") != NULL &&
		      strstr(buf, "EFAULT") < strstr(buf, "zero fill"),
	      buf);
	pagestate_describe(0x750000000000, NULL, buf, sizeof(buf));
	check("history_untracked", strstr(buf, "state untracked; no recent change recorded") != NULL, buf);
	/* Only the last few changes are kept. */
	for (int i = 0; i < 20; i++) {
		pagestate_set(page, &w, PAGE_PRESENT, 0, PS_SOFT);
		pagestate_set(page, &w, PAGE_INACTIVE, 3, PS_PROBATION);
	}
	pagestate_describe(page, &w, buf, sizeof(buf));
	check("history_bounded", strstr(buf, "zero fill") == NULL && strlen(buf) < 600, buf);
	pagestate_set(page, &w, PAGE_EMPTY, 0, PS_RELEASE);
}

int main(void)
{
	check_every_change();
	check_counts();
	check_move();
	check_history();
	return failures ? 1 : 0;
}
