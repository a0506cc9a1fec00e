/*
 * record/ring/flight.h: the flight recorder: --ring, --trigger and snapshots.
 *
 * Owns what turns a recording into one that can be left running: the ring
 * file (formats/trace.h lays it out; this module restates, as each of its
 * segments begins, the processes and kernel symbols a reader of the
 * window needs), the triggers that watch for trouble (an OOM kill, a
 * process's RSS, memory pressure, a reclaim stall, a crash, SIGUSR1), and the
 * snapshots they save: the ring's window as a trace of its own, written
 * by the compression thread between two chunks, so the ring is still.
 *
 * The drain loop fires triggers; the compression thread owns the process
 * picture (proctrack.h) and writes snapshots. Knows nothing of unwinding.
 */
#ifndef MEMSIGHT_RECORD_FLIGHT_H
#define MEMSIGHT_RECORD_FLIGHT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../procs/proctrack.h"

/* Defaults for an always-on ring: a snapshot keeps the seconds after its
 * trigger too, and a directory keeps the newest few. A cause saves at
 * most BURST snapshots in any HOLDOFF seconds, and at most one for one
 * process (by name: a program that crashes in a loop takes a new pid each
 * time) in that time, so that what any user's processes do cannot flood
 * the disk or push out the snapshot that mattered. */
#define FLIGHT_AFTER_DEFAULT 2.0
#define FLIGHT_MAX_SNAPSHOTS_DEFAULT 16
#define FLIGHT_HOLDOFF_DEFAULT 60.0
#define FLIGHT_BURST_DEFAULT 3

enum flight_kind {
	FLIGHT_SIGNAL = 1,
	FLIGHT_OOM,
	FLIGHT_RSS,
	FLIGHT_PSI,
	FLIGHT_RECLAIM,
	FLIGHT_CRASH,
};

/* What an event is watched for (rec_event.watch). */
enum flight_watch {
	WATCH_RSS = 1,
	WATCH_RECLAIM_BEGIN,
	WATCH_RECLAIM_END,
	WATCH_CRASH,
};

struct flight_trigger {
	enum flight_kind kind;
	char spec[128];		/* as given to --trigger */
	pid_t pid;		/* rss: the process, or 0 to match comm; crash: comm "" is any */
	char comm[16];
	uint64_t bytes;		/* rss: the size that fires */
	int full;		/* psi: "full" rather than "some" */
	unsigned pct;		/* psi: percent of a second stalled */
	uint64_t ns;		/* reclaim: the stall that fires */
	int fd;			/* psi: the kernel's trigger */
};

/* One address space's RSS, by the counters rss_stat reports. */
struct flight_rss {
	uint32_t mm_id;
	pid_t pid;
	char comm[16];
	int64_t member[4];	/* bytes: file, anon, swap entries, shmem */
	int above;		/* past its trigger's size: fires again only after dropping under */
};

struct flight_stall {
	pid_t tid;
	uint64_t begin;
};

/* Copies of the runtimes' perf maps and jitdumps, TRACE_META_JITMAP
 * payloads. */
struct flight_jits {
	struct flight_jit {
		char *data;
		size_t len;
	} *v;
	size_t nr;
};

struct flight {
	uint64_t ring_size;	/* --ring; 0 for a linear trace */
	struct flight_trigger *trig;
	size_t nr_trig;
	double after;		/* --after, seconds */
	unsigned max_snapshots;
	double holdoff;		/* --trigger-holdoff, seconds; < 0 until set */
	unsigned burst;		/* --trigger-burst */
	struct flight_limit {
		enum flight_kind kind;
		char who[48];	/* the process it fired for, by name; "" for none */
		uint64_t time;	/* CLOCK_MONOTONIC of its snapshot */
	} *limits;		/* the snapshots saved within the holdoff */
	size_t nr_limits;
	unsigned suppressed;	/* triggers the limits held back */
	unsigned suppressed_said; /* by kind: said once */
	char dir[4096], base[256]; /* where snapshots go, and their names' start */
	char previous[4608];	/* where the ring a restart replaces is kept (the newest of them) */
	/* The snapshots this ring may prune, oldest first: those of its
	 * earlier runs found at the start (by time), then those it wrote. */
	char **snaps;
	size_t nr_snaps;
	size_t nr_found;	/* of them, the first ones: earlier runs' */

	/* drain loop */
	int pending;		/* a snapshot waits for its --after */
	uint64_t due_ns;
	struct flight_req *req;
	int rss_off[4];		/* rss_stat: mm_id, curr, member, size */
	int sig_off, handler_off; /* signal_deliver: sig, sa_handler */
	struct flight_comm {
		pid_t pid;
		int gone;	/* 1: it ended; 2: and a drain pass began since */
		char comm[16];
	} *comms;		/* crash: the names tasks took while recording */
	size_t nr_comms, alloc_comms;
	struct flight_rss *rss;
	size_t nr_rss, alloc_rss;
	struct flight_stall *stalls;
	size_t nr_stalls;

	uint32_t touched_listed; /* objects touched when the ring's head was last given the new ones */
	struct flight_jits jit;	/* the latest copy of each runtime's file, for every window */

	/* compression thread */
	struct proctrack pt;
	unsigned taken, failed;
	unsigned char (*head_bids)[21]; /* the build-ids the ring's head carries: length, then the id */
	size_t nr_head_bids;
	unsigned head_full_said; /* what learned late could not go into the head: said once */
};

struct recorder;
struct rec_event;

/* --trigger KIND[:ARG]: parse and keep one. Returns 0 or -1 (reported). */
int flight_trigger_add(struct flight *f, const char *spec);
/* A restarted ring: the old file at path goes to previous, the rings
 * kept before it one place down (RING.previous.1.trace, ...), max of
 * them in all. Returns 0, or -1 with errno. */
int flight_keep_previous(const struct flight *f, const char *path, unsigned max);
/* After the options: what the ring and the triggers need of them. */
int flight_options_check(struct recorder *rc, int (*has_group)(const char *groups, const char *group));
/* After the events are set up: mark what the triggers read; open the PSI
 * triggers. Returns 0 or -1 (reported). */
int flight_setup(struct recorder *rc);
/* End the ring's head and start its segments (the process snapshots go
 * through proctrack_load first). Returns 0 or -1 (reported). */
int flight_ring_begin(struct recorder *rc);
/* Drain loop: hand the objects stacks have touched since the last call to
 * the compression thread, which writes them into the ring's head. */
void flight_objects(struct recorder *rc);
/* Drain loop: a sample of a watched event. */
void flight_inspect(struct recorder *rc, const struct rec_event *e, const unsigned char *rec, size_t size);
/* Drain loop: task tid took the name comm, or was made by parent (and has
 * its name), or ended (parent -1): for crash:COMM, which reads a name so
 * when the task is gone before the signal's sample is read. */
void flight_task_comm(struct flight *f, pid_t tid, pid_t parent, const char *comm);
/* Drain loop, as a pass begins: forget the tasks that ended two passes
 * ago. A pass reads the tasks' records to heads read after its samples'
 * heads: a task's end can be read in the pass before the one that copies
 * the signal that ended it, never earlier. */
void flight_task_sweep(struct flight *f);
/* Something happened that a trigger asked for. Triggers that fire while a
 * snapshot waits for its --after join it. */
void flight_fire(struct recorder *rc, enum flight_kind kind, const char *who, const char *detail);
/* Whether kind is among the triggers. */
int flight_wants(const struct flight *f, enum flight_kind kind);
/* The event loop's poll timeout, shortened to when a snapshot is due. */
int flight_timeout(const struct recorder *rc, int timeout);
/* Event loop: take a snapshot whose time has come (or every waiting one,
 * at the end, when force). */
void flight_poll(struct recorder *rc, int force);
/* A PSI trigger's file turned readable (an event). */
void flight_psi_event(struct recorder *rc, size_t i);
void flight_release(struct flight *f);
/* Keep a copy of a runtime's perf map or jitdump (jitmaps_emit, arg the
 * recorder) for every window: the ring's records come and go, the files'
 * last copies stay. Returns 0 or -ENOMEM. */
int flight_jit_keep(void *rc, const void *payload, size_t len);
/* Write the copies kept, each as a TRACE_META_JITMAP chunk. */
void flight_jit_write(const struct flight_jits *j, struct trace_writer *w);

#endif
