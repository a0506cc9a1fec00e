/*
 * analyze/cmd/cmd_oom.c: memsight oom, every OOM kill of the recording (record
 * -e oom) as oomkill reports it and more: the victim with its memory from
 * the kernel's own figures, the task that ran out and its stack, how long
 * the reaper took, and the system's state the recorder saved at the kill.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const char usage_text[] =
	"usage: memsight oom [options] [FILE]\n"
	"\n"
	"Every OOM kill: victim pid and comm, its memory (total_vm, anon, file and\n"
	"shmem RSS, page tables) and oom_score_adj, the task whose allocation\n"
	"triggered it with its stack, the reaping, and the system's state then (load,\n"
	"meminfo, memory pressure, the memory cgroup's figures).\n";

#define OOM_FRAMES 128

struct kill {
	uint64_t time, reap_start, reap_end;
	int trigger_pid, trigger_tid, victim, uid, adj;
	char trigger_comm[16], victim_comm[64];
	uint64_t total_vm, anon, file, shmem, pgtables; /* kB, as the kernel gives them */
	int nr_frames;
	struct frame frames[OOM_FRAMES];
};

struct oom {
	struct kill *kills;
	size_t nr;
	int lines;
};

static int on_sample(struct session *s, struct sample *smp, void *arg)
{
	struct oom *o = arg;
	struct kill *k;

	if (smp->ev->kind == EVK_OOM_REAP) {
		int pid = (int)sample_snum(smp, "pid");

		for (size_t i = o->nr; i-- > 0;) {
			if (o->kills[i].victim != pid)
				continue;
			if (strstr(smp->ev->d.name, "start_task_reaping"))
				o->kills[i].reap_start = smp->time;
			else if (strstr(smp->ev->d.name, "finish_task_reaping") ||
				 strstr(smp->ev->d.name, "skip_task_reaping"))
				o->kills[i].reap_end = smp->time;
			break;
		}
		return 0;
	}
	if (smp->ev->kind != EVK_OOM_VICTIM)
		return 0;
	k = realloc(o->kills, (o->nr + 1) * sizeof(*k));
	if (!k)
		return -1;
	o->kills = k;
	k = &k[o->nr++];
	memset(k, 0, sizeof(*k));
	k->time = smp->time;
	k->trigger_pid = smp->pid;
	k->trigger_tid = smp->tid;
	snprintf(k->trigger_comm, sizeof(k->trigger_comm), "%s", machine_comm(&s->m, smp->pid, smp->tid));
	k->victim = (int)sample_snum(smp, "pid");
	sample_str(smp, "comm", k->victim_comm, sizeof(k->victim_comm));
	k->total_vm = sample_num(smp, "total_vm");
	k->anon = sample_num(smp, "anon_rss");
	k->file = sample_num(smp, "file_rss");
	k->shmem = sample_num(smp, "shmem_rss");
	k->pgtables = sample_num(smp, "pgtables");
	k->uid = (int)sample_num(smp, "uid");
	k->adj = (int)sample_snum(smp, "oom_score_adj");
	k->nr_frames = smp->nr_ips ? session_frames(s, smp, k->frames, OOM_FRAMES, 1, 1) : 0;
	return 0;
}

/* The context the recorder saved for this kill: the same victim, the
 * nearest in time. */
static const struct oom_context *context_of(struct session *s, const struct kill *k)
{
	const struct oom_context *best = NULL;

	for (size_t i = 0; i < s->nr_ooms; i++) {
		const struct oom_context *c = &s->ooms[i];

		if (c->victim != k->victim)
			continue;
		if (!best || (c->time > k->time ? c->time - k->time : k->time - c->time) <
				     (best->time > k->time ? best->time - k->time : k->time - best->time))
			best = c;
	}
	return best;
}

/* A "--- NAME" section of a context, and its length. */
static const char *section(const char *text, const char *name, size_t *len)
{
	char head[64];
	const char *p, *end;

	snprintf(head, sizeof(head), "--- %s\n", name);
	p = strstr(text, head);
	if (!p)
		return NULL;
	p += strlen(head);
	end = strstr(p, "\n--- ");
	*len = end ? (size_t)(end - p + 1) : strlen(p);
	return p;
}

static void section_print(const char *text, const char *name, const char *const *keys)
{
	size_t len;
	const char *p = section(text, name, &len), *end;

	if (!p)
		return;
	end = p + len;
	printf("\t%s:\n", name);
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		int keep = !keys;

		for (size_t i = 0; keys && keys[i]; i++)
			if (!strncmp(p, keys[i], strlen(keys[i])) && p[strlen(keys[i])] == ':')
				keep = 1;
		if (keep)
			printf("\t\t%.*s\n", (int)l, p);
		p += l + 1;
	}
}

static void json_kill(struct json *j, const struct session *s, const struct kill *k, const struct oom_context *ctx,
		      int lines)
{
	json_begin(j, NULL);
	json_double(j, "time_s", "%.6f", (k->time - s->first_time) / 1e9);
	json_begin(j, "victim");
	json_i64(j, "pid", k->victim);
	json_str(j, "comm", k->victim_comm);
	json_i64(j, "uid", k->uid);
	json_i64(j, "oom_score_adj", k->adj);
	json_u64(j, "total_vm_kb", k->total_vm);
	json_u64(j, "anon_rss_kb", k->anon);
	json_u64(j, "file_rss_kb", k->file);
	json_u64(j, "shmem_rss_kb", k->shmem);
	json_u64(j, "pgtables_kb", k->pgtables);
	json_end(j);
	json_begin(j, "trigger");
	json_i64(j, "pid", k->trigger_pid);
	json_i64(j, "tid", k->trigger_tid);
	json_str(j, "comm", k->trigger_comm);
	cmd_json_frames(j, "frames", k->frames, k->nr_frames, lines);
	json_end(j);
	if (k->reap_start && k->reap_end)
		json_u64(j, "reap_ns", k->reap_end - k->reap_start);
	if (ctx)
		json_str(j, "context", ctx->text);
	else
		json_null(j, "context");
	json_end(j);
}

static void text_kill(const struct session *s, const struct kill *k, const struct oom_context *ctx, int lines)
{
	static const char *const meminfo_keys[] = { "MemTotal", "MemFree", "MemAvailable", "Cached", "AnonPages",
						    "Shmem", "Slab", "SwapTotal", "SwapFree", NULL };
	static const char *const status_keys[] = { "Name", "Pid", "State", "VmPeak", "VmRSS", "RssAnon", "RssFile",
						   "RssShmem", "VmSwap", NULL };
	/* The sections of the saved state, in order; NULL keys: all lines. */
	static const struct { const char *name; const char *const *keys; } sections[] = {
		{ "loadavg", NULL },
		{ "meminfo", meminfo_keys },
		{ "pressure/memory", NULL },
		{ "victim status", status_keys },
		{ "cgroup", NULL },
		{ "memory.max", NULL },
		{ "memory.current", NULL },
		{ "memory.events", NULL },
		{ "memory.limit_in_bytes", NULL },
		{ "memory.max_usage_in_bytes", NULL },
		{ "memory.failcnt", NULL },
		{ "memory.oom_control", NULL },
	};

	printf("\nOOM kill at +%.6fs: victim pid %d (%s), uid %d, oom_score_adj %d\n", (k->time - s->first_time) / 1e9,
	       k->victim, k->victim_comm, k->uid, k->adj);
	printf("\tvictim memory: total_vm %llu kB, anon-rss %llu kB, file-rss %llu kB, shmem-rss %llu kB, "
	       "pgtables %llu kB\n",
	       (unsigned long long)k->total_vm, (unsigned long long)k->anon, (unsigned long long)k->file,
	       (unsigned long long)k->shmem, (unsigned long long)k->pgtables);
	if (k->reap_start && k->reap_end)
		printf("\treaped in %.3f ms\n", (k->reap_end - k->reap_start) / 1e6);
	printf("\ttriggered by pid %d tid %d (%s), whose allocation found no memory:\n", k->trigger_pid,
	       k->trigger_tid, k->trigger_comm);
	print_frames(k->frames, k->nr_frames, lines, "\t\t");
	if (!ctx) {
		printf("\t(no system state saved: the recorder did not see this kill in time)\n");
		return;
	}
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		section_print(ctx->text, sections[i].name, sections[i].keys);
}

int cmd_oom(int argc, char **argv, struct analyze_opts *a)
{
	struct oom o = { .lines = 1 };
	int json = 0;
	const struct opt options[] = {
		OPT_LINES(&o.lines),
		OPT_JSON(&json),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	struct session s;
	struct json j;
	char err[512] = "";
	int r = cmd_parse(argc, argv, options, usage_text, a);

	if (r >= 0)
		return r;
	if (cmd_open_group(&s, a->trace, a, "OOM", "oom", NULL))
		return 1;
	if (session_replay(&s, on_sample, &o, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
		free(o.kills);
		session_release(&s);
		return 1;
	}
	if (json) {
		json_init(&j, stdout);
		json_begin(&j, NULL);
		json_str(&j, "trace", s.path);
		cmd_json_lost(&j, &s);
		json_begin_array(&j, "kills");
	} else {
		printf("# memsight oom of '%s': %zu OOM kill%s\n", s.path, o.nr, o.nr == 1 ? "" : "s");
	}
	for (size_t i = 0; i < o.nr; i++) {
		if (json)
			json_kill(&j, &s, &o.kills[i], context_of(&s, &o.kills[i]), o.lines);
		else
			text_kill(&s, &o.kills[i], context_of(&s, &o.kills[i]), o.lines);
	}
	if (json) {
		json_end(&j);
		json_end(&j);
	}
	free(o.kills);
	return cmd_close(&s, 0);
}
