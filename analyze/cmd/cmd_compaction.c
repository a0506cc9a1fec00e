/*
 * analyze/cmd/cmd_compaction.c: memsight compaction, page migrations by
 * reason and compaction runs with their time and outcome, summarised, and
 * the stacks that asked for direct compaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "../model/stacktab.h"

static const char usage_text[] =
	"usage: memsight compaction [options] [FILE]\n"
	"\n"
	"Page migrations by reason (record -e migrate) and compaction runs with their\n"
	"time and outcome (record -e compaction), summarised; the stacks that asked\n"
	"for direct compaction.\n";

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

static const char *reason_name(int r)
{
	return r < (int)(sizeof(migrate_reasons) / sizeof(migrate_reasons[0])) ? migrate_reasons[r] : "other";
}

static void print_json(const struct compaction *c, const struct session *s)
{
	struct json j;

	json_init(&j, stdout);
	json_begin(&j, NULL);
	json_str(&j, "trace", s->path);
	cmd_json_lost(&j, s);
	json_begin_array(&j, "migrations");
	for (int r = 0; r < MIGRATE_REASONS; r++) {
		if (!c->migrate_calls[r])
			continue;
		json_begin(&j, NULL);
		json_str(&j, "reason", reason_name(r));
		json_u64(&j, "calls", c->migrate_calls[r]);
		json_u64(&j, "succeeded", c->succeeded[r]);
		json_u64(&j, "failed", c->failed[r]);
		json_end(&j);
	}
	json_end(&j);
	json_begin(&j, "compaction");
	json_u64(&j, "runs", c->runs);
	json_u64(&j, "total_ns", c->run_ns);
	json_u64(&j, "max_ns", c->max_ns);
	json_u64(&j, "migrated", c->migrated);
	json_u64(&j, "migrate_failed", c->migrate_failed);
	json_u64(&j, "deferred", c->deferred);
	json_u64(&j, "direct", c->direct);
	json_u64(&j, "kcompactd_wakes", c->kcompactd_wakes);
	json_u64(&j, "kcompactd_sleeps", c->kcompactd_sleeps);
	json_begin(&j, "status");
	for (int k = 0; k < COMPACT_STATUSES; k++)
		if (c->status[k])
			json_u64(&j, compact_status(k), c->status[k]);
	json_end(&j);
	json_end(&j);
	json_end(&j);
}

static void print_text(const struct compaction *c, const struct session *s, struct stack_entry **st, size_t nst,
		       uint64_t top, int lines)
{
	printf("# memsight compaction of '%s'\n\n# page migrations\n%-20s %10s %12s %10s\n", s->path, "REASON",
	       "CALLS", "SUCCEEDED", "FAILED");
	for (int r = 0; r < MIGRATE_REASONS; r++)
		if (c->migrate_calls[r])
			printf("%-20s %10llu %12llu %10llu\n", reason_name(r), (unsigned long long)c->migrate_calls[r],
			       (unsigned long long)c->succeeded[r], (unsigned long long)c->failed[r]);
	printf("\n# compaction: %llu runs, %.3f ms in all, %.3f ms at most; %llu pages migrated, %llu failed; "
	       "%llu deferred; %llu direct compactions; kcompactd woke %llu times\n",
	       (unsigned long long)c->runs, c->run_ns / 1e6, c->max_ns / 1e6, (unsigned long long)c->migrated,
	       (unsigned long long)c->migrate_failed, (unsigned long long)c->deferred, (unsigned long long)c->direct,
	       (unsigned long long)c->kcompactd_wakes);
	for (int k = 0; k < COMPACT_STATUSES; k++)
		if (c->status[k])
			printf("  %-16s %llu\n", compact_status(k), (unsigned long long)c->status[k]);
	for (size_t i = 0; i < nst && i < top; i++) {
		char who[128];

		printf("\n%llu direct compactions from stack (%s)\n", (unsigned long long)st[i]->weight,
		       stack_entry_who(st[i], who, sizeof(who)));
		print_stack(st[i], lines, "\t\t");
	}
}

int cmd_compaction(int argc, char **argv, struct analyze_opts *a)
{
	uint64_t top = 0;
	int json = 0, lines = 1;
	const struct opt options[] = {
		OPT_U64('T', "top", &top, "N", "stacks shown (default 5 in text, all in JSON)"),
		OPT_JSON(&json),
		OPT_LINES(&lines),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	struct compaction c;
	struct session s;
	struct stack_entry **st = NULL;
	size_t nst = 0;
	char err[512] = "";
	int ret = 1, r = cmd_parse(argc, argv, options, usage_text, a);

	if (r >= 0)
		return r;
	top = cmd_top_count(top, json, 5);
	if (cmd_open_group(&s, a->trace, a, "migration or compaction", "migrate", "compaction"))
		return 1;
	memset(&c, 0, sizeof(c));
	hashmap_init(&c.begins, 0);
	stacktab_init_per_command(&c.stacks, 1, 1);
	if (session_replay(&s, on_compaction, &c, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
	} else if (!(st = stacktab_sorted(&c.stacks, 0, &nst))) {
		msg_error("out of memory");
	} else {
		if (json)
			print_json(&c, &s);
		else
			print_text(&c, &s, st, nst, top, lines);
		ret = 0;
	}
	free(st);
	hashmap_release(&c.begins);
	stacktab_release(&c.stacks);
	return cmd_close(&s, ret);
}
