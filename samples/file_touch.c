/*
 * samples/file_touch.c: page faults on a file mapping and on anonymous
 * memory, for faults by backing file.
 *
 * usage: file_touch FILE [FILE_PAGES [ANON_PAGES [BELOW_PAGES]]]   (default 32, 16 and 0)
 * Writes FILE_PAGES pages to FILE, maps it shared and writes one byte in
 * each page from touch_file() (one write fault a page: shared write faults
 * do not map neighbours ahead), then writes each of ANON_PAGES fresh
 * anonymous pages from touch_anon(). Then maps BELOW_PAGES more anonymous
 * pages right below those, which the kernel merges into the same mapping,
 * and writes them too. Prints the counts and the path.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

void touch_file(char *p, long pages, long page)
{
	for (long i = 0; i < pages; i++)
		p[i * page] = 2;
}

void touch_anon(char *p, long pages, long page)
{
	for (long i = 0; i < pages; i++)
		p[i * page] = 3;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	long fpages = argc > 2 ? atol(argv[2]) : 32, apages = argc > 3 ? atol(argv[3]) : 16;
	long below = argc > 4 ? atol(argv[4]) : 0;
	char *buf = calloc(1, page), *f, *a, *b;
	int fd;

	if (argc < 2 || !buf) {
		fprintf(stderr, "usage: file_touch FILE [FILE_PAGES [ANON_PAGES]]\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 1;
	for (long i = 0; i < fpages; i++)
		if (write(fd, buf, page) != page)
			return 1;
	f = mmap(NULL, fpages * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	/* Room below the anonymous pages, freed again until they come. */
	b = mmap(NULL, (below + apages) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f == MAP_FAILED || b == MAP_FAILED)
		return 1;
	a = b + below * page;
	if (below && munmap(b, below * page))
		return 1;
	touch_file(f, fpages, page);
	touch_anon(a, apages, page);
	if (below) {
		if (mmap(b, below * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
			 0) != b)
			return 1;
		touch_anon(b, below, page);
	}
	printf("file_touch: %ld file pages of %s, %ld anonymous pages", fpages, argv[1], apages);
	if (below)
		printf(", then %ld below them (one mapping)", below);
	printf("\n");
	return 0;
}
