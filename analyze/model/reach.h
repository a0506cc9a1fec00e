/*
 * analyze/model/reach.h: lost, indirectly lost or still reachable.
 *
 * Owns the marking valgrind's memcheck and LeakSanitizer do at exit, on
 * the scan the recorder made of a stopped process (record --leak-check):
 * the words that could point into its heap, and where each was. A word in
 * an outstanding block points from that block; one outside the heap (a
 * global, a stack from its pointer up, a register, the program's own
 * anonymous memory) is a root; the allocator's memory outside its blocks
 * (glibc's chunk headers, free chunks, its arenas' bookkeeping) is not,
 * and a pointer to glibc's next chunk header, which falls inside a block
 * whose size is 1 to 8 past a multiple of 16, is not a pointer to that
 * block. Blocks a chain of pointers to their starts reaches from a root
 * are still reachable; those only a chain with a pointer into a block's
 * middle reaches are possibly lost, unless a heuristic knows that pointer
 * for one C++ keeps (an old std::string's, new[]'s, a second base's). Of the rest, in address order, each
 * block nothing else claimed heads a clique: it is definitely lost and
 * the blocks it reaches are indirectly lost, charged to it (leader), as
 * memcheck reports them. Knows nothing of printing.
 */
#ifndef MEMSIGHT_REACH_H
#define MEMSIGHT_REACH_H

#include "allocs.h"

enum reach_kind {
	REACH_UNKNOWN,		/* no scan of its process */
	REACH_LOST,		/* definitely lost */
	REACH_INDIRECT,		/* indirectly lost: only lost blocks point to it */
	REACH_POSSIBLE,		/* possibly lost: reached only through a pointer into its middle */
	REACH_REACHABLE,	/* still reachable */
	REACH_NR,
};

/* valgrind's --leak-check-heuristics, by its names: each takes a pointer
 * into a block's middle that C++ keeps as a matter of course for one to
 * its start. All on unless turned off (analyze_opts.leak_heuristics_off). */
enum reach_heuristic {
	REACH_HEUR_STDSTRING,
	REACH_HEUR_LENGTH64,
	REACH_HEUR_NEWARRAY,
	REACH_HEUR_MULTIPLEINHERITANCE,
	REACH_HEUR_NR,
};

extern const char *const reach_heuristic_names[REACH_HEUR_NR];
extern const char *const reach_kind_names[REACH_NR];	/* "definitely lost", ... */
extern const char *const reach_kind_keys[REACH_NR];	/* for JSON: "definitely_lost", ... */

struct reach_stats {
	int processes;		/* scanned and classified */
	uint64_t scan_ns, scanned_bytes, pairs;
};

/* Classify the outstanding allocations of a (after allocs_replay) for
 * every process s holds a scan of: each alloc_rec's reach. Returns 0, or
 * -1 with a reason in err. */
int reach_classify(struct session *s, struct allocs *a, struct reach_stats *st, char *err, size_t errlen);

#endif
