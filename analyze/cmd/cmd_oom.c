/*
 * analyze/cmd/cmd_oom.c: memsight oom, every OOM kill of the recording (record
 * -e oom) as oomkill reports it and more: the victim with its memory from
 * the kernel's own figures, the task that ran out and its stack, how long
 * the reaper took, and the system's state the recorder saved at the kill.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const char usage_text[] =
	"usage: memsight oom [options] FILE\n"
	"\n"
	"Every OOM kill: victim pid and comm, its memory (total_vm, anon, file and\n"
	"shmem RSS, page tables) and oom_score_adj, the task whose allocation\n"
	"triggered it with its stack, the reaping, and the system's state then (load,\n"
	"meminfo, memory pressure, the memory cgroup's figures).\n"
	"\n"
	"      --lines          add file:line to each frame\n"
	"      --json           one JSON object instead of text\n"
	"  -h, --help           show this help\n"
	CMD_STACK_OPTIONS;

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

int cmd_oom(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_LINES };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const meminfo_keys[] = { "MemTotal", "MemFree", "MemAvailable", "Cached", "AnonPages",
						    "Shmem", "Slab", "SwapTotal", "SwapFree", NULL };
	static const char *const status_keys[] = { "Name", "Pid", "State", "VmPeak", "VmRSS", "RssAnon", "RssFile",
						   "RssShmem", "VmSwap", NULL };
	struct oom o = { 0 };
	struct session s;
	char err[512];
	int c, json = 0;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			json = 1;
			break;
		case OPT_LINES:
			o.lines = 1;
			break;
		case 'h':
			return cmd_usage(usage_text, 1);
		default:
			return cmd_usage(usage_text, 0);
		}
	}
	if (cmd_one_file(argc))
		return 2;
	if (cmd_open_group(&s, argv[optind], "OOM", "oom", NULL))
		return 1;
	err[0] = 0;
	if (session_replay(&s, on_sample, &o, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
		free(o.kills);
		session_release(&s);
		return 1;
	}
	if (json) {
		printf("{\"trace\":");
		json_str(s.path);
		printf(",\"kills\":[");
	} else {
		printf("# memsight oom of '%s': %zu OOM kill%s\n", s.path, o.nr, o.nr == 1 ? "" : "s");
	}
	for (size_t i = 0; i < o.nr; i++) {
		struct kill *k = &o.kills[i];
		const struct oom_context *ctx = context_of(&s, k);

		if (json) {
			printf("%s{\"time_s\":%.6f,\"victim\":{\"pid\":%d,\"comm\":", i ? "," : "",
			       (k->time - s.first_time) / 1e9, k->victim);
			json_str(k->victim_comm);
			printf(",\"uid\":%d,\"oom_score_adj\":%d,\"total_vm_kb\":%llu,\"anon_rss_kb\":%llu,"
			       "\"file_rss_kb\":%llu,\"shmem_rss_kb\":%llu,\"pgtables_kb\":%llu},\"trigger\":{\"pid\":%d,"
			       "\"tid\":%d,\"comm\":",
			       k->uid, k->adj, (unsigned long long)k->total_vm, (unsigned long long)k->anon,
			       (unsigned long long)k->file, (unsigned long long)k->shmem, (unsigned long long)k->pgtables,
			       k->trigger_pid, k->trigger_tid);
			json_str(k->trigger_comm);
			printf(",\"frames\":");
			json_frames(k->frames, k->nr_frames, o.lines);
			printf("}");
			if (k->reap_start && k->reap_end)
				printf(",\"reap_ns\":%llu", (unsigned long long)(k->reap_end - k->reap_start));
			printf(",\"context\":");
			if (ctx)
				json_str(ctx->text);
			else
				printf("null");
			putchar('}');
			continue;
		}
		printf("\nOOM kill at +%.6fs: victim pid %d (%s), uid %d, oom_score_adj %d\n",
		       (k->time - s.first_time) / 1e9, k->victim, k->victim_comm, k->uid, k->adj);
		printf("\tvictim memory: total_vm %llu kB, anon-rss %llu kB, file-rss %llu kB, shmem-rss %llu kB, "
		       "pgtables %llu kB\n",
		       (unsigned long long)k->total_vm, (unsigned long long)k->anon, (unsigned long long)k->file,
		       (unsigned long long)k->shmem, (unsigned long long)k->pgtables);
		if (k->reap_start && k->reap_end)
			printf("\treaped in %.3f ms\n", (k->reap_end - k->reap_start) / 1e6);
		printf("\ttriggered by pid %d tid %d (%s), whose allocation found no memory:\n", k->trigger_pid,
		       k->trigger_tid, k->trigger_comm);
		print_frames(k->frames, k->nr_frames, o.lines, "\t\t");
		if (!ctx) {
			printf("\t(no system state saved: the recorder did not see this kill in time)\n");
			continue;
		}
		section_print(ctx->text, "loadavg", NULL);
		section_print(ctx->text, "meminfo", meminfo_keys);
		section_print(ctx->text, "pressure/memory", NULL);
		section_print(ctx->text, "victim status", status_keys);
		section_print(ctx->text, "cgroup", NULL);
		section_print(ctx->text, "memory.max", NULL);
		section_print(ctx->text, "memory.current", NULL);
		section_print(ctx->text, "memory.events", NULL);
		section_print(ctx->text, "memory.limit_in_bytes", NULL);
		section_print(ctx->text, "memory.max_usage_in_bytes", NULL);
		section_print(ctx->text, "memory.failcnt", NULL);
		section_print(ctx->text, "memory.oom_control", NULL);
	}
	if (json)
		printf("]}\n");
	symbols_report_unresolved(&s.syms, stderr);
	free(o.kills);
	session_release(&s);
	return 0;
}
