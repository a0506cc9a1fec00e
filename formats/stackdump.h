/*
 * formats/stackdump.h: the packed form of a sample's user stack dump
 * (FORMAT.md, "Packed samples"), written by the recorder and read by the
 * analyzer.
 *
 * Owns the layout of a packed PERF_SAMPLE_STACK_USER field and reading a
 * word of a dump whichever way it was stored. A dump with the `pointers`
 * rule applied is mostly zero words; packed, it keeps a bitmap of the
 * non-zero words and those words alone, so neither the compressor nor the
 * decompressor handles the zeros. Packing is lossless: the kernel's layout
 * of the same dump can be rebuilt from it.
 */
#ifndef MEMSIGHT_STACKDUMP_H
#define MEMSIGHT_STACKDUMP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A packed sample: PERF_RECORD_SAMPLE (9) with this bit set in its type. */
#define STACKDUMP_PACKED_SAMPLE 0x10009u
/* perf_event_open takes sample_stack_user below 64 KiB, so a dump has at
 * most this many 64-word blocks. */
#define STACKDUMP_MAX_BLOCKS 128

/* A dump as the analyzer sees it. */
struct stackdump {
	const unsigned char *bytes; /* dense: the dump; packed: its non-zero words */
	const unsigned char *bits;  /* packed: one bit per word; NULL when dense */
	uint64_t size;		    /* bytes that hold data (dyn_size) */
	uint64_t nr_words;	    /* packed: how many words bytes holds */
};

/* Words before each block of a packed dump, so that reading a word costs
 * no popcount walk: filled once per dump by stackdump_rank. */
struct stackdump_rank {
	uint16_t before[STACKDUMP_MAX_BLOCKS];
};

/*
 * Pack a kernel PERF_SAMPLE_STACK_USER field of size bytes of dump (its
 * size, the dump, its dyn_size) into out, which must not overlap it and
 * must hold as many bytes: size, dyn_size, the number of non-zero words,
 * the bitmap, those words. The bytes past the last whole word of the first
 * dyn_size must be zero. Returns the bytes written, or 0 when the packed
 * form would not be smaller or the field is not well formed.
 */
size_t stackdump_pack(const unsigned char *field, size_t avail, unsigned char *out);

/*
 * Parse a packed field at p (avail bytes readable) into d. Returns the
 * bytes the field takes, or 0 when it is malformed.
 */
size_t stackdump_parse_packed(const unsigned char *p, size_t avail, struct stackdump *d);

/* Fill rank for a packed dump (nothing to do for a dense one). */
void stackdump_rank(const struct stackdump *d, struct stackdump_rank *rank);

/* Without -mpopcnt, __builtin_popcountll is a library call; this is a few
 * inline instructions. */
static inline unsigned stackdump_pop64(uint64_t v)
{
	v = v - ((v >> 1) & 0x5555555555555555ull);
	v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
	v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (unsigned)((v * 0x0101010101010101ull) >> 56);
}

/*
 * Word i of the dump, which must lie within its size, rank filled for it:
 * the read an unwinder makes at nearly every step, so inline.
 */
static inline uint64_t stackdump_word(const struct stackdump *d, const struct stackdump_rank *rank, uint64_t i)
{
	uint64_t bits, v = 0, idx;

	if (!d->bits) {
		memcpy(&v, d->bytes + 8 * i, 8);
		return v;
	}
	memcpy(&bits, d->bits + 8 * (i / 64), 8);
	if (!(bits >> (i % 64) & 1))
		return 0;
	idx = rank->before[i / 64] + stackdump_pop64(bits & ((1ull << (i % 64)) - 1));
	/* A bitmap with more bits than words is corrupt: read as zero. */
	if (idx < d->nr_words)
		memcpy(&v, d->bytes + 8 * idx, 8);
	return v;
}

/*
 * Read len (at most 8) bytes at offset off of the dump into dst. rank is
 * NULL or filled for d. Returns 0, or -1 when they lie past its size.
 */
int stackdump_read(const struct stackdump *d, const struct stackdump_rank *rank, uint64_t off, void *dst,
		   size_t len);

#endif
