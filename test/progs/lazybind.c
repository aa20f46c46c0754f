/* A handler thread's lazy PLT binding: a read(2) into an evicted buffer, issued from code without
 * unwind info, makes the handler's libunwind step fail and call a function of its own through a
 * PLT slot not bound yet; binding it walks the global scope list, which dlopen(RTLD_GLOBAL) put on
 * the heap. Usage: lazybind <a shared object not loaded yet> <a file of at least 4096 bytes> */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* read(2) with a frame pointer but no CFI, as JIT-compiled code calls it */
long nocfi_read(int fd, void *buf, size_t n);
__asm__(".text\n.globl nocfi_read\n.type nocfi_read,@function\nnocfi_read:\n"
	"\tpush %rbp\n\tmov %rsp,%rbp\n\txor %eax,%eax\n\tsyscall\n\tpop %rbp\n\tret\n");

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	size_t big = 64 << 20;
	char *volatile buf = malloc(big); /* before the dlopen: nothing is allocated after it */
	int fd = open(argv[2], O_RDONLY);
	if (!buf || fd < 0 || !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) /* the scope list, on the heap */
		return 1;
	for (size_t i = 0; i < big; i += 4096) /* evicts all that came before at a small -L */
		buf[i] = 1;
	long n = nocfi_read(fd, buf, 4096); /* buf's first page is far: the fault is in the kernel */
	printf("read %ld\n", n);
	return n == 4096 ? 0 : 1;
}
