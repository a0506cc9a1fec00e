/*
 * analyze/stacks/unwind_access.c: a sample as the unwinding backends read
 * it: its registers by DWARF number, its stack dump, and below that the
 * object files mapped where the dump ends.
 */
#include "unwind_backend.h"

#include <string.h>

/* perf_regs numbers (arch/x86/include/uapi/asm/perf_regs.h) of the DWARF
 * x86-64 registers 0-16: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip. */
static const int perf_reg_of_dwarf[17] = { 0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8 };

/* Its inverse: the DWARF number of each perf_regs register, -1 for those
 * DWARF's 0-16 leave out (flags, segments). */
static const signed char dwarf_of_perf_reg[24] = { 0, 3, 2, 1, 4, 5, 6, 7, 16, -1, -1, -1, -1, -1, -1, -1,
						   8, 9, 10, 11, 12, 13, 14, 15 };

unsigned unwind_regs(const struct unwind_input *in, uint64_t regs[17])
{
	unsigned valid = 0;
	int idx = 0;

	if (!in->regs)
		return 0;
	/* The sample holds the registers of its mask in perf_regs order. */
	for (uint64_t m = in->regs_mask; m; m &= m - 1, idx++) {
		int reg = __builtin_ctzll(m), d = reg < 24 ? dwarf_of_perf_reg[reg] : -1;

		if (d >= 0) {
			memcpy(&regs[d], &in->regs[idx], 8);
			valid |= 1u << d;
		}
	}
	return valid;
}

int unwind_reg(const struct unwind_input *in, int dwarf_reg, uint64_t *val)
{
	int reg, idx;

	if (dwarf_reg < 0 || dwarf_reg > 16 || !in->regs)
		return 0;
	reg = perf_reg_of_dwarf[dwarf_reg];
	if (!(in->regs_mask & (1ull << reg)))
		return 0;
	idx = __builtin_popcountll(in->regs_mask & ((1ull << reg) - 1));
	memcpy(val, &in->regs[idx], 8);
	return 1;
}

const struct map *unwind_find_map(struct unwinder *u, int pid, uint64_t addr)
{
	/* A stack's frames and reads run in few maps, one after another. */
	if (u->proc && u->proc->pid == pid)
		return u->hint = process_find_map(u->proc, addr, u->hint);
	return machine_find_map(u->m, pid, addr);
}

int unwind_beyond_dump(const struct unwind_input *in, uint64_t addr)
{
	uint64_t sp;

	/* The dump starts at sp; a read above its end but still near is a
	 * stack frame the dump did not reach. */
	return unwind_reg(in, 7, &sp) && addr >= sp + in->stack.size && addr < sp + (1ull << 26);
}

int unwind_read_other(struct unwinder *u, const struct unwind_input *in, uint64_t addr, uint64_t *val)
{
	const struct map *mp;
	uint64_t sp = u->sp;

	if (addr >= sp && addr - sp + 8 <= in->stack.size) {
		stackdump_read(&in->stack, &u->rank, addr - sp, val, 8);
		if (addr - sp + 8 > u->used)
			u->used = addr - sp + 8;
		return 0;
	}
	/* Code and tables are read from the object file mapped there. */
	mp = unwind_find_map(u, in->pid, addr);
	if (!mp || !mp->dso || addr + 8 > mp->end)
		return -1;
	return symbols_object_read(mp->dso, addr - mp->start + mp->pgoff, val, 8);
}

/* The trampoline's call returns 6 bytes in (sub 4, call 2), or 10 after
 * an endbr64. */
#define PY_TRAMPOLINE_PREFIX "py::"
#define PY_TRAMPOLINE_RET 6
#define PY_TRAMPOLINE_RET_CET 10

int unwind_jit_code(struct unwinder *u, const struct unwind_input *in, uint64_t addr, struct unwind_jit_code *c)
{
	return u->jit_code && u->jit_code(u->jit_arg, in->pid, addr, in->time, c);
}

int unwind_jit_step(struct unwinder *u, const struct unwind_jit_code *c, uint64_t ra)
{
	if (strncmp(c->name, PY_TRAMPOLINE_PREFIX, strlen(PY_TRAMPOLINE_PREFIX)) ||
	    (ra - c->start != PY_TRAMPOLINE_RET && ra - c->start != PY_TRAMPOLINE_RET_CET))
		return 0;
	u->jit_steps++;
	return 1;
}

void unwind_input_with(const struct unwind_input *in, const uint64_t regs[17], unsigned valid, uint64_t buf[17],
		       struct unwind_input *out)
{
	int idx = 0;

	*out = *in;
	out->regs_mask = 0;
	for (int d = 0; d < 17; d++)
		if (valid >> d & 1)
			out->regs_mask |= 1ull << perf_reg_of_dwarf[d];
	/* Packed in mask order, as a sample holds them. */
	for (uint64_t m = out->regs_mask; m; m &= m - 1)
		buf[idx++] = regs[dwarf_of_perf_reg[__builtin_ctzll(m)]];
	out->regs = buf;
}
