/*
 * analyze/model/stacktime.c: what each stack did in each bucket of a
 * timeline; see stacktime.h.
 */
#include "stacktime.h"

#include <errno.h>
#include <stdlib.h>

void stacktime_init(struct stacktime *st, const struct timeline *tl)
{
	st->tl = tl;
	st->width = tl->width;
	hashmap_init(&st->stacks, 0);
}

static void cells_free(struct hashmap *cells)
{
	hashmap_for_each(cells, c) free(c->ptr);
	hashmap_release(cells);
}

void stacktime_release(struct stacktime *st)
{
	hashmap_for_each(&st->stacks, s) {
		struct stacktime_stack *x = s->ptr;

		cells_free(&x->cells);
		free(x);
	}
	hashmap_release(&st->stacks);
}

static uint64_t cell_key(enum stacktime_kind kind, uint32_t from, uint32_t to)
{
	return (uint64_t)kind << 62 | (uint64_t)from << 31 | to;
}

static int cell_add(struct hashmap *cells, enum stacktime_kind kind, uint32_t from, uint32_t to, uint64_t bytes,
		    uint64_t count)
{
	struct hm_slot *slot = hashmap_u64(cells, cell_key(kind, from, to), NULL);
	struct stacktime_cell *c;

	if (!slot)
		return -ENOMEM;
	if (!slot->ptr) {
		if (!(slot->ptr = calloc(1, sizeof(*c))))
			return -ENOMEM;
		c = slot->ptr;
		c->kind = kind;
		c->from = from;
		c->to = to;
	}
	c = slot->ptr;
	c->bytes += bytes;
	c->count += count;
	return 0;
}

int stacktime_cell_shifted(const struct stacktime_cell *c, int shift, uint32_t *from, uint32_t *to)
{
	/* A trace longer than 2^32 buckets' worth folds to one. */
	*from = shift < 32 ? c->from >> shift : 0;
	*to = c->to == STACKTIME_HELD ? c->to : shift < 32 ? c->to >> shift : 0;
	return c->kind != STACKTIME_LIVE || *from != *to;
}

/* The timeline doubled its buckets' width (once or more) since the cells
 * were made: bucket i is now i >> shift. A block made and freed in what
 * is now one bucket counts in no window any more, beyond being made. */
static int follow(struct stacktime *st)
{
	int shift = 0;

	/* Widths are a millisecond doubled: the ratio is a power of two. */
	for (uint64_t ratio = st->width ? st->tl->width / st->width : 1; ratio > 1; ratio >>= 1)
		shift++;
	if (!shift)
		return 0;
	st->width = st->tl->width;
	hashmap_for_each(&st->stacks, s) {
		struct stacktime_stack *x = s->ptr;
		struct hashmap moved;

		hashmap_init(&moved, 0);
		hashmap_for_each(&x->cells, cs) {
			struct stacktime_cell *c = cs->ptr;
			uint32_t from, to;

			if (!stacktime_cell_shifted(c, shift, &from, &to))
				x->spanning_bytes -= c->bytes;
			else if (cell_add(&moved, c->kind, from, to, c->bytes, c->count)) {
				cells_free(&moved);
				return -ENOMEM;
			}
		}
		cells_free(&x->cells);
		x->cells = moved;
	}
	return 0;
}

static uint32_t bucket(const struct stacktime *st, uint64_t time)
{
	const struct timeline *tl = st->tl;
	uint64_t i = time > tl->t0 ? (time - tl->t0) / tl->width : 0;

	return i < tl->n ? (uint32_t)i : tl->n ? (uint32_t)tl->n - 1 : 0;
}

static struct stacktime_stack *stack_of(struct stacktime *st, const void *key)
{
	struct hm_slot *slot = hashmap_u64(&st->stacks, (uint64_t)(uintptr_t)key, NULL);
	struct stacktime_stack *x;

	if (!slot)
		return NULL;
	if (!slot->ptr && (slot->ptr = calloc(1, sizeof(*x)))) {
		x = slot->ptr;
		x->key = key;
		hashmap_init(&x->cells, 0);
	}
	return slot->ptr;
}

int stacktime_block(struct stacktime *st, const void *key, uint64_t made, uint64_t freed, uint64_t bytes,
		    uint64_t count, int end)
{
	struct stacktime_stack *x;
	uint32_t from, to;

	if (!key)
		return 0;
	if (follow(st) || !(x = stack_of(st, key)))
		return -ENOMEM;
	from = bucket(st, made);
	if (!end) {
		x->made_bytes += bytes;
		x->made_count += count;
		return cell_add(&x->cells, STACKTIME_MADE, from, 0, bytes, count);
	}
	to = freed ? bucket(st, freed) : STACKTIME_HELD;
	if (to == from)
		return 0;
	x->spanning_bytes += bytes;
	if (!freed)
		x->held_bytes += bytes;
	return cell_add(&x->cells, STACKTIME_LIVE, from, to, bytes, count);
}

/* count events of kind (faults or temporary allocations) of key in the
 * bucket of time, added to the key's total of them. */
static int count_at(struct stacktime *st, const void *key, enum stacktime_kind kind, uint64_t time, uint64_t count)
{
	struct stacktime_stack *x;

	if (!key)
		return 0;
	if (follow(st) || !(x = stack_of(st, key)))
		return -ENOMEM;
	*(kind == STACKTIME_FAULTS ? &x->faults : &x->temporary) += count;
	return cell_add(&x->cells, kind, bucket(st, time), 0, 0, count);
}

int stacktime_faults(struct stacktime *st, const void *key, uint64_t time, uint64_t count)
{
	return count_at(st, key, STACKTIME_FAULTS, time, count);
}

int stacktime_temporary(struct stacktime *st, const void *key, uint64_t time, uint64_t count)
{
	return count_at(st, key, STACKTIME_TEMP, time, count);
}

int stacktime_finish(struct stacktime *st)
{
	return follow(st);
}
