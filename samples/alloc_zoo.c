/*
 * samples/alloc_zoo.c: the rest of the malloc family, each mode with an
 * exactly known outcome that it prints as its ground truth:
 *
 *   alloc_zoo churn N      malloc/calloc/realloc/free of varied sizes, N rounds, everything freed
 *   alloc_zoo realloc N    N chains grown by realloc(NULL, 16) then x4 three times; each last block kept
 *   alloc_zoo memalign N   N posix_memalign(64, 1000) and N aligned_alloc(4096, 8192), all kept
 *   alloc_zoo nested N     N each of realloc(NULL), reallocarray(NULL), aligned_alloc, memalign and
 *                          posix_memalign, each from a function of its own, all kept: the entry
 *                          points glibc builds on one another
 *   alloc_zoo peak N       the heap rises to N blocks of 1000 bytes from first_hump(), falls, rises
 *                          to half that from second_hump(), falls: a peak of exactly N * 1000 bytes
 *   alloc_zoo reach N      N blocks kept in a global list from keep_blocks(), N blocks dropped from
 *                          lose_parents(), each holding the only pointer to a block from make_child()
 *   alloc_zoo tz N         local time in a time zone (libc keeps its data), then N strdup()s of a
 *                          formatted time leaked from tz_leak()
 *   alloc_zoo threads T N  T threads, each leaking N blocks of 100 bytes from thread_leak()
 *   alloc_zoo fork N       a child leaks N blocks of 256 bytes from child_leak(); the parent frees all
 *   alloc_zoo wait S N     waits S seconds (attach with -p), then leaks N blocks of 64 bytes from late_leak()
 *   alloc_zoo temporary N  N rounds, each of two temporary allocations as heaptrack counts them (a
 *                          block freed at once; the first of two blocks from one call, freed after
 *                          the second was made) and one that is not (the second)
 *   alloc_zoo grow N       keeps 1 MiB from init_tables() at start-up, then leaks 64 bytes from
 *                          steady_leak() every 10 ms, N times: a small steady leak after a big one-time block
 *   alloc_zoo stacks D     leaks 16 bytes from each of 2^D stacks: go_left() and go_right() D deep,
 *                          by the bits of a counter, then leaf_leak(): a profile of many stacks
 *
 * With ALLOC_ZOO_GATE=PATH in its environment, it says "alloc_zoo: at the
 * gate" and waits until PATH exists before the mode begins, allocating
 * nothing meanwhile: a test can stop the recorder first, whatever the
 * machine's speed.
 *
 * Every line it prints is "alloc_zoo: ..." ground truth; leaks read
 * "leaked BYTES bytes in COUNT allocations from FUNCTION (pid PID)".
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;

static void report(long bytes, long count, const char *fn)
{
	printf("alloc_zoo: leaked %ld bytes in %ld allocations from %s (pid %d)\n", bytes, count, fn, (int)getpid());
	fflush(stdout);
}

static void churn(long n)
{
	void *v[16];

	for (long i = 0; i < n; i++) {
		for (int k = 0; k < 16; k++)
			v[k] = (k & 3) == 1 ? calloc(k + 1, 24) : malloc(16 + 32 * k + (i & 63));
		for (int k = 0; k < 16; k += 4)
			v[k] = realloc(v[k], 200 + 10 * k);
		for (int k = 0; k < 16; k++)
			free(v[k]);
	}
	report(0, 0, "churn");
}

static void *grow_chain(void)
{
	char *p = realloc(NULL, 16); /* realloc(NULL, n) is malloc(n) */

	for (int i = 0; i < 3; i++)
		p = realloc(p, 16 << (2 * (i + 1)));
	return p;
}

static void reallocs(long n)
{
	for (long i = 0; i < n; i++)
		sink = grow_chain();
	report(n * 1024, n, "grow_chain");
}

static void aligned_blocks(long n)
{
	for (long i = 0; i < n; i++) {
		void *p;

		if (posix_memalign(&p, 64, 1000))
			exit(1);
		sink = p;
		sink = aligned_alloc(4096, 8192);
	}
	report(n * (1000 + 8192), 2 * n, "aligned_blocks");
}

/* Each entry point of the family that glibc builds on another one
 * (reallocarray on realloc, realloc(NULL) on malloc, the aligned ones on
 * one function), called n times from functions of its own and kept. */
/* Through a volatile: the compiler turns realloc(NULL, n) into malloc(n). */
static void *volatile null_block;

static void *__attribute__((noinline)) by_realloc_null(size_t n)
{
	return realloc(null_block, n);
}

static void *__attribute__((noinline)) by_reallocarray(size_t n)
{
	return reallocarray(null_block, n, 3);
}

static void *__attribute__((noinline)) by_aligned_alloc(size_t n)
{
	return aligned_alloc(64, n);
}

static void *__attribute__((noinline)) by_memalign(size_t n)
{
	return memalign(64, n);
}

static void *__attribute__((noinline)) by_posix_memalign(size_t n)
{
	void *p;

	return posix_memalign(&p, 64, n) ? NULL : p;
}

static void nested(long n)
{
	static const struct {
		void *(*fn)(size_t);
		const char *name;
		size_t size, bytes;
	} kinds[] = {
		{ by_realloc_null, "by_realloc_null", 100, 100 },	  /* realloc(NULL, 100) */
		{ by_reallocarray, "by_reallocarray", 100, 300 },	  /* reallocarray(NULL, 100, 3) */
		{ by_aligned_alloc, "by_aligned_alloc", 640, 640 },	  /* aligned_alloc(64, 640) */
		{ by_memalign, "by_memalign", 2000, 2000 },		  /* memalign(64, 2000) */
		{ by_posix_memalign, "by_posix_memalign", 1000, 1000 }, /* posix_memalign(&p, 64, 1000) */
	};

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (long i = 0; i < n; i++)
			if (!(sink = kinds[k].fn(kinds[k].size)))
				exit(1);
		report(n * (long)kinds[k].bytes, n, kinds[k].name);
	}
}

/* libc keeps time-zone data for good once a program asks for local time
 * (tzset's strings, the zone file's transitions): not the program's leak.
 * Then a leak of its own, from tz_leak(). */
static void __attribute__((noinline)) tz_leak(long n)
{
	time_t t = 1700000000;
	char buf[64];

	setenv("TZ", "Europe/Berlin", 1);
	for (long i = 0; i < n; i++) {
		strftime(buf, sizeof(buf), "%F %T %Z", localtime(&t));
		sink = strdup(buf);
	}
	report(n * (long)(strlen(buf) + 1), n, "tz_leak");
}

/* The heap rises and falls: first_hump() holds n blocks of 1000 bytes
 * at once, then frees them; second_hump() holds half as many. Nothing is
 * printed until the end, so the peak is the first hump, exactly. */
static void __attribute__((noinline)) first_hump(void **v, long n)
{
	for (long i = 0; i < n; i++)
		v[i] = malloc(1000);
}

static void __attribute__((noinline)) second_hump(void **v, long n)
{
	for (long i = 0; i < n; i++)
		v[i] = malloc(1000);
}

static void humps(long n)
{
	void **v = mmap(NULL, n * sizeof(*v), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (v == MAP_FAILED)
		exit(1);
	first_hump(v, n);
	for (long i = 0; i < n; i++)
		free(v[i]);
	second_hump(v, n / 2);
	for (long i = 0; i < n / 2; i++)
		free(v[i]);
	printf("alloc_zoo: peak %ld bytes in %ld allocations held by first_hump; second_hump held %ld\n", n * 1000, n,
	       n / 2 * 1000);
	report(0, 0, "humps");
}

/* Three kinds of block, as a leak checker tells them at exit: blocks
 * kept in a global list (still reachable), blocks whose only pointer was
 * dropped (definitely lost), and blocks only those point to (indirectly
 * lost). Each kind from a function of its own, with a size of its own. */
struct kept {
	struct kept *next;
	char pad[92];
};

struct parent {
	void *child;
	char pad[192];
};

static struct kept *kept_list;

static void __attribute__((noinline)) keep_blocks(long n)
{
	for (long i = 0; i < n; i++) {
		struct kept *k = malloc(sizeof(*k));

		k->next = kept_list;
		kept_list = k;
	}
}

static void *__attribute__((noinline)) make_child(void)
{
	return malloc(300);
}

static void __attribute__((noinline)) lose_parents(long n)
{
	for (long i = 0; i < n; i++) {
		struct parent *volatile p = malloc(sizeof(*p));

		p->child = make_child();
		p = NULL;
	}
}

/* The dropped pointers must not linger where a scan would find them: in
 * the dead part of the stack a later, deeper frame leaves unwritten. */
static void __attribute__((noinline)) wipe_stack(void)
{
	volatile char buf[65536];

	memset((char *)buf, 0, sizeof(buf));
}

static void reach(long n)
{
	keep_blocks(n);
	lose_parents(n);
	wipe_stack();
	printf("alloc_zoo: still reachable %zu bytes in %ld blocks from keep_blocks\n", n * sizeof(struct kept), n);
	printf("alloc_zoo: definitely lost %zu bytes in %ld blocks from lose_parents\n", n * sizeof(struct parent), n);
	printf("alloc_zoo: indirectly lost %ld bytes in %ld blocks from make_child\n", n * 300, n);
	fflush(stdout);
	wipe_stack();
}

static long per_thread;

static void *thread_leak(void *arg)
{
	(void)arg;
	for (long i = 0; i < per_thread; i++)
		sink = malloc(100);
	return NULL;
}

static void threads(int t, long n)
{
	pthread_t *tid = calloc(t, sizeof(*tid));

	per_thread = n;
	for (int i = 0; i < t; i++)
		pthread_create(&tid[i], NULL, thread_leak, NULL);
	for (int i = 0; i < t; i++)
		pthread_join(tid[i], NULL);
	free(tid);
	report(100L * t * n, (long)t * n, "thread_leak");
}

static void child_leak(long n)
{
	for (long i = 0; i < n; i++)
		sink = malloc(256);
	report(256 * n, n, "child_leak");
}

static void forks(long n)
{
	pid_t pid;
	void **v = calloc(n, sizeof(*v));

	for (long i = 0; i < n; i++)
		v[i] = malloc(256);
	pid = fork();
	if (pid == 0) {
		child_leak(n);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	for (long i = 0; i < n; i++)
		free(v[i]);
	free(v);
	report(0, 0, "parent");
}

static void late_leak(long n)
{
	for (long i = 0; i < n; i++)
		sink = malloc(64);
	report(64 * n, n, "late_leak");
}

__attribute__((noinline)) static void *pair_block(void)
{
	return malloc(64);
}

/* Temporary allocations as heaptrack counts them: a free of a block of
 * the stack and size of the latest allocation, with no free between. A
 * round makes two: a block freed at once, and the first of two blocks
 * from one call freed after the second was made; the second is none. */
static volatile int pair; /* a bound the compiler cannot unroll the loop by: one call site */

static void temporaries(long n)
{
	pair = 2;
	for (long i = 0; i < n; i++) {
		void *v[2];

		sink = malloc(100);
		free(sink);
		for (int k = 0; k < pair; k++)
			v[k] = pair_block();
		free(v[0]);
		free(v[1]);
	}
	printf("alloc_zoo: %ld temporary allocations of %ld from temporaries (pid %d)\n", 2 * n, 3 * n, (int)getpid());
}

/* D calls deep, left or right by the bits of path: one stack a path.
 * The calls after each call keep it from being a tail call (a jump that
 * leaves no frame). */
static volatile long depth_sink;
static void go_right(long path, int d);

__attribute__((noinline)) static void leaf_leak(void)
{
	sink = malloc(16);
}

__attribute__((noinline)) static void go_left(long path, int d)
{
	if (!d)
		leaf_leak();
	else if (path & 1)
		go_right(path >> 1, d - 1);
	else
		go_left(path >> 1, d - 1);
	depth_sink++;
}

__attribute__((noinline)) static void go_right(long path, int d)
{
	if (!d)
		leaf_leak();
	else if (path & 1)
		go_right(path >> 1, d - 1);
	else
		go_left(path >> 1, d - 1);
	depth_sink++;
}

static void many_stacks(int d)
{
	long n = 1L << d;

	for (long path = 0; path < n; path++)
		go_left(path, d);
	printf("alloc_zoo: leaked %ld bytes in %ld allocations from leaf_leak, %ld stacks (pid %d)\n", 16 * n, n, n,
	       (int)getpid());
}

static void *volatile tables; /* volatile: or the compiler drops the unused block */

static void init_tables(void)
{
	tables = malloc(1 << 20);
	memset(tables, 1, 1 << 20);
	report(1 << 20, 1, "init_tables");
}

static void steady_leak(long n)
{
	struct timespec ts = { 0, 10 * 1000000L };

	for (long i = 0; i < n; i++) {
		sink = malloc(64);
		nanosleep(&ts, NULL);
	}
	report(64 * n, n, "steady_leak");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 100;
	struct timespec t0, t1;

	if (getenv("ALLOC_ZOO_GATE")) {
		struct timespec tick = { 0, 10 * 1000 * 1000 };

		printf("alloc_zoo: at the gate\n");
		fflush(stdout);
		while (access(getenv("ALLOC_ZOO_GATE"), F_OK))
			nanosleep(&tick, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);

	if (!strcmp(mode, "churn"))
		churn(n);
	else if (!strcmp(mode, "realloc"))
		reallocs(n);
	else if (!strcmp(mode, "memalign"))
		aligned_blocks(n);
	else if (!strcmp(mode, "nested"))
		nested(n);
	else if (!strcmp(mode, "tz"))
		tz_leak(n);
	else if (!strcmp(mode, "peak"))
		humps(n);
	else if (!strcmp(mode, "reach"))
		reach(n);
	else if (!strcmp(mode, "threads"))
		threads((int)n, argc > 3 ? atol(argv[3]) : 100);
	else if (!strcmp(mode, "fork"))
		forks(n);
	else if (!strcmp(mode, "temporary"))
		temporaries(n);
	else if (!strcmp(mode, "stacks") && n >= 0 && n <= 30)
		many_stacks((int)n);
	else if (!strcmp(mode, "grow")) {
		init_tables();
		steady_leak(n);
	}
	else if (!strcmp(mode, "wait")) {
		struct timespec ts = { n, 0 };

		printf("alloc_zoo: waiting %ld s (pid %d)\n", n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
		late_leak(argc > 3 ? atol(argv[3]) : 100);
	} else {
		fprintf(stderr, "usage: alloc_zoo churn|realloc|memalign|nested|tz|peak|reach|threads|fork|wait|grow|temporary|stacks N [M]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* On stderr: timings are not ground truth, the benchmarks read them. */
	fprintf(stderr, "alloc_zoo: elapsed %.3f ms\n", (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	return 0;
}
