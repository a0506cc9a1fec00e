/*
 * formats/stackdump.c: packing a stack dump and reading a word of one; see
 * stackdump.h and FORMAT.md.
 */
#include "stackdump.h"

#include <string.h>

/* The packed field's header: size, dyn_size, number of words. */
#define PACKED_HEAD 24

size_t stackdump_pack(const unsigned char *field, size_t avail, unsigned char *out)
{
	uint64_t size, dyn, nr = 0;
	size_t words, blocks, len, i;
	unsigned char *w;

	if (avail < 16)
		return 0;
	memcpy(&size, field, 8);
	if (size > avail - 16 || size / 8 > STACKDUMP_MAX_BLOCKS * 64)
		return 0;
	memcpy(&dyn, field + 8 + size, 8);
	if (dyn > size)
		return 0;
	words = dyn / 8;
	for (i = 8 * words; i < dyn; i++)
		if (field[8 + i])
			return 0;
	blocks = (words + 63) / 64;
	len = PACKED_HEAD + 8 * blocks;
	if (len >= 16 + size)
		return 0;
	memcpy(out, &size, 8);
	memcpy(out + 8, &dyn, 8);
	memset(out + PACKED_HEAD, 0, 8 * blocks);
	w = out + len;
	for (i = 0; i < words; i++) {
		uint64_t v, bits;

		memcpy(&v, field + 8 + 8 * i, 8);
		if (!v)
			continue;
		if (len + 8 >= 16 + size)
			return 0;
		memcpy(&bits, out + PACKED_HEAD + 8 * (i / 64), 8);
		bits |= 1ull << (i % 64);
		memcpy(out + PACKED_HEAD + 8 * (i / 64), &bits, 8);
		memcpy(w, &v, 8);
		w += 8;
		len += 8;
		nr++;
	}
	memcpy(out + 16, &nr, 8);
	return len;
}

size_t stackdump_parse_packed(const unsigned char *p, size_t avail, struct stackdump *d)
{
	uint64_t size, dyn, nr;
	size_t blocks;

	if (avail < PACKED_HEAD)
		return 0;
	memcpy(&size, p, 8);
	memcpy(&dyn, p + 8, 8);
	memcpy(&nr, p + 16, 8);
	if (dyn > size || size / 8 > STACKDUMP_MAX_BLOCKS * 64)
		return 0;
	blocks = (dyn / 8 + 63) / 64;
	if (nr > dyn / 8 || 8 * (blocks + nr) > avail - PACKED_HEAD)
		return 0;
	d->bits = p + PACKED_HEAD;
	d->bytes = d->bits + 8 * blocks;
	d->size = dyn;
	d->nr_words = nr;
	return PACKED_HEAD + 8 * (blocks + nr);
}

void stackdump_rank(const struct stackdump *d, struct stackdump_rank *rank)
{
	unsigned n = 0;

	/* An unwinder reads a word, learns from it where the next frame is,
	 * and reads there: each cache miss would wait for the one before.
	 * Asked for now, the dump's lines arrive together. */
	for (uint64_t at = 0; at < (d->bits ? 8 * d->nr_words : d->size); at += 64)
		__builtin_prefetch(d->bytes + at);
	if (!d->bits)
		return;
	for (size_t b = 0; b < (d->size / 8 + 63) / 64; b++) {
		uint64_t bits;

		rank->before[b] = (uint16_t)n;
		memcpy(&bits, d->bits + 8 * b, 8);
		n += stackdump_pop64(bits);
	}
}

/* Word i of a packed dump, with or without its rank. */
static uint64_t packed_word(const struct stackdump *d, const struct stackdump_rank *rank, uint64_t i)
{
	struct stackdump_rank one;

	if (!rank) {
		/* Only the block of word i needs its count. */
		one.before[i / 64] = 0;
		for (uint64_t b = 0; b < i / 64; b++) {
			uint64_t x;

			memcpy(&x, d->bits + 8 * b, 8);
			one.before[i / 64] += stackdump_pop64(x);
		}
		rank = &one;
	}
	return stackdump_word(d, rank, i);
}

int stackdump_read(const struct stackdump *d, const struct stackdump_rank *rank, uint64_t off, void *dst,
		   size_t len)
{
	unsigned char buf[16];
	uint64_t w;

	if (len > 8 || off > d->size || len > d->size - off)
		return -1;
	if (!d->bits) {
		memcpy(dst, d->bytes + off, len);
		return 0;
	}
	/* An aligned word, as unwinders read nearly always. */
	if (len == 8 && off % 8 == 0) {
		uint64_t v = packed_word(d, rank, off / 8);

		memcpy(dst, &v, 8);
		return 0;
	}
	/* Bytes of the last partial word are zero, and not in the bitmap. */
	w = off / 8;
	memset(buf, 0, sizeof(buf));
	if (w < d->size / 8)
		memcpy(buf, &(uint64_t){ packed_word(d, rank, w) }, 8);
	if (off % 8 && off % 8 + len > 8 && w + 1 < d->size / 8)
		memcpy(buf + 8, &(uint64_t){ packed_word(d, rank, w + 1) }, 8);
	memcpy(dst, buf + off % 8, len);
	return 0;
}
