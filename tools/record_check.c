/* The checks `fltrace record` makes before it changes anything: sizes, --cores, the command (found
 * as execvp finds it, dynamic, not setuid), userfaultfd permission and the preload library. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli.h"
#include "record.h"

#define CHECK_MB (1024.0 * 1024.0)
/* The kernel follows at most this many "#!" interpreters (BINPRM_MAX_RECURSION). */
#define CHECK_MAX_SCRIPT_DEPTH 4
#define CHECK_MAX_PHDRS 4096

/* MemTotal of /proc/meminfo in bytes, or 0 if it cannot be read. */
uint64_t record_memtotal(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

#define RECORD_MIN_LOCAL_PAGES 16

int record_check_memory(struct record_opts *o)
{
	uint64_t total = record_memtotal();
	long page = sysconf(_SC_PAGESIZE);

	/* A learning run needs no sizes (like `perf record`): without -M, the bound is what the
	 * machine has; without -L, local memory is all of it, so nothing is ever evicted. */
	if (!o->maxmem) {
		if (!total)
			return cli_error(CLI_EXIT_USAGE, "-M", "not given, and this machine's memory cannot "
					 "be read from /proc/meminfo; give -M, e.g. -M 1000");
		if (o->localmem > total)
			return cli_error(CLI_EXIT_USAGE, "-L", "%.1f MB is more than this machine's memory "
					 "(%.1f MB; far memory is emulated in local memory); give -L %llu "
					 "or less", o->localmem / CHECK_MB, total / CHECK_MB,
					 (unsigned long long)(total >> 20));
		o->maxmem = total;
		o->maxmem_default = true;
	}
	if (!o->localmem) {
		o->localmem = o->maxmem;
		o->localmem_default = true;
	}
	if (o->localmem > o->maxmem)
		return cli_error(CLI_EXIT_USAGE, "-L", "local memory (%.1f MB) is larger than -M "
				 "(%.1f MB); give -L at most -M, or raise -M",
				 o->localmem / CHECK_MB, o->maxmem / CHECK_MB);
	/* Far memory on memory servers is not this machine's: -M may exceed it (the servers' room is
	 * checked in record_check_far). */
	bool remote = o->far == FLTRACE_BACKEND_memcached;
	if (total && o->maxmem > total && !remote)
		return cli_error(CLI_EXIT_USAGE, "-M", "%.1f MB is more than this machine's memory "
				 "(%.1f MB; far memory is emulated in local memory); give -M %llu or less",
				 o->maxmem / CHECK_MB, total / CHECK_MB,
				 (unsigned long long)(total >> 20));
	/* One instruction may need several pages resident at once (an access across a page boundary,
	 * a string move's source and destination, a gather, its own code with --files=all): with fewer
	 * local pages than that, each fault evicts a page the instruction still needs and it never
	 * completes (seen: one write across two pages at -L 4K, 2.9 M faults in 2 minutes). */
	if (page > 0 && o->localmem < (uint64_t)page * RECORD_MIN_LOCAL_PAGES)
		return cli_error(CLI_EXIT_USAGE, "-L", "%llu bytes is less than %d pages (%ldK), the least "
				 "fltrace needs: one instruction may need several pages at once; give at "
				 "least -L %ldK", (unsigned long long)o->localmem, RECORD_MIN_LOCAL_PAGES,
				 page * RECORD_MIN_LOCAL_PAGES / 1024, page * RECORD_MIN_LOCAL_PAGES / 1024);
	return 0;
}

int record_check_cores(const struct record_opts *o)
{
	cpu_set_t set;
	struct cpulist usable;
	char list[256];
	int missing;

	if (!o->have_cores)
		return 0;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return cli_error(CLI_EXIT_NOTRACE, "--cores", "cannot read the usable CPUs: %s; "
				 "run without --cores", strerror(errno));
	memset(&usable, 0, sizeof(usable));
	for (unsigned c = 0; c < CPULIST_MAX && c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			usable.bits[c / 64] |= 1ull << (c % 64);
	missing = cpulist_first_missing(&o->cores, &usable);
	if (missing < 0)
		return 0;
	if (cpulist_format(&usable, list, sizeof(list)) < 0)
		snprintf(list, sizeof(list), "see /sys/devices/system/cpu/online");
	return cli_error(CLI_EXIT_USAGE, "--cores", "CPU %d is not available to this process "
			 "(available: %s); give CPUs from that list", missing, list);
}

/* Busy-polling handlers take whole CPUs: as many as there are leaves the program none of its own
 * (measured on 2 vCPUs, python3 at a quarter -L: 8.6 s with one blocking handler, 40-110 s with
 * -C 2 --poll spin). Allowed, but said. */
void record_note_spinning(const struct record_opts *o)
{
	cpu_set_t set;
	if (!o->poll || strcmp(o->poll, "spin") != 0 || sched_getaffinity(0, sizeof(set), &set) != 0)
		return;
	int cpus = CPU_COUNT(&set);
	if ((int)o->handlers >= cpus)
		cli_note("note: --poll spin with %u handler thread%s on %d CPU%s leaves the program no CPU "
			 "of its own: expect it to run many times slower; use fewer -C or --poll adaptive",
			 (unsigned)o->handlers, o->handlers > 1 ? "s" : "", cpus, cpus > 1 ? "s" : "");
}

/* What a candidate file is, for the command search. */
enum check_kind { CHECK_MISSING, CHECK_DIR, CHECK_NOEXEC, CHECK_OK };

static enum check_kind check_file(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return CHECK_MISSING;
	if (S_ISDIR(st.st_mode))
		return CHECK_DIR;
	if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0)
		return CHECK_NOEXEC;
	return CHECK_OK;
}

static int check_report_kind(const char *name, const char *path, enum check_kind kind)
{
	/* Name the file only when PATH search found it: otherwise it is `name` itself. */
	const char *found = strcmp(name, path) ? path : NULL;

	switch (kind) {
	case CHECK_MISSING:
		return cli_error(CLI_EXIT_NOTFOUND, name, "no such file; check the path of the command");
	case CHECK_DIR:
		return cli_error(CLI_EXIT_NOTFOUND, name, "%s%sis a directory, not a program; "
				 "give the program to run", found ? found : "", found ? " " : "");
	case CHECK_NOEXEC:
		return cli_error(CLI_EXIT_NOTFOUND, name, "%s%sis not executable; make it executable "
				 "(chmod +x) or run it through its interpreter", found ? found : "",
				 found ? " " : "");
	default:
		return 0;
	}
}

static int check_copy_path(char *dst, const char *dir, size_t dlen, const char *name)
{
	int n = snprintf(dst, PATH_MAX, "%.*s%s%s", (int)dlen, dir, dlen ? "/" : "", name);

	return n < 0 || n >= PATH_MAX ? -1 : 0;
}

/* Search PATH as execvp does: an empty element is the current directory, a file that exists but
 * cannot be run is skipped (and reported if nothing better is found). */
static int check_search_path(const char *name, char *out)
{
	const char *path = getenv("PATH");
	char cand[PATH_MAX], first_bad[PATH_MAX] = "";
	enum check_kind bad_kind = CHECK_MISSING;

	if (!path)
		path = "/bin:/usr/bin"; /* glibc's execvp default (confstr _CS_PATH) */
	for (const char *p = path;; p++) {
		size_t len = strcspn(p, ":");
		enum check_kind kind;

		if (check_copy_path(cand, len ? p : ".", len ? len : 1, name) == 0) {
			kind = check_file(cand);
			if (kind == CHECK_OK) {
				memcpy(out, cand, PATH_MAX);
				return 0;
			}
			if (kind != CHECK_MISSING && bad_kind == CHECK_MISSING) {
				bad_kind = kind;
				memcpy(first_bad, cand, PATH_MAX);
			}
		}
		p += len;
		if (!*p)
			break;
	}
	if (bad_kind != CHECK_MISSING)
		return check_report_kind(name, first_bad, bad_kind);
	return cli_error(CLI_EXIT_NOTFOUND, name, "command not found in PATH; check the spelling, "
			 "or give its path (e.g. ./%s)", name);
}

int record_resolve_command(struct record_opts *o)
{
	const char *name = o->cmd_argv[0];

	if (!*name)
		return cli_error(CLI_EXIT_NOTFOUND, "record", "the command is an empty string; "
				 "give the program to run");
	if (strchr(name, '/')) {
		if (strlen(name) >= PATH_MAX)
			return cli_error(CLI_EXIT_NOTFOUND, "record", "the command's path is too long; "
					 "give a shorter path");
		strcpy(o->cmd_path, name);
		return check_report_kind(name, name, check_file(name));
	}
	return check_search_path(name, o->cmd_path);
}

/* Whether exec of the file would run in secure mode (AT_SECURE), where the dynamic loader
 * ignores LD_PRELOAD: it changes our user or group, or grants capabilities. */
static int check_secure_exec(const char *path, const struct stat *st)
{
	struct statvfs vfs;
	bool nosuid = statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID);
	bool suid = (st->st_mode & S_ISUID) && st->st_uid != getuid();
	/* setgid without group execute is the old mandatory-locking mark, not setgid. */
	bool sgid = (st->st_mode & S_ISGID) && (st->st_mode & S_IXGRP) && st->st_gid != getgid();
	bool caps = getuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0;

	if (nosuid)
		return 0;
	if (suid || sgid)
		return cli_error(CLI_EXIT_USAGE, path, "%s program (owner uid %u, gid %u): the loader "
				 "ignores LD_PRELOAD for it, so it cannot be traced; trace a copy without "
				 "the %s bit, or run fltrace as its owner", suid ? "setuid" : "setgid",
				 (unsigned)st->st_uid, (unsigned)st->st_gid, suid ? "setuid" : "setgid");
	if (caps)
		return cli_error(CLI_EXIT_USAGE, path, "program with file capabilities: the loader "
				 "ignores LD_PRELOAD for it, so it cannot be traced; trace a copy without "
				 "them (cp drops them) or run fltrace as root");
	return 0;
}

/* Whether the ELF program (header hdr, n bytes read) has a PT_INTERP program header.
 * Returns -ENOEXEC for what is not a program (a relocatable object, a truncated file). */
static int check_elf_interp(int fd, const unsigned char *hdr, size_t n, bool *dynamic)
{
	bool is64 = hdr[EI_CLASS] == ELFCLASS64;
	uint64_t phoff;
	unsigned phnum, phentsize, type;

	if (is64 && n >= sizeof(Elf64_Ehdr)) {
		Elf64_Ehdr e;
		memcpy(&e, hdr, sizeof(e)); /* hdr need not be aligned */
		phoff = e.e_phoff, phnum = e.e_phnum, phentsize = e.e_phentsize, type = e.e_type;
	} else if (!is64 && n >= sizeof(Elf32_Ehdr)) {
		Elf32_Ehdr e;
		memcpy(&e, hdr, sizeof(e));
		phoff = e.e_phoff, phnum = e.e_phnum, phentsize = e.e_phentsize, type = e.e_type;
	} else {
		return -ENOEXEC;
	}
	if ((type != ET_EXEC && type != ET_DYN) || phnum > CHECK_MAX_PHDRS ||
	    phentsize < (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
		return -ENOEXEC;
	for (unsigned i = 0; i < phnum; i++) {
		uint32_t p_type;

		/* p_type is the first word of both Elf32_Phdr and Elf64_Phdr. */
		if (pread(fd, &p_type, sizeof(p_type), (off_t)(phoff + (uint64_t)i * phentsize)) !=
		    sizeof(p_type))
			return -ENOEXEC;
		if (p_type == PT_INTERP) {
			*dynamic = true;
			return 0;
		}
	}
	*dynamic = false;
	return 0;
}

/* The interpreter named by a "#!" line (hdr, n bytes), into out. */
static int check_script_interp(const unsigned char *hdr, size_t n, char *out)
{
	size_t i = 2, start, len;

	while (i < n && (hdr[i] == ' ' || hdr[i] == '\t'))
		i++;
	start = i;
	while (i < n && hdr[i] != ' ' && hdr[i] != '\t' && hdr[i] != '\n' && hdr[i] != '\0')
		i++;
	len = i - start;
	if (len == 0 || len >= PATH_MAX)
		return -ENOEXEC;
	memcpy(out, hdr + start, len);
	out[len] = '\0';
	return 0;
}

static int check_program_at(const char *path, const char *shown, int depth);

static int check_script(const char *path, const unsigned char *hdr, size_t n, int depth)
{
	char interp[PATH_MAX];
	enum check_kind kind;

	if (check_script_interp(hdr, n, interp) != 0)
		return cli_error(CLI_EXIT_NOTFOUND, path, "its #! line names no interpreter; "
				 "fix the first line of the script");
	kind = check_file(interp);
	if (kind != CHECK_OK)
		return cli_error(CLI_EXIT_NOTFOUND, path, "its interpreter %s %s; fix the #! line or "
				 "install the interpreter", interp,
				 kind == CHECK_MISSING ? "does not exist" : "is not executable");
	return check_program_at(interp, path, depth + 1);
}

static int check_program_at(const char *path, const char *shown, int depth)
{
	unsigned char hdr[512];
	struct stat st;
	bool dynamic;
	ssize_t n;
	int fd, err = 0;

	if (depth > CHECK_MAX_SCRIPT_DEPTH || stat(path, &st) != 0)
		return 0; /* the kernel will say it at exec */
	err = check_secure_exec(path, &st);
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* execute-only: the kernel can run what we cannot read */
	n = read(fd, hdr, sizeof(hdr));
	if (n >= 2 && hdr[0] == '#' && hdr[1] == '!')
		err = check_script(shown, hdr, (size_t)n, depth);
	else if (n >= SELFMAG && !memcmp(hdr, ELFMAG, SELFMAG) &&
		 check_elf_interp(fd, hdr, (size_t)n, &dynamic) == 0 && !dynamic)
		err = cli_error(CLI_EXIT_USAGE, shown, "%sstatically linked (no program interpreter), "
				"so LD_PRELOAD cannot load the tracer into it; trace a dynamically "
				"linked build of it (without -static)",
				strcmp(path, shown) ? "the interpreter of this script is " : "");
	/* Anything else is run by /bin/sh, as execvp does on ENOEXEC. */
	close(fd);
	return err;
}

int record_check_program(const char *path)
{
	return check_program_at(path, path, 0);
}

/* Full userfaultfd (faults in the kernel too), as the runtime needs it: the system call, or
 * failing that /dev/userfaultfd. Returns 0 or -errno of the system call. */
static int check_open_uffd(int *dev_errno)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	int sys_errno, dev, ufd;

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	sys_errno = errno;
	dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		*dev_errno = errno;
		return -sys_errno;
	}
	ufd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
	*dev_errno = ufd < 0 ? errno : 0;
	close(dev);
	if (ufd < 0)
		return -sys_errno;
	close(ufd);
	return 0;
}

int record_check_uffd(void)
{
	int dev_errno = 0;
	int err = check_open_uffd(&dev_errno);

	if (!err)
		return 0;
	if (err == -ENOSYS)
		return cli_error(CLI_EXIT_NOTRACE, "userfaultfd", "this kernel has no userfaultfd "
				 "(ENOSYS); use a kernel built with CONFIG_USERFAULTFD");
	if (err == -EPERM || err == -EACCES)
		return cli_error(CLI_EXIT_NOTRACE, "userfaultfd", "not permitted for uid %u "
				 "(vm.unprivileged_userfaultfd is 0, /dev/userfaultfd: %s); run as root, "
				 "or 'sysctl vm.unprivileged_userfaultfd=1', or give this user read+write "
				 "access to /dev/userfaultfd", (unsigned)getuid(),
				 dev_errno ? strerror(dev_errno) : "refused");
	return cli_error(CLI_EXIT_NOTRACE, "userfaultfd", "cannot be opened: %s; "
			 "check the kernel's userfaultfd support", strerror(-err));
}

int record_find_preload(struct record_opts *o)
{
	char exe[PATH_MAX], real[PATH_MAX], prefix[PATH_MAX + 8], lib[PATH_MAX + 40];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return cli_error(CLI_EXIT_NOTRACE, "record", "cannot find fltrace's own path "
				 "(/proc/self/exe: %s); mount /proc", strerror(errno));
	exe[n] = '\0';
	/* <prefix>/bin/fltrace finds <prefix>/lib/fltrace/libfltrace.so (build tree or install). */
	snprintf(prefix, sizeof(prefix), "%s/..", dirname(exe));
	if (realpath(prefix, real))
		strcpy(prefix, real); /* realpath's output fits in PATH_MAX */
	snprintf(lib, sizeof(lib), "%s/lib/fltrace/libfltrace.so", prefix);
	if (!realpath(lib, o->preload) || access(o->preload, R_OK) != 0)
		return cli_error(CLI_EXIT_NOTRACE, "record", "the preload library %s is missing (%s); "
				 "build it with 'make', or reinstall with 'make install'",
				 lib, strerror(errno));
	/* LD_PRELOAD splits on ':' and ' ': such a path cannot be named in it. */
	if (strpbrk(o->preload, ": \t"))
		return cli_error(CLI_EXIT_NOTRACE, "record", "the preload library path %s contains "
				 "':' or a space, which LD_PRELOAD cannot carry; install fltrace elsewhere",
				 o->preload);
	return 0;
}
