/* The far-memory backend of this run (rt.cfg.far: a row of inc/fltrace/backends.h), and the calls
 * through which a page leaves local memory for it and comes back, --far-latency's wait included. */
#include <errno.h>
#include <string.h>

#include "far.h"
#include "fltrace/fmt.h"

#define BACKEND_DECLARE(name, arg, help) extern const struct far_backend far_##name;
FLTRACE_BACKENDS(BACKEND_DECLARE)
#define BACKEND_ROW(name, arg, help) &far_##name,
static const struct far_backend *const backends[] = { FLTRACE_BACKENDS(BACKEND_ROW) };

const struct far_backend *far_backend_of(unsigned id)
{
	return id < FLTRACE_BACKEND_COUNT ? backends[id] : NULL;
}

static struct {
	const struct far_backend *b;
	char *page; /* a page fetched from the medium on its way in (rt.lock held: one is enough) */
	uint32_t out[FAR_OUT_MAX]; /* single pages evicted, for the medium's next request */
	unsigned nout;
} fa;

static __attribute__((noreturn)) void far_die(const char *doing, int err, const char *todo)
{
	const char *bwhy, *btodo;
	if (fa.b && fa.b->failure) {
		int status = fa.b->failure(err, &bwhy, &btodo);
		rt_die_status(status, "far memory", bwhy, btodo);
	}
	char why[256];
	struct fmt f;
	fmt_init(&f, why, sizeof(why));
	fmt_str(&f, doing);
	fmt_str(&f, " ");
	fmt_str(&f, fa.b && fa.b->describe ? fa.b->describe() : "?");
	fmt_str(&f, " (");
	fmt_str(&f, strerror(-err));
	fmt_str(&f, ")");
	rt_die("far memory", why, todo);
}

int far_init(void)
{
	fa.b = far_backend_of(rt.cfg.far);
	if (!fa.b)
		fa.b = backends[FLTRACE_BACKEND_mem];
	fa.page = rt_map(rt.page_size);
	if (!fa.page)
		return -ENOMEM;
	int err = fa.b->init(rt.cfg.far_arg);
	if (err < 0)
		far_die("cannot create its store in", err, "give --far file:<dir> a writable directory on a "
			"file system with O_TMPFILE (ext4, xfs, btrfs, tmpfs), or use --far mem");
	return 0;
}

/* n pages the backend takes now: scattered slots (`slots`), or the run from `first`. */
static void far_put_now(const uint32_t *slots, uint32_t first, unsigned n)
{
	uint64_t t0 = rt_mono_ns();
	int err = 0;
	if (!slots)
		err = fa.b->put(first, farmem_addr(first), n);
	else if (fa.b->put_slots)
		err = fa.b->put_slots(slots, n);
	else
		for (unsigned i = 0; i < n && !err; i++)
			err = fa.b->put(slots[i], farmem_addr(slots[i]), 1);
	rt_time_add(&rt.stats.time.far_put, t0);
	if (err < 0)
		far_die("cannot write an evicted page to", err, "free space on that file system, or run with "
			"a larger -L or --far mem");
	if (slots)
		for (unsigned i = 0; i < n; i++)
			farmem_drop_local(slots[i], 1); /* merged into runs where contiguous */
	else
		farmem_drop_local(first, n);
	atomic_fetch_add_explicit(&rt.stats.far_puts, n, memory_order_relaxed);
}

void far_out_flush(void)
{
	if (!fa.nout)
		return;
	unsigned n = fa.nout;
	fa.nout = 0; /* first: a backend that stops the run reads nothing twice */
	far_put_now(fa.out, 0, n);
}

/* A file takes a run in one write. A medium of one item per page (put_slots: memcached) takes the
 * round's runs into its one request as well: sent as they came, each waiting for its answers, a
 * round of python's objects (runs of 1-3 pages) went out in 35 requests of 1.8 pages. */
void far_pages_out(uint32_t first, unsigned n)
{
	if (!fa.b->put || !n)
		return;
	if (n > 1 && !fa.b->put_slots) {
		far_put_now(NULL, first, n);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		fa.out[fa.nout++] = first + i;
		if (fa.nout == FAR_OUT_MAX)
			far_out_flush();
	}
}

void far_slots_freed(uint32_t first, unsigned n)
{
	if (fa.b && fa.b->free)
		fa.b->free(first, n);
}

/* --far-latency: the medium's latency, emulated by a wait, counted apart (far_wait_ns). */
static void far_wait(void)
{
	if (!rt.cfg.far_latency_ns)
		return;
	uint64_t t0 = rt_mono_ns(), end = t0 + rt.cfg.far_latency_ns;
	while (rt_mono_ns() < end)
		__builtin_ia32_pause();
	rt_time_add(&rt.stats.time.far_wait, t0);
}

bool far_is_local(void)
{
	return !fa.b->get && !rt.cfg.far_latency_ns;
}

/* The page kept at `slot`, counted in far_gets: NULL when its staging slot holds it (`mem`), else
 * read from the medium into fa.page. */
static const void *far_page_read(uint32_t slot)
{
	atomic_fetch_add_explicit(&rt.stats.far_gets, 1, memory_order_relaxed);
	if (!fa.b->get)
		return NULL;
	far_out_flush(); /* the page may be one still queued */
	uint64_t t0 = rt_mono_ns();
	int err = fa.b->get(slot, fa.page, 1);
	rt_time_add(&rt.stats.time.far_get, t0);
	if (err < 0)
		far_die("cannot read an evicted page back from", err, "check that file system");
	return fa.page;
}

const void *far_page_source(uint32_t slot)
{
	far_wait();
	const void *page = far_page_read(slot);
	return page ? page : farmem_addr(slot);
}

const void *far_page_prefetch(uint32_t slot)
{
	return far_page_read(slot);
}

void far_keys(uint64_t *ns, uint64_t *slots)
{
	*ns = *slots = 0;
	if (fa.b && fa.b->keys)
		fa.b->keys(ns, slots);
}

void far_fork_prepare(void)
{
	far_out_flush(); /* the child's copy is made from the medium */
	int err = fa.b && fa.b->fork_prepare ? fa.b->fork_prepare() : 0;
	if (err < 0)
		far_die("cannot copy far memory for a fork child in", err, "free space on that file system, or "
			"use --far mem");
}

void far_fork_parent(void)
{
	if (fa.b && fa.b->fork_parent)
		fa.b->fork_parent();
}

void far_fork_child(void)
{
	if (fa.b && fa.b->fork_child)
		fa.b->fork_child();
}
