/*
 * analyze/stacks/symbols.c: objects by build-id, libdw symbolization, kernel
 * symbols.
 *
 * Each object gets its own offline Dwfl: libdw then finds separate debug
 * files by build-id under /usr/lib/debug and reads .symtab, .dynsym or
 * .gnu_debugdata, whichever the object has. Lookups are by the ELF virtual
 * address the file offset falls in, through the object's PT_LOAD headers.
 * Separate Dwfls are what lets the loader thread work on one object while
 * the main thread uses the others.
 */
#include "symbols_int.h"
#include "../../formats/msg.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int symbols_init(struct symbols *s, const struct symbols_opts *o)
{
	memset(s, 0, sizeof(*s));
	if (o)
		s->o = *o;
	hashmap_init(&s->dsos, 1);
	elf_version(EV_CURRENT);
	return symbols_debuginfod_start(s);
}

void symbols_shorten(char *name)
{
	char *w = name;

	for (const char *r = name; *r;) {
		if (!strncmp(r, "operator", 8) && (r == name || r[-1] == ':' || r[-1] == ' ')) {
			/* operator<, operator<<=, operator->*, ...: its own name,
			 * the longest spelling first. */
			static const char *const ops[] = { "<=>", "<<=", ">>=", "->*", "<<", ">>", "<=", ">=", "->", "<", ">" };

			memmove(w, r, 8);
			w += 8;
			r += 8;
			for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
				if (!strncmp(r, ops[k], strlen(ops[k]))) {
					memmove(w, r, strlen(ops[k]));
					w += strlen(ops[k]);
					r += strlen(ops[k]);
					break;
				}
			continue;
		}
		if (*r == '<') {
			int depth = 0;
			const char *q = r;

			for (; *q; q++) {
				depth += *q == '<';
				depth -= *q == '>';
				if (!depth)
					break;
			}
			if (*q) {
				*w++ = '<';
				*w++ = '>';
				r = q + 1;
				continue;
			}
		}
		*w++ = *r++;
	}
	*w = 0;
}

static void dso_free(struct dso *d)
{
	hashmap_for_each(&d->cache, slot) {
		struct sym_hit *h = slot->ptr;

		if (h) {
			free(h->demangled);
			for (int i = 0; i < h->nr_inline; i++)
				free((char *)h->inl[i].name);
			free(h->inl);
		}
		free(h);
	}
	hashmap_release(&d->cache);
	hashmap_for_each(&d->intervals, slot) free(slot->ptr);
	hashmap_release(&d->intervals);
	free(d->bounds);
	free(d->sized);
	free(d->sects);
	hashmap_release(&d->asked);
	hashmap_for_each(&d->cus, slot) {
		struct cu_scopes *c = slot->ptr;

		if (c)
			free(c->v);
		free(c);
	}
	hashmap_release(&d->cus);
	if (d->cu_index)
		free(d->cu_index->v);
	free(d->cu_index);
	if (d->dwfl)
		dwfl_end(d->dwfl);
	free(d->loads);
	free(d->path);
	free(d->used);
	if (d->obj_bytes)
		munmap((void *)d->obj_bytes, d->obj_size);
	free(d->obj_path);
	free(d->obj_loads);
	free(d->obj_sects);
	for (size_t i = 0; i < d->nr_slots; i++)
		free(d->slots[i].name);
	free(d->slots);
	free(d);
}

void symbols_release(struct symbols *s)
{
	loader_stop(s->loader);
	hashmap_for_each(&s->dsos, slot) dso_free(slot->ptr);
	hashmap_release(&s->dsos);
	for (size_t i = 0; i < s->nr_ksyms; i++) {
		free(s->ksyms[i].name);
		free(s->ksyms[i].module);
	}
	free(s->ksyms);
	embedded_release(s);
	symbols_debuginfod_end(s);
}

void symbols_build_id_hex(const unsigned char *bid, int len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	int i;

	/* Every file mapping of a replay comes here: no sprintf per byte. */
	for (i = 0; i < len && i < 20; i++) {
		out[2 * i] = digits[bid[i] >> 4];
		out[2 * i + 1] = digits[bid[i] & 15];
	}
	out[2 * i] = 0;
}

struct dso *symbols_dso(struct symbols *s, const char *path, const unsigned char *bid, int bid_len)
{
	char key[4200];
	struct hm_slot *slot;
	struct dso *d;
	int created;

	if (bid_len > 0) {
		strcpy(key, "b:");
		symbols_build_id_hex(bid, bid_len, key + 2);
	} else {
		snprintf(key, sizeof(key), "p:%s", path);
	}
	slot = hashmap_str(&s->dsos, key, &created);
	if (!slot)
		return NULL;
	if (!created)
		return slot->ptr;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path))) {
		free(d);
		slot->ptr = NULL;
		return NULL;
	}
	d->owner = s;
	d->short_name = strrchr(d->path, '/') ? strrchr(d->path, '/') + 1 : d->path;
	if (bid_len > 0) {
		d->bid_len = bid_len > 20 ? 20 : bid_len;
		memcpy(d->build_id, bid, d->bid_len);
	}
	hashmap_init(&d->cache, 0);
	hashmap_init(&d->intervals, 0);
	hashmap_init(&d->asked, 0);
	hashmap_init(&d->cus, 0);
	slot->ptr = d;
	return d;
}

static int vaddr_of(const struct dso *d, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < d->nr_loads; i++) {
		const struct dso_load *l = &d->loads[i];

		if (off >= l->off && off < l->off + l->size) {
			*vaddr = off - l->off + l->vaddr;
			return 0;
		}
	}
	return -1;
}

/* The cache entry for an ELF address of d, made on first use; NULL when
 * out of memory. */
struct sym_interval {
	const char *name;	 /* libdwfl's, NULL when none */
	uint64_t start;		 /* the symbol's value */
};

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void bounds_push(struct dso *d, size_t *alloc, uint64_t v)
{
	if (d->nr_bounds == *alloc) {
		size_t n = *alloc ? 2 * *alloc : 1024;
		uint64_t *b = realloc(d->bounds, n * sizeof(*b));

		if (!b) {
			d->bounds_state = -1;
			return;
		}
		d->bounds = b;
		*alloc = n;
	}
	d->bounds[d->nr_bounds++] = v;
}

/* A symbol with a size that libdwfl's address lookup considers. */
struct sym_sized {
	uint64_t value, size, max_end;	/* max_end: the largest end up to it in value order */
	const char *name;
	int ndx;			/* its index in libdwfl's table: the scan order */
	int global;			/* found in the first pass, over the global symbols */
	int bind;			/* libdwfl's preference: global 3, weak 2, local 1 */
};

static int sized_cmp(const void *a, const void *b)
{
	const struct sym_sized *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return (x->ndx > y->ndx) - (x->ndx < y->ndx);
}

static int bind_value(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL: return 3;
	case STB_WEAK: return 2;
	case STB_LOCAL: return 1;
	}
	return 0;
}

static void sized_push(struct dso *d, size_t *alloc, const struct sym_sized *v)
{
	if (d->nr_sized == *alloc) {
		size_t n = *alloc ? 2 * *alloc : 1024;
		struct sym_sized *p = realloc(d->sized, n * sizeof(*p));

		if (!p) {
			free(d->sized);
			d->sized = NULL;
			d->nr_sized = *alloc = 0;
			return;
		}
		d->sized = p;
		*alloc = n;
	}
	d->sized[d->nr_sized++] = *v;
}

/* The allocated section that holds addr, or NULL. */
static struct sym_section *section_of(struct dso *d, uint64_t addr)
{
	for (size_t i = 0; i < d->nr_sects; i++)
		if (addr >= d->sects[i].lo && addr < d->sects[i].hi)
			return &d->sects[i];
	return NULL;
}

static struct sym_section *section_ndx(struct dso *d, size_t ndx)
{
	for (size_t i = 0; i < d->nr_sects; i++)
		if (d->sects[i].ndx == ndx)
			return &d->sects[i];
	return NULL;
}

/* libdwfl picks the symbol for an address by comparing it with symbol
 * starts, symbol ends and the bounds of the section that holds it, and
 * nothing else: so every such address, in libdwfl's own coordinates. The
 * symbols with a size are kept too, for sized_find. */
static void bounds_make(struct dso *d)
{
	int n = dwfl_module_getsymtab(d->mod), first_global = dwfl_module_getsymtab_first_global(d->mod);
	size_t alloc = 0, k = 0, sized_alloc = 0;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(d->mod, &bias);
	Elf_Scn *scn = NULL;

	d->bounds_state = 1;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC)) {
			struct sym_section *v = realloc(d->sects, (d->nr_sects + 1) * sizeof(*v));

			bounds_push(d, &alloc, sh.sh_addr + bias);
			bounds_push(d, &alloc, sh.sh_addr + sh.sh_size + bias);
			if (!v) {
				d->bounds_state = -1;
				break;
			}
			d->sects = v;
			v[d->nr_sects++] = (struct sym_section){ sh.sh_addr + bias, sh.sh_addr + sh.sh_size + bias,
								 UINT64_MAX, elf_ndxscn(scn) };
		}
	}
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr a;
		Elf *symelf = NULL;
		const char *name = dwfl_module_getsym_info(d->mod, i, &sym, &a, NULL, &symelf, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		struct sym_section *sc;

		if (!name)
			continue;
		bounds_push(d, &alloc, a);
		bounds_push(d, &alloc, a + sym.st_size);
		/* What libdwfl's scan looks at; index 0 is no symbol. */
		if (i == 0 || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION || type == STT_FILE ||
		    type == STT_TLS || first_global < 0)
			continue;
		if (sym.st_size) {
			sized_push(d, &sized_alloc, &(struct sym_sized){ a, sym.st_size, 0, name, i,
									 first_global == 0 || i >= first_global,
									 bind_value(&sym) });
		} else if (sym.st_shndx < SHN_LORESERVE) {
			/* A label: it names addresses of its section above it
			 * that no sized symbol holds. libdwfl takes its
			 * section by index, so one at a section's end (_end)
			 * names nothing; from another file than the sections
			 * were read from, by address. */
			if (symelf == elf && (sc = section_ndx(d, sym.st_shndx)))
				sc->min_sizeless = a < sc->min_sizeless ? a : sc->min_sizeless;
			else if ((sc = section_of(d, a)))
				sc->min_sizeless = a < sc->min_sizeless ? a : sc->min_sizeless;
			else
				d->sects_unsure = 1;
		}
	}
	if (d->nr_sized > 1)
		qsort(d->sized, d->nr_sized, sizeof(*d->sized), sized_cmp);
	for (size_t i = 0; i < d->nr_sized; i++) {
		uint64_t end = d->sized[i].value + d->sized[i].size;

		d->sized[i].max_end = i && d->sized[i - 1].max_end > end ? d->sized[i - 1].max_end : end;
	}
	if (n <= 0 || d->bounds_state < 0 || d->nr_bounds < 2) {
		free(d->bounds);
		d->bounds = NULL;
		d->nr_bounds = 0;
		d->bounds_state = -1;
		return;
	}
	if (d->nr_bounds > 1)
		qsort(d->bounds, d->nr_bounds, sizeof(*d->bounds), u64_cmp);
	for (size_t i = 1; i < d->nr_bounds; i++)
		if (d->bounds[i] != d->bounds[k])
			d->bounds[++k] = d->bounds[i];
	d->nr_bounds = k + 1;
}

/* libdwfl's choice between the current best and another sized symbol
 * that holds the address, as its scan makes it (dwfl_module_addrsym.c):
 * closer, or of a preferred binding, or at the same value smaller without
 * a worse binding. */
static int sized_better(const struct sym_sized *best, const struct sym_sized *s)
{
	if (!best || best->value < s->value || best->bind < s->bind)
		return 1;
	return best->value == s->value &&
	       ((best->size > s->size && best->bind <= s->bind) || (best->size >= s->size && best->bind < s->bind));
}

/* The name libdwfl gives addr, from the sized symbols that hold it, or
 * NULL when none does (libdwfl then looks at symbols without a size,
 * which only its own scan answers). At a bound (a symbol's value) a label
 * there can keep libdwfl from its second pass, over the locals: only a
 * global then decides here. */
static const char *sized_find(const struct dso *d, uint64_t addr, int at_bound, uint64_t *start)
{
	const struct sym_sized *best = NULL, *hold[64];
	size_t lo = 0, hi = d->nr_sized, nh = 0;

	/* The symbols with value <= addr, then back while an end can
	 * still pass addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->sized[mid].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && d->sized[i].max_end > addr;)
		if (d->sized[i].value + d->sized[i].size > addr) {
			if (nh == sizeof(hold) / sizeof(hold[0]))
				return NULL;
			hold[nh++] = &d->sized[i];
		}
	/* The globals in scan order, then, if none holds addr, the locals. */
	for (int pass = 1; pass >= !!at_bound && !best; pass--)
		for (int ndx = -1;;) {
			const struct sym_sized *next = NULL;

			for (size_t i = 0; i < nh; i++)
				if (hold[i]->global == pass && hold[i]->ndx > ndx && (!next || hold[i]->ndx < next->ndx))
					next = hold[i];
			if (!next)
				break;
			if (sized_better(best, next))
				best = next;
			ndx = next->ndx;
		}
	if (best)
		*start = best->value;
	return best ? best->name : NULL;
}

/* Does libdwfl find no name for addr, which no sized symbol holds? Only
 * a label (a symbol without a size) of its section at or below it could
 * name it. */
static int nameless(struct dso *d, uint64_t addr)
{
	const struct sym_section *sc = section_of(d, addr);

	return !d->sects_unsure && (!sc || sc->min_sizeless > addr);
}

/* libdwfl's symbol for look, asked once per interval between bounds. */
static const char *interval_sym(struct dso *d, uint64_t look, uint64_t *start)
{
	size_t lo = 0, hi;
	uint64_t rep;
	struct hm_slot *slot;
	struct sym_interval *iv;
	int created;

	if (!d->bounds_state)
		bounds_make(d);
	if (d->bounds_state < 0 || look < d->bounds[0] || look >= d->bounds[d->nr_bounds - 1])
		goto direct;
	/* The last bound at or below look. */
	hi = d->nr_bounds - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->bounds[mid] <= look)
			lo = mid;
		else
			hi = mid;
	}
	/* A bound itself is an interval of its own: an absolute symbol
	 * names only the address equal to its value. The rest of the
	 * interval is asked about at the address after the bound. */
	rep = look == d->bounds[lo] ? look : d->bounds[lo] + 1;
	slot = hashmap_u64(&d->intervals, 2 * lo + 1 + (look != d->bounds[lo]), &created);
	if (!slot)
		goto direct;
	if (created) {
		GElf_Sym sym;
		GElf_Off o = 0;

		iv = calloc(1, sizeof(*iv));
		slot->ptr = iv;
		if (!iv)
			goto direct;
		/* Inside a sized symbol, or in a section with no label below
		 * it, the choice is made here; libdwfl scans its whole table
		 * for each question. */
		if (!(iv->name = sized_find(d, rep, rep == look, &iv->start))) {
			if (rep == look || !nameless(d, rep)) {
				iv->name = dwfl_module_addrinfo(d->mod, rep, &o, &sym, NULL, NULL, NULL);
				iv->start = rep - o;
			} else {
				iv->name = NULL;
				iv->start = 0;
			}
		}
	}
	iv = slot->ptr;
	if (!iv)
		goto direct;
	*start = iv->start;
	return iv->name;
direct: {
	GElf_Sym sym;
	GElf_Off o = 0;
	const char *name = dwfl_module_addrinfo(d->mod, look, &o, &sym, NULL, NULL, NULL);

	*start = look - o;
	return name;
}
}

static struct sym_hit *dso_hit(struct dso *d, uint64_t look)
{
	struct hm_slot *slot;
	struct sym_hit *hit;
	int created;

	slot = hashmap_u64(&d->cache, look, &created);
	if (!slot)
		return NULL;
	if (created) {
		GElf_Sym sym;
		GElf_Off o = 0;
		const char *name;

		hit = calloc(1, sizeof(*hit));
		slot->ptr = hit;
		if (!hit)
			return NULL;
		hit->nr_inline = -1;
		name = interval_sym(d, look, &hit->start);
		/* The check asks libdwfl for every address as well. */
		if (d->owner->o.check) {
			const char *want = dwfl_module_addrinfo(d->mod, look, &o, &sym, NULL, NULL, NULL);

			__atomic_add_fetch(&d->owner->checked, 1, __ATOMIC_RELAXED);
			if ((!want != !name) || (want && (strcmp(want, name) || hit->start != look - o)))
				__atomic_add_fetch(&d->owner->differ, 1, __ATOMIC_RELAXED);
		}
		hit->name = name;
		if (name && name[0] == '_' && name[1] == 'Z') {
			int status = -1;
			char *dm = __cxa_demangle(name, NULL, NULL, &status);

			/* Kept for the life of the cache. */
			if (dm && !status) {
				if (!d->owner->o.full_names)
					symbols_shorten(dm);
				hit->name = hit->demangled = dm;
			} else {
				free(dm);
			}
		}
	}
	return slot->ptr;
}

/* The ELF address of file offset off in a loaded d, and the one to look
 * up: a return address one byte earlier, so that a call at a function's
 * end is named right. 0, or -1 when d has no name for it. */
int dso_addr(const struct dso *d, uint64_t off, int ret, uint64_t *vaddr, uint64_t *look)
{
	if (d->state != DSO_OK || vaddr_of(d, off, vaddr))
		return -1;
	*look = ret && *vaddr ? *vaddr - 1 : *vaddr;
	return 0;
}

/* The loader thread's share of naming: fill d's cache for an address the
 * stacks hold, as symbols_lookup and symbols_inline would, counting
 * nothing (the counts are per frame, made when frames are named). */
void dso_name_ahead(struct dso *d, uint64_t off, int ret)
{
	uint64_t vaddr, look;
	struct sym_hit *hit;

	if (dso_addr(d, off, ret, &vaddr, &look))
		return;
	hit = dso_hit(d, look);
	if (hit && hit->name && d->dwarf)
		hit_inline(d, hit, look);
}

const char *symbols_lookup(struct dso *d, uint64_t off, int ret, uint64_t *symoff)
{
	uint64_t vaddr, look;
	struct sym_hit *hit;

	*symoff = off;
	dso_settle(d);
	if (d->state == DSO_UNLOADED)
		dso_load(d);
	if (dso_addr(d, off, ret, &vaddr, &look)) {
		d->unresolved++;
		return NULL;
	}
	hit = dso_hit(d, look);
	if (!hit || !hit->name) {
		d->unresolved++;
		return NULL;
	}
	*symoff = vaddr - hit->start;
	return hit->name;
}

void symbols_report_unresolved(struct symbols *s)
{
	if (s->o.check)
		msg_note("symbol check: %llu of %llu lookups differ from libdwfl's own",
			(unsigned long long)s->differ, (unsigned long long)s->checked);
	hashmap_for_each(&s->dsos, slot) {
		struct dso *d = slot->ptr;
		char hex[41] = "";

		if (!d || !d->unresolved)
			continue;
		dso_settle(d);
		symbols_build_id_hex(d->build_id, d->bid_len, hex);
		switch (d->state) {
		case DSO_MISSING:
			if (!strncmp(d->path, "/memfd:", 7)) {
				msg_note("%llu frames unnamed in code a program wrote into memory ('%s'): "
					   "the trace carries no ELF object for it%s",
					(unsigned long long)d->unresolved, d->path + 1,
					hex[0] ? "; record while it runs to embed it" : " (not an ELF file: a JIT's code, "
										"which its perf map or jitdump names)");
				break;
			}
			if (strstr(d->path, " (deleted)")) {
				msg_note("%llu frames unnamed in '%s' (build-id %s): the file was deleted and "
					   "the trace does not carry it; record with --embed minimal (the default) while the "
					   "process runs, or install its debug file under /usr/lib/debug/.build-id/",
					(unsigned long long)d->unresolved, d->path, hex[0] ? hex : "none");
				break;
			}
			msg_note("%llu frames unnamed in '%s' (build-id %s): the file is not on this "
				   "machine%s; copy it to the same path%s",
				(unsigned long long)d->unresolved, d->path, hex[0] ? hex : "none",
				s->dbgd ? " nor on the debuginfod servers" : "",
				!hex[0] ? "" : s->dbgd ? " or install its debug file under /usr/lib/debug/.build-id/"
				: ", install its debug file under /usr/lib/debug/.build-id/, or add --debuginfod");
			break;
		case DSO_MISMATCH:
			msg_note("%llu frames unnamed in '%s': the file here has another build-id than "
				   "the recorded %s%s; install the recorded version or its debug file "
				   "/usr/lib/debug/.build-id/%.2s/%s.debug%s",
				(unsigned long long)d->unresolved, d->path, hex,
				s->dbgd ? ", and the debuginfod servers have neither" : "", hex, hex + 2,
				s->dbgd ? "" : ", or add --debuginfod");
			break;
		case DSO_NOTELF:
			msg_note("%llu frames unnamed in '%s': not an ELF object here",
				(unsigned long long)d->unresolved, d->path);
			break;
		default:
			break;
		}
	}
}
