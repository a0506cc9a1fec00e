/*
 * analyze/stacks/unwind_libdw.c: the libdw unwinding backend.
 *
 * One Dwfl per process and code generation: every executable file mapping
 * is reported once, at its load bias, and the Dwfl is attached to a
 * "thread" whose registers and memory are those of the sample being
 * unwound. libdw caches each module's CFI (.eh_frame, then .debug_frame
 * from the debug file found by symbols.c) across samples.
 */
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "../hashmap.h"
#include "unwind_backend.h"

struct dw_space {
	Dwfl *dwfl;
	struct unwinder *u;
	int pid;
	struct hashmap rules;	/* lookup address -> struct dw_rule *, for the fast path */
	struct dw_mod { Dwfl_Module *mod; struct dso *dso; } *mods;
	size_t nr_mods;
	/* The sample being unwound. */
	const struct unwind_input *in;
	uint64_t *ips;
	int n, max;
	int beyond_dump;
};

/* libdw asks for separate debug files (for .debug_frame) without a way to
 * pass our state: the space being unwound is the only one. */
static struct dw_space *current;

/* Does the ELF file at path have a .debug_frame with bytes? */
static int has_debug_frame(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), found;
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);

	found = elf && symbols_elf_section(elf, ".debug_frame");
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return found;
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	(void)userdata;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	for (size_t i = 0; current && i < current->nr_mods; i++) {
		const char *dbg;
		int fd;

		if (current->mods[i].mod != mod)
			continue;
		dbg = symbols_debug_file(current->mods[i].dso);
		/* libdw asks for unwinding only: a debug file without
		 * .debug_frame (Debian's -dbg ones) would be loaded, once per
		 * address space, for nothing. */
		if (!dbg || !strcmp(dbg, current->mods[i].dso->obj_path) || !has_debug_frame(dbg))
			return -1;
		fd = open(dbg, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			*debuginfo_file_name = strdup(dbg);
		return fd;
	}
	return -1;
}

static char *no_debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = find_debuginfo,
	.debuginfo_path = &no_debuginfo_path,
};

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct dw_space *sp = dwfl_arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = sp;
	return sp->in ? sp->in->tid : sp->pid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = dwfl_arg;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct dw_space *sp = dwfl_arg;
	uint64_t v;

	(void)dwfl;
	if (unwind_read_word(sp->u, sp->in, addr, &v)) {
		sp->beyond_dump |= unwind_beyond_dump(sp->in, addr);
		return false;
	}
	*result = v;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct dw_space *sp = thread_arg;
	uint64_t v;

	for (int r = 0; r < 16; r++) {
		Dwarf_Word w;

		if (!unwind_reg(sp->in, r, &v))
			continue;
		w = v;
		if (!dwfl_thread_state_registers(thread, r, 1, &w))
			return false;
	}
	if (!unwind_reg(sp->in, 16, &v))
		return false;
	dwfl_thread_state_register_pc(thread, v);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static void dw_space_free(void *p)
{
	struct dw_space *sp = p;

	if (current == sp)
		current = NULL;
	hashmap_for_each(&sp->rules, slot)
		free(slot->ptr);
	hashmap_release(&sp->rules);
	if (sp->dwfl)
		dwfl_end(sp->dwfl);
	free(sp->mods);
	free(sp);
}

static void *dw_space_new(struct unwinder *u, struct process *p, const struct unwind_object *objs, size_t n)
{
	struct dw_space *sp = calloc(1, sizeof(*sp));

	if (!sp)
		return NULL;
	sp->u = u;
	sp->pid = p->pid;
	hashmap_init(&sp->rules, 0);
	sp->dwfl = dwfl_begin(&callbacks);
	sp->mods = calloc(n ? n : 1, sizeof(*sp->mods));
	if (!sp->dwfl || !sp->mods)
		goto fail;
	dwfl_report_begin(sp->dwfl);
	for (size_t i = 0; i < n; i++) {
		/* With add_p_vaddr the base is the bias itself. */
		Dwfl_Module *mod = dwfl_report_elf(sp->dwfl, objs[i].dso->short_name, objs[i].dso->obj_path, -1,
						   objs[i].bias, true);

		if (mod)
			sp->mods[sp->nr_mods++] = (struct dw_mod){ mod, objs[i].dso };
	}
	dwfl_report_end(sp->dwfl, NULL, NULL);
	if (!sp->nr_mods || !dwfl_attach_state(sp->dwfl, NULL, p->pid, &thread_callbacks, sp))
		goto fail;
	return sp;
fail:
	dw_space_free(sp);
	return NULL;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct dw_space *sp = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (sp->n >= sp->max)
		return DWARF_CB_ABORT;
	sp->ips[sp->n++] = pc;
	return DWARF_CB_OK;
}

/* ---- the fast path ------------------------------------------------------
 *
 * dwfl_getthread_frames builds every frame's whole register state and runs
 * the CFI program from its FDE's start, for every frame of every sample.
 * Almost all x86-64 frames need much less: the CFA is rsp or rbp plus a
 * constant, the return address is saved at the CFA plus a constant, and
 * rbp is kept, saved or lost. Such a rule is taken from libdw once per
 * lookup address and kept; a stack made only of such frames is stepped
 * with rsp, rbp and the pc alone. Anything else (another CFA register, an
 * expression, a signal frame, no CFI, a read outside the dump, the frame
 * limit) hands the whole sample to libdw, so the frames are libdw's own.
 * MEMSIGHT_UNWIND_CHECK=1 unwinds every fast stack the slow way as well
 * and counts those that differ. */

enum { RULE_SLOW, RULE_STEP, RULE_END };
enum { REG_SAME, REG_AT, REG_VAL, REG_UNDEF };

struct dw_rule {
	uint8_t kind;	/* RULE_*: END when the caller's pc is undefined (outermost) */
	uint8_t cfa_reg;	/* DWARF 6 (rbp) or 7 (rsp) */
	uint8_t rbp, rsp;	/* REG_*: how the caller's rbp and rsp are found */
	int64_t cfa_off, ra_off, rbp_off, rsp_off;
};

static uint64_t fast_checked, fast_differ;

/* A register's rule as REG_* and an offset from the CFA; -1 when it is
 * not one of those simple forms. */
static int rule_reg(Dwarf_Frame *f, int regno, uint8_t *how, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t n, i = 1;

	*off = 0;
	if (dwarf_frame_register(f, regno, mem, &ops, &n))
		return -1;
	if (n == 0) {
		if (ops != mem && ops != NULL)
			return -1;
		*how = ops == mem ? REG_UNDEF : REG_SAME;
		return 0;
	}
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return -1;
	if (i < n && ops[i].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[i].number;
		i++;
	} else if (i + 1 < n && ops[i].atom == DW_OP_consts && ops[i + 1].atom == DW_OP_plus) {
		*off = (int64_t)ops[i].number;
		i += 2;
	}
	if (i == n) {
		*how = REG_AT;
		return 0;
	}
	if (i + 1 == n && ops[i].atom == DW_OP_stack_value) {
		*how = REG_VAL;
		return 0;
	}
	return -1;
}

/* libdw's own choice of table: .eh_frame when it covers addr, else
 * .debug_frame. */
static void rule_make(struct dw_space *sp, uint64_t addr, struct dw_rule *r)
{
	Dwfl_Module *mod = dwfl_addrmodule(sp->dwfl, addr);
	Dwarf_Frame *f = NULL;
	Dwarf_CFI *cfi;
	Dwarf_Addr bias;
	Dwarf_Op *ops;
	size_t n;
	bool signal = false;
	uint8_t ra;
	int64_t ra_off;

	r->kind = RULE_SLOW;
	if (!mod)
		return;
	cfi = dwfl_module_eh_cfi(mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &f)) {
		f = NULL;
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &f))
			return;
	}
	if (dwarf_frame_info(f, NULL, NULL, &signal) != 16 || signal)
		goto out;
	if (dwarf_frame_cfa(f, &ops, &n) || n != 1)
		goto out;
	if (ops[0].atom == DW_OP_bregx && ops[0].number < 32) {
		/* libdw's form for "register plus offset" */
		r->cfa_reg = ops[0].number;
		r->cfa_off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		r->cfa_reg = ops[0].atom - DW_OP_breg0;
		r->cfa_off = (int64_t)ops[0].number;
	} else {
		goto out;
	}
	if ((r->cfa_reg != 6 && r->cfa_reg != 7) || rule_reg(f, 16, &ra, &ra_off) ||
	    rule_reg(f, 6, &r->rbp, &r->rbp_off) || rule_reg(f, 7, &r->rsp, &r->rsp_off))
		goto out;
	if (ra == REG_UNDEF)
		r->kind = RULE_END;
	else if (ra == REG_AT && r->rsp != REG_UNDEF)
		r->kind = RULE_STEP;
	r->ra_off = ra_off;
out:
	free(f);
}

static const struct dw_rule *rule_of(struct dw_space *sp, uint64_t addr)
{
	int created;
	struct hm_slot *slot = hashmap_u64(&sp->rules, addr, &created);

	if (!slot)
		return NULL;
	if (created) {
		struct dw_rule *r = calloc(1, sizeof(*r));

		if (r)
			rule_make(sp, addr, r);
		slot->ptr = r;
	}
	return slot->ptr;
}

static int word_at(struct dw_space *sp, uint64_t addr, uint64_t *v)
{
	return unwind_read_word(sp->u, sp->in, addr, v);
}

/* The frames of a stack made only of simple rules, or -1 to hand the
 * sample to libdw. */
static int dw_fast(struct dw_space *sp, const struct unwind_input *in, uint64_t *ips, int max)
{
	uint64_t pc, rsp, rbp = 0;
	int have_rbp, n = 0;

	if (!unwind_reg(in, 16, &pc) || !unwind_reg(in, 7, &rsp))
		return -1;
	have_rbp = unwind_reg(in, 6, &rbp);
	for (;;) {
		const struct dw_rule *r;
		uint64_t cfa, ra, v;

		if (n >= max)
			return -1;
		ips[n++] = pc;
		/* A return address is after its call: look it up one byte back. */
		r = rule_of(sp, n == 1 ? pc : pc - 1);
		if (!r || r->kind == RULE_SLOW)
			return -1;
		if (r->kind == RULE_END)
			return n;
		if (r->cfa_reg == 6 && !have_rbp)
			return -1;
		cfa = (r->cfa_reg == 7 ? rsp : rbp) + r->cfa_off;
		if (word_at(sp, cfa + r->ra_off, &ra) || ra == 0)
			return -1;
		switch (r->rbp) {
		case REG_AT:
			have_rbp = !word_at(sp, cfa + r->rbp_off, &v);
			rbp = v;
			break;
		case REG_VAL:
			rbp = cfa + r->rbp_off;
			have_rbp = 1;
			break;
		case REG_UNDEF:
			have_rbp = 0;
			break;
		}
		switch (r->rsp) {
		case REG_AT:
			if (word_at(sp, cfa + r->rsp_off, &rsp))
				return -1;
			break;
		case REG_VAL:
			rsp = cfa + r->rsp_off;
			break;
		}
		pc = ra;
	}
}

static int dw_slow(struct dw_space *sp, const struct unwind_input *in, uint64_t *ips, int max)
{
	sp->ips = ips;
	sp->n = 0;
	sp->max = max;
	sp->beyond_dump = 0;
	current = sp;
	return dwfl_getthread_frames(sp->dwfl, in->tid, frame_cb, sp);
}

static int dw_run(struct unwinder *u, void *space, const struct unwind_input *in, uint64_t *ips, int max,
		  enum unwind_stop *stop)
{
	struct dw_space *sp = space;
	int r, n, check = u->check;
	sp->in = in;
	/* The fast path's rules ask libdw for .debug_frame too, which may
	 * load the separate debug file; libdw keeps a failure for good. */
	current = sp;
	n = dw_fast(sp, in, ips, max);
	if (n > 0) {
		if (check) {
			uint64_t *slow = malloc(max * sizeof(*slow));

			fast_checked++;
			if (!slow || dw_slow(sp, in, slow, max) != 0 || sp->n != n ||
			    memcmp(slow, ips, n * sizeof(*ips)))
				fast_differ++;
			current = NULL;
			free(slow);
		}
		*stop = UNWIND_STOP_NONE;
		sp->in = NULL;
		current = NULL;
		return n;
	}
	r = dw_slow(sp, in, ips, max);

	current = NULL;
	/* libdw takes a return address it cannot read for the end of the
	 * stack: one past the dump means the dump was too short. */
	if (r == 0 && !sp->beyond_dump) {
		*stop = UNWIND_STOP_NONE;
	} else if (sp->n >= max) {
		*stop = UNWIND_STOP_DEPTH;
	} else if (sp->beyond_dump) {
		*stop = UNWIND_STOP_STACK_END;
	} else {
		/* The frame that could not be stepped from: the last one found,
		 * or the sampled ip itself. */
		uint64_t at = 0;
		const struct map *mp;

		if (sp->n > 0)
			at = sp->ips[sp->n - 1];
		else
			unwind_reg(in, 16, &at);
		mp = unwind_find_map(u, in->pid, at);

		if (!mp || !mp->dso || !symbols_object(mp->dso)) {
			*stop = UNWIND_STOP_NO_OBJECT;
		} else {
			*stop = UNWIND_STOP_NO_CFI;
			mp->dso->unwind_failed++;
		}
	}
	sp->in = NULL;
	return sp->n;
}

const struct unwind_backend_ops unwind_libdw_ops = {
	.name = "libdw",
	.space_new = dw_space_new,
	.space_free = dw_space_free,
	.run = dw_run,
};

/* With MEMSIGHT_UNWIND_CHECK=1: how many fast stacks were walked by libdw
 * as well, and how many of those came out otherwise. */
void unwind_libdw_fast_stats(uint64_t *checked, uint64_t *differ)
{
	*checked = fast_checked;
	*differ = fast_differ;
}
