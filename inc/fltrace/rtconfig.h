/* The one parser of every FLTRACE_* setting the runtime reads (config.h names them): pure, so the
 * preload library and its unit test run the same code; a bad value is refused, never replaced. */
#ifndef FLTRACE_RTCONFIG_H
#define FLTRACE_RTCONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "fltrace/config.h"
#include "fltrace/cpulist.h"

enum rtconfig_poll { RTCONFIG_POLL_PERCPU, RTCONFIG_POLL_ADAPTIVE, RTCONFIG_POLL_BLOCK, RTCONFIG_POLL_SPIN };
/* FLTRACE_STACKS: user-mode faults' stacks read by the handler where it can (registers from /proc,
 * from perf's records for threads that need rbp), by the stack signal for every one, by the handler
 * with /proc's registers only, or with perf's records for every thread. */
enum rtconfig_stacks { RTCONFIG_STACKS_HANDLER, RTCONFIG_STACKS_SIGNAL, RTCONFIG_STACKS_PROC, RTCONFIG_STACKS_PERF };

struct rtconfig {
	uint64_t localmem, maxmem; /* bytes; maxmem >= localmem */
	const char *outdir;        /* absolute; points into the environment */
	unsigned handlers;
	bool pinned;               /* FLTRACE_CORES given: handler threads run on `cores` */
	struct cpulist cores;
	unsigned samplerate;       /* faults recorded per second, 0 = all */
	int policy;                /* a row of inc/fltrace/policies.h */
	int prefetch;              /* a row of inc/fltrace/prefetchers.h */
	int far;                   /* a row of inc/fltrace/backends.h */
	const char *far_arg;       /* what follows "<backend>:" (file: the directory); points into the environment */
	uint64_t far_latency_ns;   /* added to each re-fetch from far memory (an emulated medium) */
	unsigned far_replicas;     /* memcached: servers that keep each page (1: no replica) */
	uint64_t far_timeout_ms;   /* memcached: a server silent this long is given up */
	const char *far_run;       /* memcached: the run's id, 16 hex digits (NULL: one of its own) */
	const char *far_auth;      /* memcached: absolute path of "user:password" for SASL, or NULL */
	unsigned stack_depth;
	enum rtconfig_poll poll;
	uint64_t spin_ns;          /* adaptive: how long a handler polls after a fault */
	bool files_all;
	enum rtconfig_stacks stacks;
	bool allocs;
	const char *keep_local;    /* --keep-local: "<executable>|<lo>-<hi>,..." (record sets it), or NULL */
	uint64_t alloc_sample;     /* mean bytes between sampled small allocations, 0 = none */
	uint64_t test_move_misreport; /* tests: every Nth page moved reported unmoved, 0 = none */
	uint64_t test_handler_lag_ns; /* tests: a handler's pause after a signalled fault, 0 = none */
};

/* A refused setting: "<name>: <why>; <todo>" is the one line the runtime stops with. */
struct rtconfig_error {
	const char *name;
	char why[192];
	char todo[160];
};

/* Reads every setting through `get` (getenv, or a table in a test). Returns 0, or -1 with *err. */
int rtconfig_parse(const char *(*get)(const char *name, void *ctx), void *ctx, struct rtconfig *c,
		   struct rtconfig_error *err);

#endif
