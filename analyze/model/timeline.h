/*
 * analyze/model/timeline.h: a recording's figures over time, in at most
 * TIMELINE_MAX buckets of one width.
 *
 * Owns putting each moment of a replay in its bucket: buckets start a
 * millisecond wide and double, each pair merged, whenever the recording
 * outgrows them, so a trace of any length keeps at most TIMELINE_MAX of
 * them and reads in one pass. Knows the figures it holds, not where they
 * come from.
 */
#ifndef MEMSIGHT_TIMELINE_H
#define MEMSIGHT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#define TIMELINE_MAX 512

/* A level in a bucket (bytes held): the most it reached, and what it was
 * at the bucket's last change; seen: it changed in the bucket. */
struct timeline_level {
	uint64_t max, end;
	int seen;
};

struct timeline_bucket {
	uint64_t faults;	/* page faults in it */
	uint64_t brk_bytes;	/* heap growth by brk in it */
	struct timeline_level heap; /* what malloc's blocks held */
	struct timeline_level rss;  /* what the recorded processes had resident (rss_stat) */
};

struct timeline {
	uint64_t t0;		/* the first moment, 0 before it */
	uint64_t width;		/* ns a bucket */
	size_t n;		/* buckets in use */
	struct timeline_bucket v[TIMELINE_MAX];
};

void timeline_init(struct timeline *t);
/* The bucket of a moment (times come in order, as a replay gives them). */
struct timeline_bucket *timeline_at(struct timeline *t, uint64_t time);
/* The heap at a moment: held bytes after an allocation or a free. */
void timeline_heap(struct timeline *t, uint64_t time, uint64_t held);
/* Resident memory at a moment: the recorded processes' sum after a change. */
void timeline_rss(struct timeline *t, uint64_t time, uint64_t resident);
/* After the replay: each bucket held, from its start, what the one before
 * it ended with. */
void timeline_finish(struct timeline *t);

#endif
