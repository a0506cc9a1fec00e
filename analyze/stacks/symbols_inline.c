/*
 * analyze/stacks/symbols_inline.c: inlined functions and source lines, from the DWARF of an
 * object's debug file: each address descends only into the top-level
 * function of its CU that holds it, through a per-CU index of their
 * ranges.
 */
#include "symbols_int.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

static char *die_function_name(Dwarf_Die *die, int full_names)
{
	Dwarf_Attribute a;
	Dwarf_Die origin;
	const char *name = NULL;
	char *dm;
	int status = -1;

	/* An inlined instance names its function through abstract_origin;
	 * prefer the linkage name so C++ shows with its signature. */
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		name = dwarf_formstring(&a);
	if (!name)
		name = dwarf_diename(die);
	if (!name && dwarf_attr(die, DW_AT_abstract_origin, &a) && dwarf_formref_die(&a, &origin))
		name = dwarf_diename(&origin);
	if (!name)
		return strdup("[inlined]");
	if (name[0] == '_' && name[1] == 'Z' && (dm = __cxa_demangle(name, NULL, NULL, &status)) && !status) {
		if (!full_names)
			symbols_shorten(dm);
		return dm;
	}
	return strdup(name);
}

int symbols_inline(struct dso *d, uint64_t off, int ret, const struct sym_inline **out)
{
	uint64_t vaddr, look;
	struct hm_slot *slot;
	struct sym_hit *hit;

	/* Callers name the frame first: its cache entry is there. */
	*out = NULL;
	dso_settle(d);
	if (dso_addr(d, off, ret, &vaddr, &look))
		return 0;
	slot = hashmap_u64_find(&d->cache, look);
	hit = slot ? slot->ptr : NULL;
	if (!hit || !hit->name)
		return 0;
	hit_inline(d, hit, look);
	*out = hit->inl;
	return hit->nr_inline;
}

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static struct cu_scopes *cu_scopes_of(struct dso *d, Dwarf_Die *cu)
{
	struct hm_slot *slot;
	struct cu_scopes *c;
	Dwarf_Die die;
	size_t alloc = 0;
	uint32_t order = 0;
	int created;

	slot = hashmap_u64(&d->cus, dwarf_dieoffset(cu), &created);
	if (!slot)
		return NULL;
	if (!created)
		return slot->ptr;
	c = slot->ptr = calloc(1, sizeof(*c));
	if (!c || dwarf_child(cu, &die) != 0)
		return c;
	do {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		while ((off = dwarf_ranges(&die, off, &base, &lo, &hi)) > 0) {
			if (c->n == alloc) {
				struct cu_range *v = realloc(c->v, (alloc = alloc ? 2 * alloc : 64) * sizeof(*v));

				if (!v)
					return c;
				c->v = v;
			}
			c->v[c->n++] = (struct cu_range){ lo, hi, order, die };
			if (hi - lo > c->longest)
				c->longest = hi - lo;
		}
		order++;
	} while (dwarf_siblingof(&die, &die) == 0);
	if (c->n > 1)
		qsort(c->v, c->n, sizeof(*c->v), range_cmp);
	return c;
}

/*
 * The DIEs that hold pc, outermost first, as dwarf_getscopes finds them
 * (innermost first there): the first top-level DIE whose ranges hold it,
 * then at each level the first child that does. Returns how many, at most
 * max.
 */
static int cu_scopes_find(struct dso *d, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *path, int max)
{
	struct cu_scopes *c = cu_scopes_of(d, cu);
	const struct cu_range *best = NULL;
	size_t lo = 0, hi;
	int n = 0;

	if (!c || !c->n || max < 1)
		return 0;
	/* The last range starting at or below pc, then back over those that
	 * could still reach it. */
	for (hi = c->n; lo < hi;) {
		size_t mid = (lo + hi) / 2;

		if (c->v[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && pc - c->v[i].lo < c->longest;)
		if (pc < c->v[i].hi && (!best || c->v[i].order < best->order))
			best = &c->v[i];
	if (!best)
		return 0;
	path[n++] = best->die;
	while (n < max) {
		Dwarf_Die child;
		int found = 0;

		if (dwarf_child(&path[n - 1], &child) != 0)
			break;
		do {
			if (dwarf_haspc(&child, pc) > 0) {
				path[n++] = child;
				found = 1;
				break;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
	}
	return n;
}

/* Every CU's own ranges, sorted: what .debug_aranges would say. */
static struct cu_scopes *cu_index_make(Dwarf *dw)
{
	struct cu_scopes *c = calloc(1, sizeof(*c));
	Dwarf_Off off = 0, next;
	size_t hsize, alloc = 0;

	while (c && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t r = 0;

		if (dwarf_offdie(dw, off + hsize, &cu))
			while ((r = dwarf_ranges(&cu, r, &base, &lo, &hi)) > 0) {
				if (c->n == alloc) {
					struct cu_range *v = realloc(c->v, (alloc = alloc ? 2 * alloc : 64) * sizeof(*v));

					if (!v)
						return c;
					c->v = v;
				}
				c->v[c->n++] = (struct cu_range){ lo, hi, 0, cu };
			}
		off = next;
	}
	if (c && c->n > 1)
		qsort(c->v, c->n, sizeof(*c->v), range_cmp);
	return c;
}

/* The CU whose code holds look, into *out (its module's bias in *bias),
 * or NULL. libdw finds it through .debug_aranges, which Go's linker does
 * not write: then through the CUs' own ranges, read once. */
static Dwarf_Die *cu_at(struct dso *d, uint64_t look, Dwarf_Addr *bias, Dwarf_Die *out)
{
	Dwarf_Die *cu = dwfl_module_addrdie(d->mod, look, bias);
	Dwarf *dw;
	size_t lo = 0, hi;

	if (cu || !(dw = dwfl_module_getdwarf(d->mod, bias)))
		return cu;
	if (!d->cu_index_read) {
		d->cu_index_read = 1;
		d->cu_index = cu_index_make(dw);
	}
	if (!d->cu_index || !d->cu_index->n)
		return NULL;
	/* The last range starting at or below the address. */
	hi = d->cu_index->n;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (d->cu_index->v[mid].lo <= look - *bias)
			lo = mid;
		else
			hi = mid;
	}
	if (d->cu_index->v[lo].lo > look - *bias || look - *bias >= d->cu_index->v[lo].hi)
		return NULL;
	*out = d->cu_index->v[lo].die;
	return out;
}

void hit_inline(struct dso *d, struct sym_hit *hit, uint64_t look)
{
	Dwarf_Die *cu, scopes[64], cu_die;
	Dwarf_Addr bias;
	int n;

	if (hit->nr_inline >= 0)
		return;
	hit->nr_inline = 0;
	cu = cu_at(d, look, &bias, &cu_die);
	n = cu ? cu_scopes_find(d, cu, look - bias, scopes, 64) : 0;
	/* Innermost first. */
	for (int i = 0; i < n / 2; i++) {
		Dwarf_Die t = scopes[i];

		scopes[i] = scopes[n - 1 - i];
		scopes[n - 1 - i] = t;
	}
	if (n > 0) {
		hit->inl = calloc(n, sizeof(*hit->inl));
		for (int i = 0; hit->inl && i < n; i++) {
			Dwarf_Files *files;
			Dwarf_Word v;
			Dwarf_Attribute a;
			struct sym_inline *si;

			if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
				continue;
			si = &hit->inl[hit->nr_inline++];
			si->name = die_function_name(&scopes[i], d->owner->o.full_names);
			if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &v) == 0)
				si->call_line = v;
			if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &v) == 0 &&
			    dwarf_getsrcfiles(cu, &files, NULL) == 0)
				si->call_file = dwarf_filesrc(files, v, NULL, NULL);
		}
	}
}

int symbols_srcline(struct dso *d, uint64_t off, int ret, const char **file, int *line)
{
	uint64_t vaddr, look;
	Dwfl_Line *l;

	dso_settle(d);
	if (d->state == DSO_UNLOADED)
		dso_load(d);
	if (dso_addr(d, off, ret, &vaddr, &look))
		return -1;
	l = dwfl_module_getsrc(d->mod, look);
	if (!l) {
		Dwarf_Die cu_die, *cu;
		Dwarf_Addr bias;
		Dwarf_Line *dl;

		/* Where libdw found no CU (no .debug_aranges), the line
		 * table of the CU the ranges name. */
		if (!(cu = cu_at(d, look, &bias, &cu_die)) || !(dl = dwarf_getsrc_die(cu, look - bias)) ||
		    dwarf_lineno(dl, line))
			return -1;
		*file = dwarf_linesrc(dl, NULL, NULL);
		return *file ? 0 : -1;
	}
	*file = dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL);
	return *file ? 0 : -1;
}

