/*
 * analyze/replay/session.c: META reading and the replay: the events and
 * their kinds, losses, the processes' maps as they change, the choice of
 * samples, progress; sample.c decodes a record, chains.c makes its stack,
 * cgroups.c places it in its container, fields.c reads its tracepoint
 * fields and frames.c names its frames.
 *
 * Tracepoint payloads go to libtraceevent with the format text stored in
 * the trace, never this machine's tracefs.
 */
#include "session.h"
#include "session_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <traceevent/event-parse.h>

#include "../../formats/catalog.h"
#include "../../formats/msg.h"
#include "../stacks/unwind.h"

static int session_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static void classify_alloc(struct sess_event *e)
{
	static const char *const entry_fields[] = { "size", "nmemb",  "ptr",  "memptr", "align", "caller",
						    "insn", "rate",   "weight", "kind", "fn" };
	const char *fn = strchr(e->d.name, ':');
	int ret, k;

	fn = fn ? fn + 1 : e->d.name;
	k = alloc_fn_lookup(fn, strlen(fn), &ret);
	e->kind = EVK_OTHER;
	if (k >= 0) {
		e->fn = k;
		e->kind = ret ? EVK_ALLOC_RET : EVK_ALLOC_ENTRY;
	}
	if (!e->tp || e->kind == EVK_OTHER)
		return;
	if (ret) {
		e->fields[AF_RET] = tep_find_field(e->tp, "ret");
		e->fields[AF_RET_IP] = tep_find_field(e->tp, "__probe_ret_ip");
		e->fields[AF_RET_FN] = tep_find_field(e->tp, "fn");
	} else {
		for (int f = 0; f < SESS_MAX_FIELDS; f++)
			e->fields[f] = tep_find_field(e->tp, entry_fields[f]);
	}
}

static void classify(struct sess_event *e)
{
	if (!strcmp(e->d.group, "malloc")) {
		classify_alloc(e);
		return;
	}
#define KIND(group, event, type, config, stack, addr, kind, ...) { event, EVK_##kind, { __VA_ARGS__ } },
	static const struct {
		const char *name;
		enum ev_kind kind;
		const char *fields[SESS_MAX_FIELDS];
	} kinds[] = {
		CATALOG_EVENTS(KIND)
		{ CATALOG_TRACKING_EVENT, EVK_TRACKING, { NULL } },
		{ CATALOG_DEEP_EVENT, EVK_DEEP_STACK, { NULL } },
	};
#undef KIND

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strcmp(e->d.name, kinds[i].name))
			continue;
		e->kind = kinds[i].kind;
		e->field_names = kinds[i].fields;
		for (int f = 0; f < SESS_MAX_FIELDS && kinds[i].fields[f]; f++)
			if (e->tp)
				e->fields[f] = tep_find_field(e->tp, kinds[i].fields[f]);
		return;
	}
	e->kind = EVK_OTHER;
}

/* Whether list ("brk,mmap") holds name. */
static int list_has(const char *list, const char *name)
{
	size_t l = strlen(name);

	for (const char *p = list; (p = strstr(p, name)); p += l)
		if ((p == list || p[-1] == ',') && (!p[l] || p[l] == ','))
			return 1;
	return 0;
}

/* Each syscall carrier's calls as events of their own, right after it,
 * named and filed as catalog.h's rows (earlier recorders recorded each as
 * a tracepoint of its own): the views know one event per call, and the
 * carrier's group ("brk,mmap") is theirs. */
static int syscalls_expand(struct session *s)
{
#define SYSCALL_ROW_TP 0
#define SYSCALL_ROW_SYSCALL 1
#define SYSCALL_ROW_PAST 0
#define SYSCALL_ROW_SW 0
#define SYSCALL_ROW_SW_ELSE 0
#define ROW(group, event, type, config, ...) { group, event, SYSCALL_ROW_##type, config },
	static const struct {
		const char *group, *name;
		int syscall;
		int64_t nr;
	} rows[] = { CATALOG_EVENTS(ROW) };
#undef ROW
	const size_t nr_rows = sizeof(rows) / sizeof(rows[0]);
	size_t carriers = 0, n = 0;
	struct sess_event *evs;

	for (size_t i = 0; i < s->nr_evs; i++)
		carriers += !strcmp(s->evs[i].d.name, CATALOG_SYSCALL_CARRIER);
	if (!carriers)
		return 0;
	if (!(evs = calloc(s->nr_evs + carriers * nr_rows, sizeof(*evs))))
		return -1;
	for (size_t i = 0; i < s->nr_evs; i++) {
		struct sess_event *c = &evs[n++];

		*c = s->evs[i];
		if (strcmp(c->d.name, CATALOG_SYSCALL_CARRIER))
			continue;
		c->kind = EVK_SYSCALLS;
		c->call_nr = c->tp ? tep_find_field(c->tp, CATALOG_SYSCALL_CARRIER_ID) : NULL;
		for (size_t r = 0; r < nr_rows; r++) {
			struct sess_event *v = &evs[n];

			if (!rows[r].syscall || !list_has(c->d.group, rows[r].group) ||
			    c->nr_calls == sizeof(c->calls) / sizeof(c->calls[0]))
				continue;
			v->d.attr_size = c->d.attr_size;
			v->d.name = strdup(rows[r].name);
			v->d.group = strdup(rows[r].group);
			v->d.format = strdup(c->d.format);
			v->d.attr = malloc(c->d.attr_size ? c->d.attr_size : 1);
			if (!v->d.name || !v->d.group || !v->d.format || !v->d.attr)
				goto fail;
			memcpy(v->d.attr, c->d.attr, c->d.attr_size);
			v->attr = c->attr;
			v->tp = c->tp;
			classify(v);
			c->calls[c->nr_calls].nr = rows[r].nr;
			c->calls[c->nr_calls++].ev = n++;
		}
	}
	free(s->evs);
	s->evs = evs;
	s->nr_evs = n;
	return 0;
fail:
	/* The events copied are still the session's: release only those made
	 * here, the one left half made at n among them. */
	for (size_t i = 0, k = 0; i <= n; i++) {
		if (k < s->nr_evs && evs[i].d.name == s->evs[k].d.name) {
			k++;
			continue;
		}
		trace_event_desc_release(&evs[i].d);
	}
	free(evs);
	return -1;
}

void session_syscall_file(struct session *s, struct sample *smp)
{
	const struct sess_event *c = smp->ev;
	unsigned long long nr;

	if (!c->call_nr || !smp->raw || c->call_nr->offset + c->call_nr->size > (int)smp->raw_size)
		return;
	tep_read_number_field(c->call_nr, smp->raw, &nr);
	for (size_t k = 0; k < c->nr_calls; k++)
		if (c->calls[k].nr == (int64_t)nr) {
			smp->ev = &s->evs[c->calls[k].ev];
			return;
		}
}

static struct dso *vdso_dso(struct session *s, uint64_t len);

struct open_state {
	struct session *s;
	char *err;
	size_t errlen;
	long long_size;
};

/* Embedded objects are megabytes: only their headers are read here. */
static int on_meta_ref(uint32_t kind, size_t chunk, void *arg)
{
	struct open_state *o = arg;
	struct session *s = o->s;

	if (kind == TRACE_META_REACH) {
		/* Memory scans: read by the command that wants them. */
		size_t *v = realloc(s->reach_chunks, (s->nr_reach + 1) * sizeof(*v));

		if (!v)
			return session_fail(o->err, o->errlen, "out of memory");
		s->reach_chunks = v;
		v[s->nr_reach++] = chunk;
		return 0;
	}
	if (symbols_embedded_ref(&s->syms, &s->r, chunk) == -ENOMEM)
		return session_fail(o->err, o->errlen, "out of memory");
	return 0;
}

/* --cgroup: its path below the hierarchy the trace's cgroup ids are of
 * (given as that, or as the directory under the recording box's mount). */
static int cgroup_want_set(struct session *s, char *err, size_t errlen)
{
	const char *want = s->o.cgroup;
	char root[4096] = "";
	size_t n;

	if (!s->cgroup_paths.nr)
		return session_fail(err, errlen,
			    "--cgroup: '%s' has no cgroups: its samples were not recorded system-wide (record with -a)",
			    s->path);
	if (session_host(s, "cgroup_root", root, sizeof(root), NULL) && (n = strlen(root)) &&
	    !strncmp(want, root, n) && (want[n] == '/' || !want[n]))
		want = want[n] ? want + n : "/";
	s->cgroup_want = strdup(want);
	if (!s->cgroup_want)
		return session_fail(err, errlen, "out of memory");
	n = strlen(s->cgroup_want);
	while (n > 1 && s->cgroup_want[n - 1] == '/')
		s->cgroup_want[--n] = 0;
	hashmap_for_each(&s->cgroup_paths, slot)
		if (session_cgroup_under(slot->ptr, s->cgroup_want))
			return 0;
	return session_fail(err, errlen, "--cgroup '%s' names no cgroup of '%s' (its cgroups are those under %s; memsight report "
		    "lists the processes' cgroups)", s->o.cgroup, s->path, root[0] ? root : "the recording box's root");
}

/* Whether boot is this machine's boot id: the trace was recorded since it
 * last started, so its pids name this machine's processes. */
static int session_same_boot(const char *boot)
{
	char buf[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	return buf[0] && !strcmp(buf, boot);
}

static int on_meta(uint32_t kind, const void *data, size_t len, void *arg)
{
	struct open_state *o = arg;
	struct session *s = o->s;

	switch (kind) {
	case TRACE_META_HOST: {
		char v[64];

		free(s->host);
		s->host = malloc(len + 1);
		if (!s->host)
			return session_fail(o->err, o->errlen, "out of memory");
		memcpy(s->host, data, len);
		s->host[len] = 0;
		s->host_len = len;
		if (!trace_kv_get(s->host, len, "recorder_pid", v, sizeof(v)))
			s->recorder_pid = atoi(v);
		if (!trace_kv_get(s->host, len, "boot_id", v, sizeof(v)))
			s->syms.o.same_boot = session_same_boot(v);
		if (!trace_kv_get(s->host, len, "page_size", v, sizeof(v)))
			s->page_size = atoi(v);
		if (!trace_kv_get(s->host, len, "long_size", v, sizeof(v)))
			o->long_size = atoi(v);
		tep_set_long_size(s->tep, o->long_size);
		tep_set_page_size(s->tep, s->page_size);
		break;
	}
	case TRACE_META_HEADER_PAGE:
		/* Only needed for ring-buffer pages, which memsight never stores;
		 * parsed so libtraceevent knows the kernel's long size. */
		tep_parse_header_page(s->tep, (char *)data, len, o->long_size);
		break;
	case TRACE_META_EVENT: {
		struct sess_event *e;
		struct sess_event *v = realloc(s->evs, (s->nr_evs + 1) * sizeof(*v));

		if (!v)
			return session_fail(o->err, o->errlen, "out of memory");
		s->evs = v;
		e = &s->evs[s->nr_evs];
		memset(e, 0, sizeof(*e));
		if (trace_event_desc_decode(data, len, &e->d))
			return session_fail(o->err, o->errlen, "an event description in the trace is malformed");
		/* The same event again, opened on more processes while
		 * recording: its ids join the first description's. */
		for (size_t i = 0; i < s->nr_evs; i++) {
			struct sess_event *f = &s->evs[i];
			uint64_t *ids;

			if (strcmp(f->d.name, e->d.name) || f->d.attr_size != e->d.attr_size ||
			    e->d.attr_size < offsetof(struct perf_event_attr, config) + sizeof(f->attr.config) ||
			    memcmp(&f->attr.config, &((struct perf_event_attr *)e->d.attr)->config, sizeof(f->attr.config)))
				continue;
			if (!(ids = realloc(f->d.ids, (f->d.nr_ids + e->d.nr_ids) * sizeof(*ids))))
				return session_fail(o->err, o->errlen, "out of memory");
			f->d.ids = ids;
			for (uint32_t k = 0; k < e->d.nr_ids; k++) {
				uint32_t j = 0;

				while (j < f->d.nr_ids && ids[j] != e->d.ids[k])
					j++;
				if (j == f->d.nr_ids)
					ids[f->d.nr_ids++] = e->d.ids[k];
			}
			trace_event_desc_release(&e->d);
			return 0;
		}
		s->nr_evs++;
		memcpy(&e->attr, e->d.attr, e->d.attr_size < sizeof(e->attr) ? e->d.attr_size : sizeof(e->attr));
		if (e->attr.type == PERF_TYPE_TRACEPOINT && e->d.format[0]) {
			char sys[128];
			const char *colon = strchr(e->d.name, ':');

			snprintf(sys, sizeof(sys), "%.*s", colon ? (int)(colon - e->d.name) : 0, e->d.name);
			if (tep_parse_format(s->tep, &e->tp, e->d.format, strlen(e->d.format), sys))
				e->tp = NULL;
		}
		classify(e);
		break;
	}
	case TRACE_META_PROCESS:
		machine_load_snapshot(&s->m, data, len);
		session_nspids_load(s, data, len, "nspid ");
		s->nr_snapshots++;
		break;
	case TRACE_META_CGROUPS:
		session_cgroups_load(s, data, len);
		break;
	case TRACE_META_NSPIDS:
		session_nspids_load(s, data, len, NULL);
		break;
	case TRACE_META_JITMAP: {
		char why[192];

		/* One bad copy costs its names, not the analysis. */
		if (jitsyms_add(&s->jit, data, len, why, sizeof(why)) && !s->jit_bad++)
			snprintf(s->jit_err, sizeof(s->jit_err), "%s", why);
		break;
	}
	case TRACE_META_KSYMS:
		if (symbols_ksyms_load(&s->syms, data, len))
			return session_fail(o->err, o->errlen, "out of memory");
		break;
	case TRACE_META_OOM: {
		struct oom_context *v = realloc(s->ooms, (s->nr_ooms + 1) * sizeof(*v)), *c;
		char val[64];

		if (!v)
			return session_fail(o->err, o->errlen, "out of memory");
		s->ooms = v;
		c = &v[s->nr_ooms];
		memset(c, 0, sizeof(*c));
		if (!(c->text = malloc(len + 1)))
			return session_fail(o->err, o->errlen, "out of memory");
		memcpy(c->text, data, len);
		c->text[len] = 0;
		if (!trace_kv_get(c->text, len, "time", val, sizeof(val)))
			c->time = strtoull(val, NULL, 10);
		if (!trace_kv_get(c->text, len, "victim_pid", val, sizeof(val)))
			c->victim = atoi(val);
		if (!trace_kv_get(c->text, len, "trigger_pid", val, sizeof(val)))
			c->trigger = atoi(val);
		s->nr_ooms++;
		break;
	}
	case TRACE_META_LOST: {
		char val[32];
		uint64_t n;

		if (!trace_kv_get(data, len, "lost", val, sizeof(val)) && (n = strtoull(val, NULL, 10)) > s->lost_live)
			s->lost_live = n;
		break;
	}
	case TRACE_META_BUILDIDS:
	case TRACE_META_SNAPSHOT:
	case TRACE_META_OBJECTS:
	case TRACE_META_PROBES:
	case TRACE_META_STATS: {
		char **dst = kind == TRACE_META_STATS	     ? &s->stats
			     : kind == TRACE_META_SNAPSHOT ? &s->snapshot
			     : kind == TRACE_META_OBJECTS  ? &s->objects
			     : kind == TRACE_META_PROBES   ? &s->probes
							   : &s->buildids;
		size_t *dlen = kind == TRACE_META_STATS	     ? &s->stats_len
			       : kind == TRACE_META_SNAPSHOT ? &s->snapshot_len
			       : kind == TRACE_META_OBJECTS  ? &s->objects_len
			       : kind == TRACE_META_PROBES   ? &s->probes_len
							     : &s->buildids_len;
		char *p = realloc(*dst, *dlen + len + 1);

		if (!p)
			return session_fail(o->err, o->errlen, "out of memory");
		memcpy(p + *dlen, data, len);
		*dlen += len;
		p[*dlen] = 0;
		*dst = p;
		break;
	}
	default:
		/* A newer recorder's META kind: skip it. */
		break;
	}
	return 0;
}

static int on_loss(const struct trace_loss *l, void *arg)
{
	struct open_state *o = arg;

	/* The deep-stacks rings hold nothing but what completes other
	 * stacks: what they lost costs no finding. */
	if (l->ring == TRACE_LOSS_DEEP) {
		o->s->lost_deep += l->lost;
		return 0;
	}
	o->s->lost += l->lost;
	if (l->cpu == TRACE_LOSS_UNREPORTED)
		o->s->lost_unreported += l->lost;
	return 0;
}

static int id_cmp(const void *a, const void *b)
{
	const struct sess_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The runtimes' files that were cut or bad: said once, as their frames
 * may stay unnamed. */
static void jit_warn(struct session *s)
{
	uint64_t bad = 0, files = 0;
	const struct jit_file *first = NULL;

	for (size_t i = 0; i < s->jit.nr_files; i++)
		if (s->jit.files[i].bad) {
			bad += s->jit.files[i].bad;
			files++;
			first = first ? first : &s->jit.files[i];
		}
	if (s->jit_bad)
		msg_warn("'%s': %llu copies of a perf map or jitdump could not be read (%s) and were skipped", s->path,
			 (unsigned long long)s->jit_bad, s->jit_err);
	if (bad)
		msg_warn("'%s': %llu lines or records of %llu perf maps or jitdumps (first '%s' of pid %d) are cut short "
			 "or malformed and were skipped",
			 s->path, (unsigned long long)bad, (unsigned long long)files, first->path, first->pid);
}

/* META alloc_fns: "SYMBOL SYMBOL ...", numbered from 0. */
static void alloc_fns_read(struct session *s)
{
	char v[4096];
	const char *p = session_host(s, "alloc_fns", v, sizeof(v), "");
	int n = 0;

	for (size_t i = 0; i < sizeof(s->alloc_fn_of) / sizeof(s->alloc_fn_of[0]); i++)
		s->alloc_fn_of[i] = -1;
	while (*p && n < (int)(sizeof(s->alloc_fn_of) / sizeof(s->alloc_fn_of[0]))) {
		size_t l = strcspn(p, " ");

		for (int k = 0; k < AF_SAMPLED_FIRST; k++)
			if (strlen(alloc_fns[k].symbol) == l && !strncmp(alloc_fns[k].symbol, p, l))
				s->alloc_fn_of[n] = (int16_t)k;
		n++;
		p += l;
		p += *p == ' ';
	}
}

/* --last: the window ends at the trace's last sample, found in each
 * stream's last chunk that holds one (a stream's chunks come in time
 * order: one found, its earlier chunks are passed over). */
static int session_since_set(struct session *s, char *err, size_t errlen)
{
	uint32_t done[256];
	size_t nr_done = 0;
	uint64_t end = 0;

	for (size_t i = s->r.nr_chunks; i-- > 0;) {
		const struct trace_chunk *c = &s->r.chunks[i];
		uint64_t t;
		size_t k = 0;

		while (k < nr_done && done[k] != c->stream)
			k++;
		if (c->type != TRACE_CHUNK_DATA || k < nr_done)
			continue;
		if (trace_chunk_last_sample(&s->r, i, &t, err, errlen))
			return -1;
		if (t > end)
			end = t;
		if (t && nr_done < sizeof(done) / sizeof(*done))
			done[nr_done++] = c->stream;
	}
	s->since = end > s->o.time_last ? end - s->o.time_last : 0;
	return 0;
}

int session_open(struct session *s, const char *path, const struct analyze_opts *opts, char *err, size_t errlen)
{
	static const struct analyze_opts defaults = { .unwinder = UNWIND_LIBDW };
	struct open_state o = { s, err, errlen, sizeof(long) };
	struct trace_handler h = { .meta = on_meta,
				   .loss = on_loss,
				   .meta_by_ref = 1u << TRACE_META_OBJECT | 1u << TRACE_META_REACH,
				   .meta_ref = on_meta_ref };
	size_t n = 0;

	int r;

	memset(s, 0, sizeof(*s));
	s->o = opts ? *opts : defaults;
	s->page_size = 4096;
	r = symbols_init(&s->syms, &s->o.sym);
	machine_init(&s->m, &s->syms);
	hashmap_init(&s->cgroup_paths, 0);
	hashmap_init(&s->proc_cgroup, 0);
	hashmap_init(&s->nspids, 0);
	jitsyms_init(&s->jit);
	if (r == -EINVAL)
		return session_fail(err, errlen, "--debuginfod has no server to ask: set DEBUGINFOD_URLS or give --debuginfod=URL");
	if (r == -ENOENT)
		return session_fail(err, errlen, "--debuginfod needs the debuginfod client library (%s): apt-get install libdebuginfod1",
			    "libdebuginfod.so.1");
	if (r)
		return session_fail(err, errlen, "cannot start the debuginfod client");
	s->path = strdup(path);
	s->tep = tep_alloc();
	if (!s->tep || !s->path)
		return session_fail(err, errlen, "out of memory");
	tep_set_file_bigendian(s->tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(s->tep, tep_is_local_bigendian(s->tep) ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	/* --last: of a ring, only the segments that can hold the window. */
	if (trace_reader_open_recent(&s->r, path, s->o.time_last, err, errlen))
		return -1;
	if (trace_read(&s->r, &h, &o, err, errlen))
		return -1;
	/* The /proc snapshots of -p targets came before the embedded objects
	 * were known: their vDSO mappings get the image now. */
	hashmap_for_each(&s->m.procs, slot) {
		struct process *p = slot->ptr;

		for (size_t i = 0; i < p->nr_maps; i++)
			if (!p->maps[i].dso && !strcmp(p->maps[i].name, TRACE_OBJECT_VDSO))
				p->maps[i].dso = vdso_dso(s, p->maps[i].end - p->maps[i].start);
	}
	jit_warn(s);
	{
		char v[16];

		s->max_stack = atoi(session_host(s, "perf_event_max_stack", v, sizeof(v), "0"));
	}
	alloc_fns_read(s);
	if (syscalls_expand(s))
		return session_fail(err, errlen, "out of memory");
	if (!s->nr_evs)
		return session_fail(err, errlen, "'%s' holds no event descriptions%s", path,
			    s->r.stop[0] ? " (the trace is cut short before them)" : "");
	for (size_t i = 0; i < s->nr_evs; i++)
		n += s->evs[i].d.nr_ids;
	s->ids = malloc((n ? n : 1) * sizeof(*s->ids));
	if (!s->ids)
		return session_fail(err, errlen, "out of memory");
	for (size_t i = 0; i < s->nr_evs; i++)
		for (size_t k = 0; k < s->evs[i].d.nr_ids; k++)
			s->ids[s->nr_ids++] = (struct sess_id){ s->evs[i].d.ids[k], &s->evs[i] };
	if (s->nr_ids > 1)
		qsort(s->ids, s->nr_ids, sizeof(*s->ids), id_cmp);
	if (s->o.time_last && session_since_set(s, err, errlen))
		return -1;
	return s->o.cgroup ? cgroup_want_set(s, err, errlen) : 0;
}

void session_say_reads(const struct session *s)
{
	if (s->o.read_stats && s->path) {
		size_t data = 0;
		char grew[64] = "";

		for (size_t i = 0; i < s->r.nr_chunks; i++)
			data += s->r.chunks[i].type == TRACE_CHUNK_DATA;
		/* A live trace followed: the first look, then one a refresh. */
		if (s->r.looks)
			snprintf(grew, sizeof(grew), ", as it grew, in %u looks", s->r.looks + 1);
		if (s->r.looks && s->r.ring.moved)
			snprintf(grew + strlen(grew), sizeof(grew) - strlen(grew), ", the window moved on %u time%s",
				 s->r.ring.moved, s->r.ring.moved == 1 ? "" : "s");
		msg_note("read '%s': %u replay%s, %llu data chunks read of the %zu it holds%s", s->path, s->r.replays,
			 s->r.replays == 1 ? "" : "s", (unsigned long long)s->r.data_read, data, grew);
	}
}

void session_release(struct session *s)
{
	if (s->shared_release)
		s->shared_release(s->shared);
	s->shared = NULL;
	s->shared_release = NULL;
	session_say_reads(s);
	for (size_t i = 0; i < s->nr_evs; i++)
		trace_event_desc_release(&s->evs[i].d);
	free(s->evs);
	free(s->ids);
	for (size_t i = 0; i < s->nr_ooms; i++)
		free(s->ooms[i].text);
	free(s->ooms);
	free(s->host);
	free(s->stats);
	free(s->snapshot);
	free(s->objects);
	free(s->cgroup_want);
	hashmap_release(&s->cgroup_paths);
	hashmap_release(&s->proc_cgroup);
	hashmap_release(&s->nspids);
	free(s->buildids);
	free(s->probes);
	free(s->at_end);
	free(s->on_code_map);
	free(s->on_exec);
	free(s->reach_chunks);
	free(s->path);
	if (s->tep)
		tep_free(s->tep);
	machine_release(&s->m);
	if (s->uw)
		unwind_free(s->uw);
	symbols_release(&s->syms);
	jitsyms_release(&s->jit);
	trace_reader_release(&s->r);
}

const char *session_host(struct session *s, const char *key, char *buf, size_t len, const char *def)
{
	if (s->host && !trace_kv_get(s->host, s->host_len, key, buf, len))
		return buf;
	return def;
}

long long session_stat(const struct session *s, const char *key, long long def)
{
	char v[64];

	if (s->stats && !trace_kv_get(s->stats, s->stats_len, key, v, sizeof(v)))
		return atoll(v);
	return def;
}

void session_warn_incomplete(struct session *s)
{
	if (s->r.live)
		msg_note("'%s' is still being recorded: results cover what its recorder has written so far", s->path);
	if (s->r.stop[0])
		msg_warn("'%s' %s; results cover what comes before", s->path,
			s->r.stop);
}

int session_incomplete(const struct session *s)
{
	/* Records a full disk kept from the file are lost as surely. */
	return session_lost(s) || s->r.stop[0] || session_stat(s, "records_not_written", 0) > 0;
}

uint64_t session_lost(const struct session *s)
{
	uint64_t lost = s->lost > s->lost_records ? s->lost : s->lost_records;

	return lost > s->lost_live ? lost : s->lost_live;
}

uint64_t session_lost_deep(const struct session *s)
{
	return s->lost_deep > s->lost_deep_records ? s->lost_deep : s->lost_deep_records;
}

uint64_t session_loss_horizon(const struct session *s)
{
	/* What the recorder counted beyond the records has no time. */
	if (s->lost_unreported || s->r.stop[0] || (s->lost_records && !s->last_loss) ||
	    (s->lost_live > s->lost && s->lost_live > s->lost_records))
		return UINT64_MAX;
	return s->last_loss;
}

int session_group_recorded(struct session *s, const char *group)
{
	for (size_t i = 0; i < s->nr_evs; i++)
		if (!strcmp(s->evs[i].d.group, group))
			return 1;
	return 0;
}

int session_fault_kinds(const struct session *s)
{
	for (size_t i = 0; i < s->nr_evs; i++)
		if (s->evs[i].kind == EVK_FAULT && s->evs[i].tp)
			return 1;
	return 0;
}

uint64_t session_group_period(struct session *s, const char *group)
{
	for (size_t i = 0; i < s->nr_evs; i++)
		if (!strcmp(s->evs[i].d.group, group) && s->evs[i].attr.sample_period > 1)
			return s->evs[i].attr.sample_period;
	return 1;
}

struct replay_state {
	struct session *s;
	session_sample_fn fn;
	void *arg;
	uint64_t bad;
	uint64_t unselected;	/* samples --pid, --tid, --comm or --time left out */
	int following;		/* the file has been looked at again (replay_follow) */
	char *err;
	size_t errlen;
};

/* The kernel's vDSO, when the recorder embedded the image (it has no
 * file, and its mappings no build-id): for a mapping of its size only, as
 * a 32-bit process's vDSO is another image. */
static struct dso *vdso_dso(struct session *s, uint64_t len)
{
	struct embedded_info ei;

	if (!s->vdso_looked) {
		s->vdso_looked = 1;
		for (size_t i = 0; !symbols_embedded_get(&s->syms, i, &ei); i++)
			if (!strcmp(ei.path, TRACE_OBJECT_VDSO) && ei.bid_len > 0) {
				s->vdso = symbols_dso(&s->syms, ei.path, ei.build_id, ei.bid_len);
				s->vdso_size = ei.original_size;
				break;
			}
	}
	return s->vdso && len == s->vdso_size ? s->vdso : NULL;
}

static void on_mmap2(struct session *s, const unsigned char *rec, size_t len)
{
	uint32_t pid, tid, prot, flags;
	uint64_t addr, mlen, pgoff;
	const char *fname;
	struct map mp = { 0 };
	const struct perf_event_header *h = (const void *)rec;

	if (len < 80)
		return;
	memcpy(&pid, rec + 8, 4);
	memcpy(&tid, rec + 12, 4);
	memcpy(&addr, rec + 16, 8);
	memcpy(&mlen, rec + 24, 8);
	memcpy(&pgoff, rec + 32, 8);
	memcpy(&prot, rec + 64, 4);
	memcpy(&flags, rec + 68, 4);
	fname = (const char *)rec + 72;
	if (!memchr(fname, 0, len - 72))
		return;
	mp.start = addr;
	mp.end = addr + mlen;
	mp.pgoff = pgoff;
	mp.prot = prot;
	mp.flags = flags;
	mp.name = machine_intern(&s->m, fname[0] ? fname : "//anon");
	/* "//anon" and friends are anonymous memory, not files. */
	if (fname[0] == '/' && fname[1] != '/') {
		unsigned char bid[20];
		int bl = 0;

		if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			bl = rec[40] > 20 ? 20 : rec[40];
			memcpy(bid, rec + 44, bl);
		} else if (s->buildids) {
			/* The recorder read it from the file at the end. */
			const char *p = s->buildids, *e = s->buildids + s->buildids_len;
			size_t fl = strlen(fname);

			while (p < e) {
				const char *nl = memchr(p, '\n', e - p), *tab = memchr(p, '\t', (nl ? nl : e) - p);

				if (tab && (size_t)((nl ? nl : e) - tab - 1) == fl && !memcmp(tab + 1, fname, fl)) {
					for (const char *x = p; x + 1 < tab && bl < 20; x += 2) {
						unsigned v;

						sscanf(x, "%2x", &v);
						bid[bl++] = v;
					}
					break;
				}
				p = nl ? nl + 1 : e;
			}
		}
		mp.dso = symbols_dso(&s->syms, fname, bid, bl);
		symbols_dso_mapped_by(mp.dso, pid);
	} else if (!strcmp(fname, TRACE_OBJECT_VDSO)) {
		mp.dso = vdso_dso(s, mlen);
	}
	machine_map(&s->m, pid, &mp);
	if ((prot & PROT_EXEC) && fname[0] == '/' && fname[1] != '/')
		for (size_t i = 0; i < s->nr_on_code_map; i++)
			s->on_code_map[i].fn(s->on_code_map[i].arg, s, pid, &mp);
}

/* --pid, --tid, --comm and --time: whether a sample is one the command
 * asked for. */
static int sample_selected(struct session *s, const struct sample *smp)
{
	const struct analyze_opts *o = &s->o;
	int in = !o->nr_pids;

	for (int i = 0; i < o->nr_pids && !in; i++)
		in = (int)smp->pid == o->pids[i];
	if (!in)
		return 0;
	in = !o->nr_tids;
	for (int i = 0; i < o->nr_tids && !in; i++)
		in = (int)smp->tid == o->tids[i];
	if (!in)
		return 0;
	if (o->nr_comms) {
		const char *comm = machine_comm(&s->m, smp->pid, smp->tid);

		in = 0;
		for (int i = 0; i < o->nr_comms && !in; i++)
			in = comm && !strcmp(comm, o->comms[i]);
		if (!in)
			return 0;
	}
	if (o->time_from && smp->time - s->first_time < o->time_from)
		return 0;
	if (o->time_to && smp->time - s->first_time > o->time_to)
		return 0;
	if (smp->time < s->since)
		return 0;
	return 1;
}

static int on_record(const void *data, size_t len, uint32_t stream, uint64_t time, void *arg)
{
	struct replay_state *st = arg;
	struct session *s = st->s;
	const unsigned char *rec = data;
	const struct perf_event_header *h = data;
	uint32_t pid, tid, ppid, ptid;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
	case STACKDUMP_PACKED_SAMPLE: {
		struct sample smp;

		if (session_sample_parse(s, rec, len, &smp)) {
			st->bad++;
			return 0;
		}
		if (!s->first_time || time < s->first_time)
			s->first_time = time;
		if (time > s->last_time)
			s->last_time = time;
		if ((int)smp.pid == s->recorder_pid && !s->include_recorder)
			return 0;
		if (smp.cgroup) {
			struct hm_slot *slot = hashmap_u64(&s->proc_cgroup, smp.pid, NULL);

			if (slot)
				slot->val = smp.cgroup;
		}
		if (s->cgroup_want && !session_cgroup_under(session_cgroup_path(s, smp.cgroup), s->cgroup_want))
			return 0;
		if (!sample_selected(s, &smp)) {
			st->unselected++;
			return 0;
		}
		/* A deep-stacks sample is no finding: its stack is there for
		 * the thread's stacks that ran past their dump to join. */
		if (smp.ev->kind == EVK_DEEP_STACK) {
			if (!s->no_unwind && smp.regs)
				session_sample_unwind(s, &smp);
			smp.ev->nr_samples++;
			return 0;
		}
		/* A dump with the registers to unwind it from (the ip among
		 * them) is unwound; a dump that holds a result (the stack
		 * pointer alone) is read by the model that wants it. */
		if ((smp.ev->attr.sample_type & PERF_SAMPLE_STACK_USER) &&
		    (smp.ev->attr.sample_regs_user >> SAMPLE_REG_IP & 1) && !s->no_unwind) {
			/* Not a free the wrapper's stream gave without its stack,
			 * where one event holds both probes: no stack was asked
			 * of it, none stopped short. */
			if (smp.regs || smp.stack.size || smp.ev->kind != EVK_ALLOC_ENTRY)
				session_sample_unwind(s, &smp);
		} else if (smp.nr_ips && !smp.ev->attr.exclude_callchain_user) {
			session_sample_fp_cut(s, &smp);
			if (smp.ev->kind == EVK_ALLOC_ENTRY)
				session_sample_put_caller(s, &smp);
		}
		smp.ev->nr_samples++;
		s->nr_samples++;
		return st->fn ? st->fn(s, &smp, st->arg) : 0;
	}
	case PERF_RECORD_MMAP2:
		on_mmap2(s, rec, len);
		break;
	case PERF_RECORD_CGROUP:
		if (len > 16 && memchr(rec + 16, 0, len - 16)) {
			uint64_t id;

			memcpy(&id, rec + 8, 8);
			session_cgroup_add(s, id, (const char *)rec + 16);
		}
		break;
	case PERF_RECORD_COMM:
		if (len > 16) {
			char comm[17];

			memcpy(&pid, rec + 8, 4);
			memcpy(&tid, rec + 12, 4);
			snprintf(comm, sizeof(comm), "%.*s", (int)strnlen((const char *)rec + 16, len - 16),
				 (const char *)rec + 16);
			machine_set_comm(&s->m, pid, tid, comm, !!(h->misc & PERF_RECORD_MISC_COMM_EXEC));
			/* An exec after --time's window is outside it: what it
			 * releases was still held at the window's end. */
			if (s->o.time_to && time > s->first_time && time - s->first_time > s->o.time_to)
				break;
			for (size_t i = 0; (h->misc & PERF_RECORD_MISC_COMM_EXEC) && i < s->nr_on_exec; i++)
				s->on_exec[i].fn(s->on_exec[i].arg, s, pid, time);
		}
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (len >= 24) {
			memcpy(&pid, rec + 8, 4);
			memcpy(&ppid, rec + 12, 4);
			memcpy(&tid, rec + 16, 4);
			memcpy(&ptid, rec + 20, 4);
			if (h->type == PERF_RECORD_FORK)
				machine_fork(&s->m, ppid, ptid, pid, tid);
			else
				machine_exit(&s->m, pid, tid);
		}
		break;
	case PERF_RECORD_LOST:
		if (len >= 24 && stream >= TRACE_STREAM_DEEP && stream < TRACE_STREAM_WRAPPER) {
			uint64_t lost;

			memcpy(&lost, rec + 16, 8);
			s->lost_deep_records += lost;
		} else if (len >= 24) {
			uint64_t lost;

			memcpy(&lost, rec + 16, 8);
			s->lost_records += lost;
			/* The kernel writes it once room is back: the events it
			 * counts were lost before this time. */
			if (time > s->last_loss)
				s->last_loss = time;
		}
		break;
	}
	return 0;
}

static void replay_progress(size_t done, size_t total, void *arg)
{
	const struct replay_state *st = arg;

	msg_progress("reading '%s': %zu%% (%zu of %zu chunks, %llu samples)", st->s->path,
		     total ? done * 100 / total : 100, done, total, (unsigned long long)st->s->nr_samples);
}

/* The replay cannot follow the trace on: the command's hook is told. */
static int follow_again(struct replay_state *st)
{
	st->s->follow(st->s, st->s->follow_arg, 1);
	return SESSION_REPLAY_AGAIN;
}

/* A live trace followed as it grows: between looks, the command's hook;
 * then the chunks written since. */
static int replay_follow(void *arg)
{
	struct replay_state *st = arg;
	struct session *s = st->s;
	int r = s->follow(s, s->follow_arg, 0);
	unsigned moved = s->r.ring.moved;

	if (r == SESSION_FOLLOW_SHOW)
		return 0;
	if (r)
		return r;
	st->following = 1;
	/* A ring read on past its window's start: what a --last window
	 * counts is newer, and a hook drops the rest. */
	s->r.ring_onward = s->o.time_last || s->on_window.fn;
	if (trace_reader_more(&s->r, s->path, st->err, st->errlen))
		return follow_again(st);
	if (s->r.ring.moved != moved) {
		/* As a reading of the window alone would begin. */
		if (s->first_time < s->r.ring.first_time)
			s->first_time = s->r.ring.first_time;
		if (s->on_window.fn && s->on_window.fn(s->on_window.arg, s, s->r.ring.first_time))
			return follow_again(st);
	}
	/* Its recorder gone, the trace ends where it is: --last's window
	 * ends there. */
	if (!s->r.live && s->o.time_last && session_since_set(s, st->err, st->errlen))
		return -1;
	return 0;
}

/* The records' clock, CLOCK_MONOTONIC, now: a live trace of this boot's
 * (one from another machine says 0). */
static uint64_t replay_now(void *arg)
{
	struct replay_state *st = arg;
	struct timespec ts;
	char v[16];

	if (!st->s->syms.o.same_boot || strcmp(session_host(st->s, "clock_id", v, sizeof(v), ""), "1") ||
	    clock_gettime(CLOCK_MONOTONIC, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --last, followed: the replay takes every record, but hands on only the
 * samples of the window before the look's horizon (s->since); the
 * follower stops where the window begins, and its child shows the window
 * from there. */
static uint64_t replay_stop_at(void *arg, uint64_t horizon)
{
	struct replay_state *st = arg;
	struct session *s = st->s;
	uint64_t start = horizon > s->o.time_last ? horizon - s->o.time_last : 0;

	if (!s->o.time_last || s->follow_shown)
		return horizon;
	s->since = start;
	return start;
}

/* The META written while recording that a replay under way takes in:
 * the objects carried (named when a stack first needs them), the counts
 * of events lost, the pids of processes in containers and the kernel
 * symbols each segment of a ring restates. Any other (a process, an
 * event, the statistics of a recording's end) changes what the samples
 * read before it mean: the replay must start again. The first trace_read
 * visit hands every META again, which session_open took already. */
static int follow_meta(uint32_t kind, const void *data, size_t len, void *arg)
{
	struct replay_state *st = arg;
	struct open_state o = { st->s, st->err, st->errlen, sizeof(long) };

	if (!st->following)
		return 0;
	if (kind != TRACE_META_LOST && kind != TRACE_META_OBJECTS && kind != TRACE_META_NSPIDS &&
	    kind != TRACE_META_KSYMS)
		return follow_again(st);
	return on_meta(kind, data, len, &o);
}

static int follow_meta_ref(uint32_t kind, size_t chunk, void *arg)
{
	struct replay_state *st = arg;
	struct open_state o = { st->s, st->err, st->errlen, sizeof(long) };

	if (!st->following)
		return 0;
	return kind == TRACE_META_OBJECT ? on_meta_ref(kind, chunk, &o) : follow_again(st);
}

static int follow_loss(const struct trace_loss *l, void *arg)
{
	struct replay_state *st = arg;
	struct open_state o = { st->s, st->err, st->errlen, sizeof(long) };

	return st->following ? on_loss(l, &o) : 0;
}

int session_replay(struct session *s, session_sample_fn fn, void *arg, char *err, size_t errlen)
{
	struct replay_state st = { s, fn, arg, 0, 0, 0, err, errlen };
	struct trace_handler h = { .record = on_record, .progress = replay_progress };
	int r;

	if (s->follow) {
		h.follow = replay_follow;
		h.stop_at = replay_stop_at;
		h.now = replay_now;
		h.meta = follow_meta;
		h.meta_by_ref = 1u << TRACE_META_OBJECT | 1u << TRACE_META_REACH;
		h.meta_ref = follow_meta_ref;
		h.loss = follow_loss;
	}

	for (size_t i = 0; i < s->nr_evs; i++)
		s->evs[i].nr_samples = 0;
	s->nr_samples = 0;
	s->lost_records = 0;
	s->lost_deep_records = 0;
	s->last_loss = 0;
	msg_progress_begin(s->o.progress_delay_ms);
	r = trace_read(&s->r, &h, &st, err, errlen);
	msg_progress_end();
	for (size_t i = 0; i < s->nr_at_end; i++)
		s->at_end[i].fn(s->at_end[i].arg);
	s->nr_at_end = 0;
	s->nr_on_exec = 0;
	s->on_window.fn = NULL;
	if (st.bad)
		msg_warn("%llu samples in '%s' could not be decoded and were skipped",
			(unsigned long long)st.bad, s->path);
	/* A selection that matched nothing says so, rather than pass for an
	 * empty trace. */
	if (!r && !s->nr_samples && st.unselected && !s->selection_said++)
		msg_warn("none of the %llu events of '%s' is of the processes, threads, names or time asked for "
			 "(--pid, --tid, --comm, --time): memsight report lists its processes",
			 (unsigned long long)st.unselected, s->path);
	return r;
}

int session_on_exec(struct session *s, void (*fn)(void *arg, struct session *s, int pid, uint64_t time),
		    void *arg)
{
	struct exec_hook *v = realloc(s->on_exec, (s->nr_on_exec + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	s->on_exec = v;
	v[s->nr_on_exec++] = (struct exec_hook){ fn, arg };
	return 0;
}

void session_on_window(struct session *s, int (*fn)(void *arg, struct session *s, uint64_t from), void *arg)
{
	s->on_window.fn = fn;
	s->on_window.arg = arg;
}

int session_on_code_map(struct session *s, void (*fn)(void *arg, struct session *s, int pid, const struct map *map),
			void *arg)
{
	struct map_hook *v = realloc(s->on_code_map, (s->nr_on_code_map + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	s->on_code_map = v;
	v[s->nr_on_code_map++] = (struct map_hook){ fn, arg };
	return 0;
}

int session_at_replay_end(struct session *s, void (*fn)(void *), void *arg)
{
	if (s->nr_at_end == s->at_end_alloc) {
		size_t a = s->at_end_alloc ? s->at_end_alloc * 2 : 8;
		struct replay_hook *v = realloc(s->at_end, a * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->at_end = v;
		s->at_end_alloc = a;
	}
	s->at_end[s->nr_at_end++] = (struct replay_hook){ fn, arg };
	return 0;
}
