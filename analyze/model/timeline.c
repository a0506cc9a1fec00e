/*
 * analyze/model/timeline.c: a recording's figures over time; see timeline.h.
 */
#include "timeline.h"

#include <string.h>

void timeline_init(struct timeline *t)
{
	memset(t, 0, sizeof(*t));
	t->width = 1000000;
}

/* One level of two buckets made one. */
static struct timeline_level level_merge(struct timeline_level a, struct timeline_level b)
{
	return (struct timeline_level){ a.max > b.max ? a.max : b.max, b.seen ? b.end : a.end, a.seen || b.seen };
}

/* Twice as wide: bucket i is what 2i and 2i+1 were. */
static void widen(struct timeline *t)
{
	size_t n = (t->n + 1) / 2;

	for (size_t i = 0; i < n; i++) {
		struct timeline_bucket a = t->v[2 * i], b = 2 * i + 1 < t->n ? t->v[2 * i + 1] : (struct timeline_bucket){ 0 };

		t->v[i].faults = a.faults + b.faults;
		t->v[i].brk_bytes = a.brk_bytes + b.brk_bytes;
		t->v[i].heap = level_merge(a.heap, b.heap);
		t->v[i].rss = level_merge(a.rss, b.rss);
	}
	memset(t->v + n, 0, (TIMELINE_MAX - n) * sizeof(t->v[0]));
	t->n = n;
	t->width *= 2;
}

struct timeline_bucket *timeline_at(struct timeline *t, uint64_t time)
{
	size_t i;

	if (!t->t0)
		t->t0 = time;
	if (time < t->t0)
		time = t->t0;
	while ((time - t->t0) / t->width >= TIMELINE_MAX)
		widen(t);
	i = (size_t)((time - t->t0) / t->width);
	if (i >= t->n)
		t->n = i + 1;
	return &t->v[i];
}

static void level_set(struct timeline_level *l, uint64_t v)
{
	if (!l->seen || v > l->max)
		l->max = v;
	l->end = v;
	l->seen = 1;
}

void timeline_heap(struct timeline *t, uint64_t time, uint64_t held)
{
	level_set(&timeline_at(t, time)->heap, held);
}

void timeline_rss(struct timeline *t, uint64_t time, uint64_t resident)
{
	level_set(&timeline_at(t, time)->rss, resident);
}

/* A bucket the level did not change in held, from its start, what the
 * one before it ended with. */
static void level_carry(struct timeline_level *l, const struct timeline_level *before)
{
	if (!l->seen)
		l->end = before->end;
	if (before->end > l->max)
		l->max = before->end;
}

void timeline_finish(struct timeline *t)
{
	for (size_t i = 1; i < t->n; i++) {
		level_carry(&t->v[i].heap, &t->v[i - 1].heap);
		level_carry(&t->v[i].rss, &t->v[i - 1].rss);
	}
}
