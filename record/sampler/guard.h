/*
 * record/sampler/guard.h: the guard mode as the wrappers reach it
 * (guard.c says what it does).
 */
#ifndef MEMSIGHT_SAMPLER_GUARD_H
#define MEMSIGHT_SAMPLER_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "../../formats/guard.h"
#include "sampler.h"

struct guard_thread {
	int64_t left;		/* allocations to the next guarded one */
	uint64_t rng;		/* 0 until the thread's first allocation */
	unsigned flip;		/* against the end, or the start */
	int due;		/* guard_take said yes, and the slow path has not taken it */
};

extern SAMPLER_API int guard_on;
/* The first slot's page and the bytes to the last slot's guard: 0 while
 * there is no pool, which no pointer lies in. */
extern SAMPLER_API uintptr_t guard_base, guard_span;
extern SAMPLER_API __thread struct guard_thread guard_ts __attribute__((tls_model("initial-exec")));

/* Reads the environment and makes the pool, at the library's start. */
SAMPLER_API void guard_init(void);
SAMPLER_API int guard_take_due(size_t size);
/* A block of size bytes in a slot (aligned to align, 0 for malloc's);
 * NULL when none is free, or the block is too large. */
SAMPLER_API void *guard_alloc(size_t size, size_t align);
/* Frees a block guard_has names; aborts on a double or invalid free. */
SAMPLER_API void guard_free(void *p);
/* Whether p is a live guarded block, and its size. */
SAMPLER_API int guard_size(const void *p, size_t *size);

/* Whether the allocation being made is to be guarded: a countdown of
 * allocations, only while the mode is on. */
static inline int guard_take(size_t size)
{
	return __builtin_expect(__atomic_load_n(&guard_on, __ATOMIC_RELAXED), 0) && --guard_ts.left <= 0 &&
	       guard_take_due(size);
}

/* Whether the slow path is to guard the allocation it makes: said by
 * the fast path's guard_take, or asked now. */
static inline int guard_chosen(size_t size)
{
	if (guard_ts.due)
		return guard_ts.due = 0, 1;
	return guard_take(size) && !(guard_ts.due = 0);
}

/* Whether p lies in the pool: a free to hand to guard_free. The span is
 * stored after the base. */
static inline int guard_has(const void *p)
{
	uintptr_t span = __atomic_load_n(&guard_span, __ATOMIC_ACQUIRE);

	return (uintptr_t)p - __atomic_load_n(&guard_base, __ATOMIC_RELAXED) < span;
}

#endif
