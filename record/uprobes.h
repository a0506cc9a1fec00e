/*
 * record/uprobes.h: the malloc family through uprobes.
 *
 * Owns finding the allocator a target maps (its libc, or the object given
 * with -O), the offsets of the allocation functions in it, and their
 * definitions in tracefs uprobe_events: an entry probe per function with its
 * arguments and the return address at the stack pointer (the caller a
 * frame-pointer walk from the first instruction skips), a return probe with
 * the result. Definitions live under the group memsight_PID; they are
 * removed on every exit, and a start removes those of recorders that died.
 */
#ifndef MEMSIGHT_RECORD_UPROBES_H
#define MEMSIGHT_RECORD_UPROBES_H

#include <stddef.h>
#include <sys/types.h>

#include "events.h"

struct uprobe_opts {
	const char *object;	/* the allocator: a libc or -O OBJ */
	unsigned long long min_size, max_size; /* -z/-Z, 0 for none */
	unsigned sample;	/* -s N: one entry (with its stack) in N, 1 for all */
	pid_t exclude_pid;	/* -a: the recorder itself, 0 for none */
};

/* The allocator pid maps (pid 0: this process): the first libc.so mapping.
 * Returns 0 and the path, or -ENOENT when it maps none. */
int uprobes_find_libc(pid_t pid, char *path, size_t len);

/* Define the probes and append their events. Returns 0, or -1 with a
 * one-line reason in err (no such object, no allocation function in it,
 * tracefs refused a definition). On error nothing stays defined. */
int uprobes_add(const struct uprobe_opts *u, const struct rec_opts_events *o, struct rec_event **evs,
		size_t *nr, char *err, size_t errlen);

/* After uprobes_add: the functions probed once for a shared address, as
 * "FUNCTION=ALIAS[,ALIAS] ..." ("" when none), for the host META. */
const char *uprobes_aliases(void);

/* Remove this recorder's definitions; its perf fds must be closed first. */
void uprobes_remove(void);
/* Remove the definitions of memsight recorders that are no longer running. */
void uprobes_remove_stale(void);

#endif
