/* A non-PIE executable that takes malloc's and free's addresses (CPython does): its dynamic symbols
 * for them are undefined but carry a value, the PLT entry that jumps to the real definition, and
 * that is what dlsym returns. It does not define them: fltrace's heap is the one it uses. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *(*volatile alloc_fn)(size_t);
void (*volatile free_fn)(void *);

int main(void)
{
	/* In code: an absolute address, the PLT entry's (a data initialiser would be a dynamic
	 * relocation instead). */
	alloc_fn = malloc;
	free_fn = free;
	size_t len = 8 << 20;
	char *p = alloc_fn(len);
	unsigned long sum = 0;
	for (size_t i = 0; i < len; i += 4096)
		p[i] = (char)(i >> 12);
	/* a fault inside a system call: a handler unwinds this thread with libunwind */
	char *fresh = alloc_fn(1 << 20);
	long n = readlink("/proc/self/exe", fresh + (512 << 10), 4096);
	for (size_t i = 0; i < len; i += 4096)
		sum += (unsigned char)p[i];
	free_fn(p);
	printf("sum %lu readlink %s\n", sum, n > 0 ? "ok" : "failed");
	return 0;
}
