/*
 * record/probes/uprobes.h: the malloc family through uprobes.
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

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "events.h"

/* At most this many allocator objects are probed at once, and this many
 * more found while recording (uprobes_add_late). */
#define UPROBES_MAX_OBJECTS 4
#define UPROBES_MAX_LATE 16

/* An object to probe. One found as a process's mapping is read through
 * that mapping, with the process's rights (procs/procfile.h), and the
 * kernel is given the very file read: never what its path names here,
 * which the process's user may have put a FIFO, a device or a link at. */
struct uprobe_object {
	char path[PATH_MAX];	/* as its process names it: what is said, and what -O matches */
	pid_t pid;		/* found mapped by pid at start..end; 0: by path, the recorder's own choice */
	uint64_t start, end;
	dev_t dev;		/* the file, telling objects apart; 0 when not known */
	ino_t ino;
};

/* Allocator objects, the first one libc's where there is one. */
struct uprobe_objects {
	struct uprobe_object v[UPROBES_MAX_OBJECTS];
	int nr;
};

struct uprobe_opts {
	struct uprobe_objects objects; /* the allocators to probe */
	unsigned long long min_size, max_size; /* -z/-Z, 0 for none */
	unsigned sample;	/* -s N: one entry (with its stack) in N, 1 for all */
	pid_t exclude_pid;	/* -a: the recorder itself, 0 for none */
	int sampled;		/* objects are libmemsight-sample.so: probe its two probe points alone */
	/* sampled, in a command the recording starts: its unsized alloc site
	 * and its free site alone, one event */
	int one_site;
	int free_stacks;	/* frees take stacks, as allocations do */
	struct uprobe_objects emitters; /* objects with otel_memory probes of their own, probed too */
};

/* The objects a command would load (its program, and the libraries the
 * loader lists for it) or that process pid maps, with otel_memory USDT
 * probes of their own: an allocator or a program that tells of its
 * allocations, whoever built it. memsight's wrapper is not one of them.
 * Returns how many. */
int uprobes_command_emitters(char *const *argv, struct uprobe_objects *o);
int uprobes_pid_emitters(pid_t pid, struct uprobe_objects *o);

/* The file name of the allocation sampler, as a process's maps show it. */
#define UPROBES_SAMPLER "libmemsight-sample.so"

/* The sampler pid maps, or -ENOENT. */
int uprobes_find_sampler(pid_t pid, struct uprobe_object *ob);
/* The sampler this memsight came with: beside memsight-record, as a build
 * tree and make install put them. 0, or -ENOENT (where it looked in
 * path). */
int uprobes_sampler_library(char *path, size_t len);

/* The allocators pid maps (pid 0: this process): its libc, then any of
 * jemalloc, tcmalloc or mimalloc. Returns 0, or -ENOENT when it maps none. */
int uprobes_find_allocators(pid_t pid, struct uprobe_objects *o);
/* The same for a process that may be starting: a dynamically linked
 * program whose loader has not mapped its libc yet (one just exec'd) is
 * waited for, up to wait_ms. */
int uprobes_await_allocators(pid_t pid, struct uprobe_objects *o, int wait_ms);
/* The allocators every running process maps, for -a. */
int uprobes_system_allocators(struct uprobe_objects *o);
/* The allocators a command not started yet will map, as its dynamic
 * loader lists them with the environment it will have (LD_PRELOAD too),
 * or the executable itself when it is static (why says so then). A script
 * is its interpreter. Returns 0, or -ENOENT when it cannot tell. */
int uprobes_command_allocators(char *const *argv, struct uprobe_objects *o, char *why, size_t whylen);
/* -O NAME: a path as it is; a soname or basename (libjemalloc.so.2,
 * libjemalloc) as the first of found it names, into out. 0, or -ENOENT. */
int uprobes_resolve_object(const char *name, const struct uprobe_objects *found, struct uprobe_object *out);
/* Add ob to o unless o holds that file already (or is full). */
void uprobes_objects_add(struct uprobe_objects *o, const struct uprobe_object *ob);

/* argv[0] as execvp would find it, into out: 0, or -1 when there is no
 * such program. */
int uprobes_command_path(const char *cmd, char *out, size_t len);

/* What ends the name of an event of a return probe (malloc_ret). */
#define UPROBES_RETURN_SUFFIX "_ret"

/* Define the probes and append their events; each object's dev and ino
 * are the file's that was probed. Returns 0, or -1 with a one-line reason
 * in err (no such object, no allocation function in it, tracefs refused
 * a definition). On error nothing stays defined. */
int uprobes_add(struct uprobe_opts *u, const struct rec_opts_events *o, struct rec_event **evs, size_t *nr,
		char *err, size_t errlen);

/* An allocator object found while recording (a mapping of its process):
 * its probes under the group memsight_PID_index, appended to evs as
 * uprobes_add does. Returns 0, or -1 with a reason in err and none of its
 * probes left. */
int uprobes_add_late(struct uprobe_object *ob, int index, const struct uprobe_opts *u,
		     const struct rec_opts_events *o, struct rec_event **evs, size_t *nr, char *err, size_t errlen);

/* After uprobes_add: the functions probed once for a shared address, as
 * "FUNCTION=ALIAS[,ALIAS] ..." ("" when none), for the host META. */
const char *uprobes_aliases(void);

/* Remove this recorder's definitions; its perf fds must be closed first. */
void uprobes_remove(void);
/* A recorder killed outright (SIGKILL, the OOM killer) runs no cleanup:
 * from its first definition on, a child of it waits for it to be gone and
 * removes its definitions then. uprobes_guard_end, when the recorder has
 * removed them itself, lets that child go. */
void uprobes_guard_end(void);
/* Remove the definitions of memsight recorders that are no longer running. */
void uprobes_remove_stale(void);

#endif
