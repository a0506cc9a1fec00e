/*
 * analyze/stacks/unwind_libdw.c: the libdw unwinding backend.
 *
 * What is known of an object's code is kept once, whatever the number of
 * processes that map it: its own Dwfl, with the object at its ELF
 * addresses (libdw caches the CFI there: .eh_frame, then .debug_frame
 * from the debug file symbols.c found), and the fast path's rules by ELF
 * address. A process holds only its objects and their load biases. Only a
 * stack the fast path cannot step gets a Dwfl of the process's own, made
 * then, with every object at its load bias, attached to a "thread" whose
 * registers and memory are the sample's, for libdw's whole unwinder.
 *
 * Code a runtime compiled is in no object: a jitdump's unwinding record
 * gives its .eh_frame, which libdw reads from an ELF image made in memory
 * around it (one per record, kept with its rules); CPython's perf
 * trampolines, which have none in a perf map, take their known shape
 * (unwind_jit_step).
 */
#include <elf.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "../hashmap.h"
#include "unwind_backend.h"

/* DWARF x86-64 registers: 0-15 the general ones, 16 the return address. */
#define NR_REGS 17
#define REG_RA 16
#define REG_RSP 7
#define REG_RBP 6

#define RECENT_RULES 1024
#define SPACE_RULES 256

/* The backend's state across address spaces: each object's, and each
 * runtime-written .eh_frame's. */
struct dw_priv {
	struct hashmap objs;	/* struct dso * -> struct dw_obj * */
	struct hashmap jits;	/* .eh_frame bytes -> struct dw_jit * */
};

/* A runtime's .eh_frame as libdw reads it: in a small ELF image of its
 * own, the section at the address the runtime wrote it for. */
struct dw_jit {
	unsigned char *image;
	Elf *elf;
	Dwarf_CFI *cfi;
	struct hashmap rules;	/* runtime address -> struct dw_rule *, NULL for none */
};

/* An object's unwinding state, shared by every address space. */
struct dw_obj {
	Dwfl *dwfl;
	Dwfl_Module *mod;	/* the object at its ELF addresses */
	struct hashmap rules;	/* ELF address -> struct dw_rule *, for the fast path */
	/* The rules last looked up, by address: a stack's frames are mostly
	 * the few hot call sites, and this is a load where the map is a hash
	 * and a probe. */
	struct { uint64_t addr; const struct dw_rule *r; } recent[RECENT_RULES];
};

struct dw_space {
	Dwfl *dwfl;		/* libdw's whole unwinder: made when a stack first needs it */
	int dwfl_failed;
	struct unwinder *u;
	int pid;
	struct dw_mod { struct dso *dso; uint64_t bias; struct dw_obj *obj; } *mods;
	size_t nr_mods, last;
	/* The rules last found by runtime address. A space lives for one
	 * set of file mappings, and a rule depends on nothing else: this
	 * skips the mapping's search and the object's table. */
	struct { uint64_t pc; const struct dw_rule *r; } near[SPACE_RULES];
	/* The sample being unwound. */
	const struct unwind_input *in;
	uint64_t *ips, *sps;
	int n, max;
	int beyond_dump;
	int fast_nocfi;		/* the fast path ended where libdw would have failed */
	/* libdw's walk stopped at a frame of code a runtime compiled whose
	 * rule jit_rule knows, whose registers these are: the stack goes on
	 * from there. */
	int jit_at;
	const struct dw_rule *jit_rule;
	uint64_t jit_regs[17];
	unsigned jit_valid;
};

/* Does the ELF file at path have a .debug_frame with bytes? */
static int has_debug_frame(const char *path)
{
	int fd = symbols_file_open(path), found;
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);

	found = elf && symbols_elf_section(elf, ".debug_frame");
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return found;
}

/* libdw asks for a module's separate debug file (for .debug_frame); the
 * module's userdata is its struct dso (report_object). */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	struct dso *d = userdata ? *userdata : NULL;
	const char *dbg;
	int fd;

	(void)mod;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	if (!d)
		return -1;
	dbg = symbols_debug_file(d);
	/* libdw asks for unwinding only: a debug file without .debug_frame
	 * (Debian's -dbg ones) would be loaded for nothing. */
	if (!dbg || !strcmp(dbg, d->obj_path) || !has_debug_frame(dbg))
		return -1;
	fd = symbols_file_open(dbg);
	if (fd >= 0)
		*debuginfo_file_name = strdup(dbg);
	return fd;
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

/* Report d's object file to dwfl at load bias base, with d as the
 * module's userdata for find_debuginfo. */
static Dwfl_Module *report_object(Dwfl *dwfl, struct dso *d, uint64_t base)
{
	int fd = symbols_file_open(d->obj_path);
	/* With add_p_vaddr the base is the bias itself; libdwfl keeps fd
	 * when it takes the module. */
	Dwfl_Module *mod = fd < 0 ? NULL : dwfl_report_elf(dwfl, d->short_name, d->obj_path, fd, base, true);
	void **ud = NULL;

	if (!mod && fd >= 0)
		close(fd);

	if (mod && dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL) && ud)
		*ud = d;
	return mod;
}

static void dw_obj_free(struct dw_obj *o)
{
	if (!o)
		return;
	hashmap_for_each(&o->rules, slot)
		free(slot->ptr);
	hashmap_release(&o->rules);
	if (o->dwfl)
		dwfl_end(o->dwfl);
	free(o);
}

/* d's shared state, made on first use: NULL when out of memory or when
 * libdw cannot read the object. */
static struct dw_priv *dw_priv_of(struct unwinder *u)
{
	struct dw_priv *p = u->priv;

	if (!p && (p = u->priv = calloc(1, sizeof(*p)))) {
		hashmap_init(&p->objs, 0);
		hashmap_init(&p->jits, 0);
	}
	return p;
}

static struct dw_obj *dw_obj_of(struct unwinder *u, struct dso *d)
{
	struct dw_priv *p = dw_priv_of(u);
	struct hm_slot *slot;
	struct dw_obj *o;
	int created;

	if (!p)
		return NULL;
	slot = hashmap_u64(&p->objs, (uintptr_t)d, &created);
	if (!slot || !created)
		return slot ? slot->ptr : NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	hashmap_init(&o->rules, 0);
	o->dwfl = dwfl_begin(&callbacks);
	if (o->dwfl) {
		dwfl_report_begin(o->dwfl);
		o->mod = report_object(o->dwfl, d, 0);
		dwfl_report_end(o->dwfl, NULL, NULL);
	}
	if (!o->mod) {
		dw_obj_free(o);
		return NULL;
	}
	u->st.objects_opened++;
	slot->ptr = o;
	return o;
}

static void dw_jit_free(struct dw_jit *j)
{
	if (!j)
		return;
	hashmap_for_each(&j->rules, slot)
		free(slot->ptr);
	hashmap_release(&j->rules);
	/* The CFI made by dwarf_getcfi_elf is the caller's to end. */
	if (j->cfi)
		dwarf_cfi_end(j->cfi);
	if (j->elf)
		elf_end(j->elf);
	free(j->image);
	free(j);
}

static void dw_release(struct unwinder *u)
{
	struct dw_priv *p = u->priv;

	if (!p)
		return;
	hashmap_for_each(&p->objs, slot)
		dw_obj_free(slot->ptr);
	hashmap_release(&p->objs);
	hashmap_for_each(&p->jits, slot)
		dw_jit_free(slot->ptr);
	hashmap_release(&p->jits);
	free(p);
	u->priv = NULL;
}

static void dw_space_free(void *p)
{
	struct dw_space *sp = p;

	if (sp->dwfl)
		dwfl_end(sp->dwfl);
	free(sp->mods);
	free(sp);
}

static void *dw_space_new(struct unwinder *u, struct process *p, const struct unwind_object *objs, size_t n)
{
	struct dw_space *sp;

	if (!n)
		return NULL;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return NULL;
	sp->u = u;
	sp->pid = p->pid;
	sp->mods = calloc(n, sizeof(*sp->mods));
	if (!sp->mods) {
		free(sp);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		sp->mods[sp->nr_mods++] = (struct dw_mod){ objs[i].dso, objs[i].bias, NULL };
	return sp;
}

/* The process's own Dwfl for libdw's whole unwinder, made on first use:
 * every object at its load bias. */
static Dwfl *space_dwfl(struct dw_space *sp)
{
	size_t reported = 0;

	if (sp->dwfl || sp->dwfl_failed)
		return sp->dwfl;
	sp->dwfl_failed = 1;
	sp->dwfl = dwfl_begin(&callbacks);
	if (!sp->dwfl)
		return NULL;
	sp->u->st.spaces_whole++;
	dwfl_report_begin(sp->dwfl);
	for (size_t i = 0; i < sp->nr_mods; i++)
		reported += report_object(sp->dwfl, sp->mods[i].dso, sp->mods[i].bias) != NULL;
	dwfl_report_end(sp->dwfl, NULL, NULL);
	if (!reported || !dwfl_attach_state(sp->dwfl, NULL, sp->pid, &thread_callbacks, sp)) {
		dwfl_end(sp->dwfl);
		sp->dwfl = NULL;
		return NULL;
	}
	sp->dwfl_failed = 0;
	return sp->dwfl;
}

struct dw_rule;
static const struct dw_rule *jit_rule(struct dw_space *sp, const struct unwind_input *in, uint64_t pc, int n);

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct dw_space *sp = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (sp->n >= sp->max)
		return DWARF_CB_ABORT;
	if (sp->sps) {
		Dwarf_Word v = 0;

		dwfl_frame_reg(state, REG_RSP, &v);
		sp->sps[sp->n] = v;
	}
	sp->ips[sp->n++] = pc;
	/* libdw knows no object here and would take a frame pointer step,
	 * which such a frame may not keep: the frame's registers, to go on
	 * by the runtime's rule without libdw. */
	if (!activation && (sp->jit_rule = jit_rule(sp, sp->in, pc, sp->n))) {
		sp->jit_valid = 0;
		for (int r = 0; r < 17; r++) {
			Dwarf_Word v;

			if (r == REG_RA) {
				sp->jit_regs[r] = pc;
				sp->jit_valid |= 1u << r;
			} else if (!dwfl_frame_reg(state, r, &v)) {
				sp->jit_regs[r] = v;
				sp->jit_valid |= 1u << r;
			}
		}
		sp->jit_at = 1;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

/* ---- the fast path ------------------------------------------------------
 *
 * dwfl_getthread_frames builds every frame's whole register state and runs
 * the CFI program from its FDE's start, for every frame of every sample,
 * and needs a Dwfl of the process's own. Almost all x86-64 frames need
 * much less: the CFA is a register plus a constant (or the PLT's short
 * expression), and each register is kept, saved at the CFA plus a
 * constant, the CFA plus a constant, or lost. Such a rule is taken from
 * libdw once per object and ELF address and kept; a stack made only of
 * such frames is stepped here, register by register. Anything else (a
 * register rule that is an expression, a signal frame, no CFI, a read
 * outside the dump, the frame limit) hands the whole sample to libdw, so
 * the frames are libdw's own. MEMSIGHT_UNWIND_CHECK=1 unwinds every fast
 * stack the slow way as well and counts those that differ. */

/* RULE_FP: no table covers the address; libdw then tries the frame
 * pointer chain (its x86-64 backend's unwind hook), and so does the fast
 * path where every version of that hook agrees. */
enum { RULE_SLOW, RULE_STEP, RULE_END, RULE_FP };
enum { REG_SAME, REG_AT, REG_VAL, REG_UNDEF };
/* A CFA expression longer than this goes to libdw. */
#define EXPR_MAX 12

/* How one of the caller's registers is found when not REG_SAME. */
struct dw_reg_rule {
	uint8_t reg, how;	/* REG_AT, REG_VAL or REG_UNDEF */
	int64_t off;		/* from the CFA */
};

/* Only the registers a frame changes are listed (a frame saves few); the
 * rest the caller has as the frame has them. Allocated to its size. */
struct dw_rule {
	uint8_t kind;		/* RULE_*: END when the caller's pc is undefined (outermost) */
	uint8_t cfa_reg;	/* the CFA is this register plus cfa_off, or with nr_expr the expression */
	uint8_t nr_expr;
	uint8_t nr_regs;	/* in regs */
	uint32_t same;		/* bits of the registers that are REG_SAME */
	int64_t cfa_off;
	struct { uint8_t atom; uint64_t number; } *expr; /* nr_expr of them, after regs */
	struct dw_reg_rule regs[];
};

static uint64_t fast_checked, fast_differ, fast_further;

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

/* Is op one the expression evaluator below knows? */
static int expr_known(uint8_t atom)
{
	switch (atom) {
	case DW_OP_breg0 ... DW_OP_breg16:
	case DW_OP_lit0 ... DW_OP_lit31:
	case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
	case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
	case DW_OP_constu: case DW_OP_consts: case DW_OP_plus_uconst:
	case DW_OP_and: case DW_OP_or: case DW_OP_xor: case DW_OP_plus: case DW_OP_minus:
	case DW_OP_shl: case DW_OP_shr: case DW_OP_ge: case DW_OP_gt: case DW_OP_le: case DW_OP_lt:
	case DW_OP_eq: case DW_OP_ne:
		return 1;
	}
	return 0;
}

/* The rule's CFA from the frame's registers; 0, or -1 when a register it
 * needs is not known. */
static int rule_cfa(const struct dw_rule *r, const uint64_t *regs, unsigned valid, uint64_t *cfa)
{
	uint64_t st[EXPR_MAX];
	int top = 0;

	if (!r->nr_expr) {
		if (!(valid >> r->cfa_reg & 1))
			return -1;
		*cfa = regs[r->cfa_reg] + (uint64_t)r->cfa_off;
		return 0;
	}
	for (int i = 0; i < r->nr_expr; i++) {
		uint8_t a = r->expr[i].atom;
		uint64_t v = r->expr[i].number, x, y;

		if (a >= DW_OP_breg0 && a <= DW_OP_breg16) {
			if (!(valid >> (a - DW_OP_breg0) & 1))
				return -1;
			st[top++] = regs[a - DW_OP_breg0] + v;
		} else if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
			st[top++] = a - DW_OP_lit0;
		} else if (a == DW_OP_plus_uconst) {
			if (top < 1)
				return -1;
			st[top - 1] += v;
		} else if (a < DW_OP_and || (a >= DW_OP_const1u && a <= DW_OP_consts)) {
			st[top++] = v; /* the constants: libdw has decoded them */
		} else {
			if (top < 2)
				return -1;
			y = st[--top];
			x = st[top - 1];
			switch (a) {
			case DW_OP_and: x &= y; break;
			case DW_OP_or: x |= y; break;
			case DW_OP_xor: x ^= y; break;
			case DW_OP_plus: x += y; break;
			case DW_OP_minus: x -= y; break;
			case DW_OP_shl: x = y < 64 ? x << y : 0; break;
			case DW_OP_shr: x = y < 64 ? x >> y : 0; break;
			case DW_OP_ge: x = (int64_t)x >= (int64_t)y; break;
			case DW_OP_gt: x = (int64_t)x > (int64_t)y; break;
			case DW_OP_le: x = (int64_t)x <= (int64_t)y; break;
			case DW_OP_lt: x = (int64_t)x < (int64_t)y; break;
			case DW_OP_eq: x = x == y; break;
			case DW_OP_ne: x = x != y; break;
			default: return -1;
			}
			st[top - 1] = x;
		}
		if (top >= EXPR_MAX)
			return -1;
	}
	if (top != 1)
		return -1;
	*cfa = st[0];
	return 0;
}

/* The CFA rule of f into r: a register plus an offset, or a short
 * expression; -1 for anything else. */
static int rule_make_cfa(Dwarf_Frame *f, struct dw_rule *r)
{
	Dwarf_Op *ops;
	size_t n;

	if (dwarf_frame_cfa(f, &ops, &n) || !n)
		return -1;
	if (n == 1 && ops[0].atom == DW_OP_bregx && ops[0].number < NR_REGS) {
		/* libdw's form for "register plus offset" */
		r->cfa_reg = ops[0].number;
		r->cfa_off = (int64_t)ops[0].number2;
		return 0;
	}
	if (n == 1 && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg16) {
		r->cfa_reg = ops[0].atom - DW_OP_breg0;
		r->cfa_off = (int64_t)ops[0].number;
		return 0;
	}
	if (n > EXPR_MAX)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!expr_known(ops[i].atom))
			return -1;
		r->expr[i].atom = ops[i].atom;
		r->expr[i].number = ops[i].number;
	}
	r->nr_expr = (uint8_t)n;
	return 0;
}

/* The fast path's rule for libdw's frame f (NULL: no table covers the
 * address, RULE_FP). NULL when out of memory. */
static struct dw_rule *rule_build(Dwarf_Frame *f)
{
	union {
		struct dw_rule r;
		unsigned char bytes[sizeof(struct dw_rule) + NR_REGS * sizeof(struct dw_reg_rule)];
	} full;
	struct { uint8_t atom; uint64_t number; } expr[EXPR_MAX];
	struct dw_rule *r = &full.r, *made;
	bool signal = false;
	size_t regs_len;

	memset(&full, 0, sizeof(full));
	r->kind = RULE_FP;
	r->expr = (void *)expr;
	if (!f)
		goto made;
	r->kind = RULE_SLOW;
	if (dwarf_frame_info(f, NULL, NULL, &signal) != REG_RA || signal || rule_make_cfa(f, r))
		goto made;
	for (int reg = 0; reg < NR_REGS; reg++) {
		struct dw_reg_rule *rr = &r->regs[r->nr_regs];

		if (rule_reg(f, reg, &rr->how, &rr->off)) {
			r->nr_regs = 0;
			goto made;
		}
		if (rr->how == REG_SAME) {
			r->same |= 1u << reg;
			continue;
		}
		rr->reg = (uint8_t)reg;
		r->nr_regs++;
		if (reg == REG_RA)
			r->kind = rr->how == REG_UNDEF ? RULE_END : rr->how == REG_AT ? RULE_STEP : RULE_SLOW;
	}
	/* What a return address left as it is means, libdw decides. */
	if (r->same >> REG_RA & 1)
		r->kind = RULE_SLOW;
made:
	regs_len = r->nr_regs * sizeof(r->regs[0]);
	made = malloc(sizeof(*r) + regs_len + r->nr_expr * sizeof(expr[0]));
	if (!made)
		return NULL;
	memcpy(made, r, sizeof(*r) + regs_len);
	made->expr = (void *)((char *)made->regs + regs_len);
	memcpy(made->expr, expr, r->nr_expr * sizeof(expr[0]));
	return made;
}

/* The rule at ELF address addr of o, in libdw's own choice of table:
 * .eh_frame when it covers addr, else .debug_frame. NULL when out of
 * memory. */
static struct dw_rule *rule_make(struct dw_obj *o, uint64_t addr)
{
	Dwarf_Frame *f = NULL;
	Dwarf_CFI *cfi;
	Dwarf_Addr bias;
	struct dw_rule *r;

	cfi = dwfl_module_eh_cfi(o->mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &f)) {
		f = NULL;
		cfi = dwfl_module_dwarf_cfi(o->mod, &bias);
		if (cfi && dwarf_cfi_addrframe(cfi, addr - bias, &f))
			f = NULL;
	}
	r = rule_build(f);
	free(f);
	return r;
}

/* An ELF image of one section, .eh_frame, holding len bytes of eh at
 * address addr, for libdw to read as an object's CFI. */
static unsigned char *jit_image(const unsigned char *eh, size_t len, uint64_t addr, size_t *size)
{
	static const char names[] = "\0.eh_frame\0.shstrtab";
	size_t data = sizeof(Elf64_Ehdr), strs = data + len, shoff = (strs + sizeof(names) + 7) & ~(size_t)7;
	unsigned char *img = calloc(1, shoff + 3 * sizeof(Elf64_Shdr));
	Elf64_Ehdr eh_hdr = { .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			      .e_shoff = shoff, .e_ehsize = sizeof(Elf64_Ehdr), .e_shentsize = sizeof(Elf64_Shdr),
			      .e_shnum = 3, .e_shstrndx = 2 };
	Elf64_Shdr sh[3] = {
		{ 0 },
		{ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC, .sh_addr = addr, .sh_offset = data,
		  .sh_size = len, .sh_addralign = 8 },
		{ .sh_name = 11, .sh_type = SHT_STRTAB, .sh_offset = strs, .sh_size = sizeof(names), .sh_addralign = 1 },
	};

	if (!img)
		return NULL;
	memcpy(eh_hdr.e_ident, ELFMAG, SELFMAG);
	eh_hdr.e_ident[EI_CLASS] = ELFCLASS64;
	eh_hdr.e_ident[EI_DATA] = ELFDATA2LSB;
	eh_hdr.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(img, &eh_hdr, sizeof(eh_hdr));
	memcpy(img + data, eh, len);
	memcpy(img + strs, names, sizeof(names));
	memcpy(img + shoff, sh, sizeof(sh));
	*size = shoff + sizeof(sh);
	return img;
}

/* The libdw view of a runtime's .eh_frame, made on first use; NULL when
 * libdw cannot read it (or out of memory). */
static struct dw_jit *dw_jit_of(struct unwinder *u, const struct unwind_jit_code *c)
{
	struct dw_priv *p = dw_priv_of(u);
	struct hm_slot *slot;
	struct dw_jit *j;
	size_t size;
	int created;

	if (!p || !(slot = hashmap_u64(&p->jits, (uintptr_t)c->eh_frame, &created)))
		return NULL;
	if (!created)
		return slot->ptr;
	if (!(j = calloc(1, sizeof(*j))))
		return NULL;
	hashmap_init(&j->rules, 0);
	if ((j->image = jit_image(c->eh_frame, c->eh_frame_len, c->eh_frame_addr, &size)) &&
	    (j->elf = elf_memory((char *)j->image, size)))
		j->cfi = dwarf_getcfi_elf(j->elf);
	if (!j->cfi) {
		dw_jit_free(j);
		return NULL;
	}
	slot->ptr = j;
	return j;
}

/* The rule for runtime address addr of JIT code c from the runtime's own
 * .eh_frame: NULL where it has none, or none the fast path can step. */
static const struct dw_rule *jit_cfi_rule(struct unwinder *u, const struct unwind_jit_code *c, uint64_t addr)
{
	struct dw_jit *j = c->eh_frame ? dw_jit_of(u, c) : NULL;
	struct hm_slot *slot;
	const struct dw_rule *r;
	int created;

	if (!j || !(slot = hashmap_u64(&j->rules, addr, &created)))
		return NULL;
	if (created) {
		Dwarf_Frame *f = NULL;

		slot->ptr = dwarf_cfi_addrframe(j->cfi, addr, &f) ? NULL : rule_build(f);
		free(f);
	}
	r = slot->ptr;
	/* What libdw's own walk would need the object for is not stepped. */
	return r && (r->kind == RULE_STEP || r->kind == RULE_END) ? r : NULL;
}

/* The object of the space that maps runtime address addr, or NULL. */
static struct dw_mod *mod_of(struct dw_space *sp, uint64_t addr)
{
	const struct map *mp = unwind_find_map(sp->u, sp->in->pid, addr);

	if (!mp || !mp->dso)
		return NULL;
	if (sp->last < sp->nr_mods && sp->mods[sp->last].dso == mp->dso)
		return &sp->mods[sp->last];
	for (size_t i = 0; i < sp->nr_mods; i++)
		if (sp->mods[i].dso == mp->dso) {
			sp->last = i;
			return &sp->mods[i];
		}
	return NULL;
}

/* An address in no object libdw could read: libdw finds no module there
 * and takes its frame-pointer step, as where no table covers an address. */
static const struct dw_rule no_object_rule = { .kind = RULE_FP };

static const struct dw_rule *object_rule_of(struct dw_space *sp, uint64_t addr)
{
	struct dw_mod *m = mod_of(sp, addr);
	struct hm_slot *slot;
	int created;
	uint64_t at;
	__typeof__(m->obj->recent[0]) *hit;

	if (!m)
		return &no_object_rule;
	if (!m->obj)
		m->obj = dw_obj_of(sp->u, m->dso);
	if (!m->obj)
		return &no_object_rule;
	at = addr - m->bias;
	hit = &m->obj->recent[(at ^ at >> 10) % RECENT_RULES];
	if (hit->r && hit->addr == at)
		return hit->r;
	slot = hashmap_u64(&m->obj->rules, at, &created);
	if (!slot)
		return NULL;
	if (created)
		slot->ptr = rule_make(m->obj, at);
	hit->addr = at;
	hit->r = slot->ptr;
	return slot->ptr;
}

static const struct dw_rule *rule_of(struct dw_space *sp, uint64_t addr)
{
	__typeof__(sp->near[0]) *hit = &sp->near[(addr ^ addr >> 8) % SPACE_RULES];

	if (hit->r && hit->pc == addr)
		return hit->r;
	hit->r = object_rule_of(sp, addr);
	hit->pc = addr;
	return hit->r;
}

/* The rule of frame n (1: the sampled ip) at pc in code a runtime
 * compiled: from the runtime's own .eh_frame where it wrote one, else the
 * shape of CPython's trampolines (unwind_jit_step); NULL for neither. */
static const struct dw_rule *jit_step_rule(void);
static const struct dw_rule *jit_rule(struct dw_space *sp, const struct unwind_input *in, uint64_t pc, int n)
{
	uint64_t at = n == 1 ? pc : pc - 1;
	struct unwind_jit_code c;
	const struct dw_rule *r;

	if (!unwind_jit_code(sp->u, in, at, &c))
		return NULL;
	if (c.eh_frame && (r = jit_cfi_rule(sp->u, &c, at))) {
		sp->u->jit_cfi_steps++;
		return r;
	}
	if (n > 1 && unwind_jit_step(sp->u, &c, pc))
		return jit_step_rule();
	return NULL;
}

/* The frame unwind_jit_step knows: the caller's return address 8 bytes
 * above the stack pointer, its stack pointer 16 above, every other
 * register kept. */
static const struct dw_rule *jit_step_rule(void)
{
	static union {
		struct dw_rule r;
		unsigned char bytes[sizeof(struct dw_rule) + 2 * sizeof(struct dw_reg_rule)];
	} t;

	if (t.r.kind != RULE_STEP) {
		t.r.cfa_reg = REG_RSP;
		t.r.cfa_off = 16;
		t.r.nr_regs = 2;
		t.r.same = ((1u << NR_REGS) - 1) & ~(1u << REG_RA | 1u << REG_RSP);
		t.r.regs[0] = (struct dw_reg_rule){ REG_RA, REG_AT, -8 };
		t.r.regs[1] = (struct dw_reg_rule){ REG_RSP, REG_VAL, 0 };
		t.r.kind = RULE_STEP;
	}
	return &t.r;
}

/* A word of the sample's memory; a read past the dump's bytes is noted,
 * as libdw's memory callback notes it. */
static int word_at(struct dw_space *sp, uint64_t addr, uint64_t *v)
{
	if (!unwind_read_word(sp->u, sp->in, addr, v))
		return 0;
	sp->beyond_dump |= unwind_beyond_dump(sp->in, addr);
	return -1;
}

/* Step the registers of the frame at pc (valid: those known) to its
 * caller's by r, a RULE_STEP or RULE_END. Returns 0 with regs[REG_RA] the
 * caller's pc, 1 where the stack ends (the outermost frame, or a return
 * address that cannot be read: libdw's next pc is undefined then), -1
 * where the fast path cannot go on. */
static int rule_step(struct dw_space *sp, const struct dw_rule *r, uint64_t regs[NR_REGS], unsigned *valid,
		     uint64_t pc)
{
	uint64_t cfa;

	if (r->kind == RULE_END)
		return 1;
	/* The PLT's expression reads the pc as register 16. */
	regs[REG_RA] = pc;
	*valid |= 1u << REG_RA;
	if (rule_cfa(r, regs, *valid, &cfa))
		return -1;
	/* Every new value comes from the CFA and memory, none from another
	 * register: the frame's registers become the caller's in place. */
	*valid &= r->same;
	for (int i = 0; i < r->nr_regs; i++) {
		const struct dw_reg_rule *rr = &r->regs[i];

		if (rr->how == REG_VAL) {
			regs[rr->reg] = cfa + (uint64_t)rr->off;
			*valid |= 1u << rr->reg;
		} else if (rr->how == REG_AT) {
			if (!word_at(sp, cfa + (uint64_t)rr->off, &regs[rr->reg]))
				*valid |= 1u << rr->reg;
			else if (rr->reg == REG_RSP)
				return -1;
		}
	}
	if (!(*valid >> REG_RA & 1))
		return 1;
	return regs[REG_RA] ? 0 : -1;
}

/* The frames of a stack made only of simple rules, or -1 to hand the
 * sample to libdw. */
static int dw_fast(struct dw_space *sp, const struct unwind_input *in, uint64_t *ips, uint64_t *sps, int max)
{
	uint64_t regs[NR_REGS], pc;
	unsigned valid = unwind_regs(in, regs);
	int n = 0;

	if (!(valid >> REG_RA & 1) || !(valid >> REG_RSP & 1))
		return -1;
	pc = regs[REG_RA];
	for (;;) {
		const struct dw_rule *r, *jr;
		int st;

		if (n >= max)
			return -1;
		sps[n] = regs[REG_RSP];
		ips[n++] = pc;
		/* A return address is after its call: look it up one byte back. */
		r = rule_of(sp, n == 1 ? pc : pc - 1);
		if (r == &no_object_rule && (jr = jit_rule(sp, in, pc, n)))
			r = jr;
		if (!r || r->kind == RULE_SLOW)
			return -1;
		if (r->kind == RULE_END)
			return n;
		if (r->kind == RULE_FP) {
			uint64_t fp = regs[REG_RBP], prev, ra;

			/* libdw's hook gives up without a frame pointer, on a
			 * zero one, or where the return address above it cannot
			 * be read: the stack ends there, unfinished. Where its
			 * versions differ (the saved frame pointer unreadable, a
			 * stack pointer above the frame) libdw decides. */
			if (!(valid >> REG_RBP & 1) || fp == 0 || word_at(sp, fp + 8, &ra)) {
				sp->fast_nocfi = 1;
				return n;
			}
			if (word_at(sp, fp, &prev) || regs[REG_RSP] >= fp + 16 || !ra)
				return -1;
			regs[REG_RBP] = prev;
			regs[REG_RSP] = fp + 16;
			valid = 1u << REG_RBP | 1u << REG_RSP;
			pc = ra;
			continue;
		}
		st = rule_step(sp, r, regs, &valid, pc);
		if (st)
			return st > 0 ? n : -1;
		pc = regs[REG_RA];
	}
}

static int dw_slow(struct dw_space *sp, const struct unwind_input *in, uint64_t *ips, uint64_t *sps, int max)
{
	sp->jit_at = 0;
	sp->ips = ips;
	sp->sps = sps;
	sp->n = 0;
	sp->max = max;
	sp->beyond_dump = 0;
	if (!space_dwfl(sp))
		return -1;
	return dwfl_getthread_frames(sp->dwfl, in->tid, frame_cb, sp);
}

/* Why a stack of n frames ended without its outermost frame: past the
 * dump, at the frame limit, or at a frame with no object or no CFI. */
static enum unwind_stop stop_of(struct dw_space *sp, const struct unwind_input *in, const uint64_t *ips, int n,
				int max)
{
	uint64_t at = 0;
	const struct map *mp;

	if (n >= max)
		return UNWIND_STOP_DEPTH;
	if (sp->beyond_dump)
		return UNWIND_STOP_STACK_END;
	/* The frame that could not be stepped from: the last one found, or
	 * the sampled ip itself. */
	if (n > 0)
		at = ips[n - 1];
	else
		unwind_reg(in, 16, &at);
	mp = unwind_find_map(sp->u, in->pid, at);
	if (!mp || !mp->dso || !symbols_object(mp->dso))
		return UNWIND_STOP_NO_OBJECT;
	mp->dso->unwind_failed++;
	return UNWIND_STOP_NO_CFI;
}

static int dw_jit_on(struct unwinder *u, struct dw_space *sp, const struct unwind_input *in, uint64_t *ips,
		     uint64_t *sps, int max, enum unwind_stop *stop);

static int dw_run(struct unwinder *u, void *space, const struct unwind_input *in, uint64_t *ips, uint64_t *sps,
		  int max, enum unwind_stop *stop)
{
	struct dw_space *sp = space;
	int r, n, check = u->check;

	sp->in = in;
	sp->fast_nocfi = 0;
	sp->beyond_dump = 0;
	n = dw_fast(sp, in, ips, sps, max);
	if (n > 0) {
		int beyond = sp->beyond_dump;

		if (check) {
			uint64_t *slow = malloc(max * sizeof(*slow));
			int fast_nocfi = sp->fast_nocfi;

			fast_checked++;
			r = slow ? dw_slow(sp, in, slow, NULL, max) : -1;
			/* libdw ends a stack at a PLT entry, as if it were the
			 * outermost frame: it cannot read the pc as register 16,
			 * which the PLT's CFA expression needs. */
			if (slow && r == 0 && sp->n < n && !memcmp(slow, ips, sp->n * sizeof(*ips)))
				fast_further++;
			else if (!slow || (r != 0) != fast_nocfi || sp->n != n || memcmp(slow, ips, n * sizeof(*ips)))
				fast_differ++;
			else if (!fast_nocfi && beyond != sp->beyond_dump)
				fast_differ++;
			sp->fast_nocfi = fast_nocfi;
			sp->beyond_dump = beyond;
			free(slow);
		}
		if (sp->fast_nocfi)
			*stop = stop_of(sp, in, ips, n, max);
		else
			*stop = beyond ? UNWIND_STOP_STACK_END : UNWIND_STOP_NONE;
		sp->in = NULL;
		return n;
	}
	r = dw_slow(sp, in, ips, sps, max);
	if (sp->jit_at)
		return dw_jit_on(u, sp, in, ips, sps, max, stop);
	/* libdw takes a return address it cannot read for the end of the
	 * stack: one past the dump means the dump was too short. */
	*stop = r == 0 && !sp->beyond_dump ? UNWIND_STOP_NONE : stop_of(sp, in, ips, sp->n, max);
	sp->in = NULL;
	return sp->n;
}

/* libdw's walk stopped at a frame of code a runtime compiled (the last
 * of its sp->n): step it by its rule, and unwind on from its caller as
 * from a sample of its own over the same dump. */
static int dw_jit_on(struct unwinder *u, struct dw_space *sp, const struct unwind_input *in, uint64_t *ips,
		     uint64_t *sps, int max, enum unwind_stop *stop)
{
	uint64_t regs[17], buf[17];
	unsigned valid = sp->jit_valid;
	struct unwind_input next;
	int n = sp->n, more, st;

	memcpy(regs, sp->jit_regs, sizeof(regs));
	sp->in = in;
	st = rule_step(sp, sp->jit_rule, regs, &valid, regs[REG_RA]);
	if (st) {
		*stop = sp->jit_rule->kind == RULE_END ? UNWIND_STOP_NONE
			: sp->beyond_dump		   ? UNWIND_STOP_STACK_END
							   : UNWIND_STOP_JIT;
		sp->in = NULL;
		return n;
	}
	unwind_input_with(in, regs, valid, buf, &next);
	if (n >= max) {
		*stop = UNWIND_STOP_DEPTH;
		sp->in = NULL;
		return n;
	}
	more = dw_run(u, sp, &next, ips + n, sps ? sps + n : NULL, max - n, stop);
	return n + more;
}

const struct unwind_backend_ops unwind_libdw_ops = {
	.name = "libdw",
	.space_new = dw_space_new,
	.space_free = dw_space_free,
	.run = dw_run,
	.release = dw_release,
};

/* With MEMSIGHT_UNWIND_CHECK=1: how many fast stacks were walked by libdw
 * as well, how many of those came out otherwise, and how many went on
 * where libdw's ended at a PLT entry. */
void unwind_libdw_fast_stats(uint64_t *checked, uint64_t *differ, uint64_t *further)
{
	*checked = fast_checked;
	*differ = fast_differ;
	*further = fast_further;
}
