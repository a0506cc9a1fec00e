/*
 * record/write/tracemeta.c: the META chunks that start and end a trace (host, tracefs
 * header_page, events, /proc snapshots; kernel symbols, late build-ids,
 * statistics), the --leak-check scans, and the summary on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "../procs/procsnap.h"

#include "../../formats/allocfns.h"
#include "../../formats/catalog.h"
#include "../recorder.h"

static void meta_add(struct recorder *rc, enum trace_meta_kind kind, const void *data, size_t len)
{
	trace_writer_add(&rc->w, TRACE_CHUNK_META, kind, 0, data, len, 0);
}

/* A META chunk learned mid-recording that every reader of the trace needs
 * whatever part of it it reads (a late event's description, which
 * processes its probes cover): in order with the records, or for a ring
 * in its head, on the compression thread that owns the writer. */
struct lasting {
	uint32_t kind;
	size_t len;
	unsigned char data[];
};

static void lasting_write(void *arg, void *data)
{
	struct recorder *rc = arg;
	struct lasting *l = data;

	trace_writer_to_head(&rc->w, 1);
	if (trace_writer_add(&rc->w, TRACE_CHUNK_META, l->kind, 0, l->data, l->len, 0) == -ENOSPC &&
	    !rc->fl.head_full_said++)
		msg_warn("the ring's head has no room left for what it learns while recording (a probe found late): "
			 "its snapshots may not name it; give a bigger --ring");
	trace_writer_to_head(&rc->w, 0);
}

void rec_meta_lasting(struct recorder *rc, uint32_t kind, const void *data, size_t len)
{
	struct lasting *l;

	if (!rc->fl.ring_size) {
		writeq_push_meta(&rc->q, kind, data, len);
		return;
	}
	if (!(l = malloc(sizeof(*l) + len)))
		return;
	l->kind = kind;
	l->len = len;
	memcpy(l->data, data, len);
	writeq_push_call(&rc->q, lasting_write, rc, l);
}

int rec_meta_event(struct recorder *rc, const struct rec_event *e, int lasting)
{
	struct trace_event_desc d = { (char *)e->name, (char *)e->group, e->format, (void *)&e->attr, sizeof(e->attr),
				      e->ids, e->nr_ids };
	unsigned char *buf;
	size_t len;

	if (trace_event_desc_encode(&d, &buf, &len))
		return -ENOMEM;
	if (lasting)
		rec_meta_lasting(rc, TRACE_META_EVENT, buf, len);
	else
		meta_add(rc, TRACE_META_EVENT, buf, len);
	free(buf);
	return 0;
}

/* This boot's id: an analyzer that reads the same one knows the recorded
 * pids are this machine's (and may be running still). */
static int boot_id(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	int ok = f && fgets(buf, len, f);

	if (f)
		fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok && buf[0];
}

static void write_host(struct recorder *rc)
{
	struct utsname u;
	char host[8192], cmd[4096] = "";
	size_t n = 0;
	uint64_t mono = rec_now_ns(CLOCK_MONOTONIC), real = rec_now_ns(CLOCK_REALTIME);
	char hostname[256] = "", boot[64];

	uname(&u);
	gethostname(hostname, sizeof(hostname) - 1);
	for (int i = 0; i < rc->argc; i++)
		n += snprintf(cmd + n, n < sizeof(cmd) ? sizeof(cmd) - n : 0, "%s%s", i ? " " : "", rc->argv[i]);
	n = 0;
#define ADD(...) n += snprintf(host + n, n < sizeof(host) ? sizeof(host) - n : 0, __VA_ARGS__)
	ADD("memsight_version %s\n", MEMSIGHT_VERSION);
	ADD("hostname %s\n", hostname);
	ADD("sysname %s\nrelease %s\nversion %s\nmachine %s\n", u.sysname, u.release, u.version, u.machine);
	ADD("nr_cpus %d\n", rc->ncpus);
	ADD("page_size %ld\n", sysconf(_SC_PAGESIZE));
	ADD("long_size %zu\n", sizeof(long));
	ADD("byte_order little\n");
	ADD("clock_id %d\n", CLOCK_MONOTONIC);
	ADD("clock_monotonic_ns %llu\nclock_realtime_ns %llu\n", (unsigned long long)mono,
	    (unsigned long long)real);
	ADD("recorder_pid %d\n", (int)getpid());
	if (boot_id(boot, sizeof(boot)))
		ADD("boot_id %s\n", boot);
	ADD("command %s\n", cmd);
	if (rc->callchain == REC_CG_DWARF)
		ADD("call_graph dwarf,%u\n", rc->stack_size);
	else
		ADD("call_graph %s\n", rc->callchain == REC_CG_FP ? "fp" : "none");
	ADD("stack_dump %s\n", scrub_mode_name(rc->scrub.mode));
	ADD("groups %s\n", rc->groups);
	ADD("build_id_in_mmap2 %d\n", rc->build_id);
	{
		/* How deep the kernel walks a frame-pointer chain: one that
		 * deep lost its outer callers. */
		char v[16] = "";
		int fd = open("/proc/sys/kernel/perf_event_max_stack", O_RDONLY | O_CLOEXEC);

		if (fd >= 0 && read(fd, v, sizeof(v) - 1) > 0 && atoi(v) > 0)
			ADD("perf_event_max_stack %d\n", atoi(v));
		if (fd >= 0)
			close(fd);
	}
	if (rc->allocator[0]) {
		ADD("allocator %s\n", rc->allocator);
		ADD("alloc_sample %u\n", rc->sample ? rc->sample : 1);
		ADD("alloc_min_size %llu\nalloc_max_size %llu\n", rc->min_size, rc->max_size);
		if (rc->sampler[0])
			ADD("alloc_sampler %s\nalloc_sample_bytes %llu\n", rc->sampler,
			    (unsigned long long)rc->sample_bytes);
		if (uprobes_aliases()[0])
			ADD("alloc_aliases %s\n", uprobes_aliases());
		/* What the fn field of the merged events numbers. */
		if (!rc->sampler[0]) {
			ADD("alloc_fns");
			for (int k = 0; k < AF_SAMPLED_FIRST; k++)
				ADD(" %s", alloc_fns[k].symbol);
			ADD("\n");
		}
		if (rc->leak_check)
			ADD("leak_check 1\n");
		if (rc->guard)
			ADD("alloc_guard %llu%s\n", (unsigned long long)rc->guard, rc->guard_recover ? ",recover" : "");
	}
	if (rc->cgroup_root[0])
		ADD("cgroup_root %s\n", rc->cgroup_root);
	if (rc->cgroup)
		ADD("cgroup_filter %s\ncgroup_filter_by %s\n", rc->cg.path, rc->cg.by_recorder ? "recorder" : "kernel");
	if (rc->system_wide && rc->command)
		ADD("target system command %d\n", (int)rc->child);
	else if (rc->system_wide)
		ADD("target system\n");
	else if (rc->command)
		ADD("target command %d\n", (int)rc->child);
	else {
		ADD("target pids");
		for (size_t i = 0; i < rc->nr_pids; i++)
			ADD("%s%d", i ? "," : " ", (int)rc->pids[i]);
		ADD("\n");
	}
#undef ADD
	if (n >= sizeof(host))
		n = sizeof(host) - 1;
	meta_add(rc, TRACE_META_HOST, host, n);
	rc->start_ns = mono;
}

int rec_meta_start(struct recorder *rc)
{
	size_t len;
	char *hp;

	write_host(rc);
	hp = events_tracefs_read("events/header_page", &len);
	if (hp) {
		meta_add(rc, TRACE_META_HEADER_PAGE, hp, len);
		free(hp);
	}
	/* The cgroups there are now, by the ids samples carry; those made
	 * later come as PERF_RECORD_CGROUP. */
	if (rc->sample_cgroup && rc->cgroup_root[0]) {
		char *text;

		if (!cgroups_table(rc->cgroup_root, &text, &len)) {
			meta_add(rc, TRACE_META_CGROUPS, text, len);
			free(text);
		}
	}
	for (size_t i = 0; i < rc->nr_evs; i++)
		if (rec_meta_event(rc, &rc->evs[i], 0))
			return msg_error("out of memory");
	if (rc->system_wide || rc->nr_pids) {
		pid_t *pids = rc->pids;
		int n = rc->nr_pids;

		if (rc->system_wide && (n = procsnap_list(0, &pids)) < 0)
			return msg_error("cannot list /proc: %s", strerror(-n));
		for (int i = 0; i < n; i++) {
			char *text;

			/* A process may exit while we look: skip it. */
			if (procsnap_process(pids[i], &text, &len))
				continue;
			/* A ring restates them as each segment begins; the
			 * kernel's records of them, all later, go over them. */
			if (rc->fl.ring_size)
				proctrack_load(&rc->fl.pt, text, len, 0);
			else
				meta_add(rc, TRACE_META_PROCESS, text, len);
			rec_procs_snapshot(rc, text, len);
			free(text);
		}
		if (pids != rc->pids)
			free(pids);
	}
	if (rc->fl.ring_size && !rc->w.err && flight_ring_begin(rc))
		return -1;
	return rc->w.err ? msg_error("cannot write '%s': %s", rc->output, trace_writer_strerror(&rc->w)) : 0;
}

static int jit_meta_add(void *arg, const void *payload, size_t len)
{
	meta_add(arg, TRACE_META_JITMAP, payload, len);
	return 0;
}

/* Compression thread: objects stacks have touched since the last batch.
 * Those whose packed entries the cache holds are carried now, a copy
 * each, so that the recording's end need not wait for them; those that
 * need packing, which can take a tenth of a second, wait for the end,
 * where nothing else waits for this thread. */
static void objects_early_write(void *arg, void *data)
{
	struct recorder *rc = arg;
	struct embed_list *l = data;

	if (!trace_writer_full(&rc->w)) {
		uint64_t bytes = embed_list_split_ready(&rc->embed, l, rc->w.codec, &rc->objects_later);

		/* Their room is taken first, with the reserve that closes the
		 * trace after it, as for records: on a disk too full for them
		 * they wait for the end, which carries objects only if there
		 * is room. The slack is for the entries not from the cache
		 * (the vDSO, the list). */
		if (trace_writer_room(&rc->w, bytes + (64u << 10)))
			embed_list_move(l, &rc->objects_later);
		else
			embed_list_write(&rc->embed, l, &rc->w);
	}
	embed_list_release(l);
}

struct embed_list *rec_objects_touched(struct recorder *rc)
{
	struct embed_list *l = calloc(1, sizeof(*l));

	if (l && embed_list_touched(l, &rc->objs, &rc->em, 1)) {
		embed_list_release(l);
		free(l);
		l = NULL;
	}
	return l;
}

/* Not in a recording's first second, and at most once a second: reading
 * and writing libc's 3 MiB of cached entries beside a program that runs
 * for milliseconds took 13% of its time (the caches it shares); a short
 * recording's end carries them as before. */
#define OBJECTS_EARLY_NS 1000000000ull

void rec_objects_early(struct recorder *rc)
{
	struct embed_list *l;
	uint64_t now;

	if (rc->fl.ring_size || rc->em.nr_touched == rc->objects_listed)
		return;
	now = rec_now_ns(CLOCK_MONOTONIC);
	if (now - rc->start_ns < OBJECTS_EARLY_NS || now - rc->objects_early_ns < OBJECTS_EARLY_NS)
		return;
	rc->objects_early_ns = now;
	rc->objects_listed = rc->em.nr_touched;
	if (!(l = rec_objects_touched(rc)))
		return;
	if (l->nr)
		writeq_push_call(&rc->q, objects_early_write, rc, l);
	else
		free(l);
}

void rec_meta_end(struct recorder *rc)
{
	char *text = NULL, line[PATH_MAX + 64];
	size_t len = 0, alloc = 0;

	/* The objects first: the kallsyms thread may still be reading. Not
	 * on a full disk: the reserve is for what follows. Not into a ring,
	 * where they would push out the window: its snapshots and memsight
	 * archive carry them. */
	if (!trace_writer_full(&rc->w) && !rc->fl.ring_size) {
		struct embed_list l = rc->objects_later;

		memset(&rc->objects_later, 0, sizeof(rc->objects_later));
		if (!embed_list_touched(&l, &rc->objs, &rc->em, 1))
			embed_list_write(&rc->embed, &l, &rc->w);
		embed_list_release(&l);
	}
	/* The runtimes' perf maps and jitdumps as they are at the end; a
	 * ring's, with those of the processes gone, go in its last segment,
	 * which every window holds. */
	if (!trace_writer_full(&rc->w) && rc->fl.ring_size) {
		jitmaps_collect(&rc->jm, 0, 0, flight_jit_keep, rc);
		flight_jit_write(&rc->fl.jit, &rc->w);
	} else if (!trace_writer_full(&rc->w)) {
		jitmaps_collect(&rc->jm, 0, 0, jit_meta_add, rc);
	}
	if (!ksyms_extract(&rc->ksyms, &rc->kallsyms, &text, &len) && len)
		meta_add(rc, TRACE_META_KSYMS, text, len);
	free(text);

	/* Build-ids the kernel could not give (page not in memory): read
	 * through the mapping while its process lives, else by its path
	 * when that is still the file that was mapped. */
	text = NULL;
	len = alloc = 0;
	for (size_t i = 0; i < rc->nr_nobid; i++) {
		const struct rec_nobid *nb = &rc->nobid[i];
		unsigned char id[BUILD_ID_MAX];
		char hex[2 * BUILD_ID_MAX + 1];
		struct procfile_cred c;
		int l, n;

		procfile_cred_read(nb->pid, &c);
		l = procsnap_mapping_build_id(nb->pid, &c, nb->start, nb->end, nb->name, nb->dev, nb->ino, id);
		if (l <= 0)
			continue;
		procsnap_build_id_hex(id, l, hex);
		n = snprintf(line, sizeof(line), "%s\t%s\n", hex, nb->name);
		if (len + n + 1 > alloc) {
			char *p = realloc(text, alloc = (len + n + 1) * 2);

			if (!p)
				break;
			text = p;
		}
		memcpy(text + len, line, n);
		len += n;
	}
	if (len)
		meta_add(rc, TRACE_META_BUILDIDS, text, len);
	free(text);

	text = NULL;
	len = alloc = 0;
	{
		char buf[16384];
		size_t n = 0;
		uint64_t lost = rec_lost(rc, 0);

#define ADD(...) n += snprintf(buf + n, n < sizeof(buf) ? sizeof(buf) - n : 0, __VA_ARGS__)
		ADD("duration_ns %llu\n", (unsigned long long)(rc->stop_ns - rc->start_ns));
		ADD("records %llu\n", (unsigned long long)rc->records);
		if (rc->probes_on_ns)
			ADD("probes_on_ns %llu\n", (unsigned long long)rc->probes_on_ns);
		if (rc->stop_ns)
			ADD("probes_off_ns %llu\n", (unsigned long long)rc->stop_ns);
		if (rc->records > rc->w.nr_records)
			ADD("records_not_written %llu\n", (unsigned long long)(rc->records - rc->w.nr_records));
		ADD("lost %llu\n", (unsigned long long)lost);
		if (rec_lost(rc, 1))
			ADD("lost_deep_stacks %llu\n", (unsigned long long)rec_lost(rc, 1));
		ADD("writer_queue_peak %zu\nwriter_queue_waits %llu\n", rc->q.peak,
		    (unsigned long long)rc->q.waits);
		ADD("writer_codec %d\nwriter_level %d\n", (int)rc->w.codec, rc->w.level);
		ADD("writer_fast_chunks %llu\nwriter_raw_chunks %llu\n", (unsigned long long)rc->q.fast_chunks,
		    (unsigned long long)rc->q.raw_chunks);
		ADD("writer_boosts %llu\ndrain_realtime %d\n", (unsigned long long)rc->q.boosts, rc->realtime);
		if (rc->wakeups_missed)
			ADD("drain_wakeups_missed %llu\n", (unsigned long long)rc->wakeups_missed);
		if (rc->jm.files || rc->jm.refused)
			ADD("jitmaps_copies %llu\njitmaps_bytes %llu\njitmaps_refused %llu\n",
			    (unsigned long long)rc->jm.files, (unsigned long long)rc->jm.copied,
			    (unsigned long long)rc->jm.refused);
		if (rc->scrub.words_seen)
			ADD("dump_words %llu\ndump_words_kept %llu\ndump_unknown_processes %llu\n",
			    (unsigned long long)rc->scrub.words_seen, (unsigned long long)rc->scrub.words_kept,
			    (unsigned long long)rc->scrub.dumps_unknown);
		if (rc->as.env[0])
			ADD("wrapper_processes %llu\nwrapper_threads %llu\nwrapper_reports %llu\nwrapper_packed %llu\n"
			    "wrapper_broken %llu\nwrapper_grown %llu\nwrapper_dropped %llu\n",
			    (unsigned long long)rc->as.processes, (unsigned long long)rc->as.threads,
			    (unsigned long long)rc->as.reports, (unsigned long long)rc->as.packed,
			    (unsigned long long)rc->as.broken, (unsigned long long)rc->as.grown,
			    (unsigned long long)rc->as.dropped);
		if (rc->fl.ring_size)
			ADD("ring_size %llu\nring_bytes %llu\nsnapshots %u\nsnapshots_failed %u\nsnapshots_suppressed %u\n",
			    (unsigned long long)rc->fl.ring_size, (unsigned long long)rc->w.ring_bytes, rc->fl.taken,
			    rc->fl.failed, rc->fl.suppressed);
		for (size_t i = 0; i < rc->nr_evs; i++)
			if (rc->evs[i].group[0])
				ADD("samples %s %llu\n", rc->evs[i].name, (unsigned long long)rc->evs[i].samples);
		if (rc->command && rc->child_done) {
			ADD("command_status %d\n", rc->child_status);
			if (rc->child_stopped)
				ADD("command_stopped 1\n");
			/* What the kernel itself counted for the command and the
			 * children it waited for: a check on the fault samples. */
			ADD("command_minflt %ld\ncommand_majflt %ld\n", rc->child_ru.ru_minflt,
			    rc->child_ru.ru_majflt);
			ADD("command_maxrss_kb %ld\n", rc->child_ru.ru_maxrss);
		}
#undef ADD
		if (n >= sizeof(buf))
			n = sizeof(buf) - 1;
		meta_add(rc, TRACE_META_STATS, buf, n);
	}
}

/* A --leak-check scan's payload: in order with the records while the
 * compression thread runs, straight to the writer once it has stopped. */
int rec_reach_emit(void *arg, const void *payload, size_t len)
{
	struct recorder *rc = arg;

	if (rc->q.running)
		writeq_push_meta(&rc->q, TRACE_META_REACH, payload, len);
	else
		meta_add(rc, TRACE_META_REACH, payload, len);
	return rc->w.err;
}

uint64_t rec_lost(const struct recorder *rc, int deep)
{
	uint64_t lost = deep ? rc->lost_deep_unreported : rc->lost_unreported;

	for (int c = 0; c < rc->nr_rings; c++)
		if (rc->rings[c].deep == deep)
			lost += rc->rings[c].lost;
	return lost;
}

void rec_summary(struct recorder *rc)
{
	uint64_t lost = rec_lost(rc, 0), lost_deep = rec_lost(rc, 1), written = rc->w.nr_records;
	uint64_t bytes = rc->w.ring_start ? rc->w.ring_start + rc->w.ring_bytes : rc->w.offset;
	uint64_t unwritten = rc->records > written ? rc->records - written : 0;
	double secs = (rc->stop_ns - rc->start_ns) / 1e9;

	if (rc->quiet && !lost && !unwritten)
		return;
	/* Bytes a record: of the records' own chunks, not of the objects
	 * and symbols the trace carries beside them. */
	if (secs < 1)
		msg_note("%llu records in %.0f ms, %.2f MiB written to '%s' (%.1f bytes a record)",
			 (unsigned long long)written, secs * 1e3, bytes / 1048576.0, rc->output,
			 written ? (double)rc->w.data_stored / written : 0.0);
	else
		msg_note("%llu records in %.2f s, %.2f MiB written to '%s' (%.1f bytes a record)",
			 (unsigned long long)written, secs, bytes / 1048576.0, rc->output,
			 written ? (double)rc->w.data_stored / written : 0.0);
	/* Records that never reached the file are lost as surely as those
	 * the kernel dropped: never "0 lost" then. */
	if (unwritten)
		msg_note("NOT WRITTEN %llu of %llu records: %s; %s",
			(unsigned long long)unwritten, (unsigned long long)rc->records,
			rc->disk_full ? "the disk holding the trace filled" : "writing the trace failed",
			rc->w.err ? "the trace ends where the writing failed"
				  : "the trace holds what reached the disk, and the mappings of every sample in it");
	if (lost && rc->q.waits)
		msg_note("LOST %llu events: the compression thread fell behind (%.0f MiB "
				"queued) for want of CPU; %s",
			(unsigned long long)lost, rc->q.peak / 1048576.0,
			geteuid() ? "run as root, which lets the recorder's threads run ahead of the command, or "
				    "record with -g fp (a tenth of the bytes)"
				  : rc->callchain == REC_CG_DWARF ? "record with -g fp (a tenth of the bytes), fewer "
								    "groups, or with a CPU left free"
								  : "record fewer groups, or with a CPU left free");
	else if (lost && rc->allocator[0])
		msg_note("LOST %llu events: the rings overflowed; for malloc, sample by bytes (--sample-bytes 512K), "
			 "keep one stack in N (-s N), or enlarge the rings (-m %u)",
			 (unsigned long long)lost, rc->mmap_pages * 2);
	else if (lost)
		msg_note("LOST %llu events: the rings overflowed; enlarge them with -m "
				"or record fewer groups, or sample them (kmem/100)",
			(unsigned long long)lost);
	else if (!rc->quiet && !unwritten)
		msg_note("0 events lost");
	/* Said apart: they cost no finding, only stacks the dump cut. */
	if (lost_deep && !rc->quiet)
		msg_note("%llu %s samples lost in their own rings: no other event was, but fewer stacks cut by "
			 "the dump can be completed (a larger -m, or a lower --deep-freq, loses fewer)",
			 (unsigned long long)lost_deep, CATALOG_DEEP_EVENT);
	if (rc->leak_check && rc->lc.failed)
		msg_note("--leak-check could not scan %d process%s (%s): leaks will not tell lost "
				"from reachable for %s",
			rc->lc.failed, rc->lc.failed == 1 ? "" : "es", strerror(rc->lc.last_err),
			rc->lc.failed == 1 ? "it" : "them");
	else if (rc->leak_check && !rc->lc.scans)
		msg_note("--leak-check scanned nothing: the process%s ended before the "
				"recording did",
			rc->nr_pids > 1 ? "es" : "");
	else if (rc->leak_check && !rc->quiet)
		msg_note("--leak-check scanned %d process%s, pausing %s %.1f ms", rc->lc.scans,
			rc->lc.scans == 1 ? "" : "es", rc->lc.scans == 1 ? "it" : "them", rc->lc.scan_ns / 1e6);
	if (rc->w.ring_start && !rc->quiet)
		msg_note("ring of %.1f MiB in %u segments: %.1f MiB went through it, %s", rc->fl.ring_size / 1048576.0,
			 rc->w.nr_segs, rc->w.ring_bytes / 1048576.0,
			 rc->w.seq > rc->w.nr_segs ? "the oldest overwritten" : "none of it overwritten");
	if (rc->fl.pt.cut)
		msg_warn("at %llu of the ring's %llu segments the processes' mappings did not fit in half a "
			 "segment: the processes that map the most restate fewer there (the anonymous ones left out "
			 "first, then those of no code)%s, and a window that starts at one knows less of them (a "
			 "larger --ring has larger segments)",
			 (unsigned long long)rc->fl.pt.cut, (unsigned long long)rc->w.seq,
			 rc->fl.pt.dropped ? ", and some processes are not restated at all" : "");
	if (rc->fl.nr_trig && !rc->quiet)
		msg_note("%u snapshot%s saved%s", rc->fl.taken, rc->fl.taken == 1 ? "" : "s",
			 rc->fl.failed ? " (some failed: see above)" : "");
	if (rc->oom_kills && !rc->quiet)
		msg_note("%llu OOM kill%s recorded with the system's state; see memsight oom",
			(unsigned long long)rc->oom_kills, rc->oom_kills == 1 ? "" : "s");
}

