/* The perf-script writer: the grouped rows as `perf script` prints sampled stacks, a sample per
 * faulted page, so stackcollapse-perf.pl and the Firefox Profiler read them as CPU samples. */
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

static void ps_frames(FILE *o, const struct report_view *v, const struct agg_row *r)
{
	if (!r->depth)
		fputs("\t               0 [no_stack] ([unknown])\n", o);
	for (uint32_t k = 0; k < r->depth; k++) {
		const struct sym_frame *fr = r->frames ? sym_frame(v->sym, r->frames[k]) : NULL;
		if (!fr) {
			fprintf(o, "\t%16" PRIx64 " [unknown] ([unknown])\n", r->ips[k]);
			continue;
		}
		/* Inlined functions first, as perf prints them: innermost at the top. */
		for (unsigned i = 0; i < fr->nr_locs; i++) {
			fprintf(o, "\t%16" PRIx64 " ", r->ips[k]);
			ps_put_func(o, fr->locs[i].func);
			fputs(" (", o);
			ps_put_word(o, fr->lib);
			fputs(")\n", o);
		}
	}
}

int report_write_perf_script(FILE *o, const struct report_view *v)
{
	struct agg_row **rows;
	size_t n = agg_rows(v->rows, &rows);
	const char *comm = strrchr(v->exe, '/');
	char *stack = NULL;
	size_t len = 0;

	comm = comm ? comm + 1 : v->exe[0] ? v->exe : "?";
	for (size_t i = 0; i < n; i++) {
		const struct agg_row *r = rows[i];
		uint64_t t = r->first_ns;
		FILE *m = open_memstream(&stack, &len);

		if (!m)
			return -ENOMEM;
		ps_frames(m, v, r);
		if (fclose(m))
			return -ENOMEM;
		/* One sample per page: readers count samples, not a period. A callsite's samples
		 * carry the time of its first fault. One event name for all: stackcollapse-perf.pl
		 * keeps only the first event it sees. */
		for (uint64_t c = 0; c < r->count; c++) {
			ps_put_word(o, comm);
			fprintf(o, " %u/%u [000] %" PRIu64 ".%06" PRIu64 ": 1 page-faults:\n",
				r->pid, r->pid, t / 1000000000, t % 1000000000 / 1000);
			fputs(stack, o);
			fputc('\n', o);
		}
		free(stack);
		stack = NULL;
	}
	return ferror(o) ? -EIO : 0;
}
