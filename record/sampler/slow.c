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
#include <string.h>

#include "guard.h"
#include "sampler.h"

static __attribute__((noinline, noclone, used)) void *slow_malloc(size_t size, void *(*next)(size_t))
	__asm__("malloc");
static __attribute__((noinline, noclone, used)) void slow_free(void *p, void (*next)(void *)) __asm__("free");
static __attribute__((noinline, noclone, used)) void *slow_calloc(size_t n, size_t size,
								   void *(*next)(size_t, size_t)) __asm__("calloc");
static __attribute__((noinline, noclone, used)) void *slow_realloc(void *p, size_t size,
								    void *(*next)(void *, size_t)) __asm__("realloc");

/* The fast path counted size down already: what is left decides, and
 * the guard's countdown. A guarded block is reported whether the profile
 * chose it or not, standing for no bytes when it did not; from the one
 * call, so that its stack is the one an unguarded block's would be. */
static void *slow_malloc(size_t size, void *(*next)(size_t))
{
	int kept = sampler_ts.left <= 0 && sampler_take_due(size), guarded = guard_chosen(size);
	void *p = guarded ? guard_alloc(size, 0) : NULL;

	if (!p && !kept)
		return next(size);
	if (!p && !(p = next(size)))
		return NULL;
	sampler_kept_as(p, size, kept);
	return p;
}

/* Reached for a block the fast path found watched, or in the guard's
 * pool. */
static void slow_free(void *p, void (*next)(void *))
{
	sampler_forget(p);
	if (guard_has(p))
		guard_free(p);
	else
		next(p);
}

/* The same for calloc's product, SIZE_MAX where it overflows. A slot
 * keeps what its last block held: a guarded block is cleared here. */
static void *slow_calloc(size_t n, size_t size, void *(*next)(size_t, size_t))
{
	size_t total;
	void *p;
	int kept, guarded;

	if (__builtin_mul_overflow(n, size, &total))
		total = SIZE_MAX;
	kept = sampler_ts.left <= 0 && sampler_take_due(total);
	guarded = guard_chosen(total);
	if ((p = guarded ? guard_alloc(total, 0) : NULL))
		memset(p, 0, total);
	if (!p && !kept)
		return next(n, size);
	if (!p && !(p = next(n, size)))
		return NULL;
	sampler_kept_as(p, total, kept);
	return p;
}

/* A guarded block's realloc: a new block (guarded again if the guard's
 * countdown says so) and the old one freed to its slot, which then guards
 * its old address, so that a use through the old pointer faults. NULL,
 * with p left as it was, when no block is to be had. */
static void *guard_move(void *p, size_t size, int guarded)
{
	size_t old = 0;
	void *q = NULL;

	if (!guard_size(p, &old))
		guard_free(p); /* aborts: not a live block */
	if (size && !(guarded && (q = guard_alloc(size, 0))) && !(q = sampler_malloc_next(size)))
		return NULL;
	if (q)
		memcpy(q, p, old < size ? old : size);
	SAMPLER_GONE(p);
	guard_free(p);
	return q;
}

/* Not counted down yet. The old block ends here as a sample, whatever
 * realloc does; the new one is a new allocation, seen by its own size. */
static void *slow_realloc(void *p, size_t size, void *(*next)(void *, size_t))
{
	int kept, guarded;
	void *q = NULL;

	kept = sampler_take(size);
	/* realloc(NULL, n) is malloc(n), and may be guarded as it is. */
	guarded = (!p || guard_has(p)) && size && guard_chosen(size);
	if (guard_has(p)) {
		if (!(q = guard_move(p, size, guarded)))
			return NULL;
	} else {
		SAMPLER_GONE(p);
		if (guarded)
			q = guard_alloc(size, 0);
		/* realloc(p, 0) frees p and gives NULL under glibc; realloc(NULL,
		 * 0) gives a block of no bytes, which is seen as malloc(0) is. */
		if (!q && !kept)
			return next(p, size);
		if (!q && !(q = next(p, size)))
			return NULL;
	}
	if (q && (kept || guard_has(q)))
		sampler_kept_as(q, size, kept);
	return q;
}

const struct sampler_slow sampler_slow = { slow_malloc, slow_free, slow_calloc, slow_realloc };
