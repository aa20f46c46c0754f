/* The page-state machine (pagestate.c): the one owner of every tracked page's state. A page's state
 * lives in the low bits of its 32-bit word in its region's page array (region.c); every change of
 * state goes through pagestate_set, which checks that the change is legal, keeps the resident,
 * probation and far counts, and records the change in the page's short history (for the watchdog's
 * message and for debugging). No other file writes a page's state or far slot.
 *
 *   EMPTY ----fill (zeros, file)----> PRESENT <----refetch---- EVICTED
 *     ^  <---drop clean / gone / release---'  |  '---evict------->  |
 *     |                                       |                     |
 *     |              probation  PRESENT -> INACTIVE (touch: soft)   |
 *     '-------release, clean drop---- INACTIVE <--prefetch staged---'
 *                                              '---probation ends--->'
 *     '-------------------------release----------------------------'
 *
 * EMPTY reads as zeros (or, in a file region, as the file); PRESENT is mapped in the program;
 * EVICTED's data is in its far slot only; INACTIVE's too (CLOCK's probation), but it still counts
 * as local memory: a touch brings it back without a recorded fault. A page being evicted is never
 * seen half-way: eviction, like every change, runs under rt.lock, and an eviction that fails
 * leaves the page PRESENT. Callers hold rt.lock (a fork child's window is single-threaded). */
#ifndef FLTRACE_PAGESTATE_H
#define FLTRACE_PAGESTATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum page_state { PAGE_EMPTY = 0, PAGE_PRESENT = 1, PAGE_EVICTED = 2, PAGE_INACTIVE = 3 };
#define PAGE_NSTATES 4
#define PG_STATE_MASK 0x3u
/* Flags: not states; their owners set them (evict.c the queue bit, region.c the protections). */
#define PG_QUEUED 0x4u   /* in the resident ring */
#define PG_READABLE 0x8u /* the program's protection allows reads */
#define PG_WRITABLE 0x10u /* the program's protection allows writes */
#define PG_FILE 0x20u     /* in a file region: an empty page is filled from the file */
#define PG_CLEAN 0x40u    /* a present file page equal to the file's data: dropped, not moved */
/* --keep-local (keep.c): a resident page of a kept allocation, in no policy queue. Only in
 * PAGE_PRESENT, whose slot bits hold no slot; every change of state clears it with them. */
#define PG_KEPT 0x80000000u
#define PG_SLOT_SHIFT 7
#define PG_SLOT_MAX ((1u << (32 - PG_SLOT_SHIFT)) - 1)

static inline unsigned pg_state(uint32_t w) { return w & PG_STATE_MASK; }
static inline uint32_t pg_slot(uint32_t w) { return w >> PG_SLOT_SHIFT; }

/* Why a page changed state (or why a change was attempted and failed): kept in its history. */
enum ps_why {
	PS_FILL_ZERO = 1, /* EMPTY -> PRESENT: zeros put in place */
	PS_FILL_FILE,     /* EMPTY -> PRESENT: the file's data */
	PS_REFETCH,       /* EVICTED -> PRESENT: its far copy put back */
	PS_SOFT,          /* INACTIVE -> PRESENT: touched on probation */
	PS_ADOPT,         /* EMPTY -> PRESENT: found resident at start-up */
	PS_FORK_RESTORE,  /* EVICTED/INACTIVE -> PRESENT: copied back in a fork child */
	PS_PROBATION,     /* PRESENT -> INACTIVE */
	PS_EVICT,         /* PRESENT -> EVICTED */
	PS_PROBATION_END, /* INACTIVE -> EVICTED */
	PS_FORK_WINDOW,   /* INACTIVE -> EVICTED: a fork child before its runtime */
	PS_DROP_CLEAN,    /* PRESENT/INACTIVE -> EMPTY: the file has it */
	PS_GONE,          /* PRESENT -> EMPTY: emptied behind our back (a raw madvise) */
	PS_RELEASE,       /* any -> EMPTY: unmapped or zapped by the program */
	PS_MOVED_OUT,     /* any -> EMPTY: its word moved to a new address (mremap) */
	PS_MOVED_IN,      /* its word arrived from an old address (mremap) */
	PS_PREFETCH,      /* EVICTED -> INACTIVE: staged by a prefetcher (prefetch.c) */
	PS_PREFETCH_HIT,  /* INACTIVE -> PRESENT: a staged page's first touch */
	PS_NWHY
};

/* Counts derived from the transitions (read by the stats thread, hence atomic). */
struct pagestate_counts {
	_Atomic uint64_t resident, resident_peak; /* PRESENT + INACTIVE: local memory */
	_Atomic uint64_t inactive;                /* INACTIVE: CLOCK's probation */
	_Atomic uint64_t far, far_peak;           /* EVICTED */
	_Atomic uint64_t illegal;                 /* changes refused (a bug of fltrace) */
	_Atomic uint64_t stuck;                   /* watchdog: a page the kernel kept faulting on */
	_Atomic uint64_t kept, kept_peak;         /* PRESENT with PG_KEPT (--keep-local) */
};
extern struct pagestate_counts pagestate_counts;
static inline uint64_t pagestate_resident(void) { return atomic_load(&pagestate_counts.resident); }
static inline uint64_t pagestate_inactive(void) { return atomic_load(&pagestate_counts.inactive); }
static inline uint64_t pagestate_far(void) { return atomic_load(&pagestate_counts.far); }
static inline uint64_t pagestate_kept(void) { return atomic_load(&pagestate_counts.kept); }
static inline bool pg_kept(uint32_t w) { return pg_state(w) == PAGE_PRESENT && (w & PG_KEPT); }
/* A present page is kept (--keep-local): PG_KEPT set and counted until its state next changes. */
void pagestate_keep(uintptr_t page, uint32_t *pg);

/* The one way to change a page's state. `slot` is the far slot for EVICTED and INACTIVE (ignored
 * otherwise: PRESENT and EMPTY hold none). Clears PG_QUEUED (any queue entry is stale now) and,
 * going EMPTY, PG_CLEAN. Returns false if the change is illegal: then nothing changes, the refusal
 * is counted (pagestate_counts.illegal), and a debug build (FLTRACE_DEBUG) stops the run. */
bool pagestate_set(uintptr_t page, uint32_t *pg, unsigned to, uint32_t slot, enum ps_why why);
/* Whether from -> to is a legal change. */
bool pagestate_legal(unsigned from, unsigned to);
/* A failed attempt at the change `why` (no change): kept in the page's history with its -errno. */
void pagestate_note_failure(uintptr_t page, const uint32_t *pg, enum ps_why why, int err);
/* mremap: the page's word moves from `from` (left EMPTY, nothing released) to `to` (a new word). */
void pagestate_move(uintptr_t from_page, uint32_t *from, uintptr_t to_page, uint32_t *to);
/* The peaks count from now (after the start-up's first eviction). */
void pagestate_peaks_restart(void);
/* A fork child starts its own peaks and counts of refusals from what it inherited. */
void pagestate_fork_child(void);
/* "state present, slot 0; last changes (newest first): evicted->present (refetch) ..." */
size_t pagestate_describe(uintptr_t page, const uint32_t *pg, char *buf, size_t cap);
const char *pagestate_name(unsigned state);

#endif
