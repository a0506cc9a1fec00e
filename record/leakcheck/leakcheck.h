/*
 * record/leakcheck/leakcheck.h: stopping recorded processes for --leak-check.
 *
 * Owns ptrace for the memory scan: following a command the recorder
 * started to its exit (the exit stop, where its memory is still whole),
 * stopping processes given with -p when the recording ends, reading the
 * stopped threads' registers, and letting them go. reach.c reads the
 * memory. A followed command's signals pass through untouched; nothing
 * but its threads' exits stops it. When the process ends, each thread
 * running then is held at its exit stop until all are in, so that their
 * stacks and registers are roots of the scan. Knows nothing of perf or
 * the trace.
 */
#ifndef MEMSIGHT_RECORD_LEAKCHECK_H
#define MEMSIGHT_RECORD_LEAKCHECK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "reach.h"

/* Where a scan's payloads go (reach.h); returns 0 to go on. */
typedef int (*leakcheck_emit)(void *arg, const void *payload, size_t len);

struct leakcheck {
	leakcheck_emit emit;
	void *arg;
	pid_t pid;		/* the followed command */
	pid_t *threads;		/* its threads, each followed from its making */
	size_t nr_threads, alloc_threads;
	/* The threads at their exit stops while the process ends, with
	 * their registers: let go after the scan. */
	struct reach_thread *held;
	size_t nr_held, alloc_held;
	int scans;		/* processes scanned */
	int failed;		/* scans that could not be made */
	int last_err;		/* the errno of the last failure */
	uint64_t scan_ns;	/* the target paused this long, in all */
};

/* Follow child (forked, not yet exec'd) and the threads it makes to its
 * exit. Returns 0 or a negative errno. */
int leakcheck_follow(struct leakcheck *lc, pid_t child);
/* A wait status of the followed child, or of one of its threads (wait
 * for those with __WALL). A ptrace stop is handled here (when the process
 * ends, the memory is scanned once every thread is at its exit stop or
 * gone, then they are let go; a signal is passed on) and 1 returned: the
 * child goes on. 0: its real end, or a status of no thread followed. */
int leakcheck_status(struct leakcheck *lc, pid_t pid, int status);
/* Whether threads are followed (then wait with __WALL). */
int leakcheck_following_threads(const struct leakcheck *lc);
void leakcheck_release(struct leakcheck *lc);
/* Stop every thread of pid, scan it, let it go. Returns 0 or a negative
 * errno (then nothing was scanned). */
int leakcheck_attach(struct leakcheck *lc, pid_t pid);

#endif
