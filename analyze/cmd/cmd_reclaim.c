/*
 * analyze/cmd/cmd_reclaim.c: memsight reclaim and memsight compaction, the
 * memory chapter's pressure tools from one recording. reclaim pairs each
 * thread's direct and memcg reclaim begin with its end (vmscan and drsnoop:
 * latency per process as a histogram, the slowest with their stacks),
 * measures kswapd from wake to sleep per node, and sums slab shrinkers;
 * compaction summarises page migrations by reason and compaction runs.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "../model/stacktab.h"

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
	int lines;
	struct stacktab stacks;
	struct hashmap begins;	/* tid -> struct reclaim_begin * */
	struct hashmap procs;	/* pid -> struct proc_hist * */
	struct hashmap nodes;	/* nid -> struct kswapd_node * */
	struct hashmap shrink_pending; /* tid -> start time */
	struct hashmap shrinkers; /* function -> struct shrinker * */
	struct reclaim_ev *evs;
	size_t nr_evs, evs_alloc;
	uint64_t unpaired, wakeup_kswapd;
};

static void *slot_obj(struct hashmap *m, uint64_t key, size_t size)
{
	struct hm_slot *slot = hashmap_u64(m, key, NULL);

	if (!slot)
		return NULL;
	if (!slot->ptr)
		slot->ptr = calloc(1, size);
	return slot->ptr;
}

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
		struct kswapd_node *n = slot_obj(&r->nodes, (uint32_t)nid, sizeof(*n));

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
		struct shrinker *sh = slot_obj(&r->shrinkers, sample_num(smp, "shrink"), sizeof(*sh));

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
		b = slot_obj(&r->begins, smp->tid, sizeof(*b));
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
		p = slot_obj(&r->procs, smp->pid, sizeof(*p));
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

static const char reclaim_usage[] =
	"usage: memsight reclaim [options] FILE\n"
	"\n"
	"Direct and memcg reclaim latency per process (record -e reclaim) as log2\n"
	"histograms, the slowest reclaims with their stacks, kswapd from wake to\n"
	"sleep per node, and the slab shrinkers that ran.\n"
	"\n"
	"  -T, --top N          slowest reclaims and shrinkers shown (default 10)\n"
	"      --pid PID        only this process\n"
	"      --lines          add file:line to each frame\n"
	"      --json           one JSON object instead of text\n"
	"  -h, --help           show this help\n"
	CMD_STACK_OPTIONS;

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

int cmd_reclaim(int argc, char **argv)
{
	enum { OPT_PID = 256, OPT_JSON, OPT_LINES };
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'T' },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct reclaim r = { .pid = -1, .top = 10 };
	struct session s;
	struct shrinker **sh = NULL;
	size_t nsh = 0;
	char err[512], name[256];
	uint64_t v, first;
	int c, json = 0, ret = 1;

	while ((c = getopt_long(argc, argv, "T:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'T':
			if (parse_u64("--top", optarg, &r.top))
				return 2;
			break;
		case OPT_PID:
			if (parse_u64("--pid", optarg, &v))
				return 2;
			r.pid = v;
			break;
		case OPT_JSON:
			json = 1;
			break;
		case OPT_LINES:
			r.lines = 1;
			break;
		case 'h':
			return cmd_usage(reclaim_usage, 1);
		default:
			return cmd_usage(reclaim_usage, 0);
		}
	}
	if (cmd_one_file(argc))
		return 2;
	if (cmd_open_group(&s, argv[optind], "reclaim", "reclaim", NULL))
		return 1;
	stacktab_init(&r.stacks, 1, 1);
	hashmap_init(&r.begins, 0);
	hashmap_init(&r.procs, 0);
	hashmap_init(&r.nodes, 0);
	hashmap_init(&r.shrink_pending, 0);
	hashmap_init(&r.shrinkers, 0);
	err[0] = 0;
	if (session_replay(&s, on_reclaim, &r, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
		goto out;
	}
	first = s.first_time;
	sh = malloc((r.shrinkers.nr ? r.shrinkers.nr : 1) * sizeof(*sh));
	if (!sh)
		goto out;
	hashmap_for_each(&r.shrinkers, slot) sh[nsh++] = slot->ptr;
	if (nsh > 1)
		qsort(sh, nsh, sizeof(*sh), shrinker_cmp);
	if (r.nr_evs > 1)
		qsort(r.evs, r.nr_evs, sizeof(*r.evs), ev_cmp);
	if (json) {
		int i = 0;

		printf("{\"trace\":");
		json_str(s.path);
		printf(",\"reclaims\":%zu,\"unpaired\":%llu,\"processes\":[", r.nr_evs, (unsigned long long)r.unpaired);
		hashmap_for_each(&r.procs, slot) {
			struct proc_hist *p = slot->ptr;

			printf("%s{\"pid\":%d,\"comm\":", i++ ? "," : "", p->pid);
			json_str(p->comm);
			for (int k = 0; k < RK_NR; k++) {
				int last = -1;

				printf(",\"%s\":{\"count\":%llu,\"total_ns\":%llu,\"max_ns\":%llu,\"nr_reclaimed\":%llu,"
				       "\"hist_log2_us\":[",
				       rk_names[k], (unsigned long long)p->count[k], (unsigned long long)p->total_ns[k],
				       (unsigned long long)p->max_ns[k], (unsigned long long)p->reclaimed[k]);
				for (int b = 0; b < HIST_SLOTS; b++)
					if (p->hist[k][b])
						last = b;
				for (int b = 0; b <= last; b++)
					printf("%s%llu", b ? "," : "", (unsigned long long)p->hist[k][b]);
				printf("]}");
			}
			putchar('}');
		}
		printf("],\"slowest\":[");
		for (size_t j = 0; j < r.nr_evs && j < r.top; j++) {
			struct reclaim_ev *e = &r.evs[j];

			printf("%s{\"time_s\":%.6f,\"pid\":%d,\"tid\":%d,\"comm\":", j ? "," : "", (e->time - first) / 1e9,
			       e->pid, e->tid);
			json_str(machine_comm(&s.m, e->pid, e->tid));
			printf(",\"kind\":\"%s\",\"latency_ns\":%llu,\"nr_reclaimed\":%llu,\"frames\":", rk_names[e->kind],
			       (unsigned long long)e->latency, (unsigned long long)e->nr_reclaimed);
			if (e->stack)
				json_frames(e->stack->frames, e->stack->nr_frames, r.lines);
			else
				printf("[]");
			putchar('}');
		}
		printf("],\"kswapd\":[");
		i = 0;
		hashmap_for_each(&r.nodes, slot) {
			struct kswapd_node *n = slot->ptr;

			printf("%s{\"node\":%d,\"wakes\":%llu,\"sleeps\":%llu,\"awake_ns\":%llu,\"max_awake_ns\":%llu}",
			       i++ ? "," : "", n->nid, (unsigned long long)n->wakes, (unsigned long long)n->sleeps,
			       (unsigned long long)n->awake_ns, (unsigned long long)n->max_ns);
		}
		printf("],\"wakeup_kswapd\":%llu,\"shrinkers\":[", (unsigned long long)r.wakeup_kswapd);
		for (size_t j = 0; j < nsh && j < r.top; j++) {
			printf("%s{\"function\":", j ? "," : "");
			json_str(shrinker_name(&s, sh[j]->fn, name, sizeof(name)));
			printf(",\"calls\":%llu,\"freed\":%llu,\"total_ns\":%llu}", (unsigned long long)sh[j]->calls,
			       (unsigned long long)sh[j]->freed, (unsigned long long)sh[j]->total_ns);
		}
		printf("]}\n");
	} else {
		printf("# memsight reclaim of '%s': %zu reclaims paired%s\n", s.path, r.nr_evs,
		       r.unpaired ? " (some ends had no begin: it came before the recording)" : "");
		hashmap_for_each(&r.procs, slot) {
			struct proc_hist *p = slot->ptr;

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
		if (r.nr_evs)
			printf("\n# slowest reclaims\n");
		for (size_t j = 0; j < r.nr_evs && j < r.top; j++) {
			struct reclaim_ev *e = &r.evs[j];

			printf("\n%.3f ms %s reclaim at +%.6fs, %llu pages (pid %d tid %d %s)\n", e->latency / 1e6,
			       rk_names[e->kind], (e->time - first) / 1e9, (unsigned long long)e->nr_reclaimed, e->pid,
			       e->tid, machine_comm(&s.m, e->pid, e->tid));
			if (e->stack)
				print_frames(e->stack->frames, e->stack->nr_frames, r.lines, "\t\t");
		}
		printf("\n# kswapd: %llu wakeup requests\n", (unsigned long long)r.wakeup_kswapd);
		hashmap_for_each(&r.nodes, slot) {
			struct kswapd_node *n = slot->ptr;

			printf("node %d: %llu wakes, %llu sleeps, awake %.3f ms in all, %.3f ms at most\n", n->nid,
			       (unsigned long long)n->wakes, (unsigned long long)n->sleeps, n->awake_ns / 1e6,
			       n->max_ns / 1e6);
		}
		if (nsh)
			printf("\n# slab shrinkers\n%10s %12s %12s  %s\n", "CALLS", "FREED", "TIME(ms)", "SHRINKER");
		for (size_t j = 0; j < nsh && j < r.top; j++)
			printf("%10llu %12llu %12.3f  %s\n", (unsigned long long)sh[j]->calls,
			       (unsigned long long)sh[j]->freed, sh[j]->total_ns / 1e6,
			       shrinker_name(&s, sh[j]->fn, name, sizeof(name)));
	}
	ret = 0;
out:
	session_report_unwind(&s);
	symbols_report_unresolved(&s.syms, stderr);
	free(sh);
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
	session_release(&s);
	return ret;
}

/* ---- compaction ------------------------------------------------------ */

static const char compaction_usage[] =
	"usage: memsight compaction [options] FILE\n"
	"\n"
	"Page migrations by reason (record -e migrate) and compaction runs with their\n"
	"time and outcome (record -e compaction), summarised; the stacks that asked\n"
	"for direct compaction.\n"
	"\n"
	"  -T, --top N          stacks shown (default 5)\n"
	"      --json           one JSON object instead of text\n"
	"  -h, --help           show this help\n"
	CMD_STACK_OPTIONS;

#define MIGRATE_REASONS 16
#define COMPACT_STATUSES 16

struct compaction {
	uint64_t migrate_calls[MIGRATE_REASONS], succeeded[MIGRATE_REASONS], failed[MIGRATE_REASONS];
	uint64_t runs, run_ns, max_ns, status[COMPACT_STATUSES];
	uint64_t migrated, migrate_failed, deferred, kcompactd_wakes, kcompactd_sleeps, direct;
	struct hashmap begins;	/* tid -> time */
	struct stacktab stacks;	/* try_to_compact_pages */
};

static const char *const migrate_reasons[] = { "compaction",	  "memory_failure",  "memory_hotplug",
					       "syscall_or_cpuset", "mempolicy_mbind", "numa_misplaced",
					       "contig_range",	  "longterm_pin",    "demotion",
					       "damon" };

static const char *compact_status(int st)
{
	switch (st) {
	case 1: return "skipped";
	case 2: return "deferred";
	case 4: return "continue";
	case 5: return "complete";
	case 6: return "partial_skipped";
	case 7: return "contended";
	case 8: return "success";
	default: return "other";
	}
}

static int on_compaction(struct session *s, struct sample *smp, void *arg)
{
	struct compaction *c = arg;
	struct hm_slot *slot;
	uint64_t r;

	switch (smp->ev->kind) {
	case EVK_MIGRATE:
		r = sample_num(smp, "reason");
		if (r >= MIGRATE_REASONS)
			r = MIGRATE_REASONS - 1;
		c->migrate_calls[r]++;
		c->succeeded[r] += sample_num(smp, "succeeded");
		c->failed[r] += sample_num(smp, "failed");
		break;
	case EVK_COMPACT_TRY:
		c->direct++;
		if (smp->nr_ips && !stacktab_add(&c->stacks, s, smp, 1))
			return -1;
		break;
	case EVK_COMPACT_BEGIN:
		if (!(slot = hashmap_u64(&c->begins, smp->tid, NULL)))
			return -1;
		slot->val = smp->time;
		break;
	case EVK_COMPACT_END:
		slot = hashmap_u64_find(&c->begins, smp->tid);
		r = sample_num(smp, "status");
		c->status[r < COMPACT_STATUSES ? r : COMPACT_STATUSES - 1]++;
		c->runs++;
		if (slot && slot->val) {
			uint64_t d = smp->time - slot->val;

			c->run_ns += d;
			if (d > c->max_ns)
				c->max_ns = d;
			slot->val = 0;
		}
		break;
	case EVK_COMPACT_MIGRATEPAGES:
		c->migrated += sample_num(smp, "nr_migrated");
		c->migrate_failed += sample_num(smp, "nr_failed");
		break;
	case EVK_COMPACT_DEFER:
		c->deferred++;
		break;
	case EVK_KCOMPACTD_WAKE:
		c->kcompactd_wakes++;
		break;
	case EVK_KCOMPACTD_SLEEP:
		c->kcompactd_sleeps++;
		break;
	default:
		break;
	}
	return 0;
}

int cmd_compaction(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct compaction c;
	struct session s;
	uint64_t top = 5;
	size_t nst = 0;
	struct stack_entry **st = NULL;
	char err[512];
	int ch, json = 0, ret = 1;

	while ((ch = getopt_long(argc, argv, "T:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'T':
			if (parse_u64("--top", optarg, &top))
				return 2;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			return cmd_usage(compaction_usage, 1);
		default:
			return cmd_usage(compaction_usage, 0);
		}
	}
	if (cmd_one_file(argc))
		return 2;
	if (cmd_open_group(&s, argv[optind], "migration or compaction", "migrate", "compaction"))
		return 1;
	memset(&c, 0, sizeof(c));
	hashmap_init(&c.begins, 0);
	stacktab_init(&c.stacks, 1, 1);
	err[0] = 0;
	if (session_replay(&s, on_compaction, &c, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
		goto out;
	}
	st = stacktab_sorted(&c.stacks, 0, &nst);
	if (!st)
		goto out;
	if (json) {
		int i = 0;

		printf("{\"trace\":");
		json_str(s.path);
		printf(",\"migrations\":[");
		for (int r = 0; r < MIGRATE_REASONS; r++) {
			if (!c.migrate_calls[r])
				continue;
			printf("%s{\"reason\":\"%s\",\"calls\":%llu,\"succeeded\":%llu,\"failed\":%llu}", i++ ? "," : "",
			       r < 10 ? migrate_reasons[r] : "other", (unsigned long long)c.migrate_calls[r],
			       (unsigned long long)c.succeeded[r], (unsigned long long)c.failed[r]);
		}
		printf("],\"compaction\":{\"runs\":%llu,\"total_ns\":%llu,\"max_ns\":%llu,\"migrated\":%llu,"
		       "\"migrate_failed\":%llu,\"deferred\":%llu,\"direct\":%llu,\"kcompactd_wakes\":%llu,"
		       "\"kcompactd_sleeps\":%llu,\"status\":{",
		       (unsigned long long)c.runs, (unsigned long long)c.run_ns, (unsigned long long)c.max_ns,
		       (unsigned long long)c.migrated, (unsigned long long)c.migrate_failed,
		       (unsigned long long)c.deferred, (unsigned long long)c.direct,
		       (unsigned long long)c.kcompactd_wakes, (unsigned long long)c.kcompactd_sleeps);
		i = 0;
		for (int k = 0; k < COMPACT_STATUSES; k++)
			if (c.status[k])
				printf("%s\"%s\":%llu", i++ ? "," : "", compact_status(k), (unsigned long long)c.status[k]);
		printf("}}}\n");
	} else {
		printf("# memsight compaction of '%s'\n\n# page migrations\n%-20s %10s %12s %10s\n", s.path, "REASON",
		       "CALLS", "SUCCEEDED", "FAILED");
		for (int r = 0; r < MIGRATE_REASONS; r++)
			if (c.migrate_calls[r])
				printf("%-20s %10llu %12llu %10llu\n", r < 10 ? migrate_reasons[r] : "other",
				       (unsigned long long)c.migrate_calls[r], (unsigned long long)c.succeeded[r],
				       (unsigned long long)c.failed[r]);
		printf("\n# compaction: %llu runs, %.3f ms in all, %.3f ms at most; %llu pages migrated, %llu failed; "
		       "%llu deferred; %llu direct compactions; kcompactd woke %llu times\n",
		       (unsigned long long)c.runs, c.run_ns / 1e6, c.max_ns / 1e6, (unsigned long long)c.migrated,
		       (unsigned long long)c.migrate_failed, (unsigned long long)c.deferred,
		       (unsigned long long)c.direct, (unsigned long long)c.kcompactd_wakes);
		for (int k = 0; k < COMPACT_STATUSES; k++)
			if (c.status[k])
				printf("  %-16s %llu\n", compact_status(k), (unsigned long long)c.status[k]);
		for (size_t j = 0; j < nst && j < top; j++) {
			printf("\n%llu direct compactions from stack (pid %d %s)\n", (unsigned long long)st[j]->weight,
			       st[j]->pid, st[j]->comm);
			print_frames(st[j]->frames, st[j]->nr_frames, 0, "\t\t");
		}
	}
	ret = 0;
out:
	free(st);
	hashmap_release(&c.begins);
	stacktab_release(&c.stacks);
	symbols_report_unresolved(&s.syms, stderr);
	session_release(&s);
	return ret;
}
