/*
 * samples/usdt_alloc.c: a program with an allocator of its own that tells
 * of its allocations through OpenTelemetry's memory-profiling USDT probes
 * (provider otel_memory: alloc(ptr, size, weight), free(ptr)), with no
 * memsight library in it: what an allocator or a runtime does to be seen
 * by any tool that reads the contract.
 *
 * Usage: usdt_alloc N
 *
 * A pool over a static arena hands out N records of 48 bytes from
 * make_record() and frees every other one through pool_free(), then prints
 * the truth: the bytes and blocks left, and the function that made them.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>

/* Raised by the kernel while a uprobe names them: the probes' arguments
 * are evaluated only then. */
__attribute__((used, section(".probes"))) unsigned short otel_memory_alloc_semaphore;
__attribute__((used, section(".probes"))) unsigned short otel_memory_free_semaphore;

#define RECORD_SIZE 48
#define ARENA_RECORDS 65536

static unsigned char arena[ARENA_RECORDS][RECORD_SIZE];
static void *free_list;
static size_t used;

static __attribute__((noinline)) void *pool_alloc(size_t size)
{
	void *p;

	if (size > RECORD_SIZE)
		return NULL;
	if (free_list) {
		p = free_list;
		memcpy(&free_list, p, sizeof(void *));
	} else if (used < ARENA_RECORDS) {
		p = arena[used++];
	} else {
		return NULL;
	}
	if (otel_memory_alloc_semaphore)
		STAP_PROBE3(otel_memory, alloc, p, size, size);
	return p;
}

static __attribute__((noinline)) void pool_free(void *p)
{
	if (!p)
		return;
	if (otel_memory_free_semaphore)
		STAP_PROBE1(otel_memory, free, p);
	memcpy(p, &free_list, sizeof(void *));
	free_list = p;
}

static __attribute__((noinline)) void *make_record(int i)
{
	char *r = pool_alloc(RECORD_SIZE);

	if (r)
		snprintf(r, RECORD_SIZE, "record %d", i);
	return r;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	void **kept;
	size_t left = 0;

	if (n < 1 || n > ARENA_RECORDS) {
		fprintf(stderr, "usage: usdt_alloc N (1 to %d)\n", ARENA_RECORDS);
		return 2;
	}
	kept = calloc((size_t)n, sizeof(*kept));
	if (!kept)
		return 1;
	for (int i = 0; i < n; i++)
		kept[i] = make_record(i);
	for (int i = 0; i < n; i += 2) {
		pool_free(kept[i]);
		kept[i] = NULL;
	}
	for (int i = 0; i < n; i++)
		left += kept[i] != NULL;
	printf("usdt_alloc: pool left %zu bytes in %zu allocations from make_record\n", left * RECORD_SIZE, left);
	free(kept);
	return 0;
}
