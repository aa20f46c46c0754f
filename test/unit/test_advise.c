/* Unit tests of src/analysis/advise.c, the placement advice model: sites ranked by re-fetches per
 * byte, kept greedily while they fit in the local size less 16 pages, its CSV. One line per case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/analysis/advise.h"

#define PAGE 4096ull
#define MB (1ull << 20)

static int failures;

static void expect(const char *name, int ok, const char *why)
{
	if (ok)
		printf("PASS %s\n", name);
	else
		printf("FAIL %s: %s\n", name, why), failures++;
}

/* "name:keep" of each row, joined by spaces */
static const char *plan_text(const struct advise_row *r, size_t n)
{
	static char buf[512];
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s:%s", i ? " " : "", r[i].where,
					r[i].keep ? "keep" : "far");
	return buf;
}

int main(void)
{
	struct advise_row rows[8];
	char why[600];

	/* per byte: hot 8 re-fetches a page, warm 4, cold 2; the cold one has the most in all */
	const struct advise_site heat[] = {
		{ "cold.c:3", 4096, 8192 }, { "hot.c:1", 512, 4096 }, { "warm.c:2", 1024, 4096 },
		{ "idle.c:4", 100, 0 },
	};
	size_t n = advise_plan(heat, 4, 5 * MB, PAGE, rows);
	snprintf(why, sizeof(why), "%zu rows: %s", n, plan_text(rows, n));
	expect("advise_rank_per_byte", n == 3 && !strcmp(plan_text(rows, n),
	       "hot.c:1:keep warm.c:2:far cold.c:3:far"), why);
	expect("advise_saved", rows[0].saved == 4096 && rows[1].saved == 0 && rows[0].bytes == 512 * PAGE &&
	       rows[2].kept_bytes == 512 * PAGE, "saved / bytes / kept_bytes wrong");

	/* 8 MB less 16 pages holds hot + warm (1536 pages of 2032), not cold as well */
	n = advise_plan(heat, 4, 8 * MB, PAGE, rows);
	expect("advise_fits_two", !strcmp(plan_text(rows, n), "hot.c:1:keep warm.c:2:keep cold.c:3:far"),
	       plan_text(rows, n));

	/* a site that does not fit is passed over; a smaller one after it still goes in */
	const struct advise_site skip[] = { { "a", 100, 1000 }, { "big", 2000, 10000 }, { "c", 50, 100 } };
	n = advise_plan(skip, 3, (150 + 16) * PAGE, PAGE, rows);
	expect("advise_skip_big", !strcmp(plan_text(rows, n), "a:keep big:far c:keep"), plan_text(rows, n));
	expect("advise_kept_bytes", rows[2].kept_bytes == 150 * PAGE, "kept bytes of a and c");

	/* the 16 pages of -L's floor are never given: exactly 100 + 16 pages fits a, 115 does not */
	n = advise_plan(skip, 3, 115 * PAGE, PAGE, rows);
	expect("advise_room_kept", !rows[0].keep && !strcmp(rows[0].where, "a") && rows[2].keep,
	       plan_text(rows, n));
	n = advise_plan(skip, 3, 8 * PAGE, PAGE, rows);
	expect("advise_tiny", n == 3 && !rows[0].keep && !rows[1].keep && !rows[2].keep, plan_text(rows, n));

	/* equal density: more re-fetches first, then the name */
	const struct advise_site tie[] = { { "b", 10, 20 }, { "a", 10, 20 }, { "z", 20, 40 } };
	n = advise_plan(tie, 3, 0, PAGE, rows);
	expect("advise_ties", !strcmp(plan_text(rows, n), "z:far a:far b:far"), plan_text(rows, n));

	/* the CSV: header, one row per site, names quoted where CSV needs it */
	const struct advise_site odd[] = { { "f, g", 1, 3 } };
	n = advise_plan(odd, 1, 1 * MB, PAGE, rows);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	advise_write_csv(m, rows, n);
	fclose(m);
	expect("advise_csv", !strcmp(text, "rank,alloc_site,bytes,refetch,refetch_per_mb,keep,predicted_saved,"
	       "kept_bytes\n1,\"f, g\",4096,3,768.0,yes,3,4096\n"), text);
	free(text);

	return failures ? 1 : 0;
}
