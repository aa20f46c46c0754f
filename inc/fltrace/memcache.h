/* A memcached client over the binary protocol for fltrace's far memory: server lists, one socket per
 * server, requests built into the caller's buffer, every wait bounded by a deadline. */
#ifndef FLTRACE_MEMCACHE_H
#define FLTRACE_MEMCACHE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* No malloc, no stdio, raw system calls only: the runtime runs it inside the traced process (its
 * sockets in fltrace's private fd table, on whichever thread serves a fault), the CLI to check the
 * servers before a run and to clear a run's items after it. */

#define MC_SERVERS_MAX 16
#define MC_NAME_MAX 64
#define MC_HDR 24 /* a request's or response's fixed header */
#define MC_KEY_MAX 250 /* the longest key memcached takes */

/* Opcodes and statuses of the binary protocol that fltrace uses. */
enum {
	MC_GET = 0x00, MC_SET = 0x01, MC_DELETE = 0x04, MC_NOOP = 0x0a, MC_VERSION = 0x0b, MC_GETK = 0x0c,
	MC_STAT = 0x10, MC_SETQ = 0x11, MC_DELETEQ = 0x14, MC_SASL_LIST = 0x20, MC_SASL_AUTH = 0x21,
};
enum {
	MC_OK = 0x00, MC_ENOENT = 0x01, MC_E2BIG = 0x03, MC_NOT_STORED = 0x05, MC_AUTH_ERROR = 0x20,
	MC_AUTH_CONTINUE = 0x21, MC_UNKNOWN = 0x81, MC_ENOMEM = 0x82, MC_BUSY = 0x85, MC_TMPFAIL = 0x86,
};

struct mc_addr {
	char name[MC_NAME_MAX]; /* as written in the list: "127.0.0.1:11211", "[::1]:11211" */
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} sa;
	socklen_t len;
};

/* "host:port" of a list item (host may be "[v6]"); host is copied without brackets. 0 or -EINVAL. */
int mc_split(const char *item, size_t len, char *host, size_t hcap, unsigned *port);
/* "a:p,b:p,...": numeric addresses only (fltrace record resolves names first). 0, -EINVAL (the bad
 * item is copied into bad), -E2BIG (more than max), -EEXIST (a server twice: bad names it). */
int mc_list_parse(const char *spec, struct mc_addr *v, unsigned max, unsigned *n, char *bad, size_t badcap);

uint64_t mc_now_ns(void);                /* CLOCK_MONOTONIC */
uint64_t mc_deadline(uint64_t ms);       /* now + ms */

/* A TCP connection (TCP_NODELAY, non-blocking) in the calling thread's fd table: fd or -errno
 * (-ETIMEDOUT past the deadline, -ECONNREFUSED...). */
int mc_connect(const struct mc_addr *a, uint64_t deadline);
void mc_close(int fd);
int mc_send(int fd, const void *buf, size_t len, uint64_t deadline);
/* Exactly len bytes; -ECONNRESET when the server closed the connection, -ETIMEDOUT past the deadline. */
int mc_recv(int fd, void *buf, size_t len, uint64_t deadline);
int mc_skip(int fd, size_t len, uint64_t deadline);
long mc_recv_some(int fd, void *buf, size_t cap, uint64_t deadline); /* what is there (> 0), or -errno */

/* A request: header, extras (a SET's flags and expiry: 0, never expires), key, and room for vallen
 * bytes of value the caller writes after what it returns (the bytes written so far). */
size_t mc_request(void *buf, uint8_t opcode, uint32_t opaque, const void *key, uint16_t keylen, uint32_t vallen);

struct mc_response {
	uint8_t opcode, extlen;
	uint16_t status, keylen;
	uint32_t bodylen, opaque;
};
int mc_recv_response(int fd, struct mc_response *r, uint64_t deadline); /* the header: 0, -errno, -EPROTO */
/* One get round trip for a value of exactly len bytes, into val (one recvmsg for the whole answer
 * once it has arrived): 0, -ENOENT (no such item), -EMSGSIZE (a value of another length), -EACCES
 * (authentication required), -EPROTO (another error), -errno. Nothing else may be on its way on fd. */
int mc_get(int fd, const void *key, uint16_t keylen, void *val, size_t len, uint64_t deadline);

/* SASL PLAIN: 0, -EACCES (refused), -EPROTONOSUPPORT (the server does not do SASL or PLAIN). */
int mc_sasl_plain(int fd, const char *user, const char *password, uint64_t deadline);
/* One round trip that a server demanding SASL refuses: 0, -EACCES (authentication required), -errno. */
int mc_ping(int fd, uint64_t deadline);
/* "stats <group>" (NULL: the general ones): each name and value, until the end or `each` != 0. */
int mc_stats(int fd, const char *group, int (*each)(const char *name, const char *value, void *ctx), void *ctx,
	     uint64_t deadline);
const char *mc_status_str(uint16_t status);
/* What a connection's -errno says about its server, as "did not answer within 2 s (...)". */
const char *mc_conn_strerror(int err);

#endif
