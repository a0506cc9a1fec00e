/*
 * analyze/unwind_libdw.c: the libdw unwinding backend.
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

#include "unwind.h"

struct dw_space {
	Dwfl *dwfl;
	struct unwinder *u;
	int pid;
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
		if (!dbg || !strcmp(dbg, current->mods[i].dso->obj_path))
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
	if (sp->dwfl)
		dwfl_end(sp->dwfl);
	free(sp->mods);
	free(sp);
}

static void *dw_space_new(struct unwinder *u, struct process *p)
{
	struct dw_space *sp = calloc(1, sizeof(*sp));
	struct unwind_object *objs = NULL;
	size_t n = 0;

	if (!sp)
		return NULL;
	sp->u = u;
	sp->pid = p->pid;
	sp->dwfl = dwfl_begin(&callbacks);
	objs = unwind_objects(p, &n);
	sp->mods = calloc(n ? n : 1, sizeof(*sp->mods));
	if (!sp->dwfl || !objs || !sp->mods)
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
	free(objs);
	return sp;
fail:
	free(objs);
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

static int dw_run(struct unwinder *u, void *space, const struct unwind_input *in, uint64_t *ips, int max,
		  enum unwind_stop *stop)
{
	struct dw_space *sp = space;
	int r;

	sp->in = in;
	sp->ips = ips;
	sp->n = 0;
	sp->max = max;
	sp->beyond_dump = 0;
	current = sp;
	r = dwfl_getthread_frames(sp->dwfl, in->tid, frame_cb, sp);
	current = NULL;
	if (r == 0) {
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
