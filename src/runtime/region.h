/* Tracked regions: which address ranges fltrace tracks, on which uffd, with one page-state word
 * per page (pagestate.h). All calls but region_table_init need rt.lock. */
#ifndef FLTRACE_RT_REGION_H
#define FLTRACE_RT_REGION_H

#include "rt.h"

struct region {
	uintptr_t start, end;
	uint32_t *pages; /* one word per page, raw mmap (never program-visible memory) */
	size_t pages_map_len;
	int file;          /* filemap handle of a file region, -1 for anonymous memory */
	uint64_t file_off; /* file offset of start */
	uint32_t id;       /* of the FT_REC_REGION record that names the file */
	bool loader;       /* taken over from the dynamic loader (--files=all): registered on rt.loader_uffd */
	uint32_t born;     /* region_generation() when it was made (a split keeps its whole's) */
};

/* Counts regions made (mmap, mremap): read without rt.lock by a poller before it reads fault
 * messages, and compared under rt.lock with the region a message's page lies in now. */
uint32_t region_generation(void);
/* The page's region was made after messages read at generation `gen`: such a message is a fault
 * on memory that has been unmapped since (its address now reused). No region at all is left to
 * fault_serve, whose stuck-fault check must see a thread faulting again and again there. */
bool region_born_after(uintptr_t addr, uint32_t gen);

/* All functions below need rt.lock held, except region_table_init and region_generation. */
void region_table_init(void);
int region_add(uintptr_t start, size_t len, int prot);    /* track + register */
/* A private file mapping emulated by anonymous memory: takes over the reference `file`. */
int region_add_file(uintptr_t start, size_t len, int prot, int file, uint64_t off);
/* A loader mapping about to be replaced by memory already registered on rt.loader_uffd. */
int region_add_loader(uintptr_t start, size_t len, int prot, int file, uint64_t off);
int region_fd(uintptr_t addr); /* the userfaultfd the page at addr is registered on */
const struct region *region_of(uintptr_t addr);           /* NULL if untracked */
void region_record_files(void);                           /* FT_REC_REGION for every file region */
void region_remove(uintptr_t start, size_t len);          /* forget (unmapped) */
void region_zap(uintptr_t start, size_t len);             /* data gone: reads back zeros */
void region_protect(uintptr_t start, size_t len, int prot);
void region_remap(uintptr_t old, size_t oldlen, uintptr_t new_, size_t newlen);
uint32_t *region_page(uintptr_t addr);                    /* NULL if untracked; state: pagestate.h */
int region_register_all(int fd, int loader_fd);           /* at start-up and after fork */
void region_restore_evicted(void);                        /* fork child: copy far pages in */
uint64_t region_tracked_bytes(void);
unsigned region_missing_pages(uintptr_t start, size_t len, uintptr_t *out, unsigned max);

#endif
