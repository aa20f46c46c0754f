/* Test workload: faults the kernel takes on the program's behalf through get_user_pages (no page-fault
 * record of their own in perf), each right after a fault of the thread's own on the same page that
 * fltrace never saw. Each of the N rounds: page P written, made read-only and written again
 * (SIGSEGV; the handler makes it writable again), dropped (MADV_DONTNEED), and read by
 * process_vm_readv: the fault inside that system call must be recorded as the call's (origin
 * syscall), never as the write.
 * Usage: gupfault N. Prints the bytes read back. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

static char *page;

__attribute__((noinline)) static void touch(volatile char *p, char v)
{
	*p = v;
	__asm__ volatile("" ::: "memory");
}

static void writable_again(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	mprotect(page, 4096, PROT_READ | PROT_WRITE);
}

__attribute__((noinline)) static long gup_read(void)
{
	static char back[4096];
	struct iovec local = { back, sizeof(back) }, remote = { page, 4096 };
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != 4096) {
		perror("gupfault: process_vm_readv");
		exit(1);
	}
	long sum = 0;
	for (unsigned i = 0; i < sizeof(back); i++)
		sum += back[i];
	return sum;
}

static void write_read_only(void)
{
	touch(page, 1);
	mprotect(page, 4096, PROT_READ);
	touch(page, 2);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gupfault N\n");
		return 2;
	}
	int n = atoi(argv[1]);
	struct sigaction sa = { .sa_sigaction = writable_again, .sa_flags = SA_SIGINFO };
	sigaction(SIGSEGV, &sa, NULL);
	page = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long sum = 0;
	for (int i = 0; i < n; i++) {
		write_read_only();
		madvise(page, 4096, MADV_DONTNEED);
		sum += gup_read();
	}
	printf("%d rounds, %ld read back\n", n, sum);
	return 0;
}
