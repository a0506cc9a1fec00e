/*
 * record/sampler/sampler.c: libmemsight-sample.so, byte-sampled allocation
 * profiling cheap enough to leave on.
 *
 * Preloaded (LD_PRELOAD), it wraps glibc's malloc family and decides in
 * the process which allocations a profile sees: a Poisson process over the
 * bytes allocated, one sample every MEMSIGHT_SAMPLE_BYTES bytes on average
 * (default 512 KiB, as jemalloc's prof_sample), so an allocation of s bytes
 * is kept with probability 1 - exp(-s / rate) and the analyzer weighs it by
 * the inverse. Each thread counts down the bytes to its next sample; a
 * call that does not reach it costs a subtraction. Only a kept allocation,
 * and later the free of a kept block, calls a function the recorder puts a
 * uprobe on (memsight_sampled_alloc, memsight_sampled_free): with no
 * recorder attached those are empty calls, once per sample.
 *
 * Kept blocks are remembered in a lock-free table, so free() knows which
 * ones to report; while none is live, free() only reads a counter. No
 * locks, no allocation of its own on the malloc path: it is safe wherever
 * malloc itself is (threads, fork, a handler that interrupts malloc). The
 * library removes itself from LD_PRELOAD at start, so the programs this one
 * executes do not inherit it, unless MEMSIGHT_SAMPLE_INHERIT=1.
 *
 * Knows nothing of the recorder but the two functions' names and
 * arguments (formats/allocfns.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SAMPLE_BYTES_DEFAULT (512u << 10)
/* Live kept blocks it can remember: at the default rate, a heap of tens
 * of GiB. A block that finds no room is not kept (counted in missed). */
#define TABLE_SLOTS (1u << 18)
#define TABLE_PROBES 128
#define SLOT_EMPTY 0
#define SLOT_GONE 1

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* A counting filter in front of the table: how many kept blocks hash to
 * each of its cells. Small enough to stay in the cache, so most frees
 * learn from one load that their block was not kept. */
#define FILTER_CELLS (1u << 13)

static uint16_t filter[FILTER_CELLS];
static uint64_t rate = SAMPLE_BYTES_DEFAULT;
static int rate_read;		/* MEMSIGHT_SAMPLE_BYTES was looked at */
static uintptr_t *table;
static long live;		/* kept blocks not freed yet */
static long missed;		/* kept allocations the table had no room for */

struct thread_state {
	int64_t left;		/* bytes to the next sample */
	uint64_t rng;		/* 0 until the thread's first allocation */
};

static __thread struct thread_state ts __attribute__((tls_model("initial-exec")));

/* The probe points. The recorder's uprobes fire at their first
 * instruction and read the arguments from the registers. */
__attribute__((noinline, used, visibility("default"))) void memsight_sampled_alloc(void *ptr, size_t size, size_t every)
{
	__asm__ volatile("" : : "r"(ptr), "r"(size), "r"(every) : "memory");
}

__attribute__((noinline, used, visibility("default"))) void memsight_sampled_free(void *ptr)
{
	__asm__ volatile("" : : "r"(ptr) : "memory");
}

static uint64_t rng_next(struct thread_state *t)
{
	/* xorshift64*: fast and good enough to space samples. */
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545f4914f6cdd1dull;
}

/* Bytes to the next sample: exponential with mean rate, so that which
 * bytes are sampled is a Poisson process, independent of how they come. */
static int64_t interval(struct thread_state *t)
{
	double u = ((rng_next(t) >> 11) + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
	double v = -log(u) * (double)rate;

	return v < 1 ? 1 : v > 4e18 ? (int64_t)4e18 : (int64_t)v;
}

/* The rate from the environment, once: at the first allocation, which
 * another library's constructor can make before this one's runs. */
static void rate_init(void)
{
	const char *r;

	if (__atomic_load_n(&rate_read, __ATOMIC_ACQUIRE))
		return;
	r = getenv("MEMSIGHT_SAMPLE_BYTES");
	if (r && *r) {
		char *end;
		unsigned long long v = strtoull(r, &end, 10);

		if (!*end && v >= 1)
			rate = v;
	}
	__atomic_store_n(&rate_read, 1, __ATOMIC_RELEASE);
}

static void thread_seed(struct thread_state *t)
{
	struct timespec now;
	uint64_t s;

	rate_init();
	clock_gettime(CLOCK_MONOTONIC, &now);
	s = (uint64_t)now.tv_nsec ^ (uint64_t)now.tv_sec << 32 ^ (uint64_t)(uintptr_t)t ^ (uint64_t)gettid() << 17;
	t->rng = s ? s : 0x9e3779b97f4a7c15ull;
	t->left = interval(t);
}

/* Whether an allocation of size bytes is kept. */
static inline int sample_take(size_t size)
{
	struct thread_state *t = &ts;

	if (__builtin_expect((t->left -= (int64_t)size) > 0, 1))
		return 0;
	if (!t->rng) {
		/* The thread's first allocation: it starts a fresh interval. */
		thread_seed(t);
		if ((t->left -= (int64_t)size) > 0)
			return 0;
	}
	t->left = interval(t);
	return 1;
}

static size_t slot_of(uintptr_t p)
{
	return (size_t)((p >> 4) * 0x9e3779b97f4a7c15ull >> 46) & (TABLE_SLOTS - 1);
}

static size_t cell_of(uintptr_t p)
{
	return (size_t)((p >> 4) * 0xc2b2ae3d27d4eb4full >> 51) & (FILTER_CELLS - 1);
}

static uintptr_t *table_get(void)
{
	uintptr_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
	void *m;

	if (t)
		return t;
	/* Pages are touched only where blocks land. */
	m = mmap(NULL, TABLE_SLOTS * sizeof(uintptr_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	if (!__atomic_compare_exchange_n(&table, &t, (uintptr_t *)m, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		munmap(m, TABLE_SLOTS * sizeof(uintptr_t));
		return t;
	}
	return m;
}

static int table_put(uintptr_t p)
{
	uintptr_t *t = table_get();
	size_t i;

	if (!t)
		return 0;
	i = slot_of(p);
	for (int n = 0; n < TABLE_PROBES; n++, i = (i + 1) & (TABLE_SLOTS - 1)) {
		uintptr_t cur = __atomic_load_n(&t[i], __ATOMIC_RELAXED);

		if ((cur == SLOT_EMPTY || cur == SLOT_GONE) &&
		    __atomic_compare_exchange_n(&t[i], &cur, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_add_fetch(&filter[cell_of(p)], 1, __ATOMIC_RELEASE);
			__atomic_add_fetch(&live, 1, __ATOMIC_RELEASE);
			return 1;
		}
	}
	return 0;
}

/* Whether p was kept; forgets it. */
static int table_take(uintptr_t p)
{
	uintptr_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
	size_t i;

	if (!t || !__atomic_load_n(&filter[cell_of(p)], __ATOMIC_ACQUIRE))
		return 0;
	i = slot_of(p);
	for (int n = 0; n < TABLE_PROBES; n++, i = (i + 1) & (TABLE_SLOTS - 1)) {
		uintptr_t cur = __atomic_load_n(&t[i], __ATOMIC_RELAXED);

		if (cur == SLOT_EMPTY)
			return 0;
		if (cur == p && __atomic_compare_exchange_n(&t[i], &cur, SLOT_GONE, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_sub_fetch(&filter[cell_of(p)], 1, __ATOMIC_RELEASE);
			__atomic_sub_fetch(&live, 1, __ATOMIC_RELEASE);
			return 1;
		}
	}
	return 0;
}

/* Macros, not functions: the probe point's caller must be the wrapper
 * itself, with no inlined helper around the call, so that a stack reads
 * "main;malloc" once the analyzer drops the probe point's own frame. */
#define KEPT(p, size)                                                                          \
	do {                                                                                   \
		if ((p) && sample_take(size)) {                                                \
			if (table_put((uintptr_t)(p)))                                         \
				memsight_sampled_alloc((p), (size), rate);                     \
			else                                                                   \
				__atomic_add_fetch(&missed, 1, __ATOMIC_RELAXED);              \
		}                                                                              \
	} while (0)

#define FORGET(p)                                                                              \
	do {                                                                                   \
		if ((p) && __atomic_load_n(&live, __ATOMIC_ACQUIRE) && table_take((uintptr_t)(p))) \
			memsight_sampled_free(p);                                              \
	} while (0)

void *malloc(size_t size)
{
	void *p = __libc_malloc(size);

	KEPT(p, size);
	return p;
}

void free(void *p)
{
	FORGET(p);
	__libc_free(p);
}

void *calloc(size_t n, size_t size)
{
	void *p = __libc_calloc(n, size);
	size_t total;

	if (__builtin_mul_overflow(n, size, &total))
		total = SIZE_MAX;
	KEPT(p, total);
	return p;
}

void *realloc(void *p, size_t size)
{
	void *q;

	/* The old block ends here as a sample, whatever realloc does; the
	 * new one is a new allocation, sampled by its own size. */
	FORGET(p);
	q = __libc_realloc(p, size);
	if (size)
		KEPT(q, size);
	return q;
}

void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	void *q;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	FORGET(p);
	q = __libc_realloc(p, total);
	if (total)
		KEPT(q, total);
	return q;
}

void *memalign(size_t align, size_t size)
{
	void *p = __libc_memalign(align, size);

	KEPT(p, size);
	return p;
}

void *aligned_alloc(size_t align, size_t size)
{
	void *p = __libc_memalign(align, size);

	KEPT(p, size);
	return p;
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (!align || align % sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	KEPT(p, size);
	*out = p;
	return 0;
}

void *valloc(size_t size)
{
	void *p = __libc_valloc(size);

	KEPT(p, size);
	return p;
}

void *pvalloc(size_t size)
{
	void *p = __libc_pvalloc(size);

	KEPT(p, size);
	return p;
}

/* A child keeps sampling, with its own sequence. */
static void after_fork_child(void)
{
	ts.rng = 0;
	ts.left = 0;
}

/* LD_PRELOAD without this library's entry, in place: what this process
 * executes starts without it. */
static void preload_strip(void)
{
	extern char **environ;

	for (char **e = environ; e && *e; e++) {
		char *v, *w, *tok, *end;

		if (strncmp(*e, "LD_PRELOAD=", 11))
			continue;
		v = w = *e + 11;
		for (tok = v; *tok; tok = end) {
			size_t n;

			while (*tok == ':' || *tok == ' ')
				tok++;
			end = tok + strcspn(tok, ": ");
			n = (size_t)(end - tok);
			if (!n)
				break;
			if (memmem(tok, n, "libmemsight-sample", 18))
				continue;
			if (w != v)
				*w++ = ':';
			memmove(w, tok, n);
			w += n;
		}
		*w = 0;
	}
}

__attribute__((constructor)) static void sampler_init(void)
{
	const char *inherit = getenv("MEMSIGHT_SAMPLE_INHERIT");

	rate_init();
	pthread_atfork(NULL, NULL, after_fork_child);
	if (!inherit || strcmp(inherit, "1"))
		preload_strip();
}
