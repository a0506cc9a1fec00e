/*
 * record/ring/flight.c: the flight recorder; see flight.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../formats/catalog.h"
#include "../procs/procsnap.h"
#include "../recorder.h"

/* What a snapshot is for, handed from the drain loop to the compression
 * thread. */
struct flight_req {
	enum flight_kind kind;
	char detail[192];
	uint64_t time;		/* CLOCK_MONOTONIC of the trigger, as record times are */
	uint64_t realtime;
	struct embed_list objects; /* what the stacks touched so far, as the drain loop knew it */
	struct flight_jits jit;	   /* its copies of the runtimes' files */
};

static const char *const kind_names[] = {
	[FLIGHT_SIGNAL] = "signal", [FLIGHT_OOM] = "oom", [FLIGHT_RSS] = "rss",
	[FLIGHT_PSI] = "psi",	    [FLIGHT_RECLAIM] = "reclaim", [FLIGHT_CRASH] = "crash",
};

int flight_trigger_add(struct flight *f, const char *spec)
{
	struct flight_trigger t = { .fd = -1 };
	const char *arg = strchr(spec, ':');
	size_t kl = arg ? (size_t)(arg - spec) : strlen(spec);
	struct flight_trigger *v;

	snprintf(t.spec, sizeof(t.spec), "%s", spec);
	if (kl == 6 && !strncmp(spec, "signal", 6) && !arg) {
		t.kind = FLIGHT_SIGNAL;
	} else if (kl == 3 && !strncmp(spec, "oom", 3) && !arg) {
		t.kind = FLIGHT_OOM;
	} else if (kl == 5 && !strncmp(spec, "crash", 5)) {
		if (arg && (!arg[1] || strlen(arg + 1) > 15))
			return msg_error("invalid trigger '%s': give crash, or crash:COMM with COMM a process name of at most "
					 "15 characters, as the kernel keeps it",
					 spec);
		if (arg)
			snprintf(t.comm, sizeof(t.comm), "%s", arg + 1);
		t.kind = FLIGHT_CRASH;
	} else if (kl == 3 && !strncmp(spec, "rss", 3) && arg) {
		const char *gt = strchr(arg + 1, '>');
		char who[64], *end;
		long pid;

		if (!gt || gt == arg + 1 || (size_t)(gt - arg - 1) >= sizeof(who) || rec_size_parse(gt + 1, &t.bytes))
			return msg_error("invalid trigger '%s': give rss:PID>SIZE or rss:COMM>SIZE, e.g. rss:nginx>2G", spec);
		snprintf(who, sizeof(who), "%.*s", (int)(gt - arg - 1), arg + 1);
		pid = strtol(who, &end, 10);
		if (!*end && pid > 0 && pid <= INT_MAX)
			t.pid = (pid_t)pid;
		else if (strlen(who) > 15)
			return msg_error("invalid trigger '%s': a comm is at most 15 characters, as the kernel keeps it",
					 spec);
		else
			snprintf(t.comm, sizeof(t.comm), "%s", who);
		t.kind = FLIGHT_RSS;
	} else if (kl == 3 && !strncmp(spec, "psi", 3) && arg) {
		char *end;
		double pct;

		if (!strncmp(arg + 1, "some>", 5))
			t.full = 0;
		else if (!strncmp(arg + 1, "full>", 5))
			t.full = 1;
		else
			return msg_error("invalid trigger '%s': give psi:some>PCT or psi:full>PCT, e.g. psi:some>10", spec);
		pct = strtod(arg + 6, &end);
		if (end == arg + 6 || (*end && strcmp(end, "%")) || !(pct > 0 && pct <= 100))
			return msg_error("invalid trigger '%s': PCT is a percentage of time stalled, above 0 and at most 100",
					 spec);
		t.pct = (unsigned)(pct * 100); /* hundredths: the kernel takes microseconds of a 2 s window */
		t.kind = FLIGHT_PSI;
	} else if (!strncmp(spec, "reclaim>", 8)) {
		char *end;
		double ms = strtod(spec + 8, &end);

		if (end == spec + 8 || (*end && strcmp(end, "ms")) || !(ms > 0) || ms > 3600e3)
			return msg_error("invalid trigger '%s': give reclaim>MS, a stall in milliseconds up to an hour, e.g. reclaim>100", spec);
		t.ns = (uint64_t)(ms * 1e6);
		t.kind = FLIGHT_RECLAIM;
	} else {
		return msg_error("unknown trigger '%s': use oom, rss:PID_OR_COMM>SIZE, psi:some|full>PCT, reclaim>MS, "
				 "crash[:COMM] or signal",
				 spec);
	}
	v = realloc(f->trig, (f->nr_trig + 1) * sizeof(*v));
	if (!v)
		return msg_error("out of memory");
	f->trig = v;
	f->trig[f->nr_trig++] = t;
	return 0;
}

int flight_wants(const struct flight *f, enum flight_kind kind)
{
	for (size_t i = 0; i < f->nr_trig; i++)
		if (f->trig[i].kind == kind)
			return 1;
	return 0;
}

static void snapshots_found(struct flight *f);

int flight_options_check(struct recorder *rc, int (*has_group)(const char *groups, const char *group))
{
	struct flight *f = &rc->fl;
	static const struct {
		enum flight_kind kind;
		const char *group;
	} needs[] = { { FLIGHT_OOM, "oom" },
		      { FLIGHT_RSS, "rss" },
		      { FLIGHT_RECLAIM, "reclaim" },
		      { FLIGHT_CRASH, "signals" } };
	char path[PATH_MAX], *slash, *dot;

	if (f->nr_trig && !f->ring_size)
		return msg_error("--trigger saves snapshots of a ring: give --ring SIZE too");
	if (!f->ring_size && (f->after >= 0 || f->max_snapshots || f->holdoff >= 0 || f->burst))
		return msg_error("--after, --max-snapshots, --trigger-holdoff and --trigger-burst are for snapshots of a "
				 "ring: give --ring SIZE and --trigger");
	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++)
		if (flight_wants(f, needs[i].kind) && !has_group(rc->groups, needs[i].group))
			return msg_error("--trigger %s watches the %s events, which are not recorded: add %s to -e",
					 kind_names[needs[i].kind], needs[i].group, needs[i].group);
	if (f->after < 0)
		f->after = FLIGHT_AFTER_DEFAULT;
	if (!f->max_snapshots)
		f->max_snapshots = FLIGHT_MAX_SNAPSHOTS_DEFAULT;
	if (f->holdoff < 0)
		f->holdoff = FLIGHT_HOLDOFF_DEFAULT;
	if (!f->burst)
		f->burst = FLIGHT_BURST_DEFAULT;
	/* Snapshots go beside the ring, named after it. */
	snprintf(path, sizeof(path), "%s", rc->output);
	slash = strrchr(path, '/');
	if (slash) {
		*slash = 0;
		snprintf(f->dir, sizeof(f->dir), "%s", path[0] ? path : "/");
		snprintf(f->base, sizeof(f->base), "%s", slash + 1);
	} else {
		snprintf(f->dir, sizeof(f->dir), ".");
		snprintf(f->base, sizeof(f->base), "%.255s", path);
	}
	dot = strrchr(f->base, '.');
	if (dot && !strcmp(dot, ".trace") && dot != f->base)
		*dot = 0;
	snprintf(f->previous, sizeof(f->previous), "%s/%s.previous.trace", f->dir, f->base);
	/* Only a ring saves snapshots; a linear trace's directory, which
	 * can hold thousands of files, is not read. */
	if (f->ring_size)
		snapshots_found(f);
	return 0;
}

int flight_setup(struct recorder *rc)
{
	struct flight *f = &rc->fl;

	for (size_t i = 0; i < rc->nr_evs; i++) {
		struct rec_event *e = &rc->evs[i];

		if (flight_wants(f, FLIGHT_RSS) && !strcmp(e->name, "kmem:rss_stat") && e->format) {
			static const char *const fields[4] = { "mm_id", "curr", "member", "size" };

			e->watch = WATCH_RSS;
			for (int k = 0; k < 4; k++)
				if ((f->rss_off[k] = events_field_offset(e->format, fields[k])) < 0)
					return msg_error("kmem:rss_stat has no field '%s' on this kernel: --trigger rss cannot "
							 "work here",
							 fields[k]);
		}
		if (flight_wants(f, FLIGHT_RECLAIM) && strstr(e->name, "vmscan:mm_vmscan_") &&
		    strstr(e->name, "reclaim_begin"))
			e->watch = WATCH_RECLAIM_BEGIN;
		if (flight_wants(f, FLIGHT_RECLAIM) && strstr(e->name, "vmscan:mm_vmscan_") &&
		    strstr(e->name, "reclaim_end"))
			e->watch = WATCH_RECLAIM_END;
		if (flight_wants(f, FLIGHT_CRASH) && !strcmp(e->name, "signal:signal_deliver") && e->format) {
			e->watch = WATCH_CRASH;
			f->sig_off = events_field_offset(e->format, "sig");
			f->handler_off = events_field_offset(e->format, "sa_handler");
			if (f->sig_off < 0 || f->handler_off < 0)
				return msg_error("signal:signal_deliver has no field 'sig' or 'sa_handler' on this kernel: "
						 "--trigger crash cannot work here");
		}
	}
	for (size_t i = 0; i < f->nr_trig; i++) {
		struct flight_trigger *t = &f->trig[i];
		char line[64];
		int n;

		if (t->kind != FLIGHT_PSI)
			continue;
		/* The kernel's PSI trigger: wake when tasks stalled for more
		 * than this many microseconds in a window of 2 s, the window
		 * the kernel allows every caller (1 s needs CAP_SYS_RESOURCE). */
		t->fd = open("/proc/pressure/memory", O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (t->fd < 0)
			return msg_error("--trigger %s: cannot open /proc/pressure/memory (%s): this kernel has no PSI, or "
					 "it is off (boot with psi=1)",
					 t->spec, strerror(errno));
		n = snprintf(line, sizeof(line), "%s %u 2000000", t->full ? "full" : "some", t->pct * 200);
		if (write(t->fd, line, n + 1) < 0)
			return msg_error("--trigger %s: the kernel refused the PSI trigger '%s': %s", t->spec, line,
					 strerror(errno));
	}
	return 0;
}

static int carry_process(void *arg, const char *text, size_t len)
{
	return trace_writer_add_state(arg, TRACE_META_PROCESS, text, len);
}

/* As a segment begins (compression thread): the processes as they are,
 * and the kernel symbols every stack so far needed. Later segments'
 * kernel symbols add to these; their processes are read only when theirs
 * is the window's first segment. The processes take at most half the
 * segment, whatever the box's processes map: a restatement that did not
 * fit would end the recording. */
static int flight_carry(void *arg, struct trace_writer *w)
{
	struct recorder *rc = arg;
	char *text = NULL;
	size_t len = 0;

	if (proctrack_emit(&rc->fl.pt, w->seg_size / 2, carry_process, w))
		return w->err ? w->err : -ENOMEM;
	if (rc->ksyms.nr && !ksyms_extract(&rc->ksyms, &rc->kallsyms, &text, &len) && len)
		trace_writer_add(w, TRACE_CHUNK_META, TRACE_META_KSYMS, 0, text, len, 0);
	free(text);
	return w->err;
}

/* The room a ring keeps after its head for the objects its stacks run in:
 * an eighth of the ring, within --embed-max. */
static uint64_t objects_room(const struct recorder *rc)
{
	uint64_t room = rc->fl.ring_size / 8;

	if (rc->embed.mode == EMBED_NONE)
		return 0;
	return room < rc->embed.max_bytes ? room : rc->embed.max_bytes;
}

int flight_ring_begin(struct recorder *rc)
{
	if (trace_writer_ring_begin(&rc->w, objects_room(rc), flight_carry, rc))
		return msg_error("cannot start the ring in '%s': %s", rc->output, trace_writer_strerror(&rc->w));
	return 0;
}

static struct flight_rss *rss_find(struct flight *f, uint32_t mm_id)
{
	for (size_t i = 0; i < f->nr_rss; i++)
		if (f->rss[i].mm_id == mm_id)
			return &f->rss[i];
	return NULL;
}

/* The first time an address space is seen: its owner, and its counters
 * as they stand (rss_stat reports one counter at a time, as it moves). */
static struct flight_rss *rss_new(struct flight *f, uint32_t mm_id, pid_t pid)
{
	struct flight_rss *r;
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	if (f->nr_rss == f->alloc_rss) {
		size_t a = f->alloc_rss ? f->alloc_rss * 2 : 64;
		struct flight_rss *v = realloc(f->rss, a * sizeof(*v));

		if (!v)
			return NULL;
		f->rss = v;
		f->alloc_rss = a;
	}
	r = &f->rss[f->nr_rss++];
	memset(r, 0, sizeof(*r));
	r->mm_id = mm_id;
	r->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, r->comm, sizeof(r->comm) - 1);
		close(fd);
		if (n > 0 && r->comm[n - 1] == '\n')
			r->comm[n - 1] = 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		static const char *const keys[4] = { "RssFile:", "RssAnon:", "VmSwap:", "RssShmem:" };

		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		for (int k = 0; k < 4; k++) {
			const char *p = strstr(buf, keys[k]);

			if (p)
				r->member[k] = strtoll(p + strlen(keys[k]), NULL, 10) * 1024;
		}
	}
	return r;
}

static void rss_seen(struct recorder *rc, const struct rec_event *e, const unsigned char *rec, size_t size)
{
	struct flight *f = &rc->fl;
	uint32_t raw_len, mm_id, curr, tid[2];
	int32_t member;
	int64_t bytes, rss;
	const unsigned char *raw = events_sample_raw(e, rec, size, &raw_len);
	struct flight_rss *r;

	if (!raw || (uint32_t)f->rss_off[3] + 8 > raw_len)
		return;
	memcpy(&mm_id, raw + f->rss_off[0], 4);
	memcpy(&curr, raw + f->rss_off[1], 4);
	memcpy(&member, raw + f->rss_off[2], 4);
	memcpy(&bytes, raw + f->rss_off[3], 8);
	memcpy(tid, rec + 24, 8);
	r = rss_find(f, mm_id);
	/* Whose counter it is shows only when the task changes its own. */
	if (!r && (!curr || !(r = rss_new(f, mm_id, (pid_t)tid[0]))))
		return;
	if (member >= 0 && member < 4)
		r->member[member] = bytes;
	rss = r->member[0] + r->member[1] + r->member[3];
	for (size_t i = 0; i < f->nr_trig; i++) {
		const struct flight_trigger *t = &f->trig[i];
		char detail[192];

		if (t->kind != FLIGHT_RSS || (t->pid ? t->pid != r->pid : strcmp(t->comm, r->comm)))
			continue;
		if (rss <= (int64_t)t->bytes) {
			r->above = 0;
			continue;
		}
		if (r->above)
			continue;
		r->above = 1;
		snprintf(detail, sizeof(detail), "pid %d (%s) RSS %lld bytes, over %llu", (int)r->pid, r->comm,
			 (long long)rss, (unsigned long long)t->bytes);
		flight_fire(rc, FLIGHT_RSS, r->comm, detail);
	}
}

static void reclaim_seen(struct recorder *rc, const struct rec_event *e, const unsigned char *rec)
{
	struct flight *f = &rc->fl;
	uint32_t tid[2];
	uint64_t time;
	size_t i;

	memcpy(tid, rec + 24, 8);
	memcpy(&time, rec + 32, 8);
	for (i = 0; i < f->nr_stalls && f->stalls[i].tid != (pid_t)tid[1]; i++)
		;
	if (e->watch == WATCH_RECLAIM_BEGIN) {
		if (i == f->nr_stalls) {
			struct flight_stall *v = realloc(f->stalls, (f->nr_stalls + 1) * sizeof(*v));

			if (!v)
				return;
			f->stalls = v;
			f->nr_stalls++;
		}
		f->stalls[i] = (struct flight_stall){ (pid_t)tid[1], time };
		return;
	}
	if (i == f->nr_stalls)
		return;
	for (size_t k = 0; k < f->nr_trig; k++) {
		const struct flight_trigger *t = &f->trig[k];
		char detail[192], who[32];

		if (t->kind != FLIGHT_RECLAIM || time < f->stalls[i].begin || time - f->stalls[i].begin <= t->ns)
			continue;
		snprintf(detail, sizeof(detail), "tid %u stalled %.1f ms in %s reclaim, over %.1f ms", tid[1],
			 (time - f->stalls[i].begin) / 1e6, strstr(e->name, "memcg") ? "memcg" : "direct", t->ns / 1e6);
		snprintf(who, sizeof(who), "tid %u", tid[1]);
		flight_fire(rc, FLIGHT_RECLAIM, who, detail);
		break;
	}
	f->stalls[i] = f->stalls[--f->nr_stalls];
}

static struct flight_comm *comm_find(struct flight *f, pid_t tid)
{
	for (size_t i = 0; i < f->nr_comms; i++)
		if (f->comms[i].pid == tid)
			return &f->comms[i];
	return NULL;
}

void flight_task_comm(struct flight *f, pid_t tid, pid_t parent, const char *comm)
{
	struct flight_comm *had;
	char inherited[16];
	size_t i;
	int named = 0;

	/* Every crash trigger wants the name: to match crash:COMM, and to
	 * hold a program that crashes in a loop to its limit. */
	for (size_t k = 0; k < f->nr_trig; k++)
		named |= f->trig[k].kind == FLIGHT_CRASH;
	if (!named)
		return;
	had = comm_find(f, tid);
	i = had ? (size_t)(had - f->comms) : f->nr_comms;
	if (!comm && parent < 0) {
		if (had)
			had->gone = 1;
		return;
	}
	if (!comm) {
		const struct flight_comm *p = comm_find(f, parent);

		if (!p)
			return;
		/* a copy: the table may move below */
		memcpy(inherited, p->comm, sizeof(inherited));
		comm = inherited;
	}
	if (i == f->nr_comms) {
		if (f->nr_comms == f->alloc_comms) {
			size_t n = f->alloc_comms ? f->alloc_comms * 2 : 64;
			struct flight_comm *v = realloc(f->comms, n * sizeof(*v));

			if (!v)
				return;
			f->comms = v;
			f->alloc_comms = n;
		}
		f->nr_comms++;
	}
	f->comms[i].pid = tid;
	f->comms[i].gone = 0;
	snprintf(f->comms[i].comm, sizeof(f->comms[i].comm), "%s", comm);
}

void flight_task_sweep(struct flight *f)
{
	for (size_t i = f->nr_comms; i-- > 0;)
		if (f->comms[i].gone && ++f->comms[i].gone > 2)
			f->comms[i] = f->comms[--f->nr_comms];
}

/* A memory error's signal (the kernel filter lets no other through). */
static void crash_seen(struct recorder *rc, const struct rec_event *e, const unsigned char *rec, size_t size)
{
	struct flight *f = &rc->fl;
	const unsigned char *raw;
	uint32_t raw_len, tid[2];
	int32_t sig;
	uint64_t handler;
	const struct flight_comm *known;
	char comm[16] = "", path[64], detail[192];
	ssize_t n;
	int fd;

	raw = events_sample_raw(e, rec, size, &raw_len);
	if (!raw || (uint32_t)f->sig_off + 4 > raw_len || (uint32_t)f->handler_off + 8 > raw_len)
		return;
	memcpy(&sig, raw + f->sig_off, 4);
	memcpy(&handler, raw + f->handler_off, 8);
	/* A handler of the process's own may recover (a JVM takes SIGSEGV
	 * for its null checks); a crash is the default action, which ends
	 * it. A crash handler that gives up raises it again with that one. */
	if (handler)
		return;
	memcpy(tid, rec + 24, 8);
	/* Its name as the recording saw it taken, else (a task from before
	 * the recording) as /proc has it while the task is still there. */
	if ((known = comm_find(f, (pid_t)tid[1])))
		memcpy(comm, known->comm, sizeof(comm));
	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", tid[0], tid[1]);
	if (!comm[0] && (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		comm[n > 0 ? n - (comm[n - 1] == '\n') : 0] = 0;
	}
	for (size_t i = 0; i < f->nr_trig; i++) {
		const struct flight_trigger *t = &f->trig[i];

		if (t->kind != FLIGHT_CRASH || (t->comm[0] && strcmp(t->comm, comm)))
			continue;
		snprintf(detail, sizeof(detail), "pid %u tid %u (%s) got %s", tid[0], tid[1], comm[0] ? comm : "?",
			 catalog_signal_name(sig));
		/* A program that crashes in a loop is one process by its
		 * name, whatever pid each run takes. */
		flight_fire(rc, FLIGHT_CRASH, comm[0] ? comm : "?", detail);
		break;
	}
}

void flight_inspect(struct recorder *rc, const struct rec_event *e, const unsigned char *rec, size_t size)
{
	if (size < 40)
		return;
	if (e->watch == WATCH_RSS)
		rss_seen(rc, e, rec, size);
	else if (e->watch == WATCH_CRASH)
		crash_seen(rc, e, rec, size);
	else
		reclaim_seen(rc, e, rec);
}

/* Whether a trigger of kind for who may save a snapshot now, by the
 * limits (flight.h); one that may not is counted, and said once a cause. */
static int limit_pass(struct recorder *rc, enum flight_kind kind, const char *who, const char *detail,
		      uint64_t now)
{
	struct flight *f = &rc->fl;
	uint64_t hold = (uint64_t)(f->holdoff * 1e9);
	struct flight_limit *l = NULL;
	unsigned recent = 0;
	int by_who = 0;

	for (size_t i = 0; i < f->nr_limits; i++) {
		struct flight_limit *x = &f->limits[i];

		if (x->kind != kind || now - x->time >= hold)
			continue;
		recent++;
		by_who |= who[0] && !strcmp(x->who, who);
	}
	if (by_who || recent >= f->burst) {
		f->suppressed++;
		if (!(f->suppressed_said & (1u << kind)) && !rc->quiet)
			msg_note("trigger %s (%s) saves no snapshot: %s; --trigger-holdoff and --trigger-burst set the "
				 "limits, and the trace counts what they held back",
				 kind_names[kind], detail,
				 by_who ? "it fired for the same process within the holdoff"
					: "its cause saved as many as it may within the holdoff");
		f->suppressed_said |= 1u << kind;
		return 0;
	}
	/* Entries past the holdoff make room. */
	for (size_t i = 0; i < f->nr_limits && !l; i++)
		if (now - f->limits[i].time >= hold)
			l = &f->limits[i];
	if (!l) {
		struct flight_limit *v = realloc(f->limits, (f->nr_limits + 1) * sizeof(*v));

		if (!v)
			return 1;
		f->limits = v;
		l = &v[f->nr_limits++];
	}
	l->kind = kind;
	l->time = now;
	snprintf(l->who, sizeof(l->who), "%s", who);
	return 1;
}

void flight_fire(struct recorder *rc, enum flight_kind kind, const char *who, const char *detail)
{
	struct flight *f = &rc->fl;
	struct flight_req *q;

	if (!flight_wants(f, kind)) {
		if (kind == FLIGHT_SIGNAL)
			msg_note("%s ignored: give --trigger signal to save a snapshot on it", detail);
		return;
	}
	if (f->pending) {
		if (!rc->quiet)
			msg_note("trigger %s (%s) joins the snapshot waiting for its --after", kind_names[kind], detail);
		return;
	}
	/* SIGUSR1 is root's or the recorder's user's to send: never held. */
	if (kind != FLIGHT_SIGNAL && !limit_pass(rc, kind, who, detail, rec_now_ns(CLOCK_MONOTONIC)))
		return;
	q = calloc(1, sizeof(*q));
	if (!q)
		return;
	q->kind = kind;
	snprintf(q->detail, sizeof(q->detail), "%s", detail);
	q->time = rec_now_ns(CLOCK_MONOTONIC);
	q->realtime = rec_now_ns(CLOCK_REALTIME);
	f->req = q;
	f->pending = 1;
	f->due_ns = q->time + (uint64_t)(f->after * 1e9);
	if (!rc->quiet)
		msg_note("trigger %s: %s; snapshot in %.1f s", kind_names[kind], detail, f->after);
}

int flight_timeout(const struct recorder *rc, int timeout)
{
	uint64_t now, left;

	if (!rc->fl.pending)
		return timeout;
	now = rec_now_ns(CLOCK_MONOTONIC);
	left = rc->fl.due_ns > now ? (rc->fl.due_ns - now) / 1000000 + 1 : 0;
	return left < (uint64_t)timeout ? (int)left : timeout;
}

/* Whether d is the name of one of this ring's snapshots:
 * BASE.YYYYmmddTHHMMSSZ[-N].KIND.trace. */
static int snapshot_name(const struct flight *f, const char *d)
{
	size_t bl = strlen(f->base), l = strlen(d);

	return l > bl + 18 + 7 && !strncmp(d, f->base, bl) && d[bl] == '.' && d[bl + 9] == 'T' && d[bl + 16] == 'Z' &&
	       !strcmp(d + l - 6, ".trace");
}

static int snap_add(struct flight *f, const char *path)
{
	char **v = realloc(f->snaps, (f->nr_snaps + 1) * sizeof(*v));

	if (!v)
		return -1;
	f->snaps = v;
	if (!(v[f->nr_snaps] = strdup(path)))
		return -1;
	f->nr_snaps++;
	return 0;
}

struct found_snap {
	char *path;
	struct timespec mtime;
};

static int found_cmp(const void *a, const void *b)
{
	const struct found_snap *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

/* At the start: the snapshots earlier runs of this ring left (regular
 * files of this user, by when they were written, not by their names,
 * which any clock or user could make sort last), and the temporary
 * files of a snapshot a killed recorder never finished. */
static void snapshots_found(struct flight *f)
{
	struct dirent **list = NULL;
	struct found_snap *found = NULL;
	size_t nf = 0, bl = strlen(f->base);
	int n = scandir(f->dir, &list, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		const char *d = list[i]->d_name;
		char path[PATH_MAX + 256];
		struct stat st;
		int temp = d[0] == '.' && !strncmp(d + 1, f->base, bl) && !strncmp(d + 1 + bl, ".snapshot.", 10);

		/* The names first: the directory may hold thousands of others. */
		snprintf(path, sizeof(path), "%s/%s", f->dir, d);
		if ((!temp && !snapshot_name(f, d)) || lstat(path, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
			free(list[i]);
			continue;
		}
		if (temp) {
			unlink(path);
		} else if (snapshot_name(f, d)) {
			struct found_snap *v = realloc(found, (nf + 1) * sizeof(*v));

			if (v && (v[nf].path = strdup(path))) {
				v[nf].mtime = st.st_mtim;
				found = v;
				nf++;
			} else if (v) {
				found = v;
			}
		}
		free(list[i]);
	}
	free(list);
	if (nf > 1)
		qsort(found, nf, sizeof(*found), found_cmp);
	for (size_t i = 0; i < nf; i++) {
		f->nr_found += !snap_add(f, found[i].path);
		free(found[i].path);
	}
	free(found);
}

/* The cause a snapshot's name ends with (BASE.STAMP.KIND.trace), with
 * its length; "" for none. */
static const char *snap_kind(const char *path, size_t *len)
{
	size_t l = strlen(path);
	const char *end = l > 6 ? path + l - 6 : path, *k = end;

	while (k > path && k[-1] != '.' && k[-1] != '/')
		k--;
	*len = (size_t)(end - k);
	return k;
}

/* Whether snaps[i] is the first this run of the ring saved for its
 * cause. */
static int snap_first_of_kind(const struct flight *f, size_t i)
{
	size_t kl, l;
	const char *k = snap_kind(f->snaps[i], &kl);

	if (i < f->nr_found)
		return 0;
	for (size_t j = f->nr_found; j < i; j++) {
		const char *o = snap_kind(f->snaps[j], &l);

		if (l == kl && !memcmp(o, k, l))
			return 0;
	}
	return 1;
}

/* The newest max_snapshots of this ring's snapshots stay, and the first
 * this run saved for each cause: what started a run of crashes is what a
 * user most wants. The oldest others go first (earlier runs' before
 * this one's); the one just written never does. */
static void snapshots_prune(struct flight *f)
{
	size_t i = 0;

	while (f->nr_snaps > f->max_snapshots && i + 1 < f->nr_snaps) {
		if (snap_first_of_kind(f, i)) {
			i++;
			continue;
		}
		unlink(f->snaps[i]);
		free(f->snaps[i]);
		memmove(f->snaps + i, f->snaps + i + 1, (f->nr_snaps - i - 1) * sizeof(*f->snaps));
		f->nr_snaps--;
		if (i < f->nr_found)
			f->nr_found--;
	}
}

int flight_keep_previous(const struct flight *f, const char *path, unsigned max)
{
	char from[sizeof(f->previous) + 16], to[sizeof(f->previous) + 16];
	size_t l = strlen(f->previous) - strlen(".trace");

	/* RING.previous.trace, RING.previous.1.trace, ... */
	for (unsigned k = max > 1 ? max - 1 : 1; k > 0; k--) {
		if (k > 1)
			snprintf(from, sizeof(from), "%.*s.%u.trace", (int)l, f->previous, k - 1);
		else
			snprintf(from, sizeof(from), "%s", f->previous);
		snprintf(to, sizeof(to), "%.*s.%u.trace", (int)l, f->previous, k);
		if (max <= 1)
			unlink(from);
		else if (rename(from, to) && errno != ENOENT)
			return -1;
	}
	return rename(path, f->previous) && errno != ENOENT ? -1 : 0;
}

static void snapshot_meta(struct recorder *rc, const struct trace_reader *r, const struct flight_req *q,
			  struct trace_writer *w)
{
	char buf[1024];
	size_t n = 0;
	uint64_t first = 0, last = 0;

	for (size_t i = 0; i < r->nr_chunks; i++)
		if (r->chunks[i].type == TRACE_CHUNK_DATA && r->chunks[i].time) {
			if (!first || r->chunks[i].time < first)
				first = r->chunks[i].time;
			if (r->chunks[i].time > last)
				last = r->chunks[i].time;
		}
#define ADD(...) n += snprintf(buf + n, n < sizeof(buf) ? sizeof(buf) - n : 0, __VA_ARGS__)
	ADD("trigger %s\n", kind_names[q->kind]);
	ADD("detail %s\n", q->detail);
	ADD("trigger_time_ns %llu\n", (unsigned long long)q->time);
	ADD("trigger_realtime_ns %llu\n", (unsigned long long)q->realtime);
	ADD("after_ns %llu\n", (unsigned long long)(rc->fl.after * 1e9));
	ADD("ring_size %llu\n", (unsigned long long)rc->fl.ring_size);
	ADD("window_first_ns %llu\nwindow_last_ns %llu\n", (unsigned long long)first, (unsigned long long)last);
	ADD("overwritten_bytes %llu\noverwritten_records %llu\n", (unsigned long long)r->ring.overwritten_bytes,
	    (unsigned long long)r->ring.overwritten_records);
	ADD("snapshot %u\n", rc->fl.taken + 1);
#undef ADD
	trace_writer_add(w, TRACE_CHUNK_META, TRACE_META_SNAPSHOT, 0, buf, n < sizeof(buf) ? n : sizeof(buf) - 1, 0);
}

/* Compression thread: objects stacks have touched since the last batch,
 * into the ring's head, once each, where every window finds them. */
static void objects_write(void *arg, void *data)
{
	struct recorder *rc = arg;
	struct embed_list *l = data;

	trace_writer_to_head(&rc->w, 1);
	embed_list_write(&rc->embed, l, &rc->w);
	trace_writer_to_head(&rc->w, 0);
	for (size_t i = 0; i < l->nr; i++) {
		unsigned char (*v)[OBJSET_BUILD_ID_MAX + 1];

		if (!l->items[i].bid_len ||
		    !(v = realloc(rc->fl.head_bids, (rc->fl.nr_head_bids + 1) * sizeof(*v))))
			continue;
		rc->fl.head_bids = v;
		v[rc->fl.nr_head_bids][0] = (unsigned char)l->items[i].bid_len;
		memcpy(v[rc->fl.nr_head_bids++] + 1, l->items[i].bid, l->items[i].bid_len);
	}
	embed_list_release(l);
}

void flight_objects(struct recorder *rc)
{
	struct embed_list *l;

	if (!rc->fl.ring_size || rc->embed.mode == EMBED_NONE || rc->em.nr_touched == rc->fl.touched_listed)
		return;
	rc->fl.touched_listed = rc->em.nr_touched;
	if (!(l = rec_objects_touched(rc)))
		return;
	writeq_push_call(&rc->q, objects_write, rc, l);
}

/* The payload's process and kind: the header's first three fields. */
static size_t jit_key_len(const char *p, size_t len)
{
	size_t n = 0;

	for (int tabs = 0; n < len && tabs < 3; n++)
		tabs += p[n] == '\t';
	return n;
}

int flight_jit_keep(void *arg, const void *payload, size_t len)
{
	struct recorder *rc = arg;
	struct flight_jits *j = &rc->fl.jit;
	size_t k = jit_key_len(payload, len), i;
	struct flight_jit *v;
	char *copy = malloc(len);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, payload, len);
	for (i = 0; i < j->nr; i++)
		if (jit_key_len(j->v[i].data, j->v[i].len) == k && !memcmp(j->v[i].data, payload, k))
			break;
	if (i == j->nr) {
		if (!(v = realloc(j->v, (j->nr + 1) * sizeof(*v)))) {
			free(copy);
			return -ENOMEM;
		}
		j->v = v;
		j->nr++;
	} else {
		free(j->v[i].data);
	}
	j->v[i] = (struct flight_jit){ copy, len };
	return 0;
}

void flight_jit_write(const struct flight_jits *j, struct trace_writer *w)
{
	for (size_t i = 0; i < j->nr; i++)
		trace_writer_add(w, TRACE_CHUNK_META, TRACE_META_JITMAP, 0, j->v[i].data, j->v[i].len, 0);
}

static void jit_release(struct flight_jits *j)
{
	for (size_t i = 0; i < j->nr; i++)
		free(j->v[i].data);
	free(j->v);
	j->v = NULL;
	j->nr = 0;
}

/* Whether the ring's head carries the object of a build-id. */
static int in_head(const struct flight *f, const unsigned char *bid, int len)
{
	for (size_t i = 0; i < f->nr_head_bids; i++)
		if (f->head_bids[i][0] == len && !memcmp(f->head_bids[i] + 1, bid, len))
			return 1;
	return 0;
}

/* On the compression thread, between two chunks: the ring is still. */
static void snapshot_write(void *arg, void *data)
{
	struct recorder *rc = arg;
	struct flight *f = &rc->fl;
	const struct flight_req *q = data;
	struct trace_writer_opts o = { .codec = rc->codec, .level = rc->level, .file_flags = TRACE_FILE_WINDOW };
	struct trace_reader r;
	struct trace_writer w = { .fd = -1 };
	char name[PATH_MAX + 512], tmp[PATH_MAX + 512], stamp[32], err[512];
	time_t secs = q->realtime / 1000000000ull;
	struct tm tm;
	char *text = NULL;
	size_t len = 0;
	int fd = -1;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(name, sizeof(name), "%s/%s.%s.%s.trace", f->dir, f->base, stamp, kind_names[q->kind]);
	for (int k = 2; !access(name, F_OK) && k < 100; k++)
		snprintf(name, sizeof(name), "%s/%s.%s-%d.%s.trace", f->dir, f->base, stamp, k, kind_names[q->kind]);
	snprintf(tmp, sizeof(tmp), "%s/.%s.snapshot.XXXXXX", f->dir, f->base);
	if (trace_reader_open_fd(&r, rc->out_fd, rc->output, err, sizeof(err))) {
		msg_error("snapshot for trigger %s failed: %s", kind_names[q->kind], err);
		f->failed++;
		embed_list_release(&((struct flight_req *)data)->objects);
		jit_release(&((struct flight_req *)data)->jit);
		return;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		msg_error("snapshot for trigger %s failed: cannot create a file in '%s': %s", kind_names[q->kind], f->dir,
			  strerror(errno));
		goto out;
	}
	trace_writer_init_fd(&w, fd, &o);
	if (trace_copy_window(&r, &w, err, sizeof(err))) {
		msg_error("snapshot for trigger %s failed: %s", kind_names[q->kind], err);
		goto out;
	}
	snapshot_meta(rc, &r, q, &w);
	if (rc->ksyms.nr && !ksyms_extract(&rc->ksyms, &rc->kallsyms, &text, &len) && len)
		trace_writer_add(&w, TRACE_CHUNK_META, TRACE_META_KSYMS, 0, text, len, 0);
	free(text);
	/* The objects the window's stacks run in, as their processes mapped
	 * them, so the snapshot can be analyzed elsewhere: those the ring's
	 * head holds came with it. */
	{
		struct embed_list *l = &((struct flight_req *)data)->objects;
		size_t n = 0;

		for (size_t i = 0; i < l->nr; i++) {
			if (l->items[i].bid_len && in_head(f, l->items[i].bid, l->items[i].bid_len)) {
				if (l->items[i].fd >= 0)
					close(l->items[i].fd);
				free(l->items[i].path);
			} else {
				l->items[n++] = l->items[i];
			}
		}
		l->nr = n;
		embed_list_write(&rc->embed, l, &w);
	}
	flight_jit_write(&((struct flight_req *)data)->jit, &w);
	if (trace_writer_finish(&w) || rename(tmp, name)) {
		msg_error("snapshot for trigger %s failed: cannot write '%s': %s", kind_names[q->kind], name,
			  w.err ? trace_writer_strerror(&w) : strerror(errno));
		goto out;
	}
	tmp[0] = 0;
	f->taken++;
	snap_add(f, name);
	if (!rc->quiet)
		msg_note("snapshot '%s': trigger %s (%s), %.1f MiB", name, kind_names[q->kind], q->detail,
			 w.offset / 1048576.0);
	snapshots_prune(f);
out:
	if (tmp[0] && fd >= 0) {
		unlink(tmp);
		f->failed++;
	}
	if (fd >= 0)
		close(fd);
	trace_writer_release(&w);
	trace_reader_release(&r);
	embed_list_release(&((struct flight_req *)data)->objects);
	jit_release(&((struct flight_req *)data)->jit);
}

void flight_poll(struct recorder *rc, int force)
{
	struct flight *f = &rc->fl;

	if (!f->pending || (!force && rec_now_ns(CLOCK_MONOTONIC) < f->due_ns))
		return;
	/* What the rings hold up to now goes into the ring first. */
	rec_drain_all(rc, 0);
	rec_rings_flush_all(rc);
	/* The object set is the drain loop's: the snapshot gets a list of its
	 * own, with fds of its own; the ring's head gets what it lacks first. */
	flight_objects(rc);
	if (embed_list_touched(&f->req->objects, &rc->objs, &rc->em, 0))
		msg_warn("out of memory listing the objects for the snapshot: it will carry fewer");
	/* And the runtimes' files as they are now, with those of the
	 * processes gone. */
	jitmaps_collect(&rc->jm, 0, 0, flight_jit_keep, rc);
	for (size_t i = 0; i < f->jit.nr; i++) {
		struct flight_jits *q = &f->req->jit;
		struct flight_jit *v = realloc(q->v, (q->nr + 1) * sizeof(*v));
		char *copy = malloc(f->jit.v[i].len);

		if (v)
			q->v = v;
		if (!v || !copy) {
			free(copy);
			msg_warn("out of memory copying the runtimes' symbol files for the snapshot: it will carry fewer");
			break;
		}
		memcpy(copy, f->jit.v[i].data, f->jit.v[i].len);
		q->v[q->nr++] = (struct flight_jit){ copy, f->jit.v[i].len };
	}
	writeq_push_call(&rc->q, snapshot_write, rc, f->req);
	f->req = NULL;
	f->pending = 0;
}

void flight_psi_event(struct recorder *rc, size_t i)
{
	const struct flight_trigger *t = &rc->fl.trig[i];
	char detail[192];

	snprintf(detail, sizeof(detail), "memory pressure: %s stalled over %.2f%% of 2 s", t->full ? "all tasks" : "some tasks",
		 t->pct / 100.0);
	flight_fire(rc, FLIGHT_PSI, "", detail);
}

void flight_release(struct flight *f)
{
	for (size_t i = 0; i < f->nr_trig; i++)
		if (f->trig[i].fd >= 0)
			close(f->trig[i].fd);
	free(f->trig);
	if (f->req) {
		embed_list_release(&f->req->objects);
		jit_release(&f->req->jit);
	}
	free(f->req);
	jit_release(&f->jit);
	free(f->limits);
	free(f->rss);
	free(f->stalls);
	free(f->comms);
	free(f->head_bids);
	for (size_t i = 0; i < f->nr_snaps; i++)
		free(f->snaps[i]);
	free(f->snaps);
	proctrack_release(&f->pt);
}
