/* Faults by allocation site (allocsite.c: matching faults to the allocations they hit;
 * allocsite_report.c: loading a recording and the flamegraph input; report_alloc.c writes it). */
#ifndef FLTRACE_ALLOCSITE_H
#define FLTRACE_ALLOCSITE_H

#include <stdio.h>

#include "analysis.h"

#define AS_CALLSITE_FRAMES 16 /* frames of a faulting stack kept to find the program's own */

/* What a fault was, as the trace tells faults apart and the pictures colour them: its kind
 * (FT_KIND_*), whether it was taken inside a system call, and its access (read, write,
 * write-protect). A class is ((kind * 2 + in_syscall) * 3 + access). */
#define AS_CLASSES ((FT_KIND_PREFETCH + 1) * 2 * 3)
unsigned as_class(const struct ft_fault *f);
/* The fields of a fault of class cls: kind, origin (FT_ORIGIN_*) and flags (FT_FLAG_WRITE/WP). */
void as_class_fields(unsigned cls, uint8_t *kind, uint8_t *origin, uint16_t *flags);

/* The code that faulted on a site's objects: one faulting stack's first frames, symbolized. */
struct as_call {
	uint64_t count;
	uint8_t cls;            /* the class of all of them (as_class) */
	uint32_t nframes;
	int64_t frames[AS_CALLSITE_FRAMES];
};

/* One allocation stack (site 0: faults on no recorded allocation; 1: allocations without a stack). */
struct as_site {
	uint32_t depth;
	uint64_t *ips;          /* the allocation's stack, innermost first (return addresses) */
	int64_t *frames;        /* symbolizer ids of ips, after allocsites_symbolize */
	uint64_t time_ns;       /* first allocation */
	uint8_t kind;           /* enum ft_alloc_kind of the first allocation */
	uint64_t objects, bytes; /* allocations recorded, bytes asked for */
	uint64_t faults, zero, refetch, other; /* pages */
	uint64_t by_class[AS_CLASSES];           /* faults, by as_class */
	struct as_call *calls;
	size_t ncalls, capcalls;
};

struct allocsites;
struct allocsites *allocsites_new(void);
void allocsites_free(struct allocsites *a);
/* Feed a trace's records in file order: stacks, allocations and frees here, kept faults below. */
int allocsites_record(struct allocsites *a, const struct ft_file_header *hdr,
		      const struct ft_rec_hdr *h);
int allocsites_fault(struct allocsites *a, const struct ft_file_header *hdr, const struct ft_fault *f);
/* Before the trace is closed: register the frames of sites and faulting stacks. */
int allocsites_symbolize(struct allocsites *a, const struct ft_file_header *hdr,
			 struct symbolizer *sym, const struct maps_history *m);
void allocsites_trace_done(struct allocsites *a);
size_t allocsites_sites(const struct allocsites *a, const struct as_site **out);
uint64_t allocsites_total(const struct allocsites *a);
uint64_t allocsites_attributed(const struct allocsites *a);

/* ---- a recording by allocation site (allocsite_report.c) ---- */
struct as_row {
	char *code, *funcs, *libs;   /* the allocation stack's frames, joined by "<//>" */
	const char *where;           /* its site: the program's frame that called the allocator */
	const char *kind;            /* malloc | mmap | mremap | "" */
	uint64_t objects, bytes, faults, zero, refetch, other;
	uint64_t by_class[AS_CLASSES]; /* faults, by as_class */
	struct as_row_call {
		const char *code;
		uint64_t count, by_class[AS_CLASSES];
	} *calls;                      /* most faults first */
	size_t ncalls;
};
struct as_report {
	struct as_row *rows;         /* most faults first; the no-recorded-allocation row included */
	size_t nrows;
	uint64_t total, attributed;
	uint64_t sampled_allocs, big_allocs, map_allocs; /* allocation records of each kind */
	uint64_t page_allocs;        /* small ones recorded as the first on their page */
	struct symbolizer *sym;
	struct intern names;         /* the rows' site and faulting-line names */
	struct maps_history **maps;
	size_t nmaps;
};
/* Reads the traces of dir (pid < 0: all processes), keeping faults that pass filter. A trace read
 * up to damage is told to warn (path, what), unless warn is NULL (its caller has told it already). */
int as_report_load(const char *dir, long pid, const struct agg_filter *filter, struct as_report *r,
		   void (*warn)(const char *path, const char *what), char *err, size_t errlen);
void as_report_free(struct as_report *r);
/* Folded stacks for a flamegraph: allocation stack outermost first, then the faulting line; one
 * call per class of fault (as_class) that ended there. */
int as_report_foreach_stack(const struct as_report *r,
			    int (*cb)(void *arg, const char *const *frames, size_t n, uint64_t count,
				      unsigned cls),
			    void *arg);

#endif
