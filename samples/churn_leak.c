/*
 * samples/churn_leak.c: a leak hidden in heavy churn, for sampled
 * allocation profiling: most calls are freed at once, a few are kept.
 *
 * usage: churn_leak [LEAK_MIB [CHURN_MIB [THREADS [WAIT_MS]]]]   (default 64, 256, 2, 0)
 * Sleeps WAIT_MS (attach with -p), then THREADS threads each allocate and
 * free CHURN_MIB MiB in blocks of 16 to 8192 bytes from churn(), while the
 * main thread leaks LEAK_MIB MiB in blocks of 4096 bytes from
 * leak_slowly(). Prints the ground truth, "churn_leak: leaked BYTES bytes in
 * COUNT allocations from leak_slowly (pid PID)" and the churn's totals, then
 * runs a shell that prints the LD_PRELOAD it was given.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static size_t churn_bytes;
static void *volatile sink;

static void *churn(void *arg)
{
	size_t left = *(size_t *)arg, done = 0, calls = 0;
	unsigned x = (unsigned)(uintptr_t)&left;

	while (done < left) {
		size_t n = 16 + (x = x * 1103515245u + 12345u) % 8177;
		char *p = malloc(n);

		p[0] = 1;
		sink = p;
		free(p);
		done += n;
		calls++;
	}
	__atomic_add_fetch(&churn_bytes, done, __ATOMIC_RELAXED);
	return (void *)calls;
}

__attribute__((noinline)) size_t leak_slowly(size_t mib)
{
	size_t n = mib << 8;

	for (size_t i = 0; i < n; i++) {
		char *p = malloc(4096);

		p[0] = 1;
		sink = p;
	}
	return n;
}

int main(int argc, char **argv)
{
	size_t leak = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;
	size_t churn_mib = argc > 2 ? strtoul(argv[2], NULL, 0) : 256;
	int threads = argc > 3 ? atoi(argv[3]) : 2;
	long wait = argc > 4 ? strtol(argv[4], NULL, 0) : 0;
	struct timespec ts = { wait / 1000, (wait % 1000) * 1000000L };
	size_t each = churn_mib << 20, calls = 0, n;
	pthread_t t[64];

	printf("churn_leak: pid %d\n", (int)getpid());
	fflush(stdout);
	if (wait > 0)
		nanosleep(&ts, NULL);
	if (threads > 64)
		threads = 64;
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, churn, &each);
	n = leak_slowly(leak);
	for (int i = 0; i < threads; i++) {
		void *c;

		pthread_join(t[i], &c);
		calls += (size_t)c;
	}
	printf("churn_leak: leaked %zu bytes in %zu allocations from leak_slowly (pid %d)\n", n * 4096, n,
	       (int)getpid());
	printf("churn_leak: churn allocated and freed %zu bytes in %zu calls\n", churn_bytes, calls);
	fflush(stdout);
	return system("echo \"churn_leak: a child shell sees LD_PRELOAD=[$LD_PRELOAD]\"") ? 1 : 0;
}
