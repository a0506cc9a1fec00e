/*
 * record/sampler/sampler.h: what the parts of libmemsight-sample.so share.
 *
 * sampler.c decides which allocations a profile sees and reports them at
 * its probe sites; wrap.c stands in for the allocation functions a
 * program calls and hands each call to the allocator the process runs;
 * exec.c keeps the library in the programs a recorded process executes;
 * stream.c hands reports to a recorder without a trap, and wraps the
 * functions that map code, to know when the recorder's code filter lags;
 * guard.c serves a sampled share of blocks between inaccessible pages.
 * Nothing here is exported from the library.
 */
#ifndef MEMSIGHT_SAMPLER_H
#define MEMSIGHT_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#define SAMPLER_API __attribute__((visibility("hidden")))

struct sampler_thread {
	int64_t left;		/* bytes to the next sample */
	uint64_t rng;		/* 0 until the thread's first allocation */
};

extern SAMPLER_API uint64_t sampler_rate; /* mean bytes between samples; 0: every allocation */
/* A recording started the process: it reports whatever its semaphores
 * say. Set until the environment is read. */
extern SAMPLER_API int sampler_recorded;
/* Raised by the kernel while a uprobe on the alloc probe is attached. */
extern SAMPLER_API unsigned short otel_memory_alloc_semaphore;
/* Whether a free must be looked at: the kept blocks not freed yet, and 1
 * while every allocation is kept (sampler_rate 0). */
extern SAMPLER_API long sampler_watch;
extern SAMPLER_API __thread struct sampler_thread sampler_ts __attribute__((tls_model("initial-exec")));

/* A counting filter in front of the table of kept blocks: how many hash
 * to each of its cells. Small enough to stay in the cache, so most frees
 * learn from one load, in the wrapper itself, that their block was not
 * kept. */
#define SAMPLER_FILTER_CELLS (1u << 13)
extern SAMPLER_API uint16_t sampler_filter[SAMPLER_FILTER_CELLS];

static inline size_t sampler_cell_of(uintptr_t p)
{
	return (size_t)((p >> 4) * 0xc2b2ae3d27d4eb4full >> 51) & (SAMPLER_FILTER_CELLS - 1);
}

/* Whether a free of p needs its slow path: p may be a kept block, or
 * every free is reported (sampler_rate 0). */
static inline int sampler_free_watched(const void *p)
{
	return p && __atomic_load_n(&sampler_watch, __ATOMIC_ACQUIRE) &&
	       (!sampler_rate || __atomic_load_n(&sampler_filter[sampler_cell_of((uintptr_t)p)], __ATOMIC_ACQUIRE));
}

/* The slow path of sampler_take: the countdown ran out, the thread has
 * not allocated yet (its countdown starts at 0), or every allocation is
 * kept (the countdown stays at 0). */
SAMPLER_API int sampler_take_due(size_t size);
/* A kept allocation of size bytes at p: remembered, and reported, while a
 * tracer listens. Out of line, so that its report has the wrapper's frame
 * under it. */
SAMPLER_API void sampler_kept(void *p, size_t size);
/* The same for a block the profile did not choose (sampled 0) but the
 * guard did: reported as standing for no bytes, so that a profile's
 * estimates stay as they were, and its free and its stack are known. */
SAMPLER_API void sampler_kept_as(void *p, size_t size, int sampled);
/* p is about to be freed: reported if it was kept. */
SAMPLER_API void sampler_forget(void *p);

/* Make the pages of [p, p + n) now, in one call, where each first touch
 * in the program's own time would take a fault of its own (15 us here, in
 * a VM; one call makes sixteen for less than two). 0, or -1 where the
 * kernel cannot (before Linux 5.14): the touches then fault as before. */
SAMPLER_API int sampler_pages_make(void *p, size_t n);

/* A size as the countdown takes it: one past INT64_MAX (malloc(-1), which
 * fails) would count it up, and the calls after it, a malloc(0) among
 * them, would go unseen. */
static inline int64_t sampler_bytes(size_t size)
{
	return size > INT64_MAX ? INT64_MAX : (int64_t)size;
}

/* Whether an allocation of size bytes is kept: on most calls, a
 * subtraction. Decided before the call it wraps, so that a call not kept
 * is a jump to the allocator, with no frame of the wrapper's. */
static inline int sampler_take(size_t size)
{
	if (__builtin_expect((sampler_ts.left -= sampler_bytes(size)) > 0, 1))
		return 0;
	return sampler_take_due(size);
}

/* A wrapper's allocation returned p, of size bytes. */
#define SAMPLER_SEEN(p, size)                                \
	do {                                                 \
		if ((p) && sampler_take(size))               \
			sampler_kept((p), (size));           \
	} while (0)

/* A wrapper is about to free p: only while kept blocks are live, or when
 * every allocation is kept, does it look. */
#define SAMPLER_GONE(p)                                \
	do {                                           \
		if (sampler_free_watched(p))           \
			sampler_forget(p);             \
	} while (0)

/* slow.c: the slow paths of wrap.c's malloc, free, calloc and realloc,
 * each given the allocator's function it completes. malloc and calloc
 * are reached with the countdown already taken, realloc with nothing
 * decided, free only for a block sampler_free_watched names. */
struct sampler_slow {
	void *(*malloc)(size_t size, void *(*next)(size_t));
	void (*free)(void *p, void (*next)(void *));
	void *(*calloc)(size_t n, size_t size, void *(*next)(size_t, size_t));
	void *(*realloc)(void *p, size_t size, void *(*next)(void *, size_t));
};
extern SAMPLER_API const struct sampler_slow sampler_slow;

/* wrap.c: the allocator's malloc, for a slow path that has none at hand. */
SAMPLER_API void *sampler_malloc_next(size_t size);

/* stream.c: a report through the recorder's stream; 0 when there is none
 * for this thread, and the probe site must take it. top: where the
 * thread's frames end, 0 when not known. */
SAMPLER_API int stream_alloc(void *p, size_t size, uint64_t weight, uintptr_t top);
SAMPLER_API int stream_free(void *p, uintptr_t top);

/* Whether a recording preloaded this library into the command it started
 * (MEMSIGHT_SAMPLE_INHERIT=1): it then probes the unsized alloc site
 * alone, the stream carrying the reports. */
SAMPLER_API int sampler_inherited(void);

/* The path of this library as the process loaded it ("" until known), and
 * the environment a recording gave the process, for what it executes. */
SAMPLER_API const char *sampler_self_path(void);
/* The next definition of a function after this library, as the
 * program would have reached it; NULL when there is none. */
SAMPLER_API void *sampler_next(const char *name);

#endif
