/*
 * analyze/model/kallocs.h: kernel allocations paired with their frees.
 *
 * Owns turning the kmem group's samples into allocations and frees in three
 * address spaces: slab objects (kmalloc and kmem_cache_alloc, freed by
 * kfree or kmem_cache_free: either may free either), pages by pfn
 * (mm_page_alloc of 2^order pages, mm_page_free, mm_page_free_batched),
 * and percpu chunks by pointer. Frees are matched by address whoever makes
 * them (RCU callbacks, kworkers), so a filter by process applies to the
 * allocation. Knows nothing of how results are printed.
 */
#ifndef MEMSIGHT_KALLOCS_H
#define MEMSIGHT_KALLOCS_H

#include "../replay/session.h"
#include "stacktab.h"

enum kalloc_class { KA_SLAB, KA_PAGE, KA_PERCPU, KA_NR };
extern const char *const kalloc_class_names[KA_NR];

struct kalloc_rec {
	uint64_t key, bytes, time;
	struct stack_entry *stack;
	int pid;
	uint8_t cls;
	uint8_t order;		/* pages: 2^order of them */
};

struct kallocs {
	struct stacktab stacks;	/* allocation stacks, kernel and user; weight = bytes */
	struct hashmap live[KA_NR]; /* address or pfn -> struct kalloc_rec * */
	long pid;		/* only allocations made by this process; -1 for all */
	unsigned page_size;
	uint64_t period;	/* kmem/N: 1 when every event was kept */
	uint64_t allocs[KA_NR], alloc_bytes[KA_NR];
	uint64_t frees[KA_NR];	   /* every free seen */
	uint64_t matched[KA_NR];   /* frees of an allocation this replay saw */
	uint64_t unmatched[KA_NR]; /* frees of memory allocated before (or by another process) */
	uint64_t replaced[KA_NR];  /* an address allocated again with no free seen (a lost free) */
	uint64_t failed;	   /* page allocations that found no page */
};

int kallocs_init(struct kallocs *k, struct session *s, long pid);
void kallocs_release(struct kallocs *k);
/* Replay the session; outstanding allocations stay in k->live. Same
 * returns as session_replay(). */
int kallocs_replay(struct kallocs *k, struct session *s, char *err, size_t errlen);
/* The same, one sample of a replay shared with others: 0, or -1 (out of
 * memory). */
int kallocs_sample(struct kallocs *k, struct session *s, struct sample *smp);

#endif
