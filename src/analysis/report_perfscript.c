/* The perf-script writer: the grouped rows as `perf script` prints sampled stacks, one sample per
 * row weighted by its pages in perf's period field, so the file grows with the callsites, never
 * with the faults (a copy of a stack per page made it 4x the trace it came from). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* perf's columns are space-separated: a name must not carry a space where a reader splits. */
static void ps_put_word(FILE *o, const char *s)
{
	for (; *s; s++)
		fputc(*s == ' ' || *s == '\t' || *s == '\n' ? '_' : *s, o);
}

/* A function name: perf-script readers cut at '(' (argument lists) and split at " (". */
static void ps_put_func(FILE *o, const char *s)
{
	if (!strcmp(s, "??")) {
		fputs("[unknown]", o);
		return;
	}
	for (; *s; s++)
		fputc(*s == '(' || *s == ')' ? '_' : *s == '\n' ? ' ' : *s, o);
}

/* Frame lines as perf prints them ("\taddress symbol (object)"), kept short: the address in the
 * object (as objdump and addr2line count it, a few digits where a load address takes 12) and
 * the object by its file name, unpadded; readers take the symbol and the object's name. */
static void ps_frames(FILE *o, const struct report_view *v, const struct agg_row *r)
{
	if (!r->depth)
		fputs("\t0 [no_stack] ([unknown])\n", o);
	for (uint32_t k = 0; k < r->depth; k++) {
		const struct sym_frame *fr = r->frames ? sym_frame(v->sym, r->frames[k]) : NULL;
		const char *lib = fr ? strrchr(fr->lib, '/') : NULL;
		if (!fr) {
			fprintf(o, "\t%" PRIx64 " [unknown] ([unknown])\n", r->ips[k]);
			continue;
		}
		/* Inlined functions first, as perf prints them: innermost at the top. */
		for (unsigned i = 0; i < fr->nr_locs; i++) {
			fprintf(o, "\t%" PRIx64 " ", fr->resolved ? fr->obj_addr : r->ips[k]);
			ps_put_func(o, fr->locs[i].func);
			fputs(" (", o);
			ps_put_word(o, lib ? lib + 1 : fr->lib);
			fputs(")\n", o);
		}
	}
}

int report_write_perf_script(FILE *o, const struct report_view *v)
{
	struct agg_row **rows;
	size_t n = agg_rows(v->rows, &rows);
	const char *comm = strrchr(v->exe, '/');

	comm = comm ? comm + 1 : v->exe[0] ? v->exe : "?";
	for (size_t i = 0; i < n; i++) {
		const struct agg_row *r = rows[i];
		uint64_t t = r->first_ns;

		/* The sample's period is the row's pages, as perf prints a sampling period; its time
		 * is the row's first fault. One event name for all: stackcollapse-perf.pl keeps only
		 * the first event it sees. */
		ps_put_word(o, comm);
		fprintf(o, " %u/%u [000] %" PRIu64 ".%06" PRIu64 ": %" PRIu64 " page-faults:\n",
			r->pid, r->pid, t / 1000000000, t % 1000000000 / 1000, r->count);
		ps_frames(o, v, r);
		fputc('\n', o);
	}
	return ferror(o) ? -EIO : 0;
}
