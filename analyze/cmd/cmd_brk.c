/*
 * analyze/cmd/cmd_brk.c: memsight brk, heap growth through brk() by stack,
 * largest first, as brkstack shows it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "../model/memops.h"
#include "../model/stacktab.h"

static const char usage_text[] =
	"usage: memsight brk [options] [FILE]\n"
	"\n"
	"Heap growth through brk() (record -e brk) by stack, in bytes, as brkstack\n"
	"shows it: where the break was moved up, largest first.\n";

struct brk_opts {
	long pid;
	uint64_t top;
	int json, lines;
	struct stacktab tab;
};

struct brk_state {
	struct brk_opts *o;
	uint64_t grow, calls, failed;
	uint64_t period;	/* brk/N: each recorded call stands for N (1: every one recorded) */
};

static int on_brk(struct session *s, const struct memop *op, void *arg)
{
	struct brk_state *b = arg;

	if (op->kind != MEMOP_BRK || (b->o->pid >= 0 && op->pid != b->o->pid))
		return 0;
	if (op->weight > b->period)
		b->period = op->weight;
	b->calls += op->weight;
	if (op->failed) {
		b->failed += op->weight;
		return 0;
	}
	if (!op->grow || !op->stack)
		return 0;
	/* The growth is from the break one recorded call left to the one
	 * the next made: it holds the calls in between already. */
	b->grow += op->grow;
	return stacktab_add(&b->o->tab, s, op->stack, op->grow) ? 0 : -1;
}

static void print_json(const struct session *s, const struct brk_state *b, struct stack_entry **v, size_t n)
{
	struct json j;

	json_init(&j, stdout);
	json_begin(&j, NULL);
	json_str(&j, "trace", s->path);
	cmd_json_lost(&j, s);
	json_bool(&j, "estimate", b->period > 1);
	json_u64(&j, "period", b->period);
	json_u64(&j, "brk_calls", b->calls);
	json_u64(&j, "failed", b->failed);
	json_u64(&j, "grow_bytes", b->grow);
	cmd_json_truncated(&j, n < b->o->top ? n : b->o->top, n);
	json_begin_array(&j, "stacks");
	for (size_t i = 0; v && i < n && i < b->o->top; i++) {
		json_begin(&j, NULL);
		cmd_json_who(&j, s, v[i]);
		json_u64(&j, "bytes", v[i]->weight);
		json_u64(&j, "calls", v[i]->count * b->period);
		cmd_json_stack(&j, "frames", v[i], b->o->lines);
		json_end(&j);
	}
	json_end(&j);
	json_end(&j);
}

static void print_text(const struct session *s, const struct brk_state *b, struct stack_entry **v, size_t n)
{
	char sz[32];

	printf("# memsight brk of '%s': the heap grew %s in %llu brk calls (%llu failed) from %zu stacks\n", s->path,
	       fmt_bytes(b->grow, sz, sizeof(sz)), (unsigned long long)b->calls, (unsigned long long)b->failed, n);
	if (b->period > 1)
		printf("# ESTIMATE: one brk call in %llu was recorded (-e brk/%llu); each counts for %llu\n",
		       (unsigned long long)b->period, (unsigned long long)b->period, (unsigned long long)b->period);
	for (size_t i = 0; v && i < n && i < b->o->top; i++) {
		char who[128];

		printf("\n%llu bytes in %llu brk calls from stack (%s)\n", (unsigned long long)v[i]->weight,
		       (unsigned long long)(v[i]->count * b->period), stack_entry_who(v[i], who, sizeof(who)));
		print_stack(v[i], b->o->lines, "\t\t");
	}
}

int cmd_brk(int argc, char **argv, struct analyze_opts *a)
{
	struct brk_opts o = { .pid = -1, .lines = 1 };
	const struct opt options[] = {
		OPT_U64('T', "top", &o.top, "N", "stacks shown (default 10 in text, all in JSON)"),
		OPT_PID(&o.pid),
		OPT_LINES(&o.lines),
		OPT_JSON(&o.json),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	struct brk_state b = { &o, 0, 0, 0, 1 };
	struct stack_entry **v;
	struct session s;
	char err[512];
	size_t n;
	int r = cmd_parse(argc, argv, options, usage_text, a);

	if (r >= 0)
		return r;
	o.top = cmd_top_count(o.top, o.json, 10);
	if (cmd_open_group(&s, a->trace, a, "brk", "brk", NULL))
		return 1;
	stacktab_init_per_command(&o.tab, 0, 1);
	if (memops_replay(&s, on_brk, &b, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
		stacktab_release(&o.tab);
		return cmd_close(&s, 1);
	}
	v = stacktab_sorted(&o.tab, 0, &n);
	(o.json ? print_json : print_text)(&s, &b, v, n);
	free(v);
	stacktab_release(&o.tab);
	return cmd_close(&s, 0);
}
