/*
 * analyze/unwind_libunwind.c: the libunwind unwinding backend
 * (--unwinder libunwind).
 *
 * One remote address space (unw_addr_space_t) per process and code
 * generation, with libunwind's own cache of procedure info. We give it
 * registers from the sample, memory from the dump or from the object file
 * mapped at an address, and each object's .eh_frame_hdr search table.
 * Debian's libunwind does not export its .debug_frame reader
 * (dwarf_find_debug_frame), so this backend reads .eh_frame only; objects
 * with only .debug_frame unwind with the libdw backend.
 */
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <libunwind.h>
#include <stdlib.h>
#include <string.h>

#include "unwind.h"

/* Exported by libunwind but not declared in its headers. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
					     unw_proc_info_t *pi, int need_unwind_info, void *arg);
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)

struct lu_mod {
	struct dso *dso;
	uint64_t bias;
	uint64_t start, end;	 /* runtime range of its segments */
	uint64_t hdr_vaddr;	 /* .eh_frame_hdr, 0 when it has none we can use */
	uint64_t fde_count;
};

struct lu_space {
	unw_addr_space_t as;
	struct unwinder *u;
	struct lu_mod *mods;
	size_t nr_mods;
	const struct unwind_input *in;
	int beyond_dump;
};

/* The standard .eh_frame_hdr: pcrel sdata4 frame pointer, udata4 count,
 * datarel sdata4 table. Other encodings are not searchable tables. */
static void eh_frame_hdr_find(struct lu_mod *m)
{
	Elf *elf = elf_memory((char *)m->dso->obj_bytes, m->dso->obj_size);
	size_t nph;

	if (!elf)
		return;
	if (!elf_getphdrnum(elf, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			unsigned char h[12];

			if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
				continue;
			if (symbols_object_read(m->dso, ph.p_offset, h, sizeof(h)) || h[0] != 1 || h[2] != 0x03 ||
			    h[3] != 0x3b)
				break;
			m->hdr_vaddr = ph.p_vaddr;
			m->fde_count = h[8] | h[9] << 8 | h[10] << 16 | (uint64_t)h[11] << 24;
			break;
		}
	}
	elf_end(elf);
}

static struct lu_mod *mod_of(struct lu_space *sp, uint64_t ip)
{
	for (size_t i = 0; i < sp->nr_mods; i++)
		if (ip >= sp->mods[i].start && ip < sp->mods[i].end)
			return &sp->mods[i];
	return NULL;
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need_unwind_info,
			  void *arg)
{
	struct lu_space *sp = arg;
	struct lu_mod *m = mod_of(sp, ip);
	unw_dyn_info_t di;

	if (!m || !m->hdr_vaddr)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->start;
	di.end_ip = m->end;
	di.u.rti.segbase = m->bias + m->hdr_vaddr;
	di.u.rti.table_data = m->bias + m->hdr_vaddr + 12;
	/* Entries are two 32-bit offsets; the length counts words. */
	di.u.rti.table_len = m->fde_count * 8 / sizeof(unw_word_t);
	return dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as;
	(void)pi;
	(void)arg;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void)as;
	(void)dilap;
	(void)arg;
	return -UNW_ENOINFO;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write, void *arg)
{
	struct lu_space *sp = arg;
	uint64_t v;

	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	if (unwind_read_word(sp->u, sp->in, addr, &v)) {
		sp->beyond_dump |= unwind_beyond_dump(sp->in, addr);
		*valp = 0;
		return -UNW_EUNSPEC;
	}
	*valp = v;
	return 0;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t regnum, unw_word_t *valp, int write, void *arg)
{
	struct lu_space *sp = arg;
	uint64_t v;

	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	/* libunwind's x86-64 numbering is the DWARF one. */
	if (!unwind_reg(sp->in, regnum, &v))
		return -UNW_EBADREG;
	*valp = v;
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t num, unw_fpreg_t *val, int write, void *arg)
{
	(void)as;
	(void)num;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EINVAL;
}

static int resume(unw_addr_space_t as, unw_cursor_t *cu, void *arg)
{
	(void)as;
	(void)cu;
	(void)arg;
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len, unw_word_t *offp,
			 void *arg)
{
	(void)as;
	(void)addr;
	(void)buf;
	(void)len;
	(void)offp;
	(void)arg;
	return -UNW_EINVAL;
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

static void lu_space_free(void *p)
{
	struct lu_space *sp = p;

	if (sp->as)
		unw_destroy_addr_space(sp->as);
	free(sp->mods);
	free(sp);
}

static void *lu_space_new(struct unwinder *u, struct process *p)
{
	struct lu_space *sp = calloc(1, sizeof(*sp));
	struct unwind_object *objs;
	size_t n = 0;

	if (!sp)
		return NULL;
	sp->u = u;
	objs = unwind_objects(p, &n);
	sp->mods = calloc(n ? n : 1, sizeof(*sp->mods));
	sp->as = unw_create_addr_space(&accessors, 0);
	if (!objs || !sp->mods || !sp->as) {
		free(objs);
		lu_space_free(sp);
		return NULL;
	}
	unw_set_caching_policy(sp->as, UNW_CACHE_GLOBAL);
	for (size_t i = 0; i < n; i++) {
		struct lu_mod *m = &sp->mods[sp->nr_mods++];
		const struct dso *d = objs[i].dso;

		m->dso = objs[i].dso;
		m->bias = objs[i].bias;
		m->start = UINT64_MAX;
		for (size_t k = 0; k < d->nr_obj_loads; k++) {
			const struct dso_load *l = &d->obj_loads[k];

			if (m->bias + l->vaddr < m->start)
				m->start = m->bias + l->vaddr;
			if (m->bias + l->vaddr + l->size > m->end)
				m->end = m->bias + l->vaddr + l->size;
		}
		eh_frame_hdr_find(m);
	}
	free(objs);
	return sp;
}

static int lu_run(struct unwinder *u, void *space, const struct unwind_input *in, uint64_t *ips, int max,
		  enum unwind_stop *stop)
{
	struct lu_space *sp = space;
	unw_cursor_t c;
	int n = 0, r;

	sp->in = in;
	sp->beyond_dump = 0;
	*stop = UNWIND_STOP_NONE;
	if (unw_init_remote(&c, sp->as, sp)) {
		*stop = UNWIND_STOP_NO_CFI;
		return 0;
	}
	for (;;) {
		unw_word_t ip;

		if (unw_get_reg(&c, UNW_REG_IP, &ip) || !ip)
			break;
		if (n >= max) {
			*stop = UNWIND_STOP_DEPTH;
			break;
		}
		ips[n++] = ip;
		r = unw_step(&c);
		if (r > 0)
			continue;
		if (r < 0) {
			const struct lu_mod *m = mod_of(sp, ip);

			if (sp->beyond_dump)
				*stop = UNWIND_STOP_STACK_END;
			else if (!m)
				*stop = UNWIND_STOP_NO_OBJECT;
			else {
				*stop = UNWIND_STOP_NO_CFI;
				m->dso->unwind_failed++;
			}
		}
		break;
	}
	/* A read past the dump can also look like the end of the stack. */
	if (*stop == UNWIND_STOP_NONE && sp->beyond_dump)
		*stop = UNWIND_STOP_STACK_END;
	(void)u;
	sp->in = NULL;
	return n;
}

const struct unwind_backend_ops unwind_libunwind_ops = {
	.name = "libunwind",
	.space_new = lu_space_new,
	.space_free = lu_space_free,
	.run = lu_run,
};
