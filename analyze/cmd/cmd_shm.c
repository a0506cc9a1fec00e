/*
 * analyze/cmd/cmd_shm.c: memsight shm, every System V shared memory call
 * with its arguments, result and stack, as shmsnoop shows them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>

#include "cmd.h"

#define SHM_FRAMES 64

static const char usage_text[] =
	"usage: memsight shm [options] [FILE]\n"
	"\n"
	"Every System V shared memory call (record -e shm) in time order, as\n"
	"shmsnoop shows them: shmget, shmat, shmdt and shmctl with their arguments,\n"
	"result (a negative errno when it failed) and stack.\n";

struct shm {
	long pid;
	int stacks, json, lines, nr;
	struct hashmap pending;	/* tid -> struct shm_call * */
	struct json doc;	/* --json: one object, its calls streamed into its array */
};

struct shm_call {
	const char *call;	/* "shmget", ... */
	uint64_t time, a[3];
	int nr_frames;
	struct frame frames[SHM_FRAMES];
};

static const char *const shm_args[][3] = {
	{ "key", "size", "shmflg" },	/* shmget */
	{ "shmid", "shmaddr", "shmflg" }, /* shmat */
	{ "shmaddr", NULL, NULL },	/* shmdt */
	{ "shmid", "cmd", "buf" },	/* shmctl */
};

static int shm_index(const char *call)
{
	static const char *const calls[] = { "shmget", "shmat", "shmdt", "shmctl" };

	for (int i = 0; i < 4; i++)
		if (!strcmp(call, calls[i]))
			return i;
	return -1;
}

static const char *shmctl_cmd(uint64_t cmd)
{
	switch (cmd & 0xff) {
	case IPC_RMID: return "IPC_RMID";
	case IPC_SET: return "IPC_SET";
	case IPC_STAT: return "IPC_STAT";
	case IPC_INFO: return "IPC_INFO";
	case SHM_LOCK: return "SHM_LOCK";
	case SHM_UNLOCK: return "SHM_UNLOCK";
	case SHM_STAT: return "SHM_STAT";
	case SHM_INFO: return "SHM_INFO";
	default: return NULL;
	}
}

static int on_shm(struct session *s, struct sample *smp, void *arg)
{
	struct shm *o = arg;
	struct hm_slot *slot;
	struct shm_call *c;
	const char *name;
	int64_t ret;
	int k;

	if ((smp->ev->kind != EVK_SHM_ENTER && smp->ev->kind != EVK_SHM_EXIT) ||
	    (o->pid >= 0 && smp->pid != (uint32_t)o->pid))
		return 0;
	name = strstr(smp->ev->d.name, "_shm");
	k = name ? shm_index(name + 1) : -1;
	if (k < 0)
		return 0;
	if (smp->ev->kind == EVK_SHM_ENTER) {
		slot = hashmap_u64(&o->pending, smp->tid, NULL);
		if (!slot || (!slot->ptr && !(slot->ptr = malloc(sizeof(*c)))))
			return -1;
		c = slot->ptr;
		c->call = name + 1;
		c->time = smp->time;
		for (int i = 0; i < 3; i++)
			c->a[i] = shm_args[k][i] ? sample_num(smp, shm_args[k][i]) : 0;
		c->nr_frames = smp->nr_ips ? session_frames(s, smp, c->frames, SHM_FRAMES, 0, 1) : 0;
		return 0;
	}
	slot = hashmap_u64_find(&o->pending, smp->tid);
	if (!slot || !slot->ptr)
		return 0; /* entered before the recording began */
	c = slot->ptr;
	slot->ptr = NULL;
	ret = (int64_t)session_field(s, smp, 0);
	if (strcmp(c->call, name + 1)) {
		free(c);
		return 0;
	}
	o->nr++;
	if (o->json) {
		struct json *jd = &o->doc;

		json_begin(jd, NULL);
		json_double(jd, "time_s", "%.6f", (c->time - s->first_time) / 1e9);
		json_i64(jd, "pid", smp->pid);
		json_i64(jd, "tid", smp->tid);
		json_str(jd, "comm", machine_comm(&s->m, smp->pid, smp->tid));
		json_str(jd, "call", c->call);
		json_begin(jd, "args");
		for (int i = 0; i < 3 && shm_args[k][i]; i++)
			json_u64(jd, shm_args[k][i], c->a[i]);
		json_end(jd);
		json_i64(jd, "ret", ret);
		cmd_json_frames(jd, "frames", c->frames, c->nr_frames, o->lines);
		json_end(jd);
	} else {
		char args[256];
		size_t n = 0;

		for (int i = 0; i < 3 && shm_args[k][i]; i++) {
			const char *cmd = k == 3 && i == 1 ? shmctl_cmd(c->a[i]) : NULL;

			if (cmd)
				n += snprintf(args + n, sizeof(args) - n, "%s%s=%s", i ? " " : "", shm_args[k][i], cmd);
			else if (!strcmp(shm_args[k][i], "shmid") || !strcmp(shm_args[k][i], "size"))
				n += snprintf(args + n, sizeof(args) - n, "%s%s=%llu", i ? " " : "", shm_args[k][i],
					      (unsigned long long)c->a[i]);
			else
				n += snprintf(args + n, sizeof(args) - n, "%s%s=0x%llx", i ? " " : "", shm_args[k][i],
					      (unsigned long long)c->a[i]);
			if (n >= sizeof(args))
				n = sizeof(args) - 1;
		}
		if (o->nr == 1)
			printf("%-10s %-7s %-16s %-7s %-44s %s\n", "TIME(s)", "PID", "COMM", "CALL", "ARGS", "RESULT");
		printf("%-10.6f %-7d %-16s %-7s %-44s ", (c->time - s->first_time) / 1e9, smp->pid,
		       machine_comm(&s->m, smp->pid, smp->tid), c->call, args);
		if (k == 1 && ret >= 0)
			printf("0x%llx\n", (unsigned long long)ret);
		else
			printf("%lld\n", (long long)ret);
		if (o->stacks)
			print_frames(c->frames, c->nr_frames, o->lines, "\t\t");
	}
	free(c);
	return 0;
}

int cmd_shm(int argc, char **argv, struct analyze_opts *a)
{
	struct shm o = { .pid = -1, .stacks = 1, .lines = 1 };
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
	int r = cmd_parse(argc, argv, options, usage_text, a), ret = 0;

	if (r >= 0)
		return r;
	if (cmd_open_group(&s, a->trace, a, "shm", "shm", NULL))
		return 1;
	hashmap_init(&o.pending, 0);
	err[0] = 0;
	if (o.json)
		cmd_json_events_begin(&o.doc, &s);
	if (session_replay(&s, on_shm, &o, err, sizeof(err)))
		ret = 1;
	if (o.json)
		cmd_json_events_end(&o.doc, &s);
	if (ret)
		msg_error("%s", err[0] ? err : "out of memory");
	hashmap_for_each(&o.pending, slot) free(slot->ptr);
	hashmap_release(&o.pending);
	return cmd_close(&s, ret);
}
