/*
 * record/probes/setup.c: the events of the groups asked for: the malloc family's
 * uprobes, kernel filters, opening each event on each CPU or task with
 * its ring, the ids that tell samples apart, the advice when the kernel
 * refuses, and handing the closing of them all to a child at the end.
 */
#include <errno.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "../../formats/catalog.h"
#include "../procs/procsnap.h"
#include "../recorder.h"

static int perf_open(struct perf_event_attr *a, pid_t pid, int cpu, unsigned long flags)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC | flags);
}

static int paranoid(void)
{
	char buf[32];
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = 2;

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			v = atoi(buf);
		fclose(f);
	}
	return v;
}

/* The highest kernel.perf_event_paranoid that lets an unprivileged user
 * open ev: every event here samples the kernel (tracepoints fire there,
 * and stacks start there), which needs 1 or lower; a CPU-wide event 0;
 * a tracepoint's raw fields -1, but for the syscalls ones on a task. */
static int paranoid_needed(const struct recorder *rc, const char *ev)
{
	if (strchr(ev, ':') && (rc->system_wide || strncmp(ev, "syscalls:", 9)))
		return -1;
	return rc->system_wide ? 0 : 1;
}

static int explain_open_error(const struct recorder *rc, int err, const char *ev)
{
	if ((err == EACCES || err == EPERM) && rc->system_wide)
		return msg_error("system-wide recording (-a) refused for '%s' (%s): it needs root or CAP_PERFMON, or "
			     "kernel.perf_event_paranoid at most %d (now %d: sysctl -w kernel.perf_event_paranoid=%d); "
			     "without them record your own processes with -p PID or -- COMMAND",
			     ev, strerror(err), paranoid_needed(rc, ev), paranoid(), paranoid_needed(rc, ev));
	if (err == EACCES || err == EPERM)
		return msg_error("perf_event_open refused for '%s' (%s): it needs root or CAP_PERFMON, or "
			     "kernel.perf_event_paranoid at most %d (now %d: sysctl -w kernel.perf_event_paranoid=%d)",
			     ev, strerror(err), paranoid_needed(rc, ev), paranoid(), paranoid_needed(rc, ev));
	if (err == EMFILE || err == ENFILE)
		return msg_error("too many open files for '%s': raise the limit with 'ulimit -n'", ev);
	if (err == ESRCH)
		return msg_error("cannot open '%s': the target process is gone", ev);
	return msg_error("cannot open event '%s': %s", ev, strerror(err));
}

int rec_probe_build_id(void)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
				     .config = PERF_COUNT_SW_DUMMY, .disabled = 1, .mmap2 = 1,
				     .build_id = 1 };
	int fd = perf_open(&a, 0, -1, 0);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* Samples that carry their cgroup's id, and PERF_RECORD_CGROUP and
 * PERF_RECORD_NAMESPACES for what is made later (Linux 5.7). */
int rec_probe_cgroup(void)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
				     .config = PERF_COUNT_SW_DUMMY, .disabled = 1, .cgroup = 1, .namespaces = 1,
				     .sample_type = PERF_SAMPLE_CGROUP };
	int fd = perf_open(&a, 0, -1, 0);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

int rec_probe_format_lost(void)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
				     .config = PERF_COUNT_SW_DUMMY, .disabled = 1, .read_format = PERF_FORMAT_LOST };
	int fd = perf_open(&a, 0, -1, 0);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* Whether every call of a command can go through memsight's wrapper: it
 * is a dynamically linked program (or a script run by one), into which
 * the wrapper can be preloaded, and no -O names the allocator to probe.
 * why says otherwise why not. */
static int wrapper_fits(struct recorder *rc, char *why, size_t whylen)
{
	struct uprobe_objects found = { .nr = 0 };

	why[0] = 0;
	if (rc->malloc_via == MALLOC_VIA_UPROBES || rc->object)
		return 0;
	if (uprobes_command_allocators(rc->command, &found, why, whylen) || why[0]) {
		if (!why[0])
			snprintf(why, whylen, "'%s' (the dynamic loader cannot tell what it maps)", rc->command[0]);
		return 0;
	}
	return 1;
}

/* Whether the allocations come through the sampler: a command started
 * with it (--sample-bytes, or every call by default), or processes that run
 * with it already (-p), whose probe points then stand for the malloc
 * family. Fills rc->sampler; returns 0, or -1 after an error. */
static int sampler_choose(struct recorder *rc, struct uprobe_object *at)
{
	char path[PATH_MAX + 64], why[PATH_MAX + 64];
	size_t have = 0;

	/* Every call, through the wrapper: a trap of a uprobe on a NOP per
	 * allocation and per free, not an entry and a return probe on the
	 * allocator's own code. */
	if (rc->command && !rc->sample_bytes && !rc->system_wide) {
		if (!wrapper_fits(rc, why, sizeof(why))) {
			if (rc->guard)
				return msg_error("--guard: memsight's wrapper cannot be preloaded into %s: the guard lives "
						 "in it", why);
			if (rc->malloc_via == MALLOC_VIA_WRAPPER)
				return msg_error("--malloc-via wrapper: memsight's wrapper cannot be preloaded into %s: "
						 "record with --malloc-via uprobes", why);
			if (!rc->quiet && why[0])
				msg_note("malloc: uprobes on the allocator itself: memsight's wrapper cannot be preloaded "
					 "into %s",
					 why);
			return 0;
		}
		if (uprobes_sampler_library(path, sizeof(path)))
			return msg_error("-e malloc: cannot find " UPROBES_SAMPLER " (looked in %s): build it with make, or "
					 "make install; or record with --malloc-via uprobes",
					 path);
		snprintf(rc->sampler, sizeof(rc->sampler), "%.4095s", path);
		if (!rc->quiet)
			msg_note("malloc: every call through memsight's wrapper (%s preloaded into the command and what it "
				 "runs); --malloc-via uprobes probes the allocator instead",
				 UPROBES_SAMPLER);
		return 0;
	}
	if (rc->command && rc->sample_bytes) {
		if (rc->malloc_via == MALLOC_VIA_UPROBES)
			return msg_error("--sample-bytes samples in memsight's wrapper: drop --malloc-via uprobes, or "
					 "--sample-bytes to trace every call through uprobes");
		if (!wrapper_fits(rc, why, sizeof(why)) && why[0])
			return msg_error("--sample-bytes: memsight's wrapper cannot be preloaded into %s: record every "
					 "call, without --sample-bytes",
					 why);
		if (uprobes_sampler_library(path, sizeof(path)))
			return msg_error("--sample-bytes: cannot find " UPROBES_SAMPLER " (looked in %s): build it with make, "
					 "or make install",
					 path);
		snprintf(rc->sampler, sizeof(rc->sampler), "%.4095s", path);
		return 0;
	}
	for (size_t i = 0; i < rc->nr_pids; i++)
		have += !uprobes_find_sampler(rc->pids[i], at);
	if (rc->nr_pids && have == rc->nr_pids) {
		snprintf(path, sizeof(path), "%s", at->path);
		snprintf(rc->sampler, sizeof(rc->sampler), "%.4095s", path);
		if (!rc->quiet)
			msg_note("malloc: %s with the allocation sampler (%s): recording its samples, estimates at the rate "
				 "%s started with",
				 rc->nr_pids > 1 ? "the processes run" : "the process runs", path,
				 rc->nr_pids > 1 ? "they were" : "it was");
	} else if (rc->nr_pids && (rc->sample_bytes || have)) {
		msg_note("malloc: %s not started with the allocation sampler (LD_PRELOAD=%s): recording every call instead",
			 have ? "some processes were" : rc->nr_pids > 1 ? "the processes were" : "the process was",
			 UPROBES_SAMPLER);
	}
	return 0;
}

/* Every recording says which path its malloc calls take, once its probes
 * are in place. */
static void note_uprobes(const struct uprobe_objects *objs, const char *why)
{
	char names[1024];
	size_t k = 0;

	for (int i = 0; i < objs->nr; i++) {
		const char *base = strrchr(objs->v[i].path, '/');

		k += snprintf(names + k, k < sizeof(names) ? sizeof(names) - k : 0, "%s%s",
			      i ? (i + 1 < objs->nr ? ", " : " and ") : "", base ? base + 1 : objs->v[i].path);
	}
	msg_note("malloc: probing the malloc family of %s%s%s, an entry and a return probe a call; -O OBJECT picks one",
		 names, why[0] ? ", " : " (what the target maps)", why);
}

static int setup_malloc(struct recorder *rc, const struct rec_opts_events *o)
{
	struct uprobe_opts u = { .min_size = rc->min_size, .max_size = rc->max_size, .sample = rc->sample,
				 .exclude_pid = rc->system_wide ? getpid() : 0, .free_stacks = rc->free_stacks };
	struct uprobe_objects found = { .nr = 0 };
	struct uprobe_object at = { .pid = 0 };
	char err[512] = "", why[PATH_MAX + 64] = "";
	size_t n = 0;
	int r = -ENOENT;

	if (sampler_choose(rc, &at))
		return -1;
	if (rc->sampler[0]) {
		u.sampled = 1;
		/* Only the command's processes run the wrapper as the recording
		 * preloaded it (sampler_inherited): they report at one site. */
		u.one_site = rc->command && !rc->system_wide;
		/* A running process's, as it maps it; the command's, this
		 * memsight's own. */
		if (!at.pid)
			snprintf(at.path, sizeof(at.path), "%s", rc->sampler);
		u.objects.nr = 0;
		uprobes_objects_add(&u.objects, &at);
		snprintf(rc->allocator, sizeof(rc->allocator), "%s", rc->sampler);
		goto define;
	}
	if (rc->nr_pids) {
		for (size_t i = 0; i < rc->nr_pids; i++) {
			struct uprobe_objects one;

			/* A process that was just started: its loader maps
			 * libc within milliseconds, even on a loaded machine. */
			if (uprobes_await_allocators(rc->pids[i], &one, 2000))
				continue;
			for (int k = 0; k < one.nr; k++)
				uprobes_objects_add(&found, &one.v[k]);
		}
		r = found.nr ? 0 : -ENOENT;
	} else if (rc->system_wide) {
		r = uprobes_system_allocators(&found);
	} else {
		r = uprobes_command_allocators(rc->command, &found, why, sizeof(why));
		/* A command the loader cannot be asked about (a wrapper,
		 * a missing file): the libc this machine runs. */
		if (r)
			r = uprobes_find_allocators(0, &found);
	}
	if (rc->object) {
		char maps[512] = "";

		for (int i = 0; i < found.nr; i++)
			snprintf(maps + strlen(maps), sizeof(maps) - strlen(maps), "%s%s", i ? ", " : " (it maps ",
				 strrchr(found.v[i].path, '/') ? strrchr(found.v[i].path, '/') + 1 : found.v[i].path);
		if (uprobes_resolve_object(rc->object, &found, &u.objects.v[0]))
			return msg_error("-O %s names no allocator the target maps%s%s: give a path, or the soname of one "
				     "it maps",
				     rc->object, maps, maps[0] ? ")" : "");
		u.objects.nr = 1;
	} else if (r) {
		if (rc->nr_pids)
			return msg_error("process %d maps no allocator (no libc.so): give the object that holds its malloc "
				     "with -O, e.g. -O /proc/%d/exe for a static executable",
				     (int)rc->pids[0], (int)rc->pids[0]);
		return msg_error("cannot find the allocator to probe: give the object that holds malloc with -O");
	} else {
		u.objects = found;
	}
	for (int i = 0; i < u.objects.nr; i++)
		n += snprintf(rc->allocator + n, n < sizeof(rc->allocator) ? sizeof(rc->allocator) - n : 0, "%s%s",
			      i ? "," : "", u.objects.v[i].path);
define:
	/* And what tells of its own allocations, through the same probes. */
	if (rc->command)
		uprobes_command_emitters(rc->command, &u.emitters);
	for (size_t i = 0; i < rc->nr_pids; i++)
		uprobes_pid_emitters(rc->pids[i], &u.emitters);
	if (!rc->quiet)
		for (int i = 0; i < u.emitters.nr; i++)
			msg_note("malloc: and the otel_memory probes of %s", u.emitters.v[i].path);
	if (!events_tracefs())
		return msg_error("cannot record malloc: tracefs is not mounted and cannot be (%s)", strerror(errno));
	uprobes_remove_stale();
	if (uprobes_add(&u, o, &rc->evs, &rc->nr_evs, err, sizeof(err)))
		return msg_error("%s", err);
	if (!rc->quiet && !u.sampled)
		note_uprobes(&u.objects, why);
	/* Allocators mapped later (an exec, a dlopen, a container's own
	 * libc) are probed as they come. */
	if (!u.sampled)
		lateprobe_start(&rc->late, &u, o, !rc->system_wide, u.objects.nr + u.emitters.nr,
				rec_now_ns(CLOCK_MONOTONIC));
	return 0;
}

/* GROUP or GROUP/N (one sample in N firings). */
static int group_parse(char *tok, uint64_t *period)
{
	char *slash = strchr(tok, '/'), *end;

	*period = 1;
	if (!slash)
		return 0;
	*slash = 0;
	*period = strtoull(slash + 1, &end, 10);
	if (*end || !slash[1] || !*period)
		return msg_error("invalid sampling in '%s/%s': give GROUP/N to keep one event in N, e.g. kmem/100", tok,
			     slash + 1);
	if (!strcmp(tok, "malloc"))
		return msg_error("malloc takes -s N for sampling, not malloc/%s", slash + 1);
	return 0;
}

/* Does --filter's arg name the event called name in group (on pass 0 as
 * "sys:name:", on pass 1 as "name:" or "group:")? The length of the name
 * it gives, 0 when it names another. */
static size_t filter_names(const char *arg, size_t pass, const char *name, const char *group)
{
	const char *shortname = strchr(name, ':'), *colon = strchr(arg, ':');
	size_t l;

	if (pass == 0) {
		l = strlen(name);
		return !strncmp(arg, name, l) && arg[l] == ':' ? l : 0;
	}
	if (!colon)
		return 0;
	l = colon - arg;
	return (shortname && strlen(shortname + 1) == l && !strncmp(shortname + 1, arg, l)) ||
			       (strlen(group) == l && !strncmp(group, arg, l))
		       ? l
		       : 0;
}

/* --filter EVENT:EXPR: EVENT is a tracepoint (sys:name or name) or a
 * group, whose tracepoints all get EXPR. A syscall's EXPR narrows its
 * part of the carrier's filter (events_syscalls_filter), which every
 * carrier then gets. */
static int filters_apply(struct recorder *rc)
{
	for (size_t i = 0; i < rc->nr_filters; i++) {
		const char *arg = rc->filters[i], *expr = NULL;
		size_t matched = 0;

		for (size_t pass = 0; pass < 2 && !matched; pass++) {
			for (size_t j = 0; j < rc->nr_evs; j++) {
				struct rec_event *e = &rc->evs[j];
				size_t l;

				if (!e->format || !e->group[0])
					continue;
				for (size_t k = 0; k < e->nr_calls; k++) {
					struct rec_syscall *c = &e->calls[k];

					if (!(l = filter_names(arg, pass, c->name, c->group)))
						continue;
					if (c->filter[0])
						return msg_error("two filters for '%s': join them with && in one --filter",
								 c->name);
					if ((size_t)snprintf(c->filter, sizeof(c->filter), "%s", arg + l + 1) >=
					    sizeof(c->filter))
						return msg_error("the filter for '%s' is too long: at most %zu bytes",
								 c->name, sizeof(c->filter) - 1);
					matched++;
				}
				if (e->nr_calls || !(l = filter_names(arg, pass, e->name, e->group)))
					continue;
				expr = arg + l + 1;
				if (e->filter[0] && strcmp(e->filter, CATALOG_SIGNALS_FILTER))
					return msg_error("two filters for '%s': join them with && in one --filter", e->name);
				/* The signals group's own filter stays: EXPR narrows it. */
				if ((e->filter[0] ? (size_t)snprintf(e->filter, sizeof(e->filter), "(%s) && (%s)",
								     CATALOG_SIGNALS_FILTER, expr)
						  : (size_t)snprintf(e->filter, sizeof(e->filter), "%s", expr)) >=
				    sizeof(e->filter))
					return msg_error("the filter for '%s' is too long: at most %zu bytes", e->name,
						     sizeof(e->filter) - 1);
				matched++;
			}
		}
		if (!matched)
			return msg_error("--filter '%s' names no recorded tracepoint: give EVENT:EXPR with EVENT a tracepoint "
				     "of the groups recorded (e.g. kmem:kmalloc:bytes_req > 4096) or a group",
				     arg);
	}
	for (size_t j = 0; j < rc->nr_evs; j++)
		if (rc->evs[j].nr_calls && events_syscalls_filter(&rc->evs[j]))
			return msg_error("the filters given for '%s' are too long together: at most %zu bytes",
					 rc->evs[j].name, sizeof(rc->evs[j].filter) - 1);
	return 0;
}

/* The pages of a deep-stacks ring (a power of two, as the kernel wants). */
static size_t deep_ring_pages(const struct recorder *rc)
{
	size_t page = sysconf(_SC_PAGESIZE), pages = rc->mmap_pages >> DEEP_RING_SHIFT;

	if (!pages)
		pages = 1;
	while (pages * page < DEEP_RING_MIN)
		pages <<= 1;
	return pages;
}

/* Does any event take a stack dump that could run past its end? */
static int deep_wanted(const struct recorder *rc)
{
	for (size_t i = 0; i < rc->nr_evs; i++)
		if ((rc->evs[i].attr.sample_type & PERF_SAMPLE_STACK_USER) && !rc->evs[i].dump_data &&
		    rc->evs[i].attr.sample_stack_user < CATALOG_DEEP_DUMP)
			return 1;
	return 0;
}

/* The kernel refuses a frequency above kernel.perf_event_max_sample_rate,
 * which it lowers by itself when sampling takes too long: ask no more. */
static unsigned deep_freq_allowed(int want)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	unsigned long max = 0;

	if (f) {
		if (fscanf(f, "%lu", &max) != 1)
			max = 0;
		fclose(f);
	}
	return max && max < (unsigned long)want ? (unsigned)max : (unsigned)want;
}

int rec_events_setup(struct recorder *rc)
{
	struct rec_opts_events o = {
		.callchain = rc->callchain,
		.stack_size = rc->stack_size,
		.system_wide = rc->system_wide,
		.inherit = !rc->system_wide,
		.enable_on_exec = rc->command && !rc->system_wide,
		.wakeup_bytes = rc->mmap_pages * (unsigned)sysconf(_SC_PAGESIZE) / 4,
		.build_id = rc->build_id,
		.format_lost = rc->format_lost,
	};
	char *copy = strdup(rc->groups), *save = NULL, *tok;
	size_t groups_ok = 0;
	int ret = -1;

	if (!copy)
		return msg_error("out of memory");
	if (events_tracking_add(&o, &rc->evs, &rc->nr_evs)) {
		free(copy);
		return msg_error("out of memory");
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char missing[1024] = "";
		const char *fallback = NULL;
		uint64_t period;
		int r;

		if (group_parse(tok, &period))
			goto out;
		/* perf's name for the event, which events -h uses too. */
		if (!strcmp(tok, "page-faults"))
			tok = "faults";
		if (!strcmp(tok, "malloc")) {
			if (setup_malloc(rc, &o))
				goto out;
			groups_ok++;
			continue;
		}
		r = events_group_add(tok, period, &o, &rc->evs, &rc->nr_evs, missing, sizeof(missing), &fallback);
		if (r == -ENOENT) {
			char known[256] = "";

			for (size_t i = 0; events_group_names[i]; i++)
				snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
					 events_group_names[i]);
			msg_error("unknown event group '%s': known groups are %s", tok, known);
			goto out;
		}
		if (r == -EACCES) {
			msg_error("cannot read the tracepoints of group '%s' in %s: permission denied; run as root", tok,
			      events_tracefs() ? events_tracefs() : "tracefs");
			goto out;
		}
		if (r == -ENODEV) {
			/* One line, then record the rest: a kernel without one
			 * group still has the others. */
			msg_note("skipping group '%s': this kernel has none of %s%s", tok,
				missing, events_tracefs() ? "" : " (tracefs is not mounted and cannot be)");
			continue;
		}
		if (r == -EXDEV) {
			msg_error("group '%s' shares its syscalls' event (%s) with another group asked for with "
				  "another /N: give them the same", tok, CATALOG_SYSCALL_CARRIER);
			goto out;
		}
		if (r) {
			msg_error("cannot set up group '%s': %s", tok, strerror(-r));
			goto out;
		}
		if (missing[0])
			msg_note("group '%s' without %s: this kernel lacks them; recording the rest",
				tok, missing);
		if (fallback)
			msg_note("group '%s': this kernel has no exceptions tracepoints; recording the %s software "
				 "event instead, so faults have no kinds (read, write, exec, cow, kernel)", tok, fallback);
		groups_ok++;
	}
	if (!groups_ok) {
		msg_error("no event group could be set up: nothing to record");
		goto out;
	}
	if (rc->deep_freq > 0 && deep_wanted(rc)) {
		o.wakeup_bytes = deep_ring_pages(rc) * (unsigned)sysconf(_SC_PAGESIZE) / 4;
		if (events_deep_add(&o, deep_freq_allowed(rc->deep_freq), &rc->evs, &rc->nr_evs)) {
			msg_error("out of memory");
			goto out;
		}
	}
	/* System-wide, every sample says which cgroup (container) its
	 * process was in; the tracking event tells of cgroups and
	 * namespaces made since. */
	for (size_t i = 0; rc->sample_cgroup && i < rc->nr_evs; i++) {
		if (rc->evs[i].group[0]) {
			rc->evs[i].attr.sample_type |= PERF_SAMPLE_CGROUP;
		} else {
			rc->evs[i].attr.cgroup = 1;
			rc->evs[i].attr.namespaces = 1;
		}
	}
	ret = filters_apply(rc);
out:
	free(copy);
	return ret;
}

static int fds_push(struct recorder *rc, int fd)
{
	if (rc->nr_fds == rc->fds_alloc) {
		size_t n = rc->fds_alloc ? rc->fds_alloc * 2 : 64;
		int *p = realloc(rc->fds, n * sizeof(*p));

		if (!p)
			return -1;
		rc->fds = p;
		rc->fds_alloc = n;
	}
	rc->fds[rc->nr_fds++] = fd;
	return 0;
}

static int ring_map(struct recorder *rc, struct ring *r, int fd)
{
	size_t page = sysconf(_SC_PAGESIZE);
	size_t pages = r->deep ? deep_ring_pages(rc) : rc->mmap_pages;
	size_t len = (pages + 1) * page;

	r->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		return msg_error("cannot map the %sring buffer of cpu %d (%zu KiB): %s; try a smaller -m",
				 r->deep ? "deep-stacks " : "", r->cpu, len >> 10, strerror(errno));
	}
	r->map_len = len;
	r->fd = fd;
	r->pc = r->base;
	r->data = (unsigned char *)r->base + page;
	r->size = (uint64_t)pages * page;
	r->mask = r->size - 1;
	return 0;
}

/* Returns 0, -1 after reporting an error, or 1 when the kernel refused
 * the event's filter (reported; the caller drops the event). */
static int open_one(struct recorder *rc, struct rec_event *e, pid_t pid, int cpu)
{
	struct ring *r = &rc->rings[events_is_deep(e) ? rc->ncpus + cpu : cpu];
	char filter[sizeof(e->filter) + 64];
	uint64_t id;
	/* --cgroup, where the kernel can filter by it: the event counts only
	 * in that cgroup's processes. */
	int cg = pid == -1 && rc->cg.fd >= 0;
	int fd = perf_open(&e->attr, cg ? rc->cg.fd : pid, cpu, cg ? PERF_FLAG_PID_CGROUP : 0);

	if (fd < 0) {
		/* A CPU that is offline has nothing to record; nor has a
		 * thread that ended before an allocator found late is probed
		 * in it. */
		if ((errno == ENODEV && pid == -1) || (errno == ESRCH && rc->late.opening))
			return 0;
		return explain_open_error(rc, errno, e->name);
	}
	filter[0] = 0;
	if (rc->system_wide && e->format && !e->filter[0])
		/* Keep the recorder's own writes and allocations out. */
		snprintf(filter, sizeof(filter), "common_pid != %d", (int)getpid());
	else if (rc->system_wide && e->format && strncmp(e->name, "memsight_", 9))
		snprintf(filter, sizeof(filter), "(%s) && common_pid != %d", e->filter, (int)getpid());
	else if (e->filter[0])
		snprintf(filter, sizeof(filter), "%s", e->filter);
	if (filter[0] && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter)) {
		int err = errno, given = e->filter[0] && strncmp(e->name, "memsight_", 9);

		close(fd);
		/* The carrier's filter is a user's only where --filter added to it. */
		if (e->nr_calls)
			given = 0;
		for (size_t i = 0; i < e->nr_calls; i++)
			given |= e->calls[i].filter[0] != 0;
		if (!given)
			return msg_error("the kernel refused the filter '%s' on '%s': %s", filter, e->name,
				     strerror(err));
		fprintf(stderr,
			"memsight record: the kernel refused the filter '%s' on '%s' (%s): check the expression "
			"against the fields in %s/events/%.*s/%s/format; recording the other events\n",
			e->filter, e->name, strerror(err), events_tracefs() ? events_tracefs() : "tracefs",
			(int)(strchr(e->name, ':') - e->name), e->name, strchr(e->name, ':') + 1);
		return 1;
	}
	if (fds_push(rc, fd)) {
		close(fd);
		return msg_error("out of memory");
	}
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id))
		return msg_error("cannot read the id of '%s': %s", e->name, strerror(errno));
	if (events_id_add(e, id, fd))
		return msg_error("out of memory");
	if (!r->base)
		return ring_map(rc, r, fd);
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd))
		return msg_error("cannot share the ring of cpu %d with '%s': %s", cpu, e->name, strerror(errno));
	return 0;
}

static int id_cmp(const void *a, const void *b)
{
	const struct id_map *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The events by id, for the drain loop (rec_event_of). */
static int ids_index(struct recorder *rc)
{
	size_t n = 0;
	struct id_map *v;

	for (size_t e = 0; e < rc->nr_evs; e++)
		n += rc->evs[e].nr_ids;
	if (!(v = malloc((n ? n : 1) * sizeof(*v))))
		return -ENOMEM;
	n = 0;
	for (size_t e = 0; e < rc->nr_evs; e++)
		for (size_t i = 0; i < rc->evs[e].nr_ids; i++)
			v[n++] = (struct id_map){ rc->evs[e].ids[i], &rc->evs[e] };
	if (n > 1)
		qsort(v, n, sizeof(*v), id_cmp);
	free(rc->ids);
	rc->ids = v;
	rc->nr_ids = n;
	return 0;
}

/* System-wide, a thread's first deep-stacks sample comes after as many
 * of its faults as the whole CPU's rate sets, hundreds on a busy one, and
 * its stacks before then that ran past their dump have nothing to be
 * completed from. The command's threads are sampled as well by a rate of
 * their own, as without -a: from their first faults. Its fds join the
 * deep-stacks event's ids; only its inheriting differs. */
static int deep_command_open(struct recorder *rc)
{
	for (size_t e = 0; e < rc->nr_evs; e++) {
		struct rec_event *ev = &rc->evs[e];
		struct perf_event_attr keep = ev->attr;
		int r = 0;

		if (!events_is_deep(ev))
			continue;
		ev->attr.inherit = 1;
		for (int c = 0; c < rc->ncpus && !r; c++)
			r = open_one(rc, ev, rc->child, c);
		ev->attr = keep;
		if (r)
			return -1;
	}
	return 0;
}

int rec_events_open(struct recorder *rc)
{
	pid_t *targets = NULL;
	size_t nr_targets = 0;
	int ret = -1;

	rc->nr_rings = rc->ncpus;
	for (size_t e = 0; e < rc->nr_evs; e++)
		if (events_is_deep(&rc->evs[e]))
			rc->nr_rings = 2 * rc->ncpus;
	rc->rings = calloc(rc->nr_rings, sizeof(*rc->rings));
	if (!rc->rings)
		return msg_error("out of memory");
	for (int c = 0; c < rc->nr_rings; c++) {
		rc->rings[c].cpu = c % rc->ncpus;
		rc->rings[c].deep = c >= rc->ncpus;
		rc->rings[c].stream = c >= rc->ncpus ? TRACE_STREAM_DEEP + (uint32_t)(c - rc->ncpus) : (uint32_t)c;
	}
	if (rc->system_wide) {
		targets = malloc(sizeof(*targets));
		targets[nr_targets++] = -1;
	} else if (rc->command) {
		targets = malloc(sizeof(*targets));
		targets[nr_targets++] = rc->child;
	} else {
		/* Every existing thread: inherit only covers threads and
		 * children created from now on. */
		for (size_t i = 0; i < rc->nr_pids; i++) {
			pid_t *tids;
			int n = procsnap_list(rc->pids[i], &tids);

			if (n <= 0) {
				free(targets);
				return msg_error("no process with pid %d: check it with 'ps -p %d'", (int)rc->pids[i],
					     (int)rc->pids[i]);
			}
			targets = realloc(targets, (nr_targets + n) * sizeof(*targets));
			memcpy(targets + nr_targets, tids, n * sizeof(*tids));
			nr_targets += n;
			free(tids);
		}
	}
	for (size_t e = 0; e < rc->nr_evs; e++) {
		for (size_t t = 0; t < nr_targets && !rc->evs[e].dropped; t++) {
			for (int c = 0; c < rc->ncpus; c++) {
				int r = open_one(rc, &rc->evs[e], targets[t], c);

				if (r < 0)
					goto out;
				if (r > 0) {
					/* The filter is the same on every fd, so the
					 * first one refused it: nothing to undo. */
					rc->evs[e].dropped = 1;
					break;
				}
			}
		}
	}
	if (rc->system_wide && rc->command && deep_command_open(rc))
		goto out;
	/* Events whose filter was refused are not in the trace at all. */
	{
		size_t keep = 0, sampled = 0;

		for (size_t e = 0; e < rc->nr_evs; e++) {
			if (rc->evs[e].dropped) {
				events_free(&rc->evs[e], 1);
				continue;
			}
			sampled += rc->evs[e].group[0] != 0;
			rc->evs[keep++] = rc->evs[e];
		}
		rc->nr_evs = keep;
		if (!sampled) {
			msg_error("no event is left to record");
			goto out;
		}
	}
	if (ids_index(rc)) {
		msg_error("out of memory");
		goto out;
	}
	ret = 0;
out:
	free(targets);
	return ret;
}

/* Open events [first, end) on the tasks of pid (per task) or on every CPU,
 * switched on at once: the returns before the entries, so no call is
 * seen to start without its end. Returns 0, or -1 after an error. */
static int late_open(struct recorder *rc, size_t first, size_t end, pid_t pid)
{
	pid_t *tids = NULL, all = -1;
	int n = 1;

	if (rc->late.per_task && (n = procsnap_list(pid, &tids)) <= 0)
		return -1;
	rc->late.opening = 1;
	for (int ret = 1; ret >= 0; ret--) {
		for (size_t e = first; e < end; e++) {
			struct rec_event *ev = &rc->evs[e];
			size_t l = strlen(ev->name), k = strlen(UPROBES_RETURN_SUFFIX);

			if ((l > k && !strcmp(ev->name + l - k, UPROBES_RETURN_SUFFIX)) != ret || ev->dropped)
				continue;
			ev->attr.disabled = 0;
			ev->attr.enable_on_exec = 0;
			for (int t = 0; t < n; t++)
				for (int c = 0; c < rc->ncpus; c++)
					if (open_one(rc, ev, tids ? tids[t] : all, c) < 0) {
						free(tids);
						rc->late.opening = 0;
						return -1;
					}
		}
	}
	free(tids);
	rc->late.opening = 0;
	return 0;
}

/* Per task: the recording's own processes (the command, the -p targets)
 * get an object's events too, so that what they start from now on maps
 * it probed, from its first call. */
static void late_roots(struct recorder *rc, struct late_obj *ob)
{
	size_t n = rc->command ? 1 : rc->nr_pids;

	for (size_t i = 0; i < n; i++) {
		pid_t root = rc->command ? rc->child : rc->pids[i];
		uint64_t since;

		if (root <= 0 || lateprobe_covers(&rc->late, ob, root, &since) ||
		    late_open(rc, ob->first_ev, ob->end_ev, root))
			continue;
		lateprobe_pid_add(ob, root, rec_now_ns(CLOCK_MONOTONIC));
	}
}

void rec_late_probes(struct recorder *rc)
{
	struct lateprobe *lp = &rc->late;
	char *lines;
	size_t len;
	int changed = 0;

	for (size_t i = 0; i < lp->nr_pend; i++) {
		struct late_pending *p = &lp->pend[i];
		struct late_obj *ob = lateprobe_obj_find(lp, p->dev, p->ino);
		char err[512] = "";
		uint64_t since;
		int fresh = 0;

		if (ob && lateprobe_covers(lp, ob, p->pid, &since)) {
			lateprobe_line(lp, p->pid, p->time, since, p->path);
			continue;
		}
		if (ob && ob->failed)
			continue;
		if (!ob) {
			struct uprobe_object at = { .pid = p->pid, .start = p->start, .end = p->end };
			size_t first = rc->nr_evs;

			/* Read, and probed, through the mapping itself. */
			snprintf(at.path, sizeof(at.path), "%s", p->path);
			if (!(ob = lateprobe_obj_add(lp, p->dev, p->ino)))
				continue;
			if (lp->late_objects >= UPROBES_MAX_LATE) {
				snprintf(err, sizeof(err), "more than %d allocator objects found while recording",
					 UPROBES_MAX_LATE);
			} else if (!uprobes_add_late(&at, lp->next_group, &lp->u, &lp->o, &rc->evs, &rc->nr_evs, err,
						     sizeof(err))) {
				lp->next_group++;
				lp->late_objects++;
				ob->first_ev = first;
				ob->end_ev = rc->nr_evs;
				fresh = 1;
				changed = 1;
			}
			if (!fresh) {
				ob->failed = 1;
				msg_warn("cannot probe %s, which pid %d mapped while recording (%s): its allocations are not "
					 "recorded",
					 p->path, (int)p->pid, err);
				continue;
			}
		}
		/* A process gone before its turn has nothing left to probe. */
		if (late_open(rc, ob->first_ev, ob->end_ev, p->pid)) {
			if (fresh)
				ob->live_ns = rec_now_ns(CLOCK_MONOTONIC);
			changed = 1;
			continue;
		}
		since = rec_now_ns(CLOCK_MONOTONIC);
		if (fresh)
			ob->live_ns = since;
		if (lp->per_task) {
			lateprobe_pid_add(ob, p->pid, since);
			late_roots(rc, ob);
		}
		changed = 1;
		lateprobe_line(lp, p->pid, p->time, since, p->path);
		if (!rc->quiet)
			msg_note("malloc: probing %s, which pid %d %s, %.1f ms after %s", p->path, (int)p->pid,
				 p->time ? "mapped while recording" : "maps as its own",
				 (since - (p->time ? p->time : lp->start_ns)) / 1e6,
				 p->time ? "it did" : "recording began");
	}
	lp->nr_pend = 0;
	if (!changed)
		goto lines;
	if (ids_index(rc))
		msg_warn("out of memory indexing the events of an allocator found while recording");
	/* Every description again with all its ids: a reader takes them
	 * together. */
	for (size_t i = 0; i < lp->nr; i++)
		for (size_t e = lp->objs[i].first_ev; !lp->objs[i].at_start && e < lp->objs[i].end_ev; e++) {
			struct rec_event *ev = &rc->evs[e];

			if (ev->nr_ids > ev->described && !rec_meta_event(rc, ev, 1))
				ev->described = ev->nr_ids;
		}
lines:
	if ((lines = lateprobe_take_lines(lp, &len)))
		rec_meta_lasting(rc, TRACE_META_PROBES, lines, len);
	free(lines);
}

struct rec_event *rec_event_of(struct recorder *rc, uint64_t id)
{
	size_t lo = 0, hi = rc->nr_ids;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (rc->ids[mid].id == id)
			return rc->ids[mid].ev;
		if (rc->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * The last close of a tracepoint or uprobe event waits for an RCU grace
 * period in the kernel (about 20 ms here), once per event and one after
 * another, as the kernel holds one mutex around each; threads cannot make
 * them overlap. Once the rings are drained nothing reads the events, so a
 * child takes them over, with what must follow them (the uprobe
 * definitions, which can only go once no event uses them) and the trace
 * this one replaced (whose pages are freed on its last close), while the
 * recorder finishes the trace; rec_events_wait waits for it before the
 * recorder exits. A recorder that left it running would hand the kernel's
 * mutex, and its uprobe definitions, to the next recording started at
 * once. The child closes its copies only once the recorder has closed
 * its own (the pipe's end): the last close is the slow one, and a child
 * that came first would leave it to the recorder. The child keeps the
 * recorder's blocked signals and lets go of its standard streams.
 */
void rec_events_release(struct recorder *rc)
{
	int go[2] = { -1, -1 };
	pid_t child = (rc->nr_fds || rc->old_fd >= 0) && !pipe2(go, O_CLOEXEC) ? fork() : -1;

	if (child == 0) {
		struct sched_param sp = { .sched_priority = 0 };
		char c;

		/* Waiting out grace periods needs no real-time priority. */
		sched_setscheduler(0, SCHED_OTHER, &sp);
		for (int fd = 0; fd < 3; fd++)
			close(fd);
		close(go[1]);
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		for (size_t i = 0; i < rc->nr_fds; i++)
			close(rc->fds[i]);
		if (rc->old_fd >= 0)
			close(rc->old_fd);
		uprobes_remove();
		_exit(0);
	}
	/* With the child holding them these closes are only a count going
	 * down; without one, they are the slow ones. */
	for (size_t i = 0; i < rc->nr_fds; i++)
		close(rc->fds[i]);
	rc->nr_fds = 0;
	if (rc->old_fd >= 0)
		close(rc->old_fd);
	rc->old_fd = -1;
	for (int i = 0; i < 2; i++)
		if (go[i] >= 0)
			close(go[i]);
	/* Called again at the end with nothing left to close: a closer
	 * already removes the definitions once the kernel lets go of them. */
	if (child > 0)
		rc->closer = child;
	else if (!rc->closer)
		uprobes_remove();
}

void rec_events_wait(struct recorder *rc)
{
	if (rc->closer > 0)
		while (waitpid(rc->closer, NULL, 0) < 0 && errno == EINTR)
			;
	rc->closer = 0;
	/* The definitions are gone: what would have removed them goes too. */
	uprobes_guard_end();
}

