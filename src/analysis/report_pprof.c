/* The pprof writer: the grouped rows as a gzipped profile.proto (pprof, Go tooling, Pyroscope,
 * speedscope read it). Encoded here field by field: only the few messages below are needed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "report.h"

/* Field numbers of profile.proto (github.com/google/pprof, proto/profile.proto). */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2,
	MAPPING_ID = 1, MAPPING_FILENAME = 5, MAPPING_HAS_FUNCTIONS = 7, MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9, MAPPING_HAS_INLINE_FRAMES = 10,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};
enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* ------------------------------------------------------------------ protobuf encoding */

struct pb {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static void pb_bytes(struct pb *b, const void *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;

	do {
		buf[n++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	pb_bytes(b, buf, n);
}

/* A varint field; proto3 leaves zero values out. */
static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_varint(b, (uint64_t)field << 3 | WIRE_VARINT);
	pb_varint(b, v);
}

/* A length-delimited field holding an already encoded message (or bytes). */
static void pb_sub(struct pb *b, unsigned field, const struct pb *m)
{
	pb_varint(b, (uint64_t)field << 3 | WIRE_LEN);
	pb_varint(b, m->len);
	pb_bytes(b, m->p, m->len);
	if (m->oom)
		b->oom = true;
}

/* ------------------------------------------------------------------ interning */

/* The string table: index 0 is "", every other string once. */
struct pprof {
	struct pb out;          /* the Profile message */
	struct pb msg, sub;     /* scratch for nested messages */
	struct intern strs;
	uint64_t *loc_of_frame; /* symbolizer frame id -> location id (0: not yet) */
	uint64_t nloc;
	uint64_t *fkeys;        /* function keys (name << 32 | file), index = id - 1 */
	size_t nfunc, capfunc;
	uint64_t *mkeys;        /* mapping file name string index, index = id - 1 */
	size_t nmap, capmap;
};

/* Index of s in the string table, added if new; -1 when out of memory. */
static int64_t pprof_str(struct pprof *pp, const char *s)
{
	int64_t id = intern_id(&pp->strs, s, NULL);

	return id < 0 ? -1 : id;
}

/* The id of a key in a small list of keys (ids from 1), appended if new: functions and
 * mappings are few, a linear search is enough. 0 when out of memory; *fresh for a new one. */
static uint64_t pprof_key_id(uint64_t **keys, size_t *n, size_t *cap, uint64_t key, bool *fresh)
{
	*fresh = false;
	for (size_t i = *n; i-- > 0;)
		if ((*keys)[i] == key)
			return i + 1;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		uint64_t *k = realloc(*keys, c * sizeof(*k));
		if (!k)
			return 0;
		*keys = k;
		*cap = c;
	}
	(*keys)[(*n)++] = key;
	*fresh = true;
	return *n;
}

/* ------------------------------------------------------------------ messages */

static uint64_t pprof_function(struct pprof *pp, const char *name, const char *file)
{
	int64_t ni = pprof_str(pp, name), fi = pprof_str(pp, file);
	bool fresh;
	uint64_t id;

	if (ni < 0 || fi < 0)
		return 0;
	id = pprof_key_id(&pp->fkeys, &pp->nfunc, &pp->capfunc, (uint64_t)ni << 32 | (uint64_t)fi,
			  &fresh);
	if (fresh) {
		pp->sub.len = 0;
		pb_uint(&pp->sub, FUNCTION_ID, id);
		pb_uint(&pp->sub, FUNCTION_NAME, (uint64_t)ni);
		pb_uint(&pp->sub, FUNCTION_SYSTEM_NAME, (uint64_t)ni);
		pb_uint(&pp->sub, FUNCTION_FILENAME, (uint64_t)fi);
		pb_sub(&pp->out, PROFILE_FUNCTION, &pp->sub);
	}
	return id;
}

static uint64_t pprof_mapping(struct pprof *pp, const struct sym_frame *fr)
{
	int64_t li = pprof_str(pp, fr->lib);
	bool fresh;
	uint64_t id;

	if (li < 0)
		return 0;
	id = pprof_key_id(&pp->mkeys, &pp->nmap, &pp->capmap, (uint64_t)li, &fresh);
	if (fresh) {
		pp->sub.len = 0;
		pb_uint(&pp->sub, MAPPING_ID, id);
		pb_uint(&pp->sub, MAPPING_FILENAME, (uint64_t)li);
		/* Every location carries its symbolized lines: pprof must not symbolize again. */
		pb_uint(&pp->sub, MAPPING_HAS_FUNCTIONS, 1);
		pb_uint(&pp->sub, MAPPING_HAS_FILENAMES, 1);
		pb_uint(&pp->sub, MAPPING_HAS_LINE_NUMBERS, 1);
		pb_uint(&pp->sub, MAPPING_HAS_INLINE_FRAMES, 1);
		pb_sub(&pp->out, PROFILE_MAPPING, &pp->sub);
	}
	return id;
}

/* A location of its own for an address without a symbolized frame ("[no stack]" has ip 0). */
static uint64_t pprof_bare_location(struct pprof *pp, uint64_t ip, const char *name)
{
	uint64_t fn = pprof_function(pp, name, "");
	struct pb line = { 0 };

	pp->msg.len = 0;
	pb_uint(&pp->msg, LOCATION_ID, ++pp->nloc);
	pb_uint(&pp->msg, LOCATION_ADDRESS, ip);
	pb_uint(&line, LINE_FUNCTION_ID, fn);
	pb_sub(&pp->msg, LOCATION_LINE, &line);
	pb_sub(&pp->out, PROFILE_LOCATION, &pp->msg);
	free(line.p);
	return fn ? pp->nloc : 0;
}

/* The location of a symbolized frame: its object, its address in the object, and one line per
 * inline level, innermost first as profile.proto orders them. */
static uint64_t pprof_location(struct pprof *pp, const struct symbolizer *s, int64_t frame)
{
	const struct sym_frame *fr = sym_frame(s, frame);
	struct pb line = { 0 };
	uint64_t map;

	if (pp->loc_of_frame[frame])
		return pp->loc_of_frame[frame];
	map = fr->resolved ? pprof_mapping(pp, fr) : 0;
	pp->msg.len = 0;
	pb_uint(&pp->msg, LOCATION_ID, ++pp->nloc);
	pb_uint(&pp->msg, LOCATION_MAPPING_ID, map);
	pb_uint(&pp->msg, LOCATION_ADDRESS, fr->resolved ? fr->obj_addr : fr->ip);
	for (unsigned i = 0; i < fr->nr_locs; i++) {
		const struct sym_loc *l = &fr->locs[i];
		uint64_t fn = pprof_function(pp, l->func, strcmp(l->file, "??") ? l->file : fr->lib);
		if (!fn) {
			free(line.p);
			return 0;
		}
		line.len = 0;
		pb_uint(&line, LINE_FUNCTION_ID, fn);
		pb_uint(&line, LINE_LINE, l->line);
		pb_sub(&pp->msg, LOCATION_LINE, &line);
	}
	free(line.p);
	pb_sub(&pp->out, PROFILE_LOCATION, &pp->msg);
	pp->loc_of_frame[frame] = pp->nloc;
	return pp->nloc;
}

static void pprof_value_type(struct pprof *pp, unsigned field, const char *type, const char *unit)
{
	int64_t t = pprof_str(pp, type), u = pprof_str(pp, unit);

	pp->sub.len = 0;
	pb_uint(&pp->sub, VALUETYPE_TYPE, t < 0 ? 0 : (uint64_t)t);
	pb_uint(&pp->sub, VALUETYPE_UNIT, u < 0 ? 0 : (uint64_t)u);
	pb_sub(&pp->out, field, &pp->sub);
}

static void pprof_label(struct pprof *pp, struct pb *sample, const char *key, const char *val)
{
	int64_t k = pprof_str(pp, key), v = pprof_str(pp, val);

	pp->sub.len = 0;
	pb_uint(&pp->sub, LABEL_KEY, k < 0 ? 0 : (uint64_t)k);
	pb_uint(&pp->sub, LABEL_STR, v < 0 ? 0 : (uint64_t)v);
	pb_sub(sample, SAMPLE_LABEL, &pp->sub);
}

/* One sample per row: its stack (leaf first), its faults and their summed service time, and
 * labels for what the CSV's columns say (pprof -tagfocus kind=refetch). */
static int pprof_sample(struct pprof *pp, const struct report_view *v, const struct agg_row *r)
{
	struct pb sample = { 0 }, ids = { 0 }, vals = { 0 };
	char sc[32];

	for (uint32_t k = 0; k < r->depth; k++) {
		uint64_t loc = r->frames && sym_frame(v->sym, r->frames[k]) ?
			pprof_location(pp, v->sym, r->frames[k]) :
			pprof_bare_location(pp, r->ips[k], "??");
		pb_varint(&ids, loc);
	}
	if (!r->depth)
		pb_varint(&ids, pprof_bare_location(pp, 0, "[no stack]"));
	pb_varint(&vals, r->count);
	pb_varint(&vals, r->lat_total_ns);
	pb_sub(&sample, SAMPLE_LOCATION_ID, &ids);
	pb_sub(&sample, SAMPLE_VALUE, &vals);
	pprof_label(pp, &sample, "kind", trace_kind_name(r->kind));
	pprof_label(pp, &sample, "access", trace_op_name(r->flags));
	pprof_label(pp, &sample, "origin", trace_origin_name(r->origin));
	if (r->origin == FT_ORIGIN_SYSCALL) {
		const char *name = trace_syscall_name(r->syscall_nr);
		snprintf(sc, sizeof(sc), "%d", r->syscall_nr);
		pprof_label(pp, &sample, "syscall", name ? name : sc);
	}
	if (r->file)
		pprof_label(pp, &sample, "file", r->file);
	pb_sub(&pp->out, PROFILE_SAMPLE, &sample);
	free(sample.p);
	free(ids.p);
	free(vals.p);
	return pp->out.oom ? -ENOMEM : 0;
}

/* ------------------------------------------------------------------ gzip */

static int pprof_gzip(FILE *out, const uint8_t *p, size_t len)
{
	z_stream z = { 0 };
	uint8_t buf[1 << 16];
	int zr;

	/* 15 + 16: a gzip wrapper, as pprof expects of a .pb.gz. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY))
		return -ENOMEM;
	z.next_in = (uint8_t *)p;
	z.avail_in = (uInt)len;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR)
			break;
		if (fwrite(buf, 1, sizeof(buf) - z.avail_out, out) != sizeof(buf) - z.avail_out) {
			zr = Z_ERRNO;
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	return zr == Z_STREAM_END ? 0 : -EIO;
}

/* ------------------------------------------------------------------ the writer */

static void pprof_free(struct pprof *pp)
{
	intern_free(&pp->strs);
	free(pp->loc_of_frame);
	free(pp->fkeys);
	free(pp->mkeys);
	free(pp->out.p);
	free(pp->msg.p);
	free(pp->sub.p);
}

int report_write_pprof(FILE *out, const struct report_view *v)
{
	struct pprof pp = { 0 };
	struct agg_row **rows;
	size_t n = agg_rows(v->rows, &rows);
	int ret = 0;

	pp.loc_of_frame = calloc(sym_nr_frames(v->sym) + 1, sizeof(*pp.loc_of_frame));
	if (!pp.loc_of_frame || pprof_str(&pp, "") != 0) {
		pprof_free(&pp);
		return -ENOMEM;
	}
	/* Sample types: pages faulted in, and the time the faults took to serve. */
	pprof_value_type(&pp, PROFILE_SAMPLE_TYPE, "faults", "count");
	pprof_value_type(&pp, PROFILE_SAMPLE_TYPE, "latency", "nanoseconds");
	pprof_value_type(&pp, PROFILE_PERIOD_TYPE, "faults", "count");
	pb_uint(&pp.out, PROFILE_PERIOD, 1);
	pb_uint(&pp.out, PROFILE_TIME_NANOS, v->start_ns);
	for (size_t i = 0; i < n && !ret; i++)
		ret = pprof_sample(&pp, v, rows[i]);
	/* The string table goes last: every string is known by now. */
	for (size_t i = 0; i < pp.strs.n && !ret; i++) {
		const char *str = pp.strs.strs[i];
		pb_varint(&pp.out, (uint64_t)PROFILE_STRING_TABLE << 3 | WIRE_LEN);
		pb_varint(&pp.out, strlen(str));
		pb_bytes(&pp.out, str, strlen(str));
	}
	if (!ret && (pp.out.oom || pp.msg.oom || pp.sub.oom))
		ret = -ENOMEM;
	if (!ret)
		ret = pprof_gzip(out, pp.out.p, pp.out.len);
	pprof_free(&pp);
	return ret;
}
