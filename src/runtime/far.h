/* Far memory as a medium behind the staging store (farmem.c): what a backend is, and the calls the
 * page's path makes when pages leave local memory for good, come back, or are freed. */
#ifndef FLTRACE_FAR_H
#define FLTRACE_FAR_H

#include <stdint.h>

#include "rt.h"

/* A backend (far_<name>.c, one row of inc/fltrace/backends.h). Every evicted page first moves into
 * its staging slot (farmem.c: UFFDIO_MOVE, atomic against the program's writes); a backend with
 * `put` then keeps the page elsewhere, at the slot's number, and the staging copy is dropped; a
 * backend without it keeps the staging copy itself (no copy at all). Batches are runs of
 * contiguous slots, whose staging pages are contiguous too. All calls run under rt.lock, on any
 * thread: a backend's fds are the runtime's (rt_fd_borrow). Errors are -errno. */
struct far_backend {
	int (*init)(const char *arg); /* arg: what followed "<name>:" (NULL if nothing) */
	/* Keeps the n pages at `pages` (staging slots first .. first + n - 1) at those slots. */
	int (*put)(uint32_t first, const void *pages, unsigned n);
	/* Optional: keeps the n pages of the scattered staging slots slots[0..n-1] (n <= FAR_OUT_MAX)
	 * at those slots, in one request where the medium allows; without it, put one by one. */
	int (*put_slots)(const uint32_t *slots, unsigned n);
	/* Copies the n pages kept at slots first .. first + n - 1 into `pages`. */
	int (*get)(uint32_t first, void *pages, unsigned n);
	/* Slots first .. first + n - 1 hold nothing any more (their space may go back). Optional. */
	void (*free)(uint32_t first, unsigned n);
	/* fork: before it, in the parent (rt.lock held), the child's own copy of the medium is made;
	 * after it, the parent lets go of it and the child takes it (fd numbers of the program's table). */
	int (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*fork_child)(void);
	const char *(*describe)(void); /* where the pages go, for messages */
	/* Optional: the failure behind `err` (a call's return) in words, naming what failed and what
	 * it cost (a server, the pages kept only there), with what to do; returns the exit status. */
	int (*failure)(int err, const char **why, const char **todo);
	/* Optional: where this process's pages are named on the medium, for clearing them after the
	 * run (stats line far_ns, far_slots): its namespace, and a bound on the slots it wrote. */
	void (*keys)(uint64_t *ns, uint64_t *slots);
};

const struct far_backend *far_backend_of(unsigned id); /* a row of backends.h; NULL past the table */

int far_init(void); /* the backend of rt.cfg; stops the run with a message on failure */
/* The pages in slots first .. first + n - 1 left local memory for good (PAGE_EVICTED): the backend
 * keeps them. A failed write stops the run before anything is lost (the staging copies remain).
 * Single pages (an eviction round's scattered victims), and every page for a backend with
 * put_slots, wait in a queue of FAR_OUT_MAX for one request: far_out_flush, at the round's end and
 * before anything reads, frees or copies slots. */
#define FAR_OUT_MAX 64
void far_pages_out(uint32_t first, unsigned n);
void far_out_flush(void);
static inline void far_page_out(uint32_t slot)
{
	far_pages_out(slot, 1);
}
/* The content of the evicted page kept at `slot`, to copy into place: the staging slot itself for
 * `mem` (no extra copy), else one page read from the medium (valid until the next call; rt.lock
 * held). Includes --far-latency's wait, counted apart. */
const void *far_page_source(uint32_t slot);
/* The same for a prefetch (prefetch.c): NULL when the staging slot holds the page already (`mem`),
 * else the page read from the medium. No --far-latency wait: a prefetcher overlaps its transfers
 * with the program's run; they are counted in far_gets all the same. */
const void *far_page_prefetch(uint32_t slot);
bool far_is_local(void); /* far_page_source is a plain read of local memory (no medium, no wait) */
void far_slots_freed(uint32_t first, unsigned n); /* farmem.c, when it empties a run of slots */
void far_keys(uint64_t *ns, uint64_t *slots); /* the backend's keys call; 0, 0 without one */
void far_fork_prepare(void);
void far_fork_parent(void);
void far_fork_child(void);

/* The staging store (farmem.c): where every evicted page first lands. */
int farmem_init(uint64_t slots);
uint64_t farmem_slots(void);                       /* how many farmem_init made */
int farmem_alloc_run(uint32_t n, uint32_t *first); /* n contiguous fresh slots */
void farmem_free(uint32_t slot);                   /* released lazily, in batches */
void *farmem_addr(uint32_t slot);
void farmem_drop_local(uint32_t first, unsigned n); /* their pages are kept by the backend (far.c) */
void farmem_drops_flush(void); /* the dropped runs leave local memory, in one system call */
int farmem_register(int fd);

#endif
