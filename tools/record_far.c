/* `fltrace record --far memcached:...`: the server list resolved to numeric addresses, the servers
 * checked before the command starts, and the run's items cleared from them after it ends. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <dirent.h>

#include <fltrace/memcache.h>
#include <fltrace/statsline.h>

#include "cli.h"
#include "record.h"

#define FAR_CHECK_MS (o->far_timeout_ms ? o->far_timeout_ms : FLTRACE_DEFAULT_FAR_TIMEOUT_MS)
/* What memcached holds for one far page: the item (the sealed page of 4,136 bytes, a key of ~42,
 * its header) in the slab class it falls in (chunk sizes grow by 1.25x: 4,544 bytes here). */
#define FAR_ITEM_BYTES 4544ull
#define FAR_CLEAR_MS 60000

/* --far memcached:<host:port,...>: every name resolved now (the runtime only takes numbers). */
int record_parse_far_servers(const char *list, struct record_opts *o)
{
	char out[sizeof(o->far_dir)] = "";
	size_t used = 0;
	unsigned n = 0;
	for (const char *p = list;; n++) {
		size_t len = strcspn(p, ",");
		char host[MC_NAME_MAX], num[INET6_ADDRSTRLEN];
		unsigned port;
		if (mc_split(p, len, host, sizeof(host), &port) < 0)
			return cli_error(CLI_EXIT_USAGE, "--far", "'%.*s' in '%s' is not host:port; give memcached:"
					 "<host:port,...>, e.g. memcached:10.0.0.2:11211,10.0.0.3:11211 ([v6]:port "
					 "for IPv6)", (int)len, p, list);
		if (n == MC_SERVERS_MAX)
			return cli_error(CLI_EXIT_USAGE, "--far", "more than %d servers in '%s'; give at most %d",
					 MC_SERVERS_MAX, list, MC_SERVERS_MAX);
		struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
		int gerr = getaddrinfo(host, NULL, &hints, &ai);
		if (gerr)
			return cli_error(CLI_EXIT_USAGE, "--far", "cannot resolve '%s' (%s); give a reachable "
					 "host name or address", host, gai_strerror(gerr));
		const void *a = ai->ai_family == AF_INET ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr :
			(const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		inet_ntop(ai->ai_family, a, num, sizeof(num));
		int w = snprintf(out + used, sizeof(out) - used, ai->ai_family == AF_INET ? "%s%s:%u" : "%s[%s]:%u",
				 n ? "," : "", num, port);
		freeaddrinfo(ai);
		if (w < 0 || (size_t)w >= sizeof(out) - used)
			return cli_error(CLI_EXIT_USAGE, "--far", "the server list '%s' is too long; give fewer "
					 "servers", list);
		used += (size_t)w;
		if (!p[len])
			break;
		p += len + 1;
	}
	struct mc_addr v[MC_SERVERS_MAX];
	char bad[MC_NAME_MAX];
	if (mc_list_parse(out, v, MC_SERVERS_MAX, &n, bad, sizeof(bad)) == -EEXIST)
		return cli_error(CLI_EXIT_USAGE, "--far", "'%s' is in the list twice (as %s); give each server "
				 "once", list, bad);
	memcpy(o->far_dir, out, used + 1);
	return 0;
}

/* ---- before the run ---- */

struct far_stats {
	bool settings;           /* reading "stats settings" (where "evictions" is on or off) */
	bool evictions;          /* stats settings: evictions on */
	unsigned long long limit; /* limit_maxbytes */
	unsigned long long used;  /* bytes */
};

static int far_stat_each(const char *name, const char *value, void *ctx)
{
	struct far_stats *st = ctx;
	if (st->settings && !strcmp(name, "evictions"))
		st->evictions = !strcmp(value, "on");
	else if (!strcmp(name, "limit_maxbytes"))
		st->limit = strtoull(value, NULL, 10);
	else if (!strcmp(name, "bytes"))
		st->used = strtoull(value, NULL, 10);
	return 0;
}

static int far_read_auth(const char *path, char *user, size_t ucap, char *pass, size_t pcap)
{
	char line[300];
	FILE *f = fopen(path, "r");
	if (!f)
		return cli_error(CLI_EXIT_USAGE, "--far-auth", "cannot read '%s' (%s); give a file holding one "
				 "line user:password", path, strerror(errno));
	bool ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	line[ok ? strcspn(line, "\r\n") : 0] = 0;
	char *colon = strchr(line, ':');
	if (!ok || !colon || colon == line || (size_t)(colon - line) >= ucap || strlen(colon + 1) >= pcap)
		return cli_error(CLI_EXIT_USAGE, "--far-auth", "'%s' does not hold user:password on its first "
				 "line; write it so, e.g. fltrace:secret", path);
	*colon = 0;
	snprintf(user, ucap, "%s", line);
	snprintf(pass, pcap, "%s", colon + 1);
	return 0;
}

/* One server: reachable, authenticated if it asks, never evicting, with room for its share. */
static int far_check_server(const struct mc_addr *a, const struct record_opts *o, const char *user,
			    const char *pass, unsigned long long need)
{
	uint64_t deadline = mc_deadline(FAR_CHECK_MS);
	int fd = mc_connect(a, deadline), err = 0;
	if (fd < 0)
		return cli_error(CLI_EXIT_USAGE, "--far", "server %s %s; start it (memcached -M -m <MB> -l <addr> "
				 "-p <port>) or give servers that are up", a->name, mc_conn_strerror(fd));
	if (o->far_auth && (err = mc_sasl_plain(fd, user, pass, deadline)) < 0) {
		mc_close(fd);
		if (err == -EACCES)
			return cli_error(CLI_EXIT_USAGE, "--far-auth", "server %s refused user '%s' (wrong user "
					 "or password); give the user:password its SASL database holds", a->name, user);
		return cli_error(CLI_EXIT_USAGE, "--far-auth", "server %s cannot authenticate with SASL PLAIN (%s); "
				 "start it with -S and a SASL configuration offering PLAIN, or leave --far-auth out",
				 a->name, err == -EPROTONOSUPPORT ? "it has no SASL" : mc_conn_strerror(err));
	}
	struct far_stats st = { .settings = true };
	if (!(err = mc_ping(fd, deadline)))
		err = mc_stats(fd, "settings", far_stat_each, &st, deadline);
	st.settings = false;
	if (!err)
		err = mc_stats(fd, NULL, far_stat_each, &st, deadline);
	mc_close(fd);
	if (err == -EACCES)
		return cli_error(CLI_EXIT_USAGE, "--far", "server %s requires SASL authentication; give --far-auth "
				 "<file> holding user:password", a->name);
	if (err)
		return cli_error(CLI_EXIT_USAGE, "--far", "server %s %s; check that it is a memcached server "
				 "(1.4 or later) and up", a->name, err == -EPROTO ? "does not answer as memcached does" :
				 mc_conn_strerror(err));
	if (st.evictions)
		return cli_error(CLI_EXIT_USAGE, "--far", "server %s evicts items when it is full (started "
				 "without -M), so evicted pages could vanish; start it with memcached -M", a->name);
	if (st.limit < st.used + need)
		return cli_error(CLI_EXIT_USAGE, "--far", "server %s has room for %.1f MB more (-m %llu, %.1f MB "
				 "used), but -M - -L asks up to %.1f MB of it; start it with -m %llu or more, add "
				 "servers, or lower -M", a->name, (double)(st.limit - (st.used < st.limit ? st.used : st.limit)) / 1048576.0,
				 st.limit >> 20, (double)st.used / 1048576.0, (double)need / 1048576.0,
				 (st.used + need + (1 << 20) - 1) >> 20);
	return 0;
}

int record_check_far(struct record_opts *o)
{
	if (o->far != FLTRACE_BACKEND_memcached) {
		if (o->far_replicas > 1)
			return cli_error(CLI_EXIT_USAGE, "--far-replicas", "only the memcached backend keeps replicas; "
					 "give --far memcached:<host:port,...>, or leave --far-replicas out");
		if (o->far_auth)
			return cli_error(CLI_EXIT_USAGE, "--far-auth", "only the memcached backend authenticates; "
					 "give --far memcached:<host:port,...>, or leave --far-auth out");
		return 0;
	}
	struct mc_addr v[MC_SERVERS_MAX];
	unsigned n;
	char bad[MC_NAME_MAX], user[128] = "", pass[128] = "";
	if (mc_list_parse(o->far_dir, v, MC_SERVERS_MAX, &n, bad, sizeof(bad)) < 0)
		return cli_error(CLI_EXIT_USAGE, "--far", "'%s' is not a server list; give memcached:<host:port,...>",
				 o->far_dir);
	unsigned r = o->far_replicas ? (unsigned)o->far_replicas : 1;
	if (r > n)
		return cli_error(CLI_EXIT_USAGE, "--far-replicas", "%u replicas need %u servers, the list has %u; "
				 "give --far-replicas %u or less, or more servers", r, r, n, n);
	if (o->far_auth && far_read_auth(o->far_auth, user, sizeof(user), pass, sizeof(pass)))
		return CLI_EXIT_USAGE;
	/* Each server's share of the far pages -M allows, with room for the hash ring's unevenness. */
	unsigned long long far_pages = (o->maxmem - o->localmem) / 4096 + 1024;
	unsigned long long need = far_pages * r * FAR_ITEM_BYTES / n * 5 / 4;
	for (unsigned i = 0; i < n; i++) {
		int err = far_check_server(&v[i], o, user, pass, need);
		if (err)
			return err;
	}
	/* The run's id: every item of every process of this run starts with it. */
	unsigned char rnd[8];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return cli_error(CLI_EXIT_NOTRACE, "record", "cannot read random bytes (%s); retry", strerror(errno));
	for (int i = 0; i < 8; i++)
		snprintf(o->far_run + 2 * i, 3, "%02x", rnd[i]);
	cli_note("note: far memory on %u server%s, each page on %u; this run's items are keyed fltrace:%s:... "
		 "(cleared when the command ends)", n, n == 1 ? "" : "s", r, o->far_run);
	return 0;
}

/* ---- after the run: the run's items, whatever ended it ---- */

static bool far_line_key(const char *line, const char *prefix, char *key, size_t cap)
{
	/* "key=fltrace%3A<run>%3A... exp=..." : the key URL-encoded */
	if (strncmp(line, "key=", 4))
		return false;
	const char *k = line + 4;
	size_t n = 0;
	for (; *k && *k != ' ' && n + 1 < cap; k++) {
		if (*k == '%' && k[1] && k[2]) {
			char hex[3] = { k[1], k[2], 0 };
			key[n++] = (char)strtol(hex, NULL, 16);
			k += 2;
		} else {
			key[n++] = *k;
		}
	}
	key[n] = 0;
	return !strncmp(key, prefix, strlen(prefix));
}

/* Lists the server's keys (lru_crawler metadump) and deletes those of this run; returns how many,
 * or -errno (-EACCES: the server takes no text commands, as with SASL). */
static long far_clear_server(const struct mc_addr *a, const char *prefix, const struct record_opts *o)
{
	uint64_t deadline = mc_deadline(FAR_CLEAR_MS);
	int fd = mc_connect(a, mc_deadline(FAR_CHECK_MS));
	if (fd < 0)
		return fd;
	static const char dump[] = "lru_crawler metadump all\r\n";
	char *keys = NULL, buf[65536], line[1024], key[256];
	size_t nkeys = 0, cap = 0, ll = 0, klen = strlen(prefix) + 24;
	long err = 0;
	for (int tries = 0; tries < 50; tries++) {
		bool busy = false, done = false;
		if ((err = mc_send(fd, dump, sizeof(dump) - 1, deadline)))
			break;
		size_t at = 0, have = 0;
		while (!done && !err) {
			if (at == have) {
				/* a server silent for --far-timeout is given up; one that sends, up to the deadline */
				uint64_t quiet = mc_deadline(FAR_CHECK_MS);
				long got = mc_recv_some(fd, buf, sizeof(buf), quiet < deadline ? quiet : deadline);
				if (got < 0) {
					err = got;
					break;
				}
				at = 0;
				have = (size_t)got;
			}
			char c = buf[at++];
			if (c != '\n') {
				if (ll + 1 < sizeof(line))
					line[ll++] = c;
				continue;
			}
			line[ll && line[ll - 1] == '\r' ? ll - 1 : ll] = 0;
			ll = 0;
			if (!strcmp(line, "END"))
				done = true;
			else if (!strncmp(line, "BUSY", 4))
				busy = done = true;
			else if (!strncmp(line, "ERROR", 5) || !strncmp(line, "CLIENT_ERROR", 12))
				err = -EACCES;
			else if (far_line_key(line, prefix, key, sizeof(key))) {
				if (nkeys == cap) {
					cap = cap ? 2 * cap : 1024;
					char *nk = realloc(keys, cap * klen);
					if (!nk) {
						err = -ENOMEM;
						break;
					}
					keys = nk;
				}
				snprintf(keys + nkeys++ * klen, klen, "%s", key);
			}
		}
		if (!busy || err)
			break;
		usleep(100000); /* the crawler is busy with another client's dump */
	}
	size_t used = 0;
	for (size_t i = 0; i <= nkeys && !err; i++) {
		if (used && (i == nkeys || used + klen + 20 > sizeof(buf))) {
			err = mc_send(fd, buf, used, deadline);
			used = 0;
		}
		if (i < nkeys)
			used += (size_t)snprintf(buf + used, sizeof(buf) - used, "delete %s noreply\r\n", keys + i * klen);
	}
	/* a last command with a reply: every delete before it is done when it comes */
	if (!err && !(err = mc_send(fd, "version\r\n", 9, deadline)))
		err = mc_recv(fd, buf, 8, deadline); /* "VERSION " */
	free(keys);
	mc_close(fd);
	return err ? err : (long)nkeys;
}

/* A server that takes no text commands (SASL): the keys of every process of the run, from their
 * stats lines (far_ns, far_slots: the process's namespace and a bound on the slots it wrote), are
 * deleted without listing, as quiet deletes in pipelined requests. Returns how many were asked. */
static long far_clear_by_stats(const struct mc_addr *a, const struct record_opts *o)
{
	char user[128] = "", pass[128] = "";
	if (!o->far_auth || far_read_auth(o->far_auth, user, sizeof(user), pass, sizeof(pass)))
		return -EACCES;
	uint64_t deadline = mc_deadline(FAR_CLEAR_MS);
	int fd = mc_connect(a, mc_deadline(FAR_CHECK_MS));
	if (fd < 0)
		return fd;
	long err = mc_sasl_plain(fd, user, pass, deadline), asked = 0, lines = 0;
	DIR *d = err ? NULL : opendir(o->outdir);
	static char buf[1 << 16], line[1 << 16];
	size_t used = 0;
	for (struct dirent *de; d && !err && (de = readdir(d));) {
		if (strncmp(de->d_name, "fltrace-data-stats-", 19))
			continue;
		char path[PATH_MAX + 300];
		snprintf(path, sizeof(path), "%s/%s", o->outdir, de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		line[0] = 0;
		while (fgets(line, sizeof(line), f)) /* the last line */
			;
		fclose(f);
		uint64_t ns, slots;
		if (statsline_get(line, strlen(line), "far_ns", &ns) || statsline_get(line, strlen(line), "far_slots", &slots))
			continue;
		lines++;
		for (uint64_t slot = 0; slot < slots && !err; slot++) {
			char key[64];
			int kl = snprintf(key, sizeof(key), "fltrace:%s:%08llx:%llx", o->far_run, (unsigned long long)ns,
					  (unsigned long long)slot);
			used += mc_request(buf + used, MC_DELETEQ, 0, key, (uint16_t)kl, 0);
			asked++;
			if (used > sizeof(buf) - 128) {
				err = mc_send(fd, buf, used, deadline);
				used = 0;
			}
		}
	}
	if (d)
		closedir(d);
	/* a no-op answered last: every delete before it is done (not-found answers skipped) */
	if (!err) {
		used += mc_request(buf + used, MC_NOOP, 0xffffffffu, NULL, 0, 0);
		err = mc_send(fd, buf, used, deadline);
	}
	for (struct mc_response r; !err;) {
		if ((err = mc_recv_response(fd, &r, deadline)) || (err = mc_skip(fd, r.bodylen, deadline)))
			break;
		if (r.opcode == MC_NOOP)
			break;
	}
	mc_close(fd);
	return err ? err : lines ? asked : -ENOENT;
}

/* What clearing a run's items from the pool did. */
struct far_cleared {
	long items;      /* found and deleted (servers that list their keys) */
	long asked;      /* deletes sent for the keys the run's stats lines name (servers with SASL) */
	unsigned failed; /* servers not cleared: the first of them in `why` */
	char why[MC_NAME_MAX + PATH_MAX + 200];
};

/* One server's items of the run: listed and deleted, again while a pass finds keys (the program's
 * last requests, sent on its own connections just before it ended, may still be in the server's
 * hands while a pass lists: two runs sharing the servers on a busy machine once left one item so,
 * record_remote's remote_shared_leave_nothing, 2026-12-07); where the server lists nothing (SASL),
 * deleted from the stats lines. Returns 0 or -errno. */
static long far_clear_one(const struct mc_addr *a, const char *prefix, const struct record_opts *o,
			  struct far_cleared *c)
{
	long done = far_clear_server(a, prefix, o);
	for (int pass = 1; done > 0 && pass < 4; pass++) {
		c->items += done;
		usleep(10000);
		done = far_clear_server(a, prefix, o);
	}
	if ((done == -EACCES || done == -ECONNRESET) && o->far_auth) {
		done = far_clear_by_stats(a, o);
		c->asked += done > 0 ? done : 0;
	} else if (done > 0) {
		c->items += done;
	}
	return done < 0 ? done : 0;
}

/* `refused_fails`: a server that refuses the connection holds nothing of the run at the end of it
 * (nothing listens there), but is a mistake in the list given to --far-clear. */
static void far_clear_pool(const struct record_opts *o, bool refused_fails, struct far_cleared *c)
{
	struct mc_addr v[MC_SERVERS_MAX];
	unsigned n;
	char bad[MC_NAME_MAX], prefix[64];
	snprintf(prefix, sizeof(prefix), "fltrace:%s:", o->far_run);
	memset(c, 0, sizeof(*c));
	if (mc_list_parse(o->far_dir, v, MC_SERVERS_MAX, &n, bad, sizeof(bad)) < 0)
		n = 0;
	for (unsigned i = 0; i < n; i++) {
		long err = far_clear_one(&v[i], prefix, o, c);
		if (!err || (err == -ECONNREFUSED && !refused_fails))
			continue;
		if (c->failed++)
			continue;
		if (err == -ENOENT)
			snprintf(c->why, sizeof(c->why), "server %s lists no keys (SASL) and %s holds no stats file "
				 "of a process with far memory to name them", v[i].name, o->outdir);
		else
			snprintf(c->why, sizeof(c->why), "server %s: %s%s", v[i].name, mc_conn_strerror((int)err),
				 err == -EACCES && !o->far_auth ? " (it lists no keys without SASL: --far-auth)" : "");
	}
}

void record_clear_far(const struct record_opts *o)
{
	struct far_cleared c;
	if (o->far != FLTRACE_BACKEND_memcached || !o->far_run[0])
		return;
	far_clear_pool(o, false, &c);
	if (c.failed)
		cli_note("note: far memory: the items of this run (keys fltrace:%s:*) could not be cleared from %u "
			 "server%s (%s); 'fltrace record --far memcached:<servers> --far-clear %s' deletes them "
			 "once they answer", o->far_run, c.failed, c.failed == 1 ? "" : "s", c.why, o->far_run);
}

int record_far_clear_only(struct record_opts *o)
{
	if (o->far != FLTRACE_BACKEND_memcached)
		return cli_error(CLI_EXIT_USAGE, "--far-clear", "clears a run's items from memcached servers; give "
				 "the servers with --far memcached:<host:port,...>");
	if (o->cmd_argv[0])
		return cli_error(CLI_EXIT_USAGE, "--far-clear", "runs no command ('%s' given); leave it out, or "
				 "leave --far-clear out to trace it", o->cmd_argv[0]);
	if (strlen(o->far_clear) != 16 || strspn(o->far_clear, "0123456789abcdefABCDEF") != 16)
		return cli_error(CLI_EXIT_USAGE, "--far-clear", "'%s' is not a run id; give the 16 hex digits "
				 "of the note the run printed as it started (its items are keyed fltrace:<id>:...)",
				 o->far_clear);
	for (int i = 0; i < 16; i++)
		o->far_run[i] = (char)tolower((unsigned char)o->far_clear[i]);
	o->far_run[16] = '\0';
	/* Servers with SASL list nothing: the keys come from the run's stats lines in -o's directory. */
	if (!realpath(o->outdir_arg, o->outdir))
		snprintf(o->outdir, sizeof(o->outdir), "%s", o->outdir_arg);
	struct far_cleared c;
	far_clear_pool(o, true, &c);
	if (c.failed)
		return cli_error(CLI_EXIT_FAIL, "--far-clear", "%s%s; check the list (and -o, --far-auth), then "
				 "run it again: what was deleted stays deleted", c.why,
				 c.failed > 1 ? ", and more servers failed" : "");
	if (c.asked)
		cli_note("far memory: %ld item%s of run %s deleted, and %ld deletes sent for the keys its stats "
			 "files name", c.items, c.items == 1 ? "" : "s", o->far_run, c.asked);
	else
		cli_note("far memory: %ld item%s of run %s deleted", c.items, c.items == 1 ? "" : "s", o->far_run);
	return CLI_EXIT_OK;
}
