/*
 * analyze/model/memops.c: syscall pairing and per-process heap state.
 *
 * A syscall is one sample at its exit, with its stack and its arguments in
 * the user registers it carries (catalog.h's SYSCALL events). Traces of
 * earlier recorders hold an entry and an exit: the entry sample is copied
 * (fields and callchain) per thread until its exit arrives, a thread being
 * in at most one syscall at a time, so one slot per thread is enough. An
 * exit without either (the call began before the recording) is dropped.
 */
#include "memops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../formats/wrapper.h"

struct pending {
	struct sample smp;
	uint64_t *ips;
	size_t ips_alloc;
	uint64_t args[SESS_MAX_FIELDS];
	int live;
};

struct memops_state {
	struct session *s;
	memop_fn fn;
	void *arg;
	struct hashmap pending; /* tid -> struct pending * */
	struct hashmap brk;	/* pid -> current break */
};

const char *const fault_kind_names[FAULT_KINDS] = {
	[FAULT_READ] = "read", [FAULT_WRITE] = "write", [FAULT_EXEC] = "exec",
	[FAULT_COW] = "cow", [FAULT_KERNEL] = "kernel",
};

unsigned fault_kinds(uint64_t code)
{
	unsigned k = code & 16 ? 1u << FAULT_EXEC : code & 2 ? 1u << FAULT_WRITE : 1u << FAULT_READ;

	if ((code & 3) == 3)
		k |= 1u << FAULT_COW;
	if (!(code & 4))
		k |= 1u << FAULT_KERNEL;
	return k;
}

int fault_kind_parse(const char *name)
{
	for (int i = 0; i < FAULT_KINDS; i++)
		if (!strcmp(name, fault_kind_names[i]))
			return i;
	return -1;
}

static int on_sample(struct session *s, struct sample *smp, void *arg)
{
	static const struct memop zero; /* copied, as parse_sample's */
	struct memops_state *st = arg;
	struct memop op = zero;
	struct hm_slot *slot;
	struct pending *p;
	enum ev_kind k = smp->ev->kind;
	uint64_t args[SESS_MAX_FIELDS] = { 0 };
	const char *const *names;

	op.pid = smp->pid;
	op.tid = smp->tid;
	op.time = smp->time;
	/* A GROUP/N event took one sample in N of its firings. */
	op.weight = !smp->ev->attr.freq && smp->ev->attr.sample_period > 1 ? smp->ev->attr.sample_period : 1;
	switch (k) {
	case EVK_FAULT:
	case EVK_FAULT_MAJ:
		op.kind = k == EVK_FAULT ? MEMOP_FAULT : MEMOP_FAULT_MAJ;
		op.addr = smp->addr;
		if (smp->ev->tp) {
			/* The exceptions tracepoints: the address and the error
			 * code are fields. A fault on a kernel address (the top
			 * half) is the kernel's own, which the software event
			 * never counts. */
			op.addr = sample_num(smp, "address");
			if (op.addr >> 63)
				return 0;
			op.fault_kinds = fault_kinds(sample_num(smp, "error_code"));
			/* A fault in user mode has for its kernel stack the
			 * exception's entry, always the same: leave it out, as
			 * the software event's stacks do (its kernel callchain
			 * is empty for a user-mode fault). */
			if (!(op.fault_kinds >> FAULT_KERNEL & 1))
				for (uint64_t i = 0; i < smp->nr_ips; i++)
					if (smp->ips[i] == PERF_CONTEXT_USER) {
						smp->ips += i;
						smp->nr_ips -= i;
						break;
					}
		}
		op.len = op.grow = s->page_size;
		op.map = machine_find_map(&s->m, smp->pid, op.addr);
		if (op.map && !strncmp(op.map->name, WRAPPER_STREAM_MAP, strlen(WRAPPER_STREAM_MAP))) {
			if (s->own_last_time != smp->time || s->own_last_tid != (int)smp->tid)
				s->own_faults += op.weight;
			s->own_last_time = smp->time;
			s->own_last_tid = (int)smp->tid;
			return 0;
		}
		op.stack = smp;
		return st->fn(s, &op, st->arg);
	case EVK_BRK_ENTER:
	case EVK_MMAP_ENTER:
	case EVK_MUNMAP_ENTER:
	case EVK_MREMAP_ENTER:
		slot = hashmap_u64(&st->pending, smp->tid, NULL);
		if (!slot)
			return -1;
		if (!slot->ptr && !(slot->ptr = calloc(1, sizeof(struct pending))))
			return -1;
		p = slot->ptr;
		p->smp = *smp;
		if (smp->nr_ips > p->ips_alloc) {
			uint64_t *v = realloc(p->ips, smp->nr_ips * sizeof(*v));

			if (!v)
				return -1;
			p->ips = v;
			p->ips_alloc = smp->nr_ips;
		}
		if (smp->nr_ips)
			memcpy(p->ips, smp->ips, smp->nr_ips * sizeof(*p->ips));
		p->smp.ips = p->ips;
		p->smp.raw = NULL;
		for (int i = 0; i < SESS_MAX_FIELDS; i++)
			p->args[i] = session_field(s, smp, i);
		p->live = 1;
		return 0;
	case EVK_BRK_EXIT:
	case EVK_MMAP_EXIT:
	case EVK_MUNMAP_EXIT:
	case EVK_MREMAP_EXIT:
		break;
	default:
		return 0;
	}
	if (sample_syscall_args(smp, args, &names)) {
		op.stack = smp;
	} else {
		slot = hashmap_u64_find(&st->pending, smp->tid);
		p = slot ? slot->ptr : NULL;
		if (!p || !p->live || p->smp.ev->kind + 1 != k) {
			if (p)
				p->live = 0;
			return 0;
		}
		p->live = 0;
		memcpy(args, p->args, sizeof(args));
		op.stack = &p->smp;
		op.time = p->smp.time;
	}
	op.ret = (int64_t)session_field(s, smp, 0);
	/* Syscalls return -errno in [-4095, -1]. */
	op.failed = op.ret < 0 && op.ret >= -4095;
	switch (k) {
	case EVK_BRK_EXIT: {
		struct hm_slot *b = hashmap_u64(&st->brk, (uint32_t)op.pid, NULL);
		uint64_t cur = b ? b->val : 0;

		op.kind = MEMOP_BRK;
		op.addr = args[0];
		if (!cur) {
			/* Unknown so far: a /proc snapshot's [heap] end is the
			 * break when the recording began. */
			struct process *pr = machine_process(&s->m, op.pid);

			for (size_t i = 0; pr && i < pr->nr_maps; i++)
				if (!strcmp(pr->maps[i].name, "[heap]"))
					cur = pr->maps[i].end;
		}
		op.brk_old = cur;
		op.brk_new = (uint64_t)op.ret;
		if (cur && op.brk_new > cur)
			op.grow = op.brk_new - cur;
		if (b)
			b->val = op.brk_new;
		break;
	}
	case EVK_MMAP_EXIT:
		op.kind = MEMOP_MMAP;
		op.addr = op.failed ? args[0] : (uint64_t)op.ret;
		op.len = args[1];
		op.prot = args[2];
		op.flags = args[3];
		op.fd = args[4];
		op.grow = op.failed ? 0 : op.len;
		break;
	case EVK_MUNMAP_EXIT:
		op.kind = MEMOP_MUNMAP;
		op.addr = args[0];
		op.len = args[1];
		/* No perf record tells of an unmap: keep the maps true here. */
		if (!op.failed)
			machine_unmap(&s->m, op.pid, op.addr, op.addr + op.len);
		break;
	case EVK_MREMAP_EXIT:
		op.kind = MEMOP_MREMAP;
		op.addr = args[0];
		op.old_len = args[1];
		op.len = args[2];
		op.flags = args[3];
		op.grow = !op.failed && op.len > op.old_len ? op.len - op.old_len : 0;
		break;
	default:
		return 0;
	}
	return st->fn(s, &op, st->arg);
}

/* An exec replaces the heap: the new image's first brk starts afresh,
 * not from the break of the program before it. */
static void on_exec(void *arg, struct session *s, int pid, uint64_t time)
{
	struct memops_state *st = arg;

	(void)s;
	(void)time;
	if (hashmap_u64_find(&st->brk, (uint32_t)pid))
		hashmap_u64_remove(&st->brk, (uint32_t)pid);
}

struct memops_state *memops_new(struct session *s, memop_fn fn, void *arg)
{
	struct memops_state *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	*st = (struct memops_state){ s, fn, arg, { 0 }, { 0 } };
	hashmap_init(&st->pending, 0);
	hashmap_init(&st->brk, 0);
	if (session_on_exec(s, on_exec, st)) {
		memops_free(st);
		return NULL;
	}
	return st;
}

int memops_sample(struct memops_state *st, struct sample *smp)
{
	return on_sample(st->s, smp, st);
}

void memops_free(struct memops_state *st)
{
	if (!st)
		return;
	hashmap_for_each(&st->pending, slot) {
		struct pending *p = slot->ptr;

		if (p)
			free(p->ips);
		free(p);
	}
	hashmap_release(&st->pending);
	hashmap_release(&st->brk);
	free(st);
}

int memops_replay(struct session *s, memop_fn fn, void *arg, char *err, size_t errlen)
{
	struct memops_state *st = memops_new(s, fn, arg);
	int r;

	if (!st) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r = session_replay(s, on_sample, st, err, errlen);
	memops_free(st);
	return r;
}

int memop_is(const struct memop *op, enum memop_kind kind)
{
	if (op->failed)
		return 0;
	if (kind == MEMOP_MMAP && op->kind == MEMOP_MREMAP)
		return op->grow > 0;
	return op->kind == kind;
}
