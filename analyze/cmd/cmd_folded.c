/*
 * analyze/cmd/cmd_folded.c: memsight folded, Brendan Gregg's folded stack format
 * (comm;outer;...;inner WEIGHT), one weight per run (report --html folds
 * malloc by several weights from one replay); and memsight functions,
 * the same stacks summed per function (self: where the stack ends; total:
 * anywhere in it), perf report's and heaptrack's flat table. Stacks are
 * summed by their raw addresses first and named once each, so the cost per
 * sample is a hash, not a symbol lookup.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "json.h"
#include "../../formats/allocfns.h"
#include "../model/allocs.h"
#include "../model/heapprof.h"
#include "../model/kallocs.h"
#include "../model/memops.h"
#include "../model/reach.h"
#include "../model/stacktab.h"
#include "../model/suppress.h"

static const char usage_text[] =
	"usage: memsight folded [options] [FILE]\n"
	"\n"
	"Folded stacks, one line per distinct stack: comm;outer;...;inner WEIGHT,\n"
	"for flame graphs (memsight flamegraph, flamegraph.pl, speedscope).\n";

static const char functions_usage[] =
	"usage: memsight functions [options] [FILE]\n"
	"\n"
	"The same stacks as folded, per function: SELF, the weight of the stacks\n"
	"that end in it (for malloc, in the first frame that is not an allocation\n"
	"function), and TOTAL, of those it is anywhere in (perf report's children),\n"
	"largest first.\n";

enum weight { W_COUNT, W_BYTES, W_PAGES, W_LEAKED, W_LATENCY, W_PEAK, W_LOST };
static const char *const weight_names[] = { [W_COUNT] = "count", [W_BYTES] = "bytes", [W_PAGES] = "pages",
					   [W_LEAKED] = "leaked", [W_LATENCY] = "latency", [W_PEAK] = "peak",
					   [W_LOST] = "lost" };
enum fold_source { FS_MEMOPS, FS_MALLOC, FS_KMEM, FS_RECLAIM, FS_SWAP };

struct folded {
	enum fold_source src;
	struct hashmap begins;	/* reclaim: tid -> struct reclaim_begin * */
	enum memop_kind kind;
	enum weight weight;
	long pid;
	unsigned fault_types;	/* --fault-type: bits of enum fault_kind; 0 for all */
	int src_given, weight_given; /* -e, -w */
	struct suppress sup;	/* for leaked: what leaks leaves out, left out here too */
	uint64_t period;	/* GROUP/N: each recorded operation stands for N (the largest seen) */
	int estimate;		/* the weights are estimates (a sampled recording) */
	int header;		/* --header */
	struct stacktab tab;
	/* memsight functions */
	int flat;
	uint64_t top;		/* rows shown, 0 for all */
	int by_total;		/* --sort total */
	int json;
	const struct session *sess; /* the trace folded, once fold began */
	const char *path;
	/* What the replay builds, by source: malloc's allocations (and the
	 * heap at its peak for -w peak), kmem's, the memory operations. */
	struct allocs *a;	/* the replay's (cmd_allocs_shared) */
	struct heapprof h;
	struct kallocs k;
	struct memops_state *mo;
	int peak, leaked;
	/* malloc: several weights from one replay, each into its file
	 * (outs NULL: one, to standard output). */
	enum weight ws[W_LOST + 1];
	FILE **outs;
	int nw;
};

static int on_op(struct session *s, const struct memop *op, void *arg)
{
	struct folded *f = arg;
	uint64_t w;

	if (f->pid >= 0 && op->pid != f->pid)
		return 0;
	if (f->src == FS_SWAP) {
		/* A major fault on anonymous memory reads it back from swap. */
		if (op->kind != MEMOP_FAULT_MAJ || !op->map || (op->map->name && op->map->name[0] == '/' &&
								 op->map->name[1] != '/'))
			return 0;
		if (op->weight > f->period)
			f->period = op->weight;
		return stacktab_add(&f->tab, s, op->stack, op->weight) ? 0 : -1;
	}
	if (!memop_is(op, f->kind))
		return 0;
	if (op->kind == MEMOP_FAULT && f->fault_types && !(op->fault_kinds & f->fault_types))
		return 0;
	switch (f->weight) {
	case W_COUNT:
		w = 1;
		break;
	case W_BYTES:
		w = op->grow;
		break;
	default:
		w = (op->grow + s->page_size - 1) / s->page_size;
		break;
	}
	/* GROUP/N: each recorded operation stands for N. A brk's growth
	 * runs from the break the last recorded call left, so it holds the
	 * unrecorded calls between already. */
	if (op->weight > f->period)
		f->period = op->weight;
	if (op->kind != MEMOP_BRK || f->weight == W_COUNT)
		w *= op->weight;
	return w && !stacktab_add(&f->tab, s, op->stack, w) ? -1 : 0;
}

struct line {
	const char *text;
	uint64_t weight;
};

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* Append one frame name to buf, replacing ';' (the separator) and spaces at
 * the ends, which would break the format. */
static size_t put_frame(char *buf, size_t at, size_t cap, const char *name, const char *suffix)
{
	for (const char *p = name; *p && at + 1 < cap; p++)
		buf[at++] = *p == ';' ? ':' : *p == '\n' ? ' ' : *p;
	for (const char *p = suffix; *p && at + 1 < cap; p++)
		buf[at++] = *p;
	buf[at] = 0;
	return at;
}

/* One group of entries that print alike, added to the lines by text (two
 * groups can still make one text, the way put_frame cuts and replaces). */
static int add_line(const struct stack_entry *e, uint64_t weight, void *arg)
{
	struct hashmap *lines = arg;
	char buf[65536], name[512];
	struct frame fr[STACK_MAX_FRAMES];
	size_t at = put_frame(buf, 0, sizeof(buf), e->comm, "");
	struct hm_slot *l;

	for (int i = stack_entry_frames(e, fr, STACK_MAX_FRAMES) - 1; i >= 0; i--) {
		buf[at++] = ';';
		at = put_frame(buf, at, sizeof(buf) - 64, frame_name(&fr[i], name, sizeof(name), 0),
			       fr[i].kernel ? "_[k]" : "");
	}
	l = hashmap_str(lines, buf, NULL);
	if (!l)
		return -1;
	l->val += weight;
	return 0;
}

static const char *fold_event_name(const struct folded *f)
{
	return f->src == FS_MALLOC	? "malloc"
	       : f->src == FS_KMEM	? "kmem"
	       : f->src == FS_RECLAIM	? "reclaim"
	       : f->src == FS_SWAP	? "swap"
	       : f->kind == MEMOP_BRK	? "brk"
	       : f->kind == MEMOP_MMAP ? "mmap"
				       : "faults";
}

/* memsight functions: one row per function (and object). stamp: the last
 * group whose total it took, so a recursive function counts once. */
struct fn_row {
	uint64_t self, total, stamp;
};

struct flat {
	struct hashmap rows;	/* "function\tobject\tk" -> struct fn_row * */
	uint64_t groups, all;
	int skip_alloc;		/* self goes past the allocation functions a stack ends in */
};

static int flat_add(const struct stack_entry *e, uint64_t weight, void *arg)
{
	struct flat *fl = arg;
	struct frame fr[STACK_MAX_FRAMES];
	int n = stack_entry_frames(e, fr, STACK_MAX_FRAMES), self = 0;
	char key[1024], name[512];

	if (!weight)
		return 0;
	fl->groups++;
	fl->all += weight;
	/* For allocations, the stack's first frames are the allocator's
	 * entry points (and memsight's wrapper): the cost is its caller's. */
	while (fl->skip_alloc && self + 1 < n && fr[self].sym && alloc_fn_is_entry(fr[self].sym))
		self++;
	for (int i = 0; i < n; i++) {
		/* An unnamed frame's name is its object's already. */
		const char *obj = fr[i].obj && fr[i].sym ? strrchr(fr[i].obj, '/') : NULL;
		struct hm_slot *slot;
		struct fn_row *r;

		snprintf(key, sizeof(key), "%s\t%s\t%d", frame_name(&fr[i], name, sizeof(name), 0),
			 obj ? obj + 1 : fr[i].obj && fr[i].sym ? fr[i].obj : "", fr[i].kernel);
		if (!(slot = hashmap_str(&fl->rows, key, NULL)) || (!slot->ptr && !(slot->ptr = calloc(1, sizeof(*r)))))
			return -1;
		r = slot->ptr;
		if (i == self)
			r->self += weight;
		if (r->stamp != fl->groups) {
			r->total += weight;
			r->stamp = fl->groups;
		}
	}
	return 0;
}

struct flat_line {
	const char *key;
	const struct fn_row *r;
};

static int by_self(const void *a, const void *b)
{
	const struct flat_line *x = a, *y = b;

	if (x->r->self != y->r->self)
		return x->r->self < y->r->self ? 1 : -1;
	if (x->r->total != y->r->total)
		return x->r->total < y->r->total ? 1 : -1;
	return strcmp(x->key, y->key);
}

static int by_total(const void *a, const void *b)
{
	const struct flat_line *x = a, *y = b;

	if (x->r->total != y->r->total)
		return x->r->total < y->r->total ? 1 : -1;
	return by_self(a, b);
}

/* The key's three fields, split into the caller's buffers. */
static void flat_key(const char *key, char *fn, size_t fl, char *obj, size_t ol, int *kernel)
{
	const char *t1 = strchr(key, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;

	snprintf(fn, fl, "%.*s", t1 ? (int)(t1 - key) : (int)strlen(key), key);
	snprintf(obj, ol, "%.*s", t1 && t2 ? (int)(t2 - t1 - 1) : 0, t1 ? t1 + 1 : "");
	*kernel = t2 ? atoi(t2 + 1) : 0;
}

static int print_flat(struct folded *f)
{
	struct flat fl = { .skip_alloc = f->src == FS_MALLOC };
	struct flat_line *v = NULL;
	size_t n = 0, shown;
	int ret = 0;

	hashmap_init(&fl.rows, 1);
	if (stacktab_by_names(&f->tab, flat_add, &fl) ||
	    !(v = malloc((fl.rows.nr ? fl.rows.nr : 1) * sizeof(*v)))) {
		ret = msg_error("out of memory");
		goto out;
	}
	hashmap_for_each(&fl.rows, slot) v[n++] = (struct flat_line){ slot->skey, slot->ptr };
	if (!n)
		msg_note("no function in '%s': no %s stack weighs anything by %s", f->path, fold_event_name(f),
			 weight_names[f->weight]);
	if (n > 1)
		qsort(v, n, sizeof(*v), f->by_total ? by_total : by_self);
	shown = f->top < n ? f->top : n;
	if (f->json) {
		struct json j;

		json_init(&j, stdout);
		json_begin(&j, NULL);
		json_str(&j, "trace", f->path);
		json_u64(&j, "lost", f->sess ? cmd_lost(f->sess) : 0);
		json_str(&j, "event", fold_event_name(f));
		json_str(&j, "weight", weight_names[f->weight]);
		json_bool(&j, "estimate", f->estimate || f->period > 1);
		json_u64(&j, "total", fl.all);
		json_u64(&j, "functions_total", n);
		json_u64(&j, "functions_shown", shown);
		json_begin_array(&j, "functions");
		for (size_t i = 0; i < shown; i++) {
			char fn[512], obj[512];
			int k;

			flat_key(v[i].key, fn, sizeof(fn), obj, sizeof(obj), &k);
			json_begin(&j, NULL);
			json_str(&j, "function", fn);
			if (obj[0])
				json_str(&j, "object", obj);
			else
				json_null(&j, "object");
			json_bool(&j, "kernel", k);
			json_u64(&j, "self", v[i].r->self);
			json_u64(&j, "total", v[i].r->total);
			json_end(&j);
		}
		json_end(&j);
		json_end(&j);
		goto out;
	}
	printf("# memsight functions of '%s': %s, weight %s, %llu in all%s; %zu functions%s\n", f->path,
	       fold_event_name(f), weight_names[f->weight], (unsigned long long)fl.all,
	       f->estimate || f->period > 1 ? " (ESTIMATE: a sampled recording)" : "", n,
	       shown < n ? ", the first shown (--top)" : "");
	printf("%14s %6s %14s %6s  %s\n", "SELF", "SELF%", "TOTAL", "TOTAL%", "FUNCTION [OBJECT]");
	for (size_t i = 0; i < shown; i++) {
		char fn[512], obj[512];
		int k;

		flat_key(v[i].key, fn, sizeof(fn), obj, sizeof(obj), &k);
		printf("%14llu %5.1f%% %14llu %5.1f%%  %s%s%s%s%s\n", (unsigned long long)v[i].r->self,
		       fl.all ? 100.0 * v[i].r->self / fl.all : 0.0, (unsigned long long)v[i].r->total,
		       fl.all ? 100.0 * v[i].r->total / fl.all : 0.0, fn, k ? " [kernel]" : "", obj[0] ? " [" : "", obj,
		       obj[0] ? "]" : "");
	}
out:
	hashmap_for_each(&fl.rows, slot) free(slot->ptr);
	hashmap_release(&fl.rows);
	free(v);
	return ret;
}

static int print_folded(struct folded *f)
{
	struct hashmap lines;
	struct line *v;
	size_t n = 0;

	if (f->flat)
		return print_flat(f);
	/* No count at its end: flamegraph.pl and speedscope skip it. */
	if (f->header)
		printf("# event %s weight %s estimate %s\n", fold_event_name(f), weight_names[f->weight],
		       f->estimate || f->period > 1 ? "yes" : "no");

	hashmap_init(&lines, 1);
	if (stacktab_by_names(&f->tab, add_line, &lines)) {
		hashmap_release(&lines);
		return msg_error("out of memory");
	}
	v = malloc((lines.nr ? lines.nr : 1) * sizeof(*v));
	if (!v) {
		hashmap_release(&lines);
		return msg_error("out of memory");
	}
	hashmap_for_each(&lines, slot) v[n++] = (struct line){ slot->skey, slot->val };
	if (!n)
		msg_note("nothing to fold in '%s': no %s stack weighs anything by %s", f->path, fold_event_name(f),
			 weight_names[f->weight]);
	if (n > 1)
		qsort(v, n, sizeof(*v), line_cmp);
	for (size_t i = 0; i < n; i++)
		printf("%s %llu\n", v[i].text, (unsigned long long)v[i].weight);
	free(v);
	hashmap_release(&lines);
	return 0;
}

/* One allocation stack and the bytes it allocated, kept while the table's
 * weights are set for each weight folded. */
struct alloc_bytes {
	struct stack_entry *e;
	uint64_t bytes;
};

/* Set each entry's weight to what weight w gives it. */
static void alloc_weights(struct folded *f, struct session *s, struct allocs *a, struct heapprof *h,
			  const struct alloc_bytes *orig, size_t n, enum weight w)
{
	for (size_t i = 0; i < n; i++)
		orig[i].e->weight = w == W_COUNT ? orig[i].e->count * a->sample : w == W_BYTES ? orig[i].bytes * a->sample : 0;
	if (w == W_PEAK)
		hashmap_for_each(&h->sites, slot) {
			struct heap_site *site = slot->ptr;

			site->stack->weight = site->at_peak * a->sample;
		}
	if (w == W_LEAKED || w == W_LOST) {
		struct frame fr[STACK_MAX_FRAMES];
		uint64_t left_out = 0;

		hashmap_for_each(&a->procs, p) hashmap_for_each((struct hashmap *)p->ptr, r) {
			struct alloc_rec *rec = r->ptr;

			if (!rec->stack || (s->nr_reach && rec->reach == REACH_REACHABLE) ||
			    (w == W_LOST && rec->reach != REACH_LOST && rec->reach != REACH_POSSIBLE))
				continue;
			rec->stack->weight += alloc_rec_bytes(rec) * a->sample;
		}
		for (size_t i = 0; i < n; i++) {
			struct stack_entry *e = orig[i].e;

			if (e->weight && suppress_match(&f->sup, fr, stack_entry_frames(e, fr, STACK_MAX_FRAMES))) {
				left_out += e->weight;
				e->weight = 0;
			}
		}
		if (left_out)
			msg_note("left out %llu bytes still held that leaks suppresses too (libc's one-time allocations%s; "
				 "--no-default-suppressions keeps them)",
				 (unsigned long long)left_out, f->sup.nr ? " and --suppress" : "");
	}
}

/* Allocations fold by their own stack table: weights are per entry. One
 * replay folds them by each of the weights f->ws. Set up: 0, or the exit
 * status (said). */
static int fold_allocs_begin(struct folded *f, struct session *s)
{
	if (!allocs_recorded(s))
		return msg_error("'%s' has no allocation events: record them with 'memsight record -e malloc'", s->path), 1;
	for (int i = 0; i < f->nw; i++) {
		f->peak |= f->ws[i] == W_PEAK;
		f->leaked |= f->ws[i] == W_LEAKED || f->ws[i] == W_LOST;
		/* What leaks counts as lost (a --leak-check scan): not what is
		 * still reachable; -w lost, definitely and possibly lost, as
		 * the gate. */
		if (f->ws[i] == W_LOST && !s->nr_reach)
			return msg_error("-w lost needs a scan of the heap: record with --leak-check (-w leaked weighs what "
					 "is still held)"), 1;
	}
	heapprof_init(&f->h);
	if (!(f->a = cmd_allocs_shared(s, f->peak ? heapprof_cb : NULL, &f->h)))
		return msg_error("out of memory"), 1;
	return 0;
}

static int fold_allocs_end(struct folded *f, struct session *s)
{
	struct allocs *a = f->a;
	struct stacktab own;
	struct alloc_bytes *orig = NULL;
	size_t n = 0;
	char err[512];
	int ret = 1;

	heapprof_finish(&f->h);
	if (f->leaked && s->nr_reach) {
		struct reach_stats rst = { 0 };

		if (reach_classify(s, a, &rst, err, sizeof(err))) {
			msg_error("%s", err);
			return 1;
		}
	}
	stacktab_for_each(&a->stacks, e) n++;
	if (!(orig = malloc((n ? n : 1) * sizeof(*orig))))
		return msg_error("out of memory"), 1;
	n = 0;
	stacktab_for_each(&a->stacks, e) orig[n++] = (struct alloc_bytes){ e, e->weight };
	/* Print from the allocation stacks: the table lent, and given back
	 * with its weights as they were, for the other views of the replay. */
	own = f->tab;
	f->tab = a->stacks;
	f->estimate = a->sample > 1 || a->rate;
	if (a->sample > 1)
		msg_note("sampled recording (-s %u): weights are estimates, scaled by %u",
			a->sample, a->sample);
	if (a->rate)
		msg_note("sampled recording (the sampler kept one allocation in about %llu bytes): weights are estimates",
			 (unsigned long long)a->rate);
	ret = 0;
	for (int i = 0; i < f->nw && !ret; i++) {
		int saved = f->outs ? cmd_stdout_to(f->outs[i]) : -1;

		if (f->outs && saved < 0) {
			msg_error("cannot write the folded stacks: %s", strerror(errno));
			ret = 1;
			break;
		}
		alloc_weights(f, s, a, &f->h, orig, n, f->ws[i]);
		f->weight = f->ws[i];
		ret = print_folded(f) ? 1 : 0;
		if (f->outs)
			cmd_stdout_restore(saved);
	}
	for (size_t i = 0; i < n; i++)
		orig[i].e->weight = orig[i].bytes;
	a->stacks = f->tab;
	f->tab = own;
	free(orig);
	return ret;
}

/* Kernel allocations fold by the kallocs stack table, as malloc does. */
static int fold_kmem_end(struct folded *f, struct session *s)
{
	struct kallocs *k = &f->k;

	stacktab_for_each(&k->stacks, e) {
		e->weight = f->weight == W_COUNT ? e->count * k->period
			    : f->weight == W_BYTES ? e->weight * k->period
			    : f->weight == W_PAGES ? (e->weight * k->period + s->page_size - 1) / s->page_size : 0;
	}
	if (f->weight == W_LEAKED)
		for (int c = 0; c < KA_NR; c++)
			hashmap_for_each(&k->live[c], r) {
				struct kalloc_rec *rec = r->ptr;

				if (rec->stack)
					rec->stack->weight += rec->bytes * k->period;
			}
	f->period = k->period;
	if (!f->tab.kernel)
		msg_note("kmem stacks keep their kernel frames");
	stacktab_release(&f->tab);
	f->tab = k->stacks;
	stacktab_init(&k->stacks, 1, 1);
	return print_folded(f) ? 1 : 0;
}

/* Reclaim: each begin's stack weighs its latency, to its end. */
struct reclaim_begin {
	struct stack_entry *stack;
	uint64_t time;
};

static int on_reclaim(struct session *s, struct sample *smp, void *arg)
{
	struct folded *f = arg;
	enum ev_kind k = smp->ev->kind;
	struct reclaim_begin *b;
	struct hm_slot *slot;

	if (f->pid >= 0 && smp->pid != (uint32_t)f->pid)
		return 0;
	if (k == EVK_DIRECT_RECLAIM_BEGIN || k == EVK_MEMCG_RECLAIM_BEGIN) {
		slot = hashmap_u64(&f->begins, smp->tid, NULL);
		if (!slot || (!slot->ptr && !(slot->ptr = calloc(1, sizeof(*b)))))
			return -1;
		b = slot->ptr;
		b->stack = smp->nr_ips ? stacktab_add(&f->tab, s, smp, 0) : NULL;
		b->time = smp->time;
		return 0;
	}
	if (k == EVK_DIRECT_RECLAIM_END || k == EVK_MEMCG_RECLAIM_END) {
		slot = hashmap_u64_find(&f->begins, smp->tid);
		b = slot ? slot->ptr : NULL;
		if (b && b->stack && b->time) {
			b->stack->weight += f->weight == W_LATENCY ? (smp->time - b->time) / 1000 : 1;
			b->time = 0;
		}
	}
	return 0;
}

static int opt_event(const struct opt *o, const char *arg, void *ctx)
{
	static const struct { const char *name; enum fold_source src; enum memop_kind kind; } events[] = {
		{ "brk", FS_MEMOPS, MEMOP_BRK },	 { "mmap", FS_MEMOPS, MEMOP_MMAP },
		{ "faults", FS_MEMOPS, MEMOP_FAULT },	 { "page-faults", FS_MEMOPS, MEMOP_FAULT },
		{ "malloc", FS_MALLOC, MEMOP_FAULT },	 { "kmem", FS_KMEM, MEMOP_FAULT },
		{ "reclaim", FS_RECLAIM, MEMOP_FAULT }, { "swap", FS_SWAP, MEMOP_FAULT },
	};
	struct folded *f = o->value;

	(void)ctx;
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		if (!strcmp(arg, events[i].name)) {
			f->src = events[i].src;
			f->kind = events[i].kind;
			f->src_given = 1;
			return 0;
		}
	}
	return msg_error("unknown event '%s' for folded stacks: use brk, mmap, faults, malloc, kmem, reclaim or swap",
			 arg);
}

static int opt_weight(const struct opt *o, const char *arg, void *ctx)
{
	const char *const *names = weight_names;
	struct folded *f = o->value;

	(void)ctx;
	for (size_t i = 0; i < sizeof(weight_names) / sizeof(weight_names[0]); i++) {
		if (!strcmp(arg, names[i])) {
			f->weight = i;
			f->weight_given = 1;
			return 0;
		}
	}
	return msg_error("unknown weight '%s': use count, bytes, pages, leaked, lost, peak or latency", arg);
}

/* Which weights each source has. */
static int weight_applies(const struct folded *f)
{
	return f->weight == W_COUNT || (f->weight == W_BYTES && f->src != FS_RECLAIM && f->src != FS_SWAP) ||
	       (f->weight == W_PAGES && (f->src == FS_MEMOPS || f->src == FS_KMEM)) ||
	       (f->weight == W_LEAKED && (f->src == FS_MALLOC || f->src == FS_KMEM)) ||
	       (f->weight == W_LOST && f->src == FS_MALLOC) ||
	       (f->weight == W_PEAK && f->src == FS_MALLOC) || (f->weight == W_LATENCY && f->src == FS_RECLAIM);
}

/* What the replay builds for f, by its source: 0, or the exit status
 * (said). */
static int fold_begin(struct folded *f, struct session *s)
{
	f->sess = s;
	switch (f->src) {
	case FS_MALLOC:
		return fold_allocs_begin(f, s);
	case FS_KMEM:
		if (cmd_need_group(s, "kernel allocation", "kmem", NULL))
			return 1;
		if (kallocs_init(&f->k, s, f->pid))
			return msg_error("out of memory"), 1;
		return 0;
	case FS_RECLAIM:
		return cmd_need_group(s, "reclaim", "reclaim", NULL) ? 1 : 0;
	default:
		if (!(f->mo = memops_new(s, on_op, f)))
			return msg_error("out of memory"), 1;
		return 0;
	}
}

static int fold_sample(struct session *s, struct sample *smp, void *arg)
{
	struct folded *f = arg;

	switch (f->src) {
	case FS_MALLOC:
		return 0; /* paired by the replay */
	case FS_KMEM:
		return kallocs_sample(&f->k, s, smp);
	case FS_RECLAIM:
		return on_reclaim(s, smp, f);
	default:
		return memops_sample(f->mo, smp);
	}
}

/* After the replay: print (unless the replay failed), and release. */
static int fold_end(struct session *s, void *arg, int print)
{
	struct folded *f = arg;
	int ret = 1;

	switch (f->src) {
	case FS_MALLOC:
		if (print)
			ret = fold_allocs_end(f, s);
		heapprof_release(&f->h);
		break;
	case FS_KMEM:
		if (print)
			ret = fold_kmem_end(f, s);
		kallocs_release(&f->k);
		break;
	case FS_RECLAIM:
		if (print)
			ret = print_folded(f) ? 1 : 0;
		break;
	default:
		memops_free(f->mo);
		if (print && f->period > 1)
			msg_note("sampled recording (one event in %llu kept): weights are estimates, scaled by %llu",
				 (unsigned long long)f->period, (unsigned long long)f->period);
		if (print)
			ret = print_folded(f) ? 1 : 0;
		break;
	}
	hashmap_for_each(&f->begins, slot) free(slot->ptr);
	hashmap_release(&f->begins);
	stacktab_release(&f->tab);
	suppress_release(&f->sup);
	free(f);
	return ret;
}

/* f (malloc'd) as the view v of s, once its options are read. */
static int fold_view(struct folded *f, struct session *s, struct cmd_view *v)
{
	int r;

	hashmap_init(&f->begins, 0);
	if ((r = fold_begin(f, s))) {
		f->src = FS_RECLAIM; /* nothing of a source's to release */
		fold_end(s, f, 0);
		return r;
	}
	v->sample = fold_sample;
	v->end = fold_end;
	v->arg = f;
	return -1;
}

/* What folded and functions both take. */
#define FOLD_OPTIONS                                                                                    \
	OPT_CALLBACK('e', "event", f, "EVENT",                                                         \
		     "brk, mmap, faults (default when recorded), malloc (default\n"                    \
		     "otherwise, weighed by leaked), kmem (kernel allocations),\n"                     \
		     "reclaim (direct and memcg) or swap (major faults on anonymous memory)",          \
		     opt_event),                                                                        \
		OPT_CALLBACK('w', "weight", f, "WEIGHT",                                               \
			     "count (default), bytes or pages; for malloc and kmem: leaked\n"           \
			     "(outstanding bytes; with --leak-check, not still reachable), bytes\n"     \
			     "(allocated) or count (allocations), and pages for kmem; for malloc\n"    \
			     "also peak (bytes held when the heap was largest) and lost (with\n"       \
			     "--leak-check: definitely and possibly lost); for reclaim: latency\n"     \
			     "(microseconds) or count",                                                  \
			     opt_weight),                                                               \
		OPT_PID(&f->pid), OPT_FAULT_TYPE(&f->fault_types),                                        \
		OPT_SET(0, "kernel", &kernel, 1, "include kernel frames (default for faults, kmem, reclaim)"), \
		OPT_SET(0, "no-kernel", &kernel, 0, "leave kernel frames out (default for brk and mmap)"),     \
		OPT_SUPPRESSIONS(&supfile, &defaults),                                                  \
		OPT_LEAK_HEURISTICS

static int opt_sort(const struct opt *o, const char *arg, void *ctx)
{
	(void)ctx;
	if (strcmp(arg, "self") && strcmp(arg, "total"))
		return msg_error("unknown --sort '%s': use self or total", arg);
	*(int *)o->value = !strcmp(arg, "total");
	return 0;
}

static int folded_view_of(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v,
			  int flat)
{
	struct folded *f = calloc(1, sizeof(*f));
	int kernel = -1, ret, header = -1, defaults = 1;
	const char *supfile = NULL;
	char err[512];
	const struct opt folded_options[] = {
		FOLD_OPTIONS,
		OPT_SET(0, "header", &header, 1,
			"first a line '# event EVENT weight WEIGHT estimate yes|no': what\n"
			"was folded, and whether its weights are estimates of a sampled\n"
			"recording, which memsight flamegraph titles its graph by (the\n"
			"default into a pipe)"),
		OPT_SET(0, "no-header", &header, 0, "no such line, into a pipe too"),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	const struct opt functions_options[] = {
		FOLD_OPTIONS,
		OPT_U64('T', "top", &f->top, "N", "functions shown (default 40 in text, all in JSON)"),
		OPT_CALLBACK(0, "sort", &f->by_total, "KEY", "self (default) or total", opt_sort),
		OPT_JSON(&f->json),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	int r;

	if (!f)
		return msg_error("out of memory"), 1;
	*f = (struct folded){ .kind = MEMOP_FAULT, .weight = W_COUNT, .pid = -1, .src = FS_MEMOPS, .flat = flat };
	r = cmd_parse(argc, argv, flat ? functions_options : folded_options, flat ? functions_usage : usage_text, a);
	if (r >= 0) {
		free(f);
		return r;
	}
	if (suppress_setup(&f->sup, defaults, supfile, err, sizeof(err))) {
		msg_error("%s", err);
		free(f);
		return 2;
	}
	stacktab_init_by_comm(&f->tab, 0, 1);
	if (cmd_view_open(s, a)) {
		ret = 1;
		goto out;
	}
	/* Without -e: the faults, when they were recorded; else the malloc
	 * family, by what is still held at the end, as pprof's inuse_space
	 * and leaks show it. */
	if (!f->src_given && !session_group_recorded(s, "faults")) {
		if (!allocs_recorded(s)) {
			msg_error("'%s' recorded no page faults and no allocations: name the events to fold with -e "
				  "(brk, mmap, kmem, reclaim or swap)",
				  s->path);
			ret = 1;
			goto out;
		}
		f->src = FS_MALLOC;
		if (!f->weight_given)
			f->weight = W_LEAKED;
		msg_note("'%s' has no page faults: folding its allocations%s (-e and -w choose)", s->path,
			 f->weight_given ? "" : " by the bytes still held at the end");
	}
	if (kernel < 0)
		/* A syscall's kernel half is always the same entry path; for
		 * the kernel's own memory it is the point. */
		kernel = (f->kind == MEMOP_FAULT && f->src == FS_MEMOPS) || f->src == FS_KMEM || f->src == FS_RECLAIM ||
			 f->src == FS_SWAP;
	if (f->fault_types && (f->src != FS_MEMOPS || f->kind != MEMOP_FAULT)) {
		msg_error("--fault-type is for faults: give -e faults");
		ret = 2;
		goto out;
	}
	if (!weight_applies(f)) {
		msg_error("this weight does not apply to this event: leaked is for malloc and kmem, peak and lost for "
			  "malloc, pages for brk, mmap, faults and kmem, latency for reclaim");
		ret = 2;
		goto out;
	}
	if (f->fault_types && !session_fault_kinds(s)) {
		msg_error("'%s' has no fault kinds: it was recorded with the page-faults software event (a kernel "
			  "without the exceptions tracepoints); drop --fault-type", s->path);
		ret = 1;
		goto out;
	}
	/* Into a pipe, the reader is most likely memsight flamegraph: what
	 * the weights are goes with them, so its graph says bytes, not
	 * samples. */
	if (header < 0) {
		struct stat st;

		header = !fstat(STDOUT_FILENO, &st) && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
	}
	f->header = header;
	f->path = s->path;
	f->top = cmd_top_count(f->top, f->json, 40);
	stacktab_release(&f->tab);
	stacktab_init_by_comm(&f->tab, kernel, 1);
	f->ws[0] = f->weight;
	f->nw = 1;
	return fold_view(f, s, v);
out:
	stacktab_release(&f->tab);
	suppress_release(&f->sup);
	free(f);
	return ret;
}

int folded_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v)
{
	return folded_view_of(argc, argv, a, s, v, 0);
}

int functions_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v)
{
	return folded_view_of(argc, argv, a, s, v, 1);
}

int cmd_folded(int argc, char **argv, struct analyze_opts *a)
{
	return cmd_view_main(argc, argv, a, folded_view);
}

int cmd_functions(int argc, char **argv, struct analyze_opts *a)
{
	return cmd_view_main(argc, argv, a, functions_view);
}

int folded_malloc_view(struct session *s, const char *const *weights, FILE **outs, int n, struct cmd_view *v)
{
	struct folded *f;
	char err[512];

	if (n > (int)(sizeof(f->ws) / sizeof(f->ws[0])))
		return msg_error("too many weights to fold"), 2;
	if (!(f = calloc(1, sizeof(*f))))
		return msg_error("out of memory"), 1;
	*f = (struct folded){ .kind = MEMOP_FAULT, .pid = -1, .src = FS_MALLOC, .src_given = 1, .weight_given = 1 };
	for (int i = 0; i < n; i++) {
		int k = 0;

		while (k < (int)(sizeof(weight_names) / sizeof(weight_names[0])) &&
		       (!weight_names[k] || strcmp(weight_names[k], weights[i])))
			k++;
		if (k == (int)(sizeof(weight_names) / sizeof(weight_names[0]))) {
			free(f);
			return msg_error("unknown weight '%s'", weights[i]), 2;
		}
		f->ws[i] = f->weight = (enum weight)k;
		if (!weight_applies(f)) {
			free(f);
			return msg_error("the weight '%s' does not apply to malloc", weights[i]), 2;
		}
	}
	f->nw = n;
	f->outs = outs;
	if (suppress_setup(&f->sup, 1, NULL, err, sizeof(err))) {
		free(f);
		return msg_error("%s", err), 2;
	}
	f->path = s->path;
	stacktab_init_by_comm(&f->tab, 0, 1);
	return fold_view(f, s, v);
}
