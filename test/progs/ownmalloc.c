/* An executable that defines the malloc family itself, as rustc does (jemalloc linked in) and as
 * programs linking tcmalloc or mimalloc statically do: its definitions come before fltrace's, so
 * the loader and libunwind would allocate from this heap.
 * Usage: ownmalloc <plugin.so> <file> <tlsmod.so>
 * Prints what it read; exits 0 if every call did what it does untraced. */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- the heap: 64 MB chunks, a 64 KB slice per thread, a lock held across mmap as jemalloc does ---- */

static char *ctop, *cend;
static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { char *lo, *hi; } chunks[256]; /* free() checks that a block is this heap's */
static int nchunks;
static __thread char *ttop, *tend;

static void refill(size_t need)
{
	size_t slice = need + 4096 > 65536 ? ((need + 4096 + 65535) & ~65535UL) : 65536;
	pthread_mutex_lock(&heap_lock);
	if (!ctop || ctop + slice > cend) {
		size_t len = slice > (64UL << 20) ? slice : (64UL << 20);
		ctop = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ctop == MAP_FAILED || nchunks == 256)
			abort();
		cend = ctop + len;
		chunks[nchunks].lo = ctop;
		chunks[nchunks].hi = cend;
		__atomic_store_n(&nchunks, nchunks + 1, __ATOMIC_RELEASE);
	}
	ttop = ctop;
	tend = ctop + slice;
	ctop += slice;
	pthread_mutex_unlock(&heap_lock);
}

static void *bump(size_t align, size_t n)
{
	if (align < 16)
		align = 16;
	for (;;) {
		uintptr_t p = ((uintptr_t)ttop + 16 + align - 1) & ~(uintptr_t)(align - 1);
		if (ttop && p + n <= (uintptr_t)tend) {
			((size_t *)p)[-1] = n;
			ttop = (char *)(p + n);
			return (void *)p;
		}
		refill(n + align);
	}
}

void *malloc(size_t n) { return bump(16, n); }
/* A real allocator reads a block's header here: one it did not hand out corrupts it. This one
 * says so and stops. */
void free(void *p)
{
	if (!p)
		return;
	for (int i = 0, n = __atomic_load_n(&nchunks, __ATOMIC_ACQUIRE); i < n; i++)
		if ((char *)p >= chunks[i].lo && (char *)p < chunks[i].hi)
			return;
	static const char msg[] = "ownmalloc: free() of a block this heap did not allocate\n";
	write(2, msg, sizeof(msg) - 1);
	abort();
}
void *calloc(size_t a, size_t b) { return bump(16, a * b); } /* fresh memory is zero: never reused */
void *realloc(void *o, size_t n)
{
	void *p = bump(16, n);
	if (o) {
		size_t m = ((size_t *)o)[-1];
		memcpy(p, o, m < n ? m : n);
	}
	return p;
}
void *memalign(size_t a, size_t n) { return bump(a, n); }
void *aligned_alloc(size_t a, size_t n) { return bump(a, n); }
int posix_memalign(void **r, size_t a, size_t n) { *r = bump(a, n); return 0; }
void *valloc(size_t n) { return bump(4096, n); }
size_t malloc_usable_size(void *p) { return p ? ((size_t *)p)[-1] : 0; }

/* ---- the program ---- */

/* read(2) with a frame pointer but no CFI, as JIT-compiled code calls it: libunwind's step fails
 * and it calls a function of its own through a PLT slot not bound yet. */
long nocfi_read(int fd, void *buf, size_t n);
__asm__(".text\n.globl nocfi_read\n.type nocfi_read,@function\nnocfi_read:\n"
	"\tpush %rbp\n\tmov %rsp,%rbp\n\txor %eax,%eax\n\tsyscall\n\tpop %rbp\n\tret\n");

static char *(*tls_get)(void);

/* Its TLS block comes from the loader; when its stack is reused for the next thread, nptl frees
 * the block through the C library's free. */
static void *tls_toucher(void *arg)
{
	(void)arg;
	return tls_get();
}

static void *worker(void *arg)
{
	char *buf = arg;
	return (void *)(intptr_t)readlink("/proc/self/exe", buf, 4096); /* not a wrapped call */
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	size_t big = 64 << 20;
	char *volatile buf = malloc(big);
	int fd = open(argv[2], O_RDONLY);
	/* The loader puts the plugin's link map and the global scope list on this heap. */
	if (fd < 0 || !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL))
		return 1;
	for (size_t i = 0; i < big; i += 4096) /* at a small -L, evicts everything before */
		buf[i] = 1;
	/* Faults inside system calls: the handler unwinds the sleeping thread with libunwind, which
	 * allocates, binds its PLT slots, and walks the loader's lists. */
	long n = nocfi_read(fd, buf, 4096);
	char *fresh = malloc(1 << 20); /* untouched: the kernel's write is its first touch */
	long m = readlink("/proc/self/exe", fresh + (512 << 10), 4096);
	/* A thread made now gets its TLS vector from the loader, after all of that was evicted. */
	pthread_t t;
	void *r;
	if (pthread_create(&t, NULL, worker, malloc(4096)) || pthread_join(t, &r))
		return 1;
	void *tls = dlopen(argv[3], RTLD_NOW);
	if (!tls || !(tls_get = (char *(*)(void))dlsym(tls, "get")))
		return 1;
	int touched = 0;
	for (int i = 0; i < 3; i++) {
		void *c;
		if (pthread_create(&t, NULL, tls_toucher, NULL) || pthread_join(t, &c))
			return 1;
		touched += *(char *)c;
	}
	printf("read %ld readlink %s thread readlink %s tls %d\n", n, m > 0 ? "ok" : "failed",
	       (intptr_t)r > 0 ? "ok" : "failed", touched);
	return n == 4096 && m > 0 && (intptr_t)r > 0 ? 0 : 1;
}
