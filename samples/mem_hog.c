/*
 * samples/mem_hog.c: eats memory until the kernel kills it, the victim of
 * an OOM kill in a memory-limited cgroup.
 *
 * usage: mem_hog [CHUNK_KIB]   (default 1024)
 * Prints: its pid and comm first, then nothing: every chunk is malloc()ed
 * and written page by page in grow(), forever, until SIGKILL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile last;

void grow(size_t chunk)
{
	for (;;) {
		char *p = malloc(chunk);

		if (!p)
			continue;
		for (size_t i = 0; i < chunk; i += 4096)
			p[i] = 1;
		last = p;
	}
}

int main(int argc, char **argv)
{
	size_t chunk = (argc > 1 ? strtoul(argv[1], NULL, 10) : 1024) << 10;

	printf("mem_hog: pid %d comm mem_hog\n", (int)getpid());
	fflush(stdout);
	grow(chunk ? chunk : 1 << 20);
	return 0;
}
