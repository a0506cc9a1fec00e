/*
 * record/probes/lateprobe.h: allocators that appear while the malloc family
 * is recorded through uprobes.
 *
 * Owns telling, from each executable mapping a recorded process makes, that
 * it maps an allocator object (a libc, jemalloc, tcmalloc, mimalloc) that no
 * probe covers: a file (by device and inode, as uprobes are per file) not
 * probed yet, or, where events follow tasks (a command, -p), one probed
 * only in processes this one did not inherit the events from. Such objects
 * are probed between two passes of the drain loop, through
 * /proc/PID/map_files, so a container's own libc is the file probed; each
 * process's coverage is said in the trace (META probes: how long after its
 * mapping its probes went live). The drain loop calls lateprobe_map,
 * lateprobe_fork and lateprobe_exit as it applies records, and the event
 * loop lateprobe_run after each pass. Knows nothing of perf records.
 */
#ifndef MEMSIGHT_RECORD_LATEPROBE_H
#define MEMSIGHT_RECORD_LATEPROBE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "events.h"
#include "uprobes.h"

struct late_obj {
	dev_t dev;
	ino_t ino;
	int at_start;		/* probed before recording: every recorded task has its events */
	int failed;		/* could not be probed (said once) */
	size_t first_ev, end_ev; /* its events in the recorder's list */
	uint64_t live_ns;	/* when its events were first open */
	/* Per task: the processes whose tasks carry its events, and since when. */
	struct late_pid {
		pid_t pid;
		uint64_t since;
	} *pids;
	size_t nr_pids, alloc_pids;
};

struct late_pending {
	pid_t pid;
	uint64_t start, end, time;
	dev_t dev;
	ino_t ino;
	char path[256];
};

struct lateprobe {
	int on;			/* the malloc family through uprobes on the allocators */
	int per_task;		/* events follow tasks and their children, not CPUs (-a) */
	uint64_t start_ns;	/* mappings seen in /proc at the start count from here */
	struct uprobe_opts u;
	struct rec_opts_events o;
	struct late_obj *objs;
	size_t nr, alloc;
	struct late_pending *pend;
	size_t nr_pend, alloc_pend;
	int next_group;		/* the index of the next group, memsight_PID_N */
	int late_objects;	/* probed while recording, at most UPROBES_MAX_LATE */
	int opening;		/* opening late events: a task gone meanwhile is no error */
	char *lines;		/* META probes text not yet written */
	size_t lines_len, lines_alloc;
};

/* After the start's probes are defined (u: their options and objects,
 * which become the first known files; nr_groups: groups used so far). */
void lateprobe_start(struct lateprobe *lp, const struct uprobe_opts *u, const struct rec_opts_events *o,
		     int per_task, int nr_groups, uint64_t start_ns);
/* An executable file mapping pid made at time (0: before recording). */
void lateprobe_map(struct lateprobe *lp, pid_t pid, uint64_t start, uint64_t end, const char *path, uint64_t time);
void lateprobe_fork(struct lateprobe *lp, pid_t child, pid_t parent, uint64_t time);
void lateprobe_exit(struct lateprobe *lp, pid_t pid);
/* For the event loop's pass (probes/setup.c, rec_late_probes): the known
 * file of dev and ino, or NULL; a new one; a process whose tasks carry an
 * object's events since a time; whether pid is covered (since: when its
 * probes went live, 0 for the start's); and a line of META probes for a
 * process that mapped path at mapped (0: before recording). */
struct late_obj *lateprobe_obj_find(struct lateprobe *lp, dev_t dev, ino_t ino);
struct late_obj *lateprobe_obj_add(struct lateprobe *lp, dev_t dev, ino_t ino);
int lateprobe_pid_add(struct late_obj *ob, pid_t pid, uint64_t since);
int lateprobe_covers(const struct lateprobe *lp, struct late_obj *ob, pid_t pid, uint64_t *since);
void lateprobe_line(struct lateprobe *lp, pid_t pid, uint64_t mapped, uint64_t since, const char *path);
/* The META probes text gathered (lines PID\tLATE_NS\tPATH), handed over;
 * NULL when none. */
char *lateprobe_take_lines(struct lateprobe *lp, size_t *len);
void lateprobe_release(struct lateprobe *lp);

#endif
