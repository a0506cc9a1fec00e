/*
 * samples/map_many.c: holds N mappings of one file, each of its own, as a
 * process of a user the recorder does not trust can: the picture of its
 * address space grows with N, whatever its memory.
 *
 * usage: map_many [N [HOLD_MS]]   (default 1000 mappings, 0 ms)
 * Maps the first page of its own executable N times, read-only: the
 * kernel keeps each a mapping of its own (one page at offset 0 is never
 * merged with its neighbour's). Prints "map_many: pid P mapped N" when all
 * are made, then holds them HOLD_MS.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	long hold = argc > 2 ? atol(argv[2]) : 0;
	struct timespec ts = { hold / 1000, (hold % 1000) * 1000000L };
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 1;
	for (int i = 0; i < n; i++)
		if (mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED)
			return 1;
	printf("map_many: pid %d mapped %d\n", (int)getpid(), n);
	fflush(stdout);
	nanosleep(&ts, NULL);
	return 0;
}
