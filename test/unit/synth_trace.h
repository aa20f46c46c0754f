/* A synthetic trace writer for the report tests: builds valid (or deliberately broken)
 * fltrace-data-trace-*.bin files record by record, as the runtime's writer would. */
#ifndef FLTRACE_TEST_SYNTH_TRACE_H
#define FLTRACE_TEST_SYNTH_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fltrace/crc32c.h"
#include "fltrace/trace_format.h"

#define SYNTH_T0 1700000000000000000ull /* start_realtime_ns of synthetic traces */

/* The format version of the trace being written (synth_open's), as the runtime's writer would. */
static uint32_t synth_version = FT_VERSION;

static void synth_put(FILE *f, const void *p, size_t len)
{
	static const char zeros[FT_ALIGN];

	fwrite(p, 1, len, f);
	if (len % FT_ALIGN)
		fwrite(zeros, 1, FT_ALIGN - len % FT_ALIGN, f);
}

/* A record of len bytes (its header's type set): its size, and in version 2 its check, filled in. */
static void synth_rec(FILE *f, void *rec, size_t len)
{
	struct ft_rec_hdr *h = rec;
	size_t body = ft_rec_size((uint32_t)len);
	char *buf = calloc(1, body + sizeof(struct ft_rec_check));

	h->size = (uint32_t)(body + ft_check_size(synth_version));
	memcpy(buf, rec, len);
	if (synth_version >= 2) {
		struct ft_rec_check c = { .crc = crc32c(0, buf, body) };
		memcpy(buf + body, &c, sizeof(c));
	}
	fwrite(buf, 1, h->size, f);
	free(buf);
}

static FILE *synth_open(const char *path, uint32_t pid, uint32_t gen, uint32_t version,
			const char *exe)
{
	struct ft_file_header2 h2;
	struct ft_file_header *h = &h2.h;
	const char *argv0 = exe;
	size_t fixed = ft_header_fixed_size(version);
	size_t tail = strlen(exe) + 1 + strlen(argv0) + 1;
	char *buf = calloc(1, fixed + tail + FT_ALIGN);
	FILE *f = fopen(path, "w");

	if (!f || !buf) {
		free(buf);
		if (f)
			fclose(f);
		return NULL;
	}
	synth_version = version;
	memset(&h2, 0, sizeof(h2));
	memcpy(h->magic, FT_MAGIC, 8);
	h->version = version;
	h->header_size = ft_rec_size(fixed + tail);
	h->page_size = 4096;
	h->pid = pid;
	h->ppid = 1;
	h->exec_gen = gen;
	h->nr_args = 1;
	h->start_realtime_ns = SYNTH_T0;
	h->stack_depth = 64;
	memcpy(buf, &h2, fixed);
	strcpy(buf + fixed, exe);
	strcpy(buf + fixed + strlen(exe) + 1, argv0);
	if (version >= 2) {
		h2.header_crc = crc32c(0, buf, h->header_size);
		memcpy(buf, &h2, fixed);
	}
	synth_put(f, buf, fixed + tail);
	free(buf);
	return f;
}

/* As the recorder closes a trace: version 2 says where its records end. */
static int synth_close(FILE *f)
{
	if (synth_version >= 2) {
		uint64_t end = (uint64_t)ftell(f);
		fseek(f, (long)offsetof(struct ft_file_header2, data_end), SEEK_SET);
		fwrite(&end, sizeof(end), 1, f);
	}
	return fclose(f);
}

static void synth_stack(FILE *f, uint32_t id, uint32_t depth, const uint64_t *ips)
{
	size_t len = sizeof(struct ft_stack) + depth * 8;
	struct ft_stack *s = calloc(1, len);

	s->hdr.type = FT_REC_STACK;
	s->id = id;
	s->depth = depth;
	memcpy(s->ips, ips, depth * 8);
	synth_rec(f, s, len);
	free(s);
}

struct synth_fault {
	uint64_t t_ns; /* from SYNTH_T0 */
	uint64_t addr, ip;
	uint32_t stack_id, latency_ns, pages;
	uint16_t flags;
	uint8_t kind, origin, status;
	int32_t syscall_nr;
	uint32_t region;
};

static void synth_fault(FILE *f, const struct synth_fault *sf)
{
	struct ft_fault r;

	memset(&r, 0, sizeof(r));
	r.hdr.type = FT_REC_FAULT;
	r.time_ns = SYNTH_T0 + sf->t_ns;
	r.addr = sf->addr;
	r.ip = sf->ip;
	r.tid = 4242;
	r.stack_id = sf->stack_id;
	r.latency_ns = sf->latency_ns;
	r.pages = sf->pages ? sf->pages : 1;
	r.flags = sf->flags;
	r.kind = sf->kind;
	r.origin = sf->origin;
	r.stack_status = sf->status;
	r.syscall_nr = sf->origin == FT_ORIGIN_SYSCALL ? sf->syscall_nr : -1;
	r.region = sf->region;
	synth_rec(f, &r, sizeof(r));
}

static void synth_maps(FILE *f, uint64_t t_ns, const char *text, size_t len)
{
	size_t sz = sizeof(struct ft_maps) + len;
	struct ft_maps *m = calloc(1, sz);

	m->hdr.type = FT_REC_MAPS;
	m->time_ns = SYNTH_T0 + t_ns;
	m->len = len;
	memcpy(m->text, text, len);
	synth_rec(f, m, sz);
	free(m);
}

/* The current /proc/self/maps as a snapshot record. */
static void synth_self_maps(FILE *f, uint64_t t_ns)
{
	char *text = NULL;
	size_t len = 0, cap = 0, r;
	FILE *m = fopen("/proc/self/maps", "r");

	if (!m)
		return;
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			text = realloc(text, cap);
		}
		r = fread(text + len, 1, cap - len, m);
		len += r;
	} while (r > 0);
	fclose(m);
	synth_maps(f, t_ns, text, len);
	free(text);
}

static void synth_object(FILE *f, uint64_t t_ns, uint64_t base, const uint8_t *id, uint32_t idlen,
			 const char *path)
{
	size_t plen = strlen(path) + 1, sz = sizeof(struct ft_object) + plen;
	struct ft_object *o = calloc(1, sz);

	o->hdr.type = FT_REC_OBJECT;
	o->time_ns = SYNTH_T0 + t_ns;
	o->base = base;
	o->build_id_len = idlen;
	o->path_len = plen;
	memcpy(o->build_id, id, idlen);
	memcpy(o->path, path, plen);
	synth_rec(f, o, sz);
	free(o);
}

static void synth_region(FILE *f, uint64_t t_ns, uint32_t id, uint64_t start, uint64_t len,
			 uint64_t offset, const char *path)
{
	size_t plen = strlen(path) + 1, sz = sizeof(struct ft_region) + plen;
	struct ft_region *r = calloc(1, sz);

	r->hdr.type = FT_REC_REGION;
	r->time_ns = SYNTH_T0 + t_ns;
	r->id = id;
	r->path_len = plen;
	r->start = start;
	r->len = len;
	r->offset = offset;
	memcpy(r->path, path, plen);
	synth_rec(f, r, sz);
	free(r);
}

#endif
