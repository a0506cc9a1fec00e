/*
 * analyze/symbols.c: objects by build-id, libdw symbolization, kernel
 * symbols.
 *
 * Each object gets its own offline Dwfl: libdw then finds separate debug
 * files by build-id under /usr/lib/debug and reads .symtab, .dynsym or
 * .gnu_debugdata, whichever the object has. Lookups are by the ELF virtual
 * address the file offset falls in, through the object's PT_LOAD headers.
 */
#include "symbols.h"

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* From libstdc++: C++ names are shown demangled. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static char *debuginfo_path;

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

void symbols_init(struct symbols *s)
{
	memset(s, 0, sizeof(*s));
	hashmap_init(&s->dsos, 1);
}

static void dso_free(struct dso *d)
{
	hashmap_for_each(&d->cache, slot) {
		struct sym_hit *h = slot->ptr;

		if (h)
			free(h->demangled);
		free(h);
	}
	hashmap_release(&d->cache);
	if (d->dwfl)
		dwfl_end(d->dwfl);
	free(d->loads);
	free(d->path);
	free(d->used);
	free(d);
}

void symbols_release(struct symbols *s)
{
	hashmap_for_each(&s->dsos, slot) dso_free(slot->ptr);
	hashmap_release(&s->dsos);
	for (size_t i = 0; i < s->nr_ksyms; i++) {
		free(s->ksyms[i].name);
		free(s->ksyms[i].module);
	}
	free(s->ksyms);
}

struct dso *symbols_dso(struct symbols *s, const char *path, const unsigned char *bid, int bid_len)
{
	char key[4200];
	struct hm_slot *slot;
	struct dso *d;
	int created;

	if (bid_len > 0) {
		strcpy(key, "b:");
		for (int i = 0; i < bid_len && i < 20; i++)
			sprintf(key + 2 + 2 * i, "%02x", bid[i]);
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
	d->short_name = strrchr(d->path, '/') ? strrchr(d->path, '/') + 1 : d->path;
	if (bid_len > 0) {
		d->bid_len = bid_len > 20 ? 20 : bid_len;
		memcpy(d->build_id, bid, d->bid_len);
	}
	hashmap_init(&d->cache, 0);
	slot->ptr = d;
	return d;
}

static char **debug_dirs;
static size_t nr_debug_dirs;

int symbols_debug_dir_add(const char *dir)
{
	char **v = realloc(debug_dirs, (nr_debug_dirs + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	debug_dirs = v;
	debug_dirs[nr_debug_dirs] = strdup(dir);
	return debug_dirs[nr_debug_dirs++] ? 0 : -ENOMEM;
}

/* Read the PT_LOAD table. Returns 1 when the executable segments hold no
 * bytes (a separate debug file), 0 otherwise. */
static int dso_loads_read(struct dso *d, Elf *elf)
{
	size_t nph;
	int has_bytes = 0;

	free(d->loads);
	d->loads = NULL;
	d->nr_loads = 0;
	if (!elf || elf_getphdrnum(elf, &nph))
		return 1;
	d->loads = calloc(nph ? nph : 1, sizeof(*d->loads));
	for (size_t i = 0; d->loads && i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		d->loads[d->nr_loads++] = (struct dso_load){ ph.p_offset, ph.p_vaddr, ph.p_memsz };
		if (ph.p_flags & PF_X)
			has_bytes |= ph.p_filesz > 0;
	}
	return !has_bytes;
}

/* Load one candidate file. Returns DSO_OK, DSO_MISSING, DSO_MISMATCH or
 * DSO_NOTELF. */
static enum dso_state dso_try(struct dso *d, const char *path)
{
	const unsigned char *bits;
	GElf_Addr vaddr, bias;
	Dwfl_Module *mod;
	Dwfl *dwfl;
	Elf *elf;
	size_t nph;
	int n;

	if (access(path, R_OK))
		return DSO_MISSING;
	dwfl = dwfl_begin(&offline_callbacks);
	if (!dwfl)
		return DSO_MISSING;
	dwfl_report_begin(dwfl);
	mod = dwfl_report_elf(dwfl, d->short_name, path, -1, 0, false);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		dwfl_end(dwfl);
		return DSO_NOTELF;
	}
	/* Never use a file whose build-id differs: wrong names are worse
	 * than none. */
	n = dwfl_module_build_id(mod, &bits, &vaddr);
	if (d->bid_len && (n != d->bid_len || memcmp(bits, d->build_id, n))) {
		dwfl_end(dwfl);
		return DSO_MISMATCH;
	}
	elf = dwfl_module_getelf(mod, &bias);
	if (!elf || elf_getphdrnum(elf, &nph)) {
		dwfl_end(dwfl);
		return DSO_NOTELF;
	}
	if (dso_loads_read(d, elf) && strcmp(path, d->path)) {
		/* A separate debug file keeps p_vaddr but not p_offset: its
		 * segments hold no bytes. Take the layout from the object itself
		 * when it is here with the same build-id, else assume offsets
		 * equal addresses, which holds for the text of usual layouts. */
		int fd = open(d->path, O_RDONLY | O_CLOEXEC);
		Elf *orig = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
		int same = 0;

		if (orig) {
			const void *ob;
			ssize_t ol = dwelf_elf_gnu_build_id(orig, &ob);

			same = ol == d->bid_len && !memcmp(ob, d->build_id, ol);
		}
		if (!same || dso_loads_read(d, orig))
			for (size_t i = 0; i < d->nr_loads; i++)
				d->loads[i].off = d->loads[i].vaddr;
		if (orig)
			elf_end(orig);
		if (fd >= 0)
			close(fd);
	}
	d->dwfl = dwfl;
	d->mod = mod;
	d->used = strdup(path);
	return DSO_OK;
}

/* Candidates in order: DIR/.build-id/xx/rest.debug under each --debug-dir
 * and /usr/lib/debug, then the recorded path itself. */
static void dso_load(struct dso *d)
{
	char hex[41], path[4352];
	int mismatch = 0;
	enum dso_state st;

	d->state = DSO_MISSING;
	if (d->bid_len) {
		for (int i = 0; i < d->bid_len; i++)
			sprintf(hex + 2 * i, "%02x", d->build_id[i]);
		for (size_t i = 0; i <= nr_debug_dirs; i++) {
			const char *dir = i < nr_debug_dirs ? debug_dirs[i] : "/usr/lib/debug";

			snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", dir, hex, hex + 2);
			st = dso_try(d, path);
			if (st == DSO_OK) {
				d->state = st;
				return;
			}
			mismatch |= st == DSO_MISMATCH;
		}
	}
	st = dso_try(d, d->path);
	d->state = st == DSO_MISSING && mismatch ? DSO_MISMATCH : st;
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

const char *symbols_lookup(struct dso *d, uint64_t off, int ret, uint64_t *symoff)
{
	uint64_t vaddr, look;
	struct hm_slot *slot;
	struct sym_hit *hit;
	int created;

	*symoff = off;
	if (d->state == DSO_UNLOADED)
		dso_load(d);
	if (d->state != DSO_OK || vaddr_of(d, off, &vaddr)) {
		d->unresolved++;
		return NULL;
	}
	look = ret && vaddr ? vaddr - 1 : vaddr;
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
		name = dwfl_module_addrinfo(d->mod, look, &o, &sym, NULL, NULL, NULL);
		hit->name = name;
		if (name && name[0] == '_' && name[1] == 'Z') {
			int status = -1;
			char *dm = __cxa_demangle(name, NULL, NULL, &status);

			/* Kept for the life of the cache. */
			if (dm && !status)
				hit->name = hit->demangled = dm;
			else
				free(dm);
		}
		hit->start = look - o;
	}
	hit = slot->ptr;
	if (!hit || !hit->name) {
		d->unresolved++;
		return NULL;
	}
	*symoff = vaddr - hit->start;
	return hit->name;
}

int symbols_srcline(struct dso *d, uint64_t off, int ret, const char **file, int *line)
{
	uint64_t vaddr;
	Dwfl_Line *l;

	if (d->state == DSO_UNLOADED)
		dso_load(d);
	if (d->state != DSO_OK || vaddr_of(d, off, &vaddr))
		return -1;
	l = dwfl_module_getsrc(d->mod, ret && vaddr ? vaddr - 1 : vaddr);
	if (!l)
		return -1;
	*file = dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL);
	return *file ? 0 : -1;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int symbols_ksyms_load(struct symbols *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	size_t alloc = s->nr_ksyms;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *le = nl ? nl : end;
		char line[512], name[256], mod[128] = "", type;
		unsigned long long addr;
		size_t n = le - p < (long)sizeof(line) - 1 ? (size_t)(le - p) : sizeof(line) - 1;

		memcpy(line, p, n);
		line[n] = 0;
		p = le + 1;
		if (sscanf(line, "%llx %c %255s [%127[^]]]", &addr, &type, name, mod) < 3)
			continue;
		if (s->nr_ksyms == alloc) {
			struct ksym *k = realloc(s->ksyms, (alloc = alloc ? alloc * 2 : 256) * sizeof(*k));

			if (!k)
				return -ENOMEM;
			s->ksyms = k;
		}
		s->ksyms[s->nr_ksyms].addr = addr;
		s->ksyms[s->nr_ksyms].name = strdup(name);
		s->ksyms[s->nr_ksyms].module = mod[0] ? strdup(mod) : NULL;
		s->nr_ksyms++;
	}
	qsort(s->ksyms, s->nr_ksyms, sizeof(*s->ksyms), ksym_cmp);
	return 0;
}

const char *symbols_ksym(const struct symbols *s, uint64_t addr, uint64_t *symoff)
{
	size_t lo = 0, hi = s->nr_ksyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	*symoff = addr - s->ksyms[lo - 1].addr;
	return s->ksyms[lo - 1].name;
}

void symbols_report_unresolved(struct symbols *s, FILE *f)
{
	hashmap_for_each(&s->dsos, slot) {
		struct dso *d = slot->ptr;
		char hex[41] = "";

		if (!d || !d->unresolved)
			continue;
		for (int i = 0; i < d->bid_len; i++)
			sprintf(hex + 2 * i, "%02x", d->build_id[i]);
		switch (d->state) {
		case DSO_MISSING:
			fprintf(f, "memsight: %llu frames unnamed in '%s' (build-id %s): the file is not on this "
				   "machine; copy it to the same path%s\n",
				(unsigned long long)d->unresolved, d->path, hex[0] ? hex : "none",
				hex[0] ? " or install its debug file under /usr/lib/debug/.build-id/" : "");
			break;
		case DSO_MISMATCH:
			fprintf(f, "memsight: %llu frames unnamed in '%s': the file here has another build-id than "
				   "the recorded %s; install the recorded version or its debug file "
				   "/usr/lib/debug/.build-id/%.2s/%s.debug\n",
				(unsigned long long)d->unresolved, d->path, hex, hex, hex + 2);
			break;
		case DSO_NOTELF:
			fprintf(f, "memsight: %llu frames unnamed in '%s': not an ELF object here\n",
				(unsigned long long)d->unresolved, d->path);
			break;
		default:
			break;
		}
	}
}
