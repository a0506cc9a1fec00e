/*
 * analyze/replay/session.c: META reading, record decoding and replay;
 * fields.c reads a sample's tracepoint fields and frames.c its stack.
 *
 * Sample fields are decoded from each event's own sample_type as the
 * recorder gave it to the kernel (stored in the trace), so traces made with
 * other field sets still decode; tracepoint payloads go to libtraceevent
 * with the format text stored in the trace, never this machine's tracefs.
 */
#include "session.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <traceevent/event-parse.h>

#include "../../formats/catalog.h"
#include "../../formats/msg.h"
#include "../stacks/unwind.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
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
		for (int f = 0; f < SESS_MAX_FIELDS && kinds[i].fields[f]; f++)
			if (e->tp)
				e->fields[f] = tep_find_field(e->tp, kinds[i].fields[f]);
		return;
	}
	e->kind = EVK_OTHER;
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
			return fail(o->err, o->errlen, "out of memory");
		s->reach_chunks = v;
		v[s->nr_reach++] = chunk;
		return 0;
	}
	if (symbols_embedded_ref(&s->syms, &s->r, chunk) == -ENOMEM)
		return fail(o->err, o->errlen, "out of memory");
	return 0;
}

static void cgroup_add(struct session *s, uint64_t id, const char *path)
{
	struct hm_slot *slot = hashmap_u64(&s->cgroup_paths, id, NULL);

	if (slot)
		slot->ptr = (void *)machine_intern(&s->m, path);
}

/* "ID\tPATH" lines (META cgroups). */
static void cgroups_load(struct session *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end, *tab = memchr(p, '\t', le - p);
		char path[4096];

		if (tab && (size_t)(le - tab - 1) < sizeof(path)) {
			memcpy(path, tab + 1, le - tab - 1);
			path[le - tab - 1] = 0;
			cgroup_add(s, strtoull(p, NULL, 10), path);
		}
		p = nl ? nl + 1 : end;
	}
}

/* "PID\tNSPID" lines (META nspids), or within a process snapshot the
 * line "nspid N" after its "pid P" (key). */
static void nspids_load(struct session *s, const char *text, size_t len, const char *key)
{
	const char *p = text, *end = text + len;
	long pid = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end;
		char line[64], *e;
		size_t n = (size_t)(le - p) < sizeof(line) - 1 ? (size_t)(le - p) : sizeof(line) - 1;
		long ns = 0;

		memcpy(line, p, n);
		line[n] = 0;
		p = nl ? nl + 1 : end;
		if (key && !strncmp(line, "pid ", 4))
			pid = atol(line + 4);
		else if (key && !strncmp(line, key, strlen(key)))
			ns = atol(line + strlen(key));
		else if (!key && (pid = strtol(line, &e, 10)) > 0 && *e == '\t')
			ns = atol(e + 1);
		if (pid > 0 && ns > 0) {
			struct hm_slot *slot = hashmap_u64(&s->nspids, (uint32_t)pid, NULL);

			if (slot)
				slot->val = (uint64_t)ns;
		}
	}
}

const char *session_cgroup_path(const struct session *s, uint64_t id)
{
	struct hm_slot *slot = id ? hashmap_u64_find(&s->cgroup_paths, id) : NULL;

	return slot ? slot->ptr : NULL;
}

const char *session_process_cgroup(const struct session *s, int pid)
{
	struct hm_slot *slot = hashmap_u64_find(&s->proc_cgroup, (uint32_t)pid);

	return slot ? session_cgroup_path(s, slot->val) : NULL;
}

int session_nspid(const struct session *s, int pid)
{
	struct hm_slot *slot = hashmap_u64_find(&s->nspids, (uint32_t)pid);

	return slot ? (int)slot->val : 0;
}

const char *session_container_id(const char *path, char *buf, size_t len)
{
	for (const char *p = path; p && *p; p++) {
		size_t n = 0;

		while (isxdigit((unsigned char)p[n]) && !isupper((unsigned char)p[n]))
			n++;
		/* Runtimes name a container by 64 hex digits, alone or as
		 * docker-ID.scope, cri-containerd-ID.scope, crio-ID, libpod-ID. */
		if (n == 64 && (p == path || !isxdigit((unsigned char)p[-1]))) {
			snprintf(buf, len, "%.12s", p);
			return buf;
		}
		p += n;
		if (!*p)
			break;
	}
	return NULL;
}

/* Whether cgroup path c is want or below it. */
static int cgroup_under(const char *c, const char *want)
{
	size_t n = strlen(want);

	if (!c)
		return 0;
	if (n == 1 && want[0] == '/')
		return 1;
	return !strncmp(c, want, n) && (c[n] == 0 || c[n] == '/');
}

/* --cgroup: its path below the hierarchy the trace's cgroup ids are of
 * (given as that, or as the directory under the recording box's mount). */
static int cgroup_want_set(struct session *s, char *err, size_t errlen)
{
	const char *want = s->o.cgroup;
	char root[4096] = "";
	size_t n;

	if (!s->cgroup_paths.nr)
		return fail(err, errlen,
			    "--cgroup: '%s' has no cgroups: its samples were not recorded system-wide (record with -a)",
			    s->path);
	if (session_host(s, "cgroup_root", root, sizeof(root), NULL) && (n = strlen(root)) &&
	    !strncmp(want, root, n) && (want[n] == '/' || !want[n]))
		want = want[n] ? want + n : "/";
	s->cgroup_want = strdup(want);
	if (!s->cgroup_want)
		return fail(err, errlen, "out of memory");
	n = strlen(s->cgroup_want);
	while (n > 1 && s->cgroup_want[n - 1] == '/')
		s->cgroup_want[--n] = 0;
	hashmap_for_each(&s->cgroup_paths, slot)
		if (cgroup_under(slot->ptr, s->cgroup_want))
			return 0;
	return fail(err, errlen, "--cgroup '%s' names no cgroup of '%s' (its cgroups are those under %s; memsight report "
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
			return fail(o->err, o->errlen, "out of memory");
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
			return fail(o->err, o->errlen, "out of memory");
		s->evs = v;
		e = &s->evs[s->nr_evs];
		memset(e, 0, sizeof(*e));
		if (trace_event_desc_decode(data, len, &e->d))
			return fail(o->err, o->errlen, "an event description in the trace is malformed");
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
				return fail(o->err, o->errlen, "out of memory");
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
		nspids_load(s, data, len, "nspid ");
		s->nr_snapshots++;
		break;
	case TRACE_META_CGROUPS:
		cgroups_load(s, data, len);
		break;
	case TRACE_META_NSPIDS:
		nspids_load(s, data, len, NULL);
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
			return fail(o->err, o->errlen, "out of memory");
		break;
	case TRACE_META_OOM: {
		struct oom_context *v = realloc(s->ooms, (s->nr_ooms + 1) * sizeof(*v)), *c;
		char val[64];

		if (!v)
			return fail(o->err, o->errlen, "out of memory");
		s->ooms = v;
		c = &v[s->nr_ooms];
		memset(c, 0, sizeof(*c));
		if (!(c->text = malloc(len + 1)))
			return fail(o->err, o->errlen, "out of memory");
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
			return fail(o->err, o->errlen, "out of memory");
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
		return fail(err, errlen, "--debuginfod has no server to ask: set DEBUGINFOD_URLS or give --debuginfod=URL");
	if (r == -ENOENT)
		return fail(err, errlen, "--debuginfod needs the debuginfod client library (%s): apt-get install libdebuginfod1",
			    "libdebuginfod.so.1");
	if (r)
		return fail(err, errlen, "cannot start the debuginfod client");
	s->path = strdup(path);
	s->tep = tep_alloc();
	if (!s->tep || !s->path)
		return fail(err, errlen, "out of memory");
	tep_set_file_bigendian(s->tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(s->tep, tep_is_local_bigendian(s->tep) ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	if (trace_reader_open(&s->r, path, err, errlen))
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
	if (!s->nr_evs)
		return fail(err, errlen, "'%s' holds no event descriptions%s", path,
			    s->r.stop[0] ? " (the trace is cut short before them)" : "");
	for (size_t i = 0; i < s->nr_evs; i++)
		n += s->evs[i].d.nr_ids;
	s->ids = malloc((n ? n : 1) * sizeof(*s->ids));
	if (!s->ids)
		return fail(err, errlen, "out of memory");
	for (size_t i = 0; i < s->nr_evs; i++)
		for (size_t k = 0; k < s->evs[i].d.nr_ids; k++)
			s->ids[s->nr_ids++] = (struct sess_id){ s->evs[i].d.ids[k], &s->evs[i] };
	if (s->nr_ids > 1)
		qsort(s->ids, s->nr_ids, sizeof(*s->ids), id_cmp);
	return s->o.cgroup ? cgroup_want_set(s, err, errlen) : 0;
}

void session_release(struct session *s)
{
	if (s->shared_release)
		s->shared_release(s->shared);
	s->shared = NULL;
	s->shared_release = NULL;
	if (s->o.read_stats && s->path) {
		size_t data = 0;

		for (size_t i = 0; i < s->r.nr_chunks; i++)
			data += s->r.chunks[i].type == TRACE_CHUNK_DATA;
		msg_note("read '%s': %u replay%s, %llu data chunks read of the %zu it holds", s->path, s->r.replays,
			 s->r.replays == 1 ? "" : "s", (unsigned long long)s->r.data_read, data);
	}
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
	if (s->r.stop[0])
		msg_warn("'%s' %s; results cover what comes before", s->path,
			s->r.stop);
}

int session_incomplete(const struct session *s)
{
	/* Records a full disk kept from the file are lost as surely. */
	return s->lost || s->lost_records || s->r.stop[0] || session_stat(s, "records_not_written", 0) > 0;
}

uint64_t session_lost_deep(const struct session *s)
{
	return s->lost_deep > s->lost_deep_records ? s->lost_deep : s->lost_deep_records;
}

uint64_t session_loss_horizon(const struct session *s)
{
	if (s->lost_unreported || s->r.stop[0] || (s->lost_records && !s->last_loss))
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

static struct sess_event *event_of(struct session *s, uint64_t id)
{
	size_t lo = 0, hi = s->nr_ids;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->ids[mid].id == id)
			return s->ids[mid].ev;
		if (s->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Decode a PERF_RECORD_SAMPLE, or a packed one, by its event's
 * sample_type. Returns 0, or -1 when the record is shorter than its fields
 * claim. */
static int parse_sample(struct session *s, const unsigned char *rec, size_t len, struct sample *smp)
{
	/* Cleared by copying a zeroed one: for a memset of a struct this
	 * size GCC emits `rep stos`, whose start-up alone cost a tenth of a
	 * frame-pointer trace's replay. */
	static const struct sample zero;
	const unsigned char *p = rec + 8, *end = rec + len;
	int packed = ((const struct perf_event_header *)rec)->type == STACKDUMP_PACKED_SAMPLE;
	uint64_t id, st;

#define NEED(n) do { if ((size_t)(end - p) < (size_t)(n)) return -1; } while (0)
	*smp = zero;
	smp->misc = ((const struct perf_event_header *)rec)->misc;
	NEED(8);
	memcpy(&id, p, 8);
	smp->ev = event_of(s, id);
	if (!smp->ev)
		return -1;
	st = smp->ev->attr.sample_type;
	if (packed && !(st & PERF_SAMPLE_STACK_USER))
		return -1;
	p += 8;
	if (st & PERF_SAMPLE_IP) { NEED(8); memcpy(&smp->ip, p, 8); p += 8; }
	if (st & PERF_SAMPLE_TID) { NEED(8); memcpy(&smp->pid, p, 4); memcpy(&smp->tid, p + 4, 4); p += 8; }
	if (st & PERF_SAMPLE_TIME) { NEED(8); memcpy(&smp->time, p, 8); p += 8; }
	if (st & PERF_SAMPLE_ADDR) { NEED(8); memcpy(&smp->addr, p, 8); p += 8; }
	if (st & PERF_SAMPLE_ID) { NEED(8); p += 8; }
	if (st & PERF_SAMPLE_STREAM_ID) { NEED(8); p += 8; }
	if (st & PERF_SAMPLE_CPU) { NEED(8); memcpy(&smp->cpu, p, 4); p += 8; }
	if (st & PERF_SAMPLE_PERIOD) { NEED(8); p += 8; }
	if (st & PERF_SAMPLE_READ)
		return -1; /* never recorded by memsight */
	if (st & PERF_SAMPLE_CALLCHAIN) {
		NEED(8);
		memcpy(&smp->nr_ips, p, 8);
		p += 8;
		if (smp->nr_ips > (size_t)(end - p) / 8)
			return -1;
		smp->ips = (const uint64_t *)p;
		p += 8 * smp->nr_ips;
	}
	if (st & PERF_SAMPLE_RAW) {
		NEED(4);
		memcpy(&smp->raw_size, p, 4);
		NEED(4 + (size_t)smp->raw_size);
		smp->raw = p + 4;
		/* The u32 size and the data are padded to 8 together. */
		p += (4 + smp->raw_size + 7) & ~7u;
	}
	if (st & PERF_SAMPLE_BRANCH_STACK)
		return -1; /* never recorded by memsight */
	if (st & PERF_SAMPLE_REGS_USER) {
		uint64_t abi;

		NEED(8);
		memcpy(&abi, p, 8);
		p += 8;
		if (abi) {
			int n = __builtin_popcountll(smp->ev->attr.sample_regs_user);

			NEED(8 * n);
			smp->regs = (const uint64_t *)p;
			smp->regs_mask = smp->ev->attr.sample_regs_user;
			p += 8 * n;
		}
	}
	if ((st & PERF_SAMPLE_STACK_USER) && packed) {
		size_t n = stackdump_parse_packed(p, end - p, &smp->stack);

		if (!n)
			return -1;
		p += n;
	} else if (st & PERF_SAMPLE_STACK_USER) {
		uint64_t size;

		NEED(8);
		memcpy(&size, p, 8);
		p += 8;
		if (size) {
			NEED(size + 8);
			smp->stack.bytes = p;
			memcpy(&smp->stack.size, p + size, 8); /* dyn_size: the bytes really copied */
			if (smp->stack.size > size)
				smp->stack.size = size;
			p += size + 8;
		}
	}
	/* WEIGHT, DATA_SRC, TRANSACTION, REGS_INTR and PHYS_ADDR, which
	 * come between, are never recorded by memsight. */
	if (st & PERF_SAMPLE_CGROUP) {
		NEED(8);
		memcpy(&smp->cgroup, p, 8);
		p += 8;
	}
#undef NEED
	return 0;
}

int sample_reg(const struct sample *smp, int reg, uint64_t *val)
{
	int idx;

	if (!smp->regs || !(smp->regs_mask & (1ull << reg)))
		return 0;
	idx = __builtin_popcountll(smp->regs_mask & ((1ull << reg) - 1));
	memcpy(val, &smp->regs[idx], 8);
	return 1;
}

struct replay_state {
	struct session *s;
	session_sample_fn fn;
	void *arg;
	uint64_t bad;
	uint64_t unselected;	/* samples --pid, --tid, --comm or --time left out */
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

/* The unwinder's view of code a runtime compiled: its name, start and
 * unwind table. */
static int jit_code_of(void *arg, int pid, uint64_t addr, uint64_t time, struct unwind_jit_code *c)
{
	struct session *s = arg;
	const struct jit_sym *e = s->jit.nr_files ? jitsyms_find(&s->jit, pid, addr, time) : NULL;

	if (!e)
		return 0;
	*c = (struct unwind_jit_code){ e->name, e->start, e->eh_frame, e->eh_frame_len, e->eh_frame_addr };
	return 1;
}

/* A --call-graph dwarf sample: its kernel callchain, then the user frames
 * unwound from its registers and stack dump, as one chain. */
static void sample_unwind(struct session *s, struct sample *smp)
{
	struct unwind_input in = { smp->pid, smp->tid, smp->regs_mask, smp->regs, smp->stack, 0, smp->time,
				   smp->ev->kind == EVK_DEEP_STACK };
	enum unwind_stop stop;
	uint64_t n = 0, fp_at = 0, fp_nr = 0;
	int got;

	if (!s->uw) {
		if (!(s->uw = unwind_new(s->o.unwinder, &s->m, s->o.unwind_check)))
			return;
		unwind_set_jit(s->uw, jit_code_of, s);
	}
	if (smp->ev->kind == EVK_FAULT || smp->ev->kind == EVK_FAULT_MAJ)
		in.fault_addr = smp->ev->tp ? sample_num(smp, "address") : smp->addr;
	for (uint64_t i = 0; i < smp->nr_ips && n < SESS_MAX_CHAIN - SESS_MAX_USER_FRAMES - 1; i++) {
		if (smp->ips[i] == PERF_CONTEXT_USER)
			break;
		s->chain[n++] = smp->ips[i];
	}
	/* A sample in the kernel with no user part (a kernel thread) has no
	 * user registers; one of a process with mappings lost them, and is
	 * counted as a stack that could not start. */
	if (!smp->regs) {
		struct hm_slot *slot = hashmap_u64_find(&s->m.procs, (uint32_t)smp->pid);
		const struct process *p = slot ? slot->ptr : NULL;

		if (p && p->nr_maps)
			unwind_sample(s->uw, &in, s->chain + n, 0, &stop);
		goto out;
	}
	s->chain[n++] = PERF_CONTEXT_USER;
	/* An event that took a frame-pointer chain beside its dump (a fatal
	 * signal's: its stack pointer may lie in a guard gap, where no dump
	 * can be read) has it stand in where the dump holds nothing. */
	{
		uint64_t i = 0;

		while (i < smp->nr_ips && smp->ips[i] != PERF_CONTEXT_USER)
			i++;
		for (fp_at = ++i; i < smp->nr_ips && fp_nr < SESS_MAX_USER_FRAMES && smp->ips[i] < PERF_CONTEXT_MAX; i++)
			fp_nr++;
	}
	if (fp_nr && !smp->stack.size) {
		memcpy(s->chain + n, smp->ips + fp_at, fp_nr * sizeof(uint64_t));
		got = (int)fp_nr;
	} else {
		got = unwind_sample(s->uw, &in, s->chain + n, SESS_MAX_USER_FRAMES, &stop);
	}
	n += got;
	if (!got)
		n--;
out:
	smp->ips = s->chain;
	smp->nr_ips = n;
}

/*
 * A frame-pointer walk through code built without frame pointers takes
 * whatever that register holds for the next frame, and goes on through
 * data to the kernel's limit: the user chain is kept up to the first
 * return address that lies in no executable mapping of the process (the
 * sampled ip itself stays whatever it is: a JIT's code, say).
 */
static void sample_fp_cut(struct session *s, struct sample *smp)
{
	const struct process *p = NULL;
	const struct map *m = NULL;
	int user = 0, first = 0, frames = 0;

	for (uint64_t i = 0; i < smp->nr_ips; i++) {
		uint64_t ip = smp->ips[i];

		if (ip >= PERF_CONTEXT_MAX) {
			user = ip == PERF_CONTEXT_USER;
			first = 1;
			if (user)
				s->fp_stacks++;
			continue;
		}
		/* The kernel walks at most max_stack frames, its own and the
		 * user's together: a chain that long lost its outer callers. */
		if (++frames == s->max_stack && user && i + 1 == smp->nr_ips)
			s->fp_deep++;
		if (!user || first) {
			first = 0;
			continue;
		}
		if (!p && (!(p = machine_process_find(&s->m, smp->pid)) || !p->nr_maps))
			return;
		m = process_find_map(p, ip, m);
		if (!m || !(m->prot & PROT_EXEC)) {
			smp->nr_ips = i;
			s->fp_cut++;
			return;
		}
	}
}

/* A frame-pointer walk taken at a probed function's first instruction
 * reads its caller's return address next, from the caller's frame: the
 * caller itself is missing. The entry probe read the return address at
 * the stack pointer (the caller field): put it back after the first user
 * frame, into s->chain. */
static void sample_put_caller(struct session *s, struct sample *smp)
{
	uint64_t caller = session_field(s, smp, AF_CALLER), n = 0;
	int first = 0;

	if (!caller || smp->nr_ips > SESS_MAX_CHAIN - 1)
		return;
	for (uint64_t i = 0; i < smp->nr_ips; i++) {
		uint64_t ip = smp->ips[i];

		s->chain[n++] = ip;
		if (ip == PERF_CONTEXT_USER) {
			first = 1;
			continue;
		}
		if (first && ip < PERF_CONTEXT_MAX) {
			first = 0;
			if (i + 1 >= smp->nr_ips || smp->ips[i + 1] != caller)
				s->chain[n++] = caller;
		}
	}
	smp->ips = s->chain;
	smp->nr_ips = n;
}

/* The unwinder's report, a line at a time, as notes of the command that
 * runs: under its name, and once a run however many views replay. */
static void unwind_notes(struct unwinder *uw)
{
	char *buf = NULL, *line, *nl;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m) {
		unwind_report(uw, stderr);
		return;
	}
	unwind_report(uw, m);
	fclose(m);
	for (line = buf; line && *line; line = nl + 1) {
		if (!(nl = strchr(line, '\n')))
			nl = line + strlen(line) - 1;
		else
			*nl = 0;
		msg_note("%s", strncmp(line, "memsight: ", 10) ? line : line + 10);
	}
	free(buf);
}

void session_report_unwind(struct session *s)
{
	if (s->uw)
		unwind_notes(s->uw);
	/* Under 1% of the stacks is a small matter, said with -v. */
	if (s->fp_cut && (msg_verbose() || s->fp_cut * 100 >= s->fp_stacks))
		msg_note("%llu of %llu frame-pointer stacks ran into code built without frame pointers and were "
			 "cut where they left the code; record with -g dwarf for whole stacks",
			 (unsigned long long)s->fp_cut, (unsigned long long)s->fp_stacks);
	if (s->fp_deep && (msg_verbose() || s->fp_deep * 100 >= s->fp_stacks))
		msg_note("%llu of %llu frame-pointer stacks are %d frames deep, as deep as the recording kernel "
			 "walks (kernel.perf_event_max_stack): their outermost callers are missing; raise it with sysctl "
			 "before recording, or record with -g dwarf",
			 (unsigned long long)s->fp_deep, (unsigned long long)s->fp_stacks, s->max_stack);
	if (s->uw && s->o.unwind_stats)
		fprintf(stderr, "unwind: %llu stacks, %llu frames, deepest dump byte read %llu\n",
			(unsigned long long)unwind_stats(s->uw)->stacks, (unsigned long long)unwind_stats(s->uw)->frames,
			(unsigned long long)unwind_stats(s->uw)->max_stack_used);
	if (s->uw && s->o.unwind_stats)
		fprintf(stderr, "unwind: %llu address spaces, %llu objects opened, %llu spaces needing libdw's whole unwinder\n",
			(unsigned long long)unwind_stats(s->uw)->spaces,
			(unsigned long long)unwind_stats(s->uw)->objects_opened,
			(unsigned long long)unwind_stats(s->uw)->spaces_whole);
	if (s->o.unwind_stats) {
		size_t seen, held = machine_processes_with_maps(&s->m, &seen);

		fprintf(stderr, "processes: %zu seen, %zu holding maps at the end\n", seen, held);
	}
	if (s->uw && s->o.unwind_stats)
		for (int i = 0; i < 16; i++)
			fprintf(stderr, "unwind: complete stacks needing < %d KiB: %llu\n", i + 1,
				(unsigned long long)unwind_stats(s->uw)->need_kib[i]);
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

		if (parse_sample(s, rec, len, &smp)) {
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
		if (s->cgroup_want && !cgroup_under(session_cgroup_path(s, smp.cgroup), s->cgroup_want))
			return 0;
		if (!sample_selected(s, &smp)) {
			st->unselected++;
			return 0;
		}
		/* A deep-stacks sample is no finding: its stack is there for
		 * the thread's stacks that ran past their dump to join. */
		if (smp.ev->kind == EVK_DEEP_STACK) {
			if (!s->no_unwind && smp.regs)
				sample_unwind(s, &smp);
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
				sample_unwind(s, &smp);
		} else if (smp.nr_ips && !smp.ev->attr.exclude_callchain_user) {
			sample_fp_cut(s, &smp);
			if (smp.ev->kind == EVK_ALLOC_ENTRY)
				sample_put_caller(s, &smp);
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
			cgroup_add(s, id, (const char *)rec + 16);
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

int session_replay(struct session *s, session_sample_fn fn, void *arg, char *err, size_t errlen)
{
	struct replay_state st = { s, fn, arg, 0, 0 };
	struct trace_handler h = { .record = on_record, .progress = replay_progress };
	int r;

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
