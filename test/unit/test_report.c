/* Unit tests of src/analysis (reader, maps, symbolizer, aggregation, CSV) on synthetic traces
 * whose stacks point into this very binary, so file:line answers are known exactly.
 * With "--write DIR" it writes such a trace for the end-to-end tests and prints the answers. */

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/analysis/analysis.h"
#include "../../src/analysis/report.h"
#include "synth_trace.h"

/* ------------------------------------------------------------------ known code sites */
/* Each site returns the line of its call, written on the same line as the call itself. */
__attribute__((noipa)) int synth_leaf(int x) { return x * 3; } static const int synth_leaf_line = __LINE__;

/* ips[0]: return address into synth_site_b (its call of synth_grab), ips[1]: into synth_site_c
 * (its call of synth_site_b). */
__attribute__((noipa)) static void synth_grab(uint64_t *ips)
{
	ips[0] = (uint64_t)__builtin_return_address(0);
}
__attribute__((noipa)) static int synth_site_b(uint64_t *ips)
{
	synth_grab(ips); ips[1] = (uint64_t)__builtin_return_address(0); return __LINE__;
}
__attribute__((noipa)) static int synth_site_c(uint64_t *ips, int *line_b)
{
	*line_b = synth_site_b(ips); return __LINE__;
}

struct synth_sites {
	uint64_t leaf, ret_b, ret_c, getpid_ip, cos_ip;
	int leaf_line, line_b, line_c;
	char exe[PATH_MAX], libc[PATH_MAX], libm[PATH_MAX];
	uint64_t exe_bias, libc_bias;
};

static int synth_bias_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct synth_sites *s = arg;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD)
			continue;
		if (s->leaf >= lo && s->leaf < lo + ph->p_memsz)
			s->exe_bias = info->dlpi_addr;
		if (s->getpid_ip >= lo && s->getpid_ip < lo + ph->p_memsz) {
			s->libc_bias = info->dlpi_addr;
			snprintf(s->libc, sizeof(s->libc), "%s", info->dlpi_name);
		}
	}
	return 0;
}

static void synth_sites_get(struct synth_sites *s)
{
	uint64_t ips[2];
	void *m;

	memset(s, 0, sizeof(*s));
	s->leaf = (uint64_t)(uintptr_t)&synth_leaf;
	s->leaf_line = synth_leaf_line;
	s->line_c = synth_site_c(ips, &s->line_b);
	s->ret_b = ips[0];
	s->ret_c = ips[1];
	s->getpid_ip = (uint64_t)(uintptr_t)&getpid;
	if (!realpath("/proc/self/exe", s->exe))
		s->exe[0] = 0;
	dl_iterate_phdr(synth_bias_cb, s);
	/* A dlopen'd object: its address must resolve through the maps snapshot too. */
	m = dlopen("libm.so.6", RTLD_NOW);
	if (m) {
		Dl_info di;
		s->cos_ip = (uint64_t)(uintptr_t)dlsym(m, "cos");
		if (s->cos_ip && dladdr((void *)(uintptr_t)s->cos_ip, &di) && di.dli_fname)
			snprintf(s->libm, sizeof(s->libm), "%s", di.dli_fname);
	}
}

static int synth_nrefetch = 3;

/* Write the standard synthetic trace of this process; the dlopen'd libm stays loaded until the
 * maps snapshot is taken. Stacks: 0 = leaf<-b<-c, 1 = getpid<-c, 2 = b<-c (syscall), 3 = cos. */
static int synth_write_std(const char *dir, const struct synth_sites *s, uint32_t pid,
			   uint32_t version, const uint8_t *bad_build_id)
{
	char path[PATH_MAX];
	uint64_t st0[3] = { s->leaf, s->ret_b, s->ret_c };
	uint64_t st1[2] = { s->getpid_ip, s->ret_c };
	uint64_t st2[2] = { s->ret_b, s->ret_c };
	uint64_t st3[1] = { s->cos_ip };
	FILE *f;

	snprintf(path, sizeof(path), "%s/fltrace-data-trace-%u-0.bin", dir, pid);
	f = synth_open(path, pid, 0, version, s->exe);
	if (!f)
		return -errno;
	synth_self_maps(f, 0);
	if (bad_build_id)
		synth_object(f, 0, s->exe_bias, bad_build_id, 20, s->exe);
	synth_region(f, 0, 1, 0x10000000, 0x10000, 0x2000, "/data/x,\"y\".db");
	synth_stack(f, 0, 3, st0);
	synth_stack(f, 1, 2, st1);
	synth_stack(f, 2, 2, st2);
	synth_stack(f, 3, s->cos_ip ? 1 : 0, st3);
	/* 5 first-touch writes at leaf, latencies 1..5 us. */
	for (int i = 0; i < 5; i++)
		synth_fault(f, &(struct synth_fault){ .t_ns = 1000000000ull + i, .addr = 0x20000000 +
			    i * 4096, .ip = s->leaf, .stack_id = 0, .latency_ns = 1000 * (i + 1),
			    .flags = FT_FLAG_WRITE | FT_FLAG_ZERO, .kind = FT_KIND_ZERO });
	/* 3 re-fetch reads at leaf (another number for the --diff tests), latencies skewed so that
	 * the median (3 us), the mean (10 us) and the p99 (25 us) differ: 2, 3, 25 us, then 10 us
	 * each for any more (--diff's runs with more re-fetches). */
	static const uint64_t refetch_ns[] = { 2000, 3000, 25000 };
	for (int i = 0; i < synth_nrefetch; i++)
		synth_fault(f, &(struct synth_fault){ .t_ns = 2000000000ull + i, .addr = 0x20000000,
			    .ip = s->leaf, .stack_id = 0, .latency_ns = i < 3 ? refetch_ns[i] : 10000,
			    .kind = FT_KIND_REFETCH });
	/* 2 file faults in getpid (a made-up but well-formed file region). */
	synth_fault(f, &(struct synth_fault){ .t_ns = 3000000000ull, .addr = 0x10001000,
		    .ip = s->getpid_ip, .stack_id = 1, .latency_ns = 20000, .kind = FT_KIND_FILE,
		    .region = 1 });
	synth_fault(f, &(struct synth_fault){ .t_ns = 3000000001ull, .addr = 0x10000000,
		    .ip = s->getpid_ip, .stack_id = 1, .latency_ns = 20000, .kind = FT_KIND_FILE,
		    .region = 1 });
	/* A fault taken inside read(2). */
	synth_fault(f, &(struct synth_fault){ .t_ns = 4000000000ull, .addr = 0x20000000,
		    .ip = s->ret_b, .stack_id = 2, .latency_ns = 7000, .flags = FT_FLAG_WRITE,
		    .kind = FT_KIND_REFETCH, .origin = FT_ORIGIN_SYSCALL, .syscall_nr = 0 });
	/* A fault without a stack. */
	synth_fault(f, &(struct synth_fault){ .t_ns = 5000000000ull, .addr = 0x20001000,
		    .stack_id = FT_NO_STACK, .latency_ns = 3000, .kind = FT_KIND_REFETCH,
		    .status = FT_STACK_NONE });
	if (s->cos_ip)
		synth_fault(f, &(struct synth_fault){ .t_ns = 6000000000ull, .addr = 0x20002000,
			    .ip = s->cos_ip, .stack_id = 3, .latency_ns = 1000,
			    .kind = FT_KIND_REFETCH });
	return synth_close(f) ? -errno : 0;
}

/* ------------------------------------------------------------------ test cases */

static char tmpdir[] = "/tmp/fltrace-unit-report.XXXXXX";
static struct synth_sites sites;

#define CHECK(cond, ...) do { if (!(cond)) { snprintf(why, whylen, __VA_ARGS__); \
	return -1; } } while (0)

static int t_csv_quoting(char *why, size_t whylen)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "plain", "plain" },
		{ "", "" },
		{ "a,b", "\"a,b\"" },
		{ "say \"hi\"", "\"say \"\"hi\"\"\"" },
		{ "two\nlines", "\"two\nlines\"" },
		{ "cr\r", "\"cr\r\"" },
		{ "std::map<int, int>::find(int const&)", "\"std::map<int, int>::find(int const&)\"" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[256] = { 0 };
		FILE *m = fmemopen(buf, sizeof(buf) - 1, "w");
		csv_put(m, cases[i].in);
		fclose(m);
		CHECK(strcmp(buf, cases[i].out) == 0, "'%s' -> '%s', expected '%s'", cases[i].in, buf,
		      cases[i].out);
	}
	return 0;
}

static int t_map_to_vaddr(char *why, size_t whylen)
{
	uint64_t v;
	/* PIE / shared object: first segment at vaddr 0, text at 0x1000 (file 0x1000). */
	struct sym_segment pie[] = { { 0, 0, 0x5a0, 0x5a0, 4 }, { 0x1000, 0x1000, 0x1d00, 0x1d00, 5 },
				     { 0x3df0, 0x2df0, 0x230, 0x238, 6 } };
	/* Non-PIE executable: vaddr 0x400000 at file 0. */
	struct sym_segment exe[] = { { 0x400000, 0, 0x500, 0x500, 4 },
				     { 0x401000, 0x1000, 0x800, 0x800, 5 } };
	/* A library whose first PT_LOAD does not start at file offset 0 nor vaddr 0. */
	struct sym_segment odd[] = { { 0x10200, 0x200, 0x3000, 0x3000, 5 },
				     { 0x24000, 0x4000, 0x100, 0x900, 6 } };

	CHECK(!sym_map_to_vaddr(pie, 3, 0x7f0000001000, 0x1000, "r-xp", 0x7f0000001234, &v) && v == 0x1234,
	      "pie text: %" PRIx64, v);
	CHECK(!sym_map_to_vaddr(pie, 3, 0x7f0000003000, 0x2000, "rw-p", 0x7f0000003e00, &v) && v == 0x3e00,
	      "pie data: %" PRIx64, v);
	CHECK(!sym_map_to_vaddr(exe, 2, 0x401000, 0x1000, NULL, 0x401010, &v) && v == 0x401010,
	      "exec text: %" PRIx64, v);
	CHECK(!sym_map_to_vaddr(odd, 2, 0x7f1234510000, 0, "r-xp", 0x7f1234510300, &v) && v == 0x10300,
	      "odd lib first segment: %" PRIx64, v);
	CHECK(!sym_map_to_vaddr(odd, 2, 0x7f1234524000, 0x4000, "rw-p", 0x7f1234524010, &v) && v == 0x24010,
	      "odd lib second segment: %" PRIx64, v);
	/* A split mapping (mprotect of part of the text): offset is no longer the segment's. */
	CHECK(!sym_map_to_vaddr(pie, 3, 0x7f0000002000, 0x2000, "r-xp", 0x7f0000002010, &v) && v == 0x2010,
	      "split text: %" PRIx64, v);
	CHECK(sym_map_to_vaddr(exe, 2, 0x500000, 0x9000, NULL, 0x500010, &v) == -ENOENT,
	      "outside every segment must fail");
	return 0;
}

/* Symbolize one address of this process through a maps snapshot of itself. */
static int sym_one(uint64_t ip, bool ret, const struct sym_frame **out, struct symbolizer **sp,
		   struct maps_history **mp, const struct ft_object *obj)
{
	char text[1 << 16];
	FILE *f = fopen("/proc/self/maps", "r");
	size_t len = f ? fread(text, 1, sizeof(text), f) : 0;
	int64_t id;

	if (f)
		fclose(f);
	*sp = sym_new();
	*mp = maps_new();
	maps_add_snapshot(*mp, 100, text, len);
	if (obj)
		maps_add_object(*mp, obj);
	id = sym_add(*sp, *mp, ip, 100, ret);
	if (id < 0 || sym_resolve(*sp))
		return -1;
	*out = sym_frame(*sp, id);
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int t_symbolize_pie(char *why, size_t whylen)
{
	const struct sym_frame *f;
	struct symbolizer *s;
	struct maps_history *m;
	char want[64];
	int ret = -1;

	if (sym_one(sites.ret_b, true, &f, &s, &m, NULL))
		goto out;
	snprintf(want, sizeof(want), "test/unit/test_report.c:%d", sites.line_b);
	if (!f->resolved || strcmp(f->lib, sites.exe) || !ends_with(f->code, want) ||
	    strcmp(f->func, "synth_site_b") || f->obj_addr != sites.ret_b - 1 - sites.exe_bias) {
		snprintf(why, whylen, "got %s %s %s %" PRIx64 ", want %s %s synth_site_b %" PRIx64,
			 f->lib, f->code, f->func, f->obj_addr, sites.exe, want,
			 sites.ret_b - 1 - sites.exe_bias);
		goto out;
	}
	ret = 0;
out:
	sym_free(s);
	maps_free(m);
	return ret;
}

static int t_symbolize_leaf_not_adjusted(char *why, size_t whylen)
{
	const struct sym_frame *f;
	struct symbolizer *s;
	struct maps_history *m;
	char want[64];
	int ret = -1;

	/* ips[0] of a user fault is the faulting instruction: no -1, or it lands before it. */
	if (sym_one(sites.leaf, false, &f, &s, &m, NULL))
		goto out;
	snprintf(want, sizeof(want), "test/unit/test_report.c:%d", sites.leaf_line);
	if (!ends_with(f->code, want) || strcmp(f->func, "synth_leaf")) {
		snprintf(why, whylen, "got %s %s, want %s synth_leaf", f->code, f->func, want);
		goto out;
	}
	ret = 0;
out:
	sym_free(s);
	maps_free(m);
	return ret;
}

static int t_symbolize_libc(char *why, size_t whylen)
{
	const struct sym_frame *f;
	struct symbolizer *s;
	struct maps_history *m;
	char libc[PATH_MAX];
	int ret = -1;

	if (!realpath(sites.libc, libc))
		snprintf(libc, sizeof(libc), "%s", sites.libc);
	if (sym_one(sites.getpid_ip, false, &f, &s, &m, NULL))
		goto out;
	if (!f->resolved || strcmp(f->lib, libc) || !strstr(f->func, "getpid") ||
	    f->obj_addr != sites.getpid_ip - sites.libc_bias) {
		snprintf(why, whylen, "got %s %s %" PRIx64 ", want %s getpid %" PRIx64, f->lib,
			 f->func, f->obj_addr, libc, sites.getpid_ip - sites.libc_bias);
		goto out;
	}
	ret = 0;
out:
	sym_free(s);
	maps_free(m);
	return ret;
}

static int t_symbolize_build_id_mismatch(char *why, size_t whylen)
{
	const struct sym_frame *f;
	struct symbolizer *s;
	struct maps_history *m;
	size_t sz = sizeof(struct ft_object) + strlen(sites.exe) + 1;
	struct ft_object *o = calloc(1, ft_rec_size(sz));
	int ret = -1;

	o->hdr.type = FT_REC_OBJECT;
	o->hdr.size = ft_rec_size(sz);
	o->build_id_len = 20;
	memset(o->build_id, 0xab, 20);
	o->path_len = strlen(sites.exe) + 1;
	strcpy(o->path, sites.exe);
	if (sym_one(sites.ret_b, true, &f, &s, &m, o))
		goto out;
	/* A changed binary must never give a line of the new file: object+offset only. */
	const char *base = strrchr(sites.exe, '/') + 1;
	if (f->resolved || strcmp(f->code, "??:?") || strncmp(f->func, base, strlen(base)) ||
	    strncmp(f->func + strlen(base), "+0x", 3) || strcmp(f->lib, sites.exe)) {
		snprintf(why, whylen, "got %s %s %s, want %s %s+0x... ??:?", f->lib, f->func,
			 f->code, sites.exe, base);
		goto out;
	}
	ret = 0;
out:
	free(o);
	sym_free(s);
	maps_free(m);
	return ret;
}

static int t_symbolize_unmapped(char *why, size_t whylen)
{
	const struct sym_frame *f;
	struct symbolizer *s;
	struct maps_history *m;
	int ret = -1;

	if (sym_one(0x10, true, &f, &s, &m, NULL))
		goto out;
	if (f->resolved || strcmp(f->lib, "??") || strcmp(f->code, "??:?")) {
		snprintf(why, whylen, "got %s %s", f->lib, f->code);
		goto out;
	}
	ret = 0;
out:
	sym_free(s);
	maps_free(m);
	return ret;
}

static int t_maps_history(char *why, size_t whylen)
{
	struct maps_history *m = maps_new();
	const char *a = "1000-2000 r-xp 00000000 08:01 12 /lib/a.so\n"
			"5000-6000 rw-p 00000000 00:00 0 \n";
	const char *b = "1000-2000 r-xp 00000000 08:01 13 /lib/b.so\n";
	const struct maps_entry *e;
	int ret = -1;

	maps_add_snapshot(m, 200, b, strlen(b));
	maps_add_snapshot(m, 100, a, strlen(a));
	e = maps_lookup(m, 0x1800, 150);
	if (!e || strcmp(e->path, "/lib/a.so")) {
		snprintf(why, whylen, "t=150 gave %s", e ? e->path : "NULL");
		goto out;
	}
	e = maps_lookup(m, 0x1800, 250);
	if (!e || strcmp(e->path, "/lib/b.so")) {
		snprintf(why, whylen, "t=250 gave %s", e ? e->path : "NULL");
		goto out;
	}
	/* Before any snapshot: the earliest one that holds it. */
	e = maps_lookup(m, 0x1800, 50);
	if (!e || strcmp(e->path, "/lib/a.so")) {
		snprintf(why, whylen, "t=50 gave %s", e ? e->path : "NULL");
		goto out;
	}
	/* Only in the older snapshot: still found after it was unmapped. */
	e = maps_lookup(m, 0x5800, 250);
	if (!e || e->path[0] || e->start != 0x5000) {
		snprintf(why, whylen, "anon at t=250 gave %s", e ? e->path : "NULL");
		goto out;
	}
	if (maps_lookup(m, 0x9000, 250)) {
		snprintf(why, whylen, "unmapped address found");
		goto out;
	}
	ret = 0;
out:
	maps_free(m);
	return ret;
}

static int load(const char *path, struct an_process **p, char *err, size_t len)
{
	return an_process_load(path, NULL, NULL, NULL, p, err, len);
}

static int t_reader_std(char *why, size_t whylen)
{
	char dir[PATH_MAX], path[PATH_MAX + 64], err[512];
	struct an_process *p;
	struct agg_row **rows;
	size_t n;

	snprintf(dir, sizeof(dir), "%s/std", tmpdir);
	mkdir(dir, 0755);
	CHECK(synth_write_std(dir, &sites, 77, FT_VERSION, NULL) == 0, "write");
	snprintf(path, sizeof(path), "%s/fltrace-data-trace-77-0.bin", dir);
	CHECK(load(path, &p, err, sizeof(err)) == 0, "load: %s", err);
	n = agg_rows(p->rows, &rows);
	CHECK(p->warning[0] == 0, "warning on a good file: %s", p->warning);
	CHECK(p->faults_seen == (sites.cos_ip ? 13u : 12u), "faults %" PRIu64, p->faults_seen);
	CHECK(n >= 5 && rows[0]->count == 5 && rows[0]->flags == 0x21 && rows[1]->count == 3,
	      "rows %zu, first %" PRIu64, n, n ? rows[0]->count : 0);
	CHECK(rows[0]->lat_total_ns == 15000 && lat_percentile(rows[0]->lat, 0.99) == 5000,
	      "latency %" PRIu64, rows[0]->lat_total_ns);
	CHECK(rows[2]->file && rows[2]->off_lo == 0x2000 && rows[2]->off_hi == 0x4000,
	      "file offsets %" PRIx64 "-%" PRIx64, rows[2]->off_lo, rows[2]->off_hi);
	an_process_free(p);
	return 0;
}

/* Cut the std trace at `keep` bytes, or corrupt it at its last record. */
static int broken_trace(const char *name, long keep, int corrupt, uint32_t version,
			struct an_process **p, char *err, size_t len, int *ret)
{
	char dir[PATH_MAX], path[PATH_MAX + 64];
	FILE *f;
	long size;

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
	mkdir(dir, 0755);
	if (synth_write_std(dir, &sites, 78, version, NULL))
		return -1;
	snprintf(path, sizeof(path), "%s/fltrace-data-trace-78-0.bin", dir);
	f = fopen(path, "r+");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	if (corrupt) {
		/* Rewrite the header of the last fault record (its size before the end). */
		uint32_t rsize = sizeof(struct ft_fault) + ft_check_size(version);
		struct ft_rec_hdr h = { .type = corrupt == 1 ? FT_REC_FAULT : 99,
					.size = corrupt == 1 ? 61 : rsize };
		fseek(f, size - (long)rsize, SEEK_SET);
		fwrite(&h, sizeof(h), 1, f);
	} else if (keep < 0) {
		/* A zero tail, as after SIGKILL. */
		static const char zeros[4096];
		fwrite(zeros, 1, sizeof(zeros), f);
	}
	fclose(f);
	if (!corrupt && keep > 0 && truncate(path, size - keep))
		return -1;
	*ret = load(path, p, err, len);
	return 0;
}

static int t_reader_truncated(char *why, size_t whylen)
{
	struct an_process *p = NULL;
	char err[512];
	int ret;

	CHECK(!broken_trace("trunc", 20, 0, FT_VERSION, &p, err, sizeof(err), &ret), "setup");
	CHECK(ret == 0, "load failed: %s", err);
	CHECK(strstr(p->warning, "truncated"), "no warning: '%s'", p->warning);
	CHECK(p->faults_seen == (sites.cos_ip ? 12u : 11u), "faults %" PRIu64, p->faults_seen);
	an_process_free(p);
	return 0;
}

static int t_reader_zero_tail(char *why, size_t whylen)
{
	struct an_process *p = NULL;
	char err[512];
	int ret;

	CHECK(!broken_trace("zero", -1, 0, FT_VERSION, &p, err, sizeof(err), &ret), "setup");
	CHECK(ret == 0, "load failed: %s", err);
	CHECK(p->warning[0] == 0, "a zero tail is the normal end, got '%s'", p->warning);
	CHECK(p->faults_seen == (sites.cos_ip ? 13u : 12u), "faults %" PRIu64, p->faults_seen);
	an_process_free(p);
	return 0;
}

static int t_reader_corrupt(char *why, size_t whylen)
{
	struct an_process *p = NULL;
	char err[512];
	int ret;

	/* Version 2 checks the checksum before the type; version 1 has only the type to go by. */
	for (int c = 1; c <= 3; c++) {
		uint32_t v = c == 3 ? 1 : FT_VERSION;
		CHECK(!broken_trace(c == 1 ? "bad8" : c == 2 ? "badtype" : "badtype1", 0, c == 1 ? 1 : 2,
				    v, &p, err, sizeof(err), &ret), "setup");
		CHECK(ret == 0, "load failed: %s", err);
		CHECK(strstr(p->warning, c == 1 ? "multiple of 8" : c == 2 ? "checksum does not match" :
			     "type is unknown"), "warning '%s'", p->warning);
		CHECK(p->damaged, "not said to be damaged: '%s'", p->warning);
		CHECK(p->faults_seen == (sites.cos_ip ? 12u : 11u), "faults %" PRIu64,
		      p->faults_seen);
		an_process_free(p);
	}
	return 0;
}

static int t_reader_version(char *why, size_t whylen)
{
	struct an_process *p = NULL;
	char err[512];
	int ret;

	CHECK(!broken_trace("ver", 0, 0, FT_VERSION + 1, &p, err, sizeof(err), &ret), "setup");
	CHECK(ret == -EPROTO && strstr(err, "version 3") && strstr(err, "reads versions 1 to 2"),
	      "ret %d err '%s'", ret, err);
	return 0;
}

/* Version 1 (no checksums) is still read, to the same numbers as version 2. */
static int t_reader_version1(char *why, size_t whylen)
{
	struct an_process *p = NULL;
	char err[512];
	int ret;

	CHECK(!broken_trace("v1", 0, 0, 1, &p, err, sizeof(err), &ret), "setup");
	CHECK(ret == 0, "load failed: %s", err);
	CHECK(p->warning[0] == 0, "warning '%s'", p->warning);
	CHECK(p->faults_seen == (sites.cos_ip ? 13u : 12u), "faults %" PRIu64, p->faults_seen);
	an_process_free(p);
	return 0;
}

/* The std trace of `version` in tmpdir/name, with its `n`th record of `type` (1-based) at byte
 * *off, *len bytes long. */
static int std_rec_at(const char *name, uint32_t version, unsigned type, int n, char *path,
		      size_t plen, long *off, long *len)
{
	char dir[PATH_MAX], err[512];
	const struct ft_rec_hdr *h;
	struct trace *t;

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
	mkdir(dir, 0755);
	if (synth_write_std(dir, &sites, 79, version, NULL))
		return -1;
	snprintf(path, plen, "%s/fltrace-data-trace-79-0.bin", dir);
	if (trace_open(path, &t, err, sizeof(err)))
		return -1;
	*off = -1;
	while ((h = trace_next(t)))
		if (h->type == type && --n == 0) {
			*off = (long)(t->pos - h->size);
			*len = h->size;
			break;
		}
	trace_close(t);
	return *off < 0 ? -1 : 0;
}

static int std_fault_at(const char *name, int n, char *path, size_t plen, long *off, long *len)
{
	return std_rec_at(name, FT_VERSION, FT_REC_FAULT, n, path, plen, off, len);
}

static int poke(const char *path, long off, const void *bytes, size_t n)
{
	FILE *f = fopen(path, "r+");
	int ok = f && fseek(f, off, SEEK_SET) == 0 && fwrite(bytes, 1, n, f) == n;
	return (f && fclose(f)) || !ok ? -1 : 0;
}

/* One byte of a fault record's body changed: that record and what follows are not read, and the
 * warning names the record and its byte; the faults before it are all there. */
static int t_reader_damaged_byte(char *why, size_t whylen)
{
	char path[PATH_MAX + 64], err[512], want[128];
	struct an_process *p = NULL;
	long off, len;
	uint8_t b;
	FILE *f;

	CHECK(!std_fault_at("flip", 3, path, sizeof(path), &off, &len), "setup");
	f = fopen(path, "r");
	CHECK(f && fseek(f, off + 25, SEEK_SET) == 0 && fread(&b, 1, 1, f) == 1, "read");
	fclose(f);
	b ^= 0x10;
	CHECK(!poke(path, off + 25, &b, 1), "poke");
	CHECK(load(path, &p, err, sizeof(err)) == 0, "load failed: %s", err);
	snprintf(want, sizeof(want), "(at byte %ld) is damaged: its checksum does not match", off);
	CHECK(p->damaged && strstr(p->warning, want), "warning '%s', wanted '%s'", p->warning, want);
	CHECK(p->faults_seen == 2, "faults %" PRIu64 ", expected the 2 before it", p->faults_seen);
	an_process_free(p);
	return 0;
}

/* A version 1 stack record (no checksum) whose id is absurd: damage, said, and no table the size
 * of the id (the fuzzer's first find: 2^31 ids made a 16 GB table). */
static int t_reader_absurd_id(char *why, size_t whylen)
{
	char path[PATH_MAX + 64], err[512];
	struct an_process *p = NULL;
	uint32_t id = 0x7fffffff;
	long off, len;

	CHECK(!std_rec_at("absurd", 1, FT_REC_STACK, 2, path, sizeof(path), &off, &len), "setup");
	CHECK(!poke(path, off + (long)offsetof(struct ft_stack, id), &id, sizeof(id)), "poke");
	CHECK(load(path, &p, err, sizeof(err)) == 0, "load failed: %s", err);
	CHECK(p->damaged && strstr(p->warning, "stack id is far beyond"), "warning '%s'", p->warning);
	CHECK(p->faults_seen == 0, "faults %" PRIu64 " (they all come after the stacks)", p->faults_seen);
	an_process_free(p);
	return 0;
}

/* The header's bytes (here the executable's path) changed: nothing of the trace is read. */
static int t_reader_header_damaged(char *why, size_t whylen)
{
	char path[PATH_MAX + 64], err[512];
	struct an_process *p = NULL;
	long off, len;

	CHECK(!std_fault_at("hdr", 1, path, sizeof(path), &off, &len), "setup");
	CHECK(!poke(path, sizeof(struct ft_file_header2) + 1, "X", 1), "poke");
	CHECK(load(path, &p, err, sizeof(err)) == -EBADMSG && strstr(err, "header is damaged"),
	      "err '%s'", err);
	return 0;
}

/* The std trace (closed) ending early at its nth fault record, cut there (cut) or with that record's
 * header zeroed: not damage; the data ends there with a warning holding `said`, and the n - 1
 * faults before it are all there. */
static int early_end(char *why, size_t whylen, const char *name, int n, bool cut, const char *said)
{
	static const char zeros[8];
	char path[PATH_MAX + 64], err[512];
	struct an_process *p = NULL;
	long off, len;

	CHECK(!std_fault_at(name, n, path, sizeof(path), &off, &len), "setup");
	CHECK(cut ? !truncate(path, off) : !poke(path, off, zeros, sizeof(zeros)), "change");
	CHECK(load(path, &p, err, sizeof(err)) == 0, "load failed: %s", err);
	CHECK(!p->damaged && strstr(p->warning, said), "warning '%s'", p->warning);
	CHECK(p->faults_seen == (uint64_t)n - 1, "faults %" PRIu64, p->faults_seen);
	an_process_free(p);
	return 0;
}

/* A copy cut short at a record's end: only the end the recorder wrote in the header shows it. */
static int t_reader_cut_copy(char *why, size_t whylen)
{
	return early_end(why, whylen, "cut", 4, true, "fewer than its recorder wrote");
}

/* A record never finished (its header still zero) before the end the recorder wrote. */
static int t_reader_unfinished_record(char *why, size_t whylen)
{
	return early_end(why, whylen, "unfinished", 5, false, "never finished");
}

static int t_reader_not_a_trace(char *why, size_t whylen)
{
	char path[PATH_MAX], err[512];
	struct trace *t;
	FILE *f;

	snprintf(path, sizeof(path), "%s/junk.bin", tmpdir);
	f = fopen(path, "w");
	for (int i = 0; i < 8; i++)
		fputs("this is not a trace, but it is long enough to hold a header\n", f);
	fclose(f);
	CHECK(trace_open(path, &t, err, sizeof(err)) == -EINVAL && strstr(err, "bad magic"),
	      "err '%s'", err);
	f = fopen(path, "w");
	fclose(f);
	CHECK(trace_open(path, &t, err, sizeof(err)) == -EINVAL && strstr(err, "shorter"),
	      "empty: err '%s'", err);
	return 0;
}

static int t_latency_histogram(char *why, size_t whylen)
{
	struct agg_table *t = agg_new();
	struct ft_file_header h = { .page_size = 4096 };
	struct agg_row **rows;
	uint64_t p99;

	/* 1..1000 us once each: p99 is 990 us; the histogram must land within 1/16. */
	for (uint32_t i = 1; i <= 1000; i++) {
		struct ft_fault f = { .latency_ns = i * 1000, .pages = 1 };
		agg_add(t, &h, &f, NULL, NULL);
	}
	agg_rows(t, &rows);
	p99 = lat_percentile(rows[0]->lat, 0.99);
	agg_free(t);
	CHECK(p99 > 990000 * 15 / 16 && p99 < 990000 * 17 / 16, "p99 %" PRIu64, p99);
	return 0;
}

static int t_regroup_by_line(char *why, size_t whylen)
{
	char path[PATH_MAX], err[512];
	struct an_process *p;
	struct symbolizer *s = sym_new();
	struct agg_table *byline = agg_new(), *byfn = agg_new();
	struct agg_row **rows;
	size_t n;
	const struct sym_frame *f;

	snprintf(path, sizeof(path), "%s/std/fltrace-data-trace-77-0.bin", tmpdir);
	CHECK(load(path, &p, err, sizeof(err)) == 0, "load: %s", err);
	CHECK(!agg_symbolize(p->rows, s, p->maps) && !sym_resolve(s), "symbolize");
	CHECK(!agg_regroup(byline, p->rows, AGG_BY_LINE, s), "regroup");
	CHECK(!agg_regroup(byfn, p->rows, AGG_BY_FUNCTION, s), "regroup fn");
	n = agg_rows(byline, &rows);
	f = sym_frame(s, rows[0]->frames[0]);
	CHECK(n >= 4 && rows[0]->depth == 1 && !strcmp(f->func, "synth_leaf") &&
	      agg_total(byline) == agg_total(p->rows), "by line: %zu rows, %s", n, f->func);
	n = agg_rows(byfn, &rows);
	CHECK(n >= 4 && rows[0]->count == 5, "by function: %zu rows", n);
	agg_free(byline);
	agg_free(byfn);
	sym_free(s);
	an_process_free(p);
	return 0;
}

/* Every row of the writers table can be used by the command it belongs to: a report row has a
 * grouped or a per-fault writer and a file name or stdout, a picture a draw function and a file
 * name, a sweep row a file and its writer; names are unique within a command. */
static int t_writers_table(char *why, size_t whylen)
{
	size_t n, per_cmd[3] = { 0 };
	const struct report_writer *w = report_writers(&n);
	CHECK(n > 0, "empty table");
	for (size_t i = 0; i < n; i++) {
		CHECK(w[i].name && w[i].summary, "row %zu has no name or summary", i);
		for (size_t k = 0; k < i; k++)
			CHECK(w[k].cmd != w[i].cmd || strcmp(w[k].name, w[i].name), "%s twice", w[i].name);
		switch (w[i].cmd) {
		case WR_REPORT:
			CHECK(w[i].write || (w[i].begin && w[i].fault && w[i].end), "%s writes nothing",
			      w[i].name);
			CHECK(!w[i].ext == !w[i].stem, "%s: stem and ext go together", w[i].name);
			CHECK(report_writer_find(w[i].name) == &w[i], "%s not found by name", w[i].name);
			CHECK(!w[i].write_alloc || w[i].write, "%s: --by alloc without a grouped form",
			      w[i].name);
			break;
		case WR_VISUALIZE:
			CHECK(!w[i].write && !w[i].write_diff && !w[i].write_alloc && !w[i].write_sweep,
			      "picture %s has a report or sweep writer", w[i].name);
			CHECK((w[i].draw || w[i].draw_diff) && w[i].stem && w[i].ext, "%s: no picture",
			      w[i].name);
			CHECK(!w[i].caption || w[i].draw, "%s: a caption without a picture", w[i].name);
			CHECK(!report_writer_find(w[i].name), "picture %s taken for a --format", w[i].name);
			break;
		case WR_SWEEP:
			CHECK(!w[i].write && !w[i].write_alloc && !w[i].draw && !w[i].draw_diff,
			      "sweep file %s has a report or picture writer", w[i].name);
			CHECK(w[i].file && w[i].write_sweep, "%s: no file or writer", w[i].name);
			CHECK(!report_writer_find(w[i].name), "sweep file %s taken for a --format", w[i].name);
			break;
		default:
			CHECK(0, "%s: unknown command %d", w[i].name, (int)w[i].cmd);
		}
		per_cmd[w[i].cmd]++;
	}
	/* What the commands promise: report's nine formats (eden among them), visualize's five
	 * pictures and the index, sweep's four files. */
	CHECK(per_cmd[WR_REPORT] == 9 && per_cmd[WR_VISUALIZE] == 6 && per_cmd[WR_SWEEP] == 4,
	      "rows per command %zu/%zu/%zu", per_cmd[0], per_cmd[1], per_cmd[2]);
	return 0;
}

/* report --diff's reading: the std trace in A, the same with 3 more re-fetches at the leaf in B;
 * by line, the leaf's row changes by those 3 and nothing else does. Missing, empty and filtered
 * directories are refused with their messages. */
static int diff_load_dirs(const char *a, const char *b, long pid, struct diff_table **d,
			  struct symbolizer **sym, char *err, size_t errlen)
{
	const char *dirs[2] = { a, b };
	struct diff_load_opts o = { .pid = pid, .by = AGG_BY_LINE };

	*d = diff_new();
	*sym = sym_new();
	if (!*d || !*sym)
		return -ENOMEM;
	return diff_load(*d, *sym, dirs, &o, err, errlen);
}

static int t_diff_load(char *why, size_t whylen)
{
	char a[PATH_MAX], b[PATH_MAX], none[PATH_MAX], empty[PATH_MAX], err[512], want[64];
	struct diff_table *d;
	struct symbolizer *sym;
	struct diff_row **rows;
	uint64_t ta, tb;
	int ret;

	snprintf(a, sizeof(a), "%s/diff-a", tmpdir);
	snprintf(b, sizeof(b), "%s/diff-b", tmpdir);
	snprintf(none, sizeof(none), "%s/diff-none", tmpdir);
	snprintf(empty, sizeof(empty), "%s/diff-empty", tmpdir);
	mkdir(a, 0755);
	mkdir(b, 0755);
	mkdir(empty, 0755);
	CHECK(synth_write_std(a, &sites, 90, FT_VERSION, NULL) == 0, "write A");
	synth_nrefetch = 6;
	ret = synth_write_std(b, &sites, 91, FT_VERSION, NULL);
	synth_nrefetch = 3;
	CHECK(ret == 0, "write B");

	ret = diff_load_dirs(a, b, -1, &d, &sym, err, sizeof(err));
	if (!ret) {
		size_t n = diff_rows(d, &rows);
		diff_totals(d, &ta, &tb);
		snprintf(want, sizeof(want), ":%d", sites.leaf_line);
		ret = n > 1 && tb == ta + 3 && rows[0]->a == 8 && rows[0]->b == 11 &&
		      strlen(rows[0]->code) > strlen(want) &&
		      !strcmp(rows[0]->code + strlen(rows[0]->code) - strlen(want), want) &&
		      rows[1]->a == rows[1]->b ? 0 : -1;
		if (ret)
			snprintf(err, sizeof(err), "totals %" PRIu64 "/%" PRIu64 ", first row %s %" PRIu64
				 "/%" PRIu64, ta, tb, n ? rows[0]->code : "-", n ? rows[0]->a : 0,
				 n ? rows[0]->b : 0);
	}
	diff_free(d);
	sym_free(sym);
	CHECK(ret == 0, "A against B: %s", err);

	static const struct { const char *what; int side; long pid; const char *msg; } bad[] = {
		{ "missing", 1, -1, "cannot read " },
		{ "empty", 0, -1, "no trace in " },
		{ "other pid", 0, 1, "no trace in " },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *other = i == 0 ? none : i == 1 ? empty : a;
		err[0] = 0;
		ret = diff_load_dirs(bad[i].side ? a : other, bad[i].side ? other : b, bad[i].pid,
				     &d, &sym, err, sizeof(err));
		diff_free(d);
		sym_free(sym);
		CHECK(ret < 0 && !strncmp(err, bad[i].msg, strlen(bad[i].msg)) && strstr(err, "--diff"),
		      "%s directory: %d, '%s'", bad[i].what, ret, err);
	}
	return 0;
}

/* Each command's --help lists its rows: the name padded to the summary's column (or two spaces
 * past a longer name), a summary's newline continued under its column. */
static int t_writers_usage(char *why, size_t whylen)
{
	static const struct { enum writer_cmd cmd; int width; const char *first, *cont; } want[] = {
		{ WR_REPORT, 18, "  csv               callsite CSV", NULL },
		{ WR_VISUALIZE, 41, "  fltrace-data-flamegraph-<pid>.svg        all faults, by stack", NULL },
		{ WR_SWEEP, 16, "  sweep.csv       one row per run:", "\n                  slowdown," },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char *text = NULL, *p;
		size_t len = 0, lines = 0, rows = 0, n;
		const struct report_writer *w = report_writers(&n);
		FILE *m = open_memstream(&text, &len);
		CHECK(m, "open_memstream");
		report_writers_usage(m, want[i].cmd, want[i].width);
		fclose(m);
		for (p = text; (p = strchr(p, '\n')); p++)
			lines++;
		for (size_t k = 0; k < n; k++)
			rows += w[k].cmd == want[i].cmd && (w[k].cmd != WR_VISUALIZE || w[k].draw);
		int ok = !strncmp(text, want[i].first, strlen(want[i].first)) &&
			 (!want[i].cont || strstr(text, want[i].cont)) &&
			 (want[i].cont ? lines > rows : lines == rows) &&
			 (want[i].cmd != WR_VISUALIZE ||
			  strstr(text, "  fltrace-data-flamegraph-allocsite-<pid>.svg  faults by"));
		if (!ok)
			snprintf(why, whylen, "command %d: %zu lines for %zu rows:\n%s", (int)want[i].cmd,
				 lines, rows, text);
		free(text);
		if (!ok)
			return -1;
	}
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(char *why, size_t whylen);
} cases[] = {
	{ "writers_table", t_writers_table },
	{ "writers_usage", t_writers_usage },
	{ "diff_load", t_diff_load },
	{ "csv_quoting", t_csv_quoting },
	{ "elf_map_to_vaddr", t_map_to_vaddr },
	{ "maps_history_by_time", t_maps_history },
	{ "symbolize_pie_return_address", t_symbolize_pie },
	{ "symbolize_leaf_not_adjusted", t_symbolize_leaf_not_adjusted },
	{ "symbolize_libc", t_symbolize_libc },
	{ "symbolize_build_id_mismatch", t_symbolize_build_id_mismatch },
	{ "symbolize_unmapped", t_symbolize_unmapped },
	{ "reader_std_trace", t_reader_std },
	{ "reader_truncated", t_reader_truncated },
	{ "reader_zero_tail", t_reader_zero_tail },
	{ "reader_corrupt_record", t_reader_corrupt },
	{ "reader_other_version", t_reader_version },
	{ "reader_version1_still_read", t_reader_version1 },
	{ "reader_damaged_byte", t_reader_damaged_byte },
	{ "reader_header_damaged", t_reader_header_damaged },
	{ "reader_absurd_id", t_reader_absurd_id },
	{ "reader_cut_copy", t_reader_cut_copy },
	{ "reader_unfinished_record", t_reader_unfinished_record },
	{ "reader_not_a_trace", t_reader_not_a_trace },
	{ "latency_p99_histogram", t_latency_histogram },
	{ "regroup_by_line_function", t_regroup_by_line },
};

/* --write DIR [PID] [bad-build-id | refetch=N | v1]: the e2e tests' trace, answers on stdout as
 * key=value; refetch=N writes N re-fetch reads at the leaf instead of 3; v1 writes format
 * version 1 (no checksums). */
static int synth_main_write(int argc, char **argv)
{
	static const uint8_t bad[20] = { 0xde, 0xad, 0xbe, 0xef };
	uint32_t pid = argc > 3 ? (uint32_t)atoi(argv[3]) : 1000;
	int ret;

	if (argc > 4 && !strncmp(argv[4], "refetch=", 8))
		synth_nrefetch = atoi(argv[4] + 8);
	ret = synth_write_std(argv[2], &sites, pid, argc > 4 && !strcmp(argv[4], "v1") ? 1 : FT_VERSION,
			      argc > 4 && !strcmp(argv[4], "bad-build-id") ? bad : NULL);
	char libc[PATH_MAX], libm[PATH_MAX];

	if (ret) {
		fprintf(stderr, "write: %s\n", strerror(-ret));
		return 1;
	}
	if (!realpath(sites.libc, libc))
		snprintf(libc, sizeof(libc), "%s", sites.libc);
	if (!sites.libm[0] || !realpath(sites.libm, libm))
		libm[0] = 0;
	printf("exe=%s\nlibc=%s\nlibm=%s\nleaf=0x%" PRIx64 "\nret_b=0x%" PRIx64 "\nret_c=0x%" PRIx64
	       "\ngetpid=0x%" PRIx64 "\ncos=0x%" PRIx64 "\nleaf_line=%d\nline_b=%d\nline_c=%d\n",
	       sites.exe, libc, libm, sites.leaf, sites.ret_b, sites.ret_c, sites.getpid_ip,
	       sites.cos_ip, sites.leaf_line, sites.line_b, sites.line_c);
	return 0;
}

/* --write-exe DIR EXE BIAS IP... [/ IP...]...: one user fault per stack IP... in EXE ("/"
 * separates stacks), mapped as the kernel maps it at load bias BIAS (0 for a non-PIE executable). */
static int synth_main_write_exe(int argc, char **argv)
{
	struct sym_segment *segs;
	size_t nsegs, len = 0;
	uint8_t id[32];
	uint32_t idlen;
	uint64_t bias = strtoull(argv[4], NULL, 0), ips[64];
	uint32_t depth = 0;
	char path[PATH_MAX + 64], text[8192];
	FILE *f;

	if (sym_elf_info(argv[3], &segs, &nsegs, id, &idlen)) {
		fprintf(stderr, "%s: not an ELF file\n", argv[3]);
		return 1;
	}
	for (size_t i = 0; i < nsegs && len < sizeof(text) - 256; i++) {
		uint64_t start = (bias + segs[i].vaddr) & ~0xfffull;
		uint64_t end = (bias + segs[i].vaddr + segs[i].filesz + 0xfff) & ~0xfffull;
		len += snprintf(text + len, sizeof(text) - len, "%" PRIx64 "-%" PRIx64 " r%c%cp %08"
				PRIx64 " 08:01 1234 %s\n", start, end, segs[i].flags & 2 ? 'w' : '-',
				segs[i].flags & 1 ? 'x' : '-', (uint64_t)(segs[i].offset & ~0xfffull), argv[3]);
	}
	free(segs);
	snprintf(path, sizeof(path), "%s/fltrace-data-trace-2000-0.bin", argv[2]);
	f = synth_open(path, 2000, 0, FT_VERSION, argv[3]);
	if (!f)
		return 1;
	synth_maps(f, 0, text, len);
	synth_object(f, 0, bias, id, idlen, argv[3]);
	for (int i = 5, id = 0; i <= argc; i++) {
		if (i < argc && strcmp(argv[i], "/")) {
			if (depth < 64)
				ips[depth++] = strtoull(argv[i], NULL, 0);
			continue;
		}
		if (!depth)
			continue;
		synth_stack(f, id, depth, ips);
		synth_fault(f, &(struct synth_fault){ .t_ns = 1000 + id, .addr = 0x30000000 +
			    id * 4096, .ip = ips[0], .stack_id = id, .latency_ns = 2000,
			    .flags = FT_FLAG_WRITE | FT_FLAG_ZERO, .kind = FT_KIND_ZERO });
		id++;
		depth = 0;
	}
	return fclose(f) ? 1 : 0;
}

/* --write-big DIR N: N faults over 2000 distinct 48-frame stacks made of real code addresses of
 * this binary and libc, for the benchmark (make bench) and a speed check. */
static int synth_main_write_big(int argc, char **argv)
{
	uint64_t n = strtoull(argv[3], NULL, 0), seed = 12345, ips[48];
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/fltrace-data-trace-3000-0.bin", argv[2]);
	f = synth_open(path, 3000, 0, FT_VERSION, sites.exe);
	if (!f)
		return 1;
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	synth_self_maps(f, 0);
	for (uint32_t id = 0; id < 2000; id++) {
		for (int k = 0; k < 48; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			/* Spread over a few KB of code around known functions. */
			ips[k] = (k % 3 == 0 ? sites.getpid_ip : k % 3 == 1 ? sites.leaf : sites.ret_b) +
				 (seed >> 33) % 4096;
		}
		synth_stack(f, id, 48, ips);
	}
	for (uint64_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		synth_fault(f, &(struct synth_fault){ .t_ns = i * 1000, .addr = 0x40000000 +
			    (i % 65536) * 4096, .ip = 0, .stack_id = (seed >> 33) % 2000,
			    .latency_ns = (seed >> 20) % 50000, .flags = (seed >> 40) & 1,
			    .kind = FT_KIND_REFETCH });
	}
	return fclose(f) ? 1 : 0;
}

int main(int argc, char **argv)
{
	int failures = 0;
	char why[1024];

	synth_sites_get(&sites);
	if (argc > 2 && !strcmp(argv[1], "--write"))
		return synth_main_write(argc, argv);
	if (argc > 3 && !strcmp(argv[1], "--write-big"))
		return synth_main_write_big(argc, argv);
	if (argc > 5 && !strcmp(argv[1], "--write-exe"))
		return synth_main_write_exe(argc, argv);
	if (!mkdtemp(tmpdir)) {
		printf("FAIL report_setup: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why[0] = 0;
		if (cases[i].fn(why, sizeof(why)) == 0) {
			printf("PASS %s\n", cases[i].name);
		} else {
			printf("FAIL %s: %s\n", cases[i].name, why);
			failures++;
		}
	}
	{
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			printf("note: could not remove %s\n", tmpdir);
	}
	return failures ? 1 : 0;
}
