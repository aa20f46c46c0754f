/* Test workload: dlopens a plugin, faults through it, dlcloses it, then exits: the maps history must
 * still resolve the plugin's frames. Usage: dlopener PATH-TO-plugin.so */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int (*touch)(char *, int) = (int (*)(char *, int))dlsym(h, "plugin_touch");
	char *p = mmap(NULL, 40 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int s = touch(p, 40);
	dlclose(h);
	/* Something else at the plugin's old address, so a maps snapshot taken at exit would be wrong. */
	void *other = mmap(NULL, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("dlopener: %d %d\n", s, other != MAP_FAILED);
	return 0;
}
