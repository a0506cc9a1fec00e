/*
 * record/procs/execmap.h: where each recorded process's code lies, at each
 * moment, for the stack-dump scrub and for choosing the objects a trace
 * carries.
 *
 * Owns, per process, its executable mappings (files, the vDSO, JIT code in
 * anonymous memory) and, for each, the object it maps (an id the caller
 * gives; 0 for none). They come from the /proc snapshots at the start and
 * from the kernel's MMAP2, FORK, COMM (exec) and EXIT records. Every CPU
 * has its own ring, so a sample in one ring may have been taken after a
 * mapping written to another, or before an exec written to another, and
 * the drain loop sees the rings one after another: so it applies the
 * records of every ring up to a common point first, and the mappings are
 * kept by time. An exec or a fork starts a new generation of a process's
 * mappings, from its time; a sample is looked up in the generation of its
 * own time. Superseded generations and exited processes are freed some
 * seconds later, by the times of the records applied.
 *
 * A lookup costs a few instructions and no branch for most words: a
 * filter of 8192 bits per generation, one for each 2 MiB granule that
 * holds code (hashed), answers "not code" for nearly every word that is
 * not; the rest are looked up among the mappings. The kernel reports no
 * munmap: a mapping stays until a new one overlaps it. Used by one thread
 * only. Knows nothing of perf samples or stack dumps.
 */
#ifndef MEMSIGHT_RECORD_EXECMAP_H
#define MEMSIGHT_RECORD_EXECMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum execmap_op {
	EXECMAP_MAP,	/* pid maps [start, end) executable, of object obj */
	EXECMAP_FORK,	/* pid is a new process, a copy of other */
	EXECMAP_EXEC,	/* pid runs a new program: its mappings are gone */
	EXECMAP_EXIT,	/* pid exited */
};

struct execmap_entry {
	uint32_t op;
	pid_t pid, other;
	uint32_t obj;
	uint64_t start, end;
	uint64_t time;		/* the record's time; 0 for what was there before recording */
};

#define EXECMAP_GRANULE_SHIFT 21
#define EXECMAP_FILTER_BITS 8192
/* The filter's bit for the granule of addr: the top bits of a 32-bit
 * multiplicative hash of its number (below 2^32 for any user address),
 * which vector code computes four at a time. */
#define EXECMAP_FILTER_MUL 0x9e3779b1u
#define EXECMAP_FILTER_SHIFT 19 /* 32 - log2(EXECMAP_FILTER_BITS) */

struct em_range {
	uint64_t start, end;
	uint32_t obj;
};

/* A process's mappings from one exec (or fork) on. */
struct em_gen {
	uint64_t since;		/* the time it began */
	struct em_range *r;	/* sorted by start, disjoint */
	size_t nr, alloc;
	size_t hint;		/* the mapping found last */
	int all;		/* a mapping too big for the filter: every word is looked up */
	uint64_t stamp;		/* changed whenever its mappings do: unique over the map */
	struct em_gen *older;
	uint64_t filter[EXECMAP_FILTER_BITS / 64];
};

struct em_proc {
	pid_t pid;
	struct em_gen *gen;	/* the newest */
	uint64_t exited;	/* its exit time, 0 while it runs */
};

struct execmap {
	struct em_proc **slots;	/* open addressing by pid */
	size_t alloc, nr;
	struct em_proc *last;
	struct em_proc **exited; /* in the order they exited, freed some seconds later */
	size_t nr_exited, alloc_exited;
	uint64_t now;		/* the latest time applied */
	uint64_t stamps;	/* the last stamp given */
	uint8_t *touched;	/* by object id: a kept word or a sampled ip pointed into it */
	size_t alloc_touched;
	uint32_t nr_touched;	/* objects touched so far */
};

void execmap_init(struct execmap *m);
void execmap_release(struct execmap *m);

/* Apply one change. */
void execmap_apply(struct execmap *m, const struct execmap_entry *e);
/* The mappings process pid had at time, or NULL when nothing is known of
 * it. */
struct em_gen *execmap_at(struct execmap *m, pid_t pid, uint64_t time);
/* Mark object obj as touched by a stack. */
void execmap_touch(struct execmap *m, uint32_t obj);
/* Whether object obj was touched. */
int execmap_touched(const struct execmap *m, uint32_t obj);

static inline unsigned execmap_filter_bit(uint64_t addr)
{
	return (uint32_t)((uint32_t)(addr >> EXECMAP_GRANULE_SHIFT) * EXECMAP_FILTER_MUL) >> EXECMAP_FILTER_SHIFT;
}

/* Whether addr may lie in code of g: 0 means it does not. */
static inline uint64_t execmap_maybe(const struct em_gen *g, uint64_t addr)
{
	unsigned bit = execmap_filter_bit(addr);

	return (g->filter[bit / 64] >> (bit % 64) & 1) | (uint64_t)g->all;
}

/* The object id of the executable mapping of g holding addr: 0 for JIT
 * code and other anonymous memory, -1 for none. The mapping found last is
 * tried first: a stack's return addresses lie mostly in one program. */
static inline int64_t execmap_find(struct em_gen *g, uint64_t addr)
{
	size_t lo = 0, hi = g->nr;

	if (g->hint < g->nr && addr - g->r[g->hint].start < g->r[g->hint].end - g->r[g->hint].start)
		return g->r[g->hint].obj;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (addr < g->r[mid].start) {
			hi = mid;
		} else if (addr >= g->r[mid].end) {
			lo = mid + 1;
		} else {
			g->hint = mid;
			return g->r[mid].obj;
		}
	}
	return -1;
}

#endif
