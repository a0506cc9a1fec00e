/*
 * record/events.c: event groups and their perf_event_attr.
 *
 * Every event shares one sample layout prefix, IDENTIFIER|IP|TID|TIME, and
 * CPU, with sample_id_all, because formats/FORMAT.md finds record times at
 * fixed positions from it. Syscall entry events carry the callchain and the
 * arguments; the matching exit events carry only the return value, so a
 * stack is stored once per call.
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

#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif

#define SAMPLE_BASE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

const char *const events_group_names[] = { "brk", "mmap", "faults", "malloc", NULL };

struct ev_spec {
	const char *group;
	const char *name; /* "sys:event" for tracepoints */
	uint32_t type;	  /* PERF_TYPE_TRACEPOINT or PERF_TYPE_SOFTWARE */
	uint64_t config;  /* software event id */
	int stack;	  /* take a callchain */
	int addr;	  /* PERF_SAMPLE_ADDR */
};

static const struct ev_spec specs[] = {
	{ "brk", "syscalls:sys_enter_brk", PERF_TYPE_TRACEPOINT, 0, 1, 0 },
	{ "brk", "syscalls:sys_exit_brk", PERF_TYPE_TRACEPOINT, 0, 0, 0 },
	{ "mmap", "syscalls:sys_enter_mmap", PERF_TYPE_TRACEPOINT, 0, 1, 0 },
	{ "mmap", "syscalls:sys_exit_mmap", PERF_TYPE_TRACEPOINT, 0, 0, 0 },
	{ "mmap", "syscalls:sys_enter_munmap", PERF_TYPE_TRACEPOINT, 0, 1, 0 },
	{ "mmap", "syscalls:sys_exit_munmap", PERF_TYPE_TRACEPOINT, 0, 0, 0 },
	{ "mmap", "syscalls:sys_enter_mremap", PERF_TYPE_TRACEPOINT, 0, 1, 0 },
	{ "mmap", "syscalls:sys_exit_mremap", PERF_TYPE_TRACEPOINT, 0, 0, 0 },
	{ "faults", "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 1, 1 },
	{ "faults", "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 0, 1 },
};

static char tracefs_path[256];

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
		return -ENODEV;
	*id = strtoull(idtext, NULL, 10);
	free(idtext);
	snprintf(rel, sizeof(rel), "events/%s/%s/format", sys, colon + 1);
	*format = events_tracefs_read(rel, NULL);
	return *format ? 0 : -ENODEV;
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
}

unsigned events_callchain_offset(uint64_t st)
{
	/* The perf ABI order of the fields before the callchain; READ is
	 * never used by memsight. */
	static const uint64_t before[] = { PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID,
					   PERF_SAMPLE_TIME, PERF_SAMPLE_ADDR, PERF_SAMPLE_ID,
					   PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD };
	unsigned off = 8; /* perf_event_header */

	if (!(st & PERF_SAMPLE_CALLCHAIN))
		return 0;
	for (size_t i = 0; i < sizeof(before) / sizeof(before[0]); i++)
		if (st & before[i])
			off += 8;
	return off;
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

int events_group_add(const char *name, const struct rec_opts_events *o, struct rec_event **evs,
		     size_t *nr, char *missing, size_t missing_len)
{
	size_t start = *nr, found = 0;

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		const struct ev_spec *s = &specs[i];
		struct rec_event e;
		int r;

		if (strcmp(s->group, name))
			continue;
		found++;
		memset(&e, 0, sizeof(e));
		snprintf(e.name, sizeof(e.name), "%s", s->name);
		e.group = s->group;
		events_attr_common(&e.attr, o);
		e.attr.type = s->type;
		e.attr.sample_period = 1;
		e.attr.sample_type = SAMPLE_BASE;
		if (s->type == PERF_TYPE_TRACEPOINT) {
			uint64_t id = 0;

			r = tracepoint_load(s->name, &id, &e.format);
			e.attr.config = id;
			if (r) {
				snprintf(missing, missing_len, "%s", s->name);
				events_free(*evs + start, *nr - start);
				*nr = start;
				return r;
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
		if (events_push(evs, nr, &e)) {
			free(e.format);
			return -ENOMEM;
		}
	}
	return found ? 0 : -ENOENT;
}

int events_tracking_add(const struct rec_opts_events *o, struct rec_event **evs, size_t *nr)
{
	struct rec_event e;

	memset(&e, 0, sizeof(e));
	snprintf(e.name, sizeof(e.name), "dummy");
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
		free(evs[i].ids);
		free(evs[i].fds);
	}
}
