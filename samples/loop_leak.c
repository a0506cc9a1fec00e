/*
 * samples/loop_leak.c: a leak() loop: every
 * iteration malloc()s an int in leak() and drops the pointer.
 *
 * usage: loop_leak [ITERATIONS [DELAY_MS [START_MS]]]   (default 100, no delay)
 * START_MS: a pause before the first allocation, as a service starting up;
 * "stdin": until a line (or the end) comes on standard input, so that a
 * test can hold the loop until its tracer is ready, however long that takes.
 * Prints: ITERATIONS allocations of 4 bytes from leak(), ITERATIONS*4 bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int *volatile sink;

void leak(int iterations, int delay_ms)
{
	struct timespec ts = { delay_ms / 1000, (delay_ms % 1000) * 1000000L };

	for (int i = 0; i < iterations; i++) {
		int *ptr = malloc(sizeof(int));

		if (!ptr)
			exit(1);
		*ptr = i;
		sink = ptr; /* the only copy, overwritten next time round */
		if (delay_ms)
			nanosleep(&ts, NULL);
	}
}

void someFunc(int iterations, int delay_ms)
{
	leak(iterations, delay_ms);
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 100;
	int delay_ms = argc > 2 ? atoi(argv[2]) : 0;
	int on_stdin = argc > 3 && !strcmp(argv[3], "stdin");
	int start_ms = argc > 3 && !on_stdin ? atoi(argv[3]) : 0;
	struct timespec start = { start_ms / 1000, (start_ms % 1000) * 1000000L };
	char c = 0;

	if (start_ms)
		nanosleep(&start, NULL);
	/* read(), not stdio: a buffer of stdio's would be an allocation. */
	while (on_stdin && c != '\n' && read(0, &c, 1) == 1)
		;

	someFunc(iterations, delay_ms);
	printf("loop_leak: %d allocations of %zu bytes from leak(), %zu bytes leaked\n", iterations, sizeof(int),
	       iterations * sizeof(int));
	return 0;
}
