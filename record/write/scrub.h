/*
 * record/write/scrub.h: what of a sample's user registers and stack dump reaches
 * the trace file.
 *
 * Owns --stack-dump. A stack dump is raw process memory: buffers, strings,
 * keys. Unwinding reads only return addresses and the saved registers that
 * locate the caller's frame, and every one of those is an address in the
 * process's user address space. So by default (pointers) each 8-byte word
 * of the dump, and each user register, whose value could not be a user
 * address is zeroed before the chunk is compressed: the stacks unwind the
 * same, secrets that are not addresses never reach the disk, and random
 * data on the stack stops costing bytes. raw keeps what the kernel copied.
 * Either way the bytes past dyn_size (left in the ring by older records)
 * are zeroed, and a dump that packs smaller (formats/stackdump.h: its
 * non-zero words and a bitmap) is stored packed. Runs on the compression
 * thread, never in the drain loop.
 */
#ifndef MEMSIGHT_RECORD_SCRUB_H
#define MEMSIGHT_RECORD_SCRUB_H

#include <stddef.h>
#include <stdint.h>

enum scrub_mode {
	SCRUB_POINTERS, /* keep the words that could be user addresses */
	SCRUB_RAW,	/* keep every byte the kernel copied from the stack */
};

struct scrub {
	enum scrub_mode mode;
	uint64_t user_top;	/* first address above user space */
	unsigned char *pack;	/* a packed dump is built here, then copied back */
};

/* Fill in the address-space limit of this machine (47 or 56 bits).
 * Returns 0, or -1 when out of memory. */
int scrub_init(struct scrub *s, enum scrub_mode mode);
void scrub_free(struct scrub *s);

/* Scrub one PERF_RECORD_SAMPLE of an event with this sample_type and
 * sample_regs_user in place, and pack its dump when that makes it smaller
 * (its type becomes STACKDUMP_PACKED_SAMPLE). Returns the record's size,
 * now. Records it cannot parse are left alone. */
size_t scrub_sample(const struct scrub *s, uint64_t sample_type, uint64_t regs_mask, unsigned char *rec,
		  size_t size);

#endif
