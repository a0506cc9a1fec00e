/*
 * analyze/model/stacktab.h: weights summed per distinct stack.
 *
 * Owns the interning of callchains (per process, by their raw addresses, so
 * the per-sample cost is one hash) and printing the heaviest ones in the
 * memleak-like form "N unit in M calls from stack" with symbolized frames.
 * A stack's objects are looked up in the maps of the moment it is first
 * seen; its names only when the replay ends, once for all stacks, so that
 * the objects' symbols and debug information load on another thread while
 * the trace is read.
 */
#ifndef MEMSIGHT_STACKTAB_H
#define MEMSIGHT_STACKTAB_H

#include <stdio.h>

#include "../replay/session.h"

struct stack_entry {
	int pid;
	const char *comm;
	uint64_t count, weight;
	uint64_t by_kind[5];	/* the command's own split of count (memsight faults: by fault kind) */
	int nr_frames;
	struct frame *frames;	/* named when the replay ends (see named) */
	int named;
	const char *top_name;	/* stacktab_name_top's, until named */
	uint64_t hash;
	uint64_t nr_ips;
	uint64_t *ips;
	struct stack_entry *next; /* same hash bucket */
};

struct stacktab {
	struct hashmap map;	/* hash -> struct stack_entry * chain */
	size_t nr;
	int kernel, user;	/* which frames to keep */
	struct session *s;	/* of the stacks not yet named */
	int pending;		/* naming is due when the replay ends */
};

void stacktab_init(struct stacktab *t, int kernel, int user);
void stacktab_release(struct stacktab *t);
/* Count the sample's stack with weight; returns its entry, NULL on
 * out-of-memory. */
struct stack_entry *stacktab_add(struct stacktab *t, struct session *s, const struct sample *smp,
				 uint64_t weight);
/* The same, standing for count events (a sampled one's estimate). */
struct stack_entry *stacktab_add_n(struct stacktab *t, struct session *s, const struct sample *smp, uint64_t count,
				   uint64_t weight);
/* Call the innermost frame name (when it is a function's first byte): a
 * probed function by the name it was probed under, not the first alias
 * the symbol table lists. Applies when the stack is named. */
void stacktab_name_top(struct stack_entry *e, const char *name);
/* Name every stack not yet named (the end of a replay does it). */
void stacktab_name_all(struct stacktab *t);
/* Every entry, heaviest first (most counted first when count_order), in a
 * malloc'd array of *n; NULL on out-of-memory. */
struct stack_entry **stacktab_sorted(struct stacktab *t, int count_order, size_t *n);
/* Print the top n entries by weight (count when by_count). */
void stacktab_print(struct stacktab *t, FILE *f, size_t n, int by_count, const char *unit,
		    const char *indent);

#endif
