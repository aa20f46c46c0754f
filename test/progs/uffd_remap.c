/* Kernel check behind --files=all: anonymous memory registered with userfaultfd is moved over a
 * private file mapping with mremap(MREMAP_MAYMOVE | MREMAP_FIXED). Prints, for a userfaultfd
 * without and with UFFD_FEATURE_EVENT_REMAP, what a read of the moved range then sees:
 *   "<mode>: zeros"  the registration was dropped by the move (a thread there would run zeros)
 *   "<mode>: fault"  the read raised a fault message at the new address (served with 0xc3)
 * and whether a REMAP event came. Exit 77 if userfaultfd is not available. Usage: uffd_remap FILE */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int ufd;
static long ps;
static volatile int faults, remaps;

static void *serve(void *arg)
{
	char *page = aligned_alloc((size_t)ps, (size_t)ps);
	memset(page, 0xc3, (size_t)ps);
	for (;;) {
		struct uffd_msg m;
		struct pollfd p = { .fd = ufd, .events = POLLIN };
		poll(&p, 1, -1);
		if (read(ufd, &m, sizeof(m)) != sizeof(m))
			continue;
		if (m.event == UFFD_EVENT_REMAP)
			remaps++;
		if (m.event == UFFD_EVENT_PAGEFAULT) {
			faults++;
			struct uffdio_copy c = { .dst = m.arg.pagefault.address & ~(unsigned long)(ps - 1),
						 .src = (unsigned long)page, .len = (unsigned long)ps };
			ioctl(ufd, UFFDIO_COPY, &c);
		}
	}
	return arg;
}

static int run(const char *file, const char *mode, unsigned long features)
{
	ufd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	if (ufd < 0 || ioctl(ufd, UFFDIO_API, &api) < 0)
		return 77;
	int fd = open(file, O_RDONLY);
	size_t len = 4 * (size_t)ps;
	char *orig = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	char *a = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct uffdio_register r = { .range = { .start = (unsigned long)a, .len = len },
				     .mode = UFFDIO_REGISTER_MODE_MISSING };
	if (fd < 0 || orig == MAP_FAILED || a == MAP_FAILED || ioctl(ufd, UFFDIO_REGISTER, &r) < 0)
		return 1;
	faults = remaps = 0;
	pthread_t t;
	pthread_create(&t, NULL, serve, NULL);
	if (mremap(a, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, orig) != orig)
		return 1;
	unsigned char b = (unsigned char)orig[ps + 5];
	printf("%s: %s, %s\n", mode, b == 0xc3 && faults == 1 ? "fault" : b == 0 ? "zeros" : "other",
	       remaps ? "remap event" : "no event");
	pthread_cancel(t);
	pthread_join(t, NULL);
	close(ufd);
	return 0;
}

int main(int argc, char **argv)
{
	ps = sysconf(_SC_PAGESIZE);
	if (argc < 2)
		return 2;
	int rc = run(argv[1], "without EVENT_REMAP", UFFD_FEATURE_THREAD_ID);
	if (rc == 0)
		rc = run(argv[1], "with EVENT_REMAP", UFFD_FEATURE_THREAD_ID | UFFD_FEATURE_EVENT_REMAP);
	return rc;
}
