/* What the fuzz targets share: an input handed to a reader that opens files by name, as a file
 * of its own (a memfd, named through /proc/self/fd). */
#ifndef FLTRACE_FUZZ_INPUT_H
#define FLTRACE_FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* The path of a file holding exactly data[0, size): the same memfd every time, rewritten. */
static const char *fuzz_input_file(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];

	if (fd < 0) {
		fd = memfd_create("fltrace-fuzz", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	return path;
}

#endif
