/* fork without exec: the child inherits our bookkeeping but not the userfaultfd registration, so
 * until its own runtime starts, its missing pages are served in the faulting thread (SIGBUS mode). */
#include <errno.h>
#include <link.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "far.h"
#include "uffd.h"
#include "region.h"
#include "filemap.h"
#include "evict.h"
#include "threads.h"
#include "handler.h"
#include "trace.h"
#include "loader.h"
#include "allocs.h"
#include "keep.h"
#include "maps.h"
#include "stats.h"
#include "sysstack.h"
#include "dlwalk.h"
#include "faultregs.h"

/* glibc's list of open FILEs and its lock (exported, not declared in its headers). */
extern FILE *_IO_list_all;
void _IO_list_lock(void);
void _IO_list_unlock(void);

/* Pages the forking thread may bring in during the fork (its FILEs, glibc's name-service state)
 * within the cap: room made before, as nothing is evicted meanwhile. */
#define FORK_WINDOW_PAGES 16

static struct {
	int uffd;                /* the child's until its runtime starts (in the program's table); -1 */
	struct sigaction saved;  /* the program's SIGBUS action, put back afterwards */
	bool child_list_reset;   /* glibc resets its FILE list's lock in the child (threads ran) */
	bool sigbus_blocked;     /* the program forked with SIGBUS blocked: blocked again afterwards */
} fw = { .uffd = -1 };

/* The window's faults are served in a SIGBUS handler, so SIGBUS must reach it: a program that
 * forks with every signal blocked until exec (git's run_command, perl's fork) had its child
 * killed by the first missing page. Unblocked for the window only; the program's own atfork child
 * handlers run in it and see SIGBUS unblocked (src/runtime/README.md says so): the price of not dying there. */
static void fork_window_unblock_sigbus(void)
{
	uint64_t bus = 1ull << (SIGBUS - 1), old = 0;
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &bus, &old, 8);
	fw.sigbus_blocked = old & bus;
}

static void fork_window_restore_sigbus(void)
{
	uint64_t bus = 1ull << (SIGBUS - 1);
	if (fw.sigbus_blocked)
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &bus, NULL, 8);
	fw.sigbus_blocked = false;
}

/* A page the child touches before its runtime starts must be resident when the address space is
 * copied: the child's memory is no longer registered, an evicted page would read as zeros there.
 * glibc's child resets the lock of every open FILE (on the heap, from fopen) before any fork
 * handler runs, so each is brought in here, under rt.lock (nothing is evicted until the fork is
 * done). (Its name-service state, read by the parent after this handler, comes in the same way.) */
static void fork_bring_in_files(void)
{
	struct own_code c = threads_own_code_begin(); /* fltrace's faults, not the program's */
	for (FILE *f = _IO_list_all; f; f = f->_chain) {
		volatile const char *p = (const char *)f, *lock = f->_lock;
		(void)p[0];
		(void)p[sizeof(*f) - 1];
		if (lock)
			(void)lock[0];
	}
	threads_own_code_end(c);
}

void rt_fork_prepare(void)
{
	/* The FILE list's lock before rt.lock, and held to the end of the fork (glibc's fork takes it
	 * too, after this handler; it is recursive): a thread holding it may fault (flushing a
	 * buffer), and its fault waits for the fork while rt.lock is held. */
	maps_fork_prepare(); /* first: a snapshot under way may need faults served, and no lock of ours */
	_IO_list_lock();
	fw.child_list_reset = !__libc_single_threaded;
	rt_lock(); /* no eviction while the address space is copied */
	/* Faults the forking thread takes from here on (glibc's fork reads the heap after the last
	 * prepare handler, ours) are served under this hold, and evict nothing: what they bring in
	 * (the FILEs below) must still be there when the address space is copied, and a backend
	 * outside the process has copied its pages for the child by then. Room for them is made
	 * now, so that the cap holds unless they are more than FORK_WINDOW_PAGES. */
	if (atomic_load(&rt.phase) == RT_ON)
		evict_make_room(FORK_WINDOW_PAGES);
	atomic_store(&rt.fork_holder, rt_gettid());
	fork_bring_in_files();
	filemap_fork_prepare();
	far_fork_prepare(); /* a backend outside the process copies its pages for the child */
	rt_lock_wait_borrower(); /* the bookkeeping the child inherits is whole */
}

void rt_fork_parent(void)
{
	rt_lock_wait_borrower();
	filemap_fork_parent();
	far_fork_parent();
	atomic_store(&rt.fork_holder, 0);
	if (atomic_load(&rt.phase) == RT_ON)
		evict_make_room(0); /* the cap again, if the fork's faults went past it */
	rt_unlock();
	_IO_list_unlock();
	maps_fork_parent();
}

/* The child's fd table is a copy of the forking thread's: none of the parent's private fds are
 * in it, so every number of them is forgotten before the child makes fds of its own (one could
 * have the same number), and nothing writes to one of them meanwhile. */
static void fork_forget_parent_fds(void)
{
	fdtable_fork_child();
	far_fork_child(); /* its copy of the backend, before any fd of the child's own */
	rt.uffd = rt.loader_uffd = rt.far_uffd = -1;
	trace_close_inherited();
	maps_fork_child();
	stats_fork_child();
	filemap_fork_child(); /* the mapped files, which the fork handed over */
}

/* In the window between fork and the child's runtime (other fork handlers, jemalloc's among them,
 * run there), a missing page raises SIGBUS and this thread brings it in itself. The child is
 * single-threaded then, so the bookkeeping needs no lock. */
static void fork_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t page = (uintptr_t)si->si_addr & ~((uintptr_t)rt.page_size - 1);
	uint32_t *pg = fw.uffd >= 0 ? region_page(page) : NULL;
	if (pg && pg_state(*pg) == PAGE_INACTIVE) { /* on probation: still local, its data in a slot */
		pagestate_set(page, pg, PAGE_EVICTED, pg_slot(*pg), PS_FORK_WINDOW);
		far_page_out(pg_slot(*pg));
	}
	if (pg && pg_state(*pg) != PAGE_PRESENT) {
		uint8_t kind;
		uint32_t region;
		int saved_errno = errno;
		rt_tls_internal++;
		evict_make_room(1); /* the cap holds in the window too (its MOVEs go through fw.uffd) */
		int err = fault_bring_in(fw.uffd, page, pg, true, &kind, &region);
		rt_tls_internal--;
		errno = saved_errno;
		if (err == 0 || err == -EEXIST)
			return; /* the access is retried and finds the page */
	}
	/* Not ours: the program's own SIGBUS (a file mapping past its end, say). Put its action back;
	 * the access faults again and gets it. */
	rt_real_sigaction(SIGBUS, &fw.saved, NULL);
}

/* Runs first among the child's fork handlers (ours were registered before jemalloc's). */
void rt_fork_child(void)
{
	pthread_mutex_init(&rt.lock, NULL);
	atomic_store(&rt.fork_holder, 0);
	atomic_store(&rt.fork_borrower, 0); /* the parent's handlers are not the child's */
	if (!fw.child_list_reset)
		_IO_list_unlock();
	lock_order_fork_child();
	sysstack_fork_child();
	dlwalk_fork_child();
	rt_lock_unmask_signals();
	allocs_fork_child();
	keep_fork_child();
	loader_fork_child();
	fork_forget_parent_fds();
	if (atomic_load(&rt.phase) != RT_ON)
		return;
	atomic_store(&rt.phase, RT_STARTING);
	rt_tls_internal++;
	fw.uffd = rt_fd_own(uffd_open(true, NULL));
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fork_on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	if (fw.uffd < 0 || rt_real_sigaction(SIGBUS, &sa, &fw.saved) < 0 ||
	    region_register_all(fw.uffd, fw.uffd) < 0 || farmem_register(fw.uffd) < 0) {
		/* No userfaultfd for the window: copy every evicted page back (the cap is exceeded
		 * until the child's runtime evicts again). */
		rt_fd_close(fw.uffd);
		fw.uffd = -1;
		region_restore_evicted();
		loader_release(0, UINTPTR_MAX & ~(rt.page_size - 1)); /* unregistered: the files again */
	} else {
		/* Evictions in the window move pages into the far store through the window's fd. */
		rt.far_uffd = fw.uffd;
		fork_window_unblock_sigbus();
	}
	rt_tls_internal--;
}

/* After fork() returned in the child: a runtime of its own (files named by its pid). Closing the
 * window's userfaultfd unregisters the memory; the new runtime registers it again. */
/* The locale data glibc's thread start-up reads (__ctype_init: LC_CTYPE's first values) may be on
 * the heap (setlocale loaded it): brought in now, while a missing page is still served in-thread,
 * so that the runtime's new threads never touch a missing page (kernel-facts, trap 2). */
static void fork_touch_thread_startup_data(void)
{
	locale_t l = duplocale(LC_GLOBAL_LOCALE);
	if (!l)
		return;
	const volatile char *p = (const volatile char *)l->__locales[LC_CTYPE];
	if (p) {
		(void)p[0];
		(void)p[255];
	}
	freelocale(l);
}

/* Creating a thread reads the link map of every module with thread-local storage (its TLS
 * image); those of modules loaded with dlopen are on the heap. Brought in now, like the locale
 * data. A link map of glibc's is larger than <link.h> shows: in glibc 2.36 its TLS fields end at
 * byte LINK_MAP_BYTES of 1,192 (gdb's ptype /o), and its allocation holds the whole of it. */
#define LINK_MAP_BYTES 1168
static void fork_touch_link_maps(void)
{
	for (struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
		const volatile char *p = (const volatile char *)m;
		for (size_t off = 0; off < LINK_MAP_BYTES; off += 64)
			(void)p[off];
		(void)p[LINK_MAP_BYTES - 1];
	}
}

void rt_fork_child_late(void)
{
	if (atomic_load(&rt.phase) != RT_STARTING)
		return;
	if (fw.uffd >= 0) {
		fork_touch_thread_startup_data();
		fork_touch_link_maps();
	}
	if (fw.uffd >= 0) {
		rt_fd_close(fw.uffd);
		rt.far_uffd = fw.uffd = -1;
		rt_real_sigaction(SIGBUS, &fw.saved, NULL);
		fork_window_restore_sigbus();
	}
	threads_forget_all();
	faultregs_fork_child();
	memset(&rt.stats, 0, sizeof(rt.stats)); /* the child's own counts start now */
	pagestate_fork_child();                  /* its pages are the parent's: counts kept */
	rt_start_process();
	rt_lock();
	evict_make_room(0);
	rt_unlock();
}
