/*
 * tests/fuzz/fuzz.c: what the fuzz targets share; see fuzz.h.
 */
#include "fuzz.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void fuzz_env(void)
{
	unsetenv("DEBUGINFOD_URLS");
	setenv("MEMSIGHT_CACHE_DIR", "", 1);
}

int fuzz_memfd(const void *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
	const char *p = data;

	if (fd < 0)
		return -1;
	while (size) {
		ssize_t w = write(fd, p, size);

		if (w <= 0) {
			close(fd);
			return -1;
		}
		p += w;
		size -= (size_t)w;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

int fuzz_command(int (*fn)(int argc, char **argv, struct analyze_opts *a), const char *const *args, const char *path)
{
	struct analyze_opts a = { .sym.hermetic = 1 };
	char *argv[16];
	int argc = 0;

	for (; args[argc] && argc < 14; argc++)
		argv[argc] = (char *)args[argc];
	argv[argc++] = (char *)path;
	argv[argc] = NULL;
	return fn(argc, argv, &a);
}
