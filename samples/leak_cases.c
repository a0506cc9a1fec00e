/*
 * samples/leak_cases.c: the leak checker's hard cases, one per mode, each
 * with the answer valgrind's memcheck gives.
 *
 * Usage: leak_cases MODE [N]
 *
 *   tails N     N blocks of 4321 to 4328 bytes (1 to 8 past a multiple of
 *               16) dropped, each before a freed chunk glibc keeps in a
 *               bin, the last before the top chunk: definitely lost
 *   random N    N blocks of random sizes, all dropped: definitely lost
 *   thread      a block whose only pointer was on a thread's stack, the
 *               thread joined: definitely lost
 *   rodata N    N blocks pointed to only from a page made read-only:
 *               still reachable
 *   interior    a block pointed to only in its middle: possibly lost
 *   tree        a lost root holding 4 children, each holding 2: one
 *               definitely lost, 12 indirectly lost, charged to it
 *   merged N    N blocks pointed to from the program's own mapping, which
 *               the kernel may merge with a big block's: still reachable
 *   cycle       two blocks pointing to each other, nothing else to them:
 *               one definitely lost, the other indirectly, charged to it
 *   realloc     a block grown by realloc and kept (still reachable), one
 *               grown and dropped (definitely lost)
 *   mainexit    main calls pthread_exit at once; a thread it started
 *               goes on to allocate 150 blocks, keeps 100 (still
 *               reachable) and drops 50 (definitely lost), and its end
 *               is the process's
 *   heldwait    a thread blocked in a system call at exit holds a block
 *               of 5000 bytes on its stack: still reachable
 *   heldreg     a thread spinning at exit holds a block of 4 bytes in a
 *               register only: still reachable
 *   zerosize    blocks of no bytes, each right after a malloc that failed:
 *               malloc(0) kept (still reachable), calloc(0, 1),
 *               reallocarray(NULL, 0, 5) and realloc(NULL, 0) dropped
 *               (definitely lost, 0 bytes in 3 blocks)
 *   rotable     a 4 KiB table from memalign, in the brk heap, holding 8
 *               blocks of 777 bytes, made read-only, pointed to by a
 *               global: still reachable, the table and the 8
 *
 * Prints the truth with write(2), so that stdio allocates nothing: one
 * line per kind, "leak_cases: KIND B bytes in N blocks".
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void say(const char *kind, unsigned long bytes, unsigned long blocks)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "leak_cases: %s %lu bytes in %lu blocks\n", kind, bytes, blocks);

	if (write(1, line, (size_t)n) != n)
		exit(1);
}

/* Keeps a pointer where no scan can see it once it is gone: the value
 * passes through this opaque call, so the compiler keeps no copy. */
__attribute__((noinline)) static void *opaque(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

/* Globals with external linkage: the compiler keeps every store to them. */
void *guards[4096];

static void tails(long n)
{
	unsigned long bytes = 0;
	void *spare[4096];

	for (long i = 0; i < n && i < 4096; i++) {
		size_t sz = 4321 + (size_t)(i % 8);
		void *p = opaque(malloc(sz));

		memset(p, 0, sz);
		bytes += sz;
		/* A chunk freed after it goes to a bin, not back to the top:
		 * a kept guard follows it. */
		spare[i] = malloc(600);
		guards[i] = malloc(24);
	}
	for (long i = 0; i < n && i < 4096; i++)
		free(spare[i]);
	/* The last one sits before the top chunk. */
	bytes += 4321;
	memset(opaque(malloc(4321)), 0, 4321);
	say("definitely lost", bytes, (unsigned long)n + 1);
	say("still reachable", 24ul * (unsigned long)n, (unsigned long)n);
}

static void random_sizes(long n)
{
	unsigned long bytes = 0;
	unsigned seed = 12345;

	for (long i = 0; i < n; i++) {
		size_t sz;

		seed = seed * 1103515245u + 12345u;
		sz = 1 + (seed >> 8) % 5000;
		memset(opaque(malloc(sz)), 0x11, sz);
		bytes += sz;
	}
	say("definitely lost", bytes, (unsigned long)n);
}

static void *thread_main(void *arg)
{
	void *volatile p = malloc(777);

	(void)arg;
	memset(p, 0, 777);
	return NULL;
}

static void thread_case(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, thread_main, NULL) || pthread_join(t, NULL))
		exit(1);
	say("definitely lost", 777, 1);
}

static void rodata(long n)
{
	void **page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (page == MAP_FAILED || n > 512)
		exit(1);
	for (long i = 0; i < n; i++)
		page[i] = malloc(1000);
	mprotect(page, 4096, PROT_READ);
	say("still reachable", 1000ul * (unsigned long)n, (unsigned long)n);
}

char *middle;

static void interior(void)
{
	char *p = malloc(256);

	/* Nothing in it looks like a length or a count. */
	memset(p, 0xab, 256);
	middle = p + 40;
	say("possibly lost", 256, 1);
}

static void tree(void)
{
	void **root = malloc(48);

	memset(root, 0, 48);
	for (int i = 0; i < 4; i++) {
		void **kid = malloc(64);

		memset(kid, 0, 64);
		kid[0] = malloc(32);
		kid[1] = malloc(32);
		root[i] = kid;
	}
	opaque(root);
	say("definitely lost", 48, 1);
	say("indirectly lost", 4 * 64 + 8 * 32, 12);
}

void *big;

static void merged(long n)
{
	/* The program's own mapping, then a block big enough for glibc to
	 * map on its own: the kernel places them side by side. */
	void **mine = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mine == MAP_FAILED || n > 8192)
		exit(1);
	big = malloc(300000);
	memset(big, 0, 300000);
	for (long i = 0; i < n; i++)
		mine[i] = malloc(100);
	say("still reachable", 300000 + 100ul * (unsigned long)n, (unsigned long)n + 1);
}

static void cycle(void)
{
	void **a = malloc(40), **b = malloc(40);

	memset(a, 0, 40);
	memset(b, 0, 40);
	a[0] = b;
	b[0] = a;
	opaque(a);
	say("definitely lost", 40, 1);
	say("indirectly lost", 40, 1);
}

void *grown;

static void realloc_case(void)
{
	char *p = malloc(100), *q = malloc(10);

	memset(p, 0, 100);
	grown = realloc(p, 5000);
	memset(opaque(realloc(q, 20000)), 0, 20000);
	say("definitely lost", 20000, 1);
	say("still reachable", 5000, 1);
}

/* Zero the stack below the caller's frame: no copy of a dropped pointer
 * left there by the frames it called, for any checker to find. */
__attribute__((noinline)) static void scrub_stack(void)
{
	char area[65536];

	memset(area, 0, sizeof(area));
	opaque(area);
}

static void *volatile kept_by_worker[100];

static void *late_worker(void *arg)
{
	(void)arg;
	/* Well after main has gone. */
	usleep(100 * 1000);
	for (int i = 0; i < 150; i++) {
		void *p = opaque(malloc(100));

		memset(p, 0, 100);
		if (i < 100)
			kept_by_worker[i] = p;
	}
	/* The thread's end runs on the stack below: a copy of the last
	 * block there, from malloc's or memset's frames, would hold it. */
	scrub_stack();
	say("definitely lost", 50 * 100, 50);
	say("still reachable", 100 * 100, 100);
	return NULL;
}

static void mainexit(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, late_worker, NULL))
		exit(1);
	pthread_exit(NULL);
}

static volatile int worker_ready;
static int hold_pipe[2];

static void *wait_worker(void *arg)
{
	void *volatile p = malloc(5000);
	char c;

	(void)arg;
	memset(p, 0, 5000);
	scrub_stack();
	worker_ready = 1;
	/* Never written: blocked here when the process exits. */
	if (read(hold_pipe[0], &c, 1) < 0)
		exit(1);
	return p;
}

/* A key no block's address can be: the stack keeps the pointer XORed with
 * it, and only the register the loop spins in holds the pointer itself. */
#define HIDE_KEY 0x5a5a5a5a5a5a5a5aull

static void *spin_worker(void *arg)
{
	uint64_t v = (uint64_t)opaque(malloc(4)) ^ HIDE_KEY;

	(void)arg;
	scrub_stack();
	worker_ready = 1;
	__asm__ volatile("xor %1, %0\n1: pause\njmp 1b" : "+r"(v) : "r"(HIDE_KEY));
	return NULL;
}

/* main returns while the worker runs on, once it holds its block. */
static void held_by_thread(void *(*fn)(void *), unsigned long bytes)
{
	pthread_t t;

	if (pipe(hold_pipe) || pthread_create(&t, NULL, fn, NULL))
		exit(1);
	while (!worker_ready)
		usleep(1000);
	say("still reachable", bytes, 1);
}

void *zero_kept;

static void zerosize(void)
{
	/* Too big for any allocator: each call fails. */
	volatile size_t huge = SIZE_MAX;
	void *volatile p;

	p = malloc(huge);
	zero_kept = malloc(0);
	p = malloc(huge);
	p = calloc(0, 1);
	p = malloc(huge);
	p = reallocarray(NULL, 0, 5);
	p = malloc(huge);
	free(malloc(0));
	p = realloc(NULL, 0);
	p = NULL;
	(void)p;
	say("definitely lost", 0, 3);
	say("still reachable", 0, 1);
}

void **ro_table;

static void rotable(void)
{
	void **t = memalign(4096, 4096);

	if (!t)
		exit(1);
	memset(t, 0, 4096);
	for (int i = 0; i < 8; i++)
		t[i] = malloc(777);
	mprotect(t, 4096, PROT_READ);
	ro_table = t;
	say("still reachable", 4096 + 8 * 777, 9);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 10;

	if (!strcmp(mode, "tails"))
		tails(n);
	else if (!strcmp(mode, "random"))
		random_sizes(n);
	else if (!strcmp(mode, "thread"))
		thread_case();
	else if (!strcmp(mode, "rodata"))
		rodata(n);
	else if (!strcmp(mode, "interior"))
		interior();
	else if (!strcmp(mode, "tree"))
		tree();
	else if (!strcmp(mode, "merged"))
		merged(n);
	else if (!strcmp(mode, "cycle"))
		cycle();
	else if (!strcmp(mode, "realloc"))
		realloc_case();
	else if (!strcmp(mode, "mainexit"))
		mainexit();
	else if (!strcmp(mode, "heldwait"))
		held_by_thread(wait_worker, 5000);
	else if (!strcmp(mode, "heldreg"))
		held_by_thread(spin_worker, 4);
	else if (!strcmp(mode, "rotable"))
		rotable();
	else if (!strcmp(mode, "zerosize"))
		zerosize();
	else {
		fprintf(stderr, "usage: leak_cases tails|random|thread|rodata|interior|tree|merged|cycle|realloc|mainexit|"
				"heldwait|heldreg|rotable|zerosize [N]\n");
		return 2;
	}
	scrub_stack();
	return 0;
}
