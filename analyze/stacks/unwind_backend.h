/*
 * analyze/stacks/unwind_backend.h: what an unwinding backend implements
 * (struct unwind_backend_ops) and what it may use: the unwinder's state and
 * the access to a sample's registers, its stack dump and the objects mapped
 * (unwind_access.c). unwind.c picks a backend and calls it; the backends
 * call only unwind_access.c, never unwind.c.
 */
#ifndef MEMSIGHT_UNWIND_BACKEND_H
#define MEMSIGHT_UNWIND_BACKEND_H

#include "../hashmap.h"
#include "unwind.h"

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
	/* Unwind into ips, and the stack pointer each frame had into sps
	 * (the sampled one for the first, then each frame's CFA): as
	 * unwind_sample, without the joining. */
	int (*run)(struct unwinder *u, void *space, const struct unwind_input *in, uint64_t *ips, uint64_t *sps,
		   int max, enum unwind_stop *stop);
	/* What the backend keeps across address spaces (u->priv), freed
	 * with the unwinder; NULL when it keeps nothing. */
	void (*release)(struct unwinder *u);
};
extern const struct unwind_backend_ops unwind_libdw_ops, unwind_libunwind_ops;
void unwind_libdw_fast_stats(uint64_t *checked, uint64_t *differ, uint64_t *further);

struct unwinder {
	const struct unwind_backend_ops *ops;
	struct machine *m;
	int check;		/* see unwind_new */
	struct unwind_stats st;
	uint64_t used;		/* dump bytes read by the stack being unwound */
	uint64_t sp;		/* its stack pointer: where its dump starts */
	struct stackdump_rank rank; /* of the dump being unwound */
	const struct process *proc; /* its process, while it is unwound */
	const struct map *hint;	/* the map its last lookup found */
	void *priv;		/* the backend's state shared by every space */
	uint64_t *sps;		/* the stack pointers of the frames being unwound */
	int sps_max;
	struct hashmap chains;	/* (pid, tid) -> struct unwind_chain: each thread's last whole stack */
	struct hashmap deep;	/* the same, of feed samples alone */
	unwind_jit_fn jit_code;
	void *jit_arg;
	uint64_t jit_steps;	/* frames stepped by unwind_jit_step */
	uint64_t jit_cfi_steps;	/* frames stepped by a runtime's own .eh_frame */
};

/* The space of a process's address space: its map for an address. */
const struct map *unwind_find_map(struct unwinder *u, int pid, uint64_t addr);
/* A register of the input by DWARF x86-64 number (0-16); 0 when absent. */
int unwind_reg(const struct unwind_input *in, int dwarf_reg, uint64_t *val);
/* All of DWARF's registers 0-16 the sample holds, into regs; returns the
 * bits of those it held. */
unsigned unwind_regs(const struct unwind_input *in, uint64_t regs[17]);
/* unwind_read_word where addr is not an aligned word of the dump. */
int unwind_read_other(struct unwinder *u, const struct unwind_input *in, uint64_t addr, uint64_t *val);

/* Return address ra lies in c, code a runtime compiled (unwind_jit_code),
 * with a frame of a shape known here: CPython's perf trampoline (Python/asm_trampoline.S,
 * `-X perf` and `-X perf_jit`), `sub $8,%rsp; call *%rcx; add $8,%rsp;
 * ret`, with an endbr64 before it in CET builds. It keeps no frame
 * pointer and no unwind entry; after its call the caller's return
 * address is 8 bytes above the stack pointer and the caller's stack
 * pointer 16 above, every other register as it was. Returns 1 for such a
 * frame, 0 for any other. */
int unwind_jit_step(struct unwinder *u, const struct unwind_jit_code *c, uint64_t ra);
/* The code a runtime compiled at addr at the input's time, into c; 0 when
 * none is known there. */
int unwind_jit_code(struct unwinder *u, const struct unwind_input *in, uint64_t addr, struct unwind_jit_code *c);
/* in with the registers of valid (DWARF numbers) in place of its own,
 * packed into buf: a frame further out to unwind on from. */
void unwind_input_with(const struct unwind_input *in, const uint64_t regs[17], unsigned valid, uint64_t buf[17],
		       struct unwind_input *out);

/* Read 8 bytes at addr from the dump, or else from the object file mapped
 * there; 0 or -1. Records how deep into the dump reads went. Inline: an
 * unwinder reads a word of the dump at nearly every step. */
static inline int unwind_read_word(struct unwinder *u, const struct unwind_input *in, uint64_t addr,
				   uint64_t *val)
{
	uint64_t off = addr - u->sp;

	/* A sample without sp has no dump (unwind_sample stops first). */
	if (addr < u->sp || off % 8 || in->stack.size < 8 || off > in->stack.size - 8)
		return unwind_read_other(u, in, addr, val);
	*val = stackdump_word(&in->stack, &u->rank, off / 8);
	if (off + 8 > u->used)
		u->used = off + 8;
	return 0;
}
/* Is addr inside the dump's range but beyond its bytes? (the dump was too small) */
int unwind_beyond_dump(const struct unwind_input *in, uint64_t addr);

#endif
