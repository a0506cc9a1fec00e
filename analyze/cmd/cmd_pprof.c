/*
 * analyze/cmd/cmd_pprof.c: memsight pprof, a profile.proto (gzipped, as
 * pprof, Grafana Pyroscope and Parca take it) of one event of one or more
 * traces.
 *
 * Owns the event's sample types, named as Go's heap profiles name them for
 * allocations, and the profile's tables: strings, mappings (one per object
 * by build-id, not per process, so the same code in many processes and
 * traces is one mapping), locations (object-relative addresses, with an
 * inline chain as extra lines), functions, and samples labelled with host,
 * pid and comm. The protobuf encoding is written here: the message has
 * nothing a varint and a length prefix cannot say.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "cmd.h"
#include "../model/allocs.h"
#include "../model/kallocs.h"
#include "../model/memops.h"
#include "../model/reach.h"
#include "../model/suppress.h"
#include "../model/stacktab.h"
#include "../stacks/symbols.h"
#include "../../formats/replace.h"

static const char usage_text[] =
	"usage: memsight pprof [options] -o FILE TRACE...\n"
	"\n"
	"A gzipped profile.proto of one event of the traces, for go tool pprof,\n"
	"Grafana Pyroscope (/ingest?format=pprof) and Parca. Several traces merge\n"
	"into one profile; each sample is labelled with host, pid and comm.\n"
	"\n"
	"Sample types: malloc and kmem: alloc_objects/count, alloc_space/bytes,\n"
	"inuse_objects/count, inuse_space/bytes (outstanding at the end, as leaks\n"
	"counts them: what it suppresses, and with --leak-check what is still\n"
	"reachable, left out);\n"
	"faults: faults/count; brk and mmap: calls/count, space/bytes.\n";

/* ---- protobuf --------------------------------------------------------- */

struct pb {
	unsigned char *p;
	size_t len, alloc;
	int oom;
};

static void pb_raw(struct pb *b, const void *d, size_t n)
{
	if (b->len + n > b->alloc) {
		size_t a = b->alloc ? b->alloc : 256;
		unsigned char *p;

		while (a < b->len + n)
			a *= 2;
		p = realloc(b->p, a);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->alloc = a;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;

	do {
		t[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	pb_raw(b, t, n);
}

/* A varint field; proto3 leaves zeros out. */
static void pb_int(struct pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

static void pb_bytes(struct pb *b, unsigned field, const void *d, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_raw(b, d, n);
}

/* A nested message, from its own buffer, which is emptied for reuse. */
static void pb_msg(struct pb *b, unsigned field, struct pb *m)
{
	pb_bytes(b, field, m->p, m->len);
	b->oom |= m->oom;
	m->len = 0;
}

/* A packed repeated varint field. */
static void pb_packed(struct pb *b, unsigned field, const uint64_t *v, size_t n, struct pb *tmp)
{
	for (size_t i = 0; i < n; i++)
		pb_varint(tmp, v[i]);
	pb_msg(b, field, tmp);
}

/* ---- the profile ------------------------------------------------------ */

enum { PF_SAMPLE_TYPE = 1, PF_SAMPLE, PF_MAPPING, PF_LOCATION, PF_FUNCTION, PF_STRING, PF_DROP_FRAMES,
       PF_TIME = 9, PF_DURATION,
       PF_PERIOD_TYPE, PF_PERIOD, PF_COMMENT, PF_DEFAULT_TYPE };

#define MAX_TYPES 4
#define MAX_FRAMES 512

struct profile {
	struct pb out;		/* Profile fields, but the string table */
	struct pb tmp, tmp2;	/* nested messages being built */
	struct hashmap strings;	/* string -> index + 1 */
	const char **strtab;
	size_t nr_strings, strtab_alloc;
	struct hashmap mappings; /* "path\tbuild-id" -> id */
	/* The Mapping messages apart, by id: pprof takes the first for the
	 * program's own binary (its File: line), so the program's goes first
	 * when the profile is written: the object named as the processes
	 * are, in most samples, else the one most stacks start in. */
	struct pb maps;
	size_t *map_end;	/* where mapping id's message ends in maps, by id - 1 */
	uint64_t *map_named;	/* samples with a frame in it, named as their process, by id - 1 */
	uint64_t *map_roots;	/* samples whose outermost user frame is in it, by id - 1 */
	size_t maps_alloc;
	struct hashmap functions; /* "name\tfile" -> id */
	struct hashmap locations; /* "mapping:address" -> id */
	uint64_t next_mapping, next_function, next_location;
	int nr_types;
	uint64_t first_time, duration;
	long pid;
	struct suppress sup;	/* what leaks leaves out, left out of inuse too */
	uint64_t left_out;	/* bytes still held that it left out */
};

static uint64_t str_id(struct profile *p, const char *s)
{
	struct hm_slot *slot;
	int created;

	if (!s || !s[0])
		return 0;
	slot = hashmap_str(&p->strings, s, &created);
	if (!slot) {
		p->out.oom = 1;
		return 0;
	}
	if (created) {
		if (p->nr_strings == p->strtab_alloc) {
			size_t n = p->strtab_alloc ? p->strtab_alloc * 2 : 1024;
			const char **v = realloc(p->strtab, n * sizeof(*v));

			if (!v) {
				p->out.oom = 1;
				return 0;
			}
			p->strtab = v;
			p->strtab_alloc = n;
		}
		slot->val = p->nr_strings;
		p->strtab[p->nr_strings++] = slot->skey;
	}
	return slot->val;
}

static void value_type(struct profile *p, unsigned field, const char *type, const char *unit)
{
	pb_int(&p->tmp, 1, str_id(p, type));
	pb_int(&p->tmp, 2, str_id(p, unit));
	pb_msg(&p->out, field, &p->tmp);
}

/* The id key has in m, made from *next when it is new (*fresh then set);
 * 0 when out of memory. */
static uint64_t intern(struct profile *p, struct hashmap *m, const char *key, uint64_t *next, int *fresh)
{
	int created = 0;
	struct hm_slot *slot = hashmap_str(m, key, &created);

	*fresh = 0;
	if (!slot) {
		p->out.oom = 1;
		return 0;
	}
	if (created)
		slot->val = ++*next;
	*fresh = created;
	return slot->val;
}

/* Whether f was named here: the kernel, code a runtime named, or an
 * object found with its build-id. A location of an object not found has
 * no lines, and its mapping says it has no functions, so that pprof, or a
 * backend that has the object by its build-id, names it there. */
static int frame_found(const struct frame *f)
{
	if (f->kernel)
		return 1;
	if (f->dso)
		return f->dso->state == DSO_OK && f->sym;
	return f->sym != NULL;
}

/* One mapping per object (or the kernel, or what has no object): the
 * addresses of its locations are offsets in the object's file. */
static uint64_t mapping_id(struct profile *p, const struct frame *f)
{
	char key[4096], bid[41] = "";
	const char *path = f->kernel ? "[kernel.kallsyms]" : f->obj ? f->obj : "[unknown]";
	uint64_t id;
	int fresh;

	if (f->dso && f->dso->bid_len)
		symbols_build_id_hex(f->dso->build_id, f->dso->bid_len, bid);
	snprintf(key, sizeof(key), "%s\t%s", path, bid);
	id = intern(p, &p->mappings, key, &p->next_mapping, &fresh);
	if (!fresh)
		return id;
	pb_int(&p->tmp, 1, id);
	pb_int(&p->tmp, 3, UINT64_MAX); /* memory_limit: every offset */
	pb_int(&p->tmp, 5, str_id(p, path));
	pb_int(&p->tmp, 6, str_id(p, bid));
	if (frame_found(f)) {
		pb_int(&p->tmp, 7, 1); /* has_functions */
		pb_int(&p->tmp, 8, 1); /* has_filenames */
		pb_int(&p->tmp, 9, 1); /* has_line_numbers */
		pb_int(&p->tmp, 10, 1); /* has_inline_frames */
	}
	pb_msg(&p->maps, PF_MAPPING, &p->tmp);
	if (id > p->maps_alloc) {
		size_t n = p->maps_alloc ? p->maps_alloc * 2 : 64;
		size_t *e = realloc(p->map_end, n * sizeof(*e));
		uint64_t *r = e ? realloc(p->map_roots, n * sizeof(*r)) : NULL;
		uint64_t *c = r ? realloc(p->map_named, n * sizeof(*c)) : NULL;

		if (e)
			p->map_end = e;
		if (r)
			p->map_roots = r;
		if (!c) {
			p->out.oom = 1;
			return id;
		}
		p->map_named = c;
		p->maps_alloc = n;
	}
	p->map_end[id - 1] = p->maps.len;
	p->map_roots[id - 1] = 0;
	p->map_named[id - 1] = 0;
	return id;
}

static uint64_t function_id(struct profile *p, const struct frame *f, const char *file)
{
	char key[4096], name[512];
	const char *fn = f->sym ? f->sym : frame_name(f, name, sizeof(name), 1);
	uint64_t id;
	int fresh;

	snprintf(key, sizeof(key), "%s\t%s", fn, file ? file : "");
	id = intern(p, &p->functions, key, &p->next_function, &fresh);
	if (!fresh)
		return id;
	pb_int(&p->tmp2, 1, id);
	pb_int(&p->tmp2, 2, str_id(p, fn));
	pb_int(&p->tmp2, 3, str_id(p, fn));
	pb_int(&p->tmp2, 4, str_id(p, file));
	pb_msg(&p->out, PF_FUNCTION, &p->tmp2);
	return id;
}

/* The location of fr[0..n): frames at one address, the inlined ones
 * first, the function they were inlined into last (pprof's Line order). */
static uint64_t location_id(struct profile *p, const struct frame *fr, int n)
{
	uint64_t map = mapping_id(p, &fr[n - 1]), addr, id;
	char key[128];
	int fresh;

	addr = fr[n - 1].kernel || !fr[n - 1].obj ? fr[n - 1].ip : fr[n - 1].file_off;
	/* A return address is one past its call: name the call. */
	snprintf(key, sizeof(key), "%llu:%llx:%d", (unsigned long long)map, (unsigned long long)addr, fr[n - 1].ret);
	id = intern(p, &p->locations, key, &p->next_location, &fresh);
	if (!fresh)
		return id;
	pb_int(&p->tmp, 1, id);
	pb_int(&p->tmp, 2, map);
	pb_int(&p->tmp, 3, addr);
	/* Not named here: the address alone, for whoever has the object. */
	if (!frame_found(&fr[n - 1]))
		n = 0;
	for (int i = 0; i < n; i++) {
		const char *file = NULL;
		int line = 0;
		struct pb l = { 0 };

		if (frame_srcline(&fr[i], &file, &line))
			file = NULL, line = 0;
		pb_int(&l, 1, function_id(p, &fr[i], file));
		pb_int(&l, 2, line > 0 ? (uint64_t)line : 0);
		pb_msg(&p->tmp, 4, &l);
		p->out.oom |= l.oom;
		free(l.p);
	}
	pb_msg(&p->out, PF_LOCATION, &p->tmp);
	return id;
}

static void label(struct profile *p, struct pb *sample, const char *key, const char *str, uint64_t num)
{
	pb_int(&p->tmp2, 1, str_id(p, key));
	if (str)
		pb_int(&p->tmp2, 2, str_id(p, str));
	else
		pb_int(&p->tmp2, 3, num);
	pb_msg(sample, 3, &p->tmp2);
}

/* One sample: the stack's locations, leaf first, its values, its labels. */
static void sample_add(struct profile *p, const struct stack_entry *e, const int64_t *values, const char *host)
{
	uint64_t locs[MAX_FRAMES], vals[MAX_TYPES];
	size_t nl = 0;
	struct pb s = { 0 }, tmp = { 0 };
	int any = 0;

	for (int t = 0; t < p->nr_types; t++)
		any |= (vals[t] = (uint64_t)values[t]) != 0;
	if (!any)
		return;
	struct frame fr[STACK_MAX_FRAMES];
	int nr = stack_entry_frames(e, fr, STACK_MAX_FRAMES);

	for (int i = 0; i < nr && nl < MAX_FRAMES;) {
		int j = i;

		/* Inlined frames share the address of the frame they are in. */
		while (j < nr - 1 && fr[j].inlined)
			j++;
		locs[nl++] = location_id(p, &fr[i], j - i + 1);
		i = j + 1;
	}
	/* For the main binary: the object the stack starts in, and the one
	 * named as its process (the kernel keeps 15 bytes of a name). */
	for (int i = nr, root = 1, named = 0; i-- > 0;) {
		const char *base;
		uint64_t m;

		if (fr[i].kernel || !fr[i].obj || !(m = mapping_id(p, &fr[i])) || m > p->maps_alloc)
			continue;
		p->map_roots[m - 1] += root;
		root = 0;
		base = strrchr(fr[i].obj, '/') ? strrchr(fr[i].obj, '/') + 1 : fr[i].obj;
		if (!named && e->comm && e->comm[0] && !strncmp(base, e->comm, 15) &&
		    (strlen(e->comm) >= 15 || !base[strlen(e->comm)])) {
			p->map_named[m - 1]++;
			named = 1;
		}
	}
	pb_packed(&s, 1, locs, nl, &tmp);
	pb_packed(&s, 2, vals, p->nr_types, &tmp);
	label(p, &s, "host", host, 0);
	label(p, &s, "comm", e->comm ? e->comm : "?", 0);
	label(p, &s, "pid", NULL, (uint64_t)e->pid);
	pb_msg(&p->out, PF_SAMPLE, &s);
	free(s.p);
	free(tmp.p);
}

/* ---- events ------------------------------------------------------------ */

enum source { SRC_MALLOC, SRC_KMEM, SRC_FAULTS, SRC_BRK, SRC_MMAP };

static const struct {
	const char *name;
	enum source src;
	int nr_types;
	const char *types[MAX_TYPES][2];
	const char *dflt; /* the type pprof shows first */
} sources[] = {
	{ "malloc", SRC_MALLOC, 4,
	  { { "alloc_objects", "count" }, { "alloc_space", "bytes" }, { "inuse_objects", "count" }, { "inuse_space", "bytes" } },
	  "inuse_space" },
	{ "kmem", SRC_KMEM, 4,
	  { { "alloc_objects", "count" }, { "alloc_space", "bytes" }, { "inuse_objects", "count" }, { "inuse_space", "bytes" } },
	  "inuse_space" },
	{ "faults", SRC_FAULTS, 1, { { "faults", "count" } }, "faults" },
	{ "brk", SRC_BRK, 2, { { "calls", "count" }, { "space", "bytes" } }, "space" },
	{ "mmap", SRC_MMAP, 2, { { "calls", "count" }, { "space", "bytes" } }, "space" },
};

struct ops_ctx {
	struct stacktab *tab;
	enum memop_kind kind;
	long pid;
	uint64_t period;	/* GROUP/N: what each recorded event stands for (the largest) */
};

static int on_op(struct session *s, const struct memop *op, void *arg)
{
	struct ops_ctx *c = arg;

	(void)s;
	if (c->pid >= 0 && op->pid != c->pid)
		return 0;
	if (!memop_is(op, c->kind))
		return 0;
	if (op->weight > c->period)
		c->period = op->weight;
	return stacktab_add(c->tab, s, op->stack, c->kind == MEMOP_FAULT ? 1 : op->grow) ? 0 : -1;
}

/* The values of each stack of one trace, then its samples. */
static int trace_add(struct profile *p, struct session *s, int src, char *err, size_t errlen)
{
	struct hashmap inuse; /* stack entry -> int64_t[2]: live count, bytes */
	struct stacktab tab, *t = &tab;
	struct allocs a;
	struct kallocs k;
	char host[256];
	uint64_t scale = 1, scale_weight = 1;
	int ret = -1, k_made = 0, kernel = sources[src].src == SRC_FAULTS || sources[src].src == SRC_KMEM;

	session_host(s, "hostname", host, sizeof(host), "?");
	hashmap_init(&inuse, 0);
	stacktab_init(&tab, kernel, 1);
	memset(&a, 0, sizeof(a));
	memset(&k, 0, sizeof(k));
	switch (sources[src].src) {
	case SRC_MALLOC:
		if (!allocs_recorded(s)) {
			snprintf(err, errlen, "'%s' has no allocation events: record them with 'memsight record -e malloc'",
				 s->path);
			goto out;
		}
		allocs_init(&a, s);
		if (allocs_replay(&a, s, NULL, NULL, err, errlen))
			goto out;
		/* With a --leak-check scan, in use as leaks counts it: what is
		 * still reachable is not. */
		if (s->nr_reach) {
			struct reach_stats rst = { 0 };

			if (reach_classify(s, &a, &rst, err, errlen))
				goto out;
		}
		t = &a.stacks;
		scale = a.sample;
		hashmap_for_each(&a.procs, pr) hashmap_for_each((struct hashmap *)pr->ptr, r) {
			struct alloc_rec *rec = r->ptr;
			struct frame fr[STACK_MAX_FRAMES];
			int64_t *v;

			if (!rec->stack || (p->pid >= 0 && rec->pid != p->pid) ||
			    (s->nr_reach && rec->reach == REACH_REACHABLE))
				continue;
			/* In use as leaks counts it: libc's one-time allocations
			 * (and --suppress) are no part of it. */
			if (suppress_match(&p->sup, fr, stack_entry_frames(rec->stack, fr, STACK_MAX_FRAMES))) {
				p->left_out += alloc_rec_bytes(rec) * a.sample;
				continue;
			}
			if (!(v = hashmap_u64_obj(&inuse, (uintptr_t)rec->stack, 2 * sizeof(*v))))
				goto oom;
			v[0] += alloc_rec_count(rec);
			v[1] += alloc_rec_bytes(rec);
		}
		break;
	case SRC_KMEM:
		if (cmd_need_group(s, "kernel allocation", "kmem", NULL)) {
			err[0] = 0;
			goto out;
		}
		kallocs_init(&k, s, p->pid);
		k_made = 1;
		if (kallocs_replay(&k, s, err, errlen))
			goto out;
		t = &k.stacks;
		scale = k.period;
		for (int c = 0; c < KA_NR; c++)
			hashmap_for_each(&k.live[c], r) {
				struct kalloc_rec *rec = r->ptr;
				int64_t *v;

				if (!rec->stack)
					continue;
				if (!(v = hashmap_u64_obj(&inuse, (uintptr_t)rec->stack, 2 * sizeof(*v))))
					goto oom;
				v[0]++;
				v[1] += rec->bytes;
			}
		break;
	default: {
		static const enum memop_kind kinds[] = { [SRC_FAULTS] = MEMOP_FAULT, [SRC_BRK] = MEMOP_BRK,
							  [SRC_MMAP] = MEMOP_MMAP };
		struct ops_ctx c = { &tab, kinds[sources[src].src], p->pid, 1 };

		if (cmd_need_group(s, sources[src].name, sources[src].name, NULL)) {
			err[0] = 0;
			goto out;
		}
		if (memops_replay(s, on_op, &c, err, errlen))
			goto out;
		/* GROUP/N: each recorded event counts for N; a brk's growth,
		 * from break to break, holds the calls not recorded already. */
		scale = c.period;
		scale_weight = c.kind == MEMOP_BRK ? 1 : c.period;
		if (c.period > 1)
			msg_note("'%s' kept one %s event in %llu: values are estimates, scaled by %llu", s->path,
				 sources[src].name, (unsigned long long)c.period, (unsigned long long)c.period);
	}
	}
	if (s->last_time > s->first_time) {
		/* Record times are CLOCK_MONOTONIC; the host META pairs it with
		 * the wall clock. */
		char m[32], w[32];
		uint64_t mono = strtoull(session_host(s, "clock_monotonic_ns", m, sizeof(m), "0"), NULL, 10);
		uint64_t real = strtoull(session_host(s, "clock_realtime_ns", w, sizeof(w), "0"), NULL, 10);
		uint64_t at = real && s->first_time >= mono ? real + (s->first_time - mono) : 0;

		if (at && (!p->first_time || at < p->first_time))
			p->first_time = at;
	}
	if (s->last_time > s->first_time)
		p->duration += s->last_time - s->first_time;
	stacktab_for_each(t, e) {
		int64_t v[MAX_TYPES] = { 0 };
		struct hm_slot *in = hashmap_u64_find(&inuse, (uintptr_t)e);
		const int64_t *live = in ? in->ptr : NULL;

		if (p->pid >= 0 && e->pid != p->pid)
			continue;
		if (sources[src].nr_types == 4) {
			v[0] = e->count * scale;
			v[1] = e->weight * scale;
			v[2] = live ? live[0] * scale : 0;
			v[3] = live ? live[1] * scale : 0;
		} else if (sources[src].nr_types == 2) {
			v[0] = e->count * scale;
			v[1] = e->weight * scale_weight;
		} else {
			v[0] = e->count * scale;
		}
		sample_add(p, e, v, host);
	}
	ret = p->out.oom ? -1 : 0;
	if (ret)
		snprintf(err, errlen, "out of memory");
	goto out;
oom:
	snprintf(err, errlen, "out of memory");
out:
	hashmap_for_each(&inuse, slot) free(slot->ptr);
	hashmap_release(&inuse);
	if (sources[src].src == SRC_MALLOC)
		allocs_release(&a);
	if (sources[src].src == SRC_KMEM && k_made)
		kallocs_release(&k);
	stacktab_release(&tab);
	return ret;
}

/* The whole message: the fields built so far, then the string table
 * (which every other field refers to), gzipped. */
static int profile_write(struct profile *p, const char *path)
{
	struct pb msg = { 0 };
	z_stream z = { 0 };
	unsigned char buf[65536];
	struct replace_out o = { 0 };
	int fd = 1, r, ret = -1;

	/* The main binary's mapping first, then the others as they came. */
	{
		size_t main_id = 0;

		for (size_t i = 0; i < p->next_mapping && i < p->maps_alloc; i++)
			if (p->map_named[i] > (main_id ? p->map_named[main_id - 1] : 0))
				main_id = i + 1;
		for (size_t i = 0, named = main_id; !named && i < p->next_mapping && i < p->maps_alloc; i++)
			if (p->map_roots[i] > (main_id ? p->map_roots[main_id - 1] : 0))
				main_id = i + 1;
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < p->next_mapping && i < p->maps_alloc; i++) {
				size_t start = i ? p->map_end[i - 1] : 0;

				if ((pass == 0) != (i + 1 == main_id) || (pass == 0 && !main_id))
					continue;
				pb_raw(&msg, p->maps.p + start, p->map_end[i] - start);
			}
	}
	pb_raw(&msg, p->out.p, p->out.len);
	pb_bytes(&msg, PF_STRING, "", 0); /* string 0 is "" */
	for (size_t i = 1; i < p->nr_strings; i++)
		pb_bytes(&msg, PF_STRING, p->strtab[i], strlen(p->strtab[i]));
	if (msg.oom || p->out.oom || p->maps.oom) {
		free(msg.p);
		return msg_error("out of memory");
	}
	if (strcmp(path, "-")) {
		if (replace_open(&o, path)) {
			free(msg.p);
			return msg_error("cannot create '%s': %s", path, replace_strerror(&o));
		}
		/* Written by fd alone: the stream never buffers. */
		fd = fileno(o.f);
	}
	/* windowBits 15 + 16: a gzip stream, as pprof expects. */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		msg_error("cannot start gzip compression");
		goto out;
	}
	z.next_in = msg.p;
	z.avail_in = msg.len;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		r = deflate(&z, Z_FINISH);
		for (size_t off = 0, n = sizeof(buf) - z.avail_out; off < n;) {
			ssize_t w = write(fd, buf + off, n - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				msg_error("cannot write '%s': %s", path, strerror(w < 0 ? errno : ENOSPC));
				deflateEnd(&z);
				goto out;
			}
			off += w;
		}
	} while (r == Z_OK);
	deflateEnd(&z);
	if (r != Z_STREAM_END) {
		msg_error("gzip compression failed");
		goto out;
	}
	ret = 0;
out:
	/* Written whole, or the file that was there stays. */
	if (o.f && replace_finish(&o, !ret) && !ret)
		ret = msg_error("cannot write '%s': %s", path, strerror(errno));
	free(msg.p);
	return ret;
}

static int opt_event(const struct opt *o, const char *arg, void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (!strcmp(arg, sources[i].name)) {
			*(int *)o->value = (int)i;
			return 0;
		}
	return msg_error("unknown event '%s' for a profile: use malloc, kmem, faults, brk or mmap", arg);
}

int cmd_pprof(int argc, char **argv, struct analyze_opts *a)
{
	struct profile p = { .pid = -1 };
	const char *out = NULL, *weight = NULL, *supfile = NULL;
	int src = -1, ret = 1, dflt = -1, defaults = 1;
	uint64_t period = 1;
	const struct opt options[] = {
		OPT_CALLBACK('e', "event", &src, "EVENT",
			     "malloc (default when recorded), kmem, faults (default\n"
			     "otherwise), brk or mmap",
			     opt_event),
		OPT_STRING('w', "weight", &weight, "TYPE",
			   "the sample type pprof shows first: for malloc and kmem\n"
			   "alloc_objects, alloc_space, inuse_objects or inuse_space\n"
			   "(default); for brk and mmap calls or space (default)"),
		OPT_STRING('o', "output", &out, "FILE",
			   "where the gzipped profile goes (- for standard output, the\n"
			   "default when it is not a terminal)"),
		OPT_PID(&p.pid),
		OPT_SUPPRESSIONS(&supfile, &defaults),
		OPT_LEAK_HEURISTICS,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	char err[512];
	int r = opts_parse(argc, argv, options, usage_text, a);

	if (r >= 0)
		return r;
	if (optind == argc) {
		msg_error("give one or more trace files (see memsight pprof -h)");
		return 2;
	}
	/* As perf script and go tool pprof -proto do: standard output when
	 * it is a file or a pipe. */
	if (!out && !isatty(1))
		out = "-";
	if (!out) {
		msg_error("give the profile's file with -o FILE, or redirect standard output (the profile is gzipped "
			  "binary)");
		return 2;
	}
	if (!strcmp(out, "-") && isatty(1)) {
		msg_error("-o -: the profile is gzipped binary; redirect standard output to a file");
		return 2;
	}
	/* Before the replay: a file it must not replace fails now. */
	if (strcmp(out, "-") && replace_check(out, REPLACE_GZIP, "a pprof profile"))
		return 1;
	if (suppress_setup(&p.sup, defaults, supfile, err, sizeof(err))) {
		msg_error("%s", err);
		return 2;
	}
	hashmap_init(&p.strings, 1);
	hashmap_init(&p.mappings, 1);
	hashmap_init(&p.functions, 1);
	hashmap_init(&p.locations, 1);
	/* String 0 is "", as the format requires. */
	p.strtab = malloc(1024 * sizeof(*p.strtab));
	if (!p.strtab) {
		msg_error("out of memory");
		goto out;
	}
	p.strtab_alloc = 1024;
	p.strtab[p.nr_strings++] = "";
	for (int i = optind; i < argc; i++) {
		struct session s;

		if (cmd_open(&s, argv[i], a))
			goto out;
		if (src < 0)
			src = allocs_recorded(&s) ? 0 : 2;
		if (i == optind) {
			p.nr_types = sources[src].nr_types;
			for (int t = 0; t < p.nr_types; t++)
				value_type(&p, PF_SAMPLE_TYPE, sources[src].types[t][0], sources[src].types[t][1]);
			if (weight) {
				for (int t = 0; t < p.nr_types; t++)
					if (!strcmp(weight, sources[src].types[t][0]))
						dflt = t;
				if (dflt < 0) {
					msg_error("no sample type '%s' for %s: use %s%s%s%s%s%s%s", weight, sources[src].name,
						  sources[src].types[0][0], p.nr_types > 1 ? ", " : "",
						  p.nr_types > 1 ? sources[src].types[1][0] : "", p.nr_types > 2 ? ", " : "",
						  p.nr_types > 2 ? sources[src].types[2][0] : "", p.nr_types > 3 ? " or " : "",
						  p.nr_types > 3 ? sources[src].types[3][0] : "");
					cmd_close(&s, 1);
					goto out;
				}
			}
		}
		err[0] = 0;
		if (trace_add(&p, &s, src, err, sizeof(err))) {
			if (err[0])
				msg_error("%s", err);
			cmd_close(&s, 1);
			goto out;
		}
		if (sources[src].src == SRC_MALLOC) {
			long long n = atoll(session_host(&s, "alloc_sample", err, sizeof(err), "1"));

			if (n > 1)
				period = n;
		}
		cmd_close(&s, 0);
	}
	if (src < 0) {
		msg_error("give at least one trace");
		ret = 2;
		goto out;
	}
	/* The sampling the values were scaled by (-s N), and which type first. */
	value_type(&p, PF_PERIOD_TYPE, sources[src].types[0][0], sources[src].types[0][1]);
	pb_int(&p.out, PF_PERIOD, period);
	pb_int(&p.out, PF_TIME, p.first_time);
	pb_int(&p.out, PF_DURATION, p.duration);
	/* As Go's heap profiles hide the allocator, so the top of each stack
	 * is the code that asked for the memory. */
	if (sources[src].src == SRC_MALLOC)
		pb_int(&p.out, PF_DROP_FRAMES,
		       str_id(&p, "(malloc|calloc|realloc|reallocarray|free|posix_memalign|aligned_alloc|memalign|valloc|"
				  "pvalloc|mallocx|rallocx|operator new.*|operator delete.*)"));
	pb_int(&p.out, PF_DEFAULT_TYPE,
	       str_id(&p, dflt >= 0 ? sources[src].types[dflt][0] : sources[src].dflt));
	if (p.left_out)
		msg_note("inuse leaves out %llu bytes still held that leaks suppresses too (libc's one-time allocations%s; "
			 "--no-default-suppressions keeps them)",
			 (unsigned long long)p.left_out, p.sup.nr ? " and --suppress" : "");
	ret = profile_write(&p, out) ? 1 : 0;
out:
	suppress_release(&p.sup);
	free(p.out.p);
	free(p.maps.p);
	free(p.map_end);
	free(p.map_roots);
	free(p.map_named);
	free(p.tmp.p);
	free(p.tmp2.p);
	free(p.strtab);
	hashmap_release(&p.strings);
	hashmap_release(&p.mappings);
	hashmap_release(&p.functions);
	hashmap_release(&p.locations);
	return ret;
}
