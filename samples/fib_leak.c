/*
 * samples/fib_leak.c: a fibonacci leak. A thread
 * computes fibonacci numbers; every step calloc()s 1024 long longs (8192
 * bytes) in fibonacci() and never frees them.
 *
 * usage: fib_leak [STEPS [DELAY_MS]]    (default 10 steps, no delay)
 * Prints: the leak it made, exactly: STEPS allocations, STEPS*8192 bytes.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int steps = 10, delay_ms;

long long *fibonacci(long long *n0, long long *n1)
{
	/* Space for an observation, never freed. */
	long long *v = calloc(1024, sizeof(long long));

	if (!v)
		exit(1);
	*v = *n0 + *n1;
	return v;
}

void *child(void *arg)
{
	long long n0 = 0, n1 = 1, *v;
	struct timespec ts = { delay_ms / 1000, (delay_ms % 1000) * 1000000L };

	(void)arg;
	for (int n = 0; n < steps; n++) {
		v = fibonacci(&n0, &n1);
		n0 = n1;
		n1 = *v;
		if (delay_ms)
			nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tid;

	if (argc > 1)
		steps = atoi(argv[1]);
	if (argc > 2)
		delay_ms = atoi(argv[2]);
	pthread_create(&tid, NULL, child, NULL);
	pthread_join(tid, NULL);
	printf("fib_leak: %d allocations of 8192 bytes from fibonacci (calloc), %d bytes leaked\n", steps,
	       steps * 8192);
	return 0;
}
