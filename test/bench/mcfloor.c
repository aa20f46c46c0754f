/* make bench's `remote` floor: what a memcached server costs fltrace per page, measured with the
 * client the runtime uses (src/common/memcache.c) against one server:
 *   get     one 4 KiB item fetched: a round trip (the floor of a remote re-fetch), back to back with
 *           the client of the runtime (mc_recv: polls for the answer); median, and getmean the mean
 *   batched SETQ x 64 + NOOP in one pipelined request, per page
 *   lanes   the same 64 pages as the runtime sends them: two halves on two connections (served by two
 *           of memcached's threads), the second sent after the first, then both answers
 *   single  one SET and its answer per page (a round trip each)
 *   packed  the same 64 pages as 4 items of 16 pages each (not what the runtime does: its floor)
 *   getpacked  one page read out of such an item (the rest of the answer skipped), median
 *   seal / open  the page's AEAD as the runtime does it (libsodium), per page
 * Usage: mcfloor <host:port> <pages> <reps>; prints "name median_us" lines. */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fltrace/memcache.h>

#define ITEM 4136
#define BATCH 64
#define PACK 16

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double median_us(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2] / 1000.0;
}

static int fd, fd2;
static char req[BATCH * (MC_HDR + 8 + 64 + ITEM) + MC_HDR], req2[BATCH * (MC_HDR + 8 + 64 + ITEM) + MC_HDR];

static size_t key(char *k, unsigned i)
{
	return (size_t)snprintf(k, 64, "fltrace:bench:%08x:%x", (unsigned)getpid(), i);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "mcfloor: %s: %s\n", what, strerror(-err));
	exit(1);
}

/* The answers on f up to the noop that ends a pipeline of quiet sets. */
static void lane_wait(int f)
{
	struct mc_response r;
	int err = 0;
	do {
		if (!err)
			err = mc_recv_response(f, &r, mc_deadline(2000));
		if (!err)
			err = mc_skip(f, r.bodylen, mc_deadline(2000));
	} while (!err && r.opcode != MC_NOOP);
	if (err)
		die("setq", err);
}

/* Items [first, first + n) of `per` pages each stored, one pipelined request (noreply sets, a noop)
 * or one round trip each. */
static void put(unsigned first, unsigned n, bool batched, unsigned per)
{
	size_t len = 0;
	char k[64];
	for (unsigned i = 0; i < n; i++) {
		size_t kl = key(k, first + i);
		len += mc_request(req + len, batched ? MC_SETQ : MC_SET, i, k, (uint16_t)kl, per * ITEM);
		memset(req + len, (int)i, per * ITEM);
		len += per * ITEM;
		if (!batched) {
			struct mc_response r;
			int err = mc_send(fd, req, len, mc_deadline(2000));
			if (!err)
				err = mc_recv_response(fd, &r, mc_deadline(2000));
			if (!err)
				err = mc_skip(fd, r.bodylen, mc_deadline(2000));
			if (err || r.status)
				die("set", err ? err : -EIO);
			len = 0;
		}
	}
	if (!batched)
		return;
	len += mc_request(req + len, MC_NOOP, 0xffffffffu, NULL, 0, 0);
	int err = mc_send(fd, req, len, mc_deadline(2000));
	if (err)
		die("setq", err);
	lane_wait(fd);
}

/* Items [first, first + n) of a page each as quiet sets and a noop, sent on f (built in buf). */
static void lane_send(int f, char *buf, unsigned first, unsigned n)
{
	size_t len = 0;
	char k[64];
	for (unsigned i = 0; i < n; i++) {
		size_t kl = key(k, first + i);
		len += mc_request(buf + len, MC_SETQ, i, k, (uint16_t)kl, ITEM);
		memset(buf + len, (int)i, ITEM);
		len += ITEM;
	}
	len += mc_request(buf + len, MC_NOOP, 0xffffffffu, NULL, 0, 0);
	int err = mc_send(f, buf, len, mc_deadline(2000));
	if (err)
		die("setq", err);
}

/* Page `at` of item i (`per` pages): its bytes read, the rest of the answer skipped (MSG_TRUNC). */
static void get_part(unsigned i, unsigned per, unsigned at, unsigned char *page)
{
	char k[64];
	size_t kl = key(k, i), n = mc_request(req, MC_GET, 0, k, (uint16_t)kl, 0);
	struct mc_response r;
	int err = mc_send(fd, req, n, mc_deadline(2000));
	if (!err)
		err = mc_recv_response(fd, &r, mc_deadline(2000));
	if (!err && r.bodylen - r.extlen != per * ITEM)
		err = -EIO;
	if (!err)
		err = mc_skip(fd, r.extlen + (size_t)at * ITEM, mc_deadline(2000));
	if (!err)
		err = mc_recv(fd, page, ITEM, mc_deadline(2000));
	if (!err)
		err = mc_skip(fd, (size_t)(per - 1 - at) * ITEM, mc_deadline(2000));
	if (err)
		die("get", err);
}

/* The runtime's own get (mc_get: one recvmsg for the answer once it is there). */
static void get(unsigned i, unsigned char *item)
{
	char k[64];
	size_t kl = key(k, i);
	int err = mc_get(fd, k, (uint16_t)kl, item, ITEM, mc_deadline(2000));
	if (err)
		die("get", err);
}

int main(int argc, char **argv)
{
	struct mc_addr a;
	unsigned n;
	char bad[64];
	if (argc != 4 || mc_list_parse(argv[1], &a, 1, &n, bad, sizeof(bad)) < 0 || sodium_init() < 0) {
		fprintf(stderr, "usage: mcfloor <ip:port> <pages> <reps>\n");
		return 2;
	}
	unsigned pages = (unsigned)atoi(argv[2]) / BATCH * BATCH, reps = (unsigned)atoi(argv[3]);
	if ((fd = mc_connect(&a, mc_deadline(2000))) < 0)
		die(argv[1], fd);
	if ((fd2 = mc_connect(&a, mc_deadline(2000))) < 0)
		die(argv[1], fd2);
	uint64_t *t = calloc(pages > reps ? pages : reps, sizeof(*t)), *rounds = calloc(reps, sizeof(*rounds));
	unsigned char item[ITEM], page[4096], k[32], ad[56] = { 0 };
	/* per page: batched, then one set each (the same keys, overwritten) */
	for (unsigned r = 0; r < reps; r++) {
		uint64_t t0 = mc_now_ns();
		for (unsigned i = 0; i < pages; i += BATCH)
			put(i, BATCH, true, 1);
		rounds[r] = (mc_now_ns() - t0) / pages;
	}
	printf("batched %.2f\n", median_us(rounds, reps));
	for (unsigned r = 0; r < reps; r++) {
		uint64_t t0 = mc_now_ns();
		for (unsigned i = 0; i < pages; i += BATCH) {
			lane_send(fd, req, i, BATCH / 2);
			lane_send(fd2, req2, i + BATCH / 2, BATCH / 2);
			lane_wait(fd);
			lane_wait(fd2);
		}
		rounds[r] = (mc_now_ns() - t0) / pages;
	}
	printf("lanes %.2f\n", median_us(rounds, reps));
	for (unsigned r = 0; r < reps; r++) {
		uint64_t t0 = mc_now_ns();
		put(0, pages, false, 1);
		rounds[r] = (mc_now_ns() - t0) / pages;
	}
	printf("single %.2f\n", median_us(rounds, reps));
	uint64_t sum = 0;
	for (unsigned i = 0; i < pages; i++) {
		uint64_t t0 = mc_now_ns();
		get(i, item);
		t[i] = mc_now_ns() - t0;
		sum += t[i];
	}
	printf("getmean %.2f\n", sum / 1000.0 / pages);
	printf("get %.2f\n", median_us(t, pages));
	/* Items of PACK pages (a design the runtime does not use: what it would save and cost): 64
	 * pages as BATCH / PACK items per pipelined request, then one page read out of an item. */
	for (unsigned r = 0; r < reps; r++) {
		uint64_t t0 = mc_now_ns();
		for (unsigned i = 0; i < pages; i += BATCH)
			put(i / PACK, BATCH / PACK, true, PACK);
		rounds[r] = (mc_now_ns() - t0) / pages;
	}
	printf("packed %.2f\n", median_us(rounds, reps));
	for (unsigned i = 0; i < pages / PACK; i++) {
		uint64_t t0 = mc_now_ns();
		get_part(i, PACK, i % PACK, item);
		t[i] = mc_now_ns() - t0;
	}
	printf("getpacked %.2f\n", median_us(t, pages / PACK));
	/* the AEAD the runtime picks: AES-256-GCM with AES-NI, else XChaCha20-Poly1305 */
	bool gcm = crypto_aead_aes256gcm_is_available();
	randombytes_buf(k, sizeof(k));
	randombytes_buf(page, sizeof(page));
	memset(item, 0, 24);
	for (unsigned i = 0; i < pages; i++) {
		uint64_t t0 = mc_now_ns();
		item[0] = (unsigned char)i; /* a counted nonce, as the runtime's */
		if (gcm)
			crypto_aead_aes256gcm_encrypt(item + 24, NULL, page, sizeof(page), ad, sizeof(ad), NULL, item, k);
		else
			crypto_aead_xchacha20poly1305_ietf_encrypt(item + 24, NULL, page, sizeof(page), ad, sizeof(ad), NULL,
								   item, k);
		t[i] = mc_now_ns() - t0;
	}
	printf("seal %.2f\n", median_us(t, pages));
	for (unsigned i = 0; i < pages; i++) {
		uint64_t t0 = mc_now_ns();
		if (gcm ? crypto_aead_aes256gcm_decrypt(page, NULL, NULL, item + 24, ITEM - 24, ad, sizeof(ad), item, k) :
			  crypto_aead_xchacha20poly1305_ietf_decrypt(page, NULL, NULL, item + 24, ITEM - 24, ad, sizeof(ad),
								     item, k))
			die("open", -EBADMSG);
		t[i] = mc_now_ns() - t0;
	}
	printf("open %.2f\n", median_us(t, pages));
	printf("aead %s\n", gcm ? "aes256gcm" : "xchacha20poly1305");
	/* the bench's items go: delete each */
	for (unsigned i = 0; i < pages; i++) {
		char kk[64];
		size_t kl = key(kk, i), len = mc_request(req, MC_DELETE, 0, kk, (uint16_t)kl, 0);
		struct mc_response r;
		if (!mc_send(fd, req, len, mc_deadline(2000)) && !mc_recv_response(fd, &r, mc_deadline(2000)))
			mc_skip(fd, r.bodylen, mc_deadline(2000));
	}
	return 0;
}
