/*
 * analyze/cmd/cmd_leaks.c: memsight leaks, allocations still outstanding when
 * the recording ended, grouped by stack, largest (or steadiest growing)
 * first, in the form BCC's memleak made familiar. For CI: --json and
 * --fail-over.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/allocs.h"
#include "cmd.h"
#include "../model/kallocs.h"
#include "../model/reach.h"
#include "../model/suppress.h"

static const char usage_text[] =
	"usage: memsight leaks [options] [FILE]\n"
	"\n"
	"Allocations still outstanding when the recording ended (record -e malloc),\n"
	"grouped by the stack that made them, largest first, with when they were\n"
	"made and whether they kept growing; lost or still reachable when the\n"
	"recording scanned the process (--leak-check). --kernel: kernel memory.\n";

/* A growth rate over the second half of a shorter recording says more
 * of the clock than of the program. */
#define LEAKS_GROWTH_MIN_S 0.1

struct group {
	struct stack_entry *stack; /* NULL: allocations whose entry was not kept */
	int pid;
	const char *comm;
	uint64_t bytes, count, first, last, late_bytes;
	uint64_t uncertain, uncertain_bytes; /* made before events were lost: maybe freed */
	uint8_t reach;		   /* enum reach_kind: what a --leak-check scan made of them */
	uint64_t indirect_bytes, indirect_count; /* definitely lost: the indirectly lost blocks they hold */
	struct held {
		struct group *g;   /* an indirectly lost group some of whose blocks these hold */
		uint64_t bytes, count;
	} *held;
	size_t nr_held;
	double growth;		   /* bytes per second over the recording's second half */
	const char *suppressed_by;
};

/* The outstanding bytes of one process: the sum of its stacks reported. */
struct proc_sum {
	int pid;
	const char *comm;
	uint64_t bytes, count;
	double growth;
};

/* The options. */
struct leaks_opts {
	long pid;
	uint64_t top, older_ms, fail_over;
	const char *sort, *supfile;
	int lines, json, kernel, defaults, have_fail;
	unsigned fail_kinds;	   /* --errors-for-leak-kinds: bits by enum reach_kind */
};

/* How many of nv stacks a view shows: --top when given; else 10 in text,
 * which a reader reads down, and all in JSON, which a program sums. */
static size_t leaks_shown(const struct leaks_opts *o, int json, size_t nv)
{
	uint64_t top = o->top ? o->top : json ? nv : 10;

	return nv < top ? nv : (size_t)top;
}

struct leaks {
	const struct leaks_opts *o;
	uint64_t older_ns, end, start;
	uint64_t horizon;	   /* events before this time may be missing (0: none) */
	double dur;		   /* seconds recorded */
	uint64_t lost;		   /* events lost while recording */
	struct hashmap groups;	   /* stack entry (or pid for stackless) -> struct group * */
	struct group **v;	   /* the groups reported, sorted */
	size_t nv;
	struct allocs *a;	   /* the replay's (cmd_allocs_shared) */
	struct reach_stats rst;	   /* what --leak-check scans found */
	/* Sums over the groups reported, and over the others. */
	uint64_t leak_bytes, leak_count, sup_bytes, sup_count, sup_groups, nogroup_count;
	uint64_t unsure_bytes, unsure_count;
	uint64_t kind_bytes[REACH_NR], kind_count[REACH_NR];
	uint64_t gate_bytes, gate_unsure; /* what --fail-over weighs: the kinds it counts */
	struct proc_sum *procs;	   /* by process, most bytes first */
	size_t nr_procs;
};

static struct group *group_of(struct leaks *l, struct session *s, const struct alloc_rec *r)
{
	/* Stack entries are 8-aligned: the low bits hold the kind. */
	uint64_t key = r->stack ? (uint64_t)(uintptr_t)r->stack | r->reach
				: ((uint64_t)(uint32_t)r->pid << 3 | r->reach | 1ull << 63);
	struct hm_slot *slot = hashmap_u64(&l->groups, key, NULL);
	struct group *g;

	if (!slot)
		return NULL;
	if (!slot->ptr && (slot->ptr = calloc(1, sizeof(*g)))) {
		g = slot->ptr;
		g->stack = r->stack;
		g->pid = r->pid;
		g->comm = r->stack ? r->stack->comm : machine_comm(&s->m, r->pid, r->pid);
		g->first = r->time;
		g->reach = r->reach;
	}
	return slot->ptr;
}

/* As valgrind lists them: definitely, indirectly, possibly lost, still
 * reachable. */
static int reach_rank(uint8_t k)
{
	return k == REACH_LOST ? 0 : k == REACH_INDIRECT ? 1 : k == REACH_POSSIBLE ? 2 : k == REACH_REACHABLE ? 3 : 4;
}

/* Groups alike in all else come in the order their stacks were first
 * seen, the same from run to run (the group table's order follows hashed
 * addresses); the group of no stack last. */
static int stack_order(const struct stack_entry *x, const struct stack_entry *y)
{
	if (!x || !y)
		return !x - !y;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_size(const void *a, const void *b)
{
	const struct group *x = *(struct group *const *)a, *y = *(struct group *const *)b;

	if (x->reach != y->reach)
		return reach_rank(x->reach) - reach_rank(y->reach);

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return stack_order(x->stack, y->stack);
}

static int by_growth(const void *a, const void *b)
{
	const struct group *x = *(struct group *const *)a, *y = *(struct group *const *)b;

	if (x->reach != y->reach)
		return reach_rank(x->reach) - reach_rank(y->reach);

	if (x->growth != y->growth)
		return x->growth > y->growth ? -1 : 1;
	return by_size(a, b);
}

/* ---- --kernel ---------------------------------------------------------- */

struct kgroup {
	struct stack_entry *stack;
	int pid;
	uint64_t bytes, count[KA_NR];
};

struct kleaks {
	const struct leaks_opts *o;
	struct kallocs k;
	struct hashmap groups;	/* stack entry -> struct kgroup * */
	struct kgroup **v, nostack;
	size_t nv;
	uint64_t total, count;
};

static int kgroup_cmp(const void *a, const void *b)
{
	const struct kgroup *x = *(struct kgroup *const *)a, *y = *(struct kgroup *const *)b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return stack_order(x->stack, y->stack);
}

/* What the kmem group left allocated, grouped by the stack that
 * allocated it. */
static int kleaks_collect(struct kleaks *l, struct session *s)
{
	uint64_t end = s->last_time, older_ns = l->o->older_ms * 1000000ull;

	for (int c = 0; c < KA_NR; c++) {
		hashmap_for_each(&l->k.live[c], slot) {
			struct kalloc_rec *r = slot->ptr;
			struct hm_slot *gs;
			struct kgroup *g = &l->nostack;

			if (older_ns && end - r->time < older_ns)
				continue;
			if (r->stack) {
				gs = hashmap_u64(&l->groups, (uintptr_t)r->stack, NULL);
				if (!gs || (!gs->ptr && !(gs->ptr = calloc(1, sizeof(*g)))))
					return -1;
				g = gs->ptr;
				g->stack = r->stack;
				g->pid = r->pid;
			}
			g->bytes += r->bytes * l->k.period;
			g->count[c] += l->k.period;
			l->total += r->bytes * l->k.period;
			l->count += l->k.period;
		}
	}
	l->v = malloc((l->groups.nr ? l->groups.nr : 1) * sizeof(*l->v));
	if (!l->v)
		return -1;
	hashmap_for_each(&l->groups, gs) l->v[l->nv++] = gs->ptr;
	if (l->nv > 1)
		qsort(l->v, l->nv, sizeof(*l->v), kgroup_cmp);
	return 0;
}

static void kleaks_json(const struct kleaks *l, const struct session *s)
{
	const struct kallocs *k = &l->k;
	struct json j;

	json_init(&j, stdout);
	json_begin(&j, NULL);
	json_str(&j, "trace", s->path);
	json_bool(&j, "kernel", 1);
	json_bool(&j, "estimate", k->period > 1);
	json_u64(&j, "period", k->period);
	json_u64(&j, "leaked_bytes", l->total);
	json_u64(&j, "leaked_allocations", l->count);
	json_begin(&j, "classes");
	for (int c = 0; c < KA_NR; c++) {
		json_begin(&j, kalloc_class_names[c]);
		json_u64(&j, "allocations", k->allocs[c]);
		json_u64(&j, "bytes", k->alloc_bytes[c]);
		json_u64(&j, "frees", k->frees[c]);
		json_u64(&j, "matched_frees", k->matched[c]);
		json_u64(&j, "unmatched_frees", k->unmatched[c]);
		json_u64(&j, "lost_frees", k->replaced[c]);
		json_u64(&j, "outstanding", k->live[c].nr);
		json_end(&j);
	}
	json_end(&j);
	json_u64(&j, "stacks_total", l->nv);
	json_u64(&j, "stacks_shown", leaks_shown(l->o, 1, l->nv));
	json_begin_array(&j, "stacks");
	for (size_t i = 0; i < leaks_shown(l->o, 1, l->nv); i++) {
		json_begin(&j, NULL);
		json_i64(&j, "pid", l->v[i]->pid);
		json_str(&j, "comm", l->v[i]->stack->comm);
		json_u64(&j, "bytes", l->v[i]->bytes);
		for (int c = 0; c < KA_NR; c++)
			json_u64(&j, kalloc_class_names[c], l->v[i]->count[c]);
		cmd_json_stack(&j, "frames", l->v[i]->stack, l->o->lines);
		json_end(&j);
	}
	json_end(&j);
	json_end(&j);
}

static void kleaks_text(const struct kleaks *l, const struct session *s)
{
	const struct kallocs *k = &l->k;

	printf("# memsight leaks --kernel of '%s': %llu bytes in %llu allocation%s outstanding from %zu stack%s%s\n",
	       s->path, (unsigned long long)l->total, (unsigned long long)l->count, cmd_s(l->count), l->nv,
	       cmd_s(l->nv), k->period > 1 ? " (ESTIMATE)" : "");
	if (k->period > 1)
		printf("# sampled recording (kmem/%llu): allocations and frees are sampled apart, so pairs are "
		       "missed; counts scaled by %llu\n",
		       (unsigned long long)k->period, (unsigned long long)k->period);
	for (int c = 0; c < KA_NR; c++)
		printf("# %-6s %llu allocations (%llu bytes), %llu frees: %llu of these allocations, %llu of "
		       "memory allocated before%s; %zu outstanding\n",
		       kalloc_class_names[c], (unsigned long long)k->allocs[c], (unsigned long long)k->alloc_bytes[c],
		       (unsigned long long)k->frees[c], (unsigned long long)k->matched[c],
		       (unsigned long long)k->unmatched[c], l->o->pid >= 0 ? " or by other processes" : "",
		       k->live[c].nr);
	if (k->replaced[0] + k->replaced[1] + k->replaced[2])
		printf("# %llu addresses were allocated again with no free seen (frees lost or filtered)\n",
		       (unsigned long long)(k->replaced[0] + k->replaced[1] + k->replaced[2]));
	if (l->nostack.bytes)
		printf("# %llu bytes outstanding have no stack\n", (unsigned long long)l->nostack.bytes);
	for (size_t i = 0; i < leaks_shown(l->o, 0, l->nv); i++) {
		struct kgroup *g = l->v[i];
		const char *sep = "";

		printf("\n%s%llu bytes in ", k->period > 1 ? "~" : "", (unsigned long long)g->bytes);
		for (int c = 0; c < KA_NR; c++) {
			if (!g->count[c])
				continue;
			printf("%s%llu %s", sep, (unsigned long long)g->count[c],
			       c == KA_SLAB ? "objects" : c == KA_PAGE ? "page allocations" : "percpu chunks");
			sep = ", ";
		}
		printf(" from stack (pid %d %s)\n", g->pid, g->stack->comm);
		print_stack(g->stack, l->o->lines, "\t\t");
	}
}

/* A gate on a trace still being recorded cannot tell: what is
 * outstanding now may be freed before the end. Says so, and 1. */
static int gate_live(const struct session *s)
{
	if (!s->r.live)
		return 0;
	msg_error("'%s' is still being recorded: a leak is what is outstanding when recording ends; give --fail-over "
		  "the finished trace",
		  s->path);
	return 1;
}

/* --fail-over for kernel memory: 3 over the limit, 4 when the trace
 * cannot tell. */
static int kleaks_gate(const struct kleaks *l, struct session *s)
{
	if (l->o->have_fail && gate_live(s))
		return 4;
	if (l->o->have_fail && session_incomplete(s)) {
		msg_error("the trace is incomplete (%s): cannot tell whether the kernel's outstanding memory passes "
			  "--fail-over %llu; record it again",
			  s->r.stop[0] ? "cut short" : "events were lost", (unsigned long long)l->o->fail_over);
		return 4;
	}
	if (l->o->have_fail && l->total > l->o->fail_over) {
		msg_error("%llu kernel bytes outstanding, over the --fail-over limit of %llu", (unsigned long long)l->total,
			  (unsigned long long)l->o->fail_over);
		return 3;
	}
	return 0;
}

static int leaks_kernel(const char *path, const struct leaks_opts *o, const struct analyze_opts *a)
{
	struct kleaks l = { .o = o };
	struct session s;
	char err[512];
	int ret = 1;

	if (cmd_open_group(&s, path, a, "kernel allocation", "kmem", NULL))
		return 1;
	kallocs_init(&l.k, &s, o->pid);
	hashmap_init(&l.groups, 0);
	if (kallocs_replay(&l.k, &s, err, sizeof(err))) {
		msg_error("%s", err);
	} else if (kleaks_collect(&l, &s)) {
		msg_error("out of memory");
	} else {
		(o->json ? kleaks_json : kleaks_text)(&l, &s);
		ret = kleaks_gate(&l, &s);
	}
	symbols_report_unresolved(&s.syms);
	free(l.v);
	hashmap_for_each(&l.groups, gs) free(gs->ptr);
	hashmap_release(&l.groups);
	kallocs_release(&l.k);
	session_release(&s);
	return ret;
}

/* ---- allocations of the malloc family ------------------------------------ */

/* Group what is still allocated by stack (and by what a scan made of it),
 * and sum it. */
static int leaks_group(struct leaks *l, struct session *s)
{
	hashmap_for_each(&l->a->procs, p) {
		hashmap_for_each((struct hashmap *)p->ptr, rs) {
			struct alloc_rec *r = rs->ptr;
			struct group *g;

			if (l->o->pid >= 0 && r->pid != l->o->pid)
				continue;
			if (l->older_ns && l->end - r->time < l->older_ns)
				continue;
			g = group_of(l, s, r);
			if (!g)
				return -1;
			g->bytes += alloc_rec_bytes(r);
			g->count += alloc_rec_count(r);
			/* Charged to the definitely lost block that holds it,
			 * as memcheck's "(D direct, I indirect)". */
			if (r->reach == REACH_INDIRECT && r->leader) {
				struct group *lg = group_of(l, s, r->leader);
				size_t k = 0;

				if (!lg)
					return -1;
				lg->indirect_bytes += alloc_rec_bytes(r);
				lg->indirect_count += alloc_rec_count(r);
				while (k < lg->nr_held && lg->held[k].g != g)
					k++;
				if (k == lg->nr_held) {
					struct held *v = realloc(lg->held, (k + 1) * sizeof(*v));

					if (!v)
						return -1;
					lg->held = v;
					lg->held[lg->nr_held++] = (struct held){ g, 0, 0 };
				}
				lg->held[k].bytes += alloc_rec_bytes(r);
				lg->held[k].count += alloc_rec_count(r);
			}
			if (r->time < g->first)
				g->first = r->time;
			if (r->time > g->last)
				g->last = r->time;
			if (r->time >= l->start + (l->end - l->start) / 2)
				g->late_bytes += alloc_rec_bytes(r);
			/* A free lost with the events would look like this. */
			if (r->time < l->horizon) {
				g->uncertain += alloc_rec_count(r);
				g->uncertain_bytes += alloc_rec_bytes(r);
			}
		}
	}
	return 0;
}

/* Most bytes first, then the order their stacks were first seen. */
static int held_cmp(const void *a, const void *b)
{
	const struct held *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return stack_order(x->g->stack, y->g->stack);
}

static int proc_sum_cmp(const void *a, const void *b)
{
	const struct proc_sum *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->pid - y->pid;
}

/* The groups reported, summed by process: every stack names one. */
static int leaks_by_process(struct leaks *l)
{
	struct hashmap at;
	int ret = 0;

	hashmap_init(&at, 0);
	l->procs = calloc(l->nv ? l->nv : 1, sizeof(*l->procs));
	if (!l->procs)
		return -1;
	for (size_t i = 0; i < l->nv; i++) {
		const struct group *g = l->v[i];
		struct hm_slot *slot = hashmap_u64(&at, (uint32_t)g->pid, NULL);
		struct proc_sum *p;

		if (!slot) {
			ret = -1;
			break;
		}
		if (!slot->ptr) {
			slot->ptr = &l->procs[l->nr_procs++];
			((struct proc_sum *)slot->ptr)->pid = g->pid;
			((struct proc_sum *)slot->ptr)->comm = g->comm;
		}
		p = slot->ptr;
		p->bytes += g->bytes;
		p->count += g->count;
		p->growth += g->growth;
	}
	hashmap_release(&at);
	if (l->nr_procs > 1)
		qsort(l->procs, l->nr_procs, sizeof(*l->procs), proc_sum_cmp);
	return ret;
}

/* The groups to report, without the suppressed ones, and the sums. */
static int leaks_select(struct leaks *l, const struct suppress *sup)
{
	unsigned sample = l->a->sample;
	struct frame fr[STACK_MAX_FRAMES];

	l->v = malloc((l->groups.nr ? l->groups.nr : 1) * sizeof(*l->v));
	if (!l->v)
		return -1;
	hashmap_for_each(&l->groups, gs) {
		struct group *g = gs->ptr;

		/* A steady leak keeps allocating through the second half; a
		 * start-up allocation kept for good does not. */
		g->growth = l->dur > 0 ? g->late_bytes * sample / (l->dur / 2) : 0;
		g->bytes *= sample;
		g->indirect_bytes *= sample;
		if (g->nr_held > 1)
			qsort(g->held, g->nr_held, sizeof(*g->held), held_cmp);
		g->late_bytes *= sample;
		g->uncertain_bytes *= sample;
		if (!g->stack) {
			l->nogroup_count += g->count;
			continue;
		}
		g->suppressed_by = suppress_match(sup, fr, stack_entry_frames(g->stack, fr, STACK_MAX_FRAMES));
		if (g->suppressed_by) {
			l->sup_bytes += g->bytes;
			l->sup_count += g->count;
			l->sup_groups++;
			continue;
		}
		l->leak_bytes += g->bytes;
		l->leak_count += g->count;
		l->unsure_bytes += g->uncertain_bytes;
		l->unsure_count += g->uncertain;
		l->kind_bytes[g->reach] += g->bytes;
		l->kind_count[g->reach] += g->count;
		/* Blocks no scan looked at count as leaks whatever the kinds. */
		if (g->reach == REACH_UNKNOWN || (l->o->fail_kinds & 1u << g->reach)) {
			l->gate_bytes += g->bytes;
			l->gate_unsure += g->uncertain_bytes;
		}
		l->v[l->nv++] = g;
	}
	if (l->nv > 1)
		qsort(l->v, l->nv, sizeof(*l->v), l->o->sort && !strcmp(l->o->sort, "growth") ? by_growth : by_size);
	if (leaks_by_process(l))
		return -1;
	/* With a scan, a block still reachable is no leak: the figure and
	 * the gate count what is lost (definitely and indirectly, as
	 * valgrind's do); what the scan did not cover counts as before. */
	if (l->rst.processes) {
		l->leak_bytes -= l->kind_bytes[REACH_REACHABLE];
		l->leak_count -= l->kind_count[REACH_REACHABLE];
	}
	return 0;
}

static void leaks_json_group(struct json *j, const struct leaks *l, const struct group *g)
{
	unsigned sample = l->a->sample;

	json_begin(j, NULL);
	json_i64(j, "pid", g->pid);
	json_str(j, "comm", g->comm);
	if (g->reach)
		json_str(j, "kind", reach_kind_keys[g->reach]);
	else
		json_null(j, "kind");
	json_u64(j, "bytes", g->bytes);
	json_u64(j, "allocations", g->count * sample);
	if (g->reach == REACH_LOST) {
		json_u64(j, "indirect_bytes", g->indirect_bytes);
		json_u64(j, "indirect_allocations", g->indirect_count * sample);
	}
	json_u64(j, "uncertain_bytes", g->uncertain_bytes);
	json_u64(j, "uncertain_allocations", g->uncertain * sample);
	json_double(j, "first_s", "%.6f", (g->first - l->start) / 1e9);
	json_double(j, "last_s", "%.6f", (g->last - l->start) / 1e9);
	if (l->dur >= LEAKS_GROWTH_MIN_S)
		json_double(j, "growth_bytes_per_s", "%.0f", g->growth);
	else
		json_null(j, "growth_bytes_per_s");
	cmd_json_stack(j, "frames", g->stack, l->o->lines);
	if (g->reach == REACH_LOST) {
		json_begin_array(j, "holding");
		for (size_t i = 0; i < g->nr_held; i++) {
			json_begin(j, NULL);
			json_u64(j, "bytes", g->held[i].bytes * sample);
			json_u64(j, "allocations", g->held[i].count * sample);
			cmd_json_stack(j, "frames", g->held[i].g->stack, l->o->lines);
			json_end(j);
		}
		json_end(j);
	}
	json_end(j);
}

static void leaks_json(const struct leaks *l, struct session *s)
{
	const struct allocs *a = l->a;
	struct json j;

	json_init(&j, stdout);
	json_begin(&j, NULL);
	json_str(&j, "trace", s->path);
	json_bool(&j, "estimate", a->sample > 1 || a->rate);
	json_u64(&j, "sample", a->sample);
	json_u64(&j, "sample_bytes", a->rate);
	json_double(&j, "duration_s", "%.6f", l->dur);
	json_bool(&j, "live", s->r.live);
	json_bool(&j, "incomplete", session_incomplete(s) || a->nr_unseen || (a->watch && a->nr_late));
	json_u64(&j, "lost", l->lost);
	json_u64(&j, "leaked_bytes", l->leak_bytes);
	json_u64(&j, "leaked_allocations", l->leak_count * a->sample);
	json_u64(&j, "uncertain_bytes", l->unsure_bytes);
	json_u64(&j, "uncertain_allocations", l->unsure_count * a->sample);
	json_u64(&j, "suppressed_bytes", l->sup_bytes);
	json_u64(&j, "suppressed_allocations", l->sup_count * a->sample);
	json_u64(&j, "unmatched_frees", a->unmatched_frees);
	json_u64(&j, "double_frees", a->double_frees);
	json_bool(&j, "double_frees_certain", !session_incomplete(s));
	json_u64(&j, "allocations", a->nr_allocs);
	json_u64(&j, "frees", a->nr_frees);
	json_begin_array(&j, "unseen");
	for (size_t i = 0; i < a->nr_unseen; i++) {
		json_begin(&j, NULL);
		json_i64(&j, "pid", a->unseen[i].pid);
		json_str(&j, "comm", a->unseen[i].comm);
		if (a->unseen[i].object)
			json_str(&j, "object", a->unseen[i].object);
		else
			json_null(&j, "object");
		json_end(&j);
	}
	json_end(&j);
	json_begin_array(&j, "probed_late");
	for (size_t i = 0; i < a->nr_late; i++) {
		json_begin(&j, NULL);
		json_i64(&j, "pid", a->late[i].pid);
		json_str(&j, "comm", a->late[i].comm);
		json_str(&j, "object", a->late[i].object);
		json_u64(&j, "late_ns", a->late[i].late_ns);
		json_end(&j);
	}
	json_end(&j);
	if (l->rst.processes) {
		json_begin(&j, "leak_check");
		json_i64(&j, "processes", l->rst.processes);
		json_double(&j, "scan_ms", "%.3f", l->rst.scan_ns / 1e6);
		json_u64(&j, "scanned_bytes", l->rst.scanned_bytes);
		for (int k = REACH_LOST; k < REACH_NR; k++) {
			char key[64];

			snprintf(key, sizeof(key), "%s_bytes", reach_kind_keys[k]);
			json_u64(&j, key, l->kind_bytes[k]);
			snprintf(key, sizeof(key), "%s_allocations", reach_kind_keys[k]);
			json_u64(&j, key, l->kind_count[k] * a->sample);
		}
		json_end(&j);
	} else {
		json_null(&j, "leak_check");
	}
	json_begin_array(&j, "processes");
	for (size_t i = 0; i < l->nr_procs; i++) {
		const struct proc_sum *p = &l->procs[i];

		json_begin(&j, NULL);
		json_i64(&j, "pid", p->pid);
		json_str(&j, "comm", p->comm);
		json_u64(&j, "bytes", p->bytes);
		json_u64(&j, "allocations", p->count * a->sample);
		json_double(&j, "growth_bytes_per_s", "%.1f", p->growth);
		json_end(&j);
	}
	json_end(&j);
	json_u64(&j, "stacks_total", l->nv);
	json_u64(&j, "stacks_shown", leaks_shown(l->o, 1, l->nv));
	json_begin_array(&j, "stacks");
	for (size_t i = 0; i < leaks_shown(l->o, 1, l->nv); i++)
		leaks_json_group(&j, l, l->v[i]);
	json_end(&j);
	json_end(&j);
}

/* Why a leak table may miss something, as the end of "INCOMPLETE: ". */
static const char *why_incomplete(const struct session *s, const struct leaks *l)
{
	if (session_stat(s, "records_not_written", 0) > 0)
		return "records were not written (the disk holding the trace filled)";
	return l->lost ? "events were lost while recording" : "the trace is cut short";
}

/* The program images whose calls the probes never saw, a few by name. */
static void leaks_text_unseen(const struct allocs *a)
{
	size_t shown = a->nr_unseen < 4 ? a->nr_unseen : 3;

	if (!a->nr_unseen)
		return;
	printf("# INCOMPLETE: %zu program%s ran unseen by the malloc probes, their allocations not in this table:",
	       a->nr_unseen, a->nr_unseen == 1 ? "" : "s");
	for (size_t i = 0; i < shown; i++) {
		const struct alloc_unseen *u = &a->unseen[i];

		if (u->object)
			printf("%s %s (pid %d) allocating through %s, which was not probed", i ? ";" : "", u->comm,
			       u->pid, u->object);
		else
			printf("%s %s (pid %d) without memsight's wrapper", i ? ";" : "", u->comm, u->pid);
	}
	if (shown < a->nr_unseen)
		printf("; and %zu more", a->nr_unseen - shown);
	printf("\n");
}

/* Allocators found while recording, probed after a program had mapped
 * them: what it allocated through them before is not in the table. */
static void leaks_text_late(const struct allocs *a)
{
	size_t shown = a->nr_late < 4 ? a->nr_late : 3;

	if (!a->nr_late)
		return;
	printf("# %s: %zu allocator%s probed only after a program mapped %s, what went through %s before not in "
	       "this table:",
	       a->watch ? "INCOMPLETE" : "NOTE", a->nr_late, a->nr_late == 1 ? " was" : "s were",
	       a->nr_late == 1 ? "it" : "them", a->nr_late == 1 ? "it" : "them");
	for (size_t i = 0; i < shown; i++)
		printf("%s %s of %s (pid %d), %.1f ms after", i ? ";" : "", a->late[i].object, a->late[i].comm,
		       a->late[i].pid, a->late[i].late_ns / 1e6);
	if (shown < a->nr_late)
		printf("; and %zu more", a->nr_late - shown);
	printf("\n");
}

/* The header's lines: totals, then whatever qualifies them. */
static void leaks_text_header(const struct leaks *l, struct session *s)
{
	const struct allocs *a = l->a;
	const struct reach_stats *rst = &l->rst;
	size_t lost_stacks = 0;
	char sz[32];

	for (size_t i = 0; i < l->nv; i++)
		lost_stacks += l->v[i]->reach != REACH_REACHABLE;
	printf("# memsight leaks of '%s': %llu bytes in %llu allocation%s %s from %zu stack%s%s\n", s->path,
	       (unsigned long long)l->leak_bytes, (unsigned long long)l->leak_count * a->sample,
	       cmd_s(l->leak_count * a->sample), rst->processes ? "lost" : "outstanding",
	       rst->processes ? lost_stacks : l->nv, cmd_s(rst->processes ? lost_stacks : l->nv),
	       a->sample > 1 || a->rate ? " (ESTIMATE)" : "");
	if (s->r.live)
		printf("# LIVE: the recording is still going: these are outstanding so far, leaks only if still "
		       "outstanding when it ends\n");
	if (a->sample > 1)
		printf("# sampled recording (-s %u): bytes and counts are estimates, scaled by %u\n", a->sample, a->sample);
	if (a->rate)
		printf("# sampled recording (the sampler kept one allocation in about %s): bytes and counts are "
		       "estimates, each sample weighed by the inverse of its odds of being kept\n",
		       fmt_bytes(a->rate, sz, sizeof(sz)));
	if (rst->processes)
		printf("# leak check of %d process%s (paused %.1f ms to scan %s): definitely lost %llu bytes in "
		       "%llu allocation%s, indirectly lost %llu in %llu, possibly lost %llu in %llu, still reachable %llu "
		       "in %llu\n",
		       rst->processes, rst->processes == 1 ? "" : "es", rst->scan_ns / 1e6,
		       fmt_bytes(rst->scanned_bytes, sz, sizeof(sz)), (unsigned long long)l->kind_bytes[REACH_LOST],
		       (unsigned long long)l->kind_count[REACH_LOST] * a->sample,
		       cmd_s((unsigned long long)l->kind_count[REACH_LOST] * a->sample),
		       (unsigned long long)l->kind_bytes[REACH_INDIRECT],
		       (unsigned long long)l->kind_count[REACH_INDIRECT] * a->sample,
		       (unsigned long long)l->kind_bytes[REACH_POSSIBLE],
		       (unsigned long long)l->kind_count[REACH_POSSIBLE] * a->sample,
		       (unsigned long long)l->kind_bytes[REACH_REACHABLE],
		       (unsigned long long)l->kind_count[REACH_REACHABLE] * a->sample);
	else if (session_host(s, "leak_check", sz, sizeof(sz), NULL))
		printf("# leak check: the recording holds no scan (see its summary): lost and reachable "
		       "are not told apart\n");
	if (session_incomplete(s) && l->unsure_count)
		printf("# INCOMPLETE: %s; %llu bytes in %llu of these allocations were made before the last "
		       "loss, and their frees may be among what was lost (marked UNCERTAIN below)\n",
		       why_incomplete(s, l),
		       (unsigned long long)l->unsure_bytes, (unsigned long long)l->unsure_count * a->sample);
	else if (session_incomplete(s))
		printf("# INCOMPLETE: %s; none of these allocations was made before the last loss, but a "
		       "lost allocation may hide a leak\n",
		       why_incomplete(s, l));
	leaks_text_unseen(a);
	leaks_text_late(a);
	if (l->sup_groups)
		printf("# suppressed: %llu bytes in %llu allocation%s from %llu stack%s (libc's one-time "
		       "allocations%s; --no-default-suppressions shows them)\n",
		       (unsigned long long)l->sup_bytes, (unsigned long long)l->sup_count * a->sample,
		       cmd_s(l->sup_count * a->sample), (unsigned long long)l->sup_groups, cmd_s(l->sup_groups),
		       l->o->supfile ? " and --suppress" : "");
}

/* What the allocations and frees themselves say about the figures. */
static void leaks_text_notes(const struct leaks *l, struct session *s)
{
	const struct allocs *a = l->a;

	/* With events lost, the allocation between two frees of an address
	 * may be what was lost: never stated as the program's fault then. */
	if (a->double_frees && session_incomplete(s))
		printf("# %llu free%s of blocks freed already: POSSIBLY double frees, or frees whose allocation was "
		       "lost with the events\n",
		       (unsigned long long)a->double_frees, cmd_s(a->double_frees));
	else if (a->double_frees)
		printf("# %llu free%s of blocks the program had freed already (double frees%s)\n",
		       (unsigned long long)a->double_frees, cmd_s(a->double_frees),
		       session_group_recorded(s, "signals") ? ": memsight errors shows their stacks" : "");
	if (a->exec_released)
		printf("# %llu allocations made before an exec were released by it, with the program that made them\n",
		       (unsigned long long)a->exec_released);
	if (a->unmatched_frees)
		printf("# %llu frees of memory allocated before the recording began%s were not counted\n",
		       (unsigned long long)a->unmatched_frees,
		       session_incomplete(s) ? ", or whose allocation was lost," : "");
	if (l->nogroup_count)
		printf("# %llu outstanding allocations have no stack (%s)\n", (unsigned long long)l->nogroup_count,
		       a->sample > 1 || a->min_size || a->max_size ? "their entry was not kept: -s or -z/-Z"
		       : session_incomplete(s) ? "their entry was lost with the events, or came before the recording began"
					       : "their call was under way when the recording began");
	if (a->unknown_result)
		printf("# %llu posix_memalign results could not be read (their pointer was not on the stack)\n",
		       (unsigned long long)a->unknown_result);
}

static void leaks_text_group(const struct leaks *l, const struct group *g)
{
	unsigned sample = l->a->sample;
	char sz[32];

	if (g->reach == REACH_LOST && g->indirect_bytes)
		printf("\n%s%llu (%llu direct, %llu indirect) bytes in %llu allocation%s from stack (pid %d %s): %s\n",
		       sample > 1 || l->a->rate ? "~" : "", (unsigned long long)(g->bytes + g->indirect_bytes),
		       (unsigned long long)g->bytes, (unsigned long long)g->indirect_bytes,
		       (unsigned long long)g->count * sample, cmd_s((unsigned long long)g->count * sample), g->pid, g->comm,
		       reach_kind_names[g->reach]);
	else
		printf("\n%s%llu bytes in %llu allocation%s from stack (pid %d %s)%s%s\n", sample > 1 || l->a->rate ? "~" : "",
		       (unsigned long long)g->bytes, (unsigned long long)g->count * sample,
		       cmd_s((unsigned long long)g->count * sample), g->pid, g->comm, g->reach ? ": " : "",
		       g->reach ? reach_kind_names[g->reach] : "");
	/* One allocation grows nothing: it was made, once. */
	if (g->count == 1)
		printf("\tmade +%.3fs of %.3fs, once\n", (g->first - l->start) / 1e9, l->dur);
	else if (l->dur >= LEAKS_GROWTH_MIN_S)
		printf("\tmade +%.3fs..+%.3fs of %.3fs; %s %s/s over the last half\n", (g->first - l->start) / 1e9,
		       (g->last - l->start) / 1e9, l->dur, g->growth > 0 ? "growing" : "not growing",
		       fmt_bytes((uint64_t)g->growth, sz, sizeof(sz)));
	else
		printf("\tmade +%.3fs..+%.3fs of %.3fs (too short a recording to tell growth)\n",
		       (g->first - l->start) / 1e9, (g->last - l->start) / 1e9, l->dur);
	if (g->uncertain)
		printf("\tUNCERTAIN: %llu of these allocations (%llu bytes) were made before events "
		       "were lost; their frees may have been lost\n",
		       (unsigned long long)g->uncertain * sample, (unsigned long long)g->uncertain_bytes);
	print_stack(g->stack, l->o->lines, "\t\t");
	/* What it holds, as memcheck charges it: each stack, nested. */
	for (size_t i = 0; i < g->nr_held; i++) {
		const struct held *h = &g->held[i];

		printf("\tholding, indirectly lost: %llu bytes in %llu allocation%s from stack\n",
		       (unsigned long long)h->bytes * sample, (unsigned long long)h->count * sample,
		       cmd_s((unsigned long long)h->count * sample));
		if (h->g->stack)
			print_stack(h->g->stack, l->o->lines, "\t\t\t");
	}
}

/* With more than one process, what each holds: as many as stacks are
 * shown, the rest summed. */
static void leaks_text_procs(const struct leaks *l)
{
	size_t shown = leaks_shown(l->o, 0, l->nr_procs);
	unsigned sample = l->a->sample;
	uint64_t rest_bytes = 0, rest_count = 0;
	const char *est = sample > 1 || l->a->rate ? "~" : "";

	if (l->nr_procs < 2)
		return;
	printf("# outstanding by process:\n");
	for (size_t i = 0; i < shown; i++) {
		const struct proc_sum *p = &l->procs[i];

		printf("#\t%s%llu bytes in %llu allocation%s (pid %d %s)\n", est, (unsigned long long)p->bytes,
		       (unsigned long long)p->count * sample, cmd_s(p->count * sample), p->pid, p->comm);
	}
	for (size_t i = shown; i < l->nr_procs; i++) {
		rest_bytes += l->procs[i].bytes;
		rest_count += l->procs[i].count;
	}
	if (shown < l->nr_procs)
		printf("#\t%s%llu bytes in %llu allocation%s in %zu more process%s\n", est, (unsigned long long)rest_bytes,
		       (unsigned long long)rest_count * sample, cmd_s(rest_count * sample), l->nr_procs - shown,
		       l->nr_procs - shown == 1 ? "" : "es");
}

static void leaks_text(const struct leaks *l, struct session *s)
{
	leaks_text_header(l, s);
	leaks_text_procs(l);
	leaks_text_notes(l, s);
	for (size_t i = 0; i < leaks_shown(l->o, 0, l->nv); i++)
		leaks_text_group(l, l->v[i]);
}

/* The gate: leaks made after the last loss are certain; with events
 * missing, the rest may be frees that were lost and a lost allocation may
 * hide a leak, so only a certain excess fails (3) and anything else is
 * "cannot tell" (4). */
static int leaks_gate(const struct leaks *l, struct session *s)
{
	uint64_t limit = l->o->fail_over;

	if (!l->o->have_fail)
		return 0;
	if (gate_live(s))
		return 4;
	if (l->gate_bytes - l->gate_unsure > limit) {
		msg_error("%llu bytes leaked, over the --fail-over limit of %llu",
			  (unsigned long long)(l->gate_bytes - l->gate_unsure), (unsigned long long)limit);
		return 3;
	}
	if (session_incomplete(s)) {
		msg_error("the trace is incomplete (%s): cannot tell whether the leaks pass --fail-over %llu; record it "
			  "again (see memsight info for why events were lost)",
			  l->lost ? "events were lost" : "cut short", (unsigned long long)limit);
		return 4;
	}
	if (l->a->nr_unseen) {
		msg_error("%s (pid %d) ran unseen by the malloc probes: cannot tell whether the leaks pass --fail-over "
			  "%llu; %s",
			  l->a->unseen[0].comm, l->a->unseen[0].pid, (unsigned long long)limit,
			  l->a->unseen[0].object ? "record without --malloc-via uprobes, so that memsight's wrapper "
						  "follows its programs"
						: "record that program as the command itself");
		return 4;
	}
	if (l->a->watch && l->a->nr_late) {
		msg_error("%s (pid %d) allocated through %s before it could be probed: cannot tell whether the leaks "
			  "pass --fail-over %llu; record without --malloc-via uprobes, so that memsight's wrapper follows "
			  "its programs",
			  l->a->late[0].comm, l->a->late[0].pid, l->a->late[0].object, (unsigned long long)limit);
		return 4;
	}
	if (l->gate_bytes > limit) {
		msg_error("%llu bytes leaked, over the --fail-over limit of %llu", (unsigned long long)l->gate_bytes,
			  (unsigned long long)limit);
		return 3;
	}
	return 0;
}

/* With the allocations paired: classify what a scan saw, group and sum. */
static int leaks_collect(struct leaks *l, struct session *s, const struct suppress *sup)
{
	char err[512];

	if (s->nr_reach && reach_classify(s, l->a, &l->rst, err, sizeof(err)))
		return msg_error("%s", err);
	l->start = s->first_time;
	l->end = s->last_time;
	l->horizon = session_loss_horizon(s);
	l->lost = cmd_lost(s);
	s->loss_said = 1;
	l->dur = l->end > l->start ? (l->end - l->start) / 1e9 : 0;
	if (leaks_group(l, s) || leaks_select(l, sup))
		return msg_error("out of memory");
	return 0;
}

/* The view of the malloc family's leaks: what it holds from its options on. */
struct leaks_view {
	struct leaks_opts o;
	struct suppress sup;
	struct leaks l;
};

/* A followed ring's window moved on: the blocks from before it go, as a
 * reading of the window alone would not hold them. */
static int leaks_window(struct session *s, void *arg, uint64_t from)
{
	struct leaks_view *lv = arg;

	(void)s;
	return allocs_forget_before(lv->l.a, from) ? -1 : 0;
}

static int leaks_end(struct session *s, void *arg, int print)
{
	struct leaks_view *lv = arg;
	struct leaks *l = &lv->l;
	int ret = 1;

	if (print && !leaks_collect(l, s, &lv->sup)) {
		(lv->o.json ? leaks_json : leaks_text)(l, s);
		ret = leaks_gate(l, s);
	}
	free(l->v);
	free(l->procs);
	hashmap_for_each(&l->groups, gs) {
		free(((struct group *)gs->ptr)->held);
		free(gs->ptr);
	}
	hashmap_release(&l->groups);
	suppress_release(&lv->sup);
	free(lv);
	return ret;
}

/* valgrind's names: definite, indirect, possible, reachable, all, none. */
static int opt_fail_kinds(const struct opt *o, const char *arg, void *ctx)
{
	static const struct {
		const char *name;
		unsigned bits;
	} names[] = {
		{ "definite", 1u << REACH_LOST }, { "indirect", 1u << REACH_INDIRECT }, { "possible", 1u << REACH_POSSIBLE },
		{ "reachable", 1u << REACH_REACHABLE }, { "all", (1u << REACH_NR) - 2 }, { "none", 0 },
	};
	struct leaks_opts *lo = o->value;
	char buf[128], *save = NULL;

	(void)ctx;
	snprintf(buf, sizeof(buf), "%s", arg);
	lo->fail_kinds = 0;
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		size_t k = 0;

		while (k < sizeof(names) / sizeof(names[0]) && strcmp(names[k].name, w))
			k++;
		if (k == sizeof(names) / sizeof(names[0]))
			return msg_error("--errors-for-leak-kinds: unknown kind '%s': give definite, indirect, possible, "
					 "reachable, all or none, comma-separated",
					 w);
		lo->fail_kinds |= names[k].bits;
	}
	return 0;
}

static int opt_fail_over(const struct opt *o, const char *arg, void *ctx)
{
	struct leaks_opts *lo = o->value;

	(void)ctx;
	if (opts_u64("--fail-over", arg, &lo->fail_over))
		return -1;
	lo->have_fail = 1;
	return 0;
}

int leaks_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v)
{
	struct leaks_opts o = { .pid = -1, .lines = 1,
				.defaults = 1,
				.fail_kinds = 1u << REACH_LOST | 1u << REACH_POSSIBLE };
	const struct opt options[] = {
		OPT_U64('T', "top", &o.top, "N", "stacks shown (default 10 in text, all in JSON)"),
		OPT_U64('o', "older", &o.older_ms, "MS",
			"only allocations at least MS milliseconds old when the recording ended"),
		OPT_PID(&o.pid),
		OPT_STRING(0, "sort", &o.sort, "KEY", "size (default): most bytes first; growth: steadiest growth first"),
		OPT_LINES(&o.lines),
		OPT_JSON(&o.json),
		OPT_SUPPRESSIONS(&o.supfile, &o.defaults),
		OPT_LEAK_HEURISTICS,
		OPT_CALLBACK(0, "fail-over", &o, "BYTES",
			     "exit with status 3 when more than BYTES are reported leaked, 4 when\n"
			     "events were lost and the leaks they could hide or fake decide it,\n"
			     "or the trace is still being recorded",
			     opt_fail_over),
		OPT_CALLBACK(0, "errors-for-leak-kinds", &o, "KINDS",
			     "with a --leak-check scan, what --fail-over counts, as valgrind's\n"
			     "option: definite, indirect, possible, reachable, all or none\n"
			     "(default definite,possible)",
			     opt_fail_kinds),
		OPT_BOOL(0, "kernel", &o.kernel,
			 "kernel memory instead (record -e kmem): slab objects, pages and\n"
			 "percpu chunks still allocated, by kernel and user stack"),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	struct leaks_view *lv;
	char err[512];
	int r = cmd_parse(argc, argv, options, usage_text, a);

	if (r >= 0)
		return r;
	if (o.sort && strcmp(o.sort, "size") && strcmp(o.sort, "growth")) {
		msg_error("unknown sort key '%s': use size or growth", o.sort);
		return 2;
	}
	if (o.kernel)
		return leaks_kernel(a->trace, &o, a);
	if (!(lv = calloc(1, sizeof(*lv))))
		return msg_error("out of memory"), 1;
	lv->o = o;
	if (suppress_setup(&lv->sup, o.defaults, o.supfile, err, sizeof(err))) {
		msg_error("%s", err);
		free(lv);
		return 2;
	}
	if (cmd_view_open(s, a)) {
		suppress_release(&lv->sup);
		free(lv);
		return 1;
	}
	if (!allocs_recorded(s)) {
		msg_error("'%s' has no allocation events: record them with 'memsight record -e malloc'", s->path);
		suppress_release(&lv->sup);
		free(lv);
		return 1;
	}
	lv->l = (struct leaks){ .o = &lv->o, .older_ns = o.older_ms * 1000000ull };
	if (!(lv->l.a = cmd_allocs_shared(s, NULL, NULL))) {
		msg_error("out of memory");
		suppress_release(&lv->sup);
		free(lv);
		return 1;
	}
	hashmap_init(&lv->l.groups, 0);
	v->end = leaks_end;
	v->window = leaks_window;
	v->arg = lv;
	return -1;
}

int cmd_leaks(int argc, char **argv, struct analyze_opts *a)
{
	return cmd_view_main(argc, argv, a, leaks_view);
}
