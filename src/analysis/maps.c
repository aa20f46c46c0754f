/* Maps history of one process: every /proc/<pid>/maps snapshot and loaded-object record of its
 * trace, so an address resolves to the mapping that held it at the fault's time. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

struct maps_snapshot {
	uint64_t time_ns;
	size_t n;
	struct maps_entry *v; /* sorted by start */
};

struct maps_history {
	size_t nsnap, capsnap;
	struct maps_snapshot *snap; /* sorted by time */
	size_t nobj, capobj;
	const struct ft_object **obj;
	size_t nstr, capstr;
	char **str; /* interned paths */
};

struct maps_history *maps_new(void)
{
	return calloc(1, sizeof(struct maps_history));
}

void maps_free(struct maps_history *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nsnap; i++)
		free(m->snap[i].v);
	for (size_t i = 0; i < m->nstr; i++)
		free(m->str[i]);
	for (size_t i = 0; i < m->nobj; i++)
		free((void *)m->obj[i]);
	free(m->snap);
	free(m->obj);
	free(m->str);
	free(m);
}

/* Paths repeat in every snapshot; keep one copy. A linear scan is enough: a process maps at
 * most a few hundred distinct files, and snapshots are few. */
static const char *maps_intern(struct maps_history *m, const char *s, size_t len)
{
	for (size_t i = m->nstr; i-- > 0;)
		if (strlen(m->str[i]) == len && memcmp(m->str[i], s, len) == 0)
			return m->str[i];
	if (m->nstr == m->capstr) {
		size_t cap = m->capstr ? m->capstr * 2 : 32;
		char **v = realloc(m->str, cap * sizeof(*v));
		if (!v)
			return NULL;
		m->str = v;
		m->capstr = cap;
	}
	m->str[m->nstr] = strndup(s, len);
	if (!m->str[m->nstr])
		return NULL;
	return m->str[m->nstr++];
}

static int maps_entry_cmp(const void *a, const void *b)
{
	const struct maps_entry *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* One line of /proc/<pid>/maps: "start-end perms offset dev inode   path". */
static int maps_parse_line(struct maps_history *m, const char *line, size_t len,
			   struct maps_entry *e)
{
	char buf[128];
	unsigned long long start, end, off, inode;
	char perms[8];
	int pos = 0;
	size_t head = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
	const char *p;

	memcpy(buf, line, head);
	buf[head] = 0;
	if (sscanf(buf, "%llx-%llx %7s %llx %*s %llu %n", &start, &end, perms, &off, &inode,
		   &pos) < 5)
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	e->start = start;
	e->end = end;
	e->offset = off;
	e->inode = inode;
	memcpy(e->perms, perms, 4);
	p = line + pos;
	if (pos == 0 || (size_t)pos > len)
		p = line + len;
	while (p < line + len && *p == ' ')
		p++;
	e->path = maps_intern(m, p, line + len - p);
	return e->path ? 0 : -ENOMEM;
}

int maps_add_snapshot(struct maps_history *m, uint64_t time_ns, const char *text, size_t len)
{
	struct maps_snapshot s = { .time_ns = time_ns };
	size_t cap = 0, i;
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t l = (nl ? nl : end) - p;
		struct maps_entry e;

		if (l && maps_parse_line(m, p, l, &e) == 0) {
			if (s.n == cap) {
				struct maps_entry *v;
				cap = cap ? cap * 2 : 64;
				v = realloc(s.v, cap * sizeof(*v));
				if (!v) {
					free(s.v);
					return -ENOMEM;
				}
				s.v = v;
			}
			s.v[s.n++] = e;
		}
		p += l + 1;
	}
	if (s.n)
		qsort(s.v, s.n, sizeof(s.v[0]), maps_entry_cmp);
	if (m->nsnap == m->capsnap) {
		size_t c = m->capsnap ? m->capsnap * 2 : 8;
		struct maps_snapshot *v = realloc(m->snap, c * sizeof(*v));
		if (!v) {
			free(s.v);
			return -ENOMEM;
		}
		m->snap = v;
		m->capsnap = c;
	}
	/* Keep time order; snapshots arrive almost always in order, so this moves little. */
	for (i = m->nsnap; i > 0 && m->snap[i - 1].time_ns > time_ns; i--)
		m->snap[i] = m->snap[i - 1];
	m->snap[i] = s;
	m->nsnap++;
	return 0;
}

int maps_add_object(struct maps_history *m, const struct ft_object *obj)
{
	if (m->nobj == m->capobj) {
		size_t c = m->capobj ? m->capobj * 2 : 16;
		const struct ft_object **v = realloc(m->obj, c * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->obj = v;
		m->capobj = c;
	}
	/* A copy: the history outlives the mapped trace file. */
	m->obj[m->nobj] = malloc(obj->hdr.size);
	if (!m->obj[m->nobj])
		return -ENOMEM;
	memcpy((void *)m->obj[m->nobj], obj, obj->hdr.size);
	m->nobj++;
	return 0;
}

static const struct maps_entry *maps_snapshot_find(const struct maps_snapshot *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->v[mid].end <= addr)
			lo = mid + 1;
		else if (s->v[mid].start > addr)
			hi = mid;
		else
			return &s->v[mid];
	}
	return NULL;
}

const struct maps_entry *maps_lookup(const struct maps_history *m, uint64_t addr, uint64_t t)
{
	const struct maps_entry *e;
	size_t i, first_after = m->nsnap;

	for (i = m->nsnap; i-- > 0;) {
		if (m->snap[i].time_ns > t) {
			first_after = i;
			continue;
		}
		if ((e = maps_snapshot_find(&m->snap[i], addr)))
			return e;
	}
	/* Mapped after the fault's snapshot (a library loaded between snapshots): the next ones. */
	for (i = first_after; i < m->nsnap; i++)
		if ((e = maps_snapshot_find(&m->snap[i], addr)))
			return e;
	return NULL;
}

const uint8_t *maps_build_id(const struct maps_history *m, const char *path, uint32_t *len)
{
	for (size_t i = m->nobj; i-- > 0;)
		if (strcmp(m->obj[i]->path, path) == 0) {
			*len = m->obj[i]->build_id_len;
			return m->obj[i]->build_id;
		}
	*len = 0;
	return NULL;
}

size_t maps_nr_objects(const struct maps_history *m)
{
	return m->nobj;
}

const struct ft_object *maps_object(const struct maps_history *m, size_t i)
{
	return i < m->nobj ? m->obj[i] : NULL;
}
