/*
 * record/procs/execmap.c: where each recorded process's code lies; see
 * execmap.h.
 */
#include "execmap.h"

#include <stdlib.h>
#include <string.h>

/* A mapping of more granules than this (a JIT's reserved code cache of
 * gigabytes) would fill the filter: the generation then looks up every
 * word that could be an address. */
#define FILTER_MAX_GRANULES 4096
/* What was superseded (a generation, an exited process) is kept this long,
 * by the times of the records applied: the samples taken before it, still
 * in other rings, come later. */
#define KEEP_NS (4ull * 1000000000ull)

void execmap_init(struct execmap *m)
{
	memset(m, 0, sizeof(*m));
}

static void gens_free(struct em_gen *g)
{
	while (g) {
		struct em_gen *older = g->older;

		free(g->r);
		free(g);
		g = older;
	}
}

static void proc_free(struct em_proc *p)
{
	if (!p)
		return;
	gens_free(p->gen);
	free(p);
}

void execmap_release(struct execmap *m)
{
	for (size_t i = 0; i < m->alloc; i++)
		proc_free(m->slots[i]);
	/* Exited processes are still in the slots: only the list goes. */
	free(m->exited);
	free(m->slots);
	free(m->touched);
	memset(m, 0, sizeof(*m));
}

static size_t slot_home(const struct execmap *m, pid_t pid)
{
	return ((uint32_t)pid * 2654435761u) & (m->alloc - 1);
}

static size_t slot_of(const struct execmap *m, pid_t pid)
{
	size_t i = slot_home(m, pid);

	while (m->slots[i] && m->slots[i]->pid != pid)
		i = (i + 1) & (m->alloc - 1);
	return i;
}

static struct em_proc *proc_find(struct execmap *m, pid_t pid)
{
	struct em_proc *p;

	if (m->last && m->last->pid == pid)
		return m->last;
	if (!m->alloc)
		return NULL;
	p = m->slots[slot_of(m, pid)];
	if (p)
		m->last = p;
	return p;
}

struct em_gen *execmap_at(struct execmap *m, pid_t pid, uint64_t time)
{
	struct em_proc *p = proc_find(m, pid);
	struct em_gen *g;

	if (!p)
		return NULL;
	for (g = p->gen; g && g->since > time; g = g->older)
		;
	/* Older than all it knows: the oldest it has is the best guess. */
	if (!g)
		for (g = p->gen; g && g->older; g = g->older)
			;
	return g;
}

static int grow(struct execmap *m)
{
	size_t n = m->alloc ? m->alloc * 2 : 256, oa = m->alloc;
	struct em_proc **old = m->slots, **s = calloc(n, sizeof(*s));

	if (!s)
		return -1;
	m->slots = s;
	m->alloc = n;
	for (size_t i = 0; i < oa; i++)
		if (old[i])
			m->slots[slot_of(m, old[i]->pid)] = old[i];
	free(old);
	return 0;
}

static struct em_proc *proc_get(struct execmap *m, pid_t pid)
{
	struct em_proc *p = proc_find(m, pid);

	if (p)
		return p;
	if ((m->nr + 1) * 2 > m->alloc && grow(m))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	m->slots[slot_of(m, pid)] = p;
	m->nr++;
	return p;
}

/* Take p out of the table (backward-shift deletion keeps the probe
 * sequences of the others whole). */
static void proc_remove(struct execmap *m, struct em_proc *p)
{
	size_t i = slot_of(m, p->pid), j = i;

	if (m->slots[i] != p)
		return;
	m->slots[i] = NULL;
	for (;;) {
		size_t k;

		j = (j + 1) & (m->alloc - 1);
		if (!m->slots[j])
			break;
		k = slot_home(m, m->slots[j]->pid);
		/* Move slots[j] into the hole unless its home lies in (i, j]. */
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			m->slots[i] = m->slots[j];
			m->slots[j] = NULL;
			i = j;
		}
	}
	m->nr--;
	if (m->last == p)
		m->last = NULL;
}

static void filter_add(struct em_gen *g, uint64_t start, uint64_t end)
{
	uint64_t g0 = start >> EXECMAP_GRANULE_SHIFT, g1 = (end - 1) >> EXECMAP_GRANULE_SHIFT;

	if (g1 - g0 >= FILTER_MAX_GRANULES) {
		g->all = 1;
		return;
	}
	for (uint64_t k = g0; k <= g1; k++) {
		unsigned bit = execmap_filter_bit(k << EXECMAP_GRANULE_SHIFT);

		g->filter[bit / 64] |= 1ull << (bit % 64);
	}
}

/* Cut [start, end) out of g's mappings: a new mapping replaces what it
 * overlaps. The filter's bits stay: a granule that no longer holds code
 * only costs a lookup. */
static void ranges_cut(struct em_gen *g, uint64_t start, uint64_t end)
{
	size_t n = 0;

	for (size_t i = 0; i < g->nr; i++) {
		struct em_range *r = &g->r[i];

		if (r->end <= start || r->start >= end)
			continue;
		if (r->start < start && r->end > end) {
			/* The middle goes: the tail becomes a mapping of its own,
			 * right after (the array has room: see range_add). */
			memmove(r + 2, r + 1, (g->nr - i - 1) * sizeof(*r));
			r[1] = (struct em_range){ end, r->end, r->obj };
			r->end = start;
			g->nr++;
			return;
		}
		if (r->start < start)
			r->end = start;
		else if (r->end > end)
			r->start = end;
		else
			r->end = r->start; /* emptied: removed below */
	}
	for (size_t i = 0; i < g->nr; i++)
		if (g->r[i].end > g->r[i].start)
			g->r[n++] = g->r[i];
	g->nr = n;
}

static int range_add(struct em_gen *g, uint64_t start, uint64_t end, uint32_t obj)
{
	size_t lo = 0, hi;

	if (end <= start)
		return 0;
	if (g->nr + 2 > g->alloc) {
		size_t n = g->alloc ? g->alloc * 2 : 16;
		struct em_range *r = realloc(g->r, n * sizeof(*r));

		if (!r)
			return -1;
		g->r = r;
		g->alloc = n;
	}
	ranges_cut(g, start, end);
	hi = g->nr;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->r[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(g->r + lo + 1, g->r + lo, (g->nr - lo) * sizeof(*g->r));
	g->r[lo] = (struct em_range){ start, end, obj };
	g->nr++;
	g->hint = 0;
	filter_add(g, start, end);
	return 0;
}

/* A new generation of p from time since: empty, or a copy of from. It goes
 * where its time puts it among p's generations: the records of several
 * rings come in the order the rings are read. */
static struct em_gen *gen_push(struct em_proc *p, uint64_t since, const struct em_gen *from)
{
	struct em_gen *g = calloc(1, sizeof(*g)), **at;

	if (!g)
		return NULL;
	g->since = since;
	if (from) {
		g->r = malloc((from->nr ? from->nr : 1) * sizeof(*g->r));
		if (!g->r) {
			free(g);
			return NULL;
		}
		if (from->nr)
			memcpy(g->r, from->r, from->nr * sizeof(*g->r));
		g->nr = g->alloc = from->nr;
		g->all = from->all;
		memcpy(g->filter, from->filter, sizeof(g->filter));
	}
	for (at = &p->gen; *at && (*at)->since > since; at = &(*at)->older)
		;
	g->older = *at;
	*at = g;
	return g;
}

/* Free what has been superseded for long enough: generations older than
 * one that began KEEP_NS ago, and processes that exited as long ago. */
static void reap(struct execmap *m, struct em_proc *p)
{
	size_t k = 0;

	for (struct em_gen *g = p ? p->gen : NULL; g; g = g->older)
		if (g->since + KEEP_NS < m->now) {
			gens_free(g->older);
			g->older = NULL;
			break;
		}
	while (k < m->nr_exited && m->exited[k]->exited + KEEP_NS < m->now) {
		proc_remove(m, m->exited[k]);
		proc_free(m->exited[k]);
		k++;
	}
	if (k) {
		memmove(m->exited, m->exited + k, (m->nr_exited - k) * sizeof(*m->exited));
		m->nr_exited -= k;
	}
}

/* Drop p from the exited list: a new process took its pid. */
static void exited_forget(struct execmap *m, struct em_proc *p)
{
	for (size_t i = 0; i < m->nr_exited; i++)
		if (m->exited[i] == p) {
			memmove(m->exited + i, m->exited + i + 1, (m->nr_exited - i - 1) * sizeof(*m->exited));
			m->nr_exited--;
			break;
		}
	p->exited = 0;
}

void execmap_apply(struct execmap *m, const struct execmap_entry *e)
{
	struct em_proc *p;
	struct em_gen *g, *from;

	if (e->time > m->now)
		m->now = e->time;
	switch (e->op) {
	case EXECMAP_MAP:
		if (!(p = proc_get(m, e->pid)))
			break;
		g = execmap_at(m, e->pid, e->time);
		if (!g)
			g = gen_push(p, 0, NULL);
		if (g) {
			range_add(g, e->start, e->end, e->obj);
			g->stamp = ++m->stamps;
		}
		break;
	case EXECMAP_FORK:
		from = execmap_at(m, e->other, e->time);
		if (!(p = proc_get(m, e->pid)))
			break;
		if (p->exited)
			exited_forget(m, p);
		/* proc_get may have moved the slots, not the processes. */
		from = execmap_at(m, e->other, e->time);
		if ((g = gen_push(p, e->time, from && p->gen != from ? from : NULL)))
			g->stamp = ++m->stamps;
		reap(m, p);
		break;
	case EXECMAP_EXEC:
		if (!(p = proc_get(m, e->pid)))
			break;
		if (p->exited)
			exited_forget(m, p);
		if ((g = gen_push(p, e->time, NULL)))
			g->stamp = ++m->stamps;
		reap(m, p);
		break;
	case EXECMAP_EXIT:
		if ((p = proc_find(m, e->pid)) && !p->exited) {
			struct em_proc **v = m->exited;

			if (m->nr_exited == m->alloc_exited) {
				size_t n = m->alloc_exited ? m->alloc_exited * 2 : 64;

				v = realloc(m->exited, n * sizeof(*v));
				if (!v)
					break;
				m->exited = v;
				m->alloc_exited = n;
			}
			p->exited = e->time ? e->time : 1;
			m->exited[m->nr_exited++] = p;
		}
		reap(m, NULL);
		break;
	}
}

void execmap_touch(struct execmap *m, uint32_t obj)
{
	if (!obj)
		return;
	if (obj >= m->alloc_touched) {
		size_t n = m->alloc_touched ? m->alloc_touched : 256;
		uint8_t *t;

		while (n <= obj)
			n *= 2;
		t = realloc(m->touched, n);
		if (!t)
			return;
		memset(t + m->alloc_touched, 0, n - m->alloc_touched);
		m->touched = t;
		m->alloc_touched = n;
	}
	if (!m->touched[obj])
		m->nr_touched++;
	m->touched[obj] = 1;
}

int execmap_touched(const struct execmap *m, uint32_t obj)
{
	return obj < m->alloc_touched && m->touched[obj];
}
