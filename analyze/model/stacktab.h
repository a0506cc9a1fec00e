/*
 * analyze/model/stacktab.h: weights summed per distinct stack.
 *
 * Owns the interning of callchains, their order by weight and their
 * frames, named. A stack is interned as its code path: each frame's object and offset
 * there, looked up in the maps of the moment it is seen, so the same code
 * run by a thousand processes is one path. A path points to its frames'
 * sites, each distinct object and offset once, named once: frame-pointer
 * stacks through frameless code carry garbage frames, and make hundreds of
 * thousands of paths over far fewer sites. An entry counts one path for one
 * process (or, for a table that merges processes, for one command name).
 * The names come when the replay ends, once for all sites, so that the
 * objects' symbols and debug information load on another thread while the
 * trace is read.
 */
#ifndef MEMSIGHT_STACKTAB_H
#define MEMSIGHT_STACKTAB_H

#include <stdio.h>

#include "../replay/session.h"

#define STACK_MAX_FRAMES 256

/* A table's index: open addressing over one word a slot, which holds the
 * node's address and 16 bits of its hash, so that a probe meets only the
 * nodes it looks for. Every node starts with its hash. */
struct stack_node {
	uint32_t hash;
};

struct stack_index {
	uint64_t *slot;		/* 0: empty */
	size_t n, nr;		/* slots (a power of two), nodes */
};

/* What naming adds to a site's raw frame: one of these for the frame, and
 * one before it for each function inlined there (see struct frame). */
struct stack_name {
	const char *sym;
	uint64_t off;
	const char *call_file;
	int call_line, inlined;
};

/* One frame's code (session_frames_key's words for it), shared by every
 * path through it; named once, with the functions inlined there. */
struct stack_site {
	struct stack_node node;
	int nr;			/* named frames, 0 until named */
	uint32_t idx;		/* order made, from 0 */
	uint64_t key[FRAME_KEY_WORDS];
	struct stack_name *named;
};

/* One code path, shared by the entries that ran it. */
struct stack_code {
	struct stack_node node;
	int nr;			/* sites */
	const char *top_name;	/* stacktab_name_top's */
	int to_entry;		/* stacktab_trim_to_entry's */
	struct stack_site *sites[]; /* innermost first */
};

struct stack_entry {
	struct stack_node node;
	int pid;		/* by_comm 1: -1; 2: its process when procs is 1 */
	uint32_t seq;		/* order of first use, for ties */
	uint32_t procs;		/* by_comm 2: the processes that ran it */
	const char *comm;
	uint64_t count, weight;
	struct stack_code *code;
	/* then stacktab_set_extra's bytes */
};

/* Sites, codes and entries are carved from blocks, each kind in its own,
 * in the order they are made, and freed together: a system-wide trace
 * makes hundreds of thousands of them, and one malloc and free each cost
 * more than the rest of their bookkeeping. */
struct stacktab_block {
	struct stacktab_block *next;
	size_t used, size;
	_Alignas(16) unsigned char data[];
};

struct stacktab_pool {
	struct stacktab_block *first, *last;
};

/* The (entry, process) pairs a table that counts processes has seen:
 * open addressing over one word a pair, 0 for empty. */
struct stack_pairs {
	uint64_t *slot;
	size_t n, nr;
};

struct stacktab {
	struct stack_index entries, codes, sites;
	int kernel, user;	/* which frames to keep */
	int by_comm;		/* one entry per command name and path, not per
				 * process; 2: counting the processes */
	struct stack_pairs pairs; /* by_comm 2 */
	struct session *s;	/* of the stacks not yet named */
	int pending;		/* naming is due when the replay ends */
	struct stacktab_pool entry_pool, code_pool, site_pool;
	size_t entry_step;	/* an entry with its extra bytes, as carved */
};

/* Every entry, in the order first counted. */
#define stacktab_for_each(t, e) \
	for (struct stacktab_block *e##_b = (t)->entry_pool.first; e##_b; e##_b = e##_b->next) \
		for (unsigned char *e##_p = e##_b->data; e##_p < e##_b->data + e##_b->used; \
		     e##_p += (t)->entry_step) \
			for (struct stack_entry *e = (struct stack_entry *)e##_p; e; e = NULL)

void stacktab_init(struct stacktab *t, int kernel, int user);
/* The same, for a table whose readers need no pid (folded stacks): the
 * processes of one command name share their entries. */
void stacktab_init_by_comm(struct stacktab *t, int kernel, int user);
/* The same, for a table read by people on a trace of a whole box: a
 * path that a thousand processes of one command ran is one entry, which
 * counts them (procs) and keeps the process while it is one. */
void stacktab_init_per_command(struct stacktab *t, int kernel, int user);
/* Who ran e, for a stack's heading: "pid 42 cc1", or "cc1, 97 processes"
 * in a table by command; into buf. */
const char *stack_entry_who(const struct stack_entry *e, char *buf, size_t len);
/* Give each entry size bytes of the command's own, zeroed, before the
 * first is added; stack_entry_extra finds them. */
void stacktab_set_extra(struct stacktab *t, size_t size);
void *stack_entry_extra(const struct stack_entry *e);
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
/* The stack was taken inside an allocator, at a probe of its own: shown
 * from the allocation function the program called, the outermost of the
 * top frames in the allocator's object that is one (malloc, operator
 * new...); whole when none is. */
void stacktab_trim_to_entry(struct stack_entry *e);
/* The entry's frames, innermost first, named once the replay has ended:
 * at most max into out. Returns the number of frames. */
int stack_entry_frames(const struct stack_entry *e, struct frame *out, int max);
/* Entries that print alike in a table by name (the same command name, and
 * the same frame names with no offsets): fn once for each such group, with
 * its first entry and its summed weight; entries of weight 0 are left out.
 * Returns -1 on out-of-memory, else the first non-zero return of fn, or 0. */
int stacktab_by_names(struct stacktab *t, int (*fn)(const struct stack_entry *e, uint64_t weight, void *arg),
		      void *arg);
/* Name every stack not yet named (the end of a replay does it). */
void stacktab_name_all(struct stacktab *t);
/* Every entry, heaviest first (most counted first when count_order), in a
 * malloc'd array of *n; NULL on out-of-memory. */
struct stack_entry **stacktab_sorted(struct stacktab *t, int count_order, size_t *n);

#endif
