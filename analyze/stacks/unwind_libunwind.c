/*
 * analyze/stacks/unwind_libunwind.c: the libunwind unwinding backend
 * (--unwinder libunwind).
 *
 * One remote address space (unw_addr_space_t) per process and code
 * generation, with libunwind's own cache of procedure info. We give it
 * registers from the sample, memory from the dump or from the object file
 * mapped at an address, and each object's .eh_frame_hdr search table.
 *
 * Code with no .eh_frame entry (built without unwind tables) has its CFI
 * in .debug_frame, of the object or of its separate debug file. Debian's
 * libunwind is built without its .debug_frame reader, and reads remote
 * tables only in the .eh_frame layout. So an object's .debug_frame, when
 * first needed, is rewritten into that layout (read by libdw's
 * dwarf_next_cfi), with a search table like .eh_frame_hdr's, and served to
 * libunwind at unmapped addresses near the object.
 */
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libunwind.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unwind_backend.h"

/* Exported by libunwind but not declared in its headers. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
					     unw_proc_info_t *pi, int need_unwind_info, void *arg);
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)

/* An object's .debug_frame in the .eh_frame layout: the search table
 * (pairs of 32-bit offsets from base: start address, entry), then the
 * CIEs and FDEs, FDE start addresses absolute at the object's bias. */
struct lu_synth {
	uint64_t base;		 /* where access_mem serves bytes */
	unsigned char *bytes;
	size_t size;
	uint64_t count;		 /* table entries */
};

struct lu_mod {
	struct dso *dso;
	uint64_t bias;
	uint64_t start, end;	 /* runtime range of its segments */
	uint64_t hdr_vaddr;	 /* .eh_frame_hdr, 0 when it has none we can use */
	uint64_t fde_count;
	int synth_tried;
	struct lu_synth *synth;	 /* its .debug_frame, once needed; NULL when none */
};

struct lu_space {
	unw_addr_space_t as;
	struct unwinder *u;
	const struct process *proc;
	struct lu_mod *mods;
	size_t nr_mods;
	const struct unwind_input *in;
	int beyond_dump;
	int noinfo;		 /* the step being taken found no unwind entry */
	size_t nr_synth;	 /* mods with a rewritten .debug_frame */
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

/* The .debug_frame of elf, inflated when compressed; NULL when none. */
static Elf_Data *debug_frame_data(Elf *elf)
{
	Elf_Scn *scn = symbols_elf_section(elf, ".debug_frame");
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0))
		return NULL;
	return elf_getdata(scn, NULL);
}

static void put_u32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static size_t put_uleb(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n] = (v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
		v >>= 7;
		n++;
	} while (v);
	return n;
}

static size_t put_sleb(unsigned char *p, int64_t v)
{
	size_t n = 0;

	for (;;) {
		unsigned char b = v & 0x7f;

		v >>= 7;
		if ((!v && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
			p[n++] = b;
			return n;
		}
		p[n++] = b | 0x80;
	}
}

struct synth_cie {
	Dwarf_Off old, new_off;
};

/* The CIE at section offset old in cies (in section order), or nr. */
static size_t cie_find(const struct synth_cie *cies, size_t nr, Dwarf_Off old)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cies[mid].old == old)
			return mid;
		if (cies[mid].old < old)
			lo = mid + 1;
		else
			hi = mid;
	}
	return nr;
}

struct synth_row {
	uint64_t start, entry;
};

static int row_cmp(const void *a, const void *b)
{
	const struct synth_row *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Rewrite the .debug_frame in data (of a 64-bit object) for libunwind's
 * .eh_frame reader: CIE id 0 and version 3, CIE pointers relative to the
 * FDE, start addresses plus bias. CIEs with an augmentation (compilers
 * emit none in .debug_frame) and FDEs of discarded code (start 0) are left
 * out. Returns the entries (malloc'd, *len bytes) and their table rows
 * sorted by start (in *rows, *nr_rows), or NULL.
 */
static unsigned char *synth_entries(const unsigned char *ident, Elf_Data *data, uint64_t bias, size_t *len,
				    struct synth_row **rows, size_t *nr_rows)
{
	/* An entry grows by at most the CIE's re-encoded numbers. */
	size_t cap = data->d_size + 64, n = 0, nr_cies = 0, nr = 0;
	unsigned char *out = malloc(cap);
	struct synth_cie *cies = NULL;
	struct synth_row *rw = NULL;
	Dwarf_Off off, next;
	Dwarf_CFI_Entry e;

	if (!out)
		return NULL;
	/* CIEs first, so that every FDE finds its CIE written. */
	for (off = 0; dwarf_next_cfi(ident, data, false, off, &next, &e) == 0; off = next) {
		size_t ninit, at = n;
		struct synth_cie *c;

		if (!dwarf_cfi_cie_p(&e) || e.cie.augmentation[0])
			continue;
		ninit = (size_t)(e.cie.initial_instructions_end - e.cie.initial_instructions);
		if (n + 32 + ninit > cap) {
			unsigned char *o = realloc(out, cap = 2 * cap + ninit);

			if (!o)
				goto fail;
			out = o;
		}
		c = realloc(cies, (nr_cies + 1) * sizeof(*cies));
		if (!c)
			goto fail;
		cies = c;
		cies[nr_cies].old = off;
		cies[nr_cies++].new_off = at;
		n += 4;
		put_u32(out + n, 0);
		n += 4;
		out[n++] = 3;
		out[n++] = 0;
		n += put_uleb(out + n, e.cie.code_alignment_factor);
		n += put_sleb(out + n, e.cie.data_alignment_factor);
		n += put_uleb(out + n, e.cie.return_address_register);
		memcpy(out + n, e.cie.initial_instructions, ninit);
		n += ninit;
		put_u32(out + at, (uint32_t)(n - at - 4));
	}
	for (off = 0; dwarf_next_cfi(ident, data, false, off, &next, &e) == 0; off = next) {
		uint64_t loc, range;
		size_t ninstr, k, at = n;

		if (dwarf_cfi_cie_p(&e) || e.fde.end - e.fde.start < 16)
			continue;
		k = cie_find(cies, nr_cies, e.fde.CIE_pointer);
		memcpy(&loc, e.fde.start, 8);
		memcpy(&range, e.fde.start + 8, 8);
		if (k == nr_cies || !loc || !range)
			continue;
		ninstr = (size_t)(e.fde.end - e.fde.start - 16);
		if (n + 24 + ninstr > cap) {
			unsigned char *o = realloc(out, cap = 2 * cap + ninstr);

			if (!o)
				goto fail;
			out = o;
		}
		if (!(nr & (nr + 1))) {
			struct synth_row *r = realloc(rw, (2 * nr + 1) * sizeof(*rw));

			if (!r)
				goto fail;
			rw = r;
		}
		rw[nr].start = loc + bias;
		rw[nr++].entry = at;
		put_u32(out + n, (uint32_t)(20 + ninstr));
		n += 4;
		put_u32(out + n, (uint32_t)(n - cies[k].new_off));
		n += 4;
		loc += bias;
		memcpy(out + n, &loc, 8);
		memcpy(out + n + 8, &range, 8);
		n += 16;
		memcpy(out + n, e.fde.start + 16, ninstr);
		n += ninstr;
	}
	free(cies);
	if (!nr) {
		free(rw);
		free(out);
		return NULL;
	}
	if (nr > 1)
		qsort(rw, nr, sizeof(*rw), row_cmp);
	*len = n;
	*rows = rw;
	*nr_rows = nr;
	return out;
fail:
	free(cies);
	free(rw);
	free(out);
	return NULL;
}

static int overlaps_map(const struct process *p, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < p->nr_maps; i++)
		if (p->maps[i].start < hi && lo < p->maps[i].end)
			return 1;
	return 0;
}

/* Where to serve len bytes for m: a page-aligned gap in the process's
 * maps, next to one of them, as close to m as can be, and near enough
 * that every address of m is a 32-bit offset from it. 0 when none. */
static uint64_t synth_place(const struct process *p, const struct lu_mod *m, size_t len)
{
	const uint64_t page = 4096, span = 1ull << 31, top = 1ull << 47;
	uint64_t need = (len + page - 1) & ~(page - 1), best = 0, best_d = UINT64_MAX;

	for (size_t i = 0; i <= p->nr_maps; i++) {
		uint64_t cand[2], lo = i < p->nr_maps ? p->maps[i].start : m->start,
				  hi = i < p->nr_maps ? p->maps[i].end : m->end;

		cand[0] = lo > need + 2 * page ? ((lo - need - page) & ~(page - 1)) : 0;
		cand[1] = ((hi + page - 1) & ~(page - 1)) + page;
		for (int k = 0; k < 2; k++) {
			uint64_t c = cand[k], d;

			/* Addresses stay below 2^47, so the differences fit. */
			if (!c || c + need > top || (int64_t)(m->start - c) < -(int64_t)span ||
			    (int64_t)(m->end - 1 - c) >= (int64_t)span || overlaps_map(p, c, c + need) ||
			    (c < m->end && m->start < c + need))
				continue;
			d = c < m->start ? m->start - c : c - m->start;
			if (d < best_d) {
				best_d = d;
				best = c;
			}
		}
	}
	return best;
}

/* m's .debug_frame for libunwind, made when first needed. */
static struct lu_synth *synth_get(struct lu_space *sp, struct lu_mod *m)
{
	struct synth_row *rows = NULL;
	struct lu_synth *sy;
	unsigned char *ents = NULL;
	size_t len = 0, nr = 0, kept = 0;

	if (m->synth_tried)
		return m->synth;
	m->synth_tried = 1;
	/* The object's own .debug_frame, else its separate debug file's. */
	for (int i = 0; i < 2 && !ents; i++) {
		int fd = -1;
		Elf *elf;
		Elf_Data *data;

		if (i == 0) {
			elf = elf_memory((char *)m->dso->obj_bytes, m->dso->obj_size);
		} else {
			const char *dbg = symbols_debug_file(m->dso);

			if (!dbg || !strcmp(dbg, m->dso->obj_path))
				break;
			fd = symbols_file_open(dbg);
			elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
		}
		if (elf && gelf_getclass(elf) == ELFCLASS64 && (data = debug_frame_data(elf)))
			ents = synth_entries((const unsigned char *)elf_getident(elf, NULL), data, m->bias, &len, &rows,
					     &nr);
		if (elf)
			elf_end(elf);
		if (fd >= 0)
			close(fd);
	}
	if (!ents)
		return NULL;
	/* The table only needs entries for code the mapping holds, and only
	 * those are sure to be 32-bit offsets from where it goes. */
	for (size_t i = 0; i < nr; i++)
		if (rows[i].start >= m->start && rows[i].start < m->end)
			rows[kept++] = rows[i];
	sy = calloc(1, sizeof(*sy));
	if (sy)
		sy->size = 8 * kept + len;
	if (sy && kept && sy->size < (1ull << 31))
		sy->base = synth_place(sp->proc, m, sy->size);
	if (sy && sy->base && (sy->bytes = malloc(sy->size))) {
		for (size_t i = 0; i < kept; i++) {
			put_u32(sy->bytes + 8 * i, (uint32_t)(int32_t)(int64_t)(rows[i].start - sy->base));
			put_u32(sy->bytes + 8 * i + 4, (uint32_t)(8 * kept + rows[i].entry));
		}
		memcpy(sy->bytes + 8 * kept, ents, len);
		sy->count = kept;
		m->synth = sy;
		sp->nr_synth++;
	} else {
		free(sy);
	}
	free(rows);
	free(ents);
	return m->synth;
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need_unwind_info,
			  void *arg)
{
	struct lu_space *sp = arg;
	struct lu_mod *m = mod_of(sp, ip);
	struct lu_synth *sy;
	unw_dyn_info_t di;
	int r;

	if (!m) {
		sp->noinfo = 1;
		return -UNW_ENOINFO;
	}
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->start;
	di.end_ip = m->end;
	if (m->hdr_vaddr) {
		di.u.rti.segbase = m->bias + m->hdr_vaddr;
		di.u.rti.table_data = m->bias + m->hdr_vaddr + 12;
		/* Entries are two 32-bit offsets; the length counts words. */
		di.u.rti.table_len = m->fde_count * 8 / sizeof(unw_word_t);
		r = dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
		if (r != -UNW_ENOINFO)
			return r;
	}
	if (!(sy = synth_get(sp, m))) {
		sp->noinfo = 1;
		return -UNW_ENOINFO;
	}
	di.u.rti.segbase = sy->base;
	di.u.rti.table_data = sy->base;
	di.u.rti.table_len = sy->count * 8 / sizeof(unw_word_t);
	r = dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
	sp->noinfo |= r == -UNW_ENOINFO;
	return r;
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
	/* A rewritten .debug_frame lies where nothing is mapped; most
	 * spaces have none, and this runs for every word read. */
	for (size_t i = 0; sp->nr_synth && i < sp->nr_mods; i++) {
		const struct lu_synth *sy = sp->mods[i].synth;

		if (sy && addr >= sy->base && addr - sy->base < sy->size) {
			size_t have = sy->size - (addr - sy->base);

			v = 0;
			memcpy(&v, sy->bytes + (addr - sy->base), have < 8 ? have : 8);
			*valp = v;
			return 0;
		}
	}
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
	for (size_t i = 0; i < sp->nr_mods; i++)
		if (sp->mods[i].synth) {
			free(sp->mods[i].synth->bytes);
			free(sp->mods[i].synth);
		}
	free(sp->mods);
	free(sp);
}

static void *lu_space_new(struct unwinder *u, struct process *p, const struct unwind_object *objs, size_t n)
{
	struct lu_space *sp = calloc(1, sizeof(*sp));

	if (!sp)
		return NULL;
	sp->u = u;
	sp->proc = p;
	sp->mods = calloc(n ? n : 1, sizeof(*sp->mods));
	sp->as = unw_create_addr_space(&accessors, 0);
	if (!sp->mods || !sp->as) {
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
	return sp;
}

static int lu_run(struct unwinder *u, void *space, const struct unwind_input *in, uint64_t *ips, uint64_t *sps,
		  int max, enum unwind_stop *stop)
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
		unw_word_t ip, spv = 0;

		if (unw_get_reg(&c, UNW_REG_IP, &ip) || !ip)
			break;
		if (n >= max) {
			*stop = UNWIND_STOP_DEPTH;
			break;
		}
		unw_get_reg(&c, UNW_REG_SP, &spv);
		sps[n] = spv;
		ips[n++] = ip;
		sp->noinfo = 0;
		r = unw_step(&c);
		if (r > 0)
			continue;
		/* Where an address has no unwind entry, libunwind tries the
		 * frame-pointer chain and, when rbp holds none, calls the
		 * stack finished: it was not. */
		if (r < 0 || sp->noinfo) {
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
