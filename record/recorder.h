/*
 * record/recorder.h: the recorder's state, shared by its parts and nothing
 * else: options.c (the command line), probes/setup.c (events and rings),
 * write/drain.c (the drain loop), write/allocstream.c (the wrapper's
 * reports), write/tracemeta.c (the META chunks and
 * the summary), command.c (the command it runs), write/output.c (the
 * trace file's name), ring/flight.c (the ring's triggers and snapshots)
 * and record.c (main and the event loop).
 */
#ifndef MEMSIGHT_RECORDER_H
#define MEMSIGHT_RECORDER_H

#include <limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

#include "../formats/meta.h"
#include "../formats/msg.h"
#include "../formats/trace.h"
#include "objects/embed.h"
#include "probes/events.h"
#include "ring/flight.h"
#include "objects/ksyms.h"
#include "objects/objset.h"
#include "procs/cgroups.h"
#include "procs/execmap.h"
#include "objects/jitmaps.h"
#include "leakcheck/leakcheck.h"
#include "write/scrub.h"
#include "probes/uprobes.h"
#include "probes/lateprobe.h"
#include "write/writeq.h"
#include "write/allocstream.h"

#define CHUNK_TARGET (1u << 20)
/* A chunk's buffer: the target and room for the record that crosses it. */
#define CHUNK_BUF (CHUNK_TARGET + 65536)
/* How long records may wait in a chunk not yet full: what a crash could
 * lose, and how far behind a reader of the live trace (memsight top) is. */
#define FLUSH_AGE_NS (1000000000ull)
/* A ring's window is the chunks written last: a quiet CPU's chunk must
 * not carry records from long before it into the newest segment. */
#define FLUSH_AGE_RING_NS (200ull * 1000000ull)
/* Bytes of uncompressed chunks the compression thread may have queued
 * before the drain loop waits for it. */
#define WRITEQ_MAX (256u << 20)
/* The drain loop's poll interval while records flow: a 16 MiB ring
 * fills in about 10 ms at the 1.5 GB/s of dwarf stacks on page faults.
 * Where the rings fill slower, by what the last drain found, the loop
 * looks less often, up to POLL_FLOW_MS: each look is a wakeup, and at
 * 2 ms those cost a fifth of a system-wide recorder's CPU. The rings'
 * own wakeups, at a quarter full, take a burst meanwhile; a kernel that
 * missed one keeps the loop at POLL_ACTIVE_MS. */
#define POLL_ACTIVE_MS 2
#define POLL_FLOW_MS 25
#define POLL_IDLE_MS 500
/* A mapping wakes no one (only samples count toward a wakeup): while
 * allocators found mapped are probed as they come, the rings are looked
 * at this often even when quiet, so the probes go live within about this
 * long of an exec or dlopen. */
#define POLL_LATE_MS 8
/* Chunk buffers faulted in before the command starts: dwarf samples
 * arrive at up to 1.5 GB/s here, and the queue holds what the
 * compressor has not caught up with. Raw dumps queued up to 34 MiB on
 * the XOR benchmark; scrubbed ones, mostly zeros, compress at memory
 * speed and queued 4 MiB, and faulting in memory costs 2 ms per MiB in
 * this VM before the command can start. */
#define PREFAULT_DWARF_RAW (96u << 20)
#define PREFAULT_DWARF (16u << 20)
#define PREFAULT_OTHER (4u << 20)
/* What stays allocated past the end of the trace, for the chunks that
 * close it when the disk fills: statistics, losses, kernel symbols. */
#define WRITE_RESERVE (1u << 20)
/* What the default rings may pin in all (-m sets it per CPU). */
#define RINGS_DEFAULT_MAX (256ull << 20)
/* How far ahead a walk over records that another CPU just wrote fetches
 * their lines: each header is where the one before it says, so without it
 * every record is a cache miss after the last. */
#define REC_PREFETCH_AHEAD 4096

/* The deep-stacks rings are a quarter of the events' (at least 1 MiB):
 * they only complete other stacks, so an overflow there costs less than
 * the memory a full size would pin. */
#define DEEP_RING_SHIFT 2
#define DEEP_RING_MIN (1u << 20)

struct ring {
	int cpu;
	uint32_t stream;	 /* the DATA chunks' stream: the CPU, TRACE_STREAM_DEEP + CPU, ... */
	int deep;		 /* holds the deep-stacks samples only */
	int fd;			 /* the fd whose mmap this is; others SET_OUTPUT to it */
	void *base;
	size_t map_len;
	struct perf_event_mmap_page *pc;
	unsigned char *data;
	uint64_t size, mask;
	unsigned char *chunk;	 /* records copied out, waiting to be written */
	size_t len, alloc;
	uint64_t nrec, first_time, flushed_at;
	int tasks;		 /* the chunk holds records of processes (mappings, forks, execs) */
	uint64_t head;		 /* the kernel's head when this pass over the rings began */
	uint64_t scanned;	 /* the processes' changes up to here are applied */
	uint64_t lost;
};

/* A process's change (a mapping, a fork, an exec, an exit) in a ring, to
 * be applied in time order with those of the other rings. */
struct task_ref {
	uint64_t time, pos;
	int ring;
	uint32_t size;
};

struct id_map {
	uint64_t id;
	struct rec_event *ev;
};

struct recorder {
	/* options */
	const char *output;
	char *groups;
	char **filters;		/* --filter EVENT:EXPR, as given */
	size_t nr_filters;
	pid_t *pids;
	size_t nr_pids;
	int system_wide;
	char **command;
	double duration;
	enum rec_callchain callchain;
	unsigned stack_size;
	int deep_freq;		/* --deep-freq: deep-stacks samples a second, 0 for none */
	enum scrub_mode stack_dump;
	unsigned mmap_pages;
	enum trace_codec codec;
	int level;
	int quiet;
	int force;		/* -f: -o may replace any regular file */
	const char *pidfile;	/* --pidfile */
	int pidfile_written;
	const char *object;
	unsigned long long min_size, max_size;
	unsigned sample;
	uint64_t sample_bytes;	/* --sample-bytes: the sampler's rate for a command */
	uint64_t guard;		/* --guard: one allocation in this many guarded; 0: off */
	int guard_recover;	/* --guard-recover */
	enum { MALLOC_VIA_DEFAULT, MALLOC_VIA_WRAPPER, MALLOC_VIA_UPROBES } malloc_via; /* --malloc-via */
	char sampler[PATH_MAX];	/* the sampler library probed, "" when the malloc family is */
	int leak_check;
	int free_stacks;	/* frees take stacks too (-e malloc,signals) */
	enum { REC_BLOCK_YES = 1, REC_BLOCK_NO } block; /* --block, --no-block: does the wrapper wait for room */
	struct leakcheck lc;
	const char *cgroup;	/* --cgroup, as given */
	char allocator[UPROBES_MAX_OBJECTS * (PATH_MAX + 1)];
	int argc;
	char **argv;

	/* state */
	struct rec_event *evs;
	size_t nr_evs;
	int ncpus;
	/* Each CPU's ring, then with deep-stacks each CPU's second ring for
	 * it: the events' ring of CPU c is rings[c], its deep one
	 * rings[ncpus + c]. */
	struct ring *rings;
	int nr_rings;
	unsigned char *bounce;	/* a record that wraps a ring's end, put together */
	struct task_ref *tasks;	/* this pass's changes of processes, by time */
	size_t nr_tasks, tasks_alloc;
	int *fds;
	size_t nr_fds, fds_alloc;
	struct id_map *ids;
	size_t nr_ids;
	struct trace_writer w;
	struct writeq q;
	struct scrub scrub;
	int out_fd;
	int out_dfd;		/* the output's directory (O_PATH), -1 before it is found */
	char out_base[NAME_MAX + 1]; /* the output's name in it */
	char tmp_path[NAME_MAX + 1]; /* the name written under until the rename, in it */
	int renamed;
	int old_fd;		/* the trace the new one replaces, held open until the end */
	struct ksyms_set ksyms;
	struct ksyms_table kallsyms;
	struct embed_set embed;
	struct embed_list objects_later; /* a linear trace's objects packed at the end (compression thread) */
	uint32_t objects_listed; /* em.nr_touched when objects were last carried while recording */
	uint64_t objects_early_ns; /* CLOCK_MONOTONIC of that batch */
	struct objset objs;	/* the files processes run code from (drain loop) */
	struct execmap em;	/* where each process's code lies (drain loop) */
	struct jitmaps jm;	/* the runtimes' perf maps and jitdumps (drain loop) */
	struct cgroup_filter cg; /* --cgroup */
	char cgroup_root[PATH_MAX]; /* where the perf_event controller's hierarchy is, "" for none */
	int sample_cgroup;	/* samples carry their cgroup's id (-a, where the kernel can) */
	uint64_t own_pidns;	/* the recorder's pid namespace, by inode */
	/* MMAP2 records seen without a build-id: the file by name, and
	 * which file it was then, so that a path swapped since is not read. */
	struct rec_nobid {
		char *name;
		dev_t dev;
		ino_t ino;
		pid_t pid;
		uint64_t start, end;
	} *nobid;
	size_t nr_nobid, nobid_alloc;
	pid_t child;
	pid_t closer;		/* the child closing the events (rec_events_release), 0 when none */
	int counts_read;	/* the events' counts were read as they stopped (count_total, count_lost) */
	int go_fd, err_fd;
	int child_status;
	struct rusage child_ru;
	int child_done;
	int child_stopped;	/* the recorder ended the command (-d ran out, a signal) */
	int disk_full;		/* recording stopped because the trace could not grow */
	int realtime;		/* the drain loop runs SCHED_FIFO */
	uint64_t start_ns, stop_ns;
	uint64_t probes_on_ns;	/* CLOCK_MONOTONIC when the recorder had switched every event on */
	uint64_t records;
	uint64_t drained; /* bytes taken from the rings, to tell a busy loop from an idle one */
	unsigned fill_max;	/* the fullest ring the last drain found, in 1024ths of its size */
	uint64_t wakeups_missed; /* drains that found a ring past its wakeup no wakeup had told of */
	uint64_t lost_unreported; /* lost per the event counters, beyond the LOST records */
	uint64_t lost_deep_unreported; /* the same, of the deep-stacks samples */
	uint64_t lost_live;	/* events lost, as the trace's last META lost said while recording */
	uint64_t lost_seen_ns;	/* when the lost counts were last read for it */
	uint64_t oom_kills;	/* OOM contexts written */
	int build_id;
	int format_lost;	/* the kernel counts each event's lost samples */
	struct flight fl;	/* --ring, --trigger: the flight recorder */
	struct allocstream as;	/* the wrapper's reports, without traps */
	struct lateprobe late;	/* allocators found while recording (drain loop, event loop) */
	struct ring wrapper_out; /* their samples, waiting to be written (no ring of its own) */
};

static inline uint64_t rec_now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* options.c: "256M", "1.5GiB", "4096": a size above 0 in bytes, with
 * binary suffixes; -1 when it is not one. */
int rec_size_parse(const char *arg, uint64_t *out);
/* options.c: 0 to record, 1 when -h was shown, -1 after a bad option was
 * reported. */
int rec_options_parse(struct recorder *rc, int argc, char **argv);
void rec_options_release(struct recorder *rc);

/* probes/setup.c */
int rec_probe_build_id(void);
int rec_probe_cgroup(void);
int rec_probe_format_lost(void);
int rec_events_setup(struct recorder *rc);
int rec_events_open(struct recorder *rc);
struct rec_event *rec_event_of(struct recorder *rc, uint64_t id);
void rec_events_release(struct recorder *rc);
/* Between two drain passes: probe the allocator objects lateprobe found
 * mapped and not covered, and say which processes they cover. */
void rec_late_probes(struct recorder *rc);
void rec_events_wait(struct recorder *rc);

/* write/drain.c */
void rec_procs_snapshot(struct recorder *rc, const char *text, size_t len);
/* The scrub learns a process it meets unknown from /proc, once. */
void rec_scrub_learn(struct recorder *rc);
size_t rec_chunk_prepare(void *arg, unsigned char *buf, size_t len);
void rec_ring_flush(struct recorder *rc, struct ring *r);
/* Every chunk buffer handed to the compression thread: the end, a snapshot. */
void rec_rings_flush_all(struct recorder *rc);
/* Append one record (e: its event, for a sample) to r's chunk buffer,
 * its stack dump scrubbed, and look at it. Returns 0, or -1 after an
 * error. */
int rec_record_put(struct recorder *rc, struct ring *r, struct rec_event *e, const unsigned char *src, size_t size);
/* The perf maps and jitdumps of one process (pid > 0; gone: it exited)
 * or of all, into the trace (a ring keeps them for every window). */
void rec_jitmaps_collect(struct recorder *rc, pid_t pid, int gone);
int rec_drain_all(struct recorder *rc, int flush_old);

/* write/allocstream.c: allocstream_listen before the command starts
 * (its MEMSIGHT_STREAM is in rc->as.env, "" for none), allocstream_bind
 * once the events are open; allocstream_drain takes the records stamped
 * by t0, or all of them when final. */
int allocstream_listen(struct recorder *rc);
void allocstream_bind(struct recorder *rc);
int allocstream_fd(const struct recorder *rc);
void allocstream_shut(struct recorder *rc);
int allocstream_drain(struct recorder *rc, uint64_t t0, int final);
void allocstream_close(struct recorder *rc);

/* write/tracemeta.c */
int rec_meta_start(struct recorder *rc);
void rec_meta_end(struct recorder *rc);
/* The objects stacks have touched since the last list, in a list the
 * caller queues for the compression thread; NULL when out of memory. */
struct embed_list *rec_objects_touched(struct recorder *rc);
/* A linear trace's objects that stacks have touched since the last call,
 * carried while the recording runs (drain loop). */
void rec_objects_early(struct recorder *rc);
/* A META chunk learned while recording that every reader needs, whatever
 * part of a ring it reads; an event's description (lasting: learned while
 * recording). */
void rec_meta_lasting(struct recorder *rc, uint32_t kind, const void *data, size_t len);
int rec_meta_event(struct recorder *rc, const struct rec_event *e, int lasting);
int rec_reach_emit(void *arg, const void *payload, size_t len);
void rec_summary(struct recorder *rc);
/* The events lost, after count_lost: of the events' rings, or (deep) of
 * the deep-stacks rings. */
uint64_t rec_lost(const struct recorder *rc, int deep);

/* command.c */
/* Whether the command can be found as exec would look for it; says
 * "command not found" and returns -1 if not. */
int rec_command_check(struct recorder *rc);
int rec_child_start(struct recorder *rc, const sigset_t *oldmask);
int rec_child_release(struct recorder *rc);
void rec_child_stop(struct recorder *rc);
int rec_child_reap(struct recorder *rc);

/* write/output.c */
int rec_output_check(const char *path, int force);
void rec_output_keep_old(struct recorder *rc);
int rec_pidfile_write(struct recorder *rc);
void rec_pidfile_remove(struct recorder *rc);
int rec_output_create(struct recorder *rc);

#endif
