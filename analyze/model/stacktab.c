/*
 * analyze/model/stacktab.c: per-stack weights.
 */
#include "stacktab.h"

#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 256

void stacktab_init(struct stacktab *t, int kernel, int user)
{
	memset(t, 0, sizeof(*t));
	hashmap_init(&t->map, 0);
	t->kernel = kernel;
	t->user = user;
}

void stacktab_release(struct stacktab *t)
{
	hashmap_for_each(&t->map, slot) {
		struct stack_entry *e = slot->ptr, *n;

		for (; e; e = n) {
			n = e->next;
			free(e->frames);
			free(e->ips);
			free(e);
		}
	}
	hashmap_release(&t->map);
}

static void top_name_apply(struct stack_entry *e)
{
	if (e->top_name && e->nr_frames && !e->frames[0].kernel && e->frames[0].off == 0)
		e->frames[0].sym = e->top_name;
}

void stacktab_name_top(struct stack_entry *e, const char *name)
{
	e->top_name = name;
	if (e->named)
		top_name_apply(e);
}

static void entry_name(struct stacktab *t, struct stack_entry *e)
{
	struct frame fr[MAX_FRAMES];
	int n = session_frames_name(t->s, e->frames, e->nr_frames, fr, MAX_FRAMES);
	struct frame *v = n > e->nr_frames ? realloc(e->frames, n * sizeof(*v)) : e->frames;

	e->named = 1;
	/* Out of memory: keep the frames unnamed rather than lose them. */
	if (!v)
		return;
	memcpy(v, fr, n * sizeof(*v));
	e->frames = v;
	e->nr_frames = n;
	top_name_apply(e);
}

void stacktab_name_all(struct stacktab *t)
{
	if (!t->pending)
		return;
	t->pending = 0;
	hashmap_for_each(&t->map, slot) for (struct stack_entry *e = slot->ptr; e; e = e->next) if (!e->named)
		entry_name(t, e);
}

static void name_all_hook(void *arg)
{
	stacktab_name_all(arg);
}

struct stack_entry *stacktab_add(struct stacktab *t, struct session *s, const struct sample *smp,
				 uint64_t weight)
{
	return stacktab_add_n(t, s, smp, 1, weight);
}

struct stack_entry *stacktab_add_n(struct stacktab *t, struct session *s, const struct sample *smp, uint64_t count,
				   uint64_t weight)
{
	uint64_t h = hash_words(smp->ips, smp->nr_ips) ^ (uint64_t)smp->pid * 0x9e3779b97f4a7c15ull;
	struct hm_slot *slot = hashmap_u64(&t->map, h, NULL);
	struct stack_entry *e;
	struct frame fr[MAX_FRAMES];

	if (!slot)
		return NULL;
	for (e = slot->ptr; e; e = e->next)
		if (e->pid == (int)smp->pid && e->nr_ips == smp->nr_ips &&
		    !memcmp(e->ips, smp->ips, smp->nr_ips * sizeof(*smp->ips)))
			break;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return NULL;
		e->pid = smp->pid;
		e->comm = machine_comm(&s->m, smp->pid, smp->tid);
		e->hash = h;
		e->nr_ips = smp->nr_ips;
		e->ips = malloc((smp->nr_ips ? smp->nr_ips : 1) * sizeof(*e->ips));
		if (!e->ips) {
			free(e);
			return NULL;
		}
		memcpy(e->ips, smp->ips, smp->nr_ips * sizeof(*smp->ips));
		e->nr_frames = session_frames_raw(s, smp, fr, MAX_FRAMES, t->kernel, t->user);
		e->frames = malloc((e->nr_frames ? e->nr_frames : 1) * sizeof(*fr));
		if (e->frames)
			memcpy(e->frames, fr, e->nr_frames * sizeof(*fr));
		else
			e->nr_frames = 0;
		e->next = slot->ptr;
		slot->ptr = e;
		t->nr++;
		if (!t->pending) {
			t->s = s;
			/* No room to wait: name it now. */
			if (session_at_replay_end(s, name_all_hook, t))
				entry_name(t, e);
			else
				t->pending = 1;
		}
	}
	e->count += count;
	e->weight += weight;
	return e;
}

static int by_weight(const void *a, const void *b)
{
	const struct stack_entry *x = *(struct stack_entry *const *)a, *y = *(struct stack_entry *const *)b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return x->count > y->count ? -1 : x->count < y->count;
}

static int by_count(const void *a, const void *b)
{
	const struct stack_entry *x = *(struct stack_entry *const *)a, *y = *(struct stack_entry *const *)b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->weight > y->weight ? -1 : x->weight < y->weight;
}

struct stack_entry **stacktab_sorted(struct stacktab *t, int count_order, size_t *n)
{
	struct stack_entry **v;

	stacktab_name_all(t);
	v = malloc((t->nr ? t->nr : 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	hashmap_for_each(&t->map, slot) for (struct stack_entry *e = slot->ptr; e; e = e->next) v[(*n)++] = e;
	if (*n > 1)
		qsort(v, *n, sizeof(*v), count_order ? by_count : by_weight);
	return v;
}

void stacktab_print(struct stacktab *t, FILE *f, size_t n, int count_order, const char *unit,
		    const char *indent)
{
	size_t k;
	struct stack_entry **v = stacktab_sorted(t, count_order, &k);
	char buf[512];

	if (!v)
		return;
	for (size_t i = 0; i < k && i < n; i++) {
		struct stack_entry *e = v[i];

		if (!count_order && !e->weight)
			break;
		if (count_order)
			fprintf(f, "%s%llu %s from stack (pid %d %s)\n", indent, (unsigned long long)e->count, unit,
				e->pid, e->comm);
		else
			fprintf(f, "%s%llu %s in %llu calls from stack (pid %d %s)\n", indent,
				(unsigned long long)e->weight, unit, (unsigned long long)e->count, e->pid, e->comm);
		for (int j = 0; j < e->nr_frames; j++) {
			const struct frame *fr = &e->frames[j];
			const char *obj = fr->kernel ? "kernel.kallsyms" : fr->obj ? fr->obj : "unknown";
			const char *base = strrchr(obj, '/');

			fprintf(f, "%s    %s [%s]\n", indent, frame_name(fr, buf, sizeof(buf), 1), base ? base + 1 : obj);
		}
		if (!e->nr_frames)
			fprintf(f, "%s    (no stack recorded)\n", indent);
	}
	free(v);
}
