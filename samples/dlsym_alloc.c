/*
 * samples/dlsym_alloc.c: allocations through a malloc looked up with dlsym
 * in libc itself, past any interposed malloc, as ctypes and plugin loaders
 * do.
 *
 * Usage: dlsym_alloc N [KIB]   (default 100 blocks of 1024 KiB)
 * Prints: the bytes and blocks leaked, and the function that leaked them.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

static __attribute__((noinline)) void grab(void *(*alloc)(size_t), int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		char *p = alloc(size);

		if (!p)
			exit(1);
		memset(p, 1, size);
		sink = p;
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	size_t kib = argc > 2 ? strtoul(argv[2], NULL, 10) : 1024;
	void *libc = dlopen("libc.so.6", RTLD_NOW);
	void *(*alloc)(size_t) = libc ? (void *(*)(size_t))dlsym(libc, "malloc") : NULL;

	if (!alloc) {
		fprintf(stderr, "dlsym_alloc: cannot find libc's malloc: %s\n", dlerror());
		return 1;
	}
	grab(alloc, n, kib << 10);
	printf("dlsym_alloc: leaked %zu bytes in %d allocations from grab\n", (size_t)n * (kib << 10), n);
	return 0;
}
