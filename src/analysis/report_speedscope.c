/* The speedscope writer: the grouped rows as speedscope's JSON file format, two sampled
 * profiles over the same stacks: faults (weight = pages) and service time (nanoseconds). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* A frame is keyed by "name\tfile\tline"; the key is split again when the frames are written. */
static int64_t ss_frame(struct intern *frames, const char *name, const char *file, unsigned line)
{
	char *key;
	int64_t id;

	if (asprintf(&key, "%s\t%s\t%u", name, file, line) < 0)
		return -ENOMEM;
	for (char *p = key; *p; p++)
		if (*p == '\t' && p < key + strlen(name))
			*p = ' '; /* a tab inside a name must not split the key */
	id = intern_id(frames, key, NULL);
	free(key);
	return id;
}

/* One row's stack, root first, inline levels as frames of their own (outermost first). */
static int ss_stack(FILE *o, struct intern *frames, const struct report_view *v,
		    const struct agg_row *r)
{
	bool first = true;
	char name[64];

	fputc('[', o);
	if (!r->depth) {
		int64_t id = ss_frame(frames, "[no stack]", "", 0);
		if (id < 0)
			return (int)id;
		fprintf(o, "%" PRId64, id);
	}
	for (uint32_t k = r->depth; k-- > 0;) {
		const struct sym_frame *fr = r->frames ? sym_frame(v->sym, r->frames[k]) : NULL;
		if (!fr) {
			int64_t id;
			snprintf(name, sizeof(name), "0x%" PRIx64, r->ips[k]);
			if ((id = ss_frame(frames, name, "", 0)) < 0)
				return (int)id;
			fprintf(o, "%s%" PRId64, first ? "" : ",", id);
			first = false;
			continue;
		}
		for (unsigned i = fr->nr_locs; i-- > 0;) {
			const struct sym_loc *l = &fr->locs[i];
			int64_t id = ss_frame(frames, l->func, strcmp(l->file, "??") ? l->file :
					      fr->lib, l->line);
			if (id < 0)
				return (int)id;
			fprintf(o, "%s%" PRId64, first ? "" : ",", id);
			first = false;
		}
	}
	fputc(']', o);
	return 0;
}

static void ss_profile(FILE *o, const char *name, const char *unit, uint64_t end,
		       const char *samples, const struct report_view *v, bool latency)
{
	struct agg_row **rows;
	size_t n = agg_rows(v->rows, &rows);

	fputs("{\"type\":\"sampled\",\"name\":", o);
	json_put(o, name);
	fprintf(o, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64 ",\"samples\":%s,"
		"\"weights\":[", unit, end, samples);
	for (size_t i = 0; i < n; i++)
		fprintf(o, "%s%" PRIu64, i ? "," : "", latency ? rows[i]->lat_total_ns : rows[i]->count);
	fputs("]}", o);
}

static void ss_frames(FILE *o, const struct intern *frames)
{
	fputs("\"shared\":{\"frames\":[", o);
	for (size_t i = 0; i < frames->n; i++) {
		char *key = frames->strs[i], *t1 = strchr(key, '\t'), *t2 = strrchr(key, '\t');
		*t1 = 0;
		fprintf(o, "%s{\"name\":", i ? "," : "");
		json_put(o, key);
		*t2 = 0;
		if (t1[1]) {
			fputs(",\"file\":", o);
			json_put(o, t1 + 1);
		}
		if (strcmp(t2 + 1, "0"))
			fprintf(o, ",\"line\":%s", t2 + 1);
		fputc('}', o);
	}
	fputs("]}", o);
}

int report_write_speedscope(FILE *o, const struct report_view *v)
{
	struct intern frames = { 0 };
	struct agg_row **rows;
	size_t n = agg_rows(v->rows, &rows), len = 0;
	uint64_t lat = 0;
	char *samples = NULL, title[4200];
	FILE *m = open_memstream(&samples, &len);
	int ret = m ? 0 : -ENOMEM;

	for (size_t i = 0; i < n && !ret; i++) {
		fputc(i ? ',' : '[', m);
		ret = ss_stack(m, &frames, v, rows[i]);
		lat += rows[i]->lat_total_ns;
	}
	if (m) {
		if (!n)
			fputc('[', m);
		fputc(']', m);
		if (fclose(m))
			ret = -ENOMEM;
	}
	if (!ret) {
		fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",", o);
		fputs("\"exporter\":\"fltrace report\",\"name\":", o);
		snprintf(title, sizeof(title), "page faults: %s", v->title);
		json_put(o, title);
		fputs(",\"activeProfileIndex\":0,\"profiles\":[", o);
		ss_profile(o, "faults (pages)", "none", agg_total(v->rows), samples, v, false);
		fputc(',', o);
		ss_profile(o, "fault service time", "nanoseconds", lat, samples, v, true);
		fputs("],", o);
		ss_frames(o, &frames);
		fputs("}\n", o);
	}
	free(samples);
	intern_free(&frames);
	return ret;
}
