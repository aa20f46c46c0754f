/* The userfaultfd calls: the only owner of the uffd fds' ioctls (open, register, copy, wake,
 * move). Below everything that moves pages. */
#ifndef FLTRACE_RT_UFFD_H
#define FLTRACE_RT_UFFD_H

#include "rt.h"

int uffd_open(bool sigbus, uint64_t *features_out);
/* For the loader's mappings (loader.c): EVENT_REMAP keeps a registration across mremap, the only
 * atomic way to put registered memory in place of a file mapping; the REMAP events are read and
 * ignored by the handler threads. UFFDIO_COPY on it fails with -EAGAIN while an mremap is pending. */
int uffd_open_remap(void);
int uffd_register(int fd, uintptr_t start, size_t len);
int uffd_unregister(int fd, uintptr_t start, size_t len);
int uffd_copy(int fd, uintptr_t dst, const void *src, size_t len, bool wake);
int uffd_wake(int fd, uintptr_t start, size_t len);
/* Moves pages out atomically (no write can be lost); returns bytes moved or -errno. Callers hold
 * rt.lock (nothing else maps either range meanwhile). */
long uffd_move(int fd, uintptr_t dst, uintptr_t src, size_t len);
bool uffd_page_mapped(uintptr_t page); /* the kernel has the page mapped (mincore) */

#endif
