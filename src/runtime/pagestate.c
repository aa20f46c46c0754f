/* The page-state machine: legal changes, derived counts, and each page's last few changes.
 * Everything here runs under rt.lock (see pagestate.h); only the counts are read without it. */
#include <string.h>

#include "fltrace/fmt.h"
#include "pagestate.h"

__attribute__((noreturn)) void rt_die(const char *what, const char *why, const char *todo);

__attribute__((visibility("hidden"))) struct pagestate_counts pagestate_counts;

/* legal[from][to] */
static const bool legal[PAGE_NSTATES][PAGE_NSTATES] = {
	[PAGE_EMPTY] = { [PAGE_PRESENT] = true },
	[PAGE_PRESENT] = { [PAGE_EMPTY] = true, [PAGE_EVICTED] = true, [PAGE_INACTIVE] = true },
	[PAGE_EVICTED] = { [PAGE_EMPTY] = true, [PAGE_PRESENT] = true, [PAGE_INACTIVE] = true },
	[PAGE_INACTIVE] = { [PAGE_EMPTY] = true, [PAGE_PRESENT] = true, [PAGE_EVICTED] = true },
};

/* What each state counts as: local memory (resident), probation, far. */
static const uint8_t is_resident[PAGE_NSTATES] = { [PAGE_PRESENT] = 1, [PAGE_INACTIVE] = 1 };
static const uint8_t is_inactive[PAGE_NSTATES] = { [PAGE_INACTIVE] = 1 };
static const uint8_t is_far[PAGE_NSTATES] = { [PAGE_EVICTED] = 1 };

/* ---- history: the last HIST_RING changes of any page, in order (a flight recorder) ----
 * A page's recent changes are found by reading back from the newest: only where something went
 * wrong (an illegal change, a stuck page). Written in order, the ring touches a new page of memory
 * every 256 changes: the table hashed by page address it replaced touched one of its 256 pages at
 * random at each change, and each first touch of one costs a fault, 3 ms of a python run of 5,500
 * faults at ample -L (2.5% of its time). In .bss: untouched parts cost no memory. */
#define HIST_RING (1u << 16)
#define HIST_EVENTS 6         /* shown for a page, newest first */
#define HIST_REFUSED 0x80     /* in why: an illegal change, refused */

struct hist_event {
	uintptr_t page;
	uint32_t seq;           /* pagestate_set's global change counter at the time (0: never written) */
	uint8_t from, to, why;
	int8_t err;             /* -errno of a failed attempt, 0 for a change */
};

static struct hist_event hist[HIST_RING];
static uint32_t hist_seq;

static void hist_add(uintptr_t page, unsigned from, unsigned to, unsigned why, int err)
{
	uint32_t seq = ++hist_seq;
	hist[seq % HIST_RING] = (struct hist_event){
		.page = page, .seq = seq, .from = (uint8_t)from, .to = (uint8_t)to, .why = (uint8_t)why,
		.err = (int8_t)(err < -127 ? -127 : err),
	};
}

bool pagestate_legal(unsigned from, unsigned to)
{
	return from < PAGE_NSTATES && to < PAGE_NSTATES && legal[from][to];
}

static void count_change(unsigned from, unsigned to)
{
	struct pagestate_counts *c = &pagestate_counts;
	int d = is_resident[to] - is_resident[from];
	if (d > 0) {
		uint64_t now = atomic_fetch_add(&c->resident, 1) + 1;
		if (now > atomic_load(&c->resident_peak))
			atomic_store(&c->resident_peak, now);
	} else if (d < 0) {
		atomic_fetch_sub(&c->resident, 1);
	}
	if (is_inactive[to] != is_inactive[from])
		atomic_fetch_add(&c->inactive, is_inactive[to] ? 1 : (uint64_t)-1);
	if (is_far[to] != is_far[from]) {
		if (is_far[to]) {
			uint64_t now = atomic_fetch_add(&c->far, 1) + 1;
			if (now > atomic_load(&c->far_peak))
				atomic_store(&c->far_peak, now);
		} else {
			atomic_fetch_sub(&c->far, 1);
		}
	}
}

static __attribute__((noinline)) bool refuse(uintptr_t page, uint32_t *pg, unsigned to, enum ps_why why)
{
	atomic_fetch_add(&pagestate_counts.illegal, 1);
	hist_add(page, pg_state(*pg), to, why | HIST_REFUSED, 0);
#ifdef FLTRACE_DEBUG
	char buf[512];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_str(&f, "illegal page-state change to ");
	fmt_str(&f, pagestate_name(to));
	fmt_str(&f, " at 0x");
	fmt_hex(&f, page);
	fmt_str(&f, ": ");
	size_t n = fmt_len(&f);
	pagestate_describe(page, pg, buf + n, sizeof(buf) - n);
	rt_die("page state", buf, "this is a bug of fltrace: report it with the command that was traced");
#endif
	return false;
}

bool pagestate_set(uintptr_t page, uint32_t *pg, unsigned to, uint32_t slot, enum ps_why why)
{
	uint32_t w = *pg;
	unsigned from = pg_state(w);
	if (__builtin_expect(!pagestate_legal(from, to), 0))
		return refuse(page, pg, to, why);
	bool holds_slot = to == PAGE_EVICTED || to == PAGE_INACTIVE;
	if (pg_kept(w))
		atomic_fetch_sub(&pagestate_counts.kept, 1); /* the flag goes with the slot bits below */
	w = (w & ((1u << PG_SLOT_SHIFT) - 1) & ~(PG_STATE_MASK | PG_QUEUED)) | to |
	    (holds_slot ? slot << PG_SLOT_SHIFT : 0);
	if (to == PAGE_EMPTY)
		w &= ~PG_CLEAN;
	*pg = w;
	count_change(from, to);
	hist_add(page, from, to, why, 0);
	return true;
}

void pagestate_keep(uintptr_t page, uint32_t *pg)
{
	(void)page;
	if (pg_state(*pg) != PAGE_PRESENT || (*pg & PG_KEPT))
		return;
	*pg |= PG_KEPT;
	uint64_t now = atomic_fetch_add(&pagestate_counts.kept, 1) + 1;
	if (now > atomic_load(&pagestate_counts.kept_peak))
		atomic_store(&pagestate_counts.kept_peak, now);
}

void pagestate_note_failure(uintptr_t page, const uint32_t *pg, enum ps_why why, int err)
{
	hist_add(page, pg_state(*pg), pg_state(*pg), why, err ? err : -1);
}

void pagestate_move(uintptr_t from_page, uint32_t *from, uintptr_t to_page, uint32_t *to)
{
	unsigned s = pg_state(*from);
	*to = *from;
	*from = (*from & ((1u << PG_SLOT_SHIFT) - 1) & ~(PG_STATE_MASK | PG_QUEUED | PG_CLEAN)) | PAGE_EMPTY;
	hist_add(from_page, s, PAGE_EMPTY, PS_MOVED_OUT, 0);
	hist_add(to_page, s, s, PS_MOVED_IN, 0);
}

void pagestate_peaks_restart(void)
{
	atomic_store(&pagestate_counts.resident_peak, atomic_load(&pagestate_counts.resident));
	atomic_store(&pagestate_counts.far_peak, atomic_load(&pagestate_counts.far));
}

void pagestate_fork_child(void)
{
	pagestate_peaks_restart();
	atomic_store(&pagestate_counts.illegal, 0);
	atomic_store(&pagestate_counts.stuck, 0);
}

const char *pagestate_name(unsigned state)
{
	static const char *const names[PAGE_NSTATES] = { "empty", "present", "far", "probation" };
	return state < PAGE_NSTATES ? names[state] : "?";
}

static const char *why_name(unsigned why)
{
	static const char *const names[PS_NWHY] = {
		[PS_FILL_ZERO] = "zero fill", [PS_FILL_FILE] = "file fill", [PS_REFETCH] = "refetch",
		[PS_SOFT] = "soft fault", [PS_ADOPT] = "adopted", [PS_FORK_RESTORE] = "fork restore",
		[PS_PROBATION] = "probation", [PS_EVICT] = "evict", [PS_PROBATION_END] = "probation end",
		[PS_FORK_WINDOW] = "fork window", [PS_DROP_CLEAN] = "clean drop", [PS_GONE] = "gone",
		[PS_RELEASE] = "release", [PS_MOVED_OUT] = "moved away", [PS_MOVED_IN] = "moved here",
		[PS_PREFETCH] = "prefetch", [PS_PREFETCH_HIT] = "prefetch hit",
	};
	return why < PS_NWHY && names[why] ? names[why] : "?";
}

size_t pagestate_describe(uintptr_t page, const uint32_t *pg, char *buf, size_t cap)
{
	struct fmt f;
	fmt_init(&f, buf, cap);
	unsigned s = pg ? pg_state(*pg) : PAGE_NSTATES;
	fmt_str(&f, "state ");
	fmt_str(&f, pg ? pagestate_name(s) : "untracked");
	if (pg && (s == PAGE_EVICTED || s == PAGE_INACTIVE)) {
		fmt_str(&f, " (far slot ");
		fmt_u64(&f, pg_slot(*pg));
		fmt_char(&f, ')');
	}
	unsigned shown = 0;
	for (uint32_t back = 0; back < HIST_RING && shown < HIST_EVENTS; back++) {
		const struct hist_event *e = &hist[(hist_seq - back) % HIST_RING];
		if (e->seq != hist_seq - back) /* older than the ring, or never written */
			break;
		if (e->page != page)
			continue;
		fmt_str(&f, shown++ ? ", " : "; last changes, newest first: ");
		fmt_str(&f, pagestate_name(e->from));
		fmt_str(&f, "->");
		fmt_str(&f, pagestate_name(e->to));
		fmt_str(&f, " (");
		fmt_str(&f, why_name(e->why & ~HIST_REFUSED));
		if (e->why & HIST_REFUSED)
			fmt_str(&f, ", illegal: refused");
		if (e->err) {
			/* Not strerror: its translation may read locale data on the program's heap. */
			const char *name = strerrorname_np(-e->err);
			fmt_str(&f, " failed: ");
			if (name)
				fmt_str(&f, name);
			else
				fmt_i64(&f, e->err);
		}
		fmt_str(&f, ") ");
		fmt_u64(&f, (uint64_t)(hist_seq - e->seq));
		fmt_str(&f, " changes ago");
	}
	if (!shown)
		fmt_str(&f, "; no recent change recorded");
	return fmt_len(&f);
}
