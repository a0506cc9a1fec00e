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

/* Twice as wide: bucket i is what 2i and 2i+1 were. */
static void widen(struct timeline *t)
{
	size_t n = (t->n + 1) / 2;

	for (size_t i = 0; i < n; i++) {
		struct timeline_bucket a = t->v[2 * i], b = 2 * i + 1 < t->n ? t->v[2 * i + 1] : (struct timeline_bucket){ 0 };

		t->v[i].faults = a.faults + b.faults;
		t->v[i].brk_bytes = a.brk_bytes + b.brk_bytes;
		t->v[i].heap_max = a.heap_max > b.heap_max ? a.heap_max : b.heap_max;
		t->v[i].heap_end = b.heap_seen ? b.heap_end : a.heap_end;
		t->v[i].heap_seen = a.heap_seen || b.heap_seen;
		t->v[i].rss_max = a.rss_max > b.rss_max ? a.rss_max : b.rss_max;
		t->v[i].rss_end = b.rss_seen ? b.rss_end : a.rss_end;
		t->v[i].rss_seen = a.rss_seen || b.rss_seen;
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

void timeline_heap(struct timeline *t, uint64_t time, uint64_t held)
{
	struct timeline_bucket *b = timeline_at(t, time);

	if (!b->heap_seen || held > b->heap_max)
		b->heap_max = held;
	b->heap_end = held;
	b->heap_seen = 1;
}

void timeline_rss(struct timeline *t, uint64_t time, uint64_t resident)
{
	struct timeline_bucket *b = timeline_at(t, time);

	if (!b->rss_seen || resident > b->rss_max)
		b->rss_max = resident;
	b->rss_end = resident;
	b->rss_seen = 1;
}

void timeline_finish(struct timeline *t)
{
	for (size_t i = 1; i < t->n; i++) {
		struct timeline_bucket *b = &t->v[i];
		uint64_t before = t->v[i - 1].heap_end;

		/* It held, at its start, what the one before ended with. */
		if (!b->heap_seen)
			b->heap_end = before;
		if (before > b->heap_max)
			b->heap_max = before;
		if (!b->rss_seen)
			b->rss_end = t->v[i - 1].rss_end;
		if (t->v[i - 1].rss_end > b->rss_max)
			b->rss_max = t->v[i - 1].rss_end;
	}
}
