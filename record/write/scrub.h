/*
 * record/write/scrub.h: what of a sample's user registers and stack dump
 * reaches the trace file.
 *
 * Owns --stack-dump. A stack dump is raw process memory: buffers, strings,
 * keys. Unwinding reads only return addresses, which point into the
 * process's code, and the saved frame pointers and stack addresses that
 * locate a caller's frame, which point into the dump itself. So by
 * default (unwind) every word of the dump, and every user register but
 * the ip and sp, is zeroed unless it points into one of the process's
 * executable mappings (procs/execmap.h) or into the dump: the stacks
 * unwind the same, data is gone, and heap pointers with it. A process
 * whose mappings are not known is learned from /proc once (the learn
 * callback); one that cannot be (it is gone) gets the older rule,
 * pointers: every word that could be a user address is kept, its return
 * addresses among them. raw keeps what the kernel
 * copied. Either way the bytes past dyn_size (left in the ring by older
 * records) are zeroed, and with the first two rules a dump is stored
 * packed (formats/stackdump.h: its kept words and a bitmap) when that is
 * smaller, as it nearly always is. The drain loop copies each sample out
 * of its ring this way, in one pass that reads the dump once and writes
 * only what is kept: a dwarf sample is about 8 KiB, and copying it whole
 * to scrub it later cost more than the scrub itself. The objects that
 * kept words and sampled ips point into are marked as touched by a stack
 * (execmap_touch): they are the ones a trace must carry.
 */
#ifndef MEMSIGHT_RECORD_SCRUB_H
#define MEMSIGHT_RECORD_SCRUB_H

#include <stddef.h>
#include <stdint.h>

struct execmap;

enum scrub_mode {
	SCRUB_UNWIND,	/* keep the words that point into code or into the dump */
	SCRUB_POINTERS, /* keep the words that could be user addresses */
	SCRUB_RAW,	/* keep every byte the kernel copied from the stack */
};

struct scrub {
	enum scrub_mode mode;
	uint64_t user_top;	/* first address above user space */
	unsigned char *pack;	/* a packed dump is built here, then copied back */
	struct execmap *map;	/* the processes' code, for SCRUB_UNWIND */
	int avx2;		/* the CPU has AVX2: four words at a time */
	uint64_t words_seen, words_kept; /* over every dump scrubbed */
	uint64_t dumps_unknown;	/* dumps of processes whose code was not known: pointers kept */
	/* Learn the code of a process the map does not know, from what is
	 * there now; 0 when it did. Asked once per process. */
	int (*learn)(void *arg, int pid);
	void *learn_arg;
	int *asked;		/* the pids learn was asked about (open addressing, 0 = empty) */
	size_t asked_alloc, nr_asked;
};

/* Parse "unwind", "pointers" or "raw"; -1 otherwise. */
int scrub_mode_parse(const char *s);
/* The name of a mode, as the trace's stack_dump key writes it. */
const char *scrub_mode_name(enum scrub_mode m);

/* Fill in the address-space limit of this machine (47 or 56 bits).
 * Returns 0, or -1 when out of memory. */
int scrub_init(struct scrub *s, enum scrub_mode mode, struct execmap *map);
void scrub_free(struct scrub *s);

/*
 * Copy one PERF_RECORD_SAMPLE of an event with this sample_type and
 * sample_regs_user from src (size bytes, the ring's) to dst, its dump
 * scrubbed by the mode's rule and packed when that is smaller (its type
 * then STACKDUMP_PACKED_SAMPLE). dst has room for size bytes. data: the
 * dump holds a result to read (a pointer an allocator returned through
 * memory), not frames: the pointers rule, at most, applies. Returns the
 * bytes written. Records it cannot parse are copied as they are.
 */
size_t scrub_copy(struct scrub *s, uint64_t sample_type, uint64_t regs_mask, int data, const unsigned char *src,
		  size_t size, unsigned char *dst);

/*
 * The same for a sample whose dump is packed already (a
 * STACKDUMP_PACKED_SAMPLE made of the allocation wrapper's report, whose
 * words passed the wrapper's filter): the rule applied to its registers
 * and to the words it holds. Returns the bytes written, at most size.
 */
size_t scrub_repack(struct scrub *s, uint64_t sample_type, uint64_t regs_mask, const unsigned char *src,
		    size_t size, unsigned char *dst);

/*
 * Put back into dst, the copy scrub_copy or scrub_repack made of src, the
 * user registers of keep as src has them: values that are no addresses
 * (a syscall's arguments) and that the rules would drop. The registers
 * lie before the dump, so at the same place in both.
 */
void scrub_keep_regs(uint64_t sample_type, uint64_t regs_mask, uint64_t keep, const unsigned char *src,
		     size_t size, unsigned char *dst);
/* Zero the user registers of clear in a sample copied as it was (no stack
 * dump, so no scrub): registers recorded for some samples of an event
 * that this one has no use for. */
void scrub_clear_regs(uint64_t sample_type, uint64_t regs_mask, uint64_t clear, unsigned char *rec, size_t size);

#endif
