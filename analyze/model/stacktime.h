/*
 * analyze/model/stacktime.h: what each stack did in each bucket of a
 * timeline.
 *
 * Owns, per key (a stack, or whatever else the caller counts by, such as
 * an allocation's size class): the allocations it made in each bucket
 * (calls and bytes), the blocks it made in one bucket and freed in a later one or
 * never, by the pair of buckets, and the faults it took in each bucket.
 * The blocks a window of whole buckets made and did not free in it, what
 * `leaks --time` reports for that window, are then a sum of cells: made
 * in the window and freed after it or never. A block freed in the bucket
 * that made it counts in no such window, so it is counted only as made.
 * Buckets are a struct timeline's and follow it as it widens. Knows
 * nothing of printing. Also the temporary allocations (as heaptrack
 * counts them) each key made in each bucket.
 */
#ifndef MEMSIGHT_STACKTIME_H
#define MEMSIGHT_STACKTIME_H

#include <stdint.h>

#include "../hashmap.h"
#include "stacktab.h"
#include "timeline.h"

/* The "freed in" of a block held at the end. */
#define STACKTIME_HELD 0x7fffffffu

enum stacktime_kind {
	STACKTIME_MADE,		/* from: the bucket; allocations made in it */
	STACKTIME_LIVE,		/* from: made in, to: freed in (later), or STACKTIME_HELD */
	STACKTIME_FAULTS,	/* from: the bucket; count: faults in it */
	STACKTIME_TEMP,		/* from: the bucket; count: temporary allocations made in it */
};

struct stacktime_cell {
	enum stacktime_kind kind;
	uint32_t from, to;
	uint64_t bytes, count;
};

/* One key's cells. */
struct stacktime_stack {
	const void *key;
	struct hashmap cells;	/* key (kind, from, to) -> struct stacktime_cell * */
	uint64_t made_bytes, made_count, spanning_bytes, held_bytes, faults, temporary;
};

struct stacktime {
	const struct timeline *tl;
	uint64_t width;		/* the timeline's width the cells are in */
	struct hashmap stacks;	/* key -> struct stacktime_stack * */
};

void stacktime_init(struct stacktime *st, const struct timeline *tl);
void stacktime_release(struct stacktime *st);
/* A block of key's (NULL: none, not counted) made at made and freed at
 * freed (0: held at the end), of bytes standing for count allocations.
 * Call it once for each block when it is made (freed 0, end 0) and again
 * when it is freed or the recording ends (end 1). Returns 0 or -ENOMEM. */
int stacktime_block(struct stacktime *st, const void *key, uint64_t made, uint64_t freed, uint64_t bytes,
		    uint64_t count, int end);
/* count faults of key at time. */
int stacktime_faults(struct stacktime *st, const void *key, uint64_t time, uint64_t count);
/* count temporary allocations of key made at time. */
int stacktime_temporary(struct stacktime *st, const void *key, uint64_t time, uint64_t count);
/* Cell c in buckets 2^shift times as wide: its buckets into *from and
 * *to. Returns 0 when it then counts in no window: a block made and freed
 * in what is now one bucket (it stays counted as made). */
int stacktime_cell_shifted(const struct stacktime_cell *c, int shift, uint32_t *from, uint32_t *to);
/* After the replay: the cells in the timeline's final buckets. */
int stacktime_finish(struct stacktime *st);

#endif
