/* The offline analysis API: trace reader, maps history, symbolizer and aggregation, shared by
 * `fltrace report` and `fltrace visualize`. Everything here reads traces; nothing writes them. */
#ifndef FLTRACE_ANALYSIS_H
#define FLTRACE_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fltrace/trace_format.h"

/* ---------------------------------------------------------------- trace reader (trace_reader.c)
 * One .bin file, mapped read-only, of format version 1 or 2 (trace_format.h). Records are handed
 * out as pointers into the mapping, valid until trace_close(), each checked first (version 2: its
 * checksum) so that no damaged record is ever handed out. A zero header or the end of file ends
 * the data; a truncated tail ends it with a warning (trace->warning), a damaged record with a
 * warning and trace->damaged; what came before stays usable either way. */
struct trace {
	char *path;
	const struct ft_file_header *hdr;
	uint32_t prefetch;        /* the prefetcher it was recorded with (version 2), 0 = none */
	const char *exe;          /* from the header tail ("" if absent) */
	const char **argv;        /* argc strings: hdr->nr_args, or fewer in a damaged header */
	uint32_t argc;
	uint32_t pid, gen;
	const uint8_t *base;      /* the mapping */
	size_t size;
	size_t pos;               /* offset of the next record */
	uint32_t fixed, check;    /* bytes of the fixed header, of a record's check (by version) */
	uint64_t nrec;            /* records handed out */
	uint64_t nstacks, nregions; /* ... of them stack and region records */
	bool ended;               /* no more records (the warning says why if it was early) */
	bool damaged;             /* the data ended at a damaged record (named in warning) */
	char warning[320];        /* set when the data ended badly; "" otherwise */
};

/* Open and validate (magic, version, header size). On error returns -errno/-EINVAL with a
 * message "<why>; <what to do>" in err. */
int trace_open(const char *path, struct trace **out, char *err, size_t errlen);
/* Next record, or NULL at the end (check trace->warning). */
const struct ft_rec_hdr *trace_next(struct trace *t);
void trace_rewind(struct trace *t);
void trace_close(struct trace *t);

/* The trace files of a directory, sorted by (pid, gen). */
struct trace_list {
	size_t n;
	struct trace_entry {
		char *path;
		uint32_t pid, gen;
	} *v;
};
/* Returns 0 (possibly n == 0), or -errno when dir cannot be read. */
int trace_list_dir(const char *dir, struct trace_list *out);
void trace_list_free(struct trace_list *l);

/* Names of the trace vocabulary, as printed in the CSV columns. */
const char *trace_kind_name(unsigned kind);       /* zero refetch file wp prefetch */
const char *trace_origin_name(unsigned origin);   /* user syscall */
const char *trace_status_name(unsigned status);   /* ok none partial */
const char *trace_op_name(unsigned flags);        /* read write wrprotect */
const char *trace_type_name(unsigned flags);      /* regular zero */
/* x86_64 syscall name for common calls, NULL if not in the table. */
const char *trace_syscall_name(int nr);

/* ---------------------------------------------------------------- maps history (maps.c)
 * Every FT_REC_MAPS snapshot and FT_REC_OBJECT record of one process, so that an address at a
 * time resolves to the mapping that held it then, even if it was unmapped later. */
struct maps_entry {
	uint64_t start, end, offset;
	uint64_t inode;
	char perms[5];
	const char *path; /* "" for anonymous; interned, lives as long as the history */
};
struct maps_history;

struct maps_history *maps_new(void);
void maps_free(struct maps_history *m);
/* Feed the records of a trace; other record types are ignored. */
int maps_add_snapshot(struct maps_history *m, uint64_t time_ns, const char *text, size_t len);
int maps_add_object(struct maps_history *m, const struct ft_object *obj);
/* The mapping holding addr at time t: the latest snapshot at or before t that holds it, else the
 * earliest later one. Returns NULL if no snapshot ever held addr. */
const struct maps_entry *maps_lookup(const struct maps_history *m, uint64_t addr, uint64_t t);
/* The recorded build-id of an object path, if an FT_REC_OBJECT named it (len 0 otherwise). */
const uint8_t *maps_build_id(const struct maps_history *m, const char *path, uint32_t *len);
/* Objects recorded with FT_REC_OBJECT (for addresses no snapshot covers). */
size_t maps_nr_objects(const struct maps_history *m);
const struct ft_object *maps_object(const struct maps_history *m, size_t i);

/* ---------------------------------------------------------------- symbolizer (symbolize.c)
 * Two phases, so that addr2line runs once per object with all of its addresses:
 *   id = sym_add(s, maps, ip, t, is_return)  ... for every frame ...
 *   sym_resolve(s)
 *   f = sym_frame(s, id)
 * Objects are shared across processes (keyed by path). */
struct sym_loc {
	const char *func; /* "??" if unknown */
	const char *file; /* "??" if unknown */
	unsigned line;    /* 0 if unknown */
};
struct sym_frame {
	uint64_t ip;         /* as recorded */
	uint64_t obj_addr;   /* address in the object's own vaddr space (ip-1 for return addresses) */
	const char *lib;     /* object path, "[vdso]"..., or "??" */
	const char *func;    /* outermost function of the frame (symtab name or debug info), "??" */
	const char *code;    /* "file:line" innermost first, inlines joined by "<<<"; "??:?" */
	const char *funcs;   /* function names matching code, joined by "<<<" */
	unsigned nr_locs;    /* inline chain, innermost first (>= 1) */
	const struct sym_loc *locs;
	bool resolved;       /* object and offset known */
};
struct symbolizer;

struct symbolizer *sym_new(void);
void sym_free(struct symbolizer *s);
/* Register a frame; returns its id (>= 0) or -ENOMEM. The same (mapping, address) gives the
 * same id. is_return: a return address, looked up at ip-1. */
int64_t sym_add(struct symbolizer *s, const struct maps_history *m, uint64_t ip, uint64_t t,
		bool is_return);
/* Run the symbolization (ELF headers, symbol tables, addr2line). Warnings go to stderr once per
 * object. Returns 0 or -errno. */
int sym_resolve(struct symbolizer *s);
const struct sym_frame *sym_frame(const struct symbolizer *s, int64_t id);
/* Ids are dense: 0 .. sym_nr_frames() - 1. */
size_t sym_nr_frames(const struct symbolizer *s);

/* Pure helpers, exported for tests. */
/* Translate a runtime address inside a mapping [map_start, ...) at file offset map_offset with
 * permissions perms ("r-xp", or NULL if unknown) into the object's vaddr, using its PT_LOAD
 * headers. Returns 0, or -ENOENT if no segment matches. */
struct sym_segment {
	uint64_t vaddr, offset, filesz, memsz;
	uint32_t flags; /* PF_X | PF_W | PF_R */
};
int sym_map_to_vaddr(const struct sym_segment *segs, size_t n, uint64_t map_start,
		     uint64_t map_offset, const char *perms, uint64_t addr, uint64_t *vaddr);
/* Read the PT_LOAD segments and the GNU build-id of an ELF file. */
int sym_elf_info(const char *path, struct sym_segment **segs, size_t *nsegs, uint8_t *build_id,
		 uint32_t *build_id_len);

/* ---------------------------------------------------------------- the program's frame (caller.c)
 * Reports stop at the first frame of the program's own code: below it, memset, operator new and
 * jemalloc say less about what the program was doing than the line that called them. */
/* Whether an object (a path) is the C library, the C++ runtime, libgcc, the loader or fltrace. */
bool caller_is_runtime(const char *lib);
/* The index of the innermost frame outside those (0 if every frame is theirs). */
uint32_t caller_index(const struct symbolizer *s, const int64_t *frames, uint32_t n);
/* Its name: the innermost file:line where known, else its function ("object+0xentry" when only
 * the unwind table knows it, "func (object)" from a symbol table); buf holds it if needed. */
const char *caller_name(const struct sym_frame *f, char *buf, size_t len);

/* ---------------------------------------------------------------- aggregation (aggregate.c)
 * Faults streamed from a trace are folded into rows keyed by what the view needs; memory grows
 * with the distinct keys only. */
enum agg_by {
	AGG_BY_STACK = 0,   /* full stack + flags (the default) */
	AGG_BY_LINE = 1,    /* innermost frame's file:line */
	AGG_BY_FUNCTION = 2, /* innermost frame's function */
	AGG_BY_ALLOC = 3,    /* the allocation site of the memory each fault hit (allocsite.h) */
	AGG_BY_CALLER = 4,   /* the program's own frame (caller.c): file:line, or function */
	AGG_BY_LINE_CALLER = 5, /* the innermost line and the program's frame that led to it */
};

/* Which faults to keep. Masks are bit sets of 1u << enum value. */
#define FILTER_KIND_SYSCALL (1u << 4) /* in kinds: faults taken inside a system call */
#define FILTER_KIND_PREFETCH (1u << 5) /* in kinds: FT_KIND_PREFETCH (svg_common.h's numbering) */
#define FILTER_ACC_READ 1u
#define FILTER_ACC_WRITE 2u
#define FILTER_ACC_WP 4u
struct agg_filter {
	unsigned kinds;    /* 0 = all; else 1u<<FT_KIND_* | FILTER_KIND_SYSCALL */
	unsigned access;   /* 0 = all; else FILTER_ACC_* */
	bool has_time;
	double time_start, time_end; /* seconds from the trace start; end < 0: open */
};
bool agg_filter_match(const struct agg_filter *f, const struct ft_file_header *h,
		      const struct ft_fault *fault);

/* Latency summary: exact for a few samples, a log histogram beyond (p99 within ~6%). */
struct lat_hist;

struct agg_row {
	/* key */
	uint32_t depth;
	const uint64_t *ips;     /* innermost first, owned by the table */
	int64_t *frames;         /* symbolizer ids of ips (filled by agg_symbolize), -1 if none */
	uint16_t flags;
	uint8_t kind, origin;
	int32_t syscall_nr;
	const char *file;        /* file-backed faults: the region's path, else NULL */
	/* values */
	uint64_t count;          /* pages */
	uint64_t faults;         /* fault records */
	uint64_t nostack;        /* pages of faults without a stack */
	uint64_t first_ns;       /* earliest fault time */
	uint64_t off_lo, off_hi; /* file faults: offset range covered [lo, hi) */
	uint64_t lat_total_ns;
	struct lat_hist *lat;
	uint32_t pid, gen;       /* process of the row (first one when merged) */
	int64_t caller;          /* regrouped rows: symbolizer id of the program's frame of the
	                            biggest contributing stack; -1 (by-stack rows: from frames) */
};

struct agg_table;
struct agg_table *agg_new(void);
void agg_free(struct agg_table *t);
/* Fold one fault in. stack may be NULL (no stack). region may be NULL. */
int agg_add(struct agg_table *t, const struct ft_file_header *h, const struct ft_fault *f,
	    const struct ft_stack *stack, const struct ft_region *region);
/* Register every frame of every row with the symbolizer (then call sym_resolve). */
int agg_symbolize(struct agg_table *t, struct symbolizer *s, const struct maps_history *m);
/* Regroup a symbolized table by view into a new table (AGG_BY_STACK: merge rows with the same
 * symbolized frames, used to combine processes). Rows of src are added to dst. */
int agg_regroup(struct agg_table *dst, struct agg_table *src, enum agg_by by,
		const struct symbolizer *s);
/* Rows sorted by count desc, then a total order on the key (deterministic). */
size_t agg_rows(struct agg_table *t, struct agg_row ***rows);
uint64_t agg_total(const struct agg_table *t);
/* The program's own frame of a symbolized row (caller.c's rule), or NULL without a stack. */
const struct sym_frame *agg_row_caller(const struct agg_row *r, const struct symbolizer *s);
uint64_t lat_percentile(const struct lat_hist *h, double p);

/* ---------------------------------------------------------------- process loading (load.c)
 * The usual pipeline for one traced process (one .bin): stream its faults through a filter into
 * a by-stack table and collect its maps history. visualize and report both start here. */
struct an_process {
	uint32_t pid, gen, ppid;
	char *exe;
	char *cmdline;            /* the command line, arguments joined by spaces (cut at 240 bytes) */
	char *path;
	uint64_t start_ns;
	struct maps_history *maps;
	struct agg_table *rows;   /* by stack, unsymbolized until agg_symbolize */
	uint64_t faults_seen, faults_kept;
	char warning[320];        /* the trace's, if its data ended early */
	bool damaged;             /* ... at a damaged record */
};
/* fault_cb, if set, is called for every kept fault (the --raw and --files writers use it). */
typedef int (*an_fault_cb)(void *arg, const struct trace *t, const struct ft_fault *f,
			   const struct ft_stack *stack, const struct ft_region *region);
int an_process_load(const char *path, const struct agg_filter *f, an_fault_cb cb, void *arg,
		    struct an_process **out, char *err, size_t errlen);
void an_process_free(struct an_process *p);
/* A command line: arguments joined by spaces, cut at max bytes with "...", fallback if there are
 * none; malloc'd. */
char *an_join_args(const char *const *argv, size_t argc, const char *fallback, size_t max);

/* ---------------------------------------------------------------- file view (fileview.c)
 * File-backed faults by file and page offset: which ranges of which file were read, how often,
 * and in what order. Memory grows with distinct (file, page) pairs. */
struct fileview;
struct fileview *fileview_new(void);
void fileview_free(struct fileview *v);
int fileview_add(struct fileview *v, const char *path, uint64_t offset, uint64_t pages,
		 uint64_t page_size, uint64_t time_ns);
/* CSV: file,offset_start,offset_end,pages,faults,first_s,order; contiguous pages form a range;
 * order ranks the ranges of a file by first fault (1 = read first). start_ns: time zero. */
int fileview_write_csv(struct fileview *v, FILE *out, uint64_t start_ns);

/* ---------------------------------------------------------------- CSV / folded (csv.c)
 * RFC 4180: a field with , " CR or LF is quoted and its quotes doubled. */
void csv_put(FILE *out, const char *s);
/* The text of one frame of a row for folded stacks: "func (file:line)", inlines expanded
 * outermost first into separate frames joined by ';'. */
void folded_put_frame(FILE *out, const struct sym_frame *fr);

/* ---------------------------------------------------------------- two runs compared (diff.c)
 * Rows of run A (side 0) and run B (side 1), keyed by symbolized callsite text so that load
 * addresses and pids do not matter; kinds and accesses are summed (filter with agg_filter). */
struct diff_row {
	const char *callsite; /* folded stack, root first (or the leaf frame / function) */
	const char *func, *code, *lib; /* the leaf frame */
	uint64_t a, b;        /* pages faulted in run A and run B */
};
struct diff_table;
struct diff_table *diff_new(void);
void diff_free(struct diff_table *d);
/* Add the rows of a symbolized table (from s) as side 0 (A) or 1 (B), grouped by view. */
int diff_add(struct diff_table *d, int side, struct agg_table *t, const struct symbolizer *s,
	     enum agg_by by);
/* Rows sorted by the size of the change, biggest first (then B's count, then callsite). The
 * symbolizer of diff_add must live as long as the rows are used. */
size_t diff_rows(struct diff_table *d, struct diff_row ***rows);
void diff_totals(const struct diff_table *d, uint64_t *a, uint64_t *b);
/* Two recordings read whole (report --diff): every process of dirs[0] as side 0, of dirs[1] as
 * side 1, symbolized with sym (which must outlive d's rows). 0, or -errno and err says why. */
struct diff_load_opts {
	const struct agg_filter *filter;
	long pid;             /* only this process; -1: all */
	enum agg_by by;
	void (*progress)(void *arg, const char *path); /* told each trace before it is read; or NULL */
	void *arg;
};
int diff_load(struct diff_table *d, struct symbolizer *sym, const char *const dirs[2],
	      const struct diff_load_opts *o, char *err, size_t errlen);

/* ---------------------------------------------------------------- interning (intern.c)
 * Distinct strings with dense ids in the order first seen. Zero-initialise, intern_free at the
 * end. */
struct intern {
	char **strs;   /* strs[id] */
	size_t n, cap;
	size_t *hash, hcap;
};
/* The id of s, added if new (*fresh, if given, says so); -ENOMEM when out of memory. */
int64_t intern_id(struct intern *in, const char *s, bool *fresh);
void intern_free(struct intern *in);
/* JSON: s as a quoted string with its escapes. */
void json_put(FILE *out, const char *s);

/* ---------------------------------------------------------------- stats files (statsfile.c) */
/* The last line of DIR/fltrace-data-stats-<pid>.out (malloc'd), or NULL if there is none. */
char *stats_last_line(const char *dir, uint32_t pid);
/* Why faults have no stack, from a stats line: "3: <reason>, 1: <reason>" into out (empty if the
 * line counts none, or is NULL); returns its length. */
size_t stats_nostack_why(const char *line, char *out, size_t cap);

#endif
