/*
 * analyze/cmd/cmd_mmaps.c: memsight mmaps, every mmap and mremap of a
 * recording in time order with its stack, as mmapsnoop shows them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cmd.h"
#include "../model/memops.h"

#define MMAPS_FRAMES 64

static const char usage_text[] =
	"usage: memsight mmaps [options] [FILE]\n"
	"\n"
	"Every mmap and mremap of the recording (record -e mmap) in time order, as\n"
	"mmapsnoop shows them: time, process, size, protection, flags, the file\n"
	"mapped, the result, and the stack that asked.\n";

struct mmaps {
	long pid;
	int stacks, json, lines, nr;
	unsigned sampled_said;	/* the GROUP/N note, once */
	struct json doc;	/* --json: one object, its events streamed into its array */
};

static void prot_str(uint64_t prot, char *out)
{
	out[0] = prot & PROT_READ ? 'r' : '-';
	out[1] = prot & PROT_WRITE ? 'w' : '-';
	out[2] = prot & PROT_EXEC ? 'x' : '-';
	out[3] = 0;
}

static void mmap_flags_str(uint64_t flags, char *out, size_t len)
{
	static const struct { uint64_t bit; const char *name; } names[] = {
		{ MAP_SHARED, "SHARED" }, { MAP_PRIVATE, "PRIVATE" }, { MAP_FIXED, "FIXED" },
		{ MAP_ANONYMOUS, "ANONYMOUS" }, { MAP_NORESERVE, "NORESERVE" }, { MAP_POPULATE, "POPULATE" },
		{ MAP_STACK, "STACK" }, { MAP_HUGETLB, "HUGETLB" }, { MAP_FIXED_NOREPLACE, "FIXED_NOREPLACE" },
		{ MAP_DENYWRITE, "DENYWRITE" }, { MAP_GROWSDOWN, "GROWSDOWN" },
	};
	size_t n = 0;

	out[0] = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((flags & names[i].bit) == names[i].bit && n < len)
			n += snprintf(out + n, len - n, "%s%s", n ? "|" : "", names[i].name);
	if (!n)
		snprintf(out, len, "0x%llx", (unsigned long long)flags);
}

static void stack_json(struct json *j, const struct mmaps *o, struct session *s, const struct sample *smp)
{
	struct frame fr[MMAPS_FRAMES];
	int n = smp && smp->nr_ips ? session_frames(s, smp, fr, MMAPS_FRAMES, 0, 1) : 0;

	cmd_json_frames(j, "frames", fr, n, o->lines);
}

static void stack_text(const struct mmaps *o, struct session *s, const struct sample *smp)
{
	struct frame fr[MMAPS_FRAMES];
	int n = smp && smp->nr_ips ? session_frames(s, smp, fr, MMAPS_FRAMES, 0, 1) : 0;

	print_frames(fr, n, o->lines, "\t\t");
}

static int on_mmap(struct session *s, const struct memop *op, void *arg)
{
	struct mmaps *o = arg;
	const struct map *m;
	char prot[4], flags[128];
	const char *file;

	if ((op->kind != MEMOP_MMAP && op->kind != MEMOP_MREMAP) || (o->pid >= 0 && op->pid != o->pid))
		return 0;
	m = op->failed ? NULL : machine_find_map(&s->m, op->pid, op->kind == MEMOP_MREMAP ? (uint64_t)op->ret : op->addr);
	if (m && m->dso)
		file = m->name;
	else if (op->kind == MEMOP_MREMAP)
		file = m && m->name && m->name[0] == '/' ? m->name : "";
	else
		file = op->flags & MAP_ANONYMOUS ? "" : "?";
	prot_str(op->prot, prot);
	mmap_flags_str(op->flags, flags, sizeof(flags));
	o->nr++;
	/* GROUP/N: a list of calls cannot hold those not recorded. */
	if (op->weight > 1 && !o->sampled_said++)
		msg_note("'%s' kept one mapping call in %llu (-e mmap/%llu): these are the ones kept", s->path,
			 (unsigned long long)op->weight, (unsigned long long)op->weight);
	if (o->json) {
		struct json *jd = &o->doc;

		json_begin(jd, NULL);
		json_double(jd, "time_s", "%.6f", (op->time - s->first_time) / 1e9);
		json_i64(jd, "pid", op->pid);
		json_i64(jd, "tid", op->tid);
		json_str(jd, "comm", machine_comm(&s->m, op->pid, op->tid));
		json_str(jd, "call", op->kind == MEMOP_MMAP ? "mmap" : "mremap");
		json_u64(jd, "size", op->len);
		json_str(jd, "prot", prot);
		json_str(jd, "flags", flags);
		json_i64(jd, "fd", (int)op->fd);
		json_str(jd, "file", file);
		json_i64(jd, "ret", (long long)op->ret);
		json_bool(jd, "failed", op->failed);
		if (op->weight > 1)
			json_u64(jd, "period", op->weight);
		stack_json(jd, o, s, op->stack);
		json_end(jd);
		return 0;
	}
	if (o->nr == 1)
		printf("%-10s %-7s %-16s %-6s %12s %-4s %-26s %-18s %s\n", "TIME(s)", "PID", "COMM", "CALL", "SIZE",
		       "PROT", "FLAGS", "RESULT", "FILE");
	printf("%-10.6f %-7d %-16s %-6s %12llu %-4s %-26s ", (op->time - s->first_time) / 1e9, op->pid,
	       machine_comm(&s->m, op->pid, op->tid), op->kind == MEMOP_MMAP ? "mmap" : "mremap",
	       (unsigned long long)op->len, op->kind == MEMOP_MREMAP ? "" : prot,
	       op->kind == MEMOP_MREMAP ? "" : flags);
	if (op->failed)
		printf("%-18lld %s\n", (long long)op->ret, file);
	else
		printf("0x%-16llx %s\n", (unsigned long long)op->ret, file);
	if (o->stacks)
		stack_text(o, s, op->stack);
	return 0;
}

int cmd_mmaps(int argc, char **argv, struct analyze_opts *a)
{
	struct mmaps o = { .pid = -1, .stacks = 1, .lines = 1 };
	const struct opt options[] = {
		OPT_PID(&o.pid),
		OPT_NO_STACKS(&o.stacks),
		OPT_LINES(&o.lines),
		OPT_BOOL(0, "json", &o.json, "one JSON object, the calls in its array \"events\", instead of text"),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	struct session s;
	char err[512];
	int r = cmd_parse(argc, argv, options, usage_text, a);

	if (r >= 0)
		return r;
	if (cmd_open_group(&s, a->trace, a, "mmap", "mmap", NULL))
		return 1;
	if (o.json)
		cmd_json_events_begin(&o.doc, &s);
	s.no_unwind = !o.stacks && !o.json;
	r = memops_replay(&s, on_mmap, &o, err, sizeof(err));
	if (o.json)
		cmd_json_events_end(&o.doc, &s);
	if (r)
		msg_error("%s", err);
	return cmd_close(&s, r ? 1 : 0);
}
