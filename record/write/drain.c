/*
 * record/write/drain.c: the drain loop's work: copying records out of the rings into
 * chunk buffers, looking at each on the way (counting, snapshotting the
 * system at an OOM kill, firing triggers), and handing full or old chunks
 * to the compression thread, which notes what the end needs (kernel
 * addresses, files without build-id, mappings) before compressing them.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../formats/stackdump.h"
#include "../procs/procsnap.h"
#include "../recorder.h"

static void nobid_add(struct recorder *rc, const char *name, const unsigned char *rec)
{
	struct rec_nobid nb = { .name = NULL };
	uint32_t pid, maj, min;
	uint64_t ino;

	memcpy(&pid, rec + 8, 4);
	memcpy(&nb.start, rec + 16, 8);
	memcpy(&nb.end, rec + 24, 8);
	memcpy(&maj, rec + 40, 4);
	memcpy(&min, rec + 44, 4);
	memcpy(&ino, rec + 48, 8);
	nb.end += nb.start;
	nb.pid = (pid_t)pid;
	nb.dev = makedev(maj, min);
	nb.ino = (ino_t)ino;
	for (size_t i = 0; i < rc->nr_nobid; i++)
		if (rc->nobid[i].dev == nb.dev && rc->nobid[i].ino == nb.ino && !strcmp(rc->nobid[i].name, name))
			return;
	if (rc->nr_nobid == rc->nobid_alloc) {
		size_t n = rc->nobid_alloc ? rc->nobid_alloc * 2 : 32;
		struct rec_nobid *p = realloc(rc->nobid, n * sizeof(*p));

		if (!p)
			return;
		rc->nobid = p;
		rc->nobid_alloc = n;
	}
	if ((nb.name = strdup(name)))
		rc->nobid[rc->nr_nobid++] = nb;
}

/* An OOM kill: the state of the system now, while the victim is likely
 * still exiting, goes into the trace in order with the samples. */
static void oom_seen(struct recorder *rc, const struct rec_event *e, const unsigned char *rec, size_t size)
{
	uint32_t raw_len, tid[2];
	uint64_t time;
	int32_t victim = 0;
	const unsigned char *raw = events_sample_raw(e, rec, size, &raw_len);
	char *text;
	size_t len;

	if (raw && (uint32_t)e->victim_pid_off + 4 <= raw_len)
		memcpy(&victim, raw + e->victim_pid_off, 4);
	/* IDENTIFIER, IP, TID (pid, tid), TIME: fixed for every event. */
	memcpy(tid, rec + 24, 8);
	memcpy(&time, rec + 32, 8);
	if (!procsnap_oom_context(victim, tid[0], time, &text, &len)) {
		writeq_push_meta(&rc->q, TRACE_META_OOM, text, len);
		rc->oom_kills++;
		free(text);
	}
	if (rc->fl.nr_trig) {
		char detail[64];

		snprintf(detail, sizeof(detail), "victim pid %d", (int)victim);
		flight_fire(rc, FLIGHT_OOM, detail, detail);
	}
}

/* The object an executable mapping named path maps: a file (a memfd's
 * name starts with "/memfd:" too), the vDSO, or none (JIT code and other
 * anonymous memory). */
static uint32_t object_of(struct recorder *rc, pid_t pid, uint64_t start, uint64_t end, const char *path,
			  const unsigned char *bid, int bid_len)
{
	if (path[0] == '/' && path[1] != '/')
		return objset_add(&rc->objs, pid, start, end, path, bid, bid_len);
	if (!strcmp(path, TRACE_OBJECT_VDSO))
		return objset_vdso(&rc->objs);
	return 0;
}

static int snapshot_map(void *arg, pid_t pid, const struct procsnap_map *m)
{
	struct recorder *rc = arg;
	unsigned char bid[OBJSET_BUILD_ID_MAX];
	int bl = 0;

	if (m->perms[0] == 0 || m->perms[1] == 0 || m->perms[2] != 'x')
		return 0;
	for (; bl < OBJSET_BUILD_ID_MAX && isxdigit((unsigned char)m->bid_hex[2 * bl]) &&
	       isxdigit((unsigned char)m->bid_hex[2 * bl + 1]); bl++)
		sscanf(m->bid_hex + 2 * bl, "%2hhx", &bid[bl]);
	execmap_apply(&rc->em, &(struct execmap_entry){ .op = EXECMAP_MAP, .pid = pid, .start = m->start, .end = m->end,
						     .obj = object_of(rc, pid, m->start, m->end, m->path, bid, bl) });
	jitmaps_seen(&rc->jm, pid, m->start, m->end, m->path);
	lateprobe_map(&rc->late, pid, m->start, m->end, m->path, 0);
	return 0;
}

void rec_procs_snapshot(struct recorder *rc, const char *text, size_t len)
{
	procsnap_maps_each(text, len, snapshot_map, rc);
}

/* Compression thread: a process learned mid-recording joins the picture a
 * ring restates. */
struct learned {
	uint64_t time; /* before /proc was read */
	size_t len;
	char text[];
};

static void learned_keep(void *arg, void *data)
{
	struct recorder *rc = arg;
	struct learned *l = data;

	proctrack_load(&rc->fl.pt, l->text, l->len, l->time);
}

/* Drain loop, from the scrub: a process sampled whose start no record
 * showed (it began as the recording did) is read from /proc now, for the
 * scrub and for the trace, as the processes there at the start were. */
static int learn_process(void *arg, int pid)
{
	struct recorder *rc = arg;
	struct learned *l;
	char *text;
	size_t len;
	uint64_t now = rec_now_ns(CLOCK_MONOTONIC);

	if (procsnap_process(pid, &text, &len))
		return -1;
	rec_procs_snapshot(rc, text, len);
	if (!rc->fl.ring_size) {
		writeq_push_meta(&rc->q, TRACE_META_PROCESS, text, len);
	} else if ((l = malloc(sizeof(*l) + len))) {
		l->time = now;
		l->len = len;
		memcpy(l->text, text, len);
		writeq_push_call(&rc->q, learned_keep, rc, l);
	}
	free(text);
	return 0;
}

void rec_scrub_learn(struct recorder *rc)
{
	rc->scrub.learn = learn_process;
	rc->scrub.learn_arg = rc;
}

/* A runtime's perf map or jitdump, copied (jitmaps_emit): into the trace
 * in order with the records, or for a ring kept for every window. */
static int jit_emit(void *arg, const void *payload, size_t len)
{
	struct recorder *rc = arg;

	if (rc->fl.ring_size)
		return flight_jit_keep(rc, payload, len);
	writeq_push_meta(&rc->q, TRACE_META_JITMAP, payload, len);
	return 0;
}

void rec_jitmaps_collect(struct recorder *rc, pid_t pid, int gone)
{
	if (jitmaps_collect(&rc->jm, pid, gone, jit_emit, rc))
		msg_warn("out of memory copying a runtime's perf map or jitdump: the trace carries fewer");
}

/* A process started in a pid namespace not the recorder's (a container):
 * its pid there, said in order with the records (META nspids). The kernel
 * gives only the namespaces' inodes: /proc says the pid, while the
 * process lives. */
static void namespaces_seen(struct recorder *rc, const unsigned char *rec, size_t size)
{
	/* pid, tid, nr_namespaces, then { dev, inode } by *_NS_INDEX. */
	size_t at = 24 + 16 * PID_NS_INDEX + 8;
	uint32_t pid, tid;
	uint64_t nr, ino;
	pid_t ns;
	char line[64];

	if (size < at + 8)
		return;
	memcpy(&pid, rec + 8, 4);
	memcpy(&tid, rec + 12, 4);
	memcpy(&nr, rec + 16, 8);
	memcpy(&ino, rec + at, 8);
	if (pid != tid || nr <= PID_NS_INDEX || !ino || ino == rc->own_pidns || !(ns = procsnap_nspid(pid)))
		return;
	writeq_push_meta(&rc->q, TRACE_META_NSPIDS, line, snprintf(line, sizeof(line), "%u\t%d\n", pid, (int)ns));
}

/* Drain loop: a process's code changed (an executable mapping, a fork, an
 * exec, an exit). Noted before the samples after it are copied, and the
 * object opened while its process is likely still there. */
static void inspect_task(struct recorder *rc, const unsigned char *rec, size_t size, uint16_t type, uint16_t misc)
{
	struct execmap_entry e = { .time = trace_record_time(rec, size) };
	uint32_t a, b, c;

	/* The names of tasks, as a crash trigger reads them: a thread (or a
	 * forked process) takes its parent's, until it takes its own. */
	if (type == PERF_RECORD_COMM && size > 16 && memchr(rec + 16, 0, size - 16)) {
		memcpy(&c, rec + 12, 4);
		flight_task_comm(&rc->fl, (pid_t)c, 0, (const char *)rec + 16);
	} else if ((type == PERF_RECORD_FORK || type == PERF_RECORD_EXIT) && size >= 24) {
		memcpy(&c, rec + 16, 4);
		memcpy(&b, rec + 20, 4);
		flight_task_comm(&rc->fl, (pid_t)c, type == PERF_RECORD_FORK ? (pid_t)b : -1, NULL);
	}

	/* --cgroup, by the recorder: a child of a kept process is kept, and
	 * what the others do is not looked at. */
	if (type == PERF_RECORD_FORK && size >= 24) {
		memcpy(&a, rec + 8, 4);
		memcpy(&b, rec + 12, 4);
		cgroup_filter_fork(&rc->cg, b, a, e.time);
	}
	if (rc->cg.by_recorder && size >= 12) {
		memcpy(&a, rec + 8, 4);
		if (!cgroup_filter_has(&rc->cg, a, e.time))
			return;
		/* A pid stands for its process until it exits. */
		if (type == PERF_RECORD_EXIT && size >= 24) {
			memcpy(&c, rec + 16, 4);
			if (c == a)
				cgroup_filter_exit(&rc->cg, a, e.time);
		}
	}
	switch (type) {
	case PERF_RECORD_NAMESPACES:
		namespaces_seen(rc, rec, size);
		return;
	case PERF_RECORD_MMAP2: {
		uint32_t prot;
		uint64_t addr, len;

		if (size <= 72 || !memchr(rec + 72, 0, size - 72))
			return;
		memcpy(&prot, rec + 64, 4);
		if (!(prot & PROT_EXEC))
			return;
		memcpy(&a, rec + 8, 4);
		memcpy(&addr, rec + 16, 8);
		memcpy(&len, rec + 24, 8);
		e.op = EXECMAP_MAP;
		e.pid = a;
		e.start = addr;
		e.end = addr + len;
		e.obj = object_of(rc, a, addr, addr + len, (const char *)rec + 72, rec + 44,
				  misc & PERF_RECORD_MISC_MMAP_BUILD_ID ? rec[40] : 0);
		jitmaps_seen(&rc->jm, a, addr, addr + len, (const char *)rec + 72);
		lateprobe_map(&rc->late, a, addr, addr + len, (const char *)rec + 72, e.time);
		break;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (size < 24)
			return;
		memcpy(&a, rec + 8, 4);  /* pid */
		memcpy(&b, rec + 12, 4); /* ppid */
		memcpy(&c, rec + 16, 4); /* tid */
		/* Threads share their process's code. */
		if (a != c || (type == PERF_RECORD_FORK && a == b))
			return;
		e.op = type == PERF_RECORD_FORK ? EXECMAP_FORK : EXECMAP_EXIT;
		e.pid = a;
		e.other = b;
		/* A runtime writes its perf map as it exits (the JVM's
		 * -XX:+DumpPerfMapAtExit): copied now, the process just gone. */
		if (type == PERF_RECORD_EXIT) {
			rec_jitmaps_collect(rc, a, 1);
			lateprobe_exit(&rc->late, a);
		} else {
			lateprobe_fork(&rc->late, a, b, e.time);
		}
		break;
	case PERF_RECORD_COMM:
		if (size < 16 || !(misc & PERF_RECORD_MISC_COMM_EXEC))
			return;
		memcpy(&a, rec + 8, 4);
		e.op = EXECMAP_EXEC;
		e.pid = a;
		break;
	default:
		return;
	}
	execmap_apply(&rc->em, &e);
}

/* Drain loop: the objects a sample's ip and frame-pointer callchain run
 * in are the ones the trace must carry (a dwarf sample's are marked as its
 * dump is scrubbed). */
static void touch_user_ips(struct recorder *rc, const struct rec_event *e, const unsigned char *rec, size_t size)
{
	struct em_gen *p;
	uint64_t nr, ip, time;
	uint32_t pid;
	int user = 0;

	memcpy(&pid, rec + 24, 4);
	memcpy(&time, rec + 32, 8);
	if (!(p = execmap_at(&rc->em, (pid_t)pid, time)))
		return;
	memcpy(&ip, rec + 16, 8);
	if (execmap_maybe(p, ip)) {
		int64_t o = execmap_find(p, ip);

		if (o > 0)
			execmap_touch(&rc->em, (uint32_t)o);
	}
	if (!e->callchain_off || e->attr.exclude_callchain_user || e->callchain_off + 8 > size)
		return;
	memcpy(&nr, rec + e->callchain_off, 8);
	for (uint64_t i = 0; i < nr && e->callchain_off + 8 + 8 * (i + 1) <= size; i++) {
		memcpy(&ip, rec + e->callchain_off + 8 + 8 * i, 8);
		if (ip >= PERF_CONTEXT_MAX) {
			user = ip == PERF_CONTEXT_USER;
			continue;
		}
		if (user && execmap_maybe(p, ip)) {
			int64_t o = execmap_find(p, ip);

			if (o > 0)
				execmap_touch(&rc->em, (uint32_t)o);
		}
	}
}

/* Drain loop: look at one record copied out of a ring (e: its event, for
 * a sample): count it, and what cannot wait for the compression thread
 * (an OOM kill's state while the victim is still there, the triggers, the
 * objects stacks touch; the processes' code was noted first, by
 * ring_prescan). */
static void inspect(struct recorder *rc, struct ring *r, struct rec_event *e, const unsigned char *rec, size_t size)
{
	const struct perf_event_header *h = (const void *)rec;

	if (h->type == PERF_RECORD_SAMPLE || h->type == STACKDUMP_PACKED_SAMPLE) {
		if (!e)
			return;
		e->samples++;
		if (e->victim_pid_off > 0)
			oom_seen(rc, e, rec, size);
		if (e->watch)
			flight_inspect(rc, e, rec, size);
		if (size >= 32 && !(e->attr.sample_type & PERF_SAMPLE_STACK_USER))
			touch_user_ips(rc, e, rec, size);
	} else if (h->type == PERF_RECORD_LOST && size >= 24) {
		uint64_t lost;

		memcpy(&lost, rec + 16, 8);
		r->lost += lost;
	}
}

/* Compression thread: what the end of the recording (and a ring's next
 * segment) needs from a record: kernel addresses, files
 * without build-id, the processes' mappings. */
static void note(struct recorder *rc, const struct rec_event *e, const unsigned char *rec, size_t size)
{
	const struct perf_event_header *h = (const void *)rec;

	if (rc->fl.ring_size && h->type != PERF_RECORD_SAMPLE)
		proctrack_record(&rc->fl.pt, rec, size);
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
	case STACKDUMP_PACKED_SAMPLE: {
		if (e && e->callchain_off && e->callchain_off + 8 <= size) {
			uint64_t nr, ip;
			int kernel = 0;

			memcpy(&nr, rec + e->callchain_off, 8);
			for (uint64_t i = 0; i < nr && e->callchain_off + 8 + 8 * (i + 1) <= size; i++) {
				memcpy(&ip, rec + e->callchain_off + 8 + 8 * i, 8);
				if (ip >= PERF_CONTEXT_MAX) {
					kernel = ip == PERF_CONTEXT_KERNEL;
					if (ip == PERF_CONTEXT_USER)
						break;
					continue;
				}
				if (kernel)
					ksyms_set_add(&rc->ksyms, ip);
			}
		}
		break;
	}
	case PERF_RECORD_MMAP2:
		if (!(h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && size > 73 && rec[72] == '/' && rec[73] != '/') {
			char name[PATH_MAX];
			size_t n = strnlen((const char *)rec + 72, size - 72);

			if (n < sizeof(name)) {
				memcpy(name, rec + 72, n);
				name[n] = 0;
				nobid_add(rc, name, rec);
			}
		}
		break;
	}
}

/* On the compression thread, before a DATA chunk is compressed: each
 * record noted. Reads only the id table, which is fixed before the thread
 * starts. Returns the chunk's length, unchanged. */
size_t rec_chunk_prepare(void *arg, unsigned char *buf, size_t len)
{
	struct recorder *rc = arg;
	size_t off = 0, ahead = 0;

	while (off + sizeof(struct perf_event_header) <= len) {
		struct perf_event_header h;
		const struct rec_event *e = NULL;
		uint64_t id;

		/* The lines ahead, on the drain's CPU's writes, which
		 * compressing reads next anyway. */
		for (; ahead < len && ahead < off + REC_PREFETCH_AHEAD; ahead += 64)
			__builtin_prefetch(buf + ahead);
		memcpy(&h, buf + off, sizeof(h));
		if (h.size < sizeof(h) || h.size > len - off)
			break;
		if ((h.type == PERF_RECORD_SAMPLE || h.type == STACKDUMP_PACKED_SAMPLE) && h.size >= 16) {
			memcpy(&id, buf + off + 8, 8);
			e = rec_event_of(rc, id);
		}
		note(rc, e, buf + off, h.size);
		off += h.size;
	}
	return len;
}

static void ring_push(struct recorder *rc, struct ring *r)
{
	/* The compression thread takes the buffer; the next records go to
	 * a new one. */
	writeq_push(&rc->q, r->stream, r->first_time, r->chunk, r->len, r->alloc, r->nrec);
	rc->records += r->nrec;
	r->chunk = NULL;
	r->alloc = 0;
	r->len = 0;
	r->nrec = 0;
	r->tasks = 0;
	r->flushed_at = rec_now_ns(CLOCK_MONOTONIC);
}

/* Chunks reach the file in the order they are pushed, and a full disk
 * keeps a prefix of that order: so the records of processes (mappings,
 * execs, forks) that any buffer holds go before every chunk pushed after
 * them. Whatever samples a trace cut by a full disk holds, it holds the
 * mappings they ran in. */
void rec_ring_flush(struct recorder *rc, struct ring *r)
{
	if (!r->len)
		return;
	for (int c = 0; rc->rings && c < rc->nr_rings; c++)
		if (&rc->rings[c] != r && rc->rings[c].tasks && rc->rings[c].len)
			ring_push(rc, &rc->rings[c]);
	ring_push(rc, r);
}

/* The processes' changes among the records of r from its tail up to head,
 * applied before any sample of this pass is copied (procs/execmap.h). */
/* The record of size bytes at off in r, put together in the bounce
 * buffer when it wraps the ring's end (records are 8-byte aligned, so a
 * header never does). */
static const unsigned char *ring_record(struct recorder *rc, const struct ring *r, size_t off, size_t size)
{
	if (off + size <= r->size)
		return r->data + off;
	memcpy(rc->bounce, r->data + off, r->size - off);
	memcpy(rc->bounce + (r->size - off), r->data, size - (r->size - off));
	return rc->bounce;
}

/* The changes of processes in r from what was scanned up to head, noted
 * for task_apply. Returns -1 out of memory. */
static int ring_prescan(struct recorder *rc, struct ring *r, uint64_t head)
{
	uint64_t tail = r->pc->data_tail;

	for (tail = r->scanned > tail ? r->scanned : tail; tail < head;) {
		size_t off = tail & r->mask;
		const struct perf_event_header *h = (const void *)(r->data + off);
		size_t size = h->size;

		if (size < sizeof(*h) || size > head - tail)
			break; /* said by the copy that follows */
		if (h->type != PERF_RECORD_SAMPLE && h->type != PERF_RECORD_LOST) {
			const unsigned char *rec;

			if (rc->nr_tasks == rc->tasks_alloc) {
				size_t n = rc->tasks_alloc ? rc->tasks_alloc * 2 : 256;
				struct task_ref *v = realloc(rc->tasks, n * sizeof(*v));

				if (!v)
					return -1;
				rc->tasks = v;
				rc->tasks_alloc = n;
			}
			rec = ring_record(rc, r, off, size);
			rc->tasks[rc->nr_tasks++] =
				(struct task_ref){ trace_record_time(rec, size), tail, (int)(r - rc->rings), (uint32_t)size };
		}
		tail += size;
	}
	r->scanned = tail;
	return 0;
}

static int task_cmp(const void *a, const void *b)
{
	const struct task_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->ring != y->ring)
		return x->ring < y->ring ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The changes noted, in time order whatever ring holds them: an exec
 * applied after the mappings made by the program it started, written to
 * another CPU's ring, would begin an empty map for its samples. */
static void task_apply(struct recorder *rc)
{
	if (rc->nr_tasks > 1)
		qsort(rc->tasks, rc->nr_tasks, sizeof(*rc->tasks), task_cmp);
	for (size_t i = 0; i < rc->nr_tasks; i++) {
		const struct task_ref *t = &rc->tasks[i];
		struct ring *r = &rc->rings[t->ring];
		const unsigned char *rec = ring_record(rc, r, t->pos & r->mask, t->size);
		const struct perf_event_header *h = (const void *)rec;

		inspect_task(rc, rec, t->size, h->type, h->misc);
	}
	rc->nr_tasks = 0;
}

/* Whether a record's process is one --cgroup keeps: a sample's pid is
 * after its IDENTIFIER and IP, the other records' first. */
static int record_kept(const struct recorder *rc, uint32_t type, const unsigned char *rec, size_t size)
{
	uint32_t pid;
	size_t at = type == PERF_RECORD_SAMPLE ? 24 : 8;

	if (size < at + 4)
		return 1;
	memcpy(&pid, rec + at, 4);
	return cgroup_filter_has(&rc->cg, pid, trace_record_time(rec, size));
}

int rec_record_put(struct recorder *rc, struct ring *r, struct rec_event *e, const unsigned char *src, size_t size)
{
	unsigned char *dst;
	size_t n;

	/* A record is at most 64 KiB (the header's u16) and a chunk is
	 * flushed past CHUNK_TARGET, so a CHUNK_BUF buffer always has
	 * room; buffers are never grown. */
	if (r->len + size > r->alloc)
		rec_ring_flush(rc, r);
	if (!r->alloc) {
		r->chunk = writeq_buffer(&rc->q);
		if (!r->chunk)
			return msg_error("out of memory");
		r->alloc = CHUNK_BUF;
	}
	dst = r->chunk + r->len;
	if (e && (e->attr.sample_type & PERF_SAMPLE_STACK_USER) &&
	    ((const struct perf_event_header *)src)->type == STACKDUMP_PACKED_SAMPLE)
		n = scrub_repack(&rc->scrub, e->attr.sample_type, e->attr.sample_regs_user, src, size, dst);
	else if (e && (e->attr.sample_type & PERF_SAMPLE_STACK_USER))
		n = scrub_copy(&rc->scrub, e->attr.sample_type, e->attr.sample_regs_user, e->dump_data, src, size, dst);
	else
		memcpy(dst, src, n = size);
	if (e && e->keep_regs) {
		/* A syscall's arguments as they are; the carrier's other
		 * argument registers, which hold what the program left
		 * there, as no call's. */
		uint64_t keep = events_sample_keep_regs(e, src, size);

		if (e->attr.sample_type & PERF_SAMPLE_STACK_USER)
			scrub_keep_regs(e->attr.sample_type, e->attr.sample_regs_user, keep, src, size, dst);
		else if (keep != e->keep_regs)
			scrub_clear_regs(e->attr.sample_type, e->attr.sample_regs_user, e->keep_regs & ~keep, dst, n);
	}
	if (!r->nrec)
		r->first_time = trace_record_time(dst, n);
	{
		uint32_t type = ((const struct perf_event_header *)dst)->type;

		r->tasks |= type != PERF_RECORD_SAMPLE && type != STACKDUMP_PACKED_SAMPLE && type != PERF_RECORD_LOST;
	}
	inspect(rc, r, e, dst, n);
	r->len += n;
	r->nrec++;
	return 0;
}

/* Copy the records of r from its tail up to head into its chunk buffer,
 * scrubbing stack dumps on the way, and free the ring's space. */
static int ring_drain(struct recorder *rc, struct ring *r, uint64_t head)
{
	uint64_t tail = r->pc->data_tail;
	unsigned fill = r->size ? (unsigned)((head - tail) * 1024 / r->size) : 0;

	rc->drained += head - tail;
	if (fill > rc->fill_max)
		rc->fill_max = fill;
	while (tail < head) {
		size_t off = tail & r->mask, size;
		const struct perf_event_header *h = (const void *)(r->data + off);
		const unsigned char *src = r->data + off;
		struct rec_event *e = NULL;

		/* Records are 8-byte aligned, so a header never wraps. */
		size = h->size;
		if (size < sizeof(*h) || size > head - tail)
			return msg_error("%sring of cpu %d holds a malformed record (size %zu)", r->deep ? "the deep-stacks " : "",
					 r->cpu, size);
		/* One that wraps the ring's end is put together first. */
		src = ring_record(rc, r, off, size);
		if (h->type == PERF_RECORD_SAMPLE && size >= 16) {
			uint64_t id;

			memcpy(&id, src + 8, 8);
			e = rec_event_of(rc, id);
		}
		/* --cgroup, by the recorder: only the processes kept. */
		if (rc->cg.by_recorder && h->type != PERF_RECORD_LOST && h->type != PERF_RECORD_FORK &&
		    !record_kept(rc, h->type, src, size)) {
			tail += size;
			continue;
		}
		if (rec_record_put(rc, r, e, src, size))
			return -1;
		tail += size;
	}
	/* Free the ring before the slow part: compression and the write. */
	__atomic_store_n(&r->pc->data_tail, tail, __ATOMIC_RELEASE);
	if (r->len >= CHUNK_TARGET)
		rec_ring_flush(rc, r);
	return 0;
}

/*
 * One pass over the rings. Their heads are read first, then the
 * processes' changes up to heads read after them are applied, all rings'
 * in time order, then the records are copied up to the first heads: a
 * sample in one ring can follow a mapping or an exec written to another
 * a moment before, and must be scrubbed knowing of it. The wrapper's
 * reports come last, up to a time read before the rings' heads: a mapping
 * their stacks run in was written to a ring before then.
 */
int rec_drain_all(struct recorder *rc, int flush_old)
{
	uint64_t now = rec_now_ns(CLOCK_MONOTONIC);

	flight_task_sweep(&rc->fl);
	for (int c = 0; c < rc->nr_rings; c++)
		if (rc->rings[c].base)
			rc->rings[c].head = __atomic_load_n(&rc->rings[c].pc->data_head, __ATOMIC_ACQUIRE);
	/* The changes up to heads read after those: whatever a sample
	 * copied now follows was written before its ring's head was read,
	 * and so before these. */
	for (int c = 0; c < rc->nr_rings; c++)
		if (rc->rings[c].base &&
		    ring_prescan(rc, &rc->rings[c], __atomic_load_n(&rc->rings[c].pc->data_head, __ATOMIC_ACQUIRE)))
			return msg_error("out of memory");
	task_apply(rc);
	for (int c = 0; c < rc->nr_rings; c++) {
		struct ring *r = &rc->rings[c];

		if (r->base && ring_drain(rc, r, r->head))
			return -1;
		/* Bound what a crash could lose on a quiet CPU. */
		if (flush_old && r->len && now - r->flushed_at > (rc->fl.ring_size ? FLUSH_AGE_RING_NS : FLUSH_AGE_NS))
			rec_ring_flush(rc, r);
	}
	if (allocstream_drain(rc, now, rc->stop_ns != 0))
		return -1;
	if (jitmaps_pump(&rc->jm, JITMAPS_PASS_MAX, jit_emit, rc))
		msg_warn("out of memory copying a runtime's perf map or jitdump: the trace carries fewer");
	if (flush_old && rc->wrapper_out.len &&
	    now - rc->wrapper_out.flushed_at > (rc->fl.ring_size ? FLUSH_AGE_RING_NS : FLUSH_AGE_NS))
		rec_ring_flush(rc, &rc->wrapper_out);
	return 0;
}

void rec_rings_flush_all(struct recorder *rc)
{
	for (int c = 0; c < rc->nr_rings; c++)
		rec_ring_flush(rc, &rc->rings[c]);
	rec_ring_flush(rc, &rc->wrapper_out);
}

