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
 * so far and is counted by reason; one that ran past its dump is joined
 * first (see unwind_sample). Knows nothing of events or commands.
 * What a backend implements and may call is in unwind_backend.h.
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
	UNWIND_STOP_JIT,	/* the last frame found is in code a runtime compiled, with no frame pointer to go on */
	UNWIND_STOP_NR,
};
extern const char *const unwind_stop_names[UNWIND_STOP_NR];

/* What one sample brings: registers by perf_regs number, the dump at sp. */
struct unwind_input {
	int pid, tid;
	uint64_t regs_mask;
	const uint64_t *regs;	/* packed in mask bit order */
	struct stackdump stack;
	uint64_t fault_addr;	/* a page fault's address, 0 for other samples */
	uint64_t time;		/* the sample's, for naming code a runtime compiled */
	int feed;		/* a deep-stacks sample: unwound only for others to join from */
};

#define UNWIND_RUNTIMES 4

struct unwind_stats {
	uint64_t stacks;
	uint64_t stopped[UNWIND_STOP_NR];
	uint64_t frames;
	uint64_t max_stack_used; /* deepest dump byte any stack read, +1 */
	uint64_t joined;	/* stacks past their dump completed from their thread's earlier ones */
	uint64_t past_dump;	/* the largest dump a stack ran past the end of */
	uint64_t jit_runtime[UNWIND_RUNTIMES]; /* UNWIND_STOP_JIT by the runtime it was in */
	uint64_t fed;		/* whole feed samples (unwind_input.feed): stacks to join from */
	/* Complete stacks by the dump bytes they needed, in 1 KiB steps
	 * (the last counts 15 KiB and more): what --call-graph dwarf,SIZE
	 * would have been enough. */
	uint64_t need_kib[16];
	/* The cost of scale: address spaces made (one per process and code
	 * generation), objects opened for unwinding (once each, whatever
	 * the number of processes that map them), and address spaces that
	 * needed libdw's whole unwinder and so opened their objects again. */
	uint64_t spaces, objects_opened, spaces_whole;
};

struct unwinder;

/* Returns NULL when out of memory or the backend cannot start. */
/* check: every stack the libdw backend steps with its cached rules is
 * walked by libdw too, and the differences counted. */
struct unwinder *unwind_new(enum unwind_backend b, struct machine *m, int check);
void unwind_free(struct unwinder *u);
/* The function a runtime compiled at some address: its name and start,
 * and the .eh_frame the runtime wrote for it (NULL for none) with the
 * address it was written for. */
struct unwind_jit_code {
	const char *name;
	uint64_t start;
	const unsigned char *eh_frame;
	size_t eh_frame_len;
	uint64_t eh_frame_addr;
};
/* Fills c with the code a runtime compiled at addr in pid at time;
 * returns 0 when there is none. What the unwinder does with it is in
 * unwind_jit_code and unwind_jit_step (unwind_access.c). */
typedef int (*unwind_jit_fn)(void *arg, int pid, uint64_t addr, uint64_t time, struct unwind_jit_code *c);
void unwind_set_jit(struct unwinder *u, unwind_jit_fn fn, void *arg);
/* Parse "libdw" or "libunwind"; -1 for anything else. */
int unwind_backend_parse(const char *name);
const char *unwind_backend_name(enum unwind_backend b);
/*
 * Unwind one sample into ips (innermost first, the first the sampled ip,
 * the others return addresses). Returns the number of frames (0 when
 * nothing could be done) and sets *stop.
 *
 * A stack that ran past its dump is completed, as Android's simpleperf
 * joins call chains, from the last whole stack of the same thread seen
 * before it (samples come in time order): where that one has the
 * truncated stack's two outermost frames, the same return addresses at
 * the same stack addresses, it was the same call below them, and its
 * frames beyond go on. Nothing is made up: a stack whose outer frames
 * no earlier stack of its thread shows stays as it is, counted as having
 * run past its dump. A whole stack, joined or not, is the thread's next
 * to join from; an exec (a new code generation) forgets them.
 *
 * A feed sample (in->feed: the deep-stacks event's, with the largest
 * dump) is kept apart as its thread's deep stack, which only the next
 * feed sample replaces: a shallow stack in between does not push it out.
 * It is tried after the thread's latest. Feed samples are not counted in
 * the statistics, which are of the stacks a view shows.
 */
int unwind_sample(struct unwinder *u, const struct unwind_input *in, uint64_t *ips, int max,
		  enum unwind_stop *stop);
const struct unwind_stats *unwind_stats(const struct unwinder *u);
/* One line for stderr: how many stacks stopped before their outermost
 * frame, by reason (for those that ran past their dump, its size and
 * one that would do better); nothing when every stack was finished. */
void unwind_report(const struct unwinder *u, FILE *f);

#endif
