/*
 * record/sampler/sampler.c: libmemsight-sample.so's core, which
 * allocations a profile sees and how they reach a tracer.
 *
 * The library (this file, wrap.c and exec.c), preloaded (LD_PRELOAD),
 * stands in front of the process's malloc family and decides in the
 * process which allocations a profile sees: a Poisson process over the
 * bytes allocated, one sample every MEMSIGHT_SAMPLE_BYTES bytes on average
 * (default 512 KiB, as jemalloc's prof_sample), so an allocation of s bytes
 * is kept with probability 1 - exp(-s / rate) and stands for s divided by
 * that many bytes. Each thread counts down the bytes to its next sample; a
 * call that does not reach it costs a subtraction. A rate of 0 keeps every
 * allocation: the exact mode `memsight record -e malloc` uses for a command
 * it starts. Only a kept allocation, and later the free of a kept block,
 * reaches a probe site: the USDT probes of OpenTelemetry's memory
 * profiling contract, provider otel_memory, alloc(ptr, size, weight) with
 * weight the bytes the sample stands for, and free(ptr). Each site is a
 * one-byte NOP, which a uprobe emulates where it would single-step the
 * first instruction of a function (0.92 us a hit under perf record here,
 * against 32 us on an empty function's ret), and each probe has a
 * semaphore: with no tracer attached, a site is not even reached. Not the
 * 5-byte NOP Linux 6.18 runs through a trampoline instead of a trap: it
 * was no faster here (0.95 us), and the trampoline's mapping is not
 * inherited by fork, so a child that reaches such a site dies of SIGSEGV.
 *
 * Kept blocks are remembered in a lock-free table while a tracer listens,
 * so free() knows which ones to report; while none is live, free() only
 * reads a counter, and while some are, a cell of the table's filter. With
 * no tracer listening nothing is counted down either: a call costs the
 * wrapper's loads of a semaphore and a flag, or of that counter for
 * free(), and its jump to the allocator. No locks, no allocation of its
 * own on the malloc path: it is safe wherever malloc itself is (threads,
 * fork, a handler that interrupts malloc).
 *
 * Knows nothing of the recorder: any tool that reads the otel_memory
 * probes reads these. While a probe's semaphore is raised, a report goes
 * first to the recorder's stream (stream.c), when the recording gave the
 * process one: the same report, with no trap; the site takes it
 * otherwise.
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

/* The probes' semaphores: the kernel raises them while a uprobe that
 * names them is attached. */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "guard.h"
#include "sampler.h"

SAMPLER_API __attribute__((used, section(".probes"))) unsigned short otel_memory_alloc_semaphore;
__attribute__((used, visibility("hidden"), section(".probes"))) unsigned short otel_memory_free_semaphore;

#define SAMPLE_BYTES_DEFAULT (512u << 10)
/* Live kept blocks it can remember: at the default rate, a heap of tens
 * of GiB. A block that finds no room is not kept (counted in missed).
 * They go to a small table first, and to the big one only when the small
 * one has no room near their slot: the blocks kept at random land on
 * random slots, and the big table's pages would each be first touched,
 * one a block, in the program's own time. */
#define TABLE_SLOTS (1u << 18)
#define TABLE_PROBES 128
#define SMALL_SLOTS (1u << 12)
#define SMALL_PROBES 16
#define SLOT_EMPTY 0
#define SLOT_GONE 1


SAMPLER_API uint16_t sampler_filter[SAMPLER_FILTER_CELLS];
SAMPLER_API uint64_t sampler_rate = SAMPLE_BYTES_DEFAULT;
static int sampler_rate_read;	/* MEMSIGHT_SAMPLE_BYTES was looked at */
SAMPLER_API long sampler_watch;	/* kept blocks not freed yet, and 1 while every allocation is kept */
static int every_watched;	/* that 1 was added */
static uintptr_t *table;
static uintptr_t small_table[SMALL_SLOTS];
static long missed;		/* kept allocations the table had no room for */
/* Started by a recording (MEMSIGHT_SAMPLE_INHERIT=1): reports are made
 * whatever the semaphores say. A program that dash executes after running
 * a command through vfork found its semaphores at 0, and no probes in
 * place, in about 1 run in 7 on Linux 6.18: its reports still reach the
 * recorder's stream. Where no probe is, a site is a NOP. 1 until the
 * environment is read: the wrappers count allocations down only while
 * this or a semaphore is set, and the first countdown reads it. */
SAMPLER_API int sampler_recorded = 1;

SAMPLER_API __thread struct sampler_thread sampler_ts __attribute__((tls_model("initial-exec")));

/* The bytes an allocation of size bytes kept with probability
 * 1 - exp(-size / rate) stands for; itself when every one is kept. */
static uint64_t weight_of(size_t size)
{
	double p;

	if (!sampler_rate || !size)
		return size;
	p = -expm1(-(double)size / (double)sampler_rate);
	return p > 0 ? (uint64_t)((double)size / p + 0.5) : size;
}

static uint64_t rng_next(struct sampler_thread *t)
{
	/* xorshift64*: fast and good enough to space samples. */
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545f4914f6cdd1dull;
}

/* Bytes to the next sample: exponential with mean rate, so that which
 * bytes are sampled is a Poisson process, independent of how they come. */
static int64_t interval(struct sampler_thread *t)
{
	double u = ((rng_next(t) >> 11) + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
	double v = -log(u) * (double)sampler_rate;

	return v < 1 ? 1 : v > 4e18 ? (int64_t)4e18 : (int64_t)v;
}

/* The rate from the environment, once: at the first allocation, which
 * another library's constructor can make before this one's runs. */
static void rate_init(void)
{
	const char *r;

	if (__atomic_load_n(&sampler_rate_read, __ATOMIC_ACQUIRE))
		return;
	r = getenv("MEMSIGHT_SAMPLE_INHERIT");
	sampler_recorded = r && !strcmp(r, "1");
	r = getenv("MEMSIGHT_SAMPLE_BYTES");
	if (r && *r) {
		char *end;
		unsigned long long v = strtoull(r, &end, 10);

		/* 0: every allocation, and so every free is looked at. */
		if (!*end)
			sampler_rate = v;
		if (!*end && !v && !__atomic_exchange_n(&every_watched, 1, __ATOMIC_ACQ_REL))
			__atomic_add_fetch(&sampler_watch, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&sampler_rate_read, 1, __ATOMIC_RELEASE);
}

static void thread_seed(struct sampler_thread *t)
{
	struct timespec now;
	uint64_t s;

	rate_init();
	clock_gettime(CLOCK_MONOTONIC, &now);
	s = (uint64_t)now.tv_nsec ^ (uint64_t)now.tv_sec << 32 ^ (uint64_t)(uintptr_t)t ^ (uint64_t)gettid() << 17;
	t->rng = s ? s : 0x9e3779b97f4a7c15ull;
	t->left = interval(t);
}

int sampler_take_due(size_t size)
{
	struct sampler_thread *t = &sampler_ts;

	/* Other libraries' constructors allocate before this one's runs. */
	rate_init();
	if (!sampler_rate) {
		t->left = 0;
		return 1;
	}
	if (!t->rng) {
		/* The thread's first allocation: it starts a fresh interval. */
		thread_seed(t);
		if ((t->left -= sampler_bytes(size)) > 0)
			return 0;
	}
	t->left = interval(t);
	return 1;
}

static size_t slot_of(uintptr_t p, unsigned slots)
{
	return (size_t)((p >> 4) * 0x9e3779b97f4a7c15ull >> 40) & (slots - 1);
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

/* Put p in the first free slot of t from its own, at most probes on. */
static int slots_put(uintptr_t *t, unsigned slots, int probes, uintptr_t p)
{
	size_t i = slot_of(p, slots);

	for (int n = 0; n < probes; n++, i = (i + 1) & (slots - 1)) {
		uintptr_t cur = __atomic_load_n(&t[i], __ATOMIC_RELAXED);

		if ((cur == SLOT_EMPTY || cur == SLOT_GONE) &&
		    __atomic_compare_exchange_n(&t[i], &cur, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

/* Whether p was in t, at most probes on from its slot; the slot is freed. */
static int slots_take(uintptr_t *t, unsigned slots, int probes, uintptr_t p)
{
	size_t i = slot_of(p, slots);

	for (int n = 0; n < probes; n++, i = (i + 1) & (slots - 1)) {
		uintptr_t cur = __atomic_load_n(&t[i], __ATOMIC_RELAXED);

		if (cur == SLOT_EMPTY)
			return 0;
		if (cur == p && __atomic_compare_exchange_n(&t[i], &cur, SLOT_GONE, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int sampler_pages_make(void *p, size_t n)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start = (uintptr_t)p & ~(page - 1);

	return madvise((void *)start, (uintptr_t)p + n - start, MADV_POPULATE_WRITE) ? -1 : 0;
}

static int table_put(uintptr_t p)
{
	static int small_made;
	uintptr_t *t;

	/* Its blocks land on random slots: its pages are made at once. */
	if (!__atomic_exchange_n(&small_made, 1, __ATOMIC_RELAXED))
		sampler_pages_make(small_table, sizeof(small_table));
	if (!slots_put(small_table, SMALL_SLOTS, SMALL_PROBES, p) &&
	    (!(t = table_get()) || !slots_put(t, TABLE_SLOTS, TABLE_PROBES, p)))
		return 0;
	__atomic_add_fetch(&sampler_filter[sampler_cell_of(p)], 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&sampler_watch, 1, __ATOMIC_RELEASE);
	return 1;
}

/* Whether p was kept; forgets it. */
static int table_take(uintptr_t p)
{
	uintptr_t *t;

	if (!__atomic_load_n(&sampler_filter[sampler_cell_of(p)], __ATOMIC_ACQUIRE))
		return 0;
	if (!slots_take(small_table, SMALL_SLOTS, SMALL_PROBES, p) &&
	    (!(t = __atomic_load_n(&table, __ATOMIC_ACQUIRE)) || !slots_take(t, TABLE_SLOTS, TABLE_PROBES, p)))
		return 0;
	__atomic_sub_fetch(&sampler_filter[sampler_cell_of(p)], 1, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&sampler_watch, 1, __ATOMIC_RELEASE);
	return 1;
}

/* The probes' sites, each in a function of its own: each site is a
 * uprobe event of its own while recorded, and the last close of each
 * waits out a grace period in the kernel, so there are few. The site's
 * function sits between the wrapper the program called and its caller;
 * readers of the probe take the outermost allocation function of the
 * stack's top as where it was allocated.
 *
 * Alloc has a site for each size of stack a recorder needs to copy to
 * unwind it, named by a fourth argument, a constant: the bytes above the
 * site's stack pointer that hold every frame. A recorder that takes
 * stack dumps copies that much at the site rather than its largest dump:
 * the copy is most of what a probe hit costs. The site without it stands
 * for any depth, and for stacks whose extent is not known. A recording
 * that started the command probes that site alone, and the free site in
 * the same event: its reports come through the stream, and the sites take
 * only what cannot, so one event rather than five waits out its grace
 * periods as it starts and stops. */
#define SITE_SLACK 256	/* the site function's frame, and the wrapper's own */
#define SITE_DEPTH_MAX (64ul << 20) /* farther: a stack memsight does not know */

extern void *__libc_stack_end;

#define SITE_ALLOC_SIZED(fn, bytes)                                                     \
	static __attribute__((noinline)) void fn(void *p, size_t size, uint64_t weight) \
	{                                                                               \
		STAP_PROBE4(otel_memory, alloc, p, size, weight, bytes);                \
		__asm__ volatile("");                                                   \
	}

SITE_ALLOC_SIZED(site_alloc_1k, 1024)
SITE_ALLOC_SIZED(site_alloc_2k, 2048)
SITE_ALLOC_SIZED(site_alloc_4k, 4096)

static __attribute__((noinline)) void site_alloc(void *p, size_t size, uint64_t weight)
{
	STAP_PROBE3(otel_memory, alloc, p, size, weight);
	__asm__ volatile("");
}

static __attribute__((noinline)) void site_free(void *p)
{
	STAP_PROBE1(otel_memory, free, p);
	__asm__ volatile("");
}

/* Where the calling thread's frames above sp end: where the process
 * started, on the main thread's stack; on another thread's, its TLS,
 * which glibc puts above the thread's stack, and of which this library's
 * part is near the top. 0 when sp is in neither (an alternate signal
 * stack, a coroutine's). */
static uintptr_t stack_top(uintptr_t sp)
{
	uintptr_t main_top = (uintptr_t)__libc_stack_end, tls = (uintptr_t)&sampler_ts;

	if (main_top > sp && main_top - sp < SITE_DEPTH_MAX)
		return main_top;
	if (tls > sp && tls - sp < SITE_DEPTH_MAX)
		return tls;
	return 0;
}

static inline void report_alloc(void *p, size_t size, uint64_t weight, uintptr_t top)
{
	size_t d = top ? top - (uintptr_t)__builtin_frame_address(0) : 0;

	if (!d || sampler_inherited())
		site_alloc(p, size, weight);
	else if (d + SITE_SLACK <= 1024)
		site_alloc_1k(p, size, weight);
	else if (d + SITE_SLACK <= 2048)
		site_alloc_2k(p, size, weight);
	else if (d + SITE_SLACK <= 4096)
		site_alloc_4k(p, size, weight);
	else
		site_alloc(p, size, weight);
}

static inline __attribute__((always_inline)) void kept(void *p, size_t size, int sampled)
{
	uintptr_t top;
	uint64_t weight = sampled ? weight_of(size) : 0;

	/* With no one listening, a block is not remembered either: its
	 * allocation was told to no one, and its free would mean nothing. So
	 * frees stay a load and a jump while nothing records. */
	if (!otel_memory_alloc_semaphore && !sampler_recorded)
		return;
	if (sampler_rate && !table_put((uintptr_t)p)) {
		__atomic_add_fetch(&missed, 1, __ATOMIC_RELAXED);
		return;
	}
	top = stack_top((uintptr_t)__builtin_frame_address(0));
	if (!stream_alloc(p, size, weight, top))
		report_alloc(p, size, weight, top);
}

void sampler_kept(void *p, size_t size)
{
	kept(p, size, 1);
}

void sampler_kept_as(void *p, size_t size, int sampled)
{
	kept(p, size, sampled);
}

void sampler_forget(void *p)
{
	if ((!sampler_rate || table_take((uintptr_t)p)) && (otel_memory_free_semaphore || sampler_recorded) &&
	    !stream_free(p, stack_top((uintptr_t)__builtin_frame_address(0))))
		site_free(p);
}

/* A child keeps sampling, with its own sequence. */
static void after_fork_child(void)
{
	sampler_ts.rng = 0;
	sampler_ts.left = 0;
}

__attribute__((constructor)) static void sampler_init(void)
{
	rate_init();
	guard_init();
	pthread_atfork(NULL, NULL, after_fork_child);
}
