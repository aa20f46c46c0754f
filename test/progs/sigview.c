/* What a program sees of its own signal handlers: sigaction's old action (handler, flags, mask),
 * signal()'s answer, SA_RESETHAND, SA_SIGINFO's siginfo and a handler that rewrites the context it
 * returns to. fltrace runs the program's handlers behind an entry of its own; none of it may show.
 * Touches fresh pages inside the handlers, so that their faults are served there. `sigview quiet N`
 * installs a handler that never runs and touches N fresh pages. Output depends only on the
 * arguments. `sigview altstack N` runs a handler on an 8 KiB sigaltstack (SIGSTKSZ as most programs
 * size it, a guard page below) that touches N fresh pages; `altstack-autodisarm N` sets it with
 * SS_AUTODISARM. `sigview family` installs handlers with
 * sigset, bsd_signal, sysv_signal, __sysv_signal and ssignal (with SIGVIEW_RAW set, it also says
 * whether the kernel holds the program's handler itself, natively it does, and holds SIGRTMAX-2
 * with sighold). Usage: sigview [quiet N |
 * altstack N | family] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31) /* linux/signal.h; glibc does not define it */
#endif

sighandler_t bsd_signal(int sig, sighandler_t handler);
sighandler_t sysv_signal(int sig, sighandler_t handler);
sighandler_t __sysv_signal(int sig, sighandler_t handler);

static volatile int ran_info, ran_plain, info_value, info_code;
static char *pages;
static int next_page;

static void touch_fresh_page(void)
{
	pages[(size_t)next_page++ * 4096] = 1;
}

static void on_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	touch_fresh_page();
	ran_info++;
	info_value = si->si_value.sival_int;
	info_code = si->si_code;
}

static void on_plain(int sig)
{
	(void)sig;
	touch_fresh_page();
	ran_plain++;
}

/* Skips the 2-byte `ud2` it interrupted: the program's handler moves its own context on. */
static void on_ill(int sig, siginfo_t *si, void *ucv)
{
	(void)sig, (void)si;
	ucontext_t *uc = ucv;
	uc->uc_mcontext.gregs[REG_RIP] += 2;
	ran_plain += 100;
}

static void show(const char *what, int sig)
{
	struct sigaction now;
	sigaction(sig, NULL, &now);
	const char *h = now.sa_handler == SIG_DFL ? "default" : now.sa_handler == SIG_IGN ? "ignore" :
			(void *)now.sa_sigaction == (void *)on_info ? "on_info" :
			now.sa_handler == on_plain ? "on_plain" : "other";
	int masked = 0;
	for (int s = 1; s < NSIG; s++)
		masked += sigismember(&now.sa_mask, s) == 1;
	printf("%s: %s flags=%#x siginfo=%d resethand=%d restart=%d mask_usr2=%d masked=%d\n", what, h,
	       (unsigned)now.sa_flags, !!(now.sa_flags & SA_SIGINFO), !!(now.sa_flags & SA_RESETHAND),
	       !!(now.sa_flags & SA_RESTART), sigismember(&now.sa_mask, SIGUSR2), masked);
}

static void on_int(int sig)
{
	(void)sig;
	_exit(3);
}

static int quiet(int n)
{
	signal(SIGINT, on_int);
	char *p = mmap(NULL, (size_t)n << 12, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < n; i++)
		p[(size_t)i << 12] = (char)i; /* SIGVIEW-QUIET-TOUCH */
	printf("touched %d\n", n);
	return 0;
}

static void on_alt(int sig)
{
	(void)sig;
	for (int i = 0; i < next_page; i++)
		pages[(size_t)i << 12] = (char)i; /* SIGVIEW-ALT-TOUCH */
	ran_plain++;
}

/* The handler's faults are taken on the program's alternate stack: fltrace's stack signal arrives
 * there too, and must fit in what the program's handler leaves of it. */
static int altstack(int n, int autodisarm)
{
	enum { ALT = 8192, GUARD = 4096 };
	char *m = mmap(NULL, GUARD + ALT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(m, GUARD, PROT_NONE);
	/* SS_AUTODISARM, as Go and some runtimes set it: the kernel clears the setting while the
	 * handler runs, so a signal nested in it cannot see it. */
	stack_t ss = { .ss_sp = m + GUARD, .ss_size = ALT, .ss_flags = autodisarm ? SS_AUTODISARM : 0 };
	sigaltstack(&ss, NULL);
	pages = mmap(NULL, (size_t)n << 12, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	next_page = n;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alt;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	long sum = 0;
	for (int i = 0; i < n; i++)
		sum += pages[(size_t)i << 12];
	printf("altstack handler ran %d, sum %ld\n", ran_plain, sum);
	return 0;
}

static const char *name_of(sighandler_t h)
{
	return h == SIG_DFL ? "default" : h == SIG_IGN ? "ignore" : h == SIG_HOLD ? "hold" :
	       h == on_plain ? "on_plain" : h == SIG_ERR ? "error" : "other";
}

/* Whether the kernel holds `h` itself for sig: read past every wrapper. */
static void raw_view(const char *what, int sig, sighandler_t h)
{
	if (!getenv("SIGVIEW_RAW"))
		return;
	struct { void *handler; unsigned long flags; void *restorer; unsigned long mask; } k;
	syscall(SYS_rt_sigaction, sig, NULL, &k, 8);
	fprintf(stderr, "raw %s: %s\n", what, k.handler == (void *)h ? "the program's handler" : "not the program's handler");
}

/* Installs on_plain with one of the signal() family, says what it answered and what is installed,
 * and raises the signal. */
static void install_and_raise(const char *what, sighandler_t (*install)(int, sighandler_t), int sig)
{
	printf("%s answered %s\n", what, name_of(install(sig, on_plain)));
	raw_view(what, sig, on_plain);
	show(what, sig);
	raise(sig);
}

#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* sigset: old, still in use */
static int family(void)
{
	pages = mmap(NULL, 64 << 12, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	install_and_raise("sigset", sigset, SIGUSR1);
	printf("sigset(SIG_HOLD) answered %s\n", name_of(sigset(SIGUSR1, SIG_HOLD)));
	raise(SIGUSR1); /* held: runs once released */
	printf("on_plain ran %d while held\n", ran_plain);
	printf("sigset again answered %s\n", name_of(sigset(SIGUSR1, on_plain)));
	printf("on_plain ran %d released\n", ran_plain);
	install_and_raise("bsd_signal", bsd_signal, SIGUSR2);
	install_and_raise("sysv_signal", sysv_signal, SIGUSR2);
	show("sysv_signal after", SIGUSR2);
	install_and_raise("__sysv_signal", __sysv_signal, SIGHUP);
	install_and_raise("ssignal", ssignal, SIGHUP);
	if (getenv("SIGVIEW_RAW")) { /* natively the program may hold any signal */
		sighold(SIGRTMAX - 2);
		unsigned long mask;
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask, 8);
		fprintf(stderr, "raw sighold: SIGRTMAX-2 blocked %d\n", (int)(mask >> (SIGRTMAX - 3) & 1));
	}
	printf("on_plain ran %d\n", ran_plain);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "family") == 0)
		return family();
	if (argc == 3 && strcmp(argv[1], "quiet") == 0)
		return quiet(atoi(argv[2]));
	if (argc == 3 && strcmp(argv[1], "altstack") == 0)
		return altstack(atoi(argv[2]), 0);
	if (argc == 3 && strcmp(argv[1], "altstack-autodisarm") == 0)
		return altstack(atoi(argv[2]), 1);
	pages = mmap(NULL, 64 << 12, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_info;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaddset(&sa.sa_mask, SIGKILL); /* the kernel drops it */
	sigaddset(&sa.sa_mask, SIGRTMAX - 2); /* fltrace's stack signal: the program still sees it */
	sigaction(SIGUSR1, &sa, &old);
	printf("first old: %s\n", old.sa_handler == SIG_DFL ? "default" : "other");
	show("installed", SIGUSR1);
	sigqueue(getpid(), SIGUSR1, (union sigval){ .sival_int = 42 });
	printf("on_info ran %d value %d queued %d\n", ran_info, info_value, info_code == SI_QUEUE);

	sighandler_t was = signal(SIGUSR1, on_plain);
	printf("signal() answered %s\n", (void *)was == (void *)on_info ? "on_info" : "other");
	show("after signal()", SIGUSR1);
	raise(SIGUSR1);
	printf("on_plain ran %d\n", ran_plain);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_plain;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGUSR2, &sa, NULL);
	show("one-shot", SIGUSR2);
	raise(SIGUSR2);
	show("one-shot after", SIGUSR2);
	printf("on_plain ran %d\n", ran_plain);

	was = signal(SIGUSR1, SIG_IGN);
	printf("signal(SIG_IGN) answered %s\n", was == on_plain ? "on_plain" : "other");
	show("ignored", SIGUSR1);
	raise(SIGUSR1);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_ill;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGILL, &sa, NULL);
	__asm__ volatile("ud2");
	printf("past ud2: on_plain ran %d\n", ran_plain);
	return 0;
}
