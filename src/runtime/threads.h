/* Program threads' fault request slots: what a handler and the faulting thread share about one
 * fault (its state, where it faulted, whether its page is served). */
#ifndef FLTRACE_RT_THREADS_H
#define FLTRACE_RT_THREADS_H

#include <link.h>

#include "rt.h"

/* IDLE -> CLAIMED (a handler will signal this fault) -> PENDING (the signal is sent or owed) ->
 * TAKEN (the thread is in the stack handler) -> IDLE; CANCELLED: a handler records it instead. */
struct perf_event_mmap_page;
enum req_state { REQ_IDLE = 0, REQ_PENDING, REQ_TAKEN, REQ_CANCELLED, REQ_CLAIMED };
struct rt_thread {
	_Atomic int tid;   /* key; 0 = free */
	_Atomic int state; /* enum req_state */
	_Atomic int busy;  /* inside our signal handler, or our code under the loader's lock (see
			    * threads_dl_iterate_phdr): its faults are served without a signal */
	int procfd;        /* /proc/self/task/<tid>/syscall (/proc/<tid>/syscall if foreign), opened
			    * by the handler */
	bool foreign;      /* procfd is /proc/<tid>/syscall: a thread of another process that shares
			    * our memory (a vfork child), which no stack signal of ours reaches */
	uint64_t addr, arrival_ns, posted_mono_ns;
	int uffd;          /* the userfaultfd the fault came from (rt.uffd or rt.loader_uffd) */
	uint64_t pc_at_fault; /* from /proc: the signal must arrive exactly there */
	uint64_t sp_at_fault; /* ... and the stack pointer there, to unwind without the signal */
	uint16_t flags;
	uint8_t kind;
	uint32_t region;   /* FT_KIND_FILE: the region record's id */
	bool woken;        /* handler already woke it after a delay */
	unsigned reraised; /* faults in a row woken to fault again (handler.c, RERAISE_MAX) */
	unsigned restless; /* faults in a row not seen asleep, then faults left to serve without its state (handler.c, handler_state) */
	bool blocks_signal; /* it blocked the stack signal at its last fault: check at the next one */
	_Atomic int served; /* a signalled request: 0 while its page is on its way, 1 served, 2 failed */
	_Atomic int served_waiter; /* the thread sleeps on `served` (a futex) */
	_Atomic unsigned signals_taken; /* stack signals it has taken, with a request or without */
	_Atomic int cpu;            /* where it last faulted, as a handler or its stack signal saw (-1: unknown) */
	/* Where the kernel writes the CPU the thread runs on (cpu_id of glibc's rseq area), told by
	 * the thread at its first stack signal; NULL unknown. A handler reads it only after reading
	 * the thread's state through its own /proc file, which proves the thread alive (a new thread
	 * with a reused id finds that file stale: thread_syscall_state opens it again and clears this). */
	_Atomic(const uint32_t *) rseq_cpu;
	int rseq_untracked;          /* the rseq area checked against tracked memory: 1 outside, -1 inside */
	unsigned stacks_reused, stacks_new; /* its faults' stacks a handler found cached, or not (handler.c) */
	unsigned unrecorded; /* its faults past -S's rate (handler_unrecorded_cpu) */
	unsigned unwinds, unwinds_lacked_fp; /* ... unwound from /proc's registers, and of those short of rbp */
	_Atomic int signal_cpu;     /* the CPU of the poller that sent it its pending signal (-1: not a poller) */
	_Atomic int call_nr;        /* in an interposed system call with a big buffer: its number */
	_Atomic uint32_t call_stack; /* ... and the stack it was called with */
	void *own_stack;            /* a stack for the stack signal's work off the program's alternate stack (stack.c) */
	/* Its page-fault events (faultregs.c): their fds in the runtime's table and their ring (none
	 * while fault_ring is NULL), 1 + its watch-list entry (0: none); fault_busy held while a
	 * handler reads or closes them. All zero in a new slot. */
	int fault_fd[3];
	unsigned fault_watch;
	struct perf_event_mmap_page *fault_ring;
	bool fault_wanted, fault_tried; /* its stacks need them (handler.c); opening them was tried */
	_Atomic int fault_busy;
	_Atomic uint64_t signal_ns; /* when it last entered a signal handler, ours or the program's */
};
int threads_init(void);
struct rt_thread *threads_get(int tid);  /* find or create (handler side) */
struct rt_thread *threads_find(int tid); /* find only */
void threads_tell_rseq(struct rt_thread *t); /* on the thread itself, in the stack signal */
void threads_forget_all(void);           /* fork child */
/* fltrace's code on a program thread that takes the loader's or libunwind's lock: its faults are
 * served without the stack signal until threads_own_code_end (faults_self). */
struct own_code {
	struct rt_thread *t;
	int was_busy;
};
struct own_code threads_own_code_begin(void);
void threads_own_code_end(struct own_code c);
/* dl_iterate_phdr for fltrace's code on a program thread (dlopen's wrapper, maps snapshots). */
int threads_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

#endif
