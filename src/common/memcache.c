/* The memcached binary-protocol client (inc/fltrace/memcache.h): server lists, connections, requests
 * and responses, with every wait bounded by a deadline. Raw system calls: the runtime's own. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <fltrace/memcache.h>

#define MC_SPIN_NS 50000ull
#define MC_FDS_MAX 65536

/* Connections whose server runs on this machine (a bit per fd, set by mc_connect): while waiting
 * for its answer, mc_recv yields the CPU instead of spinning on it. The server's thread is woken
 * by our request on our CPU (the kernel places a wakee beside its waker): a spinning client kept
 * it off that CPU for the whole spin (seen with perf sched: 1,955 of 8,277 gets in a run waited
 * the 50 us out), and mcfloor's back-to-back get took 25-31 us yielding against 50-67 us spinning
 * on a loaded 2-vCPU VM. A server on another machine gets the plain spin: nothing of ours is
 * in its way, and a yield could hand the CPU to a program thread for a whole time slice. */
static _Atomic uint64_t mc_local[MC_FDS_MAX / 64];

static void mc_local_set(int fd, bool on)
{
	if (fd < 0 || fd >= MC_FDS_MAX)
		return;
	if (on)
		atomic_fetch_or(&mc_local[fd / 64], 1ull << (fd % 64));
	else
		atomic_fetch_and(&mc_local[fd / 64], ~(1ull << (fd % 64)));
}

static bool mc_is_local(int fd)
{
	return fd >= 0 && fd < MC_FDS_MAX && (atomic_load(&mc_local[fd / 64]) >> (fd % 64) & 1);
}

/* A peer on this machine: a loopback address, or the address the connection comes from. */
static bool mc_peer_local(int fd, const struct mc_addr *a)
{
	if (a->sa.sa.sa_family == AF_INET && (ntohl(a->sa.in.sin_addr.s_addr) >> 24) == 127)
		return true;
	if (a->sa.sa.sa_family == AF_INET6 && (IN6_IS_ADDR_LOOPBACK(&a->sa.in6.sin6_addr) ||
	    (IN6_IS_ADDR_V4MAPPED(&a->sa.in6.sin6_addr) && a->sa.in6.sin6_addr.s6_addr[12] == 127)))
		return true;
	struct mc_addr me;
	socklen_t len = sizeof(me.sa);
	if (syscall(SYS_getsockname, fd, &me.sa.sa, &len) < 0 || me.sa.sa.sa_family != a->sa.sa.sa_family)
		return false;
	return a->sa.sa.sa_family == AF_INET ? me.sa.in.sin_addr.s_addr == a->sa.in.sin_addr.s_addr :
		memcmp(&me.sa.in6.sin6_addr, &a->sa.in6.sin6_addr, sizeof(struct in6_addr)) == 0;
}

uint64_t mc_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t mc_deadline(uint64_t ms)
{
	return mc_now_ns() + ms * 1000000ull;
}

/* ---- server lists ---- */

int mc_split(const char *item, size_t len, char *host, size_t hcap, unsigned *port)
{
	const char *colon = NULL, *end = item + len, *h = item, *he;
	if (len && item[0] == '[') { /* [v6]:port */
		const char *close = memchr(item, ']', len);
		if (!close || close + 1 >= end || close[1] != ':')
			return -EINVAL;
		h = item + 1;
		he = close;
		colon = close + 1;
	} else {
		for (const char *p = item; p < end; p++)
			if (*p == ':')
				colon = p;
		if (!colon || memchr(item, ':', (size_t)(colon - item)))
			return -EINVAL; /* none, or a bare v6 address: it needs brackets */
		he = colon;
	}
	size_t hl = (size_t)(he - h);
	if (!hl || hl >= hcap || colon + 1 >= end)
		return -EINVAL;
	unsigned p = 0;
	for (const char *c = colon + 1; c < end; c++) {
		if (*c < '0' || *c > '9' || p > 65535)
			return -EINVAL;
		p = p * 10 + (unsigned)(*c - '0');
	}
	if (p == 0 || p > 65535)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = 0;
	*port = p;
	return 0;
}

static int mc_addr_set(const char *item, size_t len, struct mc_addr *a)
{
	char host[MC_NAME_MAX];
	unsigned port;
	if (len >= sizeof(a->name) || mc_split(item, len, host, sizeof(host), &port) < 0)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	memcpy(a->name, item, len);
	if (inet_pton(AF_INET, host, &a->sa.in.sin_addr) == 1) {
		a->sa.in.sin_family = AF_INET;
		a->sa.in.sin_port = htons((uint16_t)port);
		a->len = sizeof(a->sa.in);
	} else if (inet_pton(AF_INET6, host, &a->sa.in6.sin6_addr) == 1) {
		a->sa.in6.sin6_family = AF_INET6;
		a->sa.in6.sin6_port = htons((uint16_t)port);
		a->len = sizeof(a->sa.in6);
	} else {
		return -EINVAL;
	}
	return 0;
}

static void copy_bad(char *bad, size_t cap, const char *s, size_t n)
{
	if (!cap)
		return;
	if (n >= cap)
		n = cap - 1;
	memcpy(bad, s, n);
	bad[n] = 0;
}

int mc_list_parse(const char *spec, struct mc_addr *v, unsigned max, unsigned *n, char *bad, size_t badcap)
{
	*n = 0;
	copy_bad(bad, badcap, "", 0);
	const char *p = spec;
	for (;;) {
		size_t len = strcspn(p, ",");
		if (*n == max)
			return -E2BIG;
		if (mc_addr_set(p, len, &v[*n]) < 0) {
			copy_bad(bad, badcap, p, len);
			return -EINVAL;
		}
		for (unsigned i = 0; i < *n; i++)
			if (v[i].len == v[*n].len && memcmp(&v[i].sa, &v[*n].sa, v[i].len) == 0) {
				copy_bad(bad, badcap, p, len);
				return -EEXIST;
			}
		(*n)++;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

/* ---- connections ---- */

/* Waits for `events` on fd until the deadline: 0, -ETIMEDOUT or -errno. */
static int mc_wait(int fd, short events, uint64_t deadline)
{
	for (;;) {
		uint64_t now = mc_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		struct pollfd pfd = { .fd = fd, .events = events };
		struct timespec ts = { .tv_sec = (time_t)((deadline - now) / 1000000000ull),
				       .tv_nsec = (long)((deadline - now) % 1000000000ull) };
		long r = syscall(SYS_ppoll, &pfd, 1, &ts, NULL, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r > 0)
			return 0;
	}
}

int mc_connect(const struct mc_addr *a, uint64_t deadline)
{
	int fd = (int)syscall(SYS_socket, a->sa.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	syscall(SYS_setsockopt, fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int err = 0;
	if (syscall(SYS_connect, fd, &a->sa.sa, a->len) < 0) {
		err = errno == EINPROGRESS ? 0 : -errno;
		if (!err)
			err = mc_wait(fd, POLLOUT, deadline);
		if (!err) {
			int so = 0;
			socklen_t sl = sizeof(so);
			syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_ERROR, &so, &sl);
			err = -so;
		}
	}
	if (err) {
		syscall(SYS_close, fd);
		return err;
	}
	mc_local_set(fd, mc_peer_local(fd, a));
	return fd;
}

void mc_close(int fd)
{
	if (fd >= 0)
		syscall(SYS_close, fd);
}

/* While a server on this machine has not answered (or not read), the CPU goes to it: a yield.
 * Elsewhere the plain spin, up to MC_SPIN_NS; then a sleep in ppoll until the deadline. */
static int mc_await(int fd, short events, uint64_t *spin_until, uint64_t deadline)
{
	/* The answer comes within tens of us: polling for it a while saves the wake-up of a
	 * sleeping thread (50-100 us on these VMs) on each round trip. */
	uint64_t now = mc_now_ns();
	if (!*spin_until)
		*spin_until = now + MC_SPIN_NS;
	if (now < *spin_until) {
		if (mc_is_local(fd))
			syscall(SYS_sched_yield);
		else
			__builtin_ia32_pause();
		return 0;
	}
	return mc_wait(fd, events, deadline);
}

int mc_send(int fd, const void *buf, size_t len, uint64_t deadline)
{
	const char *p = buf;
	uint64_t spin_until = 0;
	while (len) {
		long n = syscall(SYS_sendto, fd, p, len, MSG_NOSIGNAL, NULL, 0);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return errno == EPIPE ? -ECONNRESET : -errno;
		/* The socket's buffer is full (a batch of pages): the server is reading it. */
		int err = mc_await(fd, POLLOUT, &spin_until, deadline);
		if (err)
			return err;
	}
	return 0;
}

/* One recvmsg into iov (flags: MSG_TRUNC discards), waiting as mc_await does: bytes (> 0) or -errno. */
static long mc_recv_iov(int fd, struct iovec *iov, int niov, int flags, uint64_t *spin_until, uint64_t deadline)
{
	for (;;) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)niov };
		long n = syscall(SYS_recvmsg, fd, &m, flags);
		if (n > 0)
			return n;
		if (n == 0)
			return -ECONNRESET; /* the server closed the connection */
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		int err = mc_await(fd, POLLIN, spin_until, deadline);
		if (err)
			return err;
	}
}

/* Exactly len bytes into buf (NULL: discarded, without a copy: MSG_TRUNC on TCP). */
static int mc_recv_flags(int fd, void *buf, size_t len, uint64_t deadline)
{
	char *p = buf;
	uint64_t spin_until = 0;
	while (len) {
		struct iovec iov = { p, len };
		long n = mc_recv_iov(fd, &iov, 1, buf ? 0 : MSG_TRUNC, &spin_until, deadline);
		if (n < 0)
			return (int)n;
		if (p)
			p += n;
		len -= (size_t)n;
	}
	return 0;
}

int mc_recv(int fd, void *buf, size_t len, uint64_t deadline)
{
	return mc_recv_flags(fd, buf, len, deadline);
}

long mc_recv_some(int fd, void *buf, size_t cap, uint64_t deadline)
{
	for (;;) {
		long n = syscall(SYS_recvfrom, fd, buf, cap, 0, NULL, NULL);
		if (n > 0)
			return n;
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		int err = mc_wait(fd, POLLIN, deadline);
		if (err)
			return err;
	}
}

int mc_skip(int fd, size_t len, uint64_t deadline)
{
	return mc_recv_flags(fd, NULL, len, deadline);
}

/* ---- requests and responses ---- */

static void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static void put32(unsigned char *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint16_t get16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

size_t mc_request(void *buf, uint8_t opcode, uint32_t opaque, const void *key, uint16_t keylen, uint32_t vallen)
{
	unsigned char *h = buf;
	uint8_t extlen = opcode == MC_SET || opcode == MC_SETQ ? 8 : 0;
	memset(h, 0, MC_HDR + extlen);
	h[0] = 0x80; /* request magic */
	h[1] = opcode;
	put16(h + 2, keylen);
	h[4] = extlen;
	put32(h + 8, extlen + keylen + vallen);
	put32(h + 12, opaque);
	if (keylen)
		memcpy(h + MC_HDR + extlen, key, keylen);
	return MC_HDR + extlen + keylen;
}

static int mc_parse_response(const unsigned char *h, struct mc_response *r)
{
	if (h[0] != 0x81)
		return -EPROTO;
	r->opcode = h[1];
	r->keylen = get16(h + 2);
	r->extlen = h[4];
	r->status = get16(h + 6);
	r->bodylen = get32(h + 8);
	r->opaque = get32(h + 12);
	if ((uint32_t)r->keylen + r->extlen > r->bodylen)
		return -EPROTO;
	return 0;
}

int mc_recv_response(int fd, struct mc_response *r, uint64_t deadline)
{
	unsigned char h[MC_HDR];
	int err = mc_recv(fd, h, sizeof(h), deadline);
	return err ? err : mc_parse_response(h, r);
}

int mc_get(int fd, const void *key, uint16_t keylen, void *val, size_t len, uint64_t deadline)
{
	char req[MC_HDR + MC_KEY_MAX];
	if (keylen > MC_KEY_MAX)
		return -E2BIG;
	int err = mc_send(fd, req, mc_request(req, MC_GET, 0, key, keylen, 0), deadline);
	if (err)
		return err;
	/* An answer holding the value is header, 4 bytes of flags, value: read into head and val with
	 * one recvmsg once it is all there. Nothing else is on the way on this connection, so asking
	 * for that much never takes bytes past a shorter answer (an error). */
	unsigned char head[MC_HDR + 4];
	size_t got = 0, want = sizeof(head) + len;
	uint64_t spin_until = 0;
	struct mc_response r;
	bool known = false;
	while (got < want) {
		struct iovec iov[2];
		int niov = 0;
		if (got < sizeof(head))
			iov[niov++] = (struct iovec){ head + got, sizeof(head) - got };
		size_t at = got < sizeof(head) ? 0 : got - sizeof(head);
		iov[niov++] = (struct iovec){ (char *)val + at, len - at };
		long n = mc_recv_iov(fd, iov, niov, 0, &spin_until, deadline);
		if (n < 0)
			return (int)n;
		got += (size_t)n;
		if (known || got < MC_HDR)
			continue;
		known = true;
		if ((err = mc_parse_response(head, &r)))
			return err;
		bool value = r.status == MC_OK && r.extlen == 4 && r.keylen == 0 && r.bodylen == 4 + len;
		if (value)
			continue;
		/* Not the value asked for: the rest of this answer is skipped, and what it says returned. */
		size_t total = MC_HDR + (size_t)r.bodylen;
		if (total > got && (err = mc_skip(fd, total - got, deadline)))
			return err;
		return r.status == MC_ENOENT ? -ENOENT : r.status == MC_AUTH_ERROR ? -EACCES :
			r.status != MC_OK ? -EPROTO : -EMSGSIZE;
	}
	return 0;
}

/* One request without a value, and its one response's status (its body skipped). */
static int mc_simple(int fd, uint8_t opcode, const void *key, uint16_t keylen, const void *val, uint32_t vallen,
		     uint64_t deadline, uint16_t *status)
{
	unsigned char buf[MC_HDR + 256];
	if (keylen + vallen > sizeof(buf) - MC_HDR)
		return -E2BIG;
	size_t n = mc_request(buf, opcode, 0, key, keylen, vallen);
	memcpy(buf + n, val, vallen);
	struct mc_response r;
	int err = mc_send(fd, buf, n + vallen, deadline);
	if (!err)
		err = mc_recv_response(fd, &r, deadline);
	if (!err)
		err = mc_skip(fd, r.bodylen, deadline);
	if (!err)
		*status = r.status;
	return err;
}

int mc_sasl_plain(int fd, const char *user, const char *password, uint64_t deadline)
{
	char msg[200];
	size_t ul = strlen(user), pl = strlen(password);
	if (ul + pl + 2 > sizeof(msg))
		return -E2BIG;
	msg[0] = 0; /* authorization identity: none */
	memcpy(msg + 1, user, ul);
	msg[1 + ul] = 0;
	memcpy(msg + 2 + ul, password, pl);
	uint16_t st;
	int err = mc_simple(fd, MC_SASL_AUTH, "PLAIN", 5, msg, (uint32_t)(ul + pl + 2), deadline, &st);
	if (err)
		return err;
	if (st == MC_OK)
		return 0;
	return st == MC_AUTH_ERROR ? -EACCES : -EPROTONOSUPPORT;
}

int mc_ping(int fd, uint64_t deadline)
{
	uint16_t st;
	/* A get, not a noop or version: memcached answers those without asking for authentication. */
	int err = mc_simple(fd, MC_GET, "fltrace:ping", 12, NULL, 0, deadline, &st);
	if (err)
		return err;
	return st == MC_AUTH_ERROR ? -EACCES : st == MC_OK || st == MC_ENOENT ? 0 : -EPROTO;
}

int mc_stats(int fd, const char *group, int (*each)(const char *name, const char *value, void *ctx), void *ctx,
	     uint64_t deadline)
{
	unsigned char buf[MC_HDR + 64];
	size_t gl = group ? strlen(group) : 0;
	if (gl > 64)
		return -E2BIG;
	int err = mc_send(fd, buf, mc_request(buf, MC_STAT, 0, group, (uint16_t)gl, 0), deadline);
	int stop = 0;
	while (!err) {
		struct mc_response r;
		char name[128], value[256];
		if ((err = mc_recv_response(fd, &r, deadline)))
			break;
		if (r.status == MC_AUTH_ERROR)
			return mc_skip(fd, r.bodylen, deadline) ? -EIO : -EACCES;
		if (r.status != MC_OK)
			return -EPROTO;
		size_t vl = r.bodylen - r.keylen - r.extlen;
		if (r.keylen == 0) /* the end */
			return mc_skip(fd, r.bodylen, deadline) ? -EIO : 0;
		if (r.keylen >= sizeof(name) || vl >= sizeof(value) || r.extlen)
			return -EPROTO;
		if ((err = mc_recv(fd, name, r.keylen, deadline)) || (err = mc_recv(fd, value, vl, deadline)))
			break;
		name[r.keylen] = 0;
		value[vl] = 0;
		if (!stop)
			stop = each(name, value, ctx); /* the rest is still read: the connection stays usable */
	}
	return err;
}

const char *mc_status_str(uint16_t status)
{
	switch (status) {
	case MC_OK: return "no error";
	case MC_ENOENT: return "no such item";
	case MC_E2BIG: return "item too large";
	case MC_NOT_STORED: return "item not stored";
	case MC_AUTH_ERROR: return "authentication required or refused";
	case MC_UNKNOWN: return "unknown command";
	case MC_ENOMEM: return "out of memory";
	case MC_BUSY: return "busy";
	case MC_TMPFAIL: return "temporary failure";
	default: return "error";
	}
}

const char *mc_conn_strerror(int err)
{
	switch (err) {
	case -ETIMEDOUT: return "did not answer in time (stopped, or the network is down; --far-timeout)";
	case -ECONNRESET: return "closed the connection (it died or restarted)";
	case -ECONNREFUSED: return "refused the connection (nothing listens there)";
	default: return strerror(-err);
	}
}
