/* libFuzzer target: the trace reader (src/analysis/trace_reader.c) and what is built from its
 * records (load.c's process: the maps history of its MAPS and OBJECT records and the table of its
 * faults; allocsite.c's matching of faults to allocations), on any bytes as a trace file: as they
 * are, and (version 2) with every checksum made right again, so that mutations reach the code
 * behind the checks too. */
#include <string.h>

#include <fltrace/crc32c.h>

#include "../../src/analysis/allocsite.h"
#include "../../src/analysis/analysis.h"
#include "fuzz_input.h"

static void fuzz_allocsites(const char *path)
{
	struct allocsites *a = allocsites_new();
	const struct as_site *sites;
	const struct ft_rec_hdr *h;
	struct trace *t;
	char err[512];

	if (!a || trace_open(path, &t, err, sizeof(err))) {
		allocsites_free(a);
		return;
	}
	/* Twice, rewound, as --raw and visualize read a trace again. */
	for (int pass = 0; pass < 2; pass++) {
		while ((h = trace_next(t)))
			if (pass == 0 && h->type == FT_REC_FAULT)
				allocsites_fault(a, t->hdr, (const void *)h);
			else if (pass == 0)
				allocsites_record(a, t->hdr, h);
		trace_rewind(t);
	}
	allocsites_trace_done(a);
	allocsites_sites(a, &sites);
	trace_close(t);
	allocsites_free(a);
}

static void fuzz_read(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_file(data, size);
	struct an_process *p = NULL;
	struct agg_row **rows;
	char err[512];

	if (an_process_load(path, NULL, NULL, NULL, &p, err, sizeof(err)) == 0) {
		size_t n = agg_rows(p->rows, &rows);
		/* Every recorded frame resolves against the history (or to nothing). */
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < rows[i]->depth; k++)
				maps_lookup(p->maps, rows[i]->ips[k], p->start_ns);
		an_process_free(p);
	}
	fuzz_allocsites(path);
}

/* A version 2 trace's header checksum and every record's (walked by their sizes), recomputed in
 * place, as the recorder would have written them. False if there was nothing to fix. */
static bool fuzz_fix_checks(uint8_t *buf, size_t size)
{
	struct ft_file_header2 h;
	struct ft_rec_hdr r;

	if (size < sizeof(h))
		return false;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.h.magic, FT_MAGIC, 8) || h.h.version != 2 || h.h.header_size < sizeof(h) ||
	    h.h.header_size > size)
		return false;
	uint64_t end = h.data_end;
	h.data_end = 0;
	h.header_crc = 0;
	h.header_crc = crc32c(crc32c(0, &h, sizeof(h)), buf + sizeof(h), h.h.header_size - sizeof(h));
	h.data_end = end;
	memcpy(buf, &h, sizeof(h));
	for (size_t pos = h.h.header_size; pos + sizeof(r) <= size; pos += r.size) {
		memcpy(&r, buf + pos, sizeof(r));
		if (r.size < sizeof(r) + sizeof(struct ft_rec_check) || r.size % FT_ALIGN ||
		    r.size > size - pos)
			break;
		struct ft_rec_check c = { .crc = crc32c(0, buf + pos, r.size - sizeof(c)) };
		memcpy(buf + pos + r.size - sizeof(c), &c, sizeof(c));
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_read(data, size);
	uint8_t *fixed = malloc(size ? size : 1);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	if (fuzz_fix_checks(fixed, size))
		fuzz_read(fixed, size);
	free(fixed);
	return 0;
}
