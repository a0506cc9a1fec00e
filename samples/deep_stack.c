/*
 * samples/deep_stack.c: growth deep in the stack, past what an 8 KiB stack
 * dump holds, with exactly known depths.
 *
 * Usage: deep_stack varied ROUNDS | threads ROUNDS | uniform ROUNDS
 *
 * descend() recurses with about 200 bytes of stack a frame; at the bottom
 * grow_here() touches a new 64 KiB block (16 page faults). varied: each
 * round grows at depths 10, 20, 30, 40, 50 and 60 in turn, so the shallow
 * stacks reach main while the deep ones run past the dump, through the
 * same frames at the same stack addresses. threads: a thread from
 * worker_a() does a round of varied, ends, and a thread from worker_b()
 * then grows ROUNDS times at depth 60 alone, on the stack the first one
 * left (glibc keeps a thread's stack for the next): the same addresses
 * under other callers. uniform: main grows ROUNDS times at depth 60 and
 * nowhere else, so no stack of an 8 KiB dump reaches main. Prints its
 * truth: each function that grew, the
 * depth and how many blocks. Before any of it, main's thread touches the
 * first 64 KiB of its stack from a frame of its own: otherwise, where the
 * stack was not that deep yet, descend() itself faults its pages in at
 * depths whose stacks are whole, and what joining makes of the deep ones
 * would depend on where the kernel placed the stack.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (64 << 10)

static void *volatile sink;

__attribute__((noinline)) void grow_here(void)
{
	char *p = malloc(BLOCK);

	memset(p, 1, BLOCK);
	sink = p;
}

__attribute__((noinline)) int descend(int depth)
{
	volatile char pad[184];

	pad[0] = (char)depth;
	if (depth == 0) {
		grow_here();
		return pad[0];
	}
	return descend(depth - 1) + pad[0];
}

__attribute__((noinline)) void stack_touch(void)
{
	volatile char pad[64 << 10];

	for (size_t i = 0; i < sizeof(pad); i += 4096)
		pad[sizeof(pad) - 1 - i] = 0;
}

static void varied(int rounds)
{
	for (int r = 0; r < rounds; r++)
		for (int d = 10; d <= 60; d += 10)
			descend(d);
}

static int rounds;

__attribute__((noinline)) void uniform(void)
{
	for (int r = 0; r < rounds; r++)
		descend(60);
}

__attribute__((noinline)) void *worker_a(void *arg)
{
	(void)arg;
	varied(1);
	return NULL;
}

__attribute__((noinline)) void *worker_b(void *arg)
{
	(void)arg;
	for (int r = 0; r < rounds; r++)
		descend(60);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	rounds = argc > 2 ? atoi(argv[2]) : 20;
	stack_touch();
	if (!strcmp(mode, "varied")) {
		varied(rounds);
		printf("deep_stack: grow_here grew %d blocks of %d bytes at depths 10 to 60 from main\n", rounds * 6,
		       BLOCK);
	} else if (!strcmp(mode, "threads")) {
		pthread_t t;

		if (pthread_create(&t, NULL, worker_a, NULL) || pthread_join(t, NULL) ||
		    pthread_create(&t, NULL, worker_b, NULL) || pthread_join(t, NULL))
			return 1;
		printf("deep_stack: grow_here grew 6 blocks from worker_a, %d at depth 60 from worker_b\n", rounds);
	} else if (!strcmp(mode, "uniform")) {
		uniform();
		printf("deep_stack: grow_here grew %d blocks of %d bytes at depth 60 from main\n", rounds, BLOCK);
	} else {
		fprintf(stderr, "usage: deep_stack varied|threads|uniform ROUNDS\n");
		return 2;
	}
	return 0;
}
