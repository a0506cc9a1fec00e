/*
 * samples/xor_encoder.c: an XOR encoder, in C, with
 * its two growth bugs kept on purpose:
 *   1. read_in_chunks() allocates a buffer the size of the whole input
 *      (glibc serves it with one mmap), where a 4 KiB one would do;
 *   2. process_chunk() keeps a copy of every chunk it encodes, so the heap
 *      grows by the input size (brk) and every copy's pages fault in.
 * It prints its own ground truth: sizes, the buffer's mapping, the chunk
 * count and the addresses the chunks span, and the page faults the kernel
 * counted for it (getrusage).
 *
 * usage: xor_encoder INPUT [OUTPUT]     (OUTPUT defaults to /dev/null)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 4096

struct chunk {
	struct chunk *next;
	size_t len;
	unsigned char data[];
};

static struct chunk *kept;
static size_t nr_kept;
static uintptr_t kept_lo = UINTPTR_MAX, kept_hi;
static int out_fd;

static void process_chunk(const unsigned char *in, size_t n)
{
	struct chunk *c = malloc(sizeof(*c) + n);

	if (!c) {
		perror("malloc");
		exit(1);
	}
	c->len = n;
	for (size_t i = 0; i < n; i++)
		c->data[i] = in[i] ^ 0x5a;
	if (write(out_fd, c->data, n) != (ssize_t)n) {
		perror("write");
		exit(1);
	}
	/* Bug 2: the chunk is kept until exit instead of freed. */
	c->next = kept;
	kept = c;
	nr_kept++;
	if ((uintptr_t)c < kept_lo)
		kept_lo = (uintptr_t)c;
	if ((uintptr_t)c->data + n > kept_hi)
		kept_hi = (uintptr_t)c->data + n;
}

/* glibc keeps a chunk's size in the word before it. Read apart from the
 * malloc call so the compiler does not take it for a read of new memory. */
static size_t __attribute__((noinline)) malloc_header(uintptr_t p)
{
	size_t h;

	memcpy(&h, (const char *)(p - sizeof(h)), sizeof(h));
	return h;
}

static unsigned char *read_in_chunks(int fd, size_t size)
{
	/* Bug 1: a buffer the size of the input. */
	unsigned char *buf = malloc(size ? size : 1);
	unsigned char chunk[CHUNK];
	size_t off = 0;
	ssize_t n;

	if (!buf) {
		perror("malloc");
		exit(1);
	}
	/* glibc's header before an mmapped chunk holds the mapping's size
	 * (flag bit 2 marks it mmapped); the mapping starts 16 bytes before. */
	size_t hdr = malloc_header((uintptr_t)buf);
	if (hdr & 2)
		printf("xor_encoder: read_in_chunks buffer mmap %zu bytes at 0x%lx\n", hdr & ~(size_t)7,
		       (unsigned long)(uintptr_t)(buf - 16));
	printf("xor_encoder: read_in_chunks buffer %zu bytes at 0x%lx-0x%lx\n", size, (unsigned long)(uintptr_t)buf,
	       (unsigned long)(uintptr_t)(buf + size));
	while (off < size && (n = read(fd, chunk, CHUNK)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			buf[off + i] = chunk[i] ^ 0xa5;
		process_chunk(buf + off, n);
		off += n;
	}
	return buf;
}

int main(int argc, char **argv)
{
	struct stat st;
	struct rusage ru;
	struct timespec t0, t1;
	int fd;

	clock_gettime(CLOCK_MONOTONIC, &t0);

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: xor_encoder INPUT [OUTPUT]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		perror(argv[1]);
		return 1;
	}
	out_fd = open(argc > 2 ? argv[2] : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out_fd < 0) {
		perror(argc > 2 ? argv[2] : "/dev/null");
		return 1;
	}
	printf("xor_encoder: input %lld bytes\n", (long long)st.st_size);
	read_in_chunks(fd, st.st_size);
	printf("xor_encoder: process_chunk kept %zu chunks (%zu bytes of data)\n", nr_kept, (size_t)st.st_size);
	if (nr_kept)
		printf("xor_encoder: process_chunk chunks at 0x%lx-0x%lx\n", (unsigned long)kept_lo,
		       (unsigned long)kept_hi);
	getrusage(RUSAGE_SELF, &ru);
	printf("xor_encoder: page faults %ld (%ld minor, %ld major)\n", ru.ru_minflt + ru.ru_majflt, ru.ru_minflt,
	       ru.ru_majflt);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* On stderr: timings are not ground truth, the benchmarks read them. */
	fprintf(stderr, "xor_encoder: elapsed %.3f ms\n", (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr, "xor_encoder: cpu %.3f ms\n",
		(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3);
	return 0;
}
