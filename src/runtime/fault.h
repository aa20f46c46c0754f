/* The fault path's own interfaces, shared by its files only: threadstate.c (what the faulting thread
 * does) -> stack.c (its stack) -> record.c (its record) -> serve.c (its page) -> handler.c (the loop). */
#ifndef FLTRACE_FAULT_H
#define FLTRACE_FAULT_H

#include "rt.h"
#include "threads.h"

/* ---- threadstate.c: /proc/self/task/<tid>/{syscall,status} ---- */
struct syscall_state {
	long nr; /* -1: a fault in user mode */
	uint64_t sp, pc;
};
/* 0, -EAGAIN (never seen asleep in its fault) or another -errno. */
int thread_syscall_state(struct rt_thread *t, int tid, struct syscall_state *s);
/* Whether the thread still sleeps where it was seen (same system call or none, pc and sp). */
bool still_in_state(struct rt_thread *t, int tid, const struct syscall_state *was);
bool thread_blocks_signal(int tid); /* true if it is gone */
/* Where the stack signal queued to a thread stands (see threadstate.c). */
enum sig_fate { SIG_COMING, SIG_HELD, SIG_GONE };
enum sig_fate thread_signal_fate(int tid);

/* ---- stack.c: the stack signal's handler (handler_signal_init in rt.h), and unwinding a
 *      sleeping thread from a handler thread: 0 frames if it did not stay asleep ---- */
unsigned unwind_sleeping(struct rt_thread *t, int tid, const struct syscall_state *s, uint64_t *ips, bool *forked);

/* ---- record.c ---- */
bool sample_take(void); /* false: past -S's rate this second, serve without recording */
void fault_fill(struct ft_fault *f, const struct rt_thread *t, int tid);
uint32_t latency_since(uint64_t arrival_ns);
bool slot_has_call_stack(const struct rt_thread *slot, long nr);
void count_fault(uint16_t flags, uint8_t kind);
void count_nostack(enum rt_nostack why);
void record_without_stack(struct rt_thread *t, struct rt_thread *slot, int tid,
			  const struct syscall_state *s, const uint64_t *ips, unsigned depth,
			  enum rt_nostack why);

/* ---- handler.c: what a handler thread does with messages (pollers.c runs the threads) ---- */
struct uffd_msg;
struct handler_ctx;
void handler_thread_enter(void);            /* first in every handler thread */
struct handler_ctx *handler_ctx_new(void);  /* a handler thread's own state */
void handler_message(struct handler_ctx *ctx, const struct uffd_msg *m, int fd);
void handler_tend(struct handler_ctx *ctx); /* faults a fork kept, signals not yet answered */
bool handler_ctx_waiting(const struct handler_ctx *ctx); /* it has such follow-ups */
bool handler_keeps_faults(void); /* some handler holds a fault it read and has not served */
/* The CPU the thread of this handler's last fault took its stack signal on (-1: unknown). */
int handler_peer_cpu(void);
/* pollers.c: a poller about to work long under rt.lock leaves SCHED_IDLE until it lets go. */
void handler_hold_cpu(void);
/* pollers.c: a poller about to wake the last thread it holds holds nothing more: preempted by it
 * from then on, it is not stuck (serve_wakes_flush). */
void handler_letting_go(void);
/* pollers.c: the CPU this poller serves (-1 on any other handler thread). */
int handler_poller_cpu(void);

/* ---- serve.c (fault_bring_in in handler.h: fork.c serves pages too) ---- */
int serve_init(void);
/* A handler thread's list of wakes done after rt.lock (every thread that serves: at its start). */
int serve_thread_init(void);
/* After rt_unlock: the wakes that serving queued meanwhile, in order. */
void serve_wakes_flush(void);
/* Wakes the threads asleep on a page, unless another handler owes one of them its stack signal:
 * then the wake is left to that handler, done right after the signal (every handler's wake of a
 * faulting thread goes through here). */
void serve_wake_page(int fd, uintptr_t addr);
void serve_owe_signal(uintptr_t addr); /* a fault claimed for the late order: wakes of its page wait */
void serve_owe_none(int fd);            /* ... the claim ended unsignalled: those wakes are done */
/* A page on probation comes back without a recorded fault; false if it is not on probation. */
bool fault_serve_soft(uintptr_t addr, int fd);
/* How a served fault's thread gets its stack signal: none, sent before its page is served (it then
 * waits in its handler for the page), or once the page is in place. */
enum serve_signal { SERVE_SIGNAL_NONE, SERVE_SIGNAL_EARLY, SERVE_SIGNAL_LATE };
/* EARLY: sends the signal, before rt.lock; false if it could not be sent. */
bool signal_early_post(struct rt_thread *t, int tid);
void signal_early_cancel(struct rt_thread *t); /* it records nothing and faults again */
/* Brings the page in; false if nothing to serve. *late: the LATE signal is owed (sent at the
 * flush) and the thread awaits it. */
bool fault_serve(struct rt_thread *t, uintptr_t addr, int tid, enum serve_signal signal, bool *late);

#endif
