/*
 * samples/cpu_hop.c: a program that moves to another CPU as it starts,
 * then maps code there: its exec is written to one CPU's ring and its
 * later mappings to another's, for the recorder's ordering of them.
 *
 * usage: cpu_hop [PAGES [back]]   (default 64)
 * Started pinned to one CPU (taskset -c 1), it moves itself to another
 * (CPU 0, or the lowest other it may use), dlopens libz, and has
 * inflateInit2_ call its zalloc, which writes PAGES fresh anonymous pages
 * from touch_pages(): PAGES faults under main, inflateInit2_, hop_zalloc
 * and touch_pages. With "back", it returns to the first CPU once libz is
 * mapped, and faults there: the CPU that holds its exec then holds most
 * of its records. Prints the CPUs and the count.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

static long pages = 64;
static size_t mapped;

__attribute__((noinline)) void touch_pages(char *p, long n, long page)
{
	for (long i = 0; i < n; i++)
		p[i * page] = 1;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) voidpf hop_zalloc(voidpf opaque, uInt items, uInt size)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t want = (size_t)items * size;
	char *p;

	(void)opaque;
	/* The block zlib asked for, and the pages to touch after it. */
	mapped = (want + page - 1) / page * page + (size_t)pages * page;
	p = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return Z_NULL;
	touch_pages(p + (want + page - 1) / page * page, pages, page);
	return p;
}

static void hop_zfree(voidpf opaque, voidpf p)
{
	(void)opaque;
	munmap(p, mapped);
}

int main(int argc, char **argv)
{
	int (*init)(z_streamp, int, const char *, int);
	int (*end)(z_streamp);
	z_stream zs = { .zalloc = hop_zalloc, .zfree = hop_zfree };
	int from = sched_getcpu(), to = -1, back = argc > 2 && !strcmp(argv[2], "back");
	cpu_set_t set;
	void *z;

	if (argc > 1)
		pages = atol(argv[1]);
	if (sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) != 1) {
		fprintf(stderr, "cpu_hop: start it pinned to one CPU (taskset -c 1 cpu_hop)\n");
		return 2;
	}
	CPU_ZERO(&set);
	for (int c = 0; c < CPU_SETSIZE && to < 0; c++)
		if (c != from) {
			CPU_SET(c, &set);
			if (!sched_setaffinity(0, sizeof(set), &set))
				to = c;
			CPU_CLR(c, &set);
		}
	if (to < 0 || !(z = dlopen("libz.so.1", RTLD_NOW)) || !(init = (int (*)(z_streamp, int, const char *, int))dlsym(z, "inflateInit2_")) ||
	    !(end = (int (*)(z_streamp))dlsym(z, "inflateEnd"))) {
		fprintf(stderr, "cpu_hop: cannot move to another CPU or load libz\n");
		return 1;
	}
	if (back) {
		CPU_ZERO(&set);
		CPU_SET(from, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "cpu_hop: cannot move back to cpu %d\n", from);
			return 1;
		}
	}
	if (init(&zs, 15, ZLIB_VERSION, (int)sizeof(zs)) != Z_OK) {
		fprintf(stderr, "cpu_hop: inflateInit2_ failed\n");
		return 1;
	}
	end(&zs);
	printf("cpu_hop: from cpu %d to cpu %d%s (now %d), %ld pages touched from touch_pages in zlib's zalloc\n", from,
	       to, back ? " and back" : "", sched_getcpu(), pages);
	return 0;
}
