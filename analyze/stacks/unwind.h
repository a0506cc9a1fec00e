/*
 * analyze/stacks/unwind.h: user stacks from a register set and a stack dump
 * (--call-graph dwarf recordings).
 *
 * Owns one small interface over two backends, libdw (the default) and
 * libunwind, both reading .eh_frame and .debug_frame of the objects the
 * process had mapped at the sample. Each keeps one address space per
 * process and code generation (struct process.code_gen), reused across
 * samples. The result is raw addresses, innermost first: names come later,
 * from symbols, in a cached pass. A stack that cannot be finished (dump cut
 * short, registers missing, bad tables, object gone) keeps the frames found
 * so far and is counted by reason. Knows nothing of events or commands.
 */
#ifndef MEMSIGHT_UNWIND_H
#define MEMSIGHT_UNWIND_H

#include <stdint.h>
#include <stdio.h>

#include "../../formats/stackdump.h"
#include "../replay/machine.h"

enum unwind_backend {
	UNWIND_LIBDW,
	UNWIND_LIBUNWIND,
};

/* Why a stack stopped before its outermost frame. */
enum unwind_stop {
	UNWIND_STOP_NONE,	/* reached the outermost frame */
	UNWIND_STOP_NO_REGS,	/* the sample has no ip or sp */
	UNWIND_STOP_NO_STACK,	/* the sample has no stack bytes */
	UNWIND_STOP_STACK_END,	/* a frame needed bytes beyond the dump */
	UNWIND_STOP_NO_OBJECT,	/* an address in no mapping, or its file is missing */
	UNWIND_STOP_NO_CFI,	/* no unwind entry for an address, or a bad one */
	UNWIND_STOP_DEPTH,	/* more frames than asked for */
	UNWIND_STOP_NR,
};
extern const char *const unwind_stop_names[UNWIND_STOP_NR];

/* What one sample brings: registers by perf_regs number, the dump at sp. */
struct unwind_input {
	int pid, tid;
	uint64_t regs_mask;
	const uint64_t *regs;	/* packed in mask bit order */
	struct stackdump stack;
};

struct unwind_stats {
	uint64_t stacks;
	uint64_t stopped[UNWIND_STOP_NR];
	uint64_t frames;
	uint64_t max_stack_used; /* deepest dump byte any stack read, +1 */
	/* Complete stacks by the dump bytes they needed, in 1 KiB steps
	 * (the last counts 15 KiB and more): what --call-graph dwarf,SIZE
	 * would have been enough. */
	uint64_t need_kib[16];
};

struct unwinder;

/* Returns NULL when out of memory or the backend cannot start. */
struct unwinder *unwind_new(enum unwind_backend b, struct machine *m);
void unwind_free(struct unwinder *u);
/* Parse "libdw" or "libunwind"; -1 for anything else. */
int unwind_backend_parse(const char *name);
const char *unwind_backend_name(enum unwind_backend b);
/*
 * Unwind one sample into ips (innermost first, the first the sampled ip,
 * the others return addresses). Returns the number of frames (0 when
 * nothing could be done) and sets *stop.
 */
int unwind_sample(struct unwinder *u, const struct unwind_input *in, uint64_t *ips, int max,
		  enum unwind_stop *stop);
const struct unwind_stats *unwind_stats(const struct unwinder *u);
/* One line per reason stacks stopped early, for stderr; nothing when
 * every stack was finished. */
void unwind_report(const struct unwinder *u, FILE *f);

/* ---- for the backends ---------------------------------------------------- */

/* An executable object a process maps, whose object file is here, with
 * its load bias. */
struct unwind_object {
	struct dso *dso;
	uint64_t bias;
};

struct unwind_backend_ops {
	const char *name;
	/* A new address space for p at its current code_gen, which maps the
	 * n objects objs (unwind_objects). */
	void *(*space_new)(struct unwinder *u, struct process *p, const struct unwind_object *objs, size_t n);
	void (*space_free)(void *space);
	int (*run)(struct unwinder *u, void *space, const struct unwind_input *in, uint64_t *ips, int max,
		   enum unwind_stop *stop);
};
extern const struct unwind_backend_ops unwind_libdw_ops, unwind_libunwind_ops;
void unwind_libdw_fast_stats(uint64_t *checked, uint64_t *differ);

struct unwinder {
	const struct unwind_backend_ops *ops;
	struct machine *m;
	struct unwind_stats st;
	uint64_t used;		/* dump bytes read by the stack being unwound */
	uint64_t sp;		/* its stack pointer: where its dump starts */
	struct stackdump_rank rank; /* of the dump being unwound */
};

/* The space of a process's address space: its map for an address. */
const struct map *unwind_find_map(struct unwinder *u, int pid, uint64_t addr);
/* A register of the input by DWARF x86-64 number (0-16); 0 when absent. */
int unwind_reg(const struct unwind_input *in, int dwarf_reg, uint64_t *val);
/* Read 8 bytes at addr from the dump, or else from the object file mapped
 * there; 0 or -1. Records how deep into the dump reads went. */
int unwind_read_word(struct unwinder *u, const struct unwind_input *in, uint64_t addr, uint64_t *val);
/* Is addr inside the dump's range but beyond its bytes? (the dump was too small) */
int unwind_beyond_dump(const struct unwind_input *in, uint64_t addr);

#endif
