/* The program's own frame of a stack: the innermost one outside the C library, the C++ runtime,
 * libgcc, the loader and fltrace itself, and the name a report gives it. */
#include <inttypes.h>
#include <string.h>

#include "analysis.h"

bool caller_is_runtime(const char *lib)
{
	/* glibc's parts (libc, libm, libpthread, libdl), the C++ runtime and its unwinder, the
	 * loader, the kernel's vDSO (clock_gettime's code), and fltrace's library, whose je_*
	 * frames are the program's malloc at work. */
	static const char *const names[] = { "libc.so", "libm.so", "libpthread", "libdl.so", "libstdc++",
					     "libgcc_s", "ld-linux", "[vdso]", "libfltrace.so" };
	const char *base = strrchr(lib, '/');

	base = base ? base + 1 : lib;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(base, names[i], strlen(names[i])))
			return true;
	return false;
}

uint32_t caller_index(const struct symbolizer *s, const int64_t *frames, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		const struct sym_frame *f = frames[k] >= 0 ? sym_frame(s, frames[k]) : NULL;
		/* An address no mapping held ("??") is no runtime library: a JIT's code, say. */
		if (!f || !caller_is_runtime(f->lib))
			return k;
	}
	return 0; /* all of it is the runtime's (the loader at start-up): the leaf says most */
}

const char *caller_name(const struct sym_frame *f, char *buf, size_t len)
{
	const char *lb;

	if (!f)
		return "??";
	if (f->resolved && f->locs[0].line) {
		/* The innermost line of the frame: where the program called into the runtime. */
		const char *cut = strstr(f->code, "<<<");
		snprintf(buf, len, "%.*s", cut ? (int)(cut - f->code) : (int)strlen(f->code), f->code);
		return buf;
	}
	/* No line: its function ("object+0xentry" when only the unwind table knows it). */
	if (strstr(f->func, "+0x") || !strcmp(f->lib, "??"))
		return f->func;
	lb = strrchr(f->lib, '/');
	snprintf(buf, len, "%s (%s)", f->func, lb ? lb + 1 : f->lib);
	return buf;
}
