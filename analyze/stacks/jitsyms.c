/*
 * analyze/stacks/jitsyms.c: perf maps and jitdumps read from a trace (see
 * jitsyms.h).
 */
#include "jitsyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char jitsyms_object[] = "JIT";

static const char *const kind_names[JIT_KINDS] = { "perf-map", "jitdump" };

/* The jitdump format, as perf's tools/perf/util/jitdump.h defines it. */
#define JITDUMP_MAGIC 0x4A695444u
#define JITDUMP_HEADER_MIN 40
#define JITDUMP_FLAGS_ARCH_TIMESTAMP 1ull
enum { JR_CODE_LOAD = 0, JR_CODE_MOVE = 1, JR_CODE_DEBUG_INFO = 2, JR_CODE_CLOSE = 3, JR_CODE_UNWINDING_INFO = 4 };
#define JR_PREFIX 16
#define JR_LOAD_FIXED (JR_PREFIX + 40)
#define JR_MOVE_FIXED (JR_PREFIX + 48)
#define JR_DEBUG_FIXED (JR_PREFIX + 16)
/* unwinding_size, eh_frame_hdr_size, mapped_size; then the .eh_frame and
 * the .eh_frame_hdr that follows it. */
#define JR_UNWIND_FIXED (JR_PREFIX + 24)
/* The .eh_frame_hdr encodings every writer uses (perf's genelf, CPython,
 * V8): a pc-relative sdata4 pointer to the .eh_frame, a udata4 count, and
 * a table of sdata4 pairs relative to the header's start. */
#define EH_PE_PCREL_SDATA4 0x1b
#define EH_PE_UDATA4 0x03
#define EH_PE_DATAREL_SDATA4 0x3b
#define EH_HDR_TABLE 12

struct jit_table {
	struct jit_sym *v;	/* sorted by start, then seq */
	size_t nr;
	uint64_t *maxend;	/* the largest end of v[0..i] */
	struct jit_line *lines;
};

struct jit_proc {
	struct jit_table t[JIT_KINDS];
};

const char *jitsyms_kind_name(enum jit_kind k)
{
	return k < JIT_KINDS ? kind_names[k] : "?";
}

void jitsyms_init(struct jitsyms *j)
{
	memset(j, 0, sizeof(*j));
	hashmap_init(&j->procs, 0);
}

static void table_free(struct jit_table *t)
{
	free(t->v);
	free(t->maxend);
	free(t->lines);
	memset(t, 0, sizeof(*t));
}

void jitsyms_release(struct jitsyms *j)
{
	hashmap_for_each(&j->procs, s) {
		struct jit_proc *p = s->ptr;

		for (int k = 0; k < JIT_KINDS; k++)
			table_free(&p->t[k]);
		free(p);
	}
	hashmap_release(&j->procs);
	for (size_t i = 0; i < j->nr_files; i++)
		free(j->files[i].path);
	free(j->files);
	for (size_t i = 0; i < j->nr_mem; i++)
		free(j->mem[i]);
	free(j->mem);
	memset(j, 0, sizeof(*j));
}

static int fail(char *err, size_t errlen, const char *fmt, const char *what)
{
	snprintf(err, errlen, fmt, what);
	return -1;
}

/* A table being filled. */
struct build {
	struct jit_sym *v;
	size_t nr, alloc;
	struct jit_line *lines;
	size_t nr_lines, lines_alloc;
	uint64_t bad;
};

static int build_sym(struct build *b, uint64_t start, uint64_t size, uint64_t time, const char *name)
{
	if (!size || start + size < start) {
		b->bad++;
		return 0;
	}
	if (b->nr == b->alloc) {
		size_t n = b->alloc ? b->alloc * 2 : 256;
		struct jit_sym *v = realloc(b->v, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->alloc = n;
	}
	b->v[b->nr] = (struct jit_sym){ .start = start, .end = start + size, .time = time, .seq = b->nr, .name = name };
	b->nr++;
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* "START SIZE NAME", both numbers hex with or without 0x; the name runs
 * to the end of the line. The payload is the copy names point into. */
static int perfmap_parse(struct build *b, char *text, size_t len)
{
	char *p = text, *end = text + len;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p)), *q, *e;
		uint64_t start, size;

		if (!nl)
			nl = end;
		*nl = 0;
		q = p;
		p = nl + 1;
		if (!*q)
			continue;
		errno = 0;
		start = strtoull(q, &e, 16);
		if (e == q || *e != ' ' || errno) {
			b->bad++;
			continue;
		}
		q = e + 1;
		size = strtoull(q, &e, 16);
		if (e == q || *e != ' ' || errno || !e[1]) {
			b->bad++;
			continue;
		}
		if (build_sym(b, start, size, 0, e + 1))
			return -ENOMEM;
	}
	return 0;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Debug lines waiting for the code load at their address. */
struct pending_lines {
	uint64_t code_addr;
	size_t first, nr;
};

static int line_cmp(const void *a, const void *b)
{
	const struct jit_line *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int debug_parse(struct build *b, const unsigned char *r, size_t size, struct pending_lines *pl)
{
	uint64_t nr = rd64(r + JR_PREFIX + 8);
	size_t off = JR_DEBUG_FIXED;
	const char *prev = NULL;

	pl->code_addr = rd64(r + JR_PREFIX);
	pl->first = b->nr_lines;
	pl->nr = 0;
	for (uint64_t i = 0; i < nr; i++) {
		const char *name, *nul;

		if (size - off < 17 || !(nul = memchr(r + off + 16, 0, size - off - 16))) {
			b->bad++;
			break;
		}
		name = (const char *)r + off + 16;
		if ((unsigned char)name[0] == 0xff && name[1] == 0)
			name = prev ? prev : "";
		if (b->nr_lines == b->lines_alloc) {
			size_t n = b->lines_alloc ? b->lines_alloc * 2 : 256;
			struct jit_line *v = realloc(b->lines, n * sizeof(*v));

			if (!v)
				return -ENOMEM;
			b->lines = v;
			b->lines_alloc = n;
		}
		b->lines[b->nr_lines++] = (struct jit_line){ rd64(r + off), name, (int)rd32(r + off + 8) };
		pl->nr++;
		prev = name;
		off = (size_t)((const unsigned char *)nul + 1 - r);
	}
	if (pl->nr)
		qsort(b->lines + pl->first, pl->nr, sizeof(*b->lines), line_cmp);
	return 0;
}

/* An unwinding record, for the code load that follows it. */
struct pending_unwind {
	const unsigned char *eh_frame;
	uint32_t len;
	const unsigned char *hdr;
	uint32_t hdr_len;
};

/* Where the runtime placed the .eh_frame of code loaded at code_addr,
 * from its .eh_frame_hdr: the first entry of the header's table is the
 * code's start, relative to the header, and the header's own pointer to
 * the .eh_frame must agree. Returns -1 for a header of another form. */
static int unwind_place(const struct pending_unwind *pu, uint64_t code_addr, uint64_t *eh_frame_addr)
{
	const unsigned char *h = pu->hdr;
	int32_t to_frame, first;
	uint64_t hdr_addr;

	if (pu->hdr_len < EH_HDR_TABLE + 8 || h[0] != 1 || h[1] != EH_PE_PCREL_SDATA4 || h[2] != EH_PE_UDATA4 ||
	    h[3] != EH_PE_DATAREL_SDATA4 || !rd32(h + 8))
		return -1;
	to_frame = (int32_t)rd32(h + 4);
	first = (int32_t)rd32(h + EH_HDR_TABLE);
	hdr_addr = code_addr - (uint64_t)(int64_t)first;
	*eh_frame_addr = hdr_addr - pu->len;
	return hdr_addr + 4 + (uint64_t)(int64_t)to_frame == *eh_frame_addr ? 0 : -1;
}

/* The records of a jitdump, up to the last whole one. Lines are kept as
 * indexes into b->lines in the syms' lines field until the table is
 * made. */
static int jitdump_parse(struct build *b, unsigned char *d, size_t len, struct jit_file *f, char *err,
			 size_t errlen)
{
	struct hashmap names;	/* code_index -> name + 1 */
	struct pending_lines pl = { 0 };
	struct pending_unwind pu = { 0 };
	size_t off;
	int r = 0;

	if (len < JITDUMP_HEADER_MIN || rd32(d) != JITDUMP_MAGIC)
		return fail(err, errlen, "%s", len < JITDUMP_HEADER_MIN ? "no jitdump header" : "not a jitdump (bad magic)");
	off = rd32(d + 8);
	if (off < JITDUMP_HEADER_MIN || off > len)
		return fail(err, errlen, "%s", "a jitdump header of a size out of bounds");
	f->arch_time = !!(rd64(d + 32) & JITDUMP_FLAGS_ARCH_TIMESTAMP);
	hashmap_init(&names, 0);
	while (!r && len - off >= JR_PREFIX) {
		const unsigned char *rec = d + off;
		uint32_t id = rd32(rec), size = rd32(rec + 4);
		uint64_t time = f->arch_time ? 0 : rd64(rec + 8);

		if (size < JR_PREFIX || size > len - off) {
			/* Cut short: the file was being written, or was cut at
			 * the bound. */
			b->bad++;
			break;
		}
		off += size;
		if (id == JR_CODE_LOAD && size >= JR_LOAD_FIXED) {
			uint64_t addr = rd64(rec + JR_PREFIX + 16), csize = rd64(rec + JR_PREFIX + 24);
			uint64_t index = rd64(rec + JR_PREFIX + 32);
			const char *name = (const char *)rec + JR_LOAD_FIXED;
			struct hm_slot *s;

			if (!memchr(name, 0, size - JR_LOAD_FIXED)) {
				b->bad++;
				continue;
			}
			if ((s = hashmap_u64(&names, index, NULL)))
				s->ptr = (void *)name;
			r = build_sym(b, addr, csize, time, name);
			if (!r && pl.nr && pl.code_addr == addr && b->nr && b->v[b->nr - 1].start == addr) {
				b->v[b->nr - 1].lines = (const struct jit_line *)(uintptr_t)(pl.first + 1);
				b->v[b->nr - 1].nr_lines = (uint32_t)pl.nr;
			}
			if (!r && pu.eh_frame && b->nr && b->v[b->nr - 1].start == addr) {
				struct jit_sym *sym = &b->v[b->nr - 1];

				if (unwind_place(&pu, addr, &sym->eh_frame_addr))
					b->bad++;
				else {
					sym->eh_frame = pu.eh_frame;
					sym->eh_frame_len = pu.len;
				}
			}
			pl.nr = 0;
			pu.eh_frame = NULL;
		} else if (id == JR_CODE_MOVE && size >= JR_MOVE_FIXED) {
			struct hm_slot *s = hashmap_u64_find(&names, rd64(rec + JR_PREFIX + 40));

			if (!s) {
				b->bad++;
				continue;
			}
			r = build_sym(b, rd64(rec + JR_PREFIX + 24), rd64(rec + JR_PREFIX + 32), time, s->ptr);
		} else if (id == JR_CODE_DEBUG_INFO && size >= JR_DEBUG_FIXED) {
			r = debug_parse(b, rec, size, &pl);
		} else if (id == JR_CODE_UNWINDING_INFO && size >= JR_UNWIND_FIXED) {
			uint64_t all = rd64(rec + JR_PREFIX), hdr = rd64(rec + JR_PREFIX + 8);

			if (all > size - JR_UNWIND_FIXED || hdr > all || all - hdr > UINT32_MAX || !(all - hdr)) {
				b->bad++;
				continue;
			}
			pu = (struct pending_unwind){ rec + JR_UNWIND_FIXED, (uint32_t)(all - hdr),
						      rec + JR_UNWIND_FIXED + (all - hdr), (uint32_t)hdr };
		} else if (id == JR_CODE_CLOSE) {
			break;
		}
	}
	hashmap_release(&names);
	return r;
}

static int table_make(struct jit_table *t, struct build *b)
{
	table_free(t);
	if (b->nr && !(t->maxend = malloc(b->nr * sizeof(*t->maxend))))
		return -ENOMEM;
	/* Lines were kept as indexes: the array is final now. */
	for (size_t i = 0; i < b->nr; i++)
		if (b->v[i].lines)
			b->v[i].lines = b->lines + ((uintptr_t)b->v[i].lines - 1);
	if (b->nr)
		qsort(b->v, b->nr, sizeof(*b->v), sym_cmp);
	for (size_t i = 0; i < b->nr; i++)
		t->maxend[i] = i && t->maxend[i - 1] > b->v[i].end ? t->maxend[i - 1] : b->v[i].end;
	t->v = b->v;
	t->nr = b->nr;
	t->lines = b->lines;
	return 0;
}

int jitsyms_add(struct jitsyms *j, const void *payload, size_t len, char *err, size_t errlen)
{
	const char *nl = memchr(payload, '\n', len);
	char path[4096], kind[16];
	struct build b = { 0 };
	struct jit_file f = { 0 };
	struct jit_proc *p;
	struct hm_slot *s;
	unsigned long long size;
	unsigned char *copy;
	void **mem;
	size_t hl;
	int r;

	if (!nl || (size_t)(nl - (const char *)payload) >= sizeof(path))
		return fail(err, errlen, "%s", "no header line");
	hl = (size_t)(nl - (const char *)payload) + 1;
	{
		char head[sizeof(path) + 64];

		memcpy(head, payload, hl - 1);
		head[hl - 1] = 0;
		if (sscanf(head, "%d\t%d\t%15[^\t]\t%llu\t%4095[^\n]", &f.pid, &f.nspid, kind, &size, path) != 5 ||
		    f.pid <= 0)
			return fail(err, errlen, "%s", "a header that is not PID, NSPID, KIND, SIZE and PATH");
	}
	if (!strcmp(kind, kind_names[JIT_PERFMAP]))
		f.kind = JIT_PERFMAP;
	else if (!strcmp(kind, kind_names[JIT_JITDUMP]))
		f.kind = JIT_JITDUMP;
	else
		return fail(err, errlen, "an unknown kind '%s'", kind);
	f.size = size;
	f.kept = len - hl;
	/* A copy of the file, NUL-terminated, that names point into. */
	if (!(copy = malloc(f.kept + 1)) || !(mem = realloc(j->mem, (j->nr_mem + 1) * sizeof(*mem)))) {
		free(copy);
		return fail(err, errlen, "%s", "out of memory");
	}
	j->mem = mem;
	j->mem[j->nr_mem++] = copy;
	memcpy(copy, (const char *)payload + hl, f.kept);
	copy[f.kept] = 0;
	r = f.kind == JIT_PERFMAP ? perfmap_parse(&b, (char *)copy, f.kept)
				  : jitdump_parse(&b, copy, f.kept, &f, err, errlen);
	if (r) {
		free(b.v);
		free(b.lines);
		if (r == -ENOMEM)
			return fail(err, errlen, "%s", "out of memory");
		return -1;
	}
	f.syms = b.nr;
	f.bad = b.bad;
	if (!(f.path = strdup(path)) || !(s = hashmap_u64(&j->procs, (uint32_t)f.pid, NULL)) ||
	    (!s->ptr && !(s->ptr = calloc(1, sizeof(struct jit_proc))))) {
		free(f.path);
		free(b.v);
		free(b.lines);
		return fail(err, errlen, "%s", "out of memory");
	}
	p = s->ptr;
	if (table_make(&p->t[f.kind], &b)) {
		free(f.path);
		free(b.v);
		free(b.lines);
		return fail(err, errlen, "%s", "out of memory");
	}
	/* A later copy of the same file stands for it in the list too. */
	for (size_t i = 0; i < j->nr_files; i++)
		if (j->files[i].pid == f.pid && j->files[i].kind == f.kind) {
			free(j->files[i].path);
			j->files[i] = f;
			return 0;
		}
	{
		struct jit_file *v = realloc(j->files, (j->nr_files + 1) * sizeof(*v));

		if (!v) {
			free(f.path);
			return fail(err, errlen, "%s", "out of memory");
		}
		j->files = v;
		j->files[j->nr_files++] = f;
	}
	return 0;
}

int jitsyms_has(const struct jitsyms *j, int pid)
{
	return j->procs.nr && hashmap_u64_find(&j->procs, (uint32_t)pid);
}

/* The entry covering addr that was there at time: the latest loaded at or
 * before it (a perf map's, all at 0: the last written); if all came
 * later, the first that came. */
static const struct jit_sym *table_find(const struct jit_table *t, uint64_t addr, uint64_t time)
{
	const struct jit_sym *best = NULL, *first = NULL;
	size_t lo = 0, hi = t->nr;

	/* The last entry starting at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && t->maxend[i] > addr;) {
		const struct jit_sym *e = &t->v[i];

		if (addr >= e->end)
			continue;
		if (e->time <= time && (!best || e->time > best->time || (e->time == best->time && e->seq > best->seq)))
			best = e;
		if (!first || e->time < first->time || (e->time == first->time && e->seq < first->seq))
			first = e;
	}
	return best ? best : first;
}

const struct jit_sym *jitsyms_find(struct jitsyms *j, int pid, uint64_t addr, uint64_t time)
{
	struct hm_slot *s = j->procs.nr ? hashmap_u64_find(&j->procs, (uint32_t)pid) : NULL;
	const struct jit_sym *e;

	if (!s)
		return NULL;
	/* The jitdump knows when; the perf map only what was last there. */
	if ((e = table_find(&((struct jit_proc *)s->ptr)->t[JIT_JITDUMP], addr, time)))
		return e;
	return table_find(&((struct jit_proc *)s->ptr)->t[JIT_PERFMAP], addr, time);
}

int jitsyms_line(const struct jit_sym *sym, uint64_t off, int ret, const char **file, int *line)
{
	uint64_t addr = sym->start + off - (ret && off ? 1 : 0);
	const struct jit_line *best = NULL;

	for (uint32_t i = 0; i < sym->nr_lines && sym->lines[i].addr <= addr; i++)
		best = &sym->lines[i];
	if (!best || !best->file[0])
		return -1;
	*file = best->file;
	*line = best->line;
	return 0;
}
