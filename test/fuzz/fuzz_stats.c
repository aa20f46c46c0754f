/* libFuzzer target: the stats parser (src/analysis/runstats.c and statsfile.c, over
 * src/common/statsline.c), on any bytes as a fltrace-data-stats-<pid>.out file. */
#include <string.h>

#include <fltrace/statsline.h>

#include "../../src/analysis/analysis.h"
#include "../../src/analysis/runstats.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_file(data, size);
	struct runstats s;
	char why[1024];
	uint64_t v;

	memset(&s, 0, sizeof(s));
	runstats_add_file(&s, path);
	char *line = runstats_last_line(path);
	stats_nostack_why(line, why, sizeof(why));
	if (line)
		statsline_get(line, strlen(line), "faults", &v);
	free(line);
	statsline_get((const char *)data, size, "faults_zp", &v);
	return 0;
}
