/* libFuzzer target: the maps history parser (src/analysis/maps.c), on any bytes as the text of
 * /proc/<pid>/maps snapshots: the input is cut at its first NUL into two snapshots (earlier and
 * later), and its first 64 8-byte words are looked up as addresses at three times. */
#include <string.h>

#include "../../src/analysis/analysis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct maps_history *m = maps_new();
	const char *text = (const char *)data;
	const char *nul = memchr(text, 0, size);
	size_t first = nul ? (size_t)(nul - text) : size;

	if (!m)
		return 0;
	maps_add_snapshot(m, 1000, text, first);
	if (nul)
		maps_add_snapshot(m, 2000, nul + 1, size - first - 1);
	for (size_t i = 0; i + 8 <= size && i < 64 * 8; i += 8) {
		uint64_t addr;
		memcpy(&addr, data + i, 8);
		for (uint64_t t = 500; t <= 2500; t += 1000) {
			const struct maps_entry *e = maps_lookup(m, addr, t);
			if (e && (e->start > addr || e->end <= addr || !e->path))
				__builtin_trap(); /* a lookup must hold the address it was asked for */
		}
	}
	maps_free(m);
	return 0;
}
