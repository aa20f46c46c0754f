/* `fltrace sweep`'s files: the runs analysed (src/analysis/sweep_analysis.c), then every sweep row
 * of the writers table written into the sweep's directory (and on stdout, the rows that ask). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../src/analysis/report.h"
#include "cli.h"
#include "sweep.h"

/* One row's file, with one message if it cannot be written. */
static int sweep_write_file(const struct sweep *s, const struct report_writer *w,
			    const struct sweep_view *v)
{
	char path[PATH_MAX + 32];
	struct cli_out out;
	snprintf(path, sizeof(path), "%s/%s", s->outdir, w->file);
	FILE *f = cli_out_open(&out, path);
	if (!f)
		return CLI_EXIT_FAIL;
	int rc = w->write_sweep(f, v);
	if (rc) {
		cli_out_abort(&out);
		return cli_error(CLI_EXIT_FAIL, path, "writing failed (%s); free some space or give "
				 "another -o DIR", strerror(-rc));
	}
	return cli_out_close(&out);
}

int sweep_report(struct sweep *s)
{
	struct callsites *cs = NULL;
	char names[256];
	size_t n, len = 0;
	const struct report_writer *w = report_writers(&n);

	s->note = cli_note;
	int rc = sweep_analyse(s, &cs);
	if (rc)
		return cli_error(CLI_EXIT_FAIL, "sweep", "reading the traces failed: %s; check the runs "
				 "with 'fltrace report -i %s/<run>'", strerror(-rc), s->outdir);
	struct sweep_view v = { .s = s, .cs = cs };
	names[0] = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		if (w[i].cmd != WR_SWEEP)
			continue;
		rc = sweep_write_file(s, &w[i], &v);
		if (len < sizeof(names)) /* snprintf returns what it would have written */
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "",
						w[i].file);
	}
	if (!rc) {
		for (size_t i = 0; i < n; i++)
			if (w[i].cmd == WR_SWEEP && w[i].also_stdout)
				w[i].write_sweep(stdout, &v);
		printf("\nWritten in %s: %s; the command's output: %s/stdout. Look closer at one run "
		       "with e.g. 'fltrace report -i %s --by line --top 20'.\n", s->outdir, names,
		       s->runs[0].dir, s->runs[s->nruns - 1].dir);
	}
	callsites_free(cs);
	return rc;
}
