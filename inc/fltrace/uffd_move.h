/* UFFDIO_MOVE (Linux 6.8) for builds on Debian 12, whose kernel headers predate it: its ABI is
 * fixed, so it is spelled here once, for the runtime and the benchmarks. */
#ifndef FLTRACE_UFFD_MOVE_H
#define FLTRACE_UFFD_MOVE_H

#include <linux/userfaultfd.h>

#ifndef UFFDIO_MOVE
#define _UFFDIO_MOVE (0x05)
struct uffdio_move {
	__u64 dst, src, len, mode;
	__s64 move;
};
#define UFFDIO_MOVE _IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#endif
#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
#endif

#endif
