/*
 * analyze/model/stacktab.c: per-stack weights.
 */
#include "stacktab.h"

#include <stdlib.h>
#include <string.h>

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

/* Find the node of hash h for which same(node, arg) holds; NULL if none. */
static struct stack_link *chains_find(const struct stack_chains *c, uint32_t h,
				      int (*same)(const struct stack_link *, const void *), const void *arg)
{
	if (!c->n)
		return NULL;
	for (struct stack_link *l = c->b[h & (c->n - 1)]; l; l = l->next)
		if (l->hash == h && same(l, arg))
			return l;
	return NULL;
}

static int chains_add(struct stack_chains *c, struct stack_link *l)
{
	if (c->nr >= c->n) {
		size_t n = c->n ? c->n * 2 : 1024;
		struct stack_link **b = calloc(n, sizeof(*b));

		if (!b)
			return -1;
		for (size_t i = 0; i < c->n; i++)
			for (struct stack_link *x = c->b[i], *next; x; x = next) {
				next = x->next;
				x->next = b[x->hash & (n - 1)];
				b[x->hash & (n - 1)] = x;
			}
		free(c->b);
		c->b = b;
		c->n = n;
	}
	l->next = c->b[l->hash & (c->n - 1)];
	c->b[l->hash & (c->n - 1)] = l;
	c->nr++;
	return 0;
}

static void chains_release(struct stack_chains *c)
{
	free(c->b);
	memset(c, 0, sizeof(*c));
}

static void init(struct stacktab *t, int kernel, int user, int by_comm)
{
	memset(t, 0, sizeof(*t));
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
	chains_release(&t->entries);
	chains_release(&t->codes);
	chains_release(&t->sites);
}

void stacktab_name_top(struct stack_entry *e, const char *name)
{
	/* The probed function at one object offset is the same in every
	 * process, so the name belongs to the code path. */
	e->code->top_name = name;
}

static void site_name(struct stacktab *t, struct stack_site *st)
{
	struct frame raw, fr[STACK_MAX_FRAMES];
	int n;

	frame_of_key(st->key, &raw);
	n = session_frames_name(t->s, &raw, 1, fr, STACK_MAX_FRAMES);
	/* Out of memory: the site stays unnamed rather than lost. */
	st->named = carve(t, n * sizeof(*fr));
	if (st->named) {
		memcpy(st->named, fr, n * sizeof(*fr));
		st->nr = n;
	}
}

static void code_name(struct stacktab *t, struct stack_code *c)
{
	for (int i = 0; i < c->nr; i++)
		if (!c->sites[i]->nr)
			site_name(t, c->sites[i]);
}

int stack_entry_frames(const struct stack_entry *e, struct frame *out, int max)
{
	const struct stack_code *c = e->code;
	int n = 0;

	for (int i = 0; i < c->nr && n < max; i++) {
		const struct stack_site *st = c->sites[i];

		if (!st->nr) {
			frame_of_key(st->key, &out[n++]);
			continue;
		}
		for (int j = 0; j < st->nr && n < max; j++)
			out[n++] = st->named[j];
	}
	/* The probed function is named so only when the path's innermost
	 * frame is its first byte. */
	if (c->top_name && n && c->sites[0]->nr && !out[0].kernel && out[0].off == 0)
		out[0].sym = c->top_name;
	return n;
}

void stacktab_name_all(struct stacktab *t)
{
	if (!t->pending)
		return;
	t->pending = 0;
	for (size_t i = 0; i < t->sites.n; i++)
		for (struct stack_link *l = t->sites.b[i]; l; l = l->next)
			if (!((struct stack_site *)l)->nr)
				site_name(t, (struct stack_site *)l);
	if (t->s->o.unwind_stats)
		fprintf(stderr, "stacks: %zu %s over %zu code paths through %zu frame sites, each named once\n",
			t->entries.nr, t->by_comm ? "(command, path) entries" : "(process, path) entries",
			t->codes.nr, t->sites.nr);
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

static int site_same(const struct stack_link *l, const void *key)
{
	return !memcmp(((const struct stack_site *)l)->key, key, sizeof(((struct stack_site *)0)->key));
}

/* The site of one frame's key words, made if new. */
static struct stack_site *site_get(struct stacktab *t, struct session *s, const uint64_t *key)
{
	uint32_t h = (uint32_t)hash_words(key, FRAME_KEY_WORDS);
	struct stack_site *st = (struct stack_site *)chains_find(&t->sites, h, site_same, key);
	struct frame raw;

	if (st)
		return st;
	st = carve(t, sizeof(*st));
	if (!st)
		return NULL;
	memset(st, 0, sizeof(*st));
	memcpy(st->key, key, sizeof(st->key));
	st->link.hash = h;
	if (chains_add(&t->sites, &st->link))
		return NULL;
	frame_of_key(key, &raw);
	session_frame_prefetch(s, &raw);
	return st;
}

struct key_ref {
	const uint64_t *key;
	int n;			/* words */
};

static int code_same(const struct stack_link *l, const void *arg)
{
	const struct stack_code *c = (const struct stack_code *)l;
	const struct key_ref *k = arg;

	if (c->nr * FRAME_KEY_WORDS != k->n)
		return 0;
	for (int i = 0; i < c->nr; i++)
		if (memcmp(c->sites[i]->key, k->key + i * FRAME_KEY_WORDS, sizeof(c->sites[i]->key)))
			return 0;
	return 1;
}

/* The code path of key, made if new. */
static struct stack_code *code_get(struct stacktab *t, struct session *s, const struct key_ref *k, uint32_t h)
{
	struct stack_code *c = (struct stack_code *)chains_find(&t->codes, h, code_same, k);
	int nr = k->n / FRAME_KEY_WORDS;

	if (c)
		return c;
	c = carve(t, sizeof(*c) + nr * sizeof(c->sites[0]));
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->link.hash = h;
	for (int i = 0; i < nr; i++)
		if (!(c->sites[i] = site_get(t, s, k->key + i * FRAME_KEY_WORDS)))
			return NULL;
	c->nr = nr;
	if (chains_add(&t->codes, &c->link))
		return NULL;
	return c;
}

struct entry_ref {
	struct key_ref k;
	int pid;
	const char *comm;	/* in a table by command name */
};

static int entry_same(const struct stack_link *l, const void *arg)
{
	const struct stack_entry *e = (const struct stack_entry *)l;
	const struct entry_ref *r = arg;

	return (r->comm ? e->comm == r->comm : e->pid == r->pid) && code_same(&e->code->link, &r->k);
}

struct stack_entry *stacktab_add_n(struct stacktab *t, struct session *s, const struct sample *smp, uint64_t count,
				   uint64_t weight)
{
	uint64_t key[STACK_MAX_FRAMES * FRAME_KEY_WORDS];
	struct entry_ref r;
	uint64_t hc, who;
	uint32_t h;
	struct stack_entry *e;

	r.k.key = key;
	r.k.n = session_frames_key(s, smp, key, STACK_MAX_FRAMES * FRAME_KEY_WORDS, t->kernel, t->user);
	r.pid = (int)smp->pid;
	r.comm = t->by_comm ? machine_comm(&s->m, smp->pid, smp->tid) : NULL;
	hc = hash_words(key, r.k.n);
	who = t->by_comm ? (uintptr_t)r.comm : (uint32_t)smp->pid;
	h = (uint32_t)(hc ^ (who + 1) * 0x9e3779b97f4a7c15ull);
	e = (struct stack_entry *)chains_find(&t->entries, h, entry_same, &r);
	if (!e) {
		struct stack_code *c = code_get(t, s, &r.k, (uint32_t)hc);

		e = c ? carve(t, sizeof(*e)) : NULL;
		if (!e)
			return NULL;
		memset(e, 0, sizeof(*e));
		e->link.hash = h;
		e->pid = t->by_comm ? -1 : (int)smp->pid;
		e->comm = r.comm ? r.comm : machine_comm(&s->m, smp->pid, smp->tid);
		e->code = c;
		e->seq = (uint32_t)t->entries.nr;
		if (chains_add(&t->entries, &e->link))
			return NULL;
		if (!t->pending) {
			t->s = s;
			/* No room to wait: name it now. */
			if (session_at_replay_end(s, name_all_hook, t))
				code_name(t, c);
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
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_count(const void *a, const void *b)
{
	const struct stack_entry *x = *(struct stack_entry *const *)a, *y = *(struct stack_entry *const *)b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct stack_entry **stacktab_sorted(struct stacktab *t, int count_order, size_t *n)
{
	struct stack_entry **v;

	stacktab_name_all(t);
	v = malloc((t->entries.nr ? t->entries.nr : 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	stacktab_for_each(t, e)
		v[(*n)++] = e;
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
	struct frame fr[STACK_MAX_FRAMES];

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
		int nr = stack_entry_frames(e, fr, STACK_MAX_FRAMES);

		for (int j = 0; j < nr; j++) {
			const char *obj = fr[j].kernel ? "kernel.kallsyms" : fr[j].obj ? fr[j].obj : "unknown";
			const char *base = strrchr(obj, '/');

			fprintf(f, "%s    %s [%s]\n", indent, frame_name(&fr[j], buf, sizeof(buf), 1),
				base ? base + 1 : obj);
		}
		if (!nr)
			fprintf(f, "%s    (no stack recorded)\n", indent);
	}
	free(v);
}
