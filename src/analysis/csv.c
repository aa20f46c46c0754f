/* Text writers shared by the report views: RFC 4180 CSV fields, JSON strings and folded-stack
 * frame names. */
#include <string.h>

#include "analysis.h"

void csv_put(FILE *out, const char *s)
{
	/* C++ names carry commas, paths may carry quotes: quote only when needed, so plain
	 * fields stay as the earlier tool wrote them. */
	if (!s[strcspn(s, ",\"\r\n")]) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

/* Folded format: ';' separates frames and the last ' ' precedes the count, so a name must
 * carry neither a ';' nor a newline. Spaces are fine: readers split at the last one. */
static void folded_put_name(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s, out);
}

void folded_put_frame(FILE *out, const struct sym_frame *fr)
{
	/* Inlined functions become frames of their own, outermost first like real calls. */
	for (unsigned i = fr->nr_locs; i-- > 0;) {
		const struct sym_loc *l = &fr->locs[i];
		const char *base = strrchr(l->file, '/');

		folded_put_name(out, l->func);
		fputs(" (", out);
		if (!fr->resolved || !strcmp(l->file, "??")) {
			const char *lb = strrchr(fr->lib, '/');
			folded_put_name(out, lb ? lb + 1 : fr->lib);
		} else {
			folded_put_name(out, base ? base + 1 : l->file);
			if (l->line)
				fprintf(out, ":%u", l->line);
		}
		fputc(')', out);
		if (i)
			fputc(';', out);
	}
}

void json_put(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}
