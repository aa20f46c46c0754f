/* Test workload: one mode per memory operation that tracing must not disturb. Each mode works on
 * more memory than the -L the tests give it and prints what it read: the output must not change. */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MB (1u << 20)

static uint64_t checksum(const void *p, size_t n)
{
	const uint64_t *w = p;
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n / 8; i++)
		h = (h ^ w[i]) * 1099511628211ull;
	return h;
}

/* Reads a junk buffer so that other pages get evicted (its result must be used, or the compiler
 * drops the call). */
static volatile uint64_t sink;
static void scan(const void *p, size_t n)
{
	sink += checksum(p, n);
}

static void fill(void *p, size_t n, uint64_t seed)
{
	uint64_t *w = p;
	for (size_t i = 0; i < n / 8; i++)
		w[i] = (i + seed) * 0x9e3779b97f4a7c15ull;
}

static char *heap(size_t n, uint64_t seed)
{
	char *p = malloc(n);
	if (!p) {
		perror("malloc");
		exit(3);
	}
	fill(p, n, seed);
	return p;
}

/* fork without exec: the child reads the parent's heap, pages evicted before the fork included. */
static int mode_fork(void)
{
	size_t n = 48 * MB;
	char *a = heap(n, 1), *b = heap(n, 2);
	printf("parent before: %016llx %016llx\n", (unsigned long long)checksum(a, n), (unsigned long long)checksum(b, n));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		printf("child: %016llx %016llx\n", (unsigned long long)checksum(a, n), (unsigned long long)checksum(b, n));
		fill(a, n, 3); /* the child's writes stay the child's */
		printf("child after write: %016llx\n", (unsigned long long)checksum(a, n));
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("parent after: %016llx %016llx child exit %d\n", (unsigned long long)checksum(a, n),
	       (unsigned long long)checksum(b, n), WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

/* System calls that read or write evicted buffers must neither fail nor come back short. */
static int mode_syscalls(void)
{
	size_t n = 32 * MB;
	char *src = heap(n, 7), *dst = malloc(n), *junk = heap(n, 8);
	char path[] = "/tmp/fltrace-memops-XXXXXX";
	int fd = mkstemp(path);
	unlink(path);
	scan(junk, n); /* evicts src */
	ssize_t w = write(fd, src, n);
	scan(junk, n);
	ssize_t r = pread(fd, dst, n, 0); /* SYSCALL-PREAD */
	printf("write %zd pread %zd equal %d\n", w, r, memcmp(src, dst, n) == 0);
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	scan(junk, n);
	size_t chunk = 64 * 1024, got = 0;
	for (size_t off = 0; off < 4 * MB; off += chunk) {
		if (send(sv[0], src + off, chunk, 0) != (ssize_t)chunk)
			printf("short send\n");
		size_t have = 0;
		while (have < chunk) {
			ssize_t k = recv(sv[1], dst + off + have, chunk - have, 0);
			if (k <= 0) {
				printf("recv failed: %s\n", strerror(errno));
				return 1;
			}
			have += (size_t)k;
		}
		got += have;
	}
	printf("socket %zu bytes equal %d\n", got, memcmp(src, dst, 4 * MB) == 0);
	int zfd = open("/dev/zero", O_RDONLY);
	scan(junk, n);
	r = read(zfd, src, n); /* SYSCALL-READ */
	printf("read /dev/zero %zd sum %016llx\n", r, (unsigned long long)checksum(src, n));
	return 0;
}

/* mremap grow in place / move / shrink, and munmap of parts: contents must follow. */
static int mode_remap(void)
{
	size_t n = 24 * MB;
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fill(p, n, 11);
	char *junk = heap(32 * MB, 12);
	scan(junk, 32 * MB);
	p = mremap(p, n, 2 * n, MREMAP_MAYMOVE);
	printf("grown: %016llx tail %016llx\n", (unsigned long long)checksum(p, n), (unsigned long long)checksum(p + n, n));
	fill(p + n, n, 13);
	scan(junk, 32 * MB);
	p = mremap(p, 2 * n, n / 2, 0);
	printf("shrunk: %016llx\n", (unsigned long long)checksum(p, n / 2));
	char *fixed = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p = mremap(p, n / 2, n / 2, MREMAP_MAYMOVE | MREMAP_FIXED, fixed);
	scan(junk, 32 * MB);
	printf("moved: %016llx\n", (unsigned long long)checksum(p, n / 2));
	munmap(p + MB, MB); /* a hole in the middle */
	printf("holed: %016llx %016llx\n", (unsigned long long)checksum(p, MB), (unsigned long long)checksum(p + 2 * MB, n / 2 - 2 * MB));
	return 0;
}

/* MADV_DONTNEED / MADV_FREE: the data goes and reads back as zeros, evicted pages included. */
static int mode_madvise(void)
{
	size_t n = 32 * MB;
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fill(p, n, 21);
	madvise(p, MB, MADV_DONTNEED); /* resident pages */
	char *junk = heap(32 * MB, 22);
	scan(junk, 32 * MB);
	madvise(p + 4 * MB, 4 * MB, MADV_DONTNEED); /* evicted pages */
	madvise(p + 8 * MB, 4 * MB, MADV_FREE);
	/* After MADV_FREE a page holds either its old data or zeros: the kernel may do either. */
	char *orig = heap(4 * MB, 21 + 0);
	fill(orig, 4 * MB, 21 + 8 * MB / 8);
	size_t bad = 0;
	for (size_t pg = 0; pg < 4 * MB; pg += 4096) {
		char zero[4096] = { 0 };
		bad += memcmp(p + 8 * MB + pg, zero, 4096) != 0 && memcmp(p + 8 * MB + pg, orig + pg, 4096) != 0;
	}
	memset(p + 8 * MB, 0, 4 * MB);
	size_t zeros = 0;
	for (size_t i = 0; i < n; i++)
		zeros += p[i] == 0;
	printf("zero bytes %zu sum %016llx free-pages-wrong %zu\n", zeros, (unsigned long long)checksum(p, n), bad);
	return 0;
}

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int ready;
	int fds[2];
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	pthread_mutex_lock(&w->mu);
	while (!w->ready)
		pthread_cond_wait(&w->cv, &w->mu); /* futex waits on heap memory that gets evicted */
	pthread_mutex_unlock(&w->mu);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN }, *out = malloc(64 * sizeof(*out));
	epoll_ctl(ep, EPOLL_CTL_ADD, w->fds[0], &ev);
	char *junk = heap(24 * MB, 61);
	scan(junk, 24 * MB); /* evicts `out` before the kernel writes into it */
	int n = epoll_wait(ep, out, 64, 5000);
	printf("epoll_wait %d events %s\n", n, n == 1 && (out[0].events & EPOLLIN) ? "EPOLLIN" : "?");
	return NULL;
}

/* Waits in the kernel on memory that is missing: futex (mutex, condvar), epoll_wait's events
 * buffer, an O_DIRECT read: none may fail, come back short or hang because of tracing. */
static int mode_waits(void)
{
	struct waiter *w = malloc(sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->ready = 0;
	if (pipe(w->fds) < 0)
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, wait_thread, w);
	char *junk = heap(24 * MB, 62);
	scan(junk, 24 * MB); /* evicts the mutex and condvar */
	pthread_mutex_lock(&w->mu);
	w->ready = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	usleep(200 * 1000);
	if (write(w->fds[1], "x", 1) != 1)
		return 1;
	pthread_join(t, NULL);
	/* A raw FUTEX_WAIT reads its word in the kernel: on an evicted page, that is a kernel fault. */
	int *word = malloc(64 * 4096);
	for (int i = 0; i < 64; i++)
		word[i * 1024] = 7;
	scan(junk, 24 * MB);
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	long a = syscall(SYS_futex, &word[0], FUTEX_WAIT, 8, NULL, NULL, 0);
	int ea = errno;
	long b = syscall(SYS_futex, &word[32 * 1024], FUTEX_WAIT, 7, &ts, NULL, 0);
	int eb = errno;
	printf("futex mismatch %ld %s, timeout %ld %s\n", a, ea == EAGAIN ? "EAGAIN" : "?", b,
	       eb == ETIMEDOUT ? "ETIMEDOUT" : "?");
	char path[] = "/var/tmp/fltrace-direct-XXXXXX";
	int fd = mkstemp(path);
	char *src = heap(4 * MB, 63);
	if (fd < 0 || write(fd, src, 4 * MB) != 4 * MB)
		return 1;
	close(fd);
	fd = open(path, O_RDONLY | O_DIRECT);
	unlink(path);
	void *dst;
	if (posix_memalign(&dst, 4096, 4 * MB))
		return 1;
	memset(dst, 0, 4 * MB);
	scan(junk, 24 * MB); /* evicts dst */
	ssize_t r = fd >= 0 ? read(fd, dst, 4 * MB) : -2; /* -2: no O_DIRECT on this file system */
	printf("O_DIRECT read %zd equal %d\n", r, r == 4 * MB ? memcmp(src, dst, 4 * MB) == 0 : -1);
	return 0;
}

static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig)
{
	(void)sig;
	got_usr1++;
}

/* A program with signal handlers of its own that blocks every signal while it touches memory. */
static int mode_signals(void)
{
	/* Programs reset every signal (daemons, shells): SIG_IGN through signal() for all of them. */
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_IGN);
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigfillset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	size_t n = 32 * MB;
	char *p = heap(n, 31), *q = heap(n, 32);
	uint64_t a = checksum(p, n), b = checksum(q, n);
	raise(SIGUSR1);
	sigprocmask(SIG_SETMASK, &old, NULL);
	printf("blocked: %016llx %016llx usr1 %d\n", (unsigned long long)a, (unsigned long long)b, (int)got_usr1);
	return 0;
}

static volatile sig_atomic_t got_usr2, usr2_masked;
static sigset_t masks_wanted;

static bool same_mask(const sigset_t *a, const sigset_t *b)
{
	for (int s = 1; s < NSIG; s++)
		if (sigismember(a, s) != sigismember(b, s))
			return false;
	return true;
}

static void on_usr2(int sig)
{
	sigset_t in, expect = masks_wanted;
	sigaddset(&expect, sig); /* the handler runs with its own signal blocked besides the thread's */
	pthread_sigmask(SIG_BLOCK, NULL, &in);
	usr2_masked += same_mask(&in, &expect);
	got_usr2++;
}

/* The kernel's view of the thread's mask: /proc/self/status's SigBlk. */
static unsigned long long sigblk(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long v = ~0ull;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "SigBlk: %llx", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

/* A mask of the program's own, kept through what fltrace does on its thread: the allocation site
 * of each big malloc unwound there, a stack signal at each fresh page (libunwind's masks inside
 * both are answered without system calls: the thread's own mask must come back whole). */
static int mode_masks(void)
{
	struct sigaction sa = { .sa_handler = on_usr2 };
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&masks_wanted);
	sigaddset(&masks_wanted, SIGPIPE);
	sigaddset(&masks_wanted, SIGWINCH);
	sigaddset(&masks_wanted, SIGRTMIN + 3);
	sigprocmask(SIG_SETMASK, &masks_wanted, NULL);
	int rounds = 64, kept = 0;
	uint64_t sum = 0;
	for (int i = 0; i < rounds; i++) {
		size_t n = (size_t)(i % 8 + 1) * 256 * 1024;
		char *volatile p = malloc(n);
		for (size_t o = 0; o < n; o++)
			p[o] = (char)(i + o / 4096);
		sum += checksum(p, n);
		free(p);
		raise(SIGUSR2);
		sigset_t now;
		sigprocmask(SIG_BLOCK, NULL, &now);
		kept += same_mask(&now, &masks_wanted);
	}
	printf("masks: %016llx kept %d/%d usr2 %d, masked right in the handler %d, SigBlk %016llx\n",
	       (unsigned long long)sum, kept, rounds, (int)got_usr2, (int)usr2_masked, sigblk());
	return 0;
}

static volatile sig_atomic_t got_segv, storm_stop;

static void on_segv(int sig)
{
	(void)sig;
	got_segv = 1;
}

static void *segv_sender(void *arg)
{
	pthread_t main_thread = *(pthread_t *)arg;
	struct timespec ms = { 0, 1000 * 1000 };
	while (!storm_stop) {
		pthread_kill(main_thread, SIGSEGV);
		nanosleep(&ms, NULL);
	}
	return NULL;
}

/* SIGSEGV sent (not raised by the CPU) every ms while the thread touches memory: the stack
 * signal's handler lets the CPU's faults through, and a program handler that came in on top of it
 * waited for the very signal it interrupted, again at each SIGSEGV (it hung). */
static int mode_segvstorm(void)
{
	struct sigaction sa = { .sa_handler = on_segv, .sa_flags = SA_RESTART };
	sigaction(SIGSEGV, &sa, NULL);
	pthread_t self = pthread_self(), sender;
	pthread_create(&sender, NULL, segv_sender, &self);
	size_t n = 32 * MB;
	char *p = heap(n, 61);
	uint64_t a = checksum(p, n), b = 0;
	for (int i = 0; i < 16; i++) /* at -L 8, 16 scans of 32 MB: 130,000 faults, some 1,000 signals */
		b = b * 31 + checksum(p, n) + (uint64_t)(p[(size_t)i << 12] ^= 1);
	struct timespec ms = { 0, 1000 * 1000 };
	while (!got_segv) /* a machine too busy to run the sender meanwhile */
		nanosleep(&ms, NULL);
	storm_stop = 1;
	pthread_join(sender, NULL);
	printf("segv storm: %016llx %016llx, handler ran %d\n", (unsigned long long)a, (unsigned long long)b,
	       (int)got_segv);
	return 0;
}

static void *exit_thread(void *arg)
{
	char *p = heap(8 * MB, 41);
	printf("thread exits: %016llx\n", (unsigned long long)checksum(p, 8 * MB));
	fflush(stdout);
	exit(*(int *)arg);
}

/* Ways to end: the trace must stay readable for each. */
static int mode_exit(const char *how)
{
	char *p = heap(16 * MB, 51);
	printf("sum %016llx\n", (unsigned long long)checksum(p, 16 * MB));
	fflush(stdout);
	if (!strcmp(how, "_exit"))
		_exit(3);
	if (!strcmp(how, "abort"))
		abort();
	if (!strcmp(how, "segv"))
		*(volatile int *)16 = 1;
	if (!strcmp(how, "kill"))
		kill(getpid(), SIGKILL);
	if (!strcmp(how, "thread")) {
		pthread_t t;
		static int code = 4;
		pthread_create(&t, NULL, exit_thread, &code);
		pause();
	}
	return 0;
}

/* A program that dup2()s onto small fd numbers (as a shell's `3>file` does) must not close
 * fltrace's: evicted memory read back afterwards, then a fork child's too. */
static int mode_dup2(void)
{
	size_t n = 32 * MB;
	char *a = heap(n, 21), *junk = heap(n, 22);
	int null = open("/dev/null", O_WRONLY);
	for (int fd = 3; fd < 64; fd++)
		if (fd != null)
			dup2(null, fd);
	scan(junk, n);
	printf("after dup2: %016llx\n", (unsigned long long)checksum(a, n));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		scan(junk, n);
		printf("child: %016llx\n", (unsigned long long)checksum(a, n));
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	return 0;
}

/* fork from a process with threads: glibc's fork then reads the name-service state (on the heap,
 * since getpwuid) after every fork handler has run, fltrace's too, which holds its lock across the
 * fork. Evicted, that page must still come back, each time. */
static void *idle_thread(void *arg)
{
	pause();
	return arg;
}

static int mode_forkthreads(void)
{
	struct passwd *pw = getpwuid(0);
	printf("uid 0: %s\n", pw ? pw->pw_name : "?");
	FILE *log = tmpfile(); /* a FILE on the heap, which the child's glibc resets before any handler */
	if (!log) {
		perror("tmpfile");
		return 3;
	}
	pthread_t t;
	pthread_create(&t, NULL, idle_thread, NULL);
	size_t n = 32 * MB;
	char *a = heap(n, 31), *junk = heap(n, 32);
	for (int i = 0; i < 4; i++) {
		fprintf(log, "parent %d\n", i);
		fflush(log);
		scan(junk, n); /* the name-service state and the FILE are evicted with the rest */
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			fprintf(log, "child %d: %016llx\n", i, (unsigned long long)checksum(a, n));
			fflush(log);
			pw = getpwuid(0);
			printf("child %d: uid 0: %s\n", i, pw ? pw->pw_name : "?");
			fflush(stdout);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		printf("child %d exit %d\n", i, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	rewind(log);
	char line[128];
	while (fgets(line, sizeof(line), log))
		fputs(line, stdout);
	printf("parent: %016llx\n", (unsigned long long)checksum(a, n));
	return 0;
}

/* fork with a thread alive whose TLS vector is too small for the modules loaded since (a dlopen):
 * in the child that thread is gone, and glibc hands its cached stack to the next thread created,
 * resizing its vector on the heap, where it may be evicted. */
static int mode_forkdlopen(void)
{
	pthread_t t;
	pthread_create(&t, NULL, idle_thread, NULL);
	if (!dlopen("libstdc++.so.6", RTLD_NOW)) { /* a module with thread-local storage */
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 3;
	}
	size_t n = 32 * MB;
	char *a = heap(n, 41), *junk = heap(n, 42);
	for (int i = 0; i < 3; i++) {
		scan(junk, n);
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			printf("child %d: %016llx\n", i, (unsigned long long)checksum(a, n));
			fflush(stdout);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		printf("child %d exit %d\n", i, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	return 0;
}

/* fork while another thread faults inside read(2) again and again (the raw system call, as glibc's
 * own stdio makes it: fltrace's handler unwinds each such fault itself, reading the thread's stack
 * under rt.lock). The forking thread holds that lock across the fork and its prepare handler
 * brings in the program's FILEs: a handler waiting for the lock could not serve the fault the
 * fork waited for (it hung, or the watchdog stopped it). */
static volatile int stop_reading;
static void *reader_thread(void *arg)
{
	(void)arg;
	int fd = open("/dev/zero", O_RDONLY);
	size_t n = 32 * MB, chunk = 64 * 1024;
	char *a = malloc(n);
	while (!stop_reading)
		for (size_t off = 0; off < n && !stop_reading; off += chunk)
			syscall(SYS_read, fd, a + off, chunk);
	close(fd);
	return a;
}

static int mode_forkunwind(void)
{
	enum { NFILES = 64, NFORKS = 150 };
	FILE *f[NFILES];
	for (int i = 0; i < NFILES; i++)
		if (!(f[i] = fopen("/dev/null", "w"))) {
			perror("fopen");
			return 3;
		}
	pthread_t t;
	pthread_create(&t, NULL, reader_thread, NULL);
	int bad = 0;
	for (int i = 0; i < NFORKS; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			_exit(fprintf(f[i % NFILES], "child %d\n", i) > 0 ? 0 : 1);
		int st;
		waitpid(pid, &st, 0);
		bad += !WIFEXITED(st) || WEXITSTATUS(st);
		struct timespec ms = { 0, 1000 * 1000 };
		nanosleep(&ms, NULL);
	}
	stop_reading = 1;
	void *a;
	pthread_join(t, &a);
	printf("%d forks beside a thread reading into evicted memory: %d bad children; read %016llx\n", NFORKS, bad,
	       (unsigned long long)checksum(a, 32 * MB));
	for (int i = 0; i < NFILES; i++)
		fclose(f[i]);
	return 0;
}

/* fork with more open FILEs than -L holds, all evicted: fltrace's prepare handler brings each in,
 * and nothing may be evicted again before the address space is copied (the child's glibc resets
 * every FILE's lock before its runtime starts; one evicted read as zeros there: the children died
 * of SIGSEGV). */
static int mode_forkfiles(void)
{
	enum { NFILES = 40000 };
	FILE **f = malloc(NFILES * sizeof(*f));
	for (int i = 0; i < NFILES; i++)
		if (!(f[i] = fmemopen(NULL, 64, "w+"))) {
			perror("fmemopen");
			return 3;
		}
	pthread_t t;
	pthread_create(&t, NULL, idle_thread, NULL);
	size_t n = 16 * MB;
	char *junk = heap(n, 51);
	for (int i = 0; i < 3; i++) {
		scan(junk, n);
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			_exit(fprintf(f[i * 997], "child %d\n", i) > 0 ? 0 : 1);
		int st;
		waitpid(pid, &st, 0);
		printf("%d FILEs, child %d: exit %d\n", NFILES, i, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	return 0;
}

/* fork while another thread walks the loaded objects (dl_iterate_phdr) in a loop, as an unwinder
 * does: the child inherits the loader's lock of that list held by a thread it does not have, and
 * the child's runtime walks the list as it starts (children hung, 3 forks in 200). */
static volatile int stop_walking;
static int count_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info, (void)size;
	(*(long *)arg)++;
	return 0;
}

static void *walker_thread(void *arg)
{
	long n = 0;
	while (!stop_walking)
		dl_iterate_phdr(count_object, &n);
	return arg;
}

static int mode_forkwalk(void)
{
	enum { NFORKS = 150 };
	pthread_t t;
	pthread_create(&t, NULL, walker_thread, NULL);
	int exited = 0;
	for (int i = 0; i < NFORKS; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		int st;
		waitpid(pid, &st, 0);
		exited += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	stop_walking = 1;
	pthread_join(t, NULL);
	printf("%d forks beside a thread walking the loaded objects: %d children exited\n", NFORKS, exited);
	return 0;
}

/* write(2) of an evicted buffer while another thread signals the writer every 200 us (a handler
 * that counts, SA_RESTART): the kernel's copy faults on page after page with a signal pending, and
 * the thread leaves each fault before it can be seen asleep there. Woken unserved each time to be
 * read again, it faulted for ever. */
static volatile sig_atomic_t usr1_hits, stop_pestering;
static pthread_t writer;
static void count_usr1(int sig) { (void)sig; usr1_hits++; }
static void *pester_thread(void *arg)
{
	struct timespec t = { 0, 200 * 1000 };
	while (!stop_pestering) {
		pthread_kill(writer, SIGUSR1);
		nanosleep(&t, NULL);
	}
	return arg;
}

static int mode_sigwrite(void)
{
	size_t n = 24 * MB;
	char *a = heap(n, 61), *junk = heap(n, 62);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = count_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	writer = pthread_self();
	FILE *out = tmpfile();
	if (!out) {
		perror("tmpfile");
		return 3;
	}
	int fd = fileno(out);
	pthread_t t;
	pthread_create(&t, NULL, pester_thread, NULL);
	size_t total = 0;
	for (int r = 0; r < 2; r++) {
		scan(junk, n); /* evicts the buffer */
		lseek(fd, 0, SEEK_SET);
		for (size_t off = 0; off < n;) {
			ssize_t w = write(fd, a + off, n - off);
			if (w > 0) {
				off += (size_t)w;
				total += (size_t)w;
			}
		}
	}
	stop_pestering = 1;
	pthread_join(t, NULL);
	char *back = malloc(n);
	ssize_t got = pread(fd, back, n, 0);
	printf("wrote %zu bytes under signals; read back %zd: %s\n", total, got,
	       got == (ssize_t)n && !memcmp(a, back, n) ? "same" : "DIFFERENT");
	return 0;
}

/* fork with every signal blocked until exec, as git's run_command and perl's fork do: the child
 * reads the parent's evicted heap and touches fresh memory with all signals still blocked (its
 * first missing page killed it with SIGBUS, fltrace's window handler unable to run). */
static int mode_forkblocked(void)
{
	size_t n = 32 * MB;
	char *a = heap(n, 5);
	char *volatile fresh = malloc(MB); /* never touched before the fork */
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid_t pid = fork();
	if (pid == 0) {
		fresh[4096] = 1;
		_exit(checksum(a, n) == checksum(a, n) && fresh[4096] == 1 ? (int)(checksum(a, n) & 0x7f) : 0);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	int st;
	waitpid(pid, &st, 0);
	printf("parent: %016llx; child ", (unsigned long long)checksum(a, n));
	if (WIFSIGNALED(st))
		printf("killed by signal %d\n", WTERMSIG(st));
	else
		printf("exit %d\n", WEXITSTATUS(st));
	return 0;
}

/* daemon(3) (glibc's forks past the fork wrapper): the daemon reads the evicted heap and has the
 * signal mask it had; its line comes back through a pipe, which closes when it exits. */
static int mode_daemon(void)
{
	size_t n = 32 * MB;
	char *a = heap(n, 6);
	sigset_t bus, now;
	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	sigprocmask(SIG_BLOCK, &bus, NULL);
	int fds[2];
	if (pipe(fds) < 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		if (daemon(1, 1) < 0)
			_exit(1);
		sigprocmask(SIG_BLOCK, NULL, &now);
		dprintf(fds[1], "daemon: %016llx, SIGBUS blocked %d\n", (unsigned long long)checksum(a, n),
			sigismember(&now, SIGBUS));
		_exit(0);
	}
	close(fds[1]);
	int st;
	waitpid(pid, &st, 0);
	char line[128];
	ssize_t got = read(fds[0], line, sizeof(line) - 1);
	line[got > 0 ? got : 0] = '\0';
	printf("parent: %016llx; daemon's parent exit %d; %s", (unsigned long long)checksum(a, n),
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1, line);
	return 0;
}

/* Memory emptied behind fltrace's back (a raw madvise system call, not the interposed function):
 * its bookkeeping says the page is there, the kernel keeps reporting the fault. fltrace must stop
 * the program with a message, never spin forever. */
static int mode_rawzap(void)
{
	char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p[0] = 1;
	syscall(SYS_madvise, p, 4096, MADV_DONTNEED);
	printf("read back %d\n", p[0]);
	return 0;
}

/* A vfork child (dash runs simple commands so) writes fresh pages of its parent's memory before it
 * exits: its faults come to the parent's userfaultfd from a thread of another process. */
static int mode_vfork(void)
{
	size_t pages = 16;
	volatile char *p = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	pid_t pid = vfork();
	if (pid == 0) {
		for (size_t i = 0; i < pages; i++)
			p[i * 4096] = (char)(i + 1); /* VFORK-TOUCH */
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	unsigned sum = 0;
	for (size_t i = 0; i < pages; i++)
		sum += (unsigned char)p[i * 4096];
	printf("vfork child wrote %u (exit %d)\n", sum, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(void);
} modes[] = {
	{ "fork", mode_fork },     { "syscalls", mode_syscalls }, { "remap", mode_remap },
	{ "madvise", mode_madvise }, { "signals", mode_signals }, { "waits", mode_waits },
	{ "dup2", mode_dup2 },     { "rawzap", mode_rawzap }, { "forkthreads", mode_forkthreads },
	{ "forkdlopen", mode_forkdlopen }, { "forkunwind", mode_forkunwind }, { "forkfiles", mode_forkfiles },
	{ "sigwrite", mode_sigwrite },     { "forkwalk", mode_forkwalk }, { "forkblocked", mode_forkblocked },
	{ "daemon", mode_daemon },  { "masks", mode_masks }, { "segvstorm", mode_segvstorm },
	{ "vfork", mode_vfork },
};

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "exit"))
		return mode_exit(argv[2]);
	for (size_t i = 0; argc > 1 && i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[1], modes[i].name))
			return modes[i].run();
	fprintf(stderr, "usage: memops fork|forkthreads|forkdlopen|forkunwind|forkfiles|forkwalk|forkblocked|daemon|vfork|sigwrite|\n"
			"              syscalls|remap|madvise|signals|masks|segvstorm|waits|\n"
			"              dup2|rawzap|exit HOW\n");
	return 2;
}
