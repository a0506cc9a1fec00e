/*
 * analyze/model/stacktab.c: per-stack weights.
 */
#include "stacktab.h"
#include "../../formats/allocfns.h"

#include <stdlib.h>
#include <string.h>

#define BLOCK_SIZE (256 << 10)

/* Carving's step: every node and array starts 16-byte aligned. */
static size_t round16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

static void *carve(struct stacktab_pool *p, size_t size)
{
	struct stacktab_block *b = p->last;

	size = round16(size);
	if (!b || b->size - b->used < size) {
		size_t want = size > BLOCK_SIZE / 4 ? size : BLOCK_SIZE;

		b = malloc(sizeof(*b) + want);
		/* A slot holds a node's address in 48 bits: all that x86-64
		 * and arm64 give user space unless asked for more. */
		if (b && ((uintptr_t)b + sizeof(*b) + want) >> 48) {
			free(b);
			b = NULL;
		}
		if (!b)
			return NULL;
		b->size = want;
		b->used = 0;
		b->next = NULL;
		if (p->last)
			p->last->next = b;
		else
			p->first = b;
		p->last = b;
	}
	b->used += size;
	return b->data + b->used - size;
}

static void pool_release(struct stacktab_pool *p)
{
	for (struct stacktab_block *b = p->first, *n; b; b = n) {
		n = b->next;
		free(b);
	}
	memset(p, 0, sizeof(*p));
}

#define SLOT_PTR ((1ull << 48) - 1)

static uint64_t slot_tag(uint32_t h)
{
	return (uint64_t)(h >> 16) << 48;
}

/* Find the node of hash h for which same(node, arg) holds; NULL if none. */
static struct stack_node *index_find(const struct stack_index *c, uint32_t h,
				      int (*same)(const struct stack_node *, const void *), const void *arg)
{
	uint64_t tag = slot_tag(h);

	if (!c->n)
		return NULL;
	for (size_t i = h & (c->n - 1);; i = (i + 1) & (c->n - 1)) {
		uint64_t v = c->slot[i];
		struct stack_node *l = (struct stack_node *)(uintptr_t)(v & SLOT_PTR);

		if (!v)
			return NULL;
		if ((v & ~SLOT_PTR) == tag && l->hash == h && same(l, arg))
			return l;
	}
}

static void slot_put(uint64_t *slot, size_t n, struct stack_node *l)
{
	size_t i = l->hash & (n - 1);

	while (slot[i])
		i = (i + 1) & (n - 1);
	slot[i] = slot_tag(l->hash) | (uintptr_t)l;
}

/* Room for one more node (the table at most 3/4 full), so that adding it
 * cannot fail. */
static int index_reserve(struct stack_index *c)
{
	size_t n = c->n ? c->n * 2 : 1024;
	uint64_t *slot;

	if (4 * (c->nr + 1) <= 3 * c->n)
		return 0;
	slot = calloc(n, sizeof(*slot));
	if (!slot)
		return -1;
	for (size_t i = 0; i < c->n; i++)
		if (c->slot[i])
			slot_put(slot, n, (struct stack_node *)(uintptr_t)(c->slot[i] & SLOT_PTR));
	free(c->slot);
	c->slot = slot;
	c->n = n;
	return 0;
}

/* Add node l, after index_reserve. */
static void index_add(struct stack_index *c, struct stack_node *l)
{
	slot_put(c->slot, c->n, l);
	c->nr++;
}

static void index_release(struct stack_index *c)
{
	free(c->slot);
	memset(c, 0, sizeof(*c));
}

#define index_for_each(c, type, x) \
	for (size_t x##_i = 0; x##_i < (c)->n; x##_i++) \
		for (type *x = (type *)(uintptr_t)((c)->slot[x##_i] & SLOT_PTR); x; x = NULL)

static void init(struct stacktab *t, int kernel, int user, int by_comm)
{
	memset(t, 0, sizeof(*t));
	t->kernel = kernel;
	t->user = user;
	t->by_comm = by_comm;
	t->entry_step = round16(sizeof(struct stack_entry));
}

void stacktab_set_extra(struct stacktab *t, size_t size)
{
	t->entry_step = round16(sizeof(struct stack_entry) + size);
}

void *stack_entry_extra(const struct stack_entry *e)
{
	_Static_assert(sizeof(struct stack_entry) % 8 == 0, "extra bytes aligned for uint64_t");
	return (void *)(e + 1);
}

void stacktab_init(struct stacktab *t, int kernel, int user)
{
	init(t, kernel, user, 0);
}

void stacktab_init_by_comm(struct stacktab *t, int kernel, int user)
{
	init(t, kernel, user, 1);
}

void stacktab_init_per_command(struct stacktab *t, int kernel, int user)
{
	init(t, kernel, user, 2);
}

const char *stack_entry_who(const struct stack_entry *e, char *buf, size_t len)
{
	if (e->procs > 1)
		snprintf(buf, len, "%s, %u processes", e->comm, e->procs);
	else if (e->pid >= 0)
		snprintf(buf, len, "pid %d %s", e->pid, e->comm);
	else
		snprintf(buf, len, "%s", e->comm);
	return buf;
}

/* Where key is among n slots, or the empty slot where it would go. */
static size_t pair_slot(const uint64_t *slot, size_t n, uint64_t key)
{
	size_t i = hash_words(&key, 1) & (n - 1);

	while (slot[i] && slot[i] != key)
		i = (i + 1) & (n - 1);
	return i;
}

/* Note that process pid ran entry seq: 1 when new, 0 when seen before,
 * -1 out of memory. */
static int pairs_add(struct stack_pairs *p, uint32_t seq, uint32_t pid)
{
	uint64_t key = (uint64_t)(seq + 1) << 32 | pid;
	size_t i;

	if (4 * (p->nr + 1) > 3 * p->n) {
		size_t n = p->n ? 2 * p->n : 1024;
		uint64_t *v = calloc(n, sizeof(*v));

		if (!v)
			return -1;
		for (size_t k = 0; k < p->n; k++)
			if (p->slot[k])
				v[pair_slot(v, n, p->slot[k])] = p->slot[k];
		free(p->slot);
		p->slot = v;
		p->n = n;
	}
	i = pair_slot(p->slot, p->n, key);
	if (p->slot[i])
		return 0;
	p->slot[i] = key;
	p->nr++;
	return 1;
}

void stacktab_release(struct stacktab *t)
{
	free(t->pairs.slot);
	pool_release(&t->entry_pool);
	pool_release(&t->code_pool);
	pool_release(&t->site_pool);
	index_release(&t->entries);
	index_release(&t->codes);
	index_release(&t->sites);
}

void stacktab_name_top(struct stack_entry *e, const char *name)
{
	/* The probed function at one object offset is the same in every
	 * process, so the name belongs to the code path. */
	e->code->top_name = name;
}

void stacktab_trim_to_entry(struct stack_entry *e)
{
	e->code->to_entry = 1;
}

static void site_name(struct stacktab *t, struct stack_site *st)
{
	struct frame raw, fr[STACK_MAX_FRAMES];
	int n;

	frame_of_key(st->key, &raw);
	n = session_frames_name(t->s, &raw, 1, fr, STACK_MAX_FRAMES);
	/* Out of memory: the site stays unnamed rather than lost. */
	st->named = carve(&t->site_pool, n * sizeof(*st->named));
	if (!st->named)
		return;
	for (int i = 0; i < n; i++)
		st->named[i] = (struct stack_name){ fr[i].sym, fr[i].off, fr[i].call_file, fr[i].call_line,
						    fr[i].inlined };
	st->nr = n;
}

static void code_name(struct stacktab *t, struct stack_code *c)
{
	for (int i = 0; i < c->nr; i++)
		if (!c->sites[i]->nr)
			site_name(t, c->sites[i]);
}

/* Whether the probed function's name replaces the innermost frame's: only
 * when that frame, named, is the function's first byte. */
static int code_top_named(const struct stack_code *c)
{
	struct frame raw;

	if (!c->top_name || !c->nr || !c->sites[0]->nr)
		return 0;
	frame_of_key(c->sites[0]->key, &raw);
	return !raw.kernel && c->sites[0]->named[0].off == 0;
}

/* The sites a code path is shown without: those above the allocation
 * function the program called, for a path stacktab_trim_to_entry marked;
 * -1 when it has no such function on top. A site's function is its
 * outermost named frame (the others are inlined in it), and the site
 * shown first is shown by that frame alone. */
static int code_skip(const struct stack_code *c)
{
	struct frame top, raw;
	int skip = -1;

	if (!c->to_entry || !c->nr)
		return -1;
	frame_of_key(c->sites[0]->key, &top);
	if (top.kernel || !top.obj)
		return -1;
	for (int i = 0; i < c->nr; i++) {
		const struct stack_site *st = c->sites[i];

		frame_of_key(st->key, &raw);
		if (raw.kernel || raw.obj != top.obj || !st->nr)
			break;
		if (alloc_fn_is_entry(st->named[st->nr - 1].sym))
			skip = i;
	}
	return skip;
}

int stack_entry_frames(const struct stack_entry *e, struct frame *out, int max)
{
	const struct stack_code *c = e->code;
	int n = 0, skip = code_skip(c);

	for (int i = skip < 0 ? 0 : skip; i < c->nr && n < max; i++) {
		const struct stack_site *st = c->sites[i];
		struct frame raw;

		frame_of_key(st->key, &raw);
		if (!st->nr)
			out[n++] = raw;
		for (int j = i == skip ? st->nr - 1 : 0; j < st->nr && n < max; j++) {
			struct frame *f = &out[n++];

			*f = raw;
			f->sym = st->named[j].sym;
			f->off = st->named[j].off;
			f->call_file = st->named[j].call_file;
			f->call_line = st->named[j].call_line;
			f->inlined = st->named[j].inlined;
		}
	}
	if (n && code_top_named(c))
		out[0].sym = c->top_name;
	return n;
}

void stacktab_name_all(struct stacktab *t)
{
	if (!t->pending)
		return;
	t->pending = 0;
	index_for_each(&t->sites, struct stack_site, st)
		if (!st->nr)
			site_name(t, st);
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

static int site_same(const struct stack_node *l, const void *key)
{
	return !memcmp(((const struct stack_site *)l)->key, key, sizeof(((struct stack_site *)0)->key));
}

/* The site of one frame's key words, made if new. */
static struct stack_site *site_get(struct stacktab *t, struct session *s, const uint64_t *key)
{
	uint32_t h = (uint32_t)hash_words(key, FRAME_KEY_WORDS);
	struct stack_site *st = (struct stack_site *)index_find(&t->sites, h, site_same, key);
	struct frame raw;

	if (st)
		return st;
	st = index_reserve(&t->sites) ? NULL : carve(&t->site_pool, sizeof(*st));
	if (!st)
		return NULL;
	memset(st, 0, sizeof(*st));
	memcpy(st->key, key, sizeof(st->key));
	st->node.hash = h;
	st->idx = (uint32_t)t->sites.nr;
	index_add(&t->sites, &st->node);
	frame_of_key(key, &raw);
	session_frame_prefetch(s, &raw);
	return st;
}

struct key_ref {
	const uint64_t *key;
	int n;			/* words */
};

static int code_same(const struct stack_node *l, const void *arg)
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
	struct stack_code *c = (struct stack_code *)index_find(&t->codes, h, code_same, k);
	int nr = k->n / FRAME_KEY_WORDS;

	if (c)
		return c;
	c = index_reserve(&t->codes) ? NULL : carve(&t->code_pool, sizeof(*c) + nr * sizeof(c->sites[0]));
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->node.hash = h;
	for (int i = 0; i < nr; i++)
		if (!(c->sites[i] = site_get(t, s, k->key + i * FRAME_KEY_WORDS)))
			return NULL;
	c->nr = nr;
	index_add(&t->codes, &c->node);
	return c;
}

struct entry_ref {
	struct key_ref k;
	int pid;
	const char *comm;	/* in a table by command name */
};

static int entry_same(const struct stack_node *l, const void *arg)
{
	const struct stack_entry *e = (const struct stack_entry *)l;
	const struct entry_ref *r = arg;

	return (r->comm ? e->comm == r->comm : e->pid == r->pid) && code_same(&e->code->node, &r->k);
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
	e = (struct stack_entry *)index_find(&t->entries, h, entry_same, &r);
	if (!e) {
		struct stack_code *c = code_get(t, s, &r.k, (uint32_t)hc);

		/* The table makes room first: an entry carved is one iterated. */
		e = c && !index_reserve(&t->entries) ? carve(&t->entry_pool, t->entry_step) : NULL;
		if (!e)
			return NULL;
		memset(e, 0, t->entry_step);
		e->node.hash = h;
		e->pid = t->by_comm == 1 ? -1 : (int)smp->pid;
		e->procs = t->by_comm != 2; /* counted below */
		e->comm = r.comm ? r.comm : machine_comm(&s->m, smp->pid, smp->tid);
		e->code = c;
		e->seq = (uint32_t)t->entries.nr;
		index_add(&t->entries, &e->node);
		if (!t->pending) {
			t->s = s;
			/* No room to wait: name it now. */
			if (session_at_replay_end(s, name_all_hook, t))
				code_name(t, c);
			else
				t->pending = 1;
		}
	}
	/* A process met before is met again mostly in a row: the pairs are
	 * looked at only when the process changes. */
	if (t->by_comm == 2 && (e->pid != (int)smp->pid || !e->procs)) {
		int added = pairs_add(&t->pairs, e->seq, smp->pid);

		if (added < 0)
			return NULL;
		e->procs += added;
		e->pid = (int)smp->pid;
	}
	e->count += count;
	e->weight += weight;
	return e;
}

/* A frame as a folded line shows it: by name alone, and whether kernel. */
static uint64_t frame_name_word(const struct frame *f)
{
	return (uintptr_t)(f->sym ? f->sym : f->obj) << 1 | !!f->kernel;
}

/* Sequences of name words interned, in a pool of their own. */
struct name_run {
	struct stack_node node;
	uint32_t id;
	int n;
	uint64_t weight;	/* a line's: its entries' summed */
	const struct stack_entry *rep; /* a line's first entry */
	uint64_t w[];
};

struct name_runs {
	struct stack_index index;
	struct stacktab_pool pool;
};

struct run_ref {
	const uint64_t *w;
	int n;
};

static size_t run_size(int n)
{
	return round16(sizeof(struct name_run) + n * sizeof(uint64_t));
}

static int run_same(const struct stack_node *l, const void *arg)
{
	const struct name_run *r = (const struct name_run *)l;
	const struct run_ref *k = arg;

	return r->n == k->n && !memcmp(r->w, k->w, k->n * sizeof(*k->w));
}

/* The run of w, interned if new (its id counts from 1); NULL on
 * out-of-memory. */
static struct name_run *run_get(struct name_runs *rs, const uint64_t *w, int n)
{
	struct run_ref k = { w, n };
	uint32_t h = (uint32_t)hash_words(w, n);
	struct name_run *r = (struct name_run *)index_find(&rs->index, h, run_same, &k);

	if (r)
		return r;
	r = index_reserve(&rs->index) ? NULL : carve(&rs->pool, run_size(n));
	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->node.hash = h;
	r->n = n;
	memcpy(r->w, w, n * sizeof(*w));
	index_add(&rs->index, &r->node);
	r->id = (uint32_t)rs->index.nr;
	return r;
}

static void runs_release(struct name_runs *rs)
{
	index_release(&rs->index);
	pool_release(&rs->pool);
}

/* The id of the names of the i-th site's frames; with the probed name on
 * top when top. 0 on out-of-memory. */
static uint32_t site_names(struct name_runs *rs, uint32_t *ids, const struct stack_code *c, int i, int top,
			   int outer)
{
	const struct stack_site *st = c->sites[i];
	uint64_t w[STACK_MAX_FRAMES];
	struct name_run *r;
	struct frame raw;
	int n = 0;

	if (!top && !outer && ids[st->idx])
		return ids[st->idx];
	frame_of_key(st->key, &raw);
	if (!st->nr)
		w[n++] = frame_name_word(&raw);
	for (int j = outer ? st->nr - 1 : 0; j < st->nr; j++) {
		raw.sym = st->named[j].sym;
		w[n++] = frame_name_word(&raw);
	}
	if (top)
		w[0] = (uintptr_t)c->top_name << 1;
	r = run_get(rs, w, n);
	if (!r)
		return 0;
	if (!top && !outer)
		ids[st->idx] = r->id;
	return r->id;
}

int stacktab_by_names(struct stacktab *t, int (*fn)(const struct stack_entry *e, uint64_t weight, void *arg),
		      void *arg)
{
	struct name_runs sites = { 0 }, lines = { 0 };
	uint32_t *ids;
	int ret = -1;

	stacktab_name_all(t);
	ids = calloc(t->sites.nr ? t->sites.nr : 1, sizeof(*ids));
	if (!ids)
		return -1;
	stacktab_for_each(t, e) {
		const struct stack_code *c = e->code;
		uint64_t w[STACK_MAX_FRAMES + 1];
		struct name_run *line;
		int n = 0, top = code_top_named(c), skip = code_skip(c);

		if (!e->weight)
			continue;
		/* Paths that differ only in offsets, or in sites whose frames
		 * have the same names, print alike. */
		w[n++] = (uintptr_t)e->comm;
		for (int i = skip < 0 ? 0 : skip; i < c->nr && n <= STACK_MAX_FRAMES; i++)
			if (!(w[n++] = site_names(&sites, ids, c, i, !i && top, i == skip)))
				goto out;
		line = run_get(&lines, w, n);
		if (!line)
			goto out;
		if (!line->rep)
			line->rep = e;
		line->weight += e->weight;
	}
	ret = 0;
	/* The lines in the order first seen: their runs, one after another. */
	for (struct stacktab_block *b = lines.pool.first; b && !ret; b = b->next)
		for (size_t at = 0; at < b->used && !ret;) {
			const struct name_run *line = (const struct name_run *)(b->data + at);

			ret = fn(line->rep, line->weight, arg);
			at += run_size(line->n);
		}
out:
	free(ids);
	runs_release(&sites);
	runs_release(&lines);
	return ret;
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

