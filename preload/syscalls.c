/* Interposed system calls that pass buffers to the kernel: the buffer's missing pages are brought
 * in first, by this thread, so the faults carry the caller's stack (see src/runtime/prefault.c).
 * glibc's own internal calls (stdio, for one) bypass these and are recorded by the call's address. */
#include <dlfcn.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../src/runtime/rt.h"
#include "../src/runtime/prefault.h"

#define EXPORT __attribute__((visibility("default")))

/* The C library's function behind ours (same type: ours has its prototype). Looked up on first
 * use; the runtime's own threads never get here (they make raw system calls), so dlsym's loader
 * lock cannot be taken by a handler while a program thread holds it in a fault. */
#define REAL(name)                                                         \
	static __typeof__(&name) real_##name;                              \
	if (!real_##name)                                                  \
		real_##name = (__typeof__(&name))rt_libc_next(#name)

static bool prefault_iov(const struct iovec *iov, int n, int nr, bool kernel_writes)
{
	bool big = false;
	for (int i = 0; iov && i < n; i++)
		big |= prefault_range(iov[i].iov_base, iov[i].iov_len, nr, kernel_writes);
	return big;
}

/* Runs the real call; with a buffer too big to bring in first, the caller's stack is left for the
 * faults the kernel will take inside it. */
#define CALL(big, nr, call)                                                \
	({                                                                 \
		if (big)                                                   \
			prefault_call_begin(nr);                           \
		__typeof__(call) ret_ = (call);                            \
		if (big) {                                                 \
			int e_ = errno;                                    \
			prefault_call_end();                               \
			errno = e_;                                        \
		}                                                          \
		ret_;                                                      \
	})

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	REAL(read);
	bool big = prefault_range(buf, n, SYS_read, true);
	return CALL(big, SYS_read, real_read(fd, buf, n));
}

EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	REAL(pread);
	bool big = prefault_range(buf, n, SYS_pread64, true);
	return CALL(big, SYS_pread64, real_pread(fd, buf, n, off));
}

EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
	REAL(pread64);
	bool big = prefault_range(buf, n, SYS_pread64, true);
	return CALL(big, SYS_pread64, real_pread64(fd, buf, n, off));
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	REAL(readv);
	bool big = prefault_iov(iov, n, SYS_readv, true);
	return CALL(big, SYS_readv, real_readv(fd, iov, n));
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	REAL(recv);
	bool big = prefault_range(buf, n, SYS_recvfrom, true);
	return CALL(big, SYS_recvfrom, real_recv(fd, buf, n, flags));
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a, socklen_t *al)
{
	REAL(recvfrom);
	bool big = prefault_range(buf, n, SYS_recvfrom, true);
	return CALL(big, SYS_recvfrom, real_recvfrom(fd, buf, n, flags, a, al));
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	REAL(recvmsg);
	bool big = msg && prefault_iov(msg->msg_iov, (int)msg->msg_iovlen, SYS_recvmsg, true);
	return CALL(big, SYS_recvmsg, real_recvmsg(fd, msg, flags));
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	REAL(write);
	bool big = prefault_range(buf, n, SYS_write, false);
	return CALL(big, SYS_write, real_write(fd, buf, n));
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	REAL(pwrite);
	bool big = prefault_range(buf, n, SYS_pwrite64, false);
	return CALL(big, SYS_pwrite64, real_pwrite(fd, buf, n, off));
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	REAL(pwrite64);
	bool big = prefault_range(buf, n, SYS_pwrite64, false);
	return CALL(big, SYS_pwrite64, real_pwrite64(fd, buf, n, off));
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	REAL(writev);
	bool big = prefault_iov(iov, n, SYS_writev, false);
	return CALL(big, SYS_writev, real_writev(fd, iov, n));
}

EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	REAL(send);
	bool big = prefault_range(buf, n, SYS_sendto, false);
	return CALL(big, SYS_sendto, real_send(fd, buf, n, flags));
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *a, socklen_t al)
{
	REAL(sendto);
	bool big = prefault_range(buf, n, SYS_sendto, false);
	return CALL(big, SYS_sendto, real_sendto(fd, buf, n, flags, a, al));
}
