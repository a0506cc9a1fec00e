/*
 * analyze/cmd/cmd_reclaim.c: memsight reclaim, memory pressure from one
 * recording: each thread's direct and memcg reclaim paired begin to end
 * (latency per process as a histogram and the slowest with their stacks,
 * as vmscan and drsnoop show them), kswapd from wake to sleep per node, and
 * the slab shrinkers that ran.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "../model/stacktab.h"

static const char usage_text[] =
	"usage: memsight reclaim [options] [FILE]\n"
	"\n"
	"Direct and memcg reclaim latency per process (record -e reclaim) as log2\n"
	"histograms, the slowest reclaims with their stacks, kswapd from wake to\n"
	"sleep per node, and the slab shrinkers that ran.\n";

#define HIST_SLOTS 32

enum rk { RK_DIRECT, RK_MEMCG, RK_NR };
static const char *const rk_names[RK_NR] = { "direct", "memcg" };

struct reclaim_ev {
	uint64_t time, latency, nr_reclaimed;
	int pid, tid, kind;
	struct stack_entry *stack;
};

struct reclaim_begin {
	uint64_t time;
	int kind;
	struct stack_entry *stack;
};

struct proc_hist {
	int pid;
	const char *comm;
	uint64_t count[RK_NR], total_ns[RK_NR], max_ns[RK_NR], reclaimed[RK_NR];
	uint64_t hist[RK_NR][HIST_SLOTS]; /* log2 of microseconds */
};

struct kswapd_node {
	int nid;
	uint64_t wakes, sleeps, awake_ns, max_ns, woke_at;
	int awake;
};

struct shrinker {
	uint64_t fn;
	uint64_t calls, freed, total_ns, scanned;
};

struct reclaim {
	long pid;
	uint64_t top;
	int lines, json;
	struct stacktab stacks;
	struct hashmap begins;	/* tid -> struct reclaim_begin * */
	struct hashmap procs;	/* pid -> struct proc_hist * */
	struct hashmap nodes;	/* nid -> struct kswapd_node * */
	struct hashmap shrink_pending; /* tid -> start time */
	struct hashmap shrinkers; /* function -> struct shrinker * */
	struct reclaim_ev *evs;
	size_t nr_evs, evs_alloc;
	uint64_t unpaired, wakeup_kswapd;
	struct shrinker **sh;	/* the shrinkers that ran, slowest first */
	size_t nsh;
};

/* BCC's log2 slots: 0 holds 0..1 us, slot i holds 2^i..2^(i+1)-1 us. */
static int hist_slot(uint64_t ns)
{
	uint64_t us = ns / 1000;
	int b = 0;

	while (us >= 2 && b < HIST_SLOTS - 1) {
		us >>= 1;
		b++;
	}
	return b;
}

static int on_reclaim(struct session *s, struct sample *smp, void *arg)
{
	struct reclaim *r = arg;
	enum ev_kind k = smp->ev->kind;
	struct hm_slot *slot;

	if (k == EVK_KSWAPD_WAKE || k == EVK_KSWAPD_SLEEP) {
		int nid = (int)sample_snum(smp, "nid");
		struct kswapd_node *n = hashmap_u64_obj(&r->nodes, (uint32_t)nid, sizeof(*n));

		if (!n)
			return -1;
		n->nid = nid;
		if (k == EVK_KSWAPD_WAKE) {
			n->wakes++;
			if (!n->awake)
				n->woke_at = smp->time;
			n->awake = 1;
		} else {
			uint64_t d = n->awake ? smp->time - n->woke_at : 0;

			n->sleeps++;
			n->awake_ns += d;
			if (d > n->max_ns)
				n->max_ns = d;
			n->awake = 0;
		}
		return 0;
	}
	if (k == EVK_WAKEUP_KSWAPD) {
		r->wakeup_kswapd++;
		return 0;
	}
	if (k == EVK_SHRINK_SLAB_START) {
		slot = hashmap_u64(&r->shrink_pending, smp->tid, NULL);
		if (!slot)
			return -1;
		slot->val = smp->time;
		return 0;
	}
	if (k == EVK_SHRINK_SLAB_END) {
		struct shrinker *sh = hashmap_u64_obj(&r->shrinkers, sample_num(smp, "shrink"), sizeof(*sh));

		if (!sh)
			return -1;
		sh->fn = sample_num(smp, "shrink");
		sh->calls++;
		sh->freed += sample_snum(smp, "retval") > 0 ? (uint64_t)sample_snum(smp, "retval") : 0;
		slot = hashmap_u64_find(&r->shrink_pending, smp->tid);
		if (slot && slot->val) {
			sh->total_ns += smp->time - slot->val;
			slot->val = 0;
		}
		return 0;
	}
	if (k == EVK_DIRECT_RECLAIM_BEGIN || k == EVK_MEMCG_RECLAIM_BEGIN) {
		struct reclaim_begin *b;

		if (r->pid >= 0 && smp->pid != (uint32_t)r->pid)
			return 0;
		b = hashmap_u64_obj(&r->begins, smp->tid, sizeof(*b));
		if (!b)
			return -1;
		b->time = smp->time;
		b->kind = k == EVK_DIRECT_RECLAIM_BEGIN ? RK_DIRECT : RK_MEMCG;
		b->stack = smp->nr_ips ? stacktab_add(&r->stacks, s, smp, 1) : NULL;
		return 0;
	}
	if (k == EVK_DIRECT_RECLAIM_END || k == EVK_MEMCG_RECLAIM_END) {
		int kind = k == EVK_DIRECT_RECLAIM_END ? RK_DIRECT : RK_MEMCG;
		struct reclaim_begin *b;
		struct reclaim_ev *e;
		struct proc_hist *p;

		if (r->pid >= 0 && smp->pid != (uint32_t)r->pid)
			return 0;
		slot = hashmap_u64_find(&r->begins, smp->tid);
		b = slot ? slot->ptr : NULL;
		if (!b || !b->time || b->kind != kind) {
			r->unpaired++;
			return 0;
		}
		if (r->nr_evs == r->evs_alloc) {
			size_t n = r->evs_alloc ? r->evs_alloc * 2 : 256;
			struct reclaim_ev *v = realloc(r->evs, n * sizeof(*v));

			if (!v)
				return -1;
			r->evs = v;
			r->evs_alloc = n;
		}
		e = &r->evs[r->nr_evs++];
		e->time = b->time;
		e->latency = smp->time - b->time;
		e->nr_reclaimed = sample_num(smp, "nr_reclaimed");
		e->pid = smp->pid;
		e->tid = smp->tid;
		e->kind = kind;
		e->stack = b->stack;
		b->time = 0;
		p = hashmap_u64_obj(&r->procs, smp->pid, sizeof(*p));
		if (!p)
			return -1;
		p->pid = smp->pid;
		p->comm = machine_comm(&s->m, smp->pid, smp->tid);
		p->count[kind]++;
		p->total_ns[kind] += e->latency;
		p->reclaimed[kind] += e->nr_reclaimed;
		if (e->latency > p->max_ns[kind])
			p->max_ns[kind] = e->latency;
		p->hist[kind][hist_slot(e->latency)]++;
		return 0;
	}
	return 0;
}

static void hist_print(const uint64_t *h)
{
	uint64_t max = 0;
	int last = -1;

	for (int i = 0; i < HIST_SLOTS; i++) {
		if (h[i] > max)
			max = h[i];
		if (h[i])
			last = i;
	}
	printf("     %-19s : %-8s %s\n", "usecs", "count", "distribution");
	for (int i = 0; i <= last; i++) {
		uint64_t lo = i ? 1ull << i : 0, hi = (1ull << (i + 1)) - 1;
		int bar = max ? (int)(h[i] * 40 / max) : 0;

		printf("     %8llu -> %-8llu : %-8llu |%-40.*s|\n", (unsigned long long)lo, (unsigned long long)hi,
		       (unsigned long long)h[i], bar, "****************************************");
	}
}

static int ev_cmp(const void *a, const void *b)
{
	const struct reclaim_ev *x = a, *y = b;

	return x->latency != y->latency ? (x->latency > y->latency ? -1 : 1) : (x->time > y->time) - (x->time < y->time);
}

static int shrinker_cmp(const void *a, const void *b)
{
	const struct shrinker *x = *(struct shrinker *const *)a, *y = *(struct shrinker *const *)b;

	return x->total_ns != y->total_ns ? (x->total_ns > y->total_ns ? -1 : 1) : (x->fn > y->fn) - (x->fn < y->fn);
}

static const char *shrinker_name(struct session *s, uint64_t fn, char *buf, size_t len)
{
	uint64_t off;
	const char *name = symbols_ksym(&s->syms, fn, &off);

	if (name && !off)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)fn);
	return buf;
}

/* The reclaims slowest first, the shrinkers by time spent. */
static int reclaim_sort(struct reclaim *r)
{
	r->sh = malloc((r->shrinkers.nr ? r->shrinkers.nr : 1) * sizeof(*r->sh));
	if (!r->sh)
		return -1;
	hashmap_for_each(&r->shrinkers, slot) r->sh[r->nsh++] = slot->ptr;
	if (r->nsh > 1)
		qsort(r->sh, r->nsh, sizeof(*r->sh), shrinker_cmp);
	if (r->nr_evs > 1)
		qsort(r->evs, r->nr_evs, sizeof(*r->evs), ev_cmp);
	return 0;
}

static void json_process(struct json *j, const struct proc_hist *p)
{
	json_begin(j, NULL);
	json_i64(j, "pid", p->pid);
	json_str(j, "comm", p->comm);
	for (int k = 0; k < RK_NR; k++) {
		int last = -1;

		json_begin(j, rk_names[k]);
		json_u64(j, "count", p->count[k]);
		json_u64(j, "total_ns", p->total_ns[k]);
		json_u64(j, "max_ns", p->max_ns[k]);
		json_u64(j, "nr_reclaimed", p->reclaimed[k]);
		for (int b = 0; b < HIST_SLOTS; b++)
			if (p->hist[k][b])
				last = b;
		json_begin_array(j, "hist_log2_us");
		for (int b = 0; b <= last; b++)
			json_u64(j, NULL, p->hist[k][b]);
		json_end(j);
		json_end(j);
	}
	json_end(j);
}

static void print_json(const struct reclaim *r, struct session *s)
{
	char name[256];
	struct json j;

	json_init(&j, stdout);
	json_begin(&j, NULL);
	json_str(&j, "trace", s->path);
	cmd_json_lost(&j, s);
	json_u64(&j, "reclaims", r->nr_evs);
	json_u64(&j, "unpaired", r->unpaired);
	json_begin_array(&j, "processes");
	hashmap_for_each(&r->procs, slot) json_process(&j, slot->ptr);
	json_end(&j);
	json_begin_array(&j, "slowest");
	for (size_t i = 0; i < r->nr_evs && i < r->top; i++) {
		const struct reclaim_ev *e = &r->evs[i];

		json_begin(&j, NULL);
		json_double(&j, "time_s", "%.6f", (e->time - s->first_time) / 1e9);
		json_i64(&j, "pid", e->pid);
		json_i64(&j, "tid", e->tid);
		json_str(&j, "comm", machine_comm(&s->m, e->pid, e->tid));
		json_str(&j, "kind", rk_names[e->kind]);
		json_u64(&j, "latency_ns", e->latency);
		json_u64(&j, "nr_reclaimed", e->nr_reclaimed);
		cmd_json_stack(&j, "frames", e->stack,
				r->lines);
		json_end(&j);
	}
	json_end(&j);
	json_begin_array(&j, "kswapd");
	hashmap_for_each(&r->nodes, slot) {
		const struct kswapd_node *n = slot->ptr;

		json_begin(&j, NULL);
		json_i64(&j, "node", n->nid);
		json_u64(&j, "wakes", n->wakes);
		json_u64(&j, "sleeps", n->sleeps);
		json_u64(&j, "awake_ns", n->awake_ns);
		json_u64(&j, "max_awake_ns", n->max_ns);
		json_end(&j);
	}
	json_end(&j);
	json_u64(&j, "wakeup_kswapd", r->wakeup_kswapd);
	json_begin_array(&j, "shrinkers");
	for (size_t i = 0; i < r->nsh && i < r->top; i++) {
		json_begin(&j, NULL);
		json_str(&j, "function", shrinker_name(s, r->sh[i]->fn, name, sizeof(name)));
		json_u64(&j, "calls", r->sh[i]->calls);
		json_u64(&j, "freed", r->sh[i]->freed);
		json_u64(&j, "total_ns", r->sh[i]->total_ns);
		json_end(&j);
	}
	json_end(&j);
	json_end(&j);
}

static void print_text(const struct reclaim *r, struct session *s)
{
	char name[256];

	printf("# memsight reclaim of '%s': %zu reclaims paired%s\n", s->path, r->nr_evs,
	       r->unpaired ? " (some ends had no begin: it came before the recording)" : "");
	hashmap_for_each(&r->procs, slot) {
		const struct proc_hist *p = slot->ptr;

		for (int k = 0; k < RK_NR; k++) {
			if (!p->count[k])
				continue;
			printf("\n%s reclaim, pid %d %s: %llu reclaims, %.3f ms in all, max %.3f ms, %llu pages "
			       "reclaimed\n",
			       rk_names[k], p->pid, p->comm, (unsigned long long)p->count[k], p->total_ns[k] / 1e6,
			       p->max_ns[k] / 1e6, (unsigned long long)p->reclaimed[k]);
			hist_print(p->hist[k]);
		}
	}
	if (r->nr_evs)
		printf("\n# slowest reclaims\n");
	for (size_t i = 0; i < r->nr_evs && i < r->top; i++) {
		const struct reclaim_ev *e = &r->evs[i];

		printf("\n%.3f ms %s reclaim at +%.6fs, %llu pages (pid %d tid %d %s)\n", e->latency / 1e6,
		       rk_names[e->kind], (e->time - s->first_time) / 1e9, (unsigned long long)e->nr_reclaimed, e->pid,
		       e->tid, machine_comm(&s->m, e->pid, e->tid));
		if (e->stack)
			print_stack(e->stack, r->lines, "\t\t");
	}
	printf("\n# kswapd: %llu wakeup requests\n", (unsigned long long)r->wakeup_kswapd);
	hashmap_for_each(&r->nodes, slot) {
		const struct kswapd_node *n = slot->ptr;

		printf("node %d: %llu wakes, %llu sleeps, awake %.3f ms in all, %.3f ms at most\n", n->nid,
		       (unsigned long long)n->wakes, (unsigned long long)n->sleeps, n->awake_ns / 1e6, n->max_ns / 1e6);
	}
	if (r->nsh)
		printf("\n# slab shrinkers\n%10s %12s %12s  %s\n", "CALLS", "FREED", "TIME(ms)", "SHRINKER");
	for (size_t i = 0; i < r->nsh && i < r->top; i++)
		printf("%10llu %12llu %12.3f  %s\n", (unsigned long long)r->sh[i]->calls,
		       (unsigned long long)r->sh[i]->freed, r->sh[i]->total_ns / 1e6,
		       shrinker_name(s, r->sh[i]->fn, name, sizeof(name)));
}

int cmd_reclaim(int argc, char **argv, struct analyze_opts *a)
{
	struct reclaim r = { .pid = -1, .lines = 1 };
	const struct opt options[] = {
		OPT_U64('T', "top", &r.top, "N", "slowest reclaims and shrinkers shown (default 10 in text, all in JSON)"),
		OPT_PID(&r.pid),
		OPT_LINES(&r.lines),
		OPT_JSON(&r.json),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	struct session s;
	char err[512] = "";
	int ret = 1, c = cmd_parse(argc, argv, options, usage_text, a);

	if (c >= 0)
		return c;
	r.top = cmd_top_count(r.top, r.json, 10);
	if (cmd_open_group(&s, a->trace, a, "reclaim", "reclaim", NULL))
		return 1;
	stacktab_init(&r.stacks, 1, 1);
	hashmap_init(&r.begins, 0);
	hashmap_init(&r.procs, 0);
	hashmap_init(&r.nodes, 0);
	hashmap_init(&r.shrink_pending, 0);
	hashmap_init(&r.shrinkers, 0);
	if (session_replay(&s, on_reclaim, &r, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
	} else if (reclaim_sort(&r)) {
		msg_error("out of memory");
	} else {
		(r.json ? print_json : print_text)(&r, &s);
		ret = 0;
	}
	free(r.sh);
	free(r.evs);
	hashmap_for_each(&r.begins, slot) free(slot->ptr);
	hashmap_for_each(&r.procs, slot) free(slot->ptr);
	hashmap_for_each(&r.nodes, slot) free(slot->ptr);
	hashmap_for_each(&r.shrinkers, slot) free(slot->ptr);
	hashmap_release(&r.begins);
	hashmap_release(&r.procs);
	hashmap_release(&r.nodes);
	hashmap_release(&r.shrink_pending);
	hashmap_release(&r.shrinkers);
	stacktab_release(&r.stacks);
	return cmd_close(&s, ret);
}
