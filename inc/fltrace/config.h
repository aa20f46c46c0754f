/* The contract between `fltrace record` (tools/) and the preload runtime (src/runtime):
 * the environment variables that carry the options into every traced process. */
#ifndef FLTRACE_CONFIG_H
#define FLTRACE_CONFIG_H

#include "fltrace/backends.h"
#include "fltrace/policies.h"
#include "fltrace/prefetchers.h"

#define FLTRACE_VERSION_STRING "0.1.0"

/* Set by `fltrace record`, read once by the runtime at start-up (src/common/rtconfig.c parses
 * them all). Sizes are in bytes. */
#define FLTRACE_ENV_LOCALMEM "FLTRACE_LOCALMEM"     /* -L: cap on resident tracked memory */
#define FLTRACE_ENV_MAXMEM "FLTRACE_MAXMEM"         /* -M: most memory in all (local + far) */
#define FLTRACE_ENV_OUTDIR "FLTRACE_OUTDIR"         /* -o: absolute output directory */
#define FLTRACE_ENV_HANDLERS "FLTRACE_HANDLERS"     /* -C: number of handler threads */
#define FLTRACE_ENV_CORES "FLTRACE_CORES"           /* --cores: CPU list for handler threads */
#define FLTRACE_ENV_SAMPLERATE "FLTRACE_SAMPLERATE" /* -S: faults per second, 0 = all */
#define FLTRACE_ENV_POLICY "FLTRACE_POLICY"         /* --policy: a name in policies.h */
#define FLTRACE_ENV_PREFETCH "FLTRACE_PREFETCH"     /* --prefetch: a name in prefetchers.h */
#define FLTRACE_ENV_FAR "FLTRACE_FAR"               /* --far: a backend of backends.h, e.g. file:/dir */
#define FLTRACE_ENV_FAR_LATENCY "FLTRACE_FAR_LATENCY_US" /* --far-latency: µs added to each re-fetch */
#define FLTRACE_MAX_FAR_LATENCY_US 1000000
#define FLTRACE_ENV_FAR_REPLICAS "FLTRACE_FAR_REPLICAS" /* --far-replicas: servers that keep each page */
#define FLTRACE_ENV_FAR_RUN "FLTRACE_FAR_RUN"       /* the run's random id (16 hex digits): its items' prefix */
#define FLTRACE_ENV_FAR_AUTH "FLTRACE_FAR_AUTH"     /* --far-auth: a file "user:password" for SASL */
#define FLTRACE_MAX_FAR_REPLICAS 16
#define FLTRACE_ENV_FAR_TIMEOUT "FLTRACE_FAR_TIMEOUT_MS" /* --far-timeout: a server silent this long is lost */
#define FLTRACE_DEFAULT_FAR_TIMEOUT_MS 2000
#define FLTRACE_MAX_FAR_TIMEOUT_MS 600000
#define FLTRACE_ENV_STACK_DEPTH "FLTRACE_STACK_DEPTH" /* --depth: frames per stack */
#define FLTRACE_ENV_POLL "FLTRACE_POLL"             /* --poll: adaptive | block | spin */
#define FLTRACE_ENV_SPIN_US "FLTRACE_SPIN_US"       /* adaptive: µs a handler polls after a fault (100) */
#define FLTRACE_ENV_FILES "FLTRACE_FILES"           /* --files: mapped | all */
/* handler (default): a user-mode fault's stack is read by the handler while its thread sleeps, where
 * that gives the stack signal's own; signal: always by the stack signal (to compare the two) */
#define FLTRACE_ENV_STACKS "FLTRACE_STACKS"
#define FLTRACE_ENV_ALLOCS "FLTRACE_ALLOCS"         /* --allocs: 1 record allocation sites, 0 not */
#define FLTRACE_ENV_ALLOC_SAMPLE "FLTRACE_ALLOC_SAMPLE" /* --alloc-sample: mean bytes between samples */
#define FLTRACE_DEFAULT_ALLOC_SAMPLE (512u << 10)
/* --keep-local: the executable's absolute path, '|', then the link-time code ranges (hex lo-hi,
 * comma-separated) of the sites whose allocations are never evicted */
#define FLTRACE_ENV_KEEP_LOCAL "FLTRACE_KEEP_LOCAL"
/* Tests only: every Nth page UFFDIO_MOVE moves is reported as not moved, as Linux 6.18 was seen
 * to do now and then (evict.c trusts the page tables over the ioctl's answer). */
#define FLTRACE_ENV_TEST_MOVE_MISREPORT "FLTRACE_TEST_MOVE_MISREPORT"
/* Tests only: µs a handler thread lags after serving a signalled fault, as a preempted one does on a
 * busy machine (the thread, woken, must not outrun what its fault still needs: its count). */
#define FLTRACE_ENV_TEST_HANDLER_LAG "FLTRACE_TEST_HANDLER_LAG"
#define FLTRACE_ENV_PRELOAD_PATH "FLTRACE_PRELOAD"  /* the preload library record chose (execve checks a new user can read it) */


#define FLTRACE_DEFAULT_STACK_DEPTH 64
#define FLTRACE_MAX_HANDLERS 64
#define FLTRACE_MAX_STACK_DEPTH 512

/* Exit status of a traced process that the runtime had to stop (e.g. -M exhausted). */
#define FLTRACE_EXIT_RUNTIME 125
/* ... stopped because far memory lost or refused a page (a server died, stopped answering, restarted
 * empty, dropped or altered a page): the program could not go on without a wrong page. */
#define FLTRACE_EXIT_FAR_LOST 122

#endif
