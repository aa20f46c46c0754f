/* record --keep-local: the allocation sites named as `report --by alloc` names them (file:line, or
 * a function) resolved to code ranges of the command's executable, for the runtime (keep.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "record.h"

#define KEEP_MAX_RANGES 256 /* as many as the runtime takes (keep.c) */

struct keep_ranges {
	uint64_t lo[KEEP_MAX_RANGES], hi[KEEP_MAX_RANGES];
	unsigned n;
	bool full;
};

static void keep_range_add(struct keep_ranges *r, uint64_t lo, uint64_t hi)
{
	if (r->n && r->hi[r->n - 1] == lo) { /* rows of one line in a row: one range */
		r->hi[r->n - 1] = hi;
		return;
	}
	if (r->n == KEEP_MAX_RANGES) {
		r->full = true;
		return;
	}
	r->lo[r->n] = lo;
	r->hi[r->n++] = hi;
}

static const char *keep_base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* A line table's file (`full`: its directory's path when the table gives it) is the site's file:
 * same name, and the site's path, if it has one, ends the full one. */
static bool keep_file_matches(const char *site_file, size_t n, const char *name, const char *full)
{
	const char *sb = memrchr(site_file, '/', n);
	size_t bn = sb ? n - (size_t)(sb + 1 - site_file) : n;
	if (strlen(name) != bn || memcmp(name, sb ? sb + 1 : site_file, bn))
		return false;
	if (!sb)
		return true;
	size_t fl = strlen(full);
	return fl >= n && !memcmp(full + fl - n, site_file, n) && (fl == n || full[fl - n - 1] == '/');
}

/* Runs argv[0] (objdump or nm) on the executable; each line of its output to `line`. */
static int keep_run_tool(const char *tool, const char *opt, const char *exe,
			 void (*line)(char *text, void *arg), void *arg)
{
	int fd[2];
	if (pipe(fd) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -errno;
	}
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);
		execlp(tool, tool, opt, exe, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	FILE *f = fdopen(fd[0], "r");
	char *buf = NULL;
	size_t cap = 0;
	while (f && getline(&buf, &cap, f) > 0)
		line(buf, arg);
	free(buf);
	if (f)
		fclose(f);
	else
		close(fd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ENOEXEC;
}

/* ---- file:line: the rows of `objdump --dwarf=decodedline -w` ---- */
struct keep_lines {
	const char *file;    /* the site's file, `flen` bytes */
	size_t flen;
	unsigned long line;
	struct keep_ranges *out;
	char dir[4096];      /* the full path of the table's current file */
	bool have_prev, prev_match;
	uint64_t prev_addr;
};

static void keep_line_row(char *text, void *arg)
{
	struct keep_lines *k = arg;
	char name[1024], line[32], addr[32];
	size_t n = strlen(text);
	while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
		text[--n] = '\0';
	if (n && text[n - 1] == ':' && !strchr(text, ' ')) { /* "path:" or "CU: path:" heads a file */
		snprintf(k->dir, sizeof(k->dir), "%.*s", (int)(n - 1), text);
		return;
	}
	if (!strncmp(text, "CU: ", 4) && n && text[n - 1] == ':') {
		snprintf(k->dir, sizeof(k->dir), "%.*s", (int)(n - 5), text + 4);
		return;
	}
	if (sscanf(text, "%1023s %31s %31s", name, line, addr) != 3 || strncmp(addr, "0x", 2))
		return;
	uint64_t a = strtoull(addr, NULL, 16);
	if (k->have_prev && k->prev_match && a > k->prev_addr)
		keep_range_add(k->out, k->prev_addr, a);
	if (!strcmp(line, "-")) { /* the end of a sequence */
		k->have_prev = false;
		return;
	}
	const char *full = !strcmp(keep_base(k->dir), name) ? k->dir : name;
	k->have_prev = true;
	k->prev_addr = a;
	k->prev_match = strtoul(line, NULL, 10) == k->line &&
			keep_file_matches(k->file, k->flen, name, full);
}

/* ---- a function: `nm --defined-only -S -C` ---- */
struct keep_func {
	const char *name;
	struct keep_ranges *out;
};

static void keep_func_row(char *text, void *arg)
{
	struct keep_func *k = arg;
	uint64_t addr, size;
	char type;
	int at = 0;
	if (sscanf(text, "%" SCNx64 " %" SCNx64 " %c %n", &addr, &size, &type, &at) < 3 || !at)
		return;
	char *name = text + at;
	name[strcspn(name, "\n")] = '\0';
	if ((type == 'T' || type == 't' || type == 'W' || type == 'w') && size && !strcmp(name, k->name))
		keep_range_add(k->out, addr, addr + size);
}

/* One site into ranges: "file:line" (a " (discriminator N)" after it ignored), "exe+0xoffset" (the
 * call's address, where no line is known; a " < caller" after it is not looked at), else a
 * function ("name (lib)" as report prints a frame without a line: the name). */
static int keep_resolve_site(const char *exe, const char *site, size_t len, struct keep_ranges *r)
{
	char s[1024];
	snprintf(s, sizeof(s), "%.*s", (int)len, site);
	char *cut = strstr(s, " (");
	if (cut)
		*cut = '\0';
	if ((cut = strstr(s, " < "))) /* a stripped wrapper's caller: its call alone names it here */
		*cut = '\0';
	unsigned before = r->n;
	/* "object+0xoffset", a call where no line is known: the executable's own code only */
	char *plus = strstr(s, "+0x");
	if (plus && (size_t)(plus - s) == strlen(keep_base(exe)) && !strncmp(s, keep_base(exe), (size_t)(plus - s))) {
		char *e = NULL;
		uint64_t at = strtoull(plus + 3, &e, 16);
		if (e && !*e && e != plus + 3) {
			keep_range_add(r, at, at + 1);
			return 0;
		}
	}
	char *colon = strrchr(s, ':');
	char *end = NULL;
	unsigned long line = colon ? strtoul(colon + 1, &end, 10) : 0;
	int err;
	if (colon && end && !*end && line && colon > s) {
		struct keep_lines k = { .file = s, .flen = (size_t)(colon - s), .line = line, .out = r };
		err = keep_run_tool("objdump", "--dwarf=decodedline", exe, keep_line_row, &k);
	} else {
		struct keep_func k = { .name = s, .out = r };
		err = keep_run_tool("nm", "-SC", exe, keep_func_row, &k);
	}
	if (err)
		return cli_error(CLI_EXIT_USAGE, "--keep-local", "cannot read the code of %s with %s; "
				 "install binutils (deps.sh)", exe, colon ? "objdump" : "nm");
	if (r->full)
		return cli_error(CLI_EXIT_USAGE, "--keep-local", "the sites cover more than %d code ranges "
				 "of %s; name fewer sites", KEEP_MAX_RANGES, exe);
	if (r->n == before)
		return cli_error(CLI_EXIT_USAGE, "--keep-local", "'%s' names no code of %s (no such "
				 "line in its debug information, no such function); give a site as "
				 "'fltrace report --by alloc' names it, e.g. prog.c:42 or a function",
				 s, exe);
	return 0;
}

int record_resolve_keep(struct record_opts *o)
{
	if (!o->keep_sites)
		return 0;
	/* The runtime compares it with /proc/self/exe: symbolic links resolved. */
	char exe[PATH_MAX];
	if (!realpath(o->cmd_path, exe))
		return cli_error(CLI_EXIT_USAGE, "--keep-local", "cannot resolve %s (%s)", o->cmd_path,
				 strerror(errno));
	static struct keep_ranges r;
	memset(&r, 0, sizeof(r));
	for (const char *p = o->keep_sites; *p;) {
		size_t n = strcspn(p, ",");
		int err = n ? keep_resolve_site(exe, p, n, &r) : 0;
		if (err)
			return err;
		p += n;
		p += *p == ',';
	}
	size_t cap = strlen(exe) + 2 + (size_t)r.n * 36;
	char *env = malloc(cap);
	if (!env)
		return cli_error(CLI_EXIT_NOTRACE, "--keep-local", "out of memory; free some and retry");
	int at = snprintf(env, cap, "%s|", exe);
	for (unsigned i = 0; i < r.n; i++)
		at += snprintf(env + at, cap - (size_t)at, "%s%" PRIx64 "-%" PRIx64, i ? "," : "", r.lo[i], r.hi[i]);
	o->keep_env = env;
	return 0;
}
