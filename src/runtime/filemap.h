/* Files behind emulated private file mappings: handles holding our own fds, page reads, and the
 * region records that name them in the trace. Callers hold rt.lock. */
#ifndef FLTRACE_RT_FILEMAP_H
#define FLTRACE_RT_FILEMAP_H

#include "rt.h"

int filemap_open(int progfd); /* a handle holding our own fd, or -errno */
/* A handle for a file the loader mapped, by path; -ESTALE if it is no longer that (dev, inode). */
int filemap_open_path(const char *path, uint64_t dev, uint64_t ino);
void filemap_ident(int file, const char **path, uint64_t *dev, uint64_t *ino);
void filemap_ref(int file);
void filemap_unref(int file);
uint64_t filemap_size(int file);                 /* at the time of the first mapping */
/* Reads one page at `off` into buf, zeros past the end of the file; -errno on failure. */
int filemap_read_page(int file, uint64_t off, void *buf);
uint32_t filemap_record(int file, uintptr_t start, size_t len, uint64_t off); /* a region id */
void *filemap_mmap(int file, void *addr, size_t len, int prot, int flags, uint64_t off);
void filemap_fork_prepare(void); /* the files, copied where the fork child inherits them */
void filemap_fork_parent(void);
void filemap_fork_child(void);
void filemap_ids_reset(void);                   /* a new trace file (fork child) */

#endif
