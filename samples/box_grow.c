/*
 * samples/box_grow.c: a service that grows its heap through libc, as one
 * on a production box would: grow_forever() takes chunks with malloc()
 * and fills them with memset(). Built like Debian's programs (-O2, no
 * frame pointers), so only unwind tables name its callers.
 *
 * usage: box_grow [--memfd] CHUNK_KIB N [LINGER_S]
 *   N chunks of CHUNK_KIB KiB (below glibc's mmap threshold of 128 KiB
 *   they come from brk), then exit, LINGER_S seconds later (default 0);
 *   N = 0: forever, until killed.
 *   --memfd: first run itself again from a copy in a memfd (fexecve), so
 *   its code lies in no file: "/memfd:box_grow (deleted)".
 * Prints its pid as it sees it (in a pid namespace, its pid there) first,
 * then what it grew.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

static char *volatile last;

__attribute__((noinline)) void grow_forever(size_t chunk, long n)
{
	for (long i = 0; n == 0 || i < n; i++) {
		char *p = malloc(chunk);

		if (!p)
			continue;
		memset(p, (int)i, chunk);
		last = p;
	}
}

/* Run this program again from a memfd holding a copy of it. */
static void reexec_memfd(char **argv)
{
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), fd = memfd_create("box_grow", MFD_CLOEXEC);
	struct stat st;
	extern char **environ;

	if (in < 0 || fd < 0 || fstat(in, &st) || sendfile(fd, in, NULL, st.st_size) != st.st_size) {
		perror("box_grow: cannot copy itself into a memfd");
		exit(1);
	}
	fexecve(fd, argv, environ);
	perror("box_grow: fexecve");
	exit(1);
}

int main(int argc, char **argv)
{
	size_t chunk;
	long n;

	if (argc > 1 && !strcmp(argv[1], "--memfd")) {
		argv[1] = argv[0];
		reexec_memfd(argv + 1);
	}
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: box_grow [--memfd] CHUNK_KIB N [LINGER_S]\n");
		return 2;
	}
	chunk = strtoul(argv[1], NULL, 10) << 10;
	n = strtol(argv[2], NULL, 10);
	printf("box_grow: pid %d\n", (int)getpid());
	fflush(stdout);
	grow_forever(chunk ? chunk : 4096, n);
	printf("box_grow: grew %ld chunks of %zu KiB in grow_forever\n", n, chunk >> 10);
	fflush(stdout);
	if (argc == 4)
		usleep((useconds_t)(atof(argv[3]) * 1e6));
	return 0;
}
