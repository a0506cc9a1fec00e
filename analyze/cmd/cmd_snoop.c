/*
 * analyze/cmd/cmd_snoop.c: the snoop-style views of the memory chapter's tools,
 * from one recording: memsight mmaps (every mapping made, as mmapsnoop),
 * memsight brk (heap growth by stack, as brkstack) and memsight shm (every
 * System V shared memory call with arguments and result, as shmsnoop).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>

#include "cmd.h"
#include "../model/memops.h"
#include "../model/stacktab.h"

#define SNOOP_FRAMES 64

struct snoop {
	long pid;
	int stacks, json, lines, nr;
	uint64_t top;
	struct stacktab tab;
	struct hashmap pending;	/* shm: tid -> struct shm_call * */
};

static int snoop_options(int argc, char **argv, const char *usage, struct snoop *o, int with_top)
{
	enum { OPT_PID = 256, OPT_JSON, OPT_LINES };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, OPT_PID },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "no-stacks", no_argument, NULL, 'G' },
		{ "top", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	o->pid = -1;
	o->stacks = 1;
	o->top = 10;
	while ((c = getopt_long(argc, argv, with_top ? "T:Gh" : "Gh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_PID:
			if (parse_u64("--pid", optarg, &v))
				return 2;
			o->pid = v;
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_LINES:
			o->lines = 1;
			break;
		case 'G':
			o->stacks = 0;
			break;
		case 'T':
			if (parse_u64("--top", optarg, &o->top))
				return 2;
			break;
		case 'h':
			return cmd_usage(usage, 1) ? 2 : 1;
		default:
			return cmd_usage(usage, 0);
		}
	}
	return cmd_one_file(argc) ? 2 : 0;
}

/* Close a snoop command: the warnings every command gives, then the
 * session. */
static int snoop_end(struct session *s, int ret)
{
	session_report_unwind(s);
	symbols_report_unresolved(&s->syms, stderr);
	session_release(s);
	return ret;
}

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

static void stack_out(struct snoop *o, struct session *s, const struct sample *smp, int json)
{
	struct frame fr[SNOOP_FRAMES];
	int n = smp && smp->nr_ips ? session_frames(s, smp, fr, SNOOP_FRAMES, 0, 1) : 0;

	if (json) {
		printf(",\"frames\":");
		json_frames(fr, n, o->lines);
	} else if (o->stacks) {
		print_frames(fr, n, o->lines, "\t\t");
	}
}

/* ---- mmaps ----------------------------------------------------------- */

static const char mmaps_usage[] =
	"usage: memsight mmaps [options] FILE\n"
	"\n"
	"Every mmap and mremap of the recording (record -e mmap) in time order, as\n"
	"mmapsnoop shows them: time, process, size, protection, flags, the file\n"
	"mapped, the result, and the stack that asked.\n"
	"\n"
	"      --pid PID        only this process\n"
	"  -G, --no-stacks      leave the stacks out\n"
	"      --lines          add file:line to each frame\n"
	"      --json           one JSON object per line instead of text\n"
	"  -h, --help           show this help\n"
	CMD_STACK_OPTIONS;

static int on_mmap(struct session *s, const struct memop *op, void *arg)
{
	struct snoop *o = arg;
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
	if (o->json) {
		printf("{\"time_s\":%.6f,\"pid\":%d,\"tid\":%d,\"comm\":", (op->time - s->first_time) / 1e9, op->pid,
		       op->tid);
		json_str(machine_comm(&s->m, op->pid, op->tid));
		printf(",\"call\":\"%s\",\"size\":%llu,\"prot\":\"%s\",\"flags\":\"%s\",\"fd\":%lld,\"file\":",
		       op->kind == MEMOP_MMAP ? "mmap" : "mremap", (unsigned long long)op->len, prot, flags,
		       (long long)(int)op->fd);
		json_str(file);
		printf(",\"ret\":%lld,\"failed\":%s", (long long)op->ret, op->failed ? "true" : "false");
		stack_out(o, s, op->stack, 1);
		printf("}\n");
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
	stack_out(o, s, op->stack, 0);
	return 0;
}

int cmd_mmaps(int argc, char **argv)
{
	struct snoop o = { 0 };
	struct session s;
	char err[512];
	int r = snoop_options(argc, argv, mmaps_usage, &o, 0);

	if (r)
		return r == 1 ? 0 : r;
	if (cmd_open_group(&s, argv[optind], "mmap", "mmap", NULL))
		return 1;
	s.no_unwind = !o.stacks && !o.json;
	if (memops_replay(&s, on_mmap, &o, err, sizeof(err))) {
		msg_error("%s", err);
		return snoop_end(&s, 1);
	}
	return snoop_end(&s, 0);
}

/* ---- brk ------------------------------------------------------------- */

static const char brk_usage[] =
	"usage: memsight brk [options] FILE\n"
	"\n"
	"Heap growth through brk() (record -e brk) by stack, in bytes, as brkstack\n"
	"shows it: where the break was moved up, largest first.\n"
	"\n"
	"  -T, --top N          stacks shown (default 10)\n"
	"      --pid PID        only this process\n"
	"      --lines          add file:line to each frame\n"
	"      --json           one JSON object instead of text\n"
	"  -h, --help           show this help\n"
	CMD_STACK_OPTIONS;

struct brk_state {
	struct snoop *o;
	uint64_t grow, calls, failed;
};

static int on_brk(struct session *s, const struct memop *op, void *arg)
{
	struct brk_state *b = arg;

	if (op->kind != MEMOP_BRK || (b->o->pid >= 0 && op->pid != b->o->pid))
		return 0;
	b->calls++;
	if (op->failed) {
		b->failed++;
		return 0;
	}
	if (!op->grow || !op->stack)
		return 0;
	b->grow += op->grow;
	return stacktab_add(&b->o->tab, s, op->stack, op->grow) ? 0 : -1;
}

int cmd_brk(int argc, char **argv)
{
	struct snoop o = { 0 };
	struct brk_state b = { &o, 0, 0, 0 };
	struct stack_entry **v;
	struct session s;
	char err[512], sz[32];
	size_t n;
	int r = snoop_options(argc, argv, brk_usage, &o, 1);

	if (r)
		return r == 1 ? 0 : r;
	if (cmd_open_group(&s, argv[optind], "brk", "brk", NULL))
		return 1;
	stacktab_init(&o.tab, 0, 1);
	if (memops_replay(&s, on_brk, &b, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
		stacktab_release(&o.tab);
		return snoop_end(&s, 1);
	}
	v = stacktab_sorted(&o.tab, 0, &n);
	if (o.json) {
		printf("{\"trace\":");
		json_str(s.path);
		printf(",\"brk_calls\":%llu,\"failed\":%llu,\"grow_bytes\":%llu,\"stacks\":[", (unsigned long long)b.calls,
		       (unsigned long long)b.failed, (unsigned long long)b.grow);
		for (size_t i = 0; v && i < n && i < o.top; i++) {
			printf("%s{\"pid\":%d,\"comm\":", i ? "," : "", v[i]->pid);
			json_str(v[i]->comm);
			printf(",\"bytes\":%llu,\"calls\":%llu,\"frames\":", (unsigned long long)v[i]->weight,
			       (unsigned long long)v[i]->count);
			json_frames(v[i]->frames, v[i]->nr_frames, o.lines);
			putchar('}');
		}
		printf("]}\n");
	} else {
		printf("# memsight brk of '%s': the heap grew %s in %llu brk calls (%llu failed) from %zu stacks\n", s.path,
		       fmt_bytes(b.grow, sz, sizeof(sz)), (unsigned long long)b.calls, (unsigned long long)b.failed, n);
		for (size_t i = 0; v && i < n && i < o.top; i++) {
			printf("\n%llu bytes in %llu brk calls from stack (pid %d %s)\n", (unsigned long long)v[i]->weight,
			       (unsigned long long)v[i]->count, v[i]->pid, v[i]->comm);
			print_frames(v[i]->frames, v[i]->nr_frames, o.lines, "\t\t");
		}
	}
	free(v);
	stacktab_release(&o.tab);
	return snoop_end(&s, 0);
}

/* ---- shm ------------------------------------------------------------- */

static const char shm_usage[] =
	"usage: memsight shm [options] FILE\n"
	"\n"
	"Every System V shared memory call (record -e shm) in time order, as\n"
	"shmsnoop shows them: shmget, shmat, shmdt and shmctl with their arguments,\n"
	"result (a negative errno when it failed) and stack.\n"
	"\n"
	"      --pid PID        only this process\n"
	"  -G, --no-stacks      leave the stacks out\n"
	"      --lines          add file:line to each frame\n"
	"      --json           one JSON object per line instead of text\n"
	"  -h, --help           show this help\n"
	CMD_STACK_OPTIONS;

struct shm_call {
	const char *call;	/* "shmget", ... */
	uint64_t time, a[3];
	int nr_frames;
	struct frame frames[SNOOP_FRAMES];
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
	struct snoop *o = arg;
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
		c->nr_frames = smp->nr_ips ? session_frames(s, smp, c->frames, SNOOP_FRAMES, 0, 1) : 0;
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
		printf("{\"time_s\":%.6f,\"pid\":%d,\"tid\":%d,\"comm\":", (c->time - s->first_time) / 1e9, smp->pid, smp->tid);
		json_str(machine_comm(&s->m, smp->pid, smp->tid));
		printf(",\"call\":\"%s\",\"args\":{", c->call);
		for (int i = 0; i < 3 && shm_args[k][i]; i++)
			printf("%s\"%s\":%llu", i ? "," : "", shm_args[k][i], (unsigned long long)c->a[i]);
		printf("},\"ret\":%lld,\"frames\":", (long long)ret);
		json_frames(c->frames, c->nr_frames, o->lines);
		printf("}\n");
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

int cmd_shm(int argc, char **argv)
{
	struct snoop o = { 0 };
	struct session s;
	char err[512];
	int r = snoop_options(argc, argv, shm_usage, &o, 0), ret = 0;

	if (r)
		return r == 1 ? 0 : r;
	if (cmd_open_group(&s, argv[optind], "shm", "shm", NULL))
		return 1;
	hashmap_init(&o.pending, 0);
	err[0] = 0;
	if (session_replay(&s, on_shm, &o, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
		ret = 1;
	}
	hashmap_for_each(&o.pending, slot) free(slot->ptr);
	hashmap_release(&o.pending);
	return snoop_end(&s, ret);
}
