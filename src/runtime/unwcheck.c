/* libunwind's memory validation without its pipes: libunwind 1.6 checks that an address is readable
 * by writing a byte of it into a pipe it creates (two fds per copy of the library, in the program's
 * table). Its imports of pipe2/read/write/close/syscall are pointed here instead, and the check is
 * made by a system call that reads the address and needs no fd. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt.h"
#include "unwcheck.h"

/* What libunwind keeps as its pipe's two ends: a number no fd ever has. */
#define UNW_FAKE_FD (-2)

/* libunwind's write_validate reads the pipe first (to keep it from filling up): nothing to read. */
static ssize_t unw_read(int fd, void *buf, size_t n)
{
	if (fd == UNW_FAKE_FD) {
		errno = EAGAIN;
		return -1;
	}
	return syscall(SYS_read, fd, buf, n);
}

static int unw_close(int fd)
{
	return fd == UNW_FAKE_FD ? 0 : (int)syscall(SYS_close, fd);
}

static int unw_pipe2(int fds[2], int flags)
{
	fds[0] = fds[1] = UNW_FAKE_FD;
	return 0;
}

/* rt_sigprocmask copies its new set from user memory before it looks at `how`: with an invalid
 * `how` it changes nothing, and fails with EFAULT exactly when the address cannot be read (a
 * missing page of tracked memory is brought in first, as for the pipe's write). */
static bool unw_readable(const void *addr)
{
	long r = syscall(SYS_rt_sigprocmask, -1, addr, NULL, 8);
	return !(r < 0 && errno == EFAULT);
}

/* The pipe's write, by write() or by syscall(SYS_write) (how the library was configured). */
static ssize_t unw_write(int fd, const void *buf, size_t n)
{
	if (fd != UNW_FAKE_FD)
		return syscall(SYS_write, fd, buf, n);
	int saved = errno;
	bool ok = unw_readable(buf);
	errno = ok ? saved : EFAULT;
	return ok ? 1 : -1;
}

static long unw_syscall(long nr, long a, long b, long c, long d, long e, long f)
{
	if (nr == SYS_write && (int)a == UNW_FAKE_FD) /* an int through varargs: the upper half is not defined */
		return unw_write((int)a, (const void *)b, (size_t)c);
	return syscall(nr, a, b, c, d, e, f);
}

static const struct {
	const char *name;
	void *fn;
} unw_hooks[] = {
	{ "pipe2", (void *)unw_pipe2 },
	{ "read", (void *)unw_read },
	{ "write", (void *)unw_write },
	{ "close", (void *)unw_close },
	{ "syscall", (void *)unw_syscall },
};

static void *unw_hook_of(const char *name)
{
	for (size_t i = 0; i < sizeof(unw_hooks) / sizeof(unw_hooks[0]); i++)
		if (strcmp(unw_hooks[i].name, name) == 0)
			return unw_hooks[i].fn;
	return NULL;
}

/* Writes one GOT slot; a slot in the RELRO part (a library linked with -z now) is read-only. */
static void unw_set_slot(void **slot, void *fn, uintptr_t relro_lo, uintptr_t relro_hi)
{
	uintptr_t s = (uintptr_t)slot;
	bool ro = s >= relro_lo && s < relro_hi;
	uintptr_t page = s & ~((uintptr_t)rt.page_size - 1);
	if (ro)
		syscall(SYS_mprotect, page, rt.page_size, PROT_READ | PROT_WRITE);
	__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	if (ro)
		syscall(SYS_mprotect, page, rt.page_size, PROT_READ);
}

static void unw_patch_relocs(const struct dl_phdr_info *info, const ElfW(Rela) *rel, size_t n,
			     const ElfW(Sym) *symtab, const char *strtab, uintptr_t relro_lo, uintptr_t relro_hi)
{
	for (size_t i = 0; i < n; i++) {
		unsigned type = ELF64_R_TYPE(rel[i].r_info);
		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		void *fn = unw_hook_of(strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name);
		if (fn)
			unw_set_slot((void **)(info->dlpi_addr + rel[i].r_offset), fn, relro_lo, relro_hi);
	}
}

static int unw_patch_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libunwind"))
		return 0;
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t relro_lo = 0, relro_hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		if (ph->p_type == PT_GNU_RELRO) {
			relro_lo = info->dlpi_addr + ph->p_vaddr;
			relro_hi = relro_lo + ph->p_memsz;
		}
	}
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t jmprel_size = 0, rela_size = 0;
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		/* The loader has relocated these to addresses already. */
		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn->d_un.d_ptr; break;
		case DT_STRTAB: strtab = (const char *)dyn->d_un.d_ptr; break;
		case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn->d_un.d_ptr; break;
		case DT_PLTRELSZ: jmprel_size = dyn->d_un.d_val; break;
		case DT_RELA: rela = (const ElfW(Rela) *)dyn->d_un.d_ptr; break;
		case DT_RELASZ: rela_size = dyn->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	if (jmprel)
		unw_patch_relocs(info, jmprel, jmprel_size / sizeof(ElfW(Rela)), symtab, strtab, relro_lo, relro_hi);
	if (rela)
		unw_patch_relocs(info, rela, rela_size / sizeof(ElfW(Rela)), symtab, strtab, relro_lo, relro_hi);
	return 0;
}

/* Before libunwind's first use (it creates its pipes then). */
void unwcheck_init(void)
{
	dl_iterate_phdr(unw_patch_object, NULL);
}
