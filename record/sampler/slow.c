/*
 * record/sampler/slow.c: the slow paths of the wrappers of malloc, free,
 * calloc and realloc, for calls a profile keeps or a tracer watches.
 *
 * wrap.c's wrappers of these four keep no frame of their own: they jump
 * to the allocator, or here. So a report's frames hold one of these
 * functions under the probe site, and its symbol names it as the function
 * the program called: each is a local symbol, malloc, free, calloc or
 * realloc, apart from the exported ones of wrap.c (this file declares
 * none of the C library's, so the names are free here). A stack shown from
 * the allocation function the program called starts at it, as it would at
 * the wrapper itself.
 */
#include "sampler.h"

static __attribute__((noinline, noclone, used)) void *slow_malloc(size_t size, void *(*next)(size_t))
	__asm__("malloc");
static __attribute__((noinline, noclone, used)) void slow_free(void *p, void (*next)(void *)) __asm__("free");
static __attribute__((noinline, noclone, used)) void *slow_calloc(size_t n, size_t size,
								   void *(*next)(size_t, size_t)) __asm__("calloc");
static __attribute__((noinline, noclone, used)) void *slow_realloc(void *p, size_t size,
								    void *(*next)(void *, size_t)) __asm__("realloc");

/* The fast path counted size down already: what is left decides. */
static void *slow_malloc(size_t size, void *(*next)(size_t))
{
	void *p;

	if (sampler_ts.left > 0 || !sampler_take_due(size))
		return next(size);
	if ((p = next(size)))
		sampler_kept(p, size);
	return p;
}

/* Reached only for a block the fast path found watched. */
static void slow_free(void *p, void (*next)(void *))
{
	sampler_forget(p);
	next(p);
}

/* The same for calloc's product, SIZE_MAX where it overflows. */
static void *slow_calloc(size_t n, size_t size, void *(*next)(size_t, size_t))
{
	size_t total;
	void *p;

	if (__builtin_mul_overflow(n, size, &total))
		total = SIZE_MAX;
	if (sampler_ts.left > 0 || !sampler_take_due(total))
		return next(n, size);
	if ((p = next(n, size)))
		sampler_kept(p, total);
	return p;
}

/* Not counted down yet. The old block ends here as a sample, whatever
 * realloc does; the new one is a new allocation, seen by its own size. */
static void *slow_realloc(void *p, size_t size, void *(*next)(void *, size_t))
{
	void *q;

	SAMPLER_GONE(p);
	/* realloc(p, 0) frees p and gives NULL under glibc; realloc(NULL,
	 * 0) gives a block of no bytes, which is seen as malloc(0) is. */
	if (__builtin_expect(!sampler_take(size), 1))
		return next(p, size);
	if ((q = next(p, size)))
		sampler_kept(q, size);
	return q;
}

const struct sampler_slow sampler_slow = { slow_malloc, slow_free, slow_calloc, slow_realloc };
