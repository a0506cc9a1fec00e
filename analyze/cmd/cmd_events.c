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
#include "json.h"
#include "../model/memops.h"
#include "../../formats/catalog.h"

static const char usage_text[] =
	"usage: memsight events [options] [FILE]\n"
	"\n"
	"Every event of the trace in time order, one per line, with its fields (and\n"
	"for a syscall's exit the call's arguments, from its registers) and its\n"
	"stack, in the manner of perf script.\n";

struct events_opts {
	const char *event;
	long pid;
	int stacks;
	int json;
	uint64_t shown;		/* samples printed */
	struct trace_seq seq;
	struct json doc;	/* --json: one object, the events streamed into its array */
};

/* A tracepoint's own fields (not the common ones) as JSON members: numbers
 * as numbers, strings and char arrays as strings, other arrays as their
 * hex bytes. */
static void json_fields(struct json *j, struct session *s, const struct sample *smp)
{
	struct tep_record rec = { .ts = smp->time, .cpu = smp->cpu, .size = smp->raw_size, .data = (void *)smp->raw };
	char buf[1024];

	(void)s;
	json_begin(j, "fields");
	for (struct tep_format_field *f = smp->ev->tp->format.fields; f; f = f->next) {
		unsigned long long v;
		int len = 0;

		if ((f->flags & (TEP_FIELD_IS_STRING | TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_ARRAY))) {
			const unsigned char *raw = tep_get_field_raw(NULL, smp->ev->tp, f->name, &rec, &len, 0);
			size_t k = 0;

			if (!raw || len < 0) {
				json_null(j, f->name);
				continue;
			}
			if (f->flags & TEP_FIELD_IS_STRING || !strncmp(f->type, "char", 4) ||
			    strstr(f->type, " char") || !strncmp(f->type, "__data_loc char", 15)) {
				while (k < (size_t)len && k + 1 < sizeof(buf) && raw[k])
					buf[k] = (char)raw[k], k++;
				buf[k] = 0;
			} else {
				for (int i = 0; i < len && k + 3 < sizeof(buf); i++)
					k += snprintf(buf + k, sizeof(buf) - k, "%02x", raw[i]);
			}
			json_str(j, f->name, buf);
			continue;
		}
		if (tep_read_number_field(f, smp->raw, &v) || f->offset + f->size > (int)smp->raw_size) {
			json_null(j, f->name);
			continue;
		}
		if (f->flags & TEP_FIELD_IS_SIGNED) {
			long long sv = f->size == 1 ? (int8_t)v : f->size == 2 ? (int16_t)v : f->size == 4 ? (int32_t)v : (long long)v;

			json_i64(j, f->name, sv);
		} else {
			json_u64(j, f->name, v);
		}
	}
	json_end(j);
}

/* --json: one event into the document's array. */
static void print_json(struct events_opts *o, struct session *s, struct sample *smp)
{
	struct frame fr[256];
	struct json *jd = &o->doc;
	uint64_t args[CATALOG_SYSCALL_NR_ARGS];
	const char *const *names;
	int nargs;

	json_begin(jd, NULL);
	json_str(jd, "comm", machine_comm(&s->m, smp->pid, smp->tid));
	json_i64(jd, "pid", smp->pid);
	json_i64(jd, "tid", smp->tid);
	json_i64(jd, "cpu", smp->cpu);
	json_u64(jd, "time_ns", smp->time);
	json_str(jd, "event", smp->ev->d.name);
	json_str(jd, "group", smp->ev->d.group);
	if (smp->ev->kind == EVK_FAULT && smp->ev->tp && smp->raw) {
		unsigned kinds = fault_kinds(sample_num(smp, "error_code"));

		json_begin_array(jd, "fault_kinds");
		for (int k = 0; k < FAULT_KINDS; k++)
			if (kinds >> k & 1)
				json_str(jd, NULL, fault_kind_names[k]);
		json_end(jd);
	}
	if (smp->ev->tp && smp->raw)
		json_fields(jd, s, smp);
	if ((nargs = sample_syscall_args(smp, args, &names))) {
		json_begin(jd, "args");
		for (int i = 0; i < nargs; i++)
			json_u64(jd, names[i], args[i]);
		json_end(jd);
	}
	else if (smp->ev->attr.sample_type & PERF_SAMPLE_ADDR)
		json_u64(jd, "addr", smp->addr);
	json_u64(jd, "ip", smp->ip);
	if (o->stacks)
		cmd_json_frames(jd, "frames", fr, smp->nr_ips ? session_frames(s, smp, fr, 256, 1, 1) : 0, 0);
	json_end(jd);
}

/* Whether name is an event of s, its group, or perf's name for faults. */
static int event_known(const struct session *s, const char *name)
{
	for (size_t i = 0; i < s->nr_evs; i++)
		if (!strcmp(name, s->evs[i].d.name) || !strcmp(name, s->evs[i].d.group) ||
		    (s->evs[i].kind == EVK_FAULT && !strcmp(name, "page-faults")))
			return 1;
	return 0;
}

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
	o->shown++;
	if (o->json) {
		print_json(o, s, smp);
		return 0;
	}
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
		uint64_t args[CATALOG_SYSCALL_NR_ARGS];
		const char *const *names;
		int nargs = sample_syscall_args(smp, args, &names);

		/* A syscall's result as syscalls:sys_exit_* print it, whichever
		 * tracepoint recorded it. */
		if (nargs) {
			printf(" 0x%llx", (unsigned long long)sample_num(smp, "ret"));
		} else {
			tep_print_event(s->tep, &o->seq, &rec, "%s", TEP_PRINT_INFO);
			trace_seq_terminate(&o->seq);
			printf(" %s", o->seq.buffer);
		}
		/* The call's arguments, as its entry's tracepoint prints them. */
		for (int i = 0; i < nargs; i++)
			printf("%s%s: 0x%08llx", i ? ", " : " (", names[i], (unsigned long long)args[i]);
		printf("%s\n", nargs ? ")" : "");
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
	struct events_opts o = { .pid = -1, .stacks = 1 };
	const struct opt options[] = {
		OPT_STRING('e', "event", &o.event, "NAME", "only this event or group (e.g. page-faults, mmap)"),
		OPT_PID(&o.pid),
		OPT_NO_STACKS(&o.stacks),
		OPT_BOOL(0, "json", &o.json, "one JSON object, the events in its array \"events\", instead of text"),
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
	if (o.event && !event_known(&s, o.event)) {
		char has[256];

		msg_error("-e '%s': '%s' has no event or group of that name (it holds %s; events -h names them)",
			  o.event, s.path, cmd_groups_held(&s, has, sizeof(has)));
		return cmd_close(&s, 1);
	}
	trace_seq_init(&o.seq);
	if (o.json)
		cmd_json_events_begin(&o.doc, &s);
	ret = session_replay(&s, print_sample, &o, err, sizeof(err)) ? 1 : 0;
	if (o.json)
		cmd_json_events_end(&o.doc, &s);
	if (ret)
		msg_error("%s", err);
	else if (!o.shown && !o.json)
		/* An empty result says why, as every command's does. */
		msg_note("nothing to print in '%s': %s", s.path,
			 o.event || o.pid >= 0 ? "no sample matches the -e or --pid given" : "it holds no samples");
	trace_seq_destroy(&o.seq);
	return cmd_close(&s, ret);
}
