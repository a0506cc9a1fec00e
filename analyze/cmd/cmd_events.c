/*
 * analyze/cmd/cmd_events.c: memsight events, every sample as a line in the
 * spirit of perf script, tracepoint fields printed by libtraceevent from
 * the formats stored in the trace, each followed by its stack.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <traceevent/event-parse.h>

#include "cmd.h"
#include "../model/memops.h"

static const char usage_text[] =
	"usage: memsight events [options] [FILE]\n"
	"\n"
	"Every event of the trace in time order, one per line, with its fields and\n"
	"its stack, in the manner of perf script.\n";

struct events_opts {
	const char *event;
	long pid;
	int stacks;
	struct trace_seq seq;
};

static int print_sample(struct session *s, struct sample *smp, void *arg)
{
	struct events_opts *o = arg;
	struct frame fr[256];
	char name[512];
	int n;

	if (o->pid >= 0 && smp->pid != o->pid)
		return 0;
	if (smp->ev->kind == EVK_TRACKING)
		return 0;
	/* page-faults names the page faults whichever event recorded them:
	 * the software event or the exceptions tracepoints. */
	if (o->event && strcmp(o->event, smp->ev->d.name) && strcmp(o->event, smp->ev->d.group) &&
	    !(smp->ev->kind == EVK_FAULT && !strcmp(o->event, "page-faults")))
		return 0;
	printf("%16s %6u/%-6u [%03u] %llu.%06llu: %s:", machine_comm(&s->m, smp->pid, smp->tid), smp->pid, smp->tid,
	       smp->cpu, (unsigned long long)(smp->time / 1000000000ull),
	       (unsigned long long)(smp->time % 1000000000ull / 1000), smp->ev->d.name);
	if (smp->ev->kind == EVK_FAULT && smp->ev->tp && smp->raw) {
		/* A fault as the software event's are shown, with its kinds
		 * and error code first. */
		uint64_t code = sample_num(smp, "error_code");
		unsigned kinds = fault_kinds(code);
		const char *sep = " ";

		for (int k = 0; k < FAULT_KINDS; k++)
			if (kinds >> k & 1) {
				printf("%s%s", sep, fault_kind_names[k]);
				sep = ",";
			}
		printf(" error_code 0x%llx addr 0x%llx ip 0x%llx\n", (unsigned long long)code,
		       (unsigned long long)sample_num(smp, "address"), (unsigned long long)sample_num(smp, "ip"));
	} else if (smp->ev->tp && smp->raw) {
		struct tep_record rec = { .ts = smp->time, .cpu = smp->cpu, .size = smp->raw_size,
					  .data = (void *)smp->raw };

		trace_seq_reset(&o->seq);
		tep_print_event(s->tep, &o->seq, &rec, "%s", TEP_PRINT_INFO);
		trace_seq_terminate(&o->seq);
		printf(" %s\n", o->seq.buffer);
	} else if (smp->ev->attr.sample_type & PERF_SAMPLE_ADDR) {
		printf(" addr 0x%llx ip 0x%llx\n", (unsigned long long)smp->addr, (unsigned long long)smp->ip);
	} else {
		printf(" ip 0x%llx\n", (unsigned long long)smp->ip);
	}
	if (!o->stacks || !smp->nr_ips)
		return 0;
	n = session_frames(s, smp, fr, 256, 1, 1);
	for (int i = 0; i < n; i++)
		printf("\t%16llx %s (%s)\n", (unsigned long long)fr[i].ip, frame_name(&fr[i], name, sizeof(name), 1),
		       fr[i].kernel ? "[kernel.kallsyms]" : fr[i].obj ? fr[i].obj : "[unknown]");
	printf("\n");
	return 0;
}

int cmd_events(int argc, char **argv, struct analyze_opts *a)
{
	struct events_opts o = { NULL, -1, 1, { 0 } };
	const struct opt options[] = {
		OPT_STRING('e', "event", &o.event, "NAME", "only this event or group (e.g. page-faults, mmap)"),
		OPT_PID(&o.pid),
		OPT_NO_STACKS(&o.stacks),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	struct session s;
	char err[512];
	int r = cmd_parse(argc, argv, options, usage_text, a), ret = 1;

	if (r >= 0)
		return r;
	if (cmd_open(&s, a->trace, a))
		return 1;
	trace_seq_init(&o.seq);
	if (session_replay(&s, print_sample, &o, err, sizeof(err)))
		msg_error("%s", err);
	else
		ret = 0;
	trace_seq_destroy(&o.seq);
	return cmd_close(&s, ret);
}
