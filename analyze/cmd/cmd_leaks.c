/*
 * analyze/cmd/cmd_leaks.c: memsight leaks, allocations still outstanding when
 * the recording ended, grouped by stack, largest (or steadiest growing)
 * first, in the form BCC's memleak made familiar. For CI: --json and
 * --fail-over.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/allocs.h"
#include "cmd.h"
#include "../model/kallocs.h"
#include "../model/reach.h"
#include "../model/suppress.h"

static const char usage_text[] =
	"usage: memsight leaks [options] FILE\n"
	"\n"
	"  -T, --top N           stacks shown (default 10)\n"
	"  -o, --older MS        only allocations at least MS milliseconds old when the recording ended\n"
	"      --pid PID         only this process\n"
	"      --sort KEY        size (default): most bytes first; growth: steadiest growth first\n"
	"      --lines           add file:line to each frame\n"
	"      --json            one JSON object instead of text\n"
	"      --suppress FILE   more suppressions, one 'leak:PATTERN' per line (LeakSanitizer's format)\n"
	"      --no-default-suppressions\n"
	"                        report libc's one-time allocations (stdio buffers, TLS, loader) too\n"
	"      --fail-over BYTES exit with status 3 when more than BYTES are reported leaked, 4 when\n"
	"                        events were lost and the leaks they could hide or fake decide it\n"
	"      --kernel          kernel memory instead (record -e kmem): slab objects, pages and\n"
	"                        percpu chunks still allocated, by kernel and user stack\n"
	"  -h, --help            show this help\n"
	CMD_STACK_OPTIONS;

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
	double growth;		   /* bytes per second over the recording's second half */
	const char *suppressed_by;
};

struct leaks {
	long pid;
	uint64_t older_ns, end, start;
	uint64_t horizon;	   /* events before this time may be missing (0: none) */
	struct hashmap groups;	   /* stack entry (or pid for stackless) -> struct group * */
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

/* Lost first, then indirectly lost, then still reachable. */
static int reach_rank(uint8_t k)
{
	return k == REACH_LOST ? 0 : k == REACH_INDIRECT ? 1 : k == REACH_REACHABLE ? 2 : 3;
}

static int by_size(const void *a, const void *b)
{
	const struct group *x = *(struct group *const *)a, *y = *(struct group *const *)b;

	if (x->reach != y->reach)
		return reach_rank(x->reach) - reach_rank(y->reach);

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->count > y->count ? -1 : x->count < y->count;
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

struct kleaks_opts {
	long pid;
	uint64_t older_ns, top;
	int lines, json, have_fail;
	uint64_t fail_over;
};

struct kgroup {
	struct stack_entry *stack;
	int pid;
	uint64_t bytes, count[KA_NR];
};

static int kgroup_cmp(const void *a, const void *b)
{
	const struct kgroup *x = *(struct kgroup *const *)a, *y = *(struct kgroup *const *)b;

	return x->bytes != y->bytes ? (x->bytes > y->bytes ? -1 : 1) : x->pid - y->pid;
}

/* memsight leaks --kernel: what the kmem group left allocated, grouped by
 * the stack that allocated it, with the pairing figures that show how far
 * to trust it. */
static int leaks_kernel(const char *path, const struct kleaks_opts *o)
{
	struct session s;
	struct kallocs k;
	struct hashmap groups;
	struct kgroup **v = NULL, nostack = { 0 };
	uint64_t total = 0, count = 0, end;
	size_t nv = 0;
	char err[512];
	int ret = 1;

	if (cmd_open_group(&s, path, "kernel allocation", "kmem", NULL))
		return 1;
	kallocs_init(&k, &s, o->pid);
	hashmap_init(&groups, 0);
	if (kallocs_replay(&k, &s, err, sizeof(err))) {
		msg_error("%s", err);
		goto out;
	}
	end = s.last_time;
	for (int c = 0; c < KA_NR; c++) {
		hashmap_for_each(&k.live[c], slot) {
			struct kalloc_rec *r = slot->ptr;
			struct hm_slot *gs;
			struct kgroup *g = &nostack;

			if (o->older_ns && end - r->time < o->older_ns)
				continue;
			if (r->stack) {
				gs = hashmap_u64(&groups, (uintptr_t)r->stack, NULL);
				if (!gs || (!gs->ptr && !(gs->ptr = calloc(1, sizeof(*g)))))
					goto oom;
				g = gs->ptr;
				g->stack = r->stack;
				g->pid = r->pid;
			}
			g->bytes += r->bytes * k.period;
			g->count[c] += k.period;
			total += r->bytes * k.period;
			count += k.period;
		}
	}
	v = malloc((groups.nr ? groups.nr : 1) * sizeof(*v));
	if (!v)
		goto oom;
	hashmap_for_each(&groups, gs) v[nv++] = gs->ptr;
	if (nv > 1)
		qsort(v, nv, sizeof(*v), kgroup_cmp);
	if (o->json) {
		printf("{\"trace\":");
		json_str(s.path);
		printf(",\"kernel\":true,\"estimate\":%s,\"period\":%llu,\"outstanding_bytes\":%llu,"
		       "\"outstanding\":%llu,\"classes\":{",
		       k.period > 1 ? "true" : "false", (unsigned long long)k.period, (unsigned long long)total,
		       (unsigned long long)count);
		for (int c = 0; c < KA_NR; c++)
			printf("%s\"%s\":{\"allocations\":%llu,\"bytes\":%llu,\"frees\":%llu,\"matched_frees\":%llu,"
			       "\"unmatched_frees\":%llu,\"lost_frees\":%llu,\"outstanding\":%zu}",
			       c ? "," : "", kalloc_class_names[c], (unsigned long long)k.allocs[c],
			       (unsigned long long)k.alloc_bytes[c], (unsigned long long)k.frees[c],
			       (unsigned long long)k.matched[c], (unsigned long long)k.unmatched[c],
			       (unsigned long long)k.replaced[c], k.live[c].nr);
		printf("},\"stacks\":[");
		for (size_t i = 0; i < nv && i < o->top; i++) {
			printf("%s{\"pid\":%d,\"comm\":", i ? "," : "", v[i]->pid);
			json_str(v[i]->stack->comm);
			printf(",\"bytes\":%llu", (unsigned long long)v[i]->bytes);
			for (int c = 0; c < KA_NR; c++)
				printf(",\"%s\":%llu", kalloc_class_names[c], (unsigned long long)v[i]->count[c]);
			printf(",\"frames\":");
			json_frames(v[i]->stack->frames, v[i]->stack->nr_frames, o->lines);
			putchar('}');
		}
		printf("]}\n");
	} else {
		printf("# memsight leaks --kernel of '%s': %llu bytes in %llu allocations outstanding from %zu stacks%s\n",
		       s.path, (unsigned long long)total, (unsigned long long)count, nv,
		       k.period > 1 ? " (ESTIMATE)" : "");
		if (k.period > 1)
			printf("# sampled recording (kmem/%llu): allocations and frees are sampled apart, so pairs are "
			       "missed; counts scaled by %llu\n",
			       (unsigned long long)k.period, (unsigned long long)k.period);
		for (int c = 0; c < KA_NR; c++)
			printf("# %-6s %llu allocations (%llu bytes), %llu frees: %llu of these allocations, %llu of "
			       "memory allocated before%s; %zu outstanding\n",
			       kalloc_class_names[c], (unsigned long long)k.allocs[c],
			       (unsigned long long)k.alloc_bytes[c], (unsigned long long)k.frees[c],
			       (unsigned long long)k.matched[c], (unsigned long long)k.unmatched[c],
			       o->pid >= 0 ? " or by other processes" : "", k.live[c].nr);
		if (k.replaced[0] + k.replaced[1] + k.replaced[2])
			printf("# %llu addresses were allocated again with no free seen (frees lost or filtered)\n",
			       (unsigned long long)(k.replaced[0] + k.replaced[1] + k.replaced[2]));
		if (nostack.bytes)
			printf("# %llu bytes outstanding have no stack\n", (unsigned long long)nostack.bytes);
		for (size_t i = 0; i < nv && i < o->top; i++) {
			struct kgroup *g = v[i];
			const char *sep = "";

			printf("\n%s%llu bytes in ", k.period > 1 ? "~" : "", (unsigned long long)g->bytes);
			for (int c = 0; c < KA_NR; c++) {
				if (!g->count[c])
					continue;
				printf("%s%llu %s", sep, (unsigned long long)g->count[c],
				       c == KA_SLAB ? "objects" : c == KA_PAGE ? "page allocations" : "percpu chunks");
				sep = ", ";
			}
			printf(" from stack (pid %d %s)\n", g->pid, g->stack->comm);
			print_frames(g->stack->frames, g->stack->nr_frames, o->lines, "\t\t");
		}
	}
	ret = 0;
	if (o->have_fail && session_incomplete(&s)) {
		ret = 4;
		msg_note("the trace is incomplete (%s): cannot tell whether the kernel's "
				"outstanding memory passes --fail-over %llu; record it again",
			s.r.stop[0] ? "cut short" : "events were lost", (unsigned long long)o->fail_over);
	} else if (o->have_fail && total > o->fail_over) {
		ret = 3;
		msg_note("%llu kernel bytes outstanding, over the --fail-over limit of %llu",
			(unsigned long long)total, (unsigned long long)o->fail_over);
	}
	goto out;
oom:
	msg_error("out of memory");
out:
	symbols_report_unresolved(&s.syms, stderr);
	free(v);
	hashmap_for_each(&groups, gs) free(gs->ptr);
	hashmap_release(&groups);
	kallocs_release(&k);
	session_release(&s);
	return ret;
}

int cmd_leaks(int argc, char **argv)
{
	enum { OPT_PID = 256, OPT_SORT, OPT_LINES, OPT_JSON, OPT_SUPPRESS, OPT_NO_DEFAULTS, OPT_FAIL_OVER,
	       OPT_KERNEL };
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'T' },
		{ "older", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "sort", required_argument, NULL, OPT_SORT },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "suppress", required_argument, NULL, OPT_SUPPRESS },
		{ "no-default-suppressions", no_argument, NULL, OPT_NO_DEFAULTS },
		{ "fail-over", required_argument, NULL, OPT_FAIL_OVER },
		{ "kernel", no_argument, NULL, OPT_KERNEL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct leaks l = { .pid = -1 };
	struct suppress sup;
	struct allocs a;
	struct session s;
	struct group **v = NULL;
	const char *supfile = NULL;
	char err[512], sz[32];
	uint64_t top = 10, val, fail_over = 0;
	int c, ret = 1, growth = 0, lines = 0, json = 0, defaults = 1, have_fail = 0, kernel = 0;
	uint64_t leak_bytes = 0, leak_count = 0, sup_bytes = 0, sup_count = 0, sup_groups = 0, nogroup_count = 0;
	uint64_t unsure_bytes = 0, unsure_count = 0, lost;
	uint64_t kind_bytes[REACH_NR] = { 0 }, kind_count[REACH_NR] = { 0 };
	struct reach_stats rst = { 0 };
	size_t nv = 0;
	double dur;

	while ((c = getopt_long(argc, argv, "T:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'T':
			if (parse_u64("--top", optarg, &top))
				return 2;
			break;
		case 'o':
			if (parse_u64("--older", optarg, &val))
				return 2;
			l.older_ns = val * 1000000ull;
			break;
		case OPT_PID:
			if (parse_u64("--pid", optarg, &val))
				return 2;
			l.pid = val;
			break;
		case OPT_SORT:
			if (!strcmp(optarg, "growth"))
				growth = 1;
			else if (strcmp(optarg, "size")) {
				msg_error("unknown sort key '%s': use size or growth", optarg);
				return 2;
			}
			break;
		case OPT_LINES:
			lines = 1;
			break;
		case OPT_JSON:
			json = 1;
			break;
		case OPT_SUPPRESS:
			supfile = optarg;
			break;
		case OPT_NO_DEFAULTS:
			defaults = 0;
			break;
		case OPT_KERNEL:
			kernel = 1;
			break;
		case OPT_FAIL_OVER:
			if (parse_u64("--fail-over", optarg, &fail_over))
				return 2;
			have_fail = 1;
			break;
		case 'h':
			return cmd_usage(usage_text, 1);
		default:
			return cmd_usage(usage_text, 0);
		}
	}
	if (cmd_one_file(argc))
		return 2;
	suppress_init(&sup);
	if ((defaults && suppress_add_defaults(&sup)) || (supfile && suppress_load(&sup, supfile, err, sizeof(err)))) {
		msg_error("%s", supfile ? err : "out of memory");
		suppress_release(&sup);
		return 2;
	}
	if (kernel) {
		struct kleaks_opts ko = { l.pid, l.older_ns, top, lines, json, have_fail, fail_over };

		suppress_release(&sup);
		return leaks_kernel(argv[optind], &ko);
	}
	if (cmd_open(&s, argv[optind])) {
		suppress_release(&sup);
		return 1;
	}
	if (!allocs_recorded(&s)) {
		msg_error("'%s' has no allocation events: record them with 'memsight record -e malloc'", argv[optind]);
		goto out_session;
	}
	allocs_init(&a, &s);
	hashmap_init(&l.groups, 0);
	if (allocs_replay(&a, &s, NULL, NULL, err, sizeof(err))) {
		msg_error("%s", err);
		goto out;
	}
	if (s.nr_reach && reach_classify(&s, &a, &rst, err, sizeof(err))) {
		msg_error("%s", err);
		goto out;
	}
	l.start = s.first_time;
	l.end = s.last_time;
	l.horizon = session_loss_horizon(&s);
	lost = s.lost > s.lost_records ? s.lost : s.lost_records;
	dur = l.end > l.start ? (l.end - l.start) / 1e9 : 0;
	hashmap_for_each(&a.procs, p) {
		hashmap_for_each((struct hashmap *)p->ptr, rs) {
			struct alloc_rec *r = rs->ptr;
			struct group *g;

			if (l.pid >= 0 && r->pid != l.pid)
				continue;
			if (l.older_ns && l.end - r->time < l.older_ns)
				continue;
			g = group_of(&l, &s, r);
			if (!g)
				goto out;
			g->bytes += r->size;
			g->count++;
			if (r->time < g->first)
				g->first = r->time;
			if (r->time > g->last)
				g->last = r->time;
			if (r->time >= l.start + (l.end - l.start) / 2)
				g->late_bytes += r->size;
			/* A free lost with the events would look like this. */
			if (r->time < l.horizon) {
				g->uncertain++;
				g->uncertain_bytes += r->size;
			}
		}
	}
	v = malloc((l.groups.nr ? l.groups.nr : 1) * sizeof(*v));
	if (!v)
		goto out;
	hashmap_for_each(&l.groups, gs) {
		struct group *g = gs->ptr;

		/* A steady leak keeps allocating through the second half; a
		 * start-up allocation kept for good does not. */
		g->growth = dur > 0 ? g->late_bytes * a.sample / (dur / 2) : 0;
		g->bytes *= a.sample;
		g->late_bytes *= a.sample;
		g->uncertain_bytes *= a.sample;
		if (!g->stack) {
			nogroup_count += g->count;
			continue;
		}
		g->suppressed_by = suppress_match(&sup, g->stack->frames, g->stack->nr_frames);
		if (g->suppressed_by) {
			sup_bytes += g->bytes;
			sup_count += g->count;
			sup_groups++;
			continue;
		}
		leak_bytes += g->bytes;
		leak_count += g->count;
		unsure_bytes += g->uncertain_bytes;
		unsure_count += g->uncertain;
		kind_bytes[g->reach] += g->bytes;
		kind_count[g->reach] += g->count;
		v[nv++] = g;
	}
	if (nv > 1)
		qsort(v, nv, sizeof(*v), growth ? by_growth : by_size);
	/* With a scan, a block still reachable is no leak: the figure and
	 * the gate count what is lost (definitely and indirectly, as
	 * valgrind's do); what the scan did not cover counts as before. */
	if (rst.processes) {
		leak_bytes -= kind_bytes[REACH_REACHABLE];
		leak_count -= kind_count[REACH_REACHABLE];
	}
	if (json) {
		printf("{\"trace\":");
		json_str(s.path);
		printf(",\"estimate\":%s,\"sample\":%u,\"duration_s\":%.6f,\"incomplete\":%s,\"lost\":%llu,"
		       "\"leaked_bytes\":%llu,\"leaked_allocations\":%llu,\"uncertain_bytes\":%llu,"
		       "\"uncertain_allocations\":%llu,\"suppressed_bytes\":%llu,\"suppressed_allocations\":%llu,"
		       "\"unmatched_frees\":%llu,\"double_frees\":%llu,\"allocations\":%llu,\"frees\":%llu,"
		       "\"leak_check\":",
		       a.sample > 1 ? "true" : "false", a.sample, dur, session_incomplete(&s) ? "true" : "false",
		       (unsigned long long)lost, (unsigned long long)leak_bytes,
		       (unsigned long long)leak_count * a.sample, (unsigned long long)unsure_bytes,
		       (unsigned long long)unsure_count * a.sample, (unsigned long long)sup_bytes,
		       (unsigned long long)sup_count * a.sample, (unsigned long long)a.unmatched_frees,
		       (unsigned long long)a.double_frees, (unsigned long long)a.nr_allocs,
		       (unsigned long long)a.nr_frees);
		if (rst.processes) {
			printf("{\"processes\":%d,\"scan_ms\":%.3f,\"scanned_bytes\":%llu", rst.processes,
			       rst.scan_ns / 1e6, (unsigned long long)rst.scanned_bytes);
			for (int k = REACH_LOST; k < REACH_NR; k++)
				printf(",\"%s_bytes\":%llu,\"%s_allocations\":%llu", reach_kind_keys[k],
				       (unsigned long long)kind_bytes[k], reach_kind_keys[k],
				       (unsigned long long)kind_count[k] * a.sample);
			printf("}");
		} else {
			printf("null");
		}
		printf(",\"stacks\":[");
		for (size_t i = 0; i < nv && i < top; i++) {
			struct group *g = v[i];

			printf("%s{\"pid\":%d,\"comm\":", i ? "," : "", g->pid);
			json_str(g->comm);
			printf(",\"kind\":");
			if (g->reach)
				json_str(reach_kind_keys[g->reach]);
			else
				printf("null");
			printf(",\"bytes\":%llu,\"allocations\":%llu,\"uncertain_bytes\":%llu,"
			       "\"uncertain_allocations\":%llu,\"first_s\":%.6f,\"last_s\":%.6f,"
			       "\"growth_bytes_per_s\":",
			       (unsigned long long)g->bytes, (unsigned long long)g->count * a.sample,
			       (unsigned long long)g->uncertain_bytes, (unsigned long long)g->uncertain * a.sample,
			       (g->first - l.start) / 1e9, (g->last - l.start) / 1e9);
			if (dur >= LEAKS_GROWTH_MIN_S)
				printf("%.0f", g->growth);
			else
				printf("null");
			printf(",\"frames\":");
			json_frames(g->stack->frames, g->stack->nr_frames, lines);
			printf("}");
		}
		printf("]}\n");
	} else {
		size_t lost_stacks = 0;

		for (size_t i = 0; i < nv; i++)
			lost_stacks += v[i]->reach != REACH_REACHABLE;
		if (rst.processes)
			printf("# memsight leaks of '%s': %llu bytes in %llu allocations lost from %zu stacks%s\n", s.path,
			       (unsigned long long)leak_bytes, (unsigned long long)leak_count * a.sample, lost_stacks,
			       a.sample > 1 ? " (ESTIMATE)" : "");
		else
			printf("# memsight leaks of '%s': %llu bytes in %llu allocations outstanding from %zu stacks%s\n",
			       s.path, (unsigned long long)leak_bytes, (unsigned long long)leak_count * a.sample, nv,
			       a.sample > 1 ? " (ESTIMATE)" : "");
		if (a.sample > 1)
			printf("# sampled recording (-s %u): bytes and counts are estimates, scaled by %u\n", a.sample,
			       a.sample);
		if (rst.processes)
			printf("# leak check of %d process%s (paused %.1f ms to scan %s): definitely lost %llu bytes in "
			       "%llu allocations, indirectly lost %llu in %llu, still reachable %llu in %llu\n",
			       rst.processes, rst.processes == 1 ? "" : "es", rst.scan_ns / 1e6,
			       fmt_bytes(rst.scanned_bytes, sz, sizeof(sz)), (unsigned long long)kind_bytes[REACH_LOST],
			       (unsigned long long)kind_count[REACH_LOST] * a.sample,
			       (unsigned long long)kind_bytes[REACH_INDIRECT],
			       (unsigned long long)kind_count[REACH_INDIRECT] * a.sample,
			       (unsigned long long)kind_bytes[REACH_REACHABLE],
			       (unsigned long long)kind_count[REACH_REACHABLE] * a.sample);
		else if (session_host(&s, "leak_check", sz, sizeof(sz), NULL))
			printf("# leak check: the recording holds no scan (see its summary): lost and reachable "
			       "are not told apart\n");
		if (session_incomplete(&s) && unsure_count)
			printf("# INCOMPLETE: %s; %llu bytes in %llu of these allocations were made before the last "
			       "loss, and their frees may be among what was lost (marked UNCERTAIN below)\n",
			       lost ? "events were lost while recording" : "the trace is cut short",
			       (unsigned long long)unsure_bytes, (unsigned long long)unsure_count * a.sample);
		else if (session_incomplete(&s))
			printf("# INCOMPLETE: %s; none of these allocations was made before the last loss, but a "
			       "lost allocation may hide a leak\n",
			       lost ? "events were lost while recording" : "the trace is cut short");
		if (sup_groups)
			printf("# suppressed: %llu bytes in %llu allocations from %llu stacks (libc's one-time "
			       "allocations%s; --no-default-suppressions shows them)\n",
			       (unsigned long long)sup_bytes, (unsigned long long)sup_count * a.sample,
			       (unsigned long long)sup_groups, supfile ? " and --suppress" : "");
		if (a.double_frees)
			printf("# %llu frees of blocks the program had freed already (double frees)\n",
			       (unsigned long long)a.double_frees);
		if (a.exec_released)
			printf("# %llu allocations made before an exec were released by it, with the program that made "
			       "them\n",
			       (unsigned long long)a.exec_released);
		if (a.unmatched_frees)
			printf("# %llu frees of memory allocated before the recording began%s were not counted\n",
			       (unsigned long long)a.unmatched_frees,
			       session_incomplete(&s) ? ", or whose allocation was lost," : "");
		if (nogroup_count)
			printf("# %llu outstanding allocations have no stack (their entry was %s)\n",
			       (unsigned long long)nogroup_count,
			       a.sample > 1 || a.min_size || a.max_size ? "not kept: -s or -z/-Z"
			       : "lost with the events");
		if (a.unknown_result)
			printf("# %llu posix_memalign results could not be read (their pointer was not on the stack)\n",
			       (unsigned long long)a.unknown_result);
		for (size_t i = 0; i < nv && i < top; i++) {
			struct group *g = v[i];

			printf("\n%s%llu bytes in %llu allocations from stack (pid %d %s)%s%s\n", a.sample > 1 ? "~" : "",
			       (unsigned long long)g->bytes, (unsigned long long)g->count * a.sample, g->pid, g->comm,
			       g->reach ? ": " : "", g->reach ? reach_kind_names[g->reach] : "");
			if (dur >= LEAKS_GROWTH_MIN_S)
				printf("\tmade +%.3fs..+%.3fs of %.3fs; %s %s/s over the last half\n",
				       (g->first - l.start) / 1e9, (g->last - l.start) / 1e9, dur,
				       g->growth > 0 ? "growing" : "not growing",
				       fmt_bytes((uint64_t)g->growth, sz, sizeof(sz)));
			else
				printf("\tmade +%.3fs..+%.3fs of %.3fs (too short a recording to tell growth)\n",
				       (g->first - l.start) / 1e9, (g->last - l.start) / 1e9, dur);
			if (g->uncertain)
				printf("\tUNCERTAIN: %llu of these allocations (%llu bytes) were made before events "
				       "were lost; their frees may have been lost\n",
				       (unsigned long long)g->uncertain * a.sample, (unsigned long long)g->uncertain_bytes);
			for (int j = 0; j < g->stack->nr_frames; j++) {
				const struct frame *f = &g->stack->frames[j];
				char name[512];
				const char *file;
				int line;

				printf("\t\t%s [%s]", frame_name(f, name, sizeof(name), 1), frame_obj_base(f));
				if (lines && !frame_srcline(f, &file, &line))
					printf(" %s:%d", file, line);
				putchar('\n');
			}
			if (!g->stack->nr_frames)
				printf("\t\t(no stack recorded)\n");
		}
	}
	/* The gate: leaks made after the last loss are certain; with
	 * events missing, the rest may be frees that were lost and a lost
	 * allocation may hide a leak, so only a certain excess fails (3)
	 * and anything else is "cannot tell" (4). */
	ret = 0;
	if (have_fail && leak_bytes - unsure_bytes > fail_over) {
		ret = 3;
		msg_note("%llu bytes leaked, over the --fail-over limit of %llu",
			(unsigned long long)(leak_bytes - unsure_bytes), (unsigned long long)fail_over);
	} else if (have_fail && session_incomplete(&s)) {
		ret = 4;
		msg_note("the trace is incomplete (%s): cannot tell whether the leaks pass "
				"--fail-over %llu; record it again (see memsight info for why events were lost)",
			lost ? "events were lost" : "cut short", (unsigned long long)fail_over);
	} else if (have_fail && leak_bytes > fail_over) {
		ret = 3;
		msg_note("%llu bytes leaked, over the --fail-over limit of %llu",
			(unsigned long long)leak_bytes, (unsigned long long)fail_over);
	}
out:
	session_report_unwind(&s);
	symbols_report_unresolved(&s.syms, stderr);
	free(v);
	hashmap_for_each(&l.groups, gs) free(gs->ptr);
	hashmap_release(&l.groups);
	allocs_release(&a);
out_session:
	session_release(&s);
	suppress_release(&sup);
	return ret;
}
