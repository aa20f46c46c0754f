/* The `memcached:<host:port,...>` backend: evicted pages kept on a pool of memcached servers, placed
 * by consistent hashing (each on --far-replicas of them), encrypted and authenticated with libsodium. */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <sodium.h>

#include "far.h"
#include "fltrace/fmt.h"
#include "fltrace/memcache.h"

/* An item: its nonce, then the page sealed with an AEAD (AES-256-GCM where the CPU has AES-NI,
 * XChaCha20-Poly1305 elsewhere) under a key made at start that never leaves the process. The
 * associated data is the item's key (the run, this process's namespace and the slot) and the
 * slot's version, counted up at every write: a page altered, swapped with another slot's, another
 * process's or run's, or an older version of its own slot, fails to open. Nonces count up too: a
 * fork child seals under a key of its own (made at the fork), so no nonce is ever used twice. */
#define MCF_PAGE 4096u
#define MCF_NONCE 24u /* room for either AEAD's nonce */
#define MCF_ITEM (MCF_NONCE + MCF_PAGE + 16u)
#define MCF_KEYBYTES 32u
#define MCF_KEY_MAX 48
#define MCF_REQ_MAX (MC_HDR + 8 + MCF_KEY_MAX + MCF_ITEM)
#define MCF_BATCH 64      /* pages per pipelined request (evict.c moves runs of at most 64) */
_Static_assert(FAR_OUT_MAX <= MCF_BATCH, "an eviction round's queue fits one request");
#define MCF_POINTS 160    /* points per server on the hash ring */
/* A server that does not answer within --far-timeout (2 s by default) is given up: kill -STOP. */
#define MCF_IO_MS (rt.cfg.far_timeout_ms ? rt.cfg.far_timeout_ms : FLTRACE_DEFAULT_FAR_TIMEOUT_MS)
#define MCF_NOOP_OPAQUE 0xffffffffu
#define MCF_DEL_OPAQUE 0xfffffffeu
/* Items of freed slots waiting to be deleted, per server: sent ahead of the next eviction round's
 * pages (past this many, the rest stay until their slot is written again or the run's end). */
#define MCF_DELS_MAX 1024
/* The stats line, written once a second, says how far a process's slots go, with this margin: so
 * that fltrace record can clear them from a server it cannot list (SASL) after a process died by a
 * signal, unless it wrote more than 256 MB of new slots in its last second. */
#define MCF_BOUND_MARGIN 65536u

/* Two connections per server: memcached serves each on a worker thread of its own, so an eviction
 * round's two halves are stored in parallel, and the first half is on its way while the second is
 * sealed (put_batch). A slot's writes and deletes always take the same connection (slot_lane):
 * their order is kept. Re-fetches take the first. */
#define MCF_LANES 2
struct mcf_lane {
	int fd;    /* ours (the private table), -1: not connected, connects at first use */
	char *buf; /* the request being built on it */
	size_t len;
};

struct mcf_server {
	struct mc_addr addr;
	struct mcf_lane lane[MCF_LANES];
	bool dead;      /* given up: it failed, and so did a new connection */
	uint32_t *dels; /* slots whose items it holds and no page needs any more: deleted with the next round */
	unsigned ndels;
};

static void lane_close(struct mcf_lane *l)
{
	if (l->fd >= 0)
		rt_fd_close(l->fd);
	l->fd = -1;
}

/* The connection a slot's items always take. */
static unsigned slot_lane(uint32_t slot)
{
	return slot % MCF_LANES;
}

struct mcf_point {
	uint32_t hash, server;
};

static struct {
	pthread_mutex_t lock; /* the connections and the bookkeeping below (calls may come from any thread) */
	struct mcf_server s[MC_SERVERS_MAX];
	unsigned n, replicas;
	struct mcf_point ring[MC_SERVERS_MAX * MCF_POINTS];
	unsigned npoints;
	bool gcm;             /* AES-256-GCM (hardware AES), else XChaCha20-Poly1305 */
	struct mcf_ns {
		uint32_t proc;    /* this process's namespace in the run */
		unsigned char key[MCF_KEYBYTES];
		uint64_t nonce;   /* the next nonce under this key */
	} ns, child;          /* ours, and the one made for a fork child during the fork */
	char run[17];         /* the run's id: every process of a run shares it (the CLI clears by it) */
	uint64_t *ver;        /* per slot: the version of the page kept there, 0: none */
	uint16_t *where;      /* per slot: the servers its page was written to, a bit each */
	uint16_t *child_where; /* the same for a fork child's copies, made during the fork */
	uint64_t nslots, hi;  /* slots [0, hi) were written at least once */
	_Atomic uint64_t bound; /* published in the stats line (far_slots): hi and a margin */
	uint64_t next_ver;
	unsigned char *item;  /* one item read back */
	unsigned char *pages; /* pages on their way to a fork child's namespace */
	unsigned char *plain; /* an eviction round's pages, copied out of their staging slots */
	char user[128], password[128];
	bool auth;
	/* the last failure, for far.c's message */
	char why[384];
	const char *todo;
	int status;
	char desc[96];
} mcf = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- placement: a ring of points, MCF_POINTS per server ---- */

static const unsigned char ring_key[crypto_shorthash_KEYBYTES]; /* fixed: the same list places alike */

static uint32_t mcf_hash(const void *p, size_t n)
{
	unsigned char h[crypto_shorthash_BYTES];
	crypto_shorthash(h, p, n, ring_key);
	return (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
}

static void ring_sort(void)
{
	for (unsigned i = 1; i < mcf.npoints; i++) { /* insertion sort: 2,560 points at most, once */
		struct mcf_point p = mcf.ring[i];
		unsigned j = i;
		while (j && mcf.ring[j - 1].hash > p.hash) {
			mcf.ring[j] = mcf.ring[j - 1];
			j--;
		}
		mcf.ring[j] = p;
	}
}

static void ring_build(void)
{
	mcf.npoints = 0;
	for (unsigned s = 0; s < mcf.n; s++)
		for (unsigned i = 0; i < MCF_POINTS; i++) {
			char name[MC_NAME_MAX + 16];
			struct fmt f;
			fmt_init(&f, name, sizeof(name));
			fmt_str(&f, mcf.s[s].addr.name);
			fmt_char(&f, '-');
			fmt_u64(&f, i);
			mcf.ring[mcf.npoints++] = (struct mcf_point){ mcf_hash(name, fmt_len(&f)), s };
		}
	ring_sort();
}

/* Up to `want` distinct servers of `allowed` (a bit per server), in ring order from the key's hash:
 * where a page is written (the live servers, `replicas` of them) or read (those it was written to). */
static unsigned ring_route(const char *key, size_t klen, uint32_t allowed, unsigned want, unsigned *out)
{
	uint32_t h = mcf_hash(key, klen);
	unsigned lo = 0, hi = mcf.npoints, n = 0;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (mcf.ring[mid].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t seen = 0;
	for (unsigned i = 0; i < mcf.npoints && n < want; i++) {
		unsigned s = mcf.ring[(lo + i) % mcf.npoints].server;
		if ((seen & (1u << s)) || !(allowed & (1u << s)))
			continue;
		seen |= 1u << s;
		out[n++] = s;
	}
	return n;
}

static uint32_t live_mask(void)
{
	uint32_t m = 0;
	for (unsigned s = 0; s < mcf.n; s++)
		if (!mcf.s[s].dead)
			m |= 1u << s;
	return m;
}

static size_t key_of(uint32_t proc, uint32_t slot, char *key)
{
	struct fmt f;
	fmt_init(&f, key, MCF_KEY_MAX);
	fmt_str(&f, "fltrace:");
	fmt_str(&f, mcf.run);
	fmt_char(&f, ':');
	char p[9];
	for (int i = 0; i < 8; i++)
		p[i] = "0123456789abcdef"[(proc >> (28 - 4 * i)) & 15];
	p[8] = 0;
	fmt_str(&f, p);
	fmt_char(&f, ':');
	fmt_hex(&f, slot);
	return fmt_len(&f);
}

/* ---- sealing ---- */

static void ad_of(const char *key, size_t klen, uint64_t ver, unsigned char *ad)
{
	memcpy(ad, key, klen);
	memcpy(ad + klen, &ver, sizeof(ver));
}

static void mcf_seal(struct mcf_ns *ns, unsigned char *item, const void *page, const char *key, size_t klen,
		     uint64_t ver)
{
	unsigned char ad[MCF_KEY_MAX + 8];
	uint64_t t0 = rt_mono_ns();
	ad_of(key, klen, ver, ad);
	memset(item, 0, MCF_NONCE);
	uint64_t nonce = ns->nonce++;
	memcpy(item, &nonce, sizeof(nonce));
	if (mcf.gcm)
		crypto_aead_aes256gcm_encrypt(item + MCF_NONCE, NULL, page, MCF_PAGE, ad, klen + 8, NULL, item, ns->key);
	else
		crypto_aead_xchacha20poly1305_ietf_encrypt(item + MCF_NONCE, NULL, page, MCF_PAGE, ad, klen + 8, NULL,
							   item, ns->key);
	rt_time_add(&rt.stats.time.far_seal, t0);
}

static bool mcf_open(const struct mcf_ns *ns, void *page, const unsigned char *item, const char *key, size_t klen,
		     uint64_t ver)
{
	unsigned char ad[MCF_KEY_MAX + 8];
	uint64_t t0 = rt_mono_ns();
	ad_of(key, klen, ver, ad);
	bool ok = (mcf.gcm ? crypto_aead_aes256gcm_decrypt(page, NULL, NULL, item + MCF_NONCE, MCF_ITEM - MCF_NONCE,
							   ad, klen + 8, item, ns->key) :
		   crypto_aead_xchacha20poly1305_ietf_decrypt(page, NULL, NULL, item + MCF_NONCE, MCF_ITEM - MCF_NONCE,
							      ad, klen + 8, item, ns->key)) == 0;
	rt_time_add(&rt.stats.time.far_seal, t0);
	return ok;
}

static void ns_make(struct mcf_ns *ns)
{
	randombytes_buf(&ns->proc, sizeof(ns->proc));
	randombytes_buf(ns->key, sizeof(ns->key));
	ns->nonce = 0;
}

/* ---- failures, in words ---- */

/* Keeps the failure for far.c's message: "server <name> <what>[<num><tail>]" (no server: just what). */
static int mcf_fail(int err, int status, const char *todo, const char *server, const char *what, uint64_t num,
		    const char *tail)
{
	struct fmt f;
	fmt_init(&f, mcf.why, sizeof(mcf.why));
	if (server) {
		fmt_str(&f, "server ");
		fmt_str(&f, server);
		fmt_char(&f, ' ');
	}
	fmt_str(&f, what);
	if (tail) {
		fmt_u64(&f, num);
		fmt_str(&f, tail);
	}
	mcf.todo = todo;
	mcf.status = status;
	return err;
}

static void mcf_fail_append(const char *s)
{
	size_t n = strlen(mcf.why), k = strlen(s);
	if (n + k < sizeof(mcf.why))
		memcpy(mcf.why + n, s, k + 1);
}

/* Pages kept only on servers given up: lost. */
static uint64_t pages_lost(void)
{
	uint64_t lost = 0;
	for (uint64_t slot = 0; slot < mcf.hi; slot++) {
		lost += mcf.ver[slot] && !(mcf.where[slot] & live_mask());
	}
	return lost;
}

/* Server s failed for good: given up. Its pages live on where they have replicas; if some had
 * none, the run cannot go on (the failure names the server and how many). */
static int server_lost(unsigned s, int err)
{
	mcf.s[s].dead = true;
	atomic_fetch_add(&rt.stats.far_servers_lost, 1);
	for (unsigned l = 0; l < MCF_LANES; l++)
		lane_close(&mcf.s[s].lane[l]);
	uint64_t lost = pages_lost();
	const char *name = mcf.s[s].addr.name, *how = mc_conn_strerror(err);
	char what[160];
	struct fmt f;
	fmt_init(&f, what, sizeof(what));
	fmt_str(&f, how);
	if (lost) {
		fmt_str(&f, "; evicted pages kept only there, now lost: ");
		return mcf_fail(-EHOSTDOWN, FLTRACE_EXIT_FAR_LOST, "keep every server up for the whole run, or run "
				"with --far-replicas 2", name, what, lost, "");
	}
	unsigned live = 0;
	for (unsigned i = 0; i < mcf.n; i++)
		live += !mcf.s[i].dead;
	if (!live) {
		fmt_str(&f, "; no server is left");
		return mcf_fail(-EHOSTDOWN, FLTRACE_EXIT_FAR_LOST, "keep the servers up for the whole run", name, what,
				0, NULL);
	}
	char note[256];
	fmt_init(&f, note, sizeof(note));
	fmt_str(&f, "note: far memory: server ");
	fmt_str(&f, name);
	fmt_char(&f, ' ');
	fmt_str(&f, how);
	fmt_str(&f, "; its pages are read from their replicas from now on");
	rt_log(note);
	return 0;
}

/* ---- connections ---- */

static int conn_open(struct mcf_server *s, struct mcf_lane *l)
{
	uint64_t deadline = mc_deadline(MCF_IO_MS);
	int fd = mc_connect(&s->addr, deadline);
	if (fd < 0)
		return fd;
	fd = rt_fd_own(fd); /* in the private table (or, in a fork child's window, kept by its keeper) */
	int err = mcf.auth ? mc_sasl_plain(fd, mcf.user, mcf.password, deadline) : 0;
	if (err) {
		rt_fd_close(fd);
		return err;
	}
	l->fd = fd;
	return 0;
}

/* Sends what was built on lane l of s, once more on a new connection if the first fails. */
static int conn_send(struct mcf_server *s, struct mcf_lane *l)
{
	for (int attempt = 0;; attempt++) {
		int err = l->fd < 0 ? conn_open(s, l) : 0;
		if (!err)
			err = mc_send(l->fd, l->buf, l->len, mc_deadline(MCF_IO_MS));
		if (!err || attempt == 1 || err == -EACCES)
			return err;
		lane_close(l);
	}
}

/* ---- writing pages ---- */

static void buf_add_page(struct mcf_ns *ns, struct mcf_lane *l, uint32_t opaque, const char *key, size_t klen,
			 const unsigned char *sealed, const void *page, uint64_t ver)
{
	char *p = l->buf + l->len;
	size_t n = mc_request(p, MC_SETQ, opaque, key, (uint16_t)klen, MCF_ITEM);
	if (sealed)
		memcpy(p + n, sealed, MCF_ITEM);
	else
		mcf_seal(ns, (unsigned char *)p + n, page, key, klen, ver);
	l->len += n + MCF_ITEM;
}

/* The round's request on lane `lane` of s starts with its slots' queued deletes (quiet: answered
 * only on failure), so that a slot freed and written again is deleted before its new page is set. */
static void buf_add_dels(struct mcf_server *s, unsigned lane)
{
	struct mcf_lane *l = &s->lane[lane];
	l->len = 0;
	if (s->dead)
		return;
	for (unsigned i = 0; i < s->ndels; i++) {
		if (slot_lane(s->dels[i]) != lane)
			continue;
		char key[MCF_KEY_MAX];
		size_t klen = key_of(mcf.ns.proc, s->dels[i], key);
		l->len += mc_request(l->buf + l->len, MC_DELETEQ, MCF_DEL_OPAQUE, key, (uint16_t)klen, 0);
	}
}

/* Reads the answers on l to a pipeline of SETQs ended by a NOOP: only failures answer before it. */
static int put_answers(struct mcf_lane *l, uint16_t *status)
{
	uint64_t deadline = mc_deadline(MCF_IO_MS);
	*status = MC_OK;
	for (;;) {
		struct mc_response r;
		int err = mc_recv_response(l->fd, &r, deadline);
		if (!err)
			err = mc_skip(l->fd, r.bodylen, deadline);
		if (err)
			return err;
		if (r.opcode == MC_NOOP && r.opaque == MCF_NOOP_OPAQUE)
			return 0;
		/* A delete that found nothing (a server restarted empty): no page needed it. */
		if (r.status != MC_OK && *status == MC_OK && r.opaque != MCF_DEL_OPAQUE)
			*status = r.status;
	}
}

/* The n pages at `pages` (staging slots the eviction just moved them to) in mcf.plain, with one
 * process_vm_readv: the kernel reads them through its own mapping. Read here, each slot's first
 * touch costs a page-table fill in the hypervisor on these VMs (5.7 us per page median against
 * 1.0 us copied so, measured in fillscan's eviction rounds); the seal then reads a warm buffer.
 * Where the call is refused (a seccomp filter), the pages are sealed where they are. */
static const unsigned char *put_source(const unsigned char *pages, unsigned n)
{
	size_t len = (size_t)n * MCF_PAGE;
	struct iovec to = { mcf.plain, len }, from = { (void *)pages, len };
	long got = syscall(SYS_process_vm_readv, (int)syscall(SYS_getpid), &to, 1, &from, 1, 0);
	return got == (long)len ? mcf.plain : pages;
}

/* Lane `lane`'s share of the round (its slots' deletes, then its pages, sealed once each and written
 * to every live server that keeps them), built and sent to each server: -1 if every send went, else
 * the server whose send failed (*err). Sent before the next lane is sealed, it is stored meanwhile. */
static int put_lane(unsigned lane, const uint32_t *slots, const unsigned char *pages, const uint64_t *vers, unsigned n,
		    struct mcf_ns *ns, uint16_t *where, int *err)
{
	for (unsigned s = 0; s < mcf.n; s++)
		buf_add_dels(&mcf.s[s], lane);
	for (unsigned i = 0; i < n; i++) {
		if (slot_lane(slots[i]) != lane)
			continue;
		char key[MCF_KEY_MAX];
		size_t klen = key_of(ns->proc, slots[i], key);
		unsigned route[MC_SERVERS_MAX], k = ring_route(key, klen, live_mask(), mcf.replicas, route);
		if (!k) {
			*err = mcf_fail(-EHOSTDOWN, FLTRACE_EXIT_FAR_LOST, "keep the servers up for the whole run", NULL,
					"no server is left to keep evicted pages", 0, NULL);
			return -2;
		}
		struct mcf_lane *first = &mcf.s[route[0]].lane[lane];
		const unsigned char *sealed = (unsigned char *)first->buf + first->len + (MC_HDR + 8 + klen);
		buf_add_page(ns, first, i, key, klen, NULL, pages + (size_t)i * MCF_PAGE, vers[i]);
		where[slots[i]] = (uint16_t)(1u << route[0]);
		for (unsigned r = 1; r < k; r++) {
			buf_add_page(ns, &mcf.s[route[r]].lane[lane], i, key, klen, sealed, NULL, 0);
			where[slots[i]] |= (uint16_t)(1u << route[r]);
		}
	}
	for (unsigned s = 0; s < mcf.n; s++) {
		struct mcf_lane *l = &mcf.s[s].lane[lane];
		if (!l->len)
			continue;
		l->len += mc_request(l->buf + l->len, MC_NOOP, MCF_NOOP_OPAQUE, NULL, 0, 0);
		atomic_fetch_add(&rt.stats.far_put_rounds, 1);
		if ((*err = conn_send(&mcf.s[s], l)))
			return (int)s;
	}
	return -1;
}

/* Every server's answers on every lane that carried a request: -1 if all stored, else the server
 * that failed (*err; -ENOSPC: it refused a page, and the run stops). */
static int put_answers_all(int *err)
{
	for (unsigned lane = 0; lane < MCF_LANES; lane++)
		for (unsigned s = 0; s < mcf.n; s++) {
			uint16_t status;
			if (!mcf.s[s].lane[lane].len)
				continue;
			if ((*err = put_answers(&mcf.s[s].lane[lane], &status)))
				return (int)s;
			if (status != MC_OK) {
				mcf_fail(-ENOSPC, FLTRACE_EXIT_RUNTIME, status == MC_ENOMEM ? "give it more memory "
					 "(memcached -m), add servers, or run with a larger -L" : "check that server",
					 mcf.s[s].addr.name, "refused to store an evicted page: ", 0, NULL);
				mcf_fail_append(mc_status_str(status));
				*err = -ENOSPC;
				return (int)s;
			}
		}
	return -1;
}

/* The pages `pages` (page i for slots[i]) under namespace proc, each with version vers[i], sealed once
 * and written to their live servers: one pipelined request per server and lane. A server that fails
 * is given up (server_lost) and the batch written again without it. */
static int put_batch(const uint32_t *slots, const unsigned char *pages, const uint64_t *vers, unsigned n,
		     struct mcf_ns *ns, uint16_t *where)
{
	if (pages != mcf.pages)
		pages = put_source(pages, n);
	for (unsigned round = 0; round <= mcf.n; round++) {
		int err = 0, bad = -1;
		for (unsigned s = 0; s < mcf.n; s++)
			for (unsigned lane = 0; lane < MCF_LANES; lane++)
				mcf.s[s].lane[lane].len = 0;
		for (unsigned lane = 0; lane < MCF_LANES && bad < 0; lane++)
			bad = put_lane(lane, slots, pages, vers, n, ns, where, &err);
		if (bad == -2)
			return err;
		if (bad < 0)
			bad = put_answers_all(&err);
		if (bad < 0) {
			for (unsigned s = 0; s < mcf.n; s++)
				mcf.s[s].ndels = 0;
			return 0;
		}
		if (err == -ENOSPC)
			return err;
		/* The other servers' answers to this round are not read: their connections start anew. */
		for (unsigned s = 0; s < mcf.n; s++)
			for (unsigned lane = 0; lane < MCF_LANES; lane++)
				if ((int)s != bad && mcf.s[s].lane[lane].len)
					lane_close(&mcf.s[s].lane[lane]);
		if (err == -EACCES)
			return mcf_fail(err, FLTRACE_EXIT_RUNTIME, "give --far-auth a file with the right user:password",
					mcf.s[bad].addr.name, "refused fltrace's SASL authentication (PLAIN)", 0, NULL);
		if ((err = server_lost((unsigned)bad, err)))
			return err;
	}
	return -EIO;
}

/* k <= MCF_BATCH pages (page i, at `pages`, for slots[i]) written with fresh versions. */
static int put_pages(const uint32_t *slots, const void *pages, unsigned k)
{
	uint64_t vers[MCF_BATCH] = { 0 };
	for (unsigned i = 0; i < k; i++)
		vers[i] = ++mcf.next_ver;
	int err = put_batch(slots, pages, vers, k, &mcf.ns, mcf.where);
	if (err)
		return err;
	for (unsigned i = 0; i < k; i++) {
		mcf.ver[slots[i]] = vers[i];
		if (slots[i] + 1 > mcf.hi)
			mcf.hi = slots[i] + 1;
	}
	if (mcf.hi > atomic_load(&mcf.bound))
		atomic_store(&mcf.bound, mcf.hi + MCF_BOUND_MARGIN < mcf.nslots ? mcf.hi + MCF_BOUND_MARGIN : mcf.nslots);
	return 0;
}

static int mcf_put(uint32_t first, const void *pages, unsigned n)
{
	uint32_t slots[MCF_BATCH];
	while (n) {
		unsigned k = n < MCF_BATCH ? n : MCF_BATCH;
		for (unsigned i = 0; i < k; i++)
			slots[i] = first + i;
		int err = put_pages(slots, pages, k);
		if (err)
			return err;
		first += k;
		pages = (const char *)pages + (size_t)k * MCF_PAGE;
		n -= k;
	}
	return 0;
}

/* An eviction round's scattered pages in one request: gathered into mcf.plain from their staging
 * slots by one process_vm_readv (put_source says why), or copied where that is refused. */
static int mcf_put_slots(const uint32_t *slots, unsigned n)
{
	struct iovec from[MCF_BATCH];
	struct iovec to = { mcf.plain, (size_t)n * MCF_PAGE };
	for (unsigned i = 0; i < n; i++)
		from[i] = (struct iovec){ farmem_addr(slots[i]), MCF_PAGE };
	long got = syscall(SYS_process_vm_readv, (int)syscall(SYS_getpid), &to, 1, from, n, 0);
	if (got != (long)to.iov_len)
		for (unsigned i = 0; i < n; i++)
			memcpy(mcf.plain + (size_t)i * MCF_PAGE, farmem_addr(slots[i]), MCF_PAGE);
	return put_pages(slots, mcf.plain, n);
}

/* ---- reading pages ---- */

/* One get round trip: 0 (the item in mcf.item), -ENOENT, -EMSGSIZE (not an item of ours), -errno. */
static int get_item(struct mcf_server *s, const char *key, size_t klen)
{
	struct mcf_lane *l = &s->lane[0];
	int err = l->fd < 0 ? conn_open(s, l) : 0;
	return err ? err : mc_get(l->fd, key, (uint16_t)klen, mcf.item, MCF_ITEM, mc_deadline(MCF_IO_MS));
}

static int refused_page(unsigned s, uint32_t slot)
{
	return mcf_fail(-EBADMSG, FLTRACE_EXIT_FAR_LOST, "someone changed fltrace's items on that server: check "
			"who can reach it (memcached -l), and require SASL (memcached -S, fltrace --far-auth)",
			mcf.s[s].addr.name, "returned the evicted page of slot ", slot, " altered, swapped with another "
			"or replayed from an older version (it failed authentication): refused");
}

/* The page of `slot` under namespace proc (version ver), into page: from its first server that
 * has it, the replicas after (counted). A connection that fails is tried once more, then the server
 * is given up. */
static int get_page(const struct mcf_ns *ns, uint32_t slot, uint64_t ver, uint16_t where, void *page)
{
	char key[MCF_KEY_MAX];
	size_t klen = key_of(ns->proc, slot, key);
	unsigned route[MC_SERVERS_MAX], k = ring_route(key, klen, where, MC_SERVERS_MAX, route);
	int missing = -1;
	for (unsigned i = 0; i < k; i++) {
		struct mcf_server *s = &mcf.s[route[i]];
		if (s->dead)
			continue;
		int err = get_item(s, key, klen);
		if (err && err != -ENOENT && err != -EMSGSIZE && err != -EACCES && err != -EPROTO) {
			lane_close(&s->lane[0]);
			err = get_item(s, key, klen); /* once more, on a new connection */
		}
		if (err == -ENOENT) {
			missing = (int)route[i];
			continue;
		}
		if (err == -EMSGSIZE || (!err && !mcf_open(ns, page, mcf.item, key, klen, ver)))
			return refused_page(route[i], slot);
		if (!err) {
			if (i)
				atomic_fetch_add(&rt.stats.far_replica_gets, 1);
			return 0;
		}
		if (err == -EACCES || err == -EPROTO)
			return mcf_fail(err, FLTRACE_EXIT_FAR_LOST, "check that server", s->addr.name, err == -EACCES ?
					"refused fltrace's authentication when asked for the evicted page of slot " :
					"answered with an error when asked for the evicted page of slot ", slot, "");
		if ((err = server_lost(route[i], err)))
			return err;
	}
	if (missing >= 0)
		return mcf_fail(-ENOENT, FLTRACE_EXIT_FAR_LOST, "start memcached with -M (never evict) and enough -m, "
				"keep it up for the whole run, or run with --far-replicas 2", mcf.s[missing].addr.name,
				"does not have the evicted page of slot ", slot, " (it restarted empty, or dropped or "
				"evicted it): that page is lost");
	return mcf_fail(-EHOSTDOWN, FLTRACE_EXIT_FAR_LOST, "keep the servers up for the whole run", NULL,
			"no server is left that holds the evicted page of slot ", slot, "");
}

static int mcf_get(uint32_t first, void *pages, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t slot = first + i;
		if (slot >= mcf.hi || !mcf.ver[slot])
			return mcf_fail(-ENODATA, FLTRACE_EXIT_RUNTIME, "report this as a bug of fltrace", NULL,
					"a page was asked for from slot ", slot, ", where none was written");
		int err = get_page(&mcf.ns, slot, mcf.ver[slot], mcf.where[slot], (char *)pages + (size_t)i * MCF_PAGE);
		if (err)
			return err;
	}
	return 0;
}

/* Freed slots: their items are deleted with the next eviction round, each on the servers it was
 * written to. A server then keeps only pages still needed, and writes new ones into the memory
 * the deleted items leave (a server writing into memory it never used is 3x slower per page on
 * these VMs: src/runtime/README.md). Past MCF_DELS_MAX queued, an item stays until its slot is
 * written again (the version makes an old one unreadable) or fltrace record clears the run's items. */
static void mcf_free(uint32_t first, unsigned n)
{
	pthread_mutex_lock(&mcf.lock);
	for (unsigned i = 0; i < n && first + i < mcf.nslots; i++) {
		uint32_t slot = first + i;
		if (!mcf.ver[slot])
			continue;
		mcf.ver[slot] = 0;
		for (unsigned s = 0; s < mcf.n; s++)
			if ((mcf.where[slot] >> s & 1) && mcf.s[s].ndels < MCF_DELS_MAX)
				mcf.s[s].dels[mcf.s[s].ndels++] = slot;
	}
	pthread_mutex_unlock(&mcf.lock);
}

/* ---- fork: the child's own copy of the far pages, under a namespace of its own ---- */

static int fork_copy(void)
{
	uint32_t slots[MCF_BATCH];
	uint64_t vers[MCF_BATCH] = { 0 };
	unsigned k = 0;
	ns_make(&mcf.child); /* a namespace and a key of the child's own */
	for (uint64_t slot = 0; slot <= mcf.hi; slot++) {
		if (k == MCF_BATCH || (slot == mcf.hi && k)) {
			int err = put_batch(slots, mcf.pages, vers, k, &mcf.child, mcf.child_where);
			if (err)
				return err;
			k = 0;
		}
		if (slot == mcf.hi || !mcf.ver[slot])
			continue;
		int err = get_page(&mcf.ns, (uint32_t)slot, mcf.ver[slot], mcf.where[slot], mcf.pages + (size_t)k * MCF_PAGE);
		if (err)
			return err;
		slots[k] = (uint32_t)slot;
		vers[k++] = mcf.ver[slot]; /* the same versions: the namespace tells parent from child */
	}
	return 0;
}

/* In the child: the parent's connections are not in its fd table; it connects at first use (in the
 * window before its runtime starts, into the program's table, which its keeper then takes over). */
static void mcf_fork_child(void)
{
	pthread_mutex_init(&mcf.lock, NULL);
	for (unsigned s = 0; s < mcf.n; s++) {
		for (unsigned l = 0; l < MCF_LANES; l++)
			mcf.s[s].lane[l].fd = -1;
		mcf.s[s].ndels = 0; /* the parent's items: the parent deletes them */
	}
	mcf.ns = mcf.child;
	uint16_t *w = mcf.where; /* the copies' servers are the child's; its own table is free for its forks */
	mcf.where = mcf.child_where;
	mcf.child_where = w;
}

/* ---- every call on a thread of the private fd table, one at a time ---- */

enum mcf_op { OP_PUT, OP_PUT_SLOTS, OP_GET, OP_FORK };
struct mcf_call {
	enum mcf_op op;
	uint32_t first;
	unsigned n;
	const void *in;
	void *out;
};

static int mcf_run(void *arg)
{
	struct mcf_call *c = arg;
	lock_order_take(LOCK_FAR_NET);
	pthread_mutex_lock(&mcf.lock);
	int err = c->op == OP_PUT ? mcf_put(c->first, c->in, c->n) :
		  c->op == OP_PUT_SLOTS ? mcf_put_slots(c->in, c->n) :
		  c->op == OP_GET ? mcf_get(c->first, c->out, c->n) : fork_copy();
	pthread_mutex_unlock(&mcf.lock);
	lock_order_drop(LOCK_FAR_NET);
	return err;
}

/* A program thread's call (a fork, an eviction it makes) goes to the fd keeper: the sockets are in
 * the private table. */
static int mcf_call(enum mcf_op op, uint32_t first, const void *in, void *out, unsigned n)
{
	struct mcf_call c = { .op = op, .first = first, .n = n, .in = in, .out = out };
	return fdtable_call(mcf_run, &c);
}

static int put_call(uint32_t first, const void *pages, unsigned n)
{
	return mcf_call(OP_PUT, first, pages, NULL, n);
}

static int put_slots_call(const uint32_t *slots, unsigned n)
{
	return mcf_call(OP_PUT_SLOTS, 0, slots, NULL, n);
}

static int get_call(uint32_t first, void *pages, unsigned n)
{
	return mcf_call(OP_GET, first, NULL, pages, n);
}

static int fork_call(void)
{
	return mcf_call(OP_FORK, 0, NULL, NULL, 0);
}

/* ---- start ---- */

static int read_auth(const char *path)
{
	char buf[300];
	size_t n = rt_read_file(path, buf, sizeof(buf) - 1);
	buf[n] = 0;
	buf[strcspn(buf, "\r\n")] = 0;
	char *colon = strchr(buf, ':');
	if (!n || !colon || colon == buf || (size_t)(colon - buf) >= sizeof(mcf.user) ||
	    strlen(colon + 1) >= sizeof(mcf.password))
		return mcf_fail(-EINVAL, FLTRACE_EXIT_RUNTIME, "give --far-auth a readable file holding one line "
				"user:password", NULL, "cannot read user:password from the --far-auth file", 0, NULL);
	*colon = 0;
	memcpy(mcf.user, buf, (size_t)(colon - buf) + 1);
	memcpy(mcf.password, colon + 1, strlen(colon + 1) + 1);
	mcf.auth = true;
	return 0;
}

static int mcf_init(const char *arg)
{
	struct mc_addr addrs[MC_SERVERS_MAX];
	char bad[MC_NAME_MAX];
	mcf.why[0] = 0;
	mcf.status = FLTRACE_EXIT_RUNTIME;
	if (rt.page_size != MCF_PAGE || sodium_init() < 0)
		return mcf_fail(-EINVAL, FLTRACE_EXIT_RUNTIME, "use --far mem or file:<dir>", NULL, "the memcached "
				"backend needs 4 KiB pages and a working libsodium", 0, NULL);
	if (mc_list_parse(arg ? arg : "", addrs, MC_SERVERS_MAX, &mcf.n, bad, sizeof(bad)) < 0)
		return mcf_fail(-EINVAL, FLTRACE_EXIT_RUNTIME, "give numeric addresses, e.g. 127.0.0.1:11211 "
				"(fltrace record resolves names)", NULL, "not a list of numeric host:port addresses", 0, NULL);
	mcf.replicas = rt.cfg.far_replicas ? rt.cfg.far_replicas : 1;
	if (mcf.replicas > mcf.n)
		return mcf_fail(-EINVAL, FLTRACE_EXIT_RUNTIME, "give --far-replicas at most the number of servers",
				NULL, "more replicas than servers", 0, NULL);
	if (rt.cfg.far_auth && read_auth(rt.cfg.far_auth) < 0)
		return -EINVAL;
	if (rt.cfg.far_run)
		memcpy(mcf.run, rt.cfg.far_run, 16);
	else
		for (int i = 0; i < 16; i++)
			mcf.run[i] = "0123456789abcdef"[randombytes_uniform(16)];
	mcf.gcm = crypto_aead_aes256gcm_is_available();
	ns_make(&mcf.ns);
	mcf.nslots = farmem_slots();
	mcf.ver = rt_map(mcf.nslots * sizeof(uint64_t));
	mcf.where = rt_map(mcf.nslots * sizeof(uint16_t));
	mcf.child_where = rt_map(mcf.nslots * sizeof(uint16_t));
	mcf.item = rt_map(MCF_ITEM);
	mcf.pages = rt_map((size_t)MCF_BATCH * MCF_PAGE);
	mcf.plain = rt_map((size_t)MCF_BATCH * MCF_PAGE);
	if (!mcf.ver || !mcf.where || !mcf.child_where || !mcf.item || !mcf.pages || !mcf.plain)
		return -ENOMEM;
	for (unsigned s = 0; s < mcf.n; s++) {
		struct mcf_server *sv = &mcf.s[s];
		sv->addr = addrs[s];
		for (unsigned l = 0; l < MCF_LANES; l++) {
			sv->lane[l].fd = -1;
			/* a whole round may fall on one lane (scattered slots of one parity) */
			sv->lane[l].buf = rt_map((size_t)MCF_BATCH * MCF_REQ_MAX + MC_HDR +
						 MCF_DELS_MAX * (MC_HDR + MCF_KEY_MAX));
			if (!sv->lane[l].buf)
				return -ENOMEM;
		}
		sv->dels = rt_map(MCF_DELS_MAX * sizeof(uint32_t));
		if (!sv->dels)
			return -ENOMEM;
		/* Reachable now on both connections (a server that takes one but refuses the second,
		 * memcached -c, would be given up at the first eviction), or the run does not start. */
		int err = 0;
		for (unsigned l = 0; l < MCF_LANES && !err; l++)
			err = conn_open(sv, &sv->lane[l]);
		if (err)
			return mcf_fail(err, FLTRACE_EXIT_RUNTIME, err == -EACCES ? "give --far-auth a file with the "
					"right user:password" : "start it, or give servers that are up", sv->addr.name,
					err == -EACCES ? "refused fltrace's SASL authentication" : mc_conn_strerror(err), 0, NULL);
	}
	ring_build();
	atomic_store(&mcf.bound, MCF_BOUND_MARGIN < mcf.nslots ? MCF_BOUND_MARGIN : mcf.nslots);
	return 0;
}

static const char *mcf_describe(void)
{
	struct fmt f;
	fmt_init(&f, mcf.desc, sizeof(mcf.desc));
	fmt_str(&f, "memcached (");
	fmt_u64(&f, mcf.n);
	fmt_str(&f, mcf.n == 1 ? " server)" : " servers)");
	return mcf.desc;
}

static void mcf_keys(uint64_t *ns, uint64_t *slots)
{
	*ns = mcf.ns.proc;
	*slots = atomic_load(&mcf.bound);
}

static int mcf_failure(int err, const char **why, const char **todo)
{
	if (!mcf.why[0])
		mcf_fail(err, FLTRACE_EXIT_RUNTIME, "check the memory servers", NULL, strerror(-err), 0, NULL);
	*why = mcf.why;
	*todo = mcf.todo;
	return mcf.status;
}

const struct far_backend far_memcached = {
	.init = mcf_init,
	.put = put_call,
	.put_slots = put_slots_call,
	.get = get_call,
	.free = mcf_free,
	.fork_prepare = fork_call,
	.fork_child = mcf_fork_child,
	.describe = mcf_describe,
	.failure = mcf_failure,
	.keys = mcf_keys,
};
