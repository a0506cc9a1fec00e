/*
 * analyze/replay/sample.c: one perf record into a struct sample, by its
 * event's own sample_type as the recorder gave it to the kernel (stored in
 * the trace), so traces made with other field sets still decode; and a
 * sample's user registers by number.
 */
#include "session.h"
#include "session_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sess_event *event_of(struct session *s, uint64_t id)
{
	size_t lo = 0, hi = s->nr_ids;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->ids[mid].id == id)
			return s->ids[mid].ev;
		if (s->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Decode a PERF_RECORD_SAMPLE, or a packed one, by its event's
 * sample_type. Returns 0, or -1 when the record is shorter than its fields
 * claim. */
int session_sample_parse(struct session *s, const unsigned char *rec, size_t len, struct sample *smp)
{
	/* Cleared by copying a zeroed one: for a memset of a struct this
	 * size GCC emits `rep stos`, whose start-up alone cost a tenth of a
	 * frame-pointer trace's replay. */
	static const struct sample zero;
	const unsigned char *p = rec + 8, *end = rec + len;
	int packed = ((const struct perf_event_header *)rec)->type == STACKDUMP_PACKED_SAMPLE;
	uint64_t id, st;

#define NEED(n) do { if ((size_t)(end - p) < (size_t)(n)) return -1; } while (0)
	*smp = zero;
	smp->misc = ((const struct perf_event_header *)rec)->misc;
	NEED(8);
	memcpy(&id, p, 8);
	smp->ev = event_of(s, id);
	if (!smp->ev)
		return -1;
	st = smp->ev->attr.sample_type;
	if (packed && !(st & PERF_SAMPLE_STACK_USER))
		return -1;
	p += 8;
	if (st & PERF_SAMPLE_IP) { NEED(8); memcpy(&smp->ip, p, 8); p += 8; }
	if (st & PERF_SAMPLE_TID) { NEED(8); memcpy(&smp->pid, p, 4); memcpy(&smp->tid, p + 4, 4); p += 8; }
	if (st & PERF_SAMPLE_TIME) { NEED(8); memcpy(&smp->time, p, 8); p += 8; }
	if (st & PERF_SAMPLE_ADDR) { NEED(8); memcpy(&smp->addr, p, 8); p += 8; }
	if (st & PERF_SAMPLE_ID) { NEED(8); p += 8; }
	if (st & PERF_SAMPLE_STREAM_ID) { NEED(8); p += 8; }
	if (st & PERF_SAMPLE_CPU) { NEED(8); memcpy(&smp->cpu, p, 4); p += 8; }
	if (st & PERF_SAMPLE_PERIOD) { NEED(8); p += 8; }
	if (st & PERF_SAMPLE_READ)
		return -1; /* never recorded by memsight */
	if (st & PERF_SAMPLE_CALLCHAIN) {
		NEED(8);
		memcpy(&smp->nr_ips, p, 8);
		p += 8;
		if (smp->nr_ips > (size_t)(end - p) / 8)
			return -1;
		smp->ips = (const uint64_t *)p;
		p += 8 * smp->nr_ips;
	}
	if (st & PERF_SAMPLE_RAW) {
		NEED(4);
		memcpy(&smp->raw_size, p, 4);
		NEED(4 + (size_t)smp->raw_size);
		smp->raw = p + 4;
		/* The u32 size and the data are padded to 8 together. */
		p += (4 + smp->raw_size + 7) & ~7u;
	}
	if (st & PERF_SAMPLE_BRANCH_STACK)
		return -1; /* never recorded by memsight */
	if (st & PERF_SAMPLE_REGS_USER) {
		uint64_t abi;

		NEED(8);
		memcpy(&abi, p, 8);
		p += 8;
		if (abi) {
			int n = __builtin_popcountll(smp->ev->attr.sample_regs_user);

			NEED(8 * n);
			smp->regs = (const uint64_t *)p;
			smp->regs_mask = smp->ev->attr.sample_regs_user;
			p += 8 * n;
		}
	}
	if ((st & PERF_SAMPLE_STACK_USER) && packed) {
		size_t n = stackdump_parse_packed(p, end - p, &smp->stack);

		if (!n)
			return -1;
		p += n;
	} else if (st & PERF_SAMPLE_STACK_USER) {
		uint64_t size;

		NEED(8);
		memcpy(&size, p, 8);
		p += 8;
		if (size) {
			NEED(size + 8);
			smp->stack.bytes = p;
			memcpy(&smp->stack.size, p + size, 8); /* dyn_size: the bytes really copied */
			if (smp->stack.size > size)
				smp->stack.size = size;
			p += size + 8;
		}
	}
	/* WEIGHT, DATA_SRC, TRANSACTION, REGS_INTR and PHYS_ADDR, which
	 * come between, are never recorded by memsight. */
	if (st & PERF_SAMPLE_CGROUP) {
		NEED(8);
		memcpy(&smp->cgroup, p, 8);
		p += 8;
	}
#undef NEED
	if (smp->ev->kind == EVK_SYSCALLS)
		session_syscall_file(s, smp);
	return 0;
}

int sample_reg(const struct sample *smp, int reg, uint64_t *val)
{
	int idx;

	if (!smp->regs || !(smp->regs_mask & (1ull << reg)))
		return 0;
	idx = __builtin_popcountll(smp->regs_mask & ((1ull << reg) - 1));
	memcpy(val, &smp->regs[idx], 8);
	return 1;
}
