/*
 * analyze/model/heapprof.h: the heap over time, from allocations and frees.
 *
 * Owns what the allocation events add up to as the program runs, per
 * process and per allocation stack: calls and bytes allocated, frees,
 * bytes allocated now, the peak and when it was reached, the bytes each
 * stack held at that peak, temporary allocations (as heaptrack counts
 * them: a free of a block of the stack and size of the process's latest
 * allocation, with no free between them), and
 * the allocations by size, each power of two a class. Fed
 * one alloc_event at a time, as allocs replays them in time order. The
 * peak per stack is taken lazily: only the first free after the heap
 * climbed to a new peak copies every stack's bytes, as heaptrack does, so
 * a growing heap costs one copy per climb, not per allocation. Knows
 * nothing of printing. Figures are as recorded: a sampled recording's
 * (-s N) are scaled by the caller.
 */
#ifndef MEMSIGHT_HEAPPROF_H
#define MEMSIGHT_HEAPPROF_H

#include "allocs.h"

struct heap_site {
	struct stack_entry *stack;
	uint64_t cur;		/* bytes allocated from it now */
	uint64_t at_peak;	/* bytes it held at the peak */
	uint64_t temporary;	/* its allocations freed at once */
};

struct heap_proc {
	int pid;
	const char *comm;
	uint64_t calls, bytes, frees, freed_bytes, temporary;
	uint64_t cur, peak, peak_time;
};

/* Size classes: class c holds the sizes above 2^(c-1) and up to 2^c
 * (class 0: 0 and 1 bytes); the last, everything larger. */
#define HEAP_SIZE_CLASSES 48

/* A process's latest allocation, while no free has followed it. */
struct heap_last {
	const void *stack;
	uint64_t size;
	int set;
};

struct heapprof {
	struct hashmap sites;	/* struct stack_entry * -> struct heap_site * */
	uint64_t size_calls[HEAP_SIZE_CLASSES], size_bytes[HEAP_SIZE_CLASSES], size_temporary[HEAP_SIZE_CLASSES];
	/* pid -> struct heap_proc *; a program a process exec'd away from
	 * keeps its row, under pid | n << 32 for the n-th such. */
	struct hashmap procs;
	uint32_t retired;
	struct hashmap last;	/* pid -> struct heap_last */
	uint64_t cur, peak, peak_time;
	int peak_pending;	/* a new peak whose per-stack bytes are not copied yet */
	int was_temporary;	/* the latest event was the free of a temporary allocation */
};

/* The size class of an allocation of size bytes. */
unsigned heapprof_size_class(uint64_t size);
void heapprof_init(struct heapprof *h);
void heapprof_release(struct heapprof *h);
/* One allocation or free of thread tid. Returns 0 or -ENOMEM. */
int heapprof_event(struct heapprof *h, struct session *s, const struct alloc_event *ev);
/* After the last event: the per-stack peak made final. */
void heapprof_finish(struct heapprof *h);
/* An alloc_cb feeding arg, a struct heapprof. */
int heapprof_cb(struct session *s, const struct alloc_event *ev, void *arg);

#endif
