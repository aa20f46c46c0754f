/* A library whose constructor dlopens (RTLD_GLOBAL) the object named by $EARLY_DLOPEN: linked into
 * an executable, it runs before fltrace's own constructor, so the loader allocates that link map
 * and the scope list from the program's heap before fltrace has taken over. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void early_dlopen(void)
{
	const char *path = getenv("EARLY_DLOPEN");
	if (path && !dlopen(path, RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "earlydl: %s\n", dlerror());
		exit(3);
	}
}
