/*
 * samples/phases.c: three phases of page faults, for a flight recorder's
 * window: what came first must be overwritten, what came last kept.
 *
 * usage: phases [FIRST_PAGES [MIDDLE_MIB [LAST_PAGES [HOLD_MS]]]]
 *        (default 256, 256, 64, 0)
 * phase_first() writes FIRST_PAGES fresh pages and keeps them;
 * phase_middle() maps, writes and unmaps 1 MiB at a time, MIDDLE_MIB
 * times; phase_last() writes LAST_PAGES fresh pages and keeps them. Each
 * phase prints its pages when it is done (one fault each: no huge pages),
 * to stdout, flushed; after the last the program sleeps HOLD_MS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static char *fresh(size_t pages)
{
	char *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, pages * PAGE, MADV_NOHUGEPAGE);
	return p;
}

__attribute__((noinline)) void phase_first(size_t pages)
{
	char *p = fresh(pages);

	for (size_t i = 0; i < pages; i++)
		p[i * PAGE] = 1;
	printf("phase_first pages %zu\n", pages);
	fflush(stdout);
}

__attribute__((noinline)) void phase_middle(size_t mib)
{
	for (size_t m = 0; m < mib; m++) {
		char *p = fresh(256);

		for (size_t i = 0; i < 256; i++)
			p[i * PAGE] = 1;
		munmap(p, 256 * PAGE);
	}
	printf("phase_middle pages %zu\n", mib * 256);
	fflush(stdout);
}

__attribute__((noinline)) void phase_last(size_t pages)
{
	char *p = fresh(pages);

	for (size_t i = 0; i < pages; i++)
		p[i * PAGE] = 1;
	printf("phase_last pages %zu\n", pages);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t first = argc > 1 ? strtoul(argv[1], NULL, 0) : 256;
	size_t middle = argc > 2 ? strtoul(argv[2], NULL, 0) : 256;
	size_t last = argc > 3 ? strtoul(argv[3], NULL, 0) : 64;
	long hold = argc > 4 ? strtol(argv[4], NULL, 0) : 0;
	struct timespec ts = { hold / 1000, (hold % 1000) * 1000000L };

	phase_first(first);
	phase_middle(middle);
	phase_last(last);
	if (hold > 0)
		nanosleep(&ts, NULL);
	return 0;
}
