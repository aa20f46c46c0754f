/* Test plugin: loaded with dlopen by dlopener.c and closed again before exit; its faults must still
 * resolve to this file. Built as a shared library. */
#include <stddef.h>

__attribute__((noinline)) int plugin_touch(char *p, int pages)
{
	int sum = 0;
	for (int i = 0; i < pages; i++)
		sum += (p[(size_t)i * 4096] = (char)(i + 1)); /* PLUGIN-LEAF */
	return sum;
}
