/*
 * record/probes/events.c: event groups and their perf_event_attr.
 *
 * Every event shares one sample layout prefix, IDENTIFIER|IP|TID|TIME, and
 * CPU, with sample_id_all, because formats/FORMAT.md finds record times at
 * fixed positions from it. A syscall is one sample at its exit, with the
 * callchain, the result and the registers holding its arguments; every
 * syscall asked for is one event (the carrier), whose filter keeps the
 * calls asked for, as each event costs the kernel a grace period when it
 * is closed.
 */
#include "events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "../../formats/catalog.h"

#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif

#define SAMPLE_BASE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

#define GROUP_NAME(name, help) name,
const char *const events_group_names[] = { CATALOG_GROUPS(GROUP_NAME) NULL };
#undef GROUP_NAME

struct ev_spec {
	const char *group;
	const char *name; /* "sys:event" for tracepoints */
	uint32_t type;	  /* PERF_TYPE_TRACEPOINT or PERF_TYPE_SOFTWARE */
	uint64_t config;  /* software event id */
	int stack;	  /* take a callchain */
	int addr;	  /* PERF_SAMPLE_ADDR */
	const char *kind; /* the analyzer's kind: SW_ELSE events stand in for tracepoints of theirs */
	int fallback;	  /* SW_ELSE */
	int args;	  /* SYSCALL: the registers of the call's arguments too */
	int past;	  /* PAST: read by analyzers, never opened */
	int nargs;	  /* SYSCALL: how many arguments the call has */
};

/* Each catalog type as the perf type it opens and its fallback, args and
 * past flags. */
#define TYPE_TP PERF_TYPE_TRACEPOINT, 0, 0, 0
#define TYPE_SYSCALL PERF_TYPE_TRACEPOINT, 0, 1, 0
#define TYPE_PAST PERF_TYPE_TRACEPOINT, 0, 0, 1
#define TYPE_SW PERF_TYPE_SOFTWARE, 0, 0, 0
#define TYPE_SW_ELSE PERF_TYPE_SOFTWARE, 1, 0, 0
#define SPEC_ROW(group, event, config, stack, addr, kind, nargs, type, fallback, args, past) \
	{ group, event, type, config, stack, addr, kind, fallback, args, past, nargs },
#define SPEC_ROW_OF(...) SPEC_ROW(__VA_ARGS__)
#define SPEC(group, event, type, config, stack, addr, kind, ...) \
	SPEC_ROW_OF(group, event, config, stack, addr, #kind, CATALOG_NR_FIELDS(__VA_ARGS__) - 1, TYPE_##type)
static const struct ev_spec specs[] = { CATALOG_EVENTS(SPEC) };
#undef SPEC

static char tracefs_path[256];

void events_tracefs_use(const char *path)
{
	snprintf(tracefs_path, sizeof(tracefs_path), "%s", path);
}

const char *events_tracefs(void)
{
	static const char *const cands[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	struct statfs sfs;

	if (tracefs_path[0])
		return tracefs_path;
	for (size_t i = 0; i < 2; i++) {
		if (!statfs(cands[i], &sfs) && (unsigned long)sfs.f_type == TRACEFS_MAGIC) {
			snprintf(tracefs_path, sizeof(tracefs_path), "%s", cands[i]);
			return tracefs_path;
		}
	}
	/* Like perf, mount it ourselves: many minimal systems never do. */
	if (!mount("nodev", cands[0], "tracefs", 0, NULL)) {
		snprintf(tracefs_path, sizeof(tracefs_path), "%s", cands[0]);
		return tracefs_path;
	}
	errno = ENODEV;
	return NULL;
}

char *events_tracefs_read(const char *rel, size_t *len)
{
	const char *root = events_tracefs();
	char path[512];
	char *buf = NULL;
	size_t n = 0, alloc = 0;
	int fd;

	if (!root)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t r;

		if (alloc - n < 4096) {
			char *p = realloc(buf, alloc = alloc ? alloc * 2 : 8192);

			if (!p) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			buf = p;
		}
		r = read(fd, buf + n, alloc - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += r;
	}
	close(fd);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static int tracepoint_load(const char *name, uint64_t *id, char **format)
{
	char rel[256], sys[128];
	const char *colon = strchr(name, ':');
	char *idtext;

	if (!colon || (size_t)(colon - name) >= sizeof(sys))
		return -EINVAL;
	memcpy(sys, name, colon - name);
	sys[colon - name] = 0;
	snprintf(rel, sizeof(rel), "events/%s/%s/id", sys, colon + 1);
	idtext = events_tracefs_read(rel, NULL);
	if (!idtext)
		return errno == EACCES || errno == EPERM ? -EACCES : -ENODEV;
	*id = strtoull(idtext, NULL, 10);
	free(idtext);
	snprintf(rel, sizeof(rel), "events/%s/%s/format", sys, colon + 1);
	*format = events_tracefs_read(rel, NULL);
	return *format ? 0 : -ENODEV;
}

/* The offset of a tracepoint field from its format text, -1 if absent:
 * "field:int pid;\toffset:8;\tsize:4;...". */
int events_field_offset(const char *format, const char *field)
{
	size_t fl = strlen(field);

	for (const char *p = format; p && (p = strstr(p, "field:")); p++) {
		const char *semi = strchr(p, ';'), *off;

		if (!semi)
			break;
		if ((size_t)(semi - p) > fl && !strncmp(semi - fl, field, fl) &&
		    (semi[-(long)fl - 1] == ' ' || semi[-(long)fl - 1] == '*') && (off = strstr(semi, "offset:")))
			return atoi(off + 7);
	}
	return -1;
}

const unsigned char *events_sample_raw(const struct rec_event *e, const unsigned char *rec, size_t size,
				       uint32_t *raw_len)
{
	uint64_t st = e->attr.sample_type, nr;
	size_t off = events_fixed_end(st);

	if (!(st & PERF_SAMPLE_RAW))
		return NULL;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > size)
			return NULL;
		memcpy(&nr, rec + off, 8);
		if (nr > size / 8)
			return NULL;
		off += 8 + 8 * nr;
	}
	if (off + 4 > size)
		return NULL;
	memcpy(raw_len, rec + off, 4);
	if (off + 4 + *raw_len > size)
		return NULL;
	return rec + off + 4;
}

void events_attr_common(struct perf_event_attr *a, const struct rec_opts_events *o)
{
	a->size = sizeof(*a);
	a->disabled = 1;
	a->inherit = o->inherit;
	a->enable_on_exec = o->enable_on_exec;
	a->sample_id_all = 1;
	/* CLOCK_MONOTONIC lets the analyzer turn times into wall-clock time
	 * with the clock pair stored in the host META. */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = o->wakeup_bytes;
	if (o->format_lost)
		a->read_format = PERF_FORMAT_LOST;
}

unsigned events_fixed_end(uint64_t st)
{
	/* The perf ABI order of the u64 fields before the callchain; READ is
	 * never used by memsight. */
	static const uint64_t before[] = { PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID,
					   PERF_SAMPLE_TIME, PERF_SAMPLE_ADDR, PERF_SAMPLE_ID,
					   PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD };
	unsigned off = 8; /* perf_event_header */

	for (size_t i = 0; i < sizeof(before) / sizeof(before[0]); i++)
		if (st & before[i])
			off += 8;
	return off;
}

unsigned events_callchain_offset(uint64_t st)
{
	return st & PERF_SAMPLE_CALLCHAIN ? events_fixed_end(st) : 0;
}

void events_stack_attr(struct perf_event_attr *a, const struct rec_opts_events *o)
{
	if (o->callchain == REC_CG_NONE)
		return;
	a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (o->callchain != REC_CG_DWARF)
		return;
	/* The kernel part as a callchain; the user part is unwound later
	 * from the registers and the stack bytes above sp. */
	a->exclude_callchain_user = 1;
	a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = REC_DWARF_REGS;
	a->sample_stack_user = o->stack_size;
}

int events_push(struct rec_event **evs, size_t *nr, const struct rec_event *e)
{
	struct rec_event *p = realloc(*evs, (*nr + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	*evs = p;
	p[(*nr)++] = *e;
	return 0;
}

static struct rec_event *event_find(struct rec_event *evs, size_t nr, const char *name)
{
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(evs[i].name, name))
			return &evs[i];
	return NULL;
}

/* Add the syscall of row s to the carrier, opening it with the first. */
static int syscall_add(const struct ev_spec *s, uint64_t period, const struct rec_opts_events *o,
		       struct rec_event **evs, size_t *nr)
{
	struct rec_event *c = event_find(*evs, *nr, CATALOG_SYSCALL_CARRIER);
	struct rec_syscall *call;
	size_t glen;
	char *g;

	if (!c) {
		struct rec_event e;
		uint64_t id = 0;
		int r;

		memset(&e, 0, sizeof(e));
		snprintf(e.name, sizeof(e.name), "%s", CATALOG_SYSCALL_CARRIER);
		r = tracepoint_load(CATALOG_SYSCALL_CARRIER, &id, &e.format);
		if (r)
			return r;
		e.id_off = events_field_offset(e.format, CATALOG_SYSCALL_CARRIER_ID);
		if (e.id_off < 0 || !(e.groups = strdup(""))) {
			free(e.format);
			return e.id_off < 0 ? -ENODEV : -ENOMEM;
		}
		e.group = e.groups;
		events_attr_common(&e.attr, o);
		e.attr.type = PERF_TYPE_TRACEPOINT;
		e.attr.config = id;
		e.attr.sample_period = period ? period : 1;
		e.attr.sample_type = SAMPLE_BASE | PERF_SAMPLE_RAW;
		events_stack_attr(&e.attr, o);
		/* Whatever the call graph: the arguments are these registers,
		 * kept as they are by the scrub for the call a sample is of. */
		e.attr.sample_type |= PERF_SAMPLE_REGS_USER;
		e.keep_regs = catalog_syscall_args_mask(CATALOG_SYSCALL_NR_ARGS);
		e.attr.sample_regs_user |= e.keep_regs;
		e.callchain_off = events_callchain_offset(e.attr.sample_type);
		if (events_push(evs, nr, &e)) {
			free(e.format);
			free(e.groups);
			return -ENOMEM;
		}
		c = &(*evs)[*nr - 1];
	} else if (c->attr.sample_period != (period ? period : 1)) {
		return -EXDEV;
	}
	for (size_t i = 0; i < c->nr_calls; i++)
		if (c->calls[i].nr == s->config)
			return 0;
	if (c->nr_calls == sizeof(c->calls) / sizeof(c->calls[0]))
		return -ENOSPC;
	call = &c->calls[c->nr_calls++];
	*call = (struct rec_syscall){ s->config, s->name, s->group, catalog_syscall_args_mask(s->nargs), "" };
	/* The groups it records, each once. */
	glen = strlen(c->groups);
	for (size_t i = 0; i + 1 < c->nr_calls; i++)
		if (!strcmp(c->calls[i].group, s->group))
			return 0;
	if (!(g = realloc(c->groups, glen + strlen(s->group) + 2)))
		return -ENOMEM;
	sprintf(g + glen, "%s%s", glen ? "," : "", s->group);
	c->groups = g;
	c->group = g;
	return 0;
}

int events_syscalls_filter(struct rec_event *e)
{
	size_t n = 0;

	e->filter[0] = 0;
	for (size_t i = 0; i < e->nr_calls; i++) {
		const struct rec_syscall *c = &e->calls[i];

		n += c->filter[0] ? (size_t)snprintf(e->filter + n, n < sizeof(e->filter) ? sizeof(e->filter) - n : 0,
						     "%s(%s == %llu && (%s))", i ? " || " : "",
						     CATALOG_SYSCALL_CARRIER_ID, (unsigned long long)c->nr, c->filter)
				  : (size_t)snprintf(e->filter + n, n < sizeof(e->filter) ? sizeof(e->filter) - n : 0,
						     "%s%s == %llu", i ? " || " : "", CATALOG_SYSCALL_CARRIER_ID,
						     (unsigned long long)c->nr);
		if (n >= sizeof(e->filter))
			return -ENOSPC;
	}
	return 0;
}

uint64_t events_sample_keep_regs(const struct rec_event *e, const unsigned char *rec, size_t size)
{
	const unsigned char *raw;
	uint32_t len;
	int64_t nr;

	if (!e->nr_calls)
		return e->keep_regs;
	raw = events_sample_raw(e, rec, size, &len);
	if (!raw || (size_t)e->id_off + 8 > len)
		return 0;
	memcpy(&nr, raw + e->id_off, 8);
	for (size_t i = 0; i < e->nr_calls; i++)
		if ((int64_t)e->calls[i].nr == nr)
			return e->calls[i].regs;
	return 0;
}

static void missing_add(char *missing, size_t len, const char *name)
{
	size_t n = strlen(missing);

	snprintf(missing + n, len - n, "%s%s", n ? ", " : "", name);
}

/* Does the group have a software event standing in for tracepoints of s's
 * kind? */
static const struct ev_spec *spec_fallback(const struct ev_spec *s)
{
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		if (specs[i].fallback && !strcmp(specs[i].group, s->group) && !strcmp(specs[i].kind, s->kind))
			return &specs[i];
	return NULL;
}

/* Has an event of the group and of s's kind been added? */
static int kind_added(const struct ev_spec *s, const struct rec_event *evs, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++)
			if (!strcmp(specs[k].name, evs[i].name) && !strcmp(specs[k].group, s->group) &&
			    !strcmp(specs[k].kind, s->kind) && !specs[k].fallback)
				return 1;
	return 0;
}

int events_group_add(const char *name, uint64_t period, const struct rec_opts_events *o, struct rec_event **evs,
		     size_t *nr, char *missing, size_t missing_len, const char **fallback)
{
	size_t found = 0, added = 0;
	int denied = 0;

	missing[0] = 0;
	*fallback = NULL;
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		const struct ev_spec *s = &specs[i];
		struct rec_event e, *dup;
		int r;

		if (strcmp(s->group, name) || s->past)
			continue;
		found++;
		if (s->args) {
			r = syscall_add(s, period, o, evs, nr);
			if (r == -ENODEV || r == -EACCES) {
				denied |= r == -EACCES;
				if (!strstr(missing, CATALOG_SYSCALL_CARRIER))
					missing_add(missing, missing_len, CATALOG_SYSCALL_CARRIER);
				continue;
			}
			if (r)
				return r;
			added++;
			continue;
		}
		if (s->fallback) {
			if (kind_added(s, *evs, *nr))
				continue;
			/* Said once; but not where tracefs may not be read,
			 * which only root may: the software event is then what
			 * is allowed, as documented. */
			if (!denied)
				*fallback = s->name;
		}
		/* Two groups may share an event (faults and swap both want
		 * major faults): record it once, with the most either asks. */
		if ((dup = event_find(*evs, *nr, s->name))) {
			if (s->stack && !(dup->attr.sample_type & PERF_SAMPLE_CALLCHAIN)) {
				events_stack_attr(&dup->attr, o);
				dup->callchain_off = events_callchain_offset(dup->attr.sample_type);
			}
			added++;
			continue;
		}
		memset(&e, 0, sizeof(e));
		snprintf(e.name, sizeof(e.name), "%s", s->name);
		e.group = s->group;
		events_attr_common(&e.attr, o);
		e.attr.type = s->type;
		e.attr.sample_period = period ? period : 1;
		e.attr.sample_type = SAMPLE_BASE;
		if (s->type == PERF_TYPE_TRACEPOINT) {
			uint64_t id = 0;

			r = tracepoint_load(s->name, &id, &e.format);
			e.attr.config = id;
			if (r) {
				/* A kernel without one tracepoint still has the
				 * others: name it and go on. */
				denied |= r == -EACCES;
				if (!spec_fallback(s))
					missing_add(missing, missing_len, s->name);
				continue;
			}
			e.attr.sample_type |= PERF_SAMPLE_RAW;
		} else {
			e.attr.config = s->config;
		}
		if (s->addr)
			e.attr.sample_type |= PERF_SAMPLE_ADDR;
		if (s->stack)
			events_stack_attr(&e.attr, o);
		e.callchain_off = events_callchain_offset(e.attr.sample_type);
		if (!strcmp(s->name, "oom:mark_victim")) {
			/* The recorder snapshots the system when it sees a
			 * kill, so it must see it at once, while the victim
			 * is still there: wake the drain loop for each one. */
			e.victim_pid_off = events_field_offset(e.format, "pid");
			e.attr.watermark = 0;
			e.attr.wakeup_events = 1;
		}
		if (!strcmp(s->name, "signal:signal_deliver")) {
			/* Only memory errors' signals, filtered in the kernel;
			 * each keeps the stack pointer, which tells a stack
			 * overflow from a wild write. They wake the drain loop
			 * no sooner than the other events: a JVM takes SIGSEGV
			 * for its null checks, and a wakeup each cost 30 us. */
			snprintf(e.filter, sizeof(e.filter), "%s", CATALOG_SIGNALS_FILTER);
			/* With a dump, a frame-pointer chain too: at a stack
			 * overflow the stack pointer is in the guard gap, and
			 * no dump from it can be read. */
			e.attr.exclude_callchain_user = 0;
			if (!(e.attr.sample_type & PERF_SAMPLE_REGS_USER)) {
				e.attr.sample_type |= PERF_SAMPLE_REGS_USER;
				e.attr.sample_regs_user = 1ull << REC_REG_SP;
			}
		}
		if (events_push(evs, nr, &e)) {
			free(e.format);
			return -ENOMEM;
		}
		added++;
	}
	if (!found)
		return -ENOENT;
	if (!added)
		return denied ? -EACCES : -ENODEV;
	return 0;
}

int events_deep_add(const struct rec_opts_events *o, unsigned freq, struct rec_event **evs, size_t *nr)
{
	struct rec_event e;

	memset(&e, 0, sizeof(e));
	snprintf(e.name, sizeof(e.name), "%s", CATALOG_DEEP_EVENT);
	e.group = CATALOG_DEEP_GROUP;
	events_attr_common(&e.attr, o);
	e.attr.type = PERF_TYPE_SOFTWARE;
	e.attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	/* By rate, not by count: a thread that faults rarely is sampled on
	 * nearly every fault, a busy one a few times a second, so the cost
	 * is bounded whatever the fault rate. */
	e.attr.freq = 1;
	e.attr.sample_freq = freq;
	e.attr.sample_type = SAMPLE_BASE;
	events_stack_attr(&e.attr, o);
	/* The kernel copies the stack up to its end only, so a shallow
	 * thread pays for what it has; the ring sets the whole size aside. */
	e.attr.sample_stack_user = CATALOG_DEEP_DUMP;
	/* Only its user stack is read (to complete others'): no kernel
	 * callchain, which would have kallsyms read for a recording that
	 * names no kernel frame. */
	e.attr.sample_type &= ~(uint64_t)PERF_SAMPLE_CALLCHAIN;
	e.attr.exclude_callchain_user = 0;
	e.callchain_off = events_callchain_offset(e.attr.sample_type);
	return events_push(evs, nr, &e);
}

int events_is_deep(const struct rec_event *e)
{
	return e->group && !strcmp(e->group, CATALOG_DEEP_GROUP);
}

int events_tracking_add(const struct rec_opts_events *o, struct rec_event **evs, size_t *nr)
{
	struct rec_event e;

	memset(&e, 0, sizeof(e));
	snprintf(e.name, sizeof(e.name), "%s", CATALOG_TRACKING_EVENT);
	e.group = "";
	events_attr_common(&e.attr, o);
	e.attr.type = PERF_TYPE_SOFTWARE;
	e.attr.config = PERF_COUNT_SW_DUMMY;
	e.attr.sample_period = 1;
	e.attr.sample_type = SAMPLE_BASE;
	e.attr.mmap = 1;
	e.attr.mmap2 = 1;
	/* Data mappings too: a fault's address is then always inside a known
	 * mapping, file-backed or anonymous. */
	e.attr.mmap_data = 1;
	e.attr.comm = 1;
	e.attr.comm_exec = 1;
	e.attr.task = 1;
	e.attr.build_id = o->build_id;
	return events_push(evs, nr, &e);
}

int events_id_add(struct rec_event *e, uint64_t id, int fd)
{
	if (e->nr_ids == e->ids_alloc) {
		size_t n = e->ids_alloc ? e->ids_alloc * 2 : 16;
		uint64_t *p = realloc(e->ids, n * sizeof(*p));
		int *f;

		if (!p)
			return -ENOMEM;
		e->ids = p;
		f = realloc(e->fds, n * sizeof(*f));
		if (!f)
			return -ENOMEM;
		e->fds = f;
		e->ids_alloc = n;
	}
	e->fds[e->nr_ids] = fd;
	e->ids[e->nr_ids++] = id;
	return 0;
}

void events_free(struct rec_event *evs, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		free(evs[i].format);
		free(evs[i].groups);
		free(evs[i].ids);
		free(evs[i].fds);
	}
}
