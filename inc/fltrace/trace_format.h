/* On-disk trace format: the contract between the recorder (src/runtime) and the reader (src/analysis).
 * Versioned and self-describing; every record is 8-byte aligned and starts with struct ft_rec_hdr. */
#ifndef FLTRACE_TRACE_FORMAT_H
#define FLTRACE_TRACE_FORMAT_H

#include <stdint.h>

/* File: fltrace-data-trace-<pid>-<gen>.bin, where <gen> counts exec()s of the same pid (0 first).
 * Layout: struct ft_file_header (version 2: struct ft_file_header2), its variable tail (strings),
 * then records until a header whose size is 0 (unwritten space: the file is grown ahead and
 * truncated at exit; after SIGKILL the zero tail remains and marks the end).
 * Version 2 adds checksums, so that a reader tells damaged bytes from a trace that merely ends
 * early: the header's (struct ft_file_header2) and every record's (struct ft_rec_check, at its
 * end). Readers accept versions FT_VERSION_MIN to FT_VERSION. */
#define FT_MAGIC "FLTRACE\0"
#define FT_VERSION 2
#define FT_VERSION_MIN 1
#define FT_ALIGN 8u

/* Fault flags: bits 0, 1 and 5 keep the meaning of the earlier tool's `flags` column. */
#define FT_FLAG_WRITE 0x01u  /* write access */
#define FT_FLAG_WP 0x02u     /* write-protect fault (write to a page mapped read-only) */
#define FT_FLAG_ZERO 0x20u   /* first touch, served with zeros ("allocation" fault) */

/* Fault kinds (struct ft_fault.kind): what the fault did. */
enum ft_kind {
	FT_KIND_ZERO = 0,    /* first touch: page served with zeros */
	FT_KIND_REFETCH = 1, /* page evicted earlier, fetched back from far memory */
	FT_KIND_FILE = 2,    /* file-backed page read from its file */
	FT_KIND_WP = 3,      /* write-protect fault */
	FT_KIND_PREFETCH = 4, /* first touch of a page a prefetcher brought in: its far read was hidden */
};

/* Where the fault was taken (struct ft_fault.origin). */
enum ft_origin {
	FT_ORIGIN_USER = 0,    /* by an instruction of the program: stack[0] is that instruction */
	FT_ORIGIN_SYSCALL = 1, /* by the kernel inside a system call (syscall_nr says which) */
};

/* Stack status (struct ft_fault.stack_status). */
enum ft_stack_status {
	FT_STACK_OK = 0,      /* stack_id names a FT_REC_STACK record */
	FT_STACK_NONE = 1,    /* no stack could be taken (signal blocked, thread gone): counted */
	FT_STACK_PARTIAL = 2, /* stack taken from the system call's pc/sp only */
};

#define FT_NO_STACK 0xffffffffu

enum ft_rec_type {
	FT_REC_END = 0,   /* size 0: end of data */
	FT_REC_STACK = 1, /* a distinct stack, referenced by id from fault records */
	FT_REC_FAULT = 2, /* one fault */
	FT_REC_MAPS = 3,  /* a snapshot of /proc/<pid>/maps (text) */
	FT_REC_OBJECT = 4, /* a loaded object: path, load base, build-id */
	FT_REC_REGION = 5, /* a tracked file-backed region: address, length, file offset, path */
	FT_REC_ALLOC = 6,  /* an allocation that made tracked memory: range, size, stack */
	FT_REC_FREE = 7,   /* the end of a recorded allocation (or of mappings in a range) */
};

struct ft_rec_hdr {
	uint16_t type;  /* enum ft_rec_type */
	uint16_t flags; /* per type; 0 */
	uint32_t size;  /* whole record in bytes, header (and version 2's check) included, multiple of FT_ALIGN */
};

/* Version 2: the last 8 bytes of every record (counted in hdr.size, after the body and its
 * padding). crc is the CRC-32C (inc/fltrace/crc32c.h) of the record's bytes before it, the header
 * as committed included; the writer stores it before the header, so a record whose header is
 * there is whole. The body's structs are those of version 1: the check is past their end. */
struct ft_rec_check {
	uint32_t crc;
	uint32_t zero;
};

struct ft_file_header {
	char magic[8];         /* FT_MAGIC */
	uint32_t version;      /* FT_VERSION */
	uint32_t header_size;  /* sizeof(struct ft_file_header) + tail, multiple of FT_ALIGN */
	uint64_t page_size;
	uint32_t pid, ppid;
	uint32_t exec_gen;     /* <gen> of the file name */
	uint32_t nr_args;      /* NUL-terminated strings in the tail after exe: argv[0..nr_args) */
	uint64_t start_realtime_ns; /* CLOCK_REALTIME at start: fault times are absolute ns too */
	uint64_t localmem_bytes, maxmem_bytes;
	uint32_t handler_threads;
	uint32_t samplerate;   /* faults per second recorded, 0 = all */
	uint32_t policy;       /* enum in config.h: eviction policy */
	uint32_t stack_depth;  /* most frames recorded per stack */
	/* Tail: exe path\0 argv[0]\0 ... argv[nr_args-1]\0, padded with zeros to header_size. */
};

/* Version 2's header: version 1's, two fields, then the tail. */
struct ft_file_header2 {
	struct ft_file_header h;
	uint64_t data_end;    /* where the records end, written when the recorder closed the file
	                         (0 while it records, and after SIGKILL) */
	uint32_t header_crc;  /* CRC-32C of the header_size bytes, data_end and header_crc taken as 0 */
	uint32_t prefetch;    /* --prefetch: a row of inc/fltrace/prefetchers.h; 0 (none) in the
	                         traces written before the field was (it was padding, always 0) */
};

/* Bytes of the fixed header (where the tail starts) and of a record's check, by version. */
static inline uint32_t ft_header_fixed_size(uint32_t version)
{
	return version >= 2 ? sizeof(struct ft_file_header2) : sizeof(struct ft_file_header);
}

static inline uint32_t ft_check_size(uint32_t version)
{
	return version >= 2 ? sizeof(struct ft_rec_check) : 0;
}

struct ft_stack {
	struct ft_rec_hdr hdr;
	uint32_t id;    /* dense, from 0, in order of first use */
	uint32_t depth; /* frames that follow */
	uint64_t ips[]; /* innermost first; ips[0] is the faulting instruction for user faults,
	                   others are return addresses (symbolize ip-1) */
};

struct ft_fault {
	struct ft_rec_hdr hdr;
	uint64_t time_ns;    /* CLOCK_REALTIME when the handler received the fault */
	uint64_t addr;       /* faulting page address */
	uint64_t ip;         /* faulting instruction (user), or the pc of the syscall instruction */
	uint32_t tid;        /* faulting thread */
	uint32_t stack_id;   /* FT_NO_STACK if none */
	uint32_t latency_ns; /* arrival to resume; saturates at UINT32_MAX */
	uint32_t pages;      /* pages served by this fault */
	uint16_t flags;      /* FT_FLAG_* */
	uint8_t kind;        /* enum ft_kind */
	uint8_t origin;      /* enum ft_origin */
	uint8_t stack_status; /* enum ft_stack_status */
	uint8_t pad[3];
	int32_t syscall_nr;  /* for FT_ORIGIN_SYSCALL, else -1 */
	uint32_t region;     /* for FT_KIND_FILE: id of the FT_REC_REGION record, else 0 */
};

struct ft_maps {
	struct ft_rec_hdr hdr;
	uint64_t time_ns;
	uint32_t len;  /* bytes of text that follow (not NUL-terminated) */
	uint32_t pad;
	char text[];
};

struct ft_object {
	struct ft_rec_hdr hdr;
	uint64_t time_ns;
	uint64_t base;          /* dlpi_addr: load bias */
	uint32_t build_id_len;  /* bytes of build-id, 0 if none */
	uint32_t path_len;      /* bytes of path incl. NUL */
	uint8_t build_id[32];
	char path[];            /* NUL-terminated, padded */
};

struct ft_region {
	struct ft_rec_hdr hdr;
	uint64_t time_ns;
	uint32_t id;            /* referenced by ft_fault.region */
	uint32_t path_len;      /* bytes of path incl. NUL */
	uint64_t start, len;    /* address range in the process */
	uint64_t offset;        /* file offset of start */
	char path[];
};

/* What made an FT_REC_ALLOC (struct ft_alloc.kind). */
enum ft_alloc_kind {
	FT_ALLOC_MALLOC = 0, /* malloc, calloc, realloc, memalign and the rest of the family */
	FT_ALLOC_MMAP = 1,   /* an mmap the program made itself */
	FT_ALLOC_MREMAP = 2, /* the new range of an mremap the program made */
};
#define FT_ALLOC_SAMPLED 0x1u /* ft_alloc.flags: a small allocation recorded by sampling */
#define FT_ALLOC_PAGE 0x2u    /* ft_alloc.flags: the first small allocation placed on a page of
                                 the heap since the process started: its site stands for the
                                 page's faults while no live recorded allocation holds it */

/* Allocations the program makes: every mmap/mremap of tracked memory, every malloc-family
 * allocation of at least FT_ALLOC_BIG bytes, small ones sampled by bytes allocated, and the first
 * small one on each page of the heap. Records are
 * written in the order the program made the calls, so file order is the order of events. */
#define FT_ALLOC_BIG (64u << 10)
struct ft_alloc {
	struct ft_rec_hdr hdr;
	uint64_t time_ns;
	uint64_t addr, size;  /* [addr, addr+size): the bytes the program asked for */
	uint32_t tid;
	uint32_t stack_id;    /* FT_NO_STACK if none */
	uint8_t kind;         /* enum ft_alloc_kind */
	uint8_t flags;        /* FT_ALLOC_SAMPLED, FT_ALLOC_PAGE */
	uint8_t pad[6];
};

struct ft_free {
	struct ft_rec_hdr hdr;
	uint64_t time_ns;
	uint64_t addr;
	uint64_t len;         /* 0: the malloc-family allocation at addr; else munmap of [addr, addr+len) */
};

static inline uint32_t ft_rec_size(uint32_t body)
{
	return (body + FT_ALIGN - 1) & ~(FT_ALIGN - 1);
}

#endif
