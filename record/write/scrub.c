/*
 * record/write/scrub.c: zeroing what unwinding never reads in stack dumps; see
 * scrub.h.
 */
#include "scrub.h"

#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../formats/stackdump.h"
#include "../probes/events.h"

/* The lowest page is never mapped (mmap_min_addr is at least 4096). */
#define SCRUB_USER_BOTTOM 4096ull

int scrub_init(struct scrub *s, enum scrub_mode mode)
{
	FILE *f;
	char line[4096];

	s->mode = mode;
	s->user_top = 1ull << 47;
	/* A record is at most 64 KiB (its size is a u16), and so is a dump. */
	s->pack = malloc(1u << 16);
	if (!s->pack)
		return -1;
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return 0;
	/* The kernel clears la57 from the flags when it does not run with
	 * five-level page tables, so the flag means user addresses may reach
	 * 56 bits. */
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5)) {
			if (strstr(line, " la57"))
				s->user_top = 1ull << 56;
			break;
		}
	fclose(f);
	return 0;
}

void scrub_free(struct scrub *s)
{
	free(s->pack);
	s->pack = NULL;
}

/* Pack the dump field at rec + field in place when that is smaller, and
 * move what follows it up. Returns the record's new size. */
static size_t scrub_pack(const struct scrub *s, unsigned char *rec, size_t size, size_t field, uint64_t dump)
{
	size_t packed = stackdump_pack(rec + field, size - field, s->pack);
	size_t tail = field + 16 + dump;
	struct perf_event_header h;

	if (!packed)
		return size;
	memcpy(rec + field, s->pack, packed);
	memmove(rec + field + packed, rec + tail, size - tail);
	memcpy(&h, rec, sizeof(h));
	h.type = STACKDUMP_PACKED_SAMPLE;
	h.size = (uint16_t)(size - (tail - field - packed));
	memcpy(rec, &h, sizeof(h));
	return h.size;
}

/* Zero the 8-byte words of p[0..n) that could not be user addresses, and
 * a last partial word, which no unwinder reads. The loop has no branch on
 * the data, so it runs at memory speed. */
static void scrub_words(const struct scrub *s, unsigned char *p, size_t n)
{
	const uint64_t span = s->user_top - SCRUB_USER_BOTTOM;
	size_t k;

	for (k = 0; k + 8 <= n; k += 8) {
		uint64_t v;

		memcpy(&v, p + k, 8);
		v = v - SCRUB_USER_BOTTOM < span ? v : 0;
		memcpy(p + k, &v, 8);
	}
	memset(p + k, 0, n - k);
}

size_t scrub_sample(const struct scrub *s, uint64_t st, uint64_t regs_mask, unsigned char *rec, size_t size)
{
	size_t off = events_fixed_end(st), nregs = 0, field;
	uint64_t v, abi = 0, sp = 0, dump, dyn;
	unsigned char *regs = NULL;

	/* memsight never asks for READ or BRANCH_STACK, whose layouts depend
	 * on more than the sample type. */
	if (!(st & PERF_SAMPLE_STACK_USER) || (st & (PERF_SAMPLE_READ | PERF_SAMPLE_BRANCH_STACK)))
		return size;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > size)
			return size;
		memcpy(&v, rec + off, 8);
		if (v > (size - off) / 8)
			return size;
		off += 8 + 8 * v;
	}
	if (st & PERF_SAMPLE_RAW) {
		uint32_t raw;

		if (off + 4 > size)
			return size;
		memcpy(&raw, rec + off, 4);
		off += 4 + (size_t)raw;
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		if (off + 8 > size)
			return size;
		memcpy(&abi, rec + off, 8);
		off += 8;
		if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
			nregs = (size_t)__builtin_popcountll(regs_mask);
			if (off + 8 * nregs > size)
				return size;
			regs = rec + off;
			if (regs_mask & (1ull << PERF_REG_X86_SP))
				memcpy(&sp, regs + 8 * __builtin_popcountll(regs_mask & ((1ull << PERF_REG_X86_SP) - 1)),
				       8);
			off += 8 * nregs;
		}
	}
	if (off + 8 > size)
		return size;
	field = off;
	memcpy(&dump, rec + off, 8);
	off += 8;
	if (!dump)
		return size;
	if (dump > size - off || size - off - dump < 8)
		return size;
	memcpy(&dyn, rec + off + dump, 8);
	if (dyn > dump)
		return size;
	/* Past dyn_size the kernel skipped, not copied: what is there is an
	 * older record's bytes from the ring. */
	memset(rec + off + dyn, 0, dump - dyn);
	/* Words are only words where sp is 8-byte aligned, as compiled code
	 * keeps it; a 32-bit process's addresses are 4 bytes. */
	if (s->mode == SCRUB_POINTERS && abi == PERF_SAMPLE_REGS_ABI_64 && !(sp & 7)) {
		scrub_words(s, regs, 8 * nregs);
		scrub_words(s, rec + off, dyn);
	}
	return s->pack ? scrub_pack(s, rec, size, field, dump) : size;
}
