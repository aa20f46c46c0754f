/* Threads touching the TLS of many dlopened objects: a thread made before them has a TLS vector
 * too short for them, which the loader grows (and allocates each block) inside __tls_get_addr.
 * Usage: tlsmany <copy of tlsmod.so>... Prints the sum of every thread's counters. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static int nmods;
static char *(*get[64])(void);
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go;

static void *touch_all(void *arg)
{
	long sum = 0;
	for (int i = 0; i < nmods; i++)
		sum += *get[i]();
	return (void *)(sum + (long)arg);
}

static void *early(void *arg)
{
	pthread_mutex_lock(&mu);
	while (!go)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return touch_all(arg);
}

int main(int argc, char **argv)
{
	pthread_t e, t[4];
	void *r;
	long total = 0;
	if (argc < 2 || argc > 65 || pthread_create(&e, NULL, early, NULL))
		return 2;
	for (nmods = 0; nmods < argc - 1; nmods++) {
		void *h = dlopen(argv[nmods + 1], RTLD_NOW);
		if (!h || !(get[nmods] = (char *(*)(void))dlsym(h, "get")))
			return 1;
	}
	pthread_mutex_lock(&mu);
	go = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(e, &r);
	total += (long)r;
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, touch_all, NULL);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &r);
		total += (long)r;
	}
	total += (long)touch_all(NULL);
	printf("modules %d total %ld\n", nmods, total);
	return 0;
}
