/*
 * analyze/model/stacktab.c: per-stack weights.
 */
#include "stacktab.h"

#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 256
#define MAX_KEY (MAX_FRAMES * FRAME_KEY_WORDS)
#define BLOCK_SIZE (256 << 10)

/* Codes, entries and their arrays are carved from blocks freed together:
 * a system-wide trace makes hundreds of thousands of entries, and one
 * malloc and free each cost more than the rest of their bookkeeping. */
struct stacktab_block {
	struct stacktab_block *next;
	size_t used, size;
	_Alignas(16) unsigned char data[];
};

static void *carve(struct stacktab *t, size_t size)
{
	struct stacktab_block *b = t->blocks;

	size = (size + 15) & ~(size_t)15;
	if (!b || b->size - b->used < size) {
		size_t want = size > BLOCK_SIZE / 4 ? size : BLOCK_SIZE;

		b = malloc(sizeof(*b) + want);
		if (!b)
			return NULL;
		b->size = want;
		b->used = 0;
		/* A block of its own for a big request keeps the current one. */
		if (want == size && t->blocks) {
			b->next = t->blocks->next;
			t->blocks->next = b;
		} else {
			b->next = t->blocks;
			t->blocks = b;
		}
	}
	b->used += size;
	return b->data + b->used - size;
}

static void init(struct stacktab *t, int kernel, int user, int by_comm)
{
	memset(t, 0, sizeof(*t));
	hashmap_init(&t->map, 0);
	hashmap_init(&t->codes, 0);
	t->kernel = kernel;
	t->user = user;
	t->by_comm = by_comm;
}

void stacktab_init(struct stacktab *t, int kernel, int user)
{
	init(t, kernel, user, 0);
}

void stacktab_init_by_comm(struct stacktab *t, int kernel, int user)
{
	init(t, kernel, user, 1);
}

void stacktab_release(struct stacktab *t)
{
	for (struct stacktab_block *b = t->blocks, *n; b; b = n) {
		n = b->next;
		free(b);
	}
	t->blocks = NULL;
	hashmap_release(&t->map);
	hashmap_release(&t->codes);
}

static void top_name_apply(struct stack_code *c)
{
	if (c->top_name && c->nr_frames && !c->frames[0].kernel && c->frames[0].off == 0)
		c->frames[0].sym = c->top_name;
}

void stacktab_name_top(struct stack_entry *e, const char *name)
{
	/* The probed function at one object offset is the same in every
	 * process, so the name belongs to the code path. */
	e->code->top_name = name;
	if (e->code->named)
		top_name_apply(e->code);
}

static void code_name(struct stacktab *t, struct stack_code *c)
{
	struct frame fr[MAX_FRAMES];
	int n = session_frames_name(t->s, c->frames, c->nr_frames, fr, MAX_FRAMES);
	struct frame *v = n > c->nr_frames ? carve(t, n * sizeof(*v)) : c->frames;

	c->named = 1;
	/* Out of memory: keep the frames unnamed rather than lose them. */
	if (!v)
		return;
	memcpy(v, fr, n * sizeof(*v));
	c->frames = v;
	c->nr_frames = n;
	top_name_apply(c);
}

static void entry_name(struct stacktab *t, struct stack_entry *e)
{
	if (!e->code->named)
		code_name(t, e->code);
	e->frames = e->code->frames;
	e->nr_frames = e->code->nr_frames;
}

void stacktab_name_all(struct stacktab *t)
{
	if (!t->pending)
		return;
	t->pending = 0;
	hashmap_for_each(&t->map, slot) for (struct stack_entry *e = slot->ptr; e; e = e->next)
		entry_name(t, e);
	if (t->s->o.unwind_stats)
		fprintf(stderr, "stacks: %zu %s over %zu code paths, each named once\n", t->nr,
			t->by_comm ? "(command, path) entries" : "(process, path) entries", t->nr_codes);
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

/* The code path of key, made (with its raw frames, from smp) if new. */
static struct stack_code *code_get(struct stacktab *t, struct session *s, const struct sample *smp,
				   const uint64_t *key, int n, uint64_t h)
{
	struct hm_slot *slot = hashmap_u64(&t->codes, h, NULL);
	struct stack_code *c;
	struct frame fr[MAX_FRAMES];
	uint64_t *k;

	if (!slot)
		return NULL;
	for (c = slot->ptr; c; c = c->next)
		if (c->nr_key == n && !memcmp(c->key, key, n * sizeof(*key)))
			return c;
	c = carve(t, sizeof(*c));
	k = carve(t, (n ? n : 1) * sizeof(*k));
	if (!c || !k)
		return NULL;
	memset(c, 0, sizeof(*c));
	memcpy(k, key, n * sizeof(*k));
	c->key = k;
	c->nr_key = n;
	c->nr_frames = session_frames_raw(s, smp, fr, MAX_FRAMES, t->kernel, t->user);
	c->frames = carve(t, (c->nr_frames ? c->nr_frames : 1) * sizeof(*fr));
	if (c->frames)
		memcpy(c->frames, fr, c->nr_frames * sizeof(*fr));
	else
		c->nr_frames = 0;
	c->next = slot->ptr;
	slot->ptr = c;
	t->nr_codes++;
	return c;
}

struct stack_entry *stacktab_add_n(struct stacktab *t, struct session *s, const struct sample *smp, uint64_t count,
				   uint64_t weight)
{
	uint64_t key[MAX_KEY];
	int n = session_frames_key(s, smp, key, MAX_KEY, t->kernel, t->user);
	uint64_t hc = hash_words(key, n);
	const char *comm = t->by_comm ? machine_comm(&s->m, smp->pid, smp->tid) : NULL;
	uint64_t who = t->by_comm ? (uintptr_t)comm : (uint32_t)smp->pid;
	uint64_t h = hc ^ (who + 1) * 0x9e3779b97f4a7c15ull;
	struct hm_slot *slot = hashmap_u64(&t->map, h, NULL);
	struct stack_entry *e;

	if (!slot)
		return NULL;
	for (e = slot->ptr; e; e = e->next)
		if ((t->by_comm ? e->comm == comm : e->pid == (int)smp->pid) &&
		    e->code->nr_key == n && !memcmp(e->code->key, key, n * sizeof(*key)))
			break;
	if (!e) {
		struct stack_code *c = code_get(t, s, smp, key, n, hc);

		e = c ? carve(t, sizeof(*e)) : NULL;
		if (!e)
			return NULL;
		memset(e, 0, sizeof(*e));
		e->pid = t->by_comm ? -1 : (int)smp->pid;
		e->comm = comm ? comm : machine_comm(&s->m, smp->pid, smp->tid);
		e->code = c;
		e->frames = c->frames;
		e->nr_frames = c->nr_frames;
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
