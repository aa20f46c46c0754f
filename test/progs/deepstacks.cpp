// Test workload: 16 threads fault at the bottom of deep recursions, and C++ exceptions are in flight
// (thrown through frames that touch fresh memory), so stacks of 64+ frames must come out whole.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <sys/mman.h>
#include <thread>
#include <vector>

static const int PAGES_PER_THREAD = 64;

__attribute__((noinline)) static long recurse(char *mem, int depth, int pages)
{
	if (depth == 0) {
		long sum = 0;
		for (int i = 0; i < pages; i++)
			sum += (mem[i * 4096] = (char)i); /* DEEP-LEAF */
		return sum;
	}
	long r = recurse(mem, depth - 1, pages) + depth; /* DEEP-CALL */
	__asm__ volatile("" ::: "memory");
	return r;
}

struct Toucher {
	char *p;
	~Toucher() { p[0] = 1; /* DTOR-TOUCH */ }
};

__attribute__((noinline)) static void throw_through(char *mem, int depth)
{
	Toucher t{ mem + depth * 4096 };
	if (depth == 0)
		throw std::runtime_error("bottom");
	throw_through(mem, depth - 1);
}

int main()
{
	std::vector<std::thread> threads;
	std::vector<long> sums(16);
	size_t len = 16 * PAGES_PER_THREAD * 4096;
	char *mem = (char *)mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int t = 0; t < 16; t++)
		threads.emplace_back([=, &sums] { sums[t] = recurse(mem + t * PAGES_PER_THREAD * 4096, 100, PAGES_PER_THREAD); });
	for (auto &th : threads)
		th.join();
	char *ex = (char *)mmap(nullptr, 32 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int caught = 0;
	try {
		throw_through(ex, 31);
	} catch (const std::exception &e) {
		caught = !strcmp(e.what(), "bottom");
	}
	long total = 0;
	for (long s : sums)
		total += s;
	printf("deepstacks: %ld caught %d\n", total, caught);
	return 0;
}
