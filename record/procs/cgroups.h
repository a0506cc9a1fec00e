/*
 * record/procs/cgroups.h: the cgroups of a system-wide recording, and
 * --cgroup.
 *
 * Owns finding the hierarchy the kernel's perf_event controller lives in
 * here (cgroup v2, or v1's perf_event hierarchy): the cgroup ids that
 * samples carry (PERF_SAMPLE_CGROUP) are its directories' inode numbers,
 * and the table of them, id and path, goes into the trace (META cgroups)
 * with the kernel's PERF_RECORD_CGROUP for those made later. And --cgroup
 * PATH: where PATH is in that hierarchy, the kernel records only its
 * processes (an event opened per CPU on the directory, as perf -G does);
 * where it is in another (a cgroup v1 controller such as memory), the
 * recorder keeps the records of the processes PATH and the cgroups below
 * it hold, and of their children, read again every second, and drops the
 * rest. A pid stands for its process, not its number: the records of a
 * pid after its process exited are dropped, so a process that takes the
 * number later is not taken for it. Knows nothing of perf events but the
 * one that probes the kernel.
 */
#ifndef MEMSIGHT_RECORD_CGROUPS_H
#define MEMSIGHT_RECORD_CGROUPS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cgroup_filter {
	char path[PATH_MAX];	/* as given, resolved */
	int fd;			/* the directory, for the kernel's filter; -1 otherwise */
	int by_recorder;	/* another hierarchy: the recorder keeps the pids below */
	struct cgroup_pid {
		pid_t pid;	/* 0 = empty */
		uint64_t ended;	/* the time its process exited, 0 while it runs */
	} *pids;		/* open addressing */
	size_t alloc, nr;
};

/* Where the perf_event controller's hierarchy is mounted here, into root;
 * 0, or -1 when none is (no cgroups at all). */
int cgroups_root(char *root, size_t len);
/* "ID\tPATH\n" for every cgroup of the hierarchy at root, PATH relative to
 * it ("/" for the root itself), into a malloc'd *text. Returns 0 or
 * -errno. */
int cgroups_table(const char *root, char **text, size_t *len);

/* --cgroup PATH: open it for the kernel's filter, or read its processes.
 * Returns 0, or -1 with a one-line reason in err. */
int cgroup_filter_open(struct cgroup_filter *f, const char *path, char *err, size_t errlen);
/* Read the processes again (by_recorder): those that joined since. */
void cgroup_filter_refresh(struct cgroup_filter *f);
/* Whether a record of pid at time (0: not known) is kept (always with the
 * kernel's filter). */
int cgroup_filter_has(const struct cgroup_filter *f, pid_t pid, uint64_t time);
/* A child of a kept process is kept, from its fork at time. */
void cgroup_filter_fork(struct cgroup_filter *f, pid_t parent, pid_t child, uint64_t time);
/* A process exited at time: its pid's later records are another's. */
void cgroup_filter_exit(struct cgroup_filter *f, pid_t pid, uint64_t time);
void cgroup_filter_release(struct cgroup_filter *f);

#endif
