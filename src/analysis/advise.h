/* Placement advice (report --advise, advise.c): which allocation sites to keep in local memory at
 * a given size, ranked, with the bytes each needs and the re-fetches keeping it is predicted to
 * save. Pure: sites in, plan out, so its unit test needs no recording. */
#ifndef FLTRACE_ADVISE_H
#define FLTRACE_ADVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Pages an instruction may need resident at once (the -L floor): never given to kept sites, as
 * record --keep-local never gives them (src/runtime/keep.c). */
#define ADVISE_ROOM_PAGES 16

/* A site as the recording shows it: its name (report --by alloc's alloc_site), the pages of its
 * memory first touched (its footprint) and the re-fetches of its pages. */
struct advise_site {
	const char *where;
	uint64_t pages, refetch;
};

struct advise_row {
	const char *where;
	uint64_t bytes;      /* pages * page size: the local memory keeping it takes */
	uint64_t refetch;    /* in the recording */
	bool keep;           /* fits in what is left of the local size, in rank order */
	uint64_t saved;      /* predicted re-fetches saved: refetch if kept, else 0 */
	uint64_t kept_bytes; /* bytes of the kept sites down to this row */
};

/* Ranks the sites with re-fetches by re-fetches per byte (ties: more re-fetches, then the name),
 * and keeps each in that order if its bytes fit in `local` less ADVISE_ROOM_PAGES pages less the
 * sites kept before it. Sites with no re-fetch save nothing and are left out. Writes at most n
 * rows (out has room for n); returns how many. Sites of the same name are to be merged first. */
size_t advise_plan(const struct advise_site *sites, size_t n, uint64_t local, uint64_t page_size,
		   struct advise_row *out);

struct as_report;
/* The named sites of a recording read by allocation site (allocsite.h), rows of one name merged:
 * pages = its first touches, refetch = its re-fetches. *out is malloc'ed. 0 or -ENOMEM. */
int advise_sites_of(const struct as_report *r, struct advise_site **out, size_t *n);
/* The plan as CSV, header first: rank,alloc_site,bytes,refetch,refetch_per_mb,keep,
 * predicted_saved,kept_bytes. 0 or -EIO. */
int advise_write_csv(FILE *out, const struct advise_row *rows, size_t n);

#endif
