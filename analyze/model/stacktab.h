/*
 * analyze/model/stacktab.h: weights summed per distinct stack.
 *
 * Owns the interning of callchains and printing the heaviest ones in the
 * memleak-like form "N unit in M calls from stack" with symbolized frames.
 * A stack is interned as its code path: each frame's object and offset
 * there, looked up in the maps of the moment it is seen, so the same code
 * run by a thousand processes is one path, its frames made and named once.
 * An entry counts one path for one process (or, for a table that merges
 * processes, for one command name). The names come when the replay ends,
 * once for all paths, so that the objects' symbols and debug information
 * load on another thread while the trace is read.
 */
#ifndef MEMSIGHT_STACKTAB_H
#define MEMSIGHT_STACKTAB_H

#include <stdio.h>

#include "../replay/session.h"

/* One code path, shared by the entries that ran it. */
struct stack_code {
	int nr_key;
	const uint64_t *key;	/* session_frames_key's words */
	int nr_frames;
	struct frame *frames;	/* raw, then named (see named) */
	int named;
	const char *top_name;	/* stacktab_name_top's, until named */
	struct stack_code *next; /* same hash bucket */
};

struct stack_entry {
	int pid;		/* -1 in a table that merges processes */
	const char *comm;
	uint64_t count, weight;
	uint64_t by_kind[5];	/* the command's own split of count (memsight faults: by fault kind) */
	int nr_frames;		/* the code path's frames, named once the replay ends */
	struct frame *frames;
	struct stack_code *code;
	struct stack_entry *next; /* same hash bucket */
};

struct stacktab_block;

struct stacktab {
	struct hashmap map;	/* hash -> struct stack_entry * chain */
	struct hashmap codes;	/* hash -> struct stack_code * chain */
	size_t nr, nr_codes;
	int kernel, user;	/* which frames to keep */
	int by_comm;		/* one entry per command name and path, not per process */
	struct session *s;	/* of the stacks not yet named */
	int pending;		/* naming is due when the replay ends */
	struct stacktab_block *blocks; /* where codes and entries live */
	size_t block_left;
};

void stacktab_init(struct stacktab *t, int kernel, int user);
/* The same, for a table whose readers need no pid (folded stacks): the
 * processes of one command name share their entries. */
void stacktab_init_by_comm(struct stacktab *t, int kernel, int user);
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
