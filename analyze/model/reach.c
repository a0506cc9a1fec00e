/*
 * analyze/model/reach.c: lost, indirectly lost or still reachable; see reach.h.
 */
#include "reach.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const reach_kind_names[REACH_NR] = { "unknown", "definitely lost", "indirectly lost", "possibly lost",
						 "still reachable" };
const char *const reach_kind_keys[REACH_NR] = { "unknown", "definitely_lost", "indirectly_lost", "possibly_lost",
						"still_reachable" };

struct block {
	uint64_t start, end;
	struct alloc_rec *rec;
};

struct edge {
	uint32_t from, to;
	uint32_t interior;	/* points past the block's start */
};

struct graph {
	struct block *blocks;
	size_t nr;
	struct edge *edges;
	size_t nr_edges, edges_alloc;
	uint32_t *first;	/* edges of block i: edges[first[i] .. first[i + 1]) */
	uint8_t *root;		/* ROOT_START and ROOT_INTERIOR bits: what of it a root points to */
	int glibc;		/* the heap is glibc's: its chunks' layout is known */
	uint64_t *freed;	/* the addresses of blocks freed and not reused, sorted */
	size_t nr_freed;
	/* What the heuristics read: words of the heap {where, value} and
	 * the vtables' addresses, sorted; and those turned off. */
	uint64_t (*words)[2];
	size_t nr_words;
	uint64_t *vtables;
	size_t nr_vtables;
	unsigned heuristics_off;
};

enum { ROOT_START = 1, ROOT_INTERIOR = 2 };

/* glibc's chunk of a block of size bytes: the header's 8 bytes and the
 * size, rounded up to 16, 32 at least. */
static uint64_t glibc_chunk_size(uint64_t size)
{
	uint64_t c = (size + 8 + 15) & ~15ull;

	return c < 32 ? 32 : c;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int block_cmp(const void *a, const void *b)
{
	const struct block *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int edge_cmp(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return (x->interior > y->interior) - (x->interior < y->interior);
}

const char *const reach_heuristic_names[REACH_HEUR_NR] = { "stdstring", "length64", "newarray",
							    "multipleinheritance" };

/* The word at where, as the scan kept it for the heuristics. */
static int word_at(const struct graph *g, uint64_t where, uint64_t *v)
{
	size_t lo = 0, hi = g->nr_words;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->words[mid][0] < where)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == g->nr_words || g->words[lo][0] != where)
		return 0;
	*v = g->words[lo][1];
	return 1;
}

static int is_vtable(const struct graph *g, uint64_t v)
{
	return g->nr_vtables && bsearch(&v, g->vtables, g->nr_vtables, sizeof(*g->vtables), u64_cmp) != NULL;
}

/* Whether a pointer what into the middle of block b is one C++ keeps as
 * a matter of course, as valgrind's --leak-check-heuristics judge it:
 * past an old std::string's header (length, capacity, count, then the
 * characters and a 0), past a length that is the rest of the block's
 * size, past a new[] array's count of elements whose size divides the
 * rest, or to a second base's vtable pointer in an object whose first
 * word is a vtable pointer too. Returns the heuristic, or -1. */
static int heuristic_of(const struct graph *g, const struct block *b, uint64_t what)
{
	uint64_t size = b->rec->size, w0, w1;

	if (!(g->heuristics_off & 1u << REACH_HEUR_STDSTRING) && what == b->start + 24 &&
	    word_at(g, b->start + 8, &w1) && 24 + w1 + 1 == size && word_at(g, b->start, &w0) && w0 <= w1)
		return REACH_HEUR_STDSTRING;
	if (what == b->start + 8 && word_at(g, b->start, &w0) && w0) {
		if (!(g->heuristics_off & 1u << REACH_HEUR_LENGTH64) && size - 8 == w0)
			return REACH_HEUR_LENGTH64;
		if (!(g->heuristics_off & 1u << REACH_HEUR_NEWARRAY) && size >= 8 && (size - 8) % w0 == 0)
			return REACH_HEUR_NEWARRAY;
	}
	if (!(g->heuristics_off & 1u << REACH_HEUR_MULTIPLEINHERITANCE) && !(what & 7) && word_at(g, what, &w1) &&
	    is_vtable(g, w1) && word_at(g, b->start, &w0) && is_vtable(g, w0))
		return REACH_HEUR_MULTIPLEINHERITANCE;
	return -1;
}

/* Scan part c of the trace, decoded into part (pointing into *buf).
 * Returns 0, or -1 with a reason in err. */
static int part_read(struct session *s, size_t c, unsigned char **buf, size_t *alloc, struct reach_part *part,
		     char *err, size_t errlen)
{
	long n = trace_chunk_payload(&s->r, s->reach_chunks[c], buf, alloc, err, errlen);

	if (n < 0)
		return -1;
	if (reach_part_decode(*buf, n, part)) {
		snprintf(err, errlen, "a memory scan in '%s' is malformed", s->path);
		return -1;
	}
	return 0;
}

/* The words and vtables of pid's scan, from all its parts. */
static int heuristics_load(struct session *s, struct graph *g, int pid, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t alloc = 0, words_alloc = 0, vt_alloc = 0;
	int ret = -1;

	for (size_t c = 0; c < s->nr_reach; c++) {
		struct reach_part part;

		if (part_read(s, c, &buf, &alloc, &part, err, errlen))
			goto out;
		if ((int)part.pid != pid || (!part.nr_words && !part.nr_vtables))
			continue;
		if (g->nr_words + part.nr_words > words_alloc) {
			size_t na = (g->nr_words + part.nr_words) * 2;
			void *v = realloc(g->words, na * sizeof(*g->words));

			if (!v)
				goto oom;
			g->words = v;
			words_alloc = na;
		}
		if (part.nr_words)
			memcpy(g->words + g->nr_words, part.words, part.nr_words * REACH_WORD_SIZE);
		g->nr_words += part.nr_words;
		if (g->nr_vtables + part.nr_vtables > vt_alloc) {
			size_t na = (g->nr_vtables + part.nr_vtables) * 2;
			uint64_t *v = realloc(g->vtables, na * sizeof(*v));

			if (!v)
				goto oom;
			g->vtables = v;
			vt_alloc = na;
		}
		if (part.nr_vtables)
			memcpy(g->vtables + g->nr_vtables, part.vtables, (size_t)part.nr_vtables * 8);
		g->nr_vtables += part.nr_vtables;
	}
	/* Each part's words are sorted, the parts in order: sort all the
	 * same, as a reader takes no writer's word for it. */
	if (g->nr_words > 1)
		qsort(g->words, g->nr_words, sizeof(*g->words), u64_cmp);
	if (g->nr_vtables > 1)
		qsort(g->vtables, g->nr_vtables, sizeof(*g->vtables), u64_cmp);
	ret = 0;
	goto out;
oom:
	snprintf(err, errlen, "out of memory");
out:
	free(buf);
	return ret;
}

/* The block holding address v, or -1. */
static long block_of(const struct graph *g, uint64_t v)
{
	size_t lo = 0, hi = g->nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->blocks[mid].start <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && v < g->blocks[lo - 1].end ? (long)lo - 1 : -1;
}

static int edge_add(struct graph *g, uint32_t from, uint32_t to, uint32_t interior)
{
	if (g->nr_edges == g->edges_alloc) {
		size_t n = g->edges_alloc ? g->edges_alloc * 2 : 4096;
		struct edge *v = realloc(g->edges, n * sizeof(*v));

		if (!v)
			return -1;
		g->edges = v;
		g->edges_alloc = n;
	}
	g->edges[g->nr_edges++] = (struct edge){ from, to, interior };
	return 0;
}

#define GLIBC_HEAP_MAX (64ull << 20)

/* Whether a region is heap: [heap], or anonymous memory holding a block
 * this recording saw allocated (outstanding, or freed and not reused).
 * Words there outside any block are free memory, no root. */
static int heap_region(const struct graph *g, uint64_t start, uint64_t end, uint32_t kind)
{
	long b;

	if (kind == REACH_REGION_HEAP)
		return 1;
	if (kind != REACH_REGION_ANON)
		return 0;
	/* glibc's other arenas are heaps of their own, each aligned to its
	 * largest size (64 MiB). Any other anonymous memory is the
	 * program's, whatever block the kernel merged into it: glibc's
	 * large blocks are mappings of their own, and the words outside
	 * them are roots. */
	if (g->glibc && start & (GLIBC_HEAP_MAX - 1))
		return 0;
	b = block_of(g, end - 1);
	if (b >= 0 && g->blocks[b].end > start)
		return 1;
	/* The nearest block below end may lie below start: look again. */
	{
		size_t lo = 0, hi = g->nr;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (g->blocks[mid].start < start)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < g->nr && g->blocks[lo].start < end)
			return 1;
	}
	/* A freed block in it: the first freed address from start on. */
	{
		size_t lo = 0, hi = g->nr_freed;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (g->freed[mid] < start)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo < g->nr_freed && g->freed[lo] < end;
	}
}

static struct alloc_rec *leader_of(struct alloc_rec *r)
{
	while (r->leader)
		r = r->leader;
	return r;
}

/* From the blocks on the stack, mark with kind those not marked yet that
 * their edges reach (start edges only when starts), pushing each. */
static void spread(struct graph *g, uint32_t *stack, size_t n, uint8_t kind, int starts, struct alloc_rec *leader)
{
	while (n) {
		uint32_t x = stack[--n];

		for (uint32_t e = g->first[x]; e < g->first[x + 1]; e++) {
			struct alloc_rec *r = g->blocks[g->edges[e].to].rec;

			if (r->reach != REACH_UNKNOWN || (starts && g->edges[e].interior))
				continue;
			r->reach = kind;
			r->leader = leader;
			stack[n++] = g->edges[e].to;
		}
	}
}

/* As memcheck marks: still reachable, a chain of pointers to the block's
 * start from a root; possibly lost, a chain from a root with a pointer
 * into its middle in it; the rest in cliques: a block nothing else
 * reached heads one, definitely lost, and what it reaches is indirectly
 * lost, charged to it. A clique met again by a later leader joins it. */
static void mark_all(struct graph *g, uint32_t *stack)
{
	size_t n = 0;

	for (size_t i = 0; i < g->nr; i++)
		g->blocks[i].rec->reach = REACH_UNKNOWN, g->blocks[i].rec->leader = NULL;
	for (size_t i = 0; i < g->nr; i++)
		if (g->root[i] & ROOT_START) {
			g->blocks[i].rec->reach = REACH_REACHABLE;
			stack[n++] = (uint32_t)i;
		}
	spread(g, stack, n, REACH_REACHABLE, 1, NULL);
	/* What a root or a reachable block points into the middle of. */
	n = 0;
	for (size_t i = 0; i < g->nr; i++) {
		struct alloc_rec *r = g->blocks[i].rec;

		if (r->reach == REACH_UNKNOWN && (g->root[i] & ROOT_INTERIOR)) {
			r->reach = REACH_POSSIBLE;
			stack[n++] = (uint32_t)i;
		}
		if (r->reach == REACH_REACHABLE)
			for (uint32_t e = g->first[i]; e < g->first[i + 1]; e++) {
				struct alloc_rec *c = g->blocks[g->edges[e].to].rec;

				if (c->reach == REACH_UNKNOWN) {
					c->reach = REACH_POSSIBLE;
					stack[n++] = g->edges[e].to;
				}
			}
	}
	spread(g, stack, n, REACH_POSSIBLE, 0, NULL);
	/* Cliques, in address order: a later leader that reaches an
	 * earlier one takes it, and what it held, into its own. */
	for (size_t i = 0; i < g->nr; i++) {
		struct alloc_rec *r = g->blocks[i].rec;

		if (r->reach != REACH_UNKNOWN)
			continue;
		r->reach = REACH_LOST;
		n = 0;
		stack[n++] = (uint32_t)i;
		while (n) {
			uint32_t x = stack[--n];

			for (uint32_t e = g->first[x]; e < g->first[x + 1]; e++) {
				struct alloc_rec *c = g->blocks[g->edges[e].to].rec;

				if (c == r || (c->reach != REACH_UNKNOWN && c->reach != REACH_LOST))
					continue;
				c->reach = REACH_INDIRECT;
				c->leader = r;
				stack[n++] = g->edges[e].to;
			}
		}
	}
	/* Charges follow to the top leader. */
	for (size_t i = 0; i < g->nr; i++) {
		struct alloc_rec *r = g->blocks[i].rec;

		if (r->reach == REACH_INDIRECT)
			r->leader = leader_of(r);
	}
}

static int classify_pid(struct session *s, struct allocs *a, int pid, struct reach_stats *st, char *err,
			size_t errlen)
{
	struct hm_slot *ps = hashmap_u64_find(&a->procs, (uint32_t)pid), *fs = hashmap_u64_find(&a->freed, (uint32_t)pid);
	struct hashmap empty, *freed = fs ? fs->ptr : &empty;
	struct graph g = { 0 };
	unsigned char *buf = NULL;
	size_t alloc = 0;
	uint32_t *stack = NULL;
	int ret = -1, seen = 0;
	uint8_t *heapish = NULL;

	hashmap_init(&empty, 0);
	g.glibc = allocs_glibc_heap(a, s, pid);
	if (ps)
		g.blocks = malloc((((struct hashmap *)ps->ptr)->nr + 1) * sizeof(*g.blocks));
	if (ps && !g.blocks)
		goto oom;
	if (ps)
		hashmap_for_each((struct hashmap *)ps->ptr, r) {
			struct alloc_rec *rec = r->ptr;

			/* A block of 0 bytes still has its address. */
			g.blocks[g.nr++] = (struct block){ rec->ptr, rec->ptr + (rec->size ? rec->size : 1), rec };
		}
	if (g.nr > 1)
		qsort(g.blocks, g.nr, sizeof(*g.blocks), block_cmp);
	/* Sorted once, for every region's question: a hash walk per region
	 * made the check mappings times freed blocks. */
	g.freed = malloc((freed->nr + 1) * sizeof(*g.freed));
	if (!g.freed)
		goto oom;
	hashmap_for_each(freed, slot) g.freed[g.nr_freed++] = slot->key;
	if (g.nr_freed > 1)
		qsort(g.freed, g.nr_freed, sizeof(*g.freed), u64_cmp);
	g.root = calloc(g.nr + 1, 1);
	if (!g.root)
		goto oom;
	g.heuristics_off = s->o.leak_heuristics_off;
	if (heuristics_load(s, &g, pid, err, errlen))
		goto out;
	for (size_t c = 0; c < s->nr_reach; c++) {
		struct reach_part part;

		if (part_read(s, c, &buf, &alloc, &part, err, errlen))
			goto out;
		if ((int)part.pid != pid)
			continue;
		if (!seen++) {
			st->scan_ns += part.scan_ns;
			st->scanned_bytes += part.scanned_bytes;
		}
		st->pairs += part.nr_pairs;
		free(heapish);
		heapish = malloc(part.nr_regions + 1);
		if (!heapish)
			goto oom;
		for (uint32_t i = 0; i < part.nr_regions; i++) {
			uint64_t lo, hi;
			uint32_t kind;

			memcpy(&lo, part.regions + i * REACH_REGION_SIZE, 8);
			memcpy(&hi, part.regions + i * REACH_REGION_SIZE + 8, 8);
			memcpy(&kind, part.regions + i * REACH_REGION_SIZE + 16, 4);
			heapish[i] = lo < hi && heap_region(&g, lo, hi, kind);
		}
		for (uint64_t i = 0; i < part.nr_pairs; i++) {
			uint64_t where, what;
			long to, from;
			int interior;

			memcpy(&where, part.pairs + i * REACH_PAIR_SIZE, 8);
			memcpy(&what, part.pairs + i * REACH_PAIR_SIZE + 8, 8);
			if ((to = block_of(&g, what)) < 0)
				continue;
			/* glibc's header of the chunk after it, which the
			 * arena's bins and top point to. */
			if (g.glibc && what == g.blocks[to].start - 16 + glibc_chunk_size(g.blocks[to].rec->size))
				continue;
			interior = what != g.blocks[to].start;
			if (interior && heuristic_of(&g, &g.blocks[to], what) >= 0)
				interior = 0;
			if (!where) {
				g.root[to] |= interior ? ROOT_INTERIOR : ROOT_START; /* a register */
				continue;
			}
			if ((from = block_of(&g, where)) >= 0) {
				/* A block of 0 bytes holds nothing: the word at its
				 * address is the allocator's (mimalloc's free list
				 * link), as memcheck has it. */
				if (!g.blocks[from].rec->size)
					continue;
				if (from != to && edge_add(&g, from, to, interior))
					goto oom;
				continue;
			}
			/* Outside every block: free heap memory, or a root. The
			 * regions come in address order, as the maps list them. */
			{
				uint32_t lo = 0, hi = part.nr_regions;

				while (lo < hi) {
					uint32_t mid = (lo + hi) / 2;
					uint64_t start;

					memcpy(&start, part.regions + mid * REACH_REGION_SIZE, 8);
					if (start <= where)
						lo = mid + 1;
					else
						hi = mid;
				}
				if (lo && !heapish[lo - 1])
					g.root[to] |= interior ? ROOT_INTERIOR : ROOT_START;
			}
		}
	}
	if (!seen) {
		ret = 0;
		goto out;
	}
	/* The edges by their source, each once. */
	if (g.nr_edges > 1)
		qsort(g.edges, g.nr_edges, sizeof(*g.edges), edge_cmp);
	g.first = calloc(g.nr + 2, sizeof(*g.first));
	stack = malloc((g.nr + 1) * sizeof(*stack));
	if (!g.first || !stack)
		goto oom;
	for (size_t i = 0; i < g.nr_edges; i++)
		g.first[g.edges[i].from + 1]++;
	for (size_t i = 0; i < g.nr; i++)
		g.first[i + 1] += g.first[i];
	mark_all(&g, stack);
	st->processes++;
	ret = 0;
	goto out;
oom:
	snprintf(err, errlen, "out of memory");
out:
	hashmap_release(&empty);
	free(buf);
	free(heapish);
	free(stack);
	free(g.blocks);
	free(g.freed);
	free(g.words);
	free(g.vtables);
	free(g.edges);
	free(g.first);
	free(g.root);
	return ret;
}

int reach_classify(struct session *s, struct allocs *a, struct reach_stats *st, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t alloc = 0;
	struct hashmap done;
	int ret = 0;

	memset(st, 0, sizeof(*st));
	hashmap_init(&done, 0);
	/* The processes scanned: each part says whose it is. */
	for (size_t c = 0; c < s->nr_reach && !ret; c++) {
		struct reach_part part;
		long n = trace_chunk_payload(&s->r, s->reach_chunks[c], &buf, &alloc, err, errlen);
		int created = 0;

		if (n < 0 || reach_part_decode(buf, n, &part)) {
			if (n >= 0)
				snprintf(err, errlen, "a memory scan in '%s' is malformed", s->path);
			ret = -1;
			break;
		}
		if (!hashmap_u64(&done, part.pid, &created)) {
			snprintf(err, errlen, "out of memory");
			ret = -1;
		} else if (created) {
			ret = classify_pid(s, a, part.pid, st, err, errlen);
		}
	}
	hashmap_release(&done);
	free(buf);
	return ret;
}
