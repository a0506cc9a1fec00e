/*
 * analyze/replay/machine.h: the processes of a recording as they were at each
 * moment of the replay.
 *
 * Owns processes, threads and their memory maps, updated from /proc
 * snapshots and from MMAP2, COMM, FORK and EXIT records in time order, and
 * the translation of a runtime address into (object, file offset). Knows
 * nothing of how records are read or of event semantics.
 */
#ifndef MEMSIGHT_MACHINE_H
#define MEMSIGHT_MACHINE_H

#include <stdint.h>

#include "../hashmap.h"
#include "../stacks/symbols.h"

struct map {
	uint64_t start, end, pgoff;
	uint32_t prot;		/* PROT_* */
	uint32_t flags;		/* MAP_* */
	struct dso *dso;	/* NULL for anonymous memory */
	const char *name;	/* path, "[heap]", "[stack]", "//anon", ... (interned) */
};

struct process {
	int pid;
	char comm[16];
	struct map *maps;	/* sorted by start, never overlapping */
	size_t nr_maps, maps_alloc;
	int exited;		/* its leader thread has */
	int threads;		/* started while recorded, not exited: the maps go with the last */
	int leader_counted;	/* its leader was seen to start, and is one of threads */
	void *priv;		/* the command's per-process state */
	unsigned code_gen;	/* bumped when a file mapping comes or goes */
	void *unwind;		/* the unwinder's address space, for one code_gen */
};

struct machine {
	struct hashmap procs;	/* pid -> struct process * */
	struct hashmap threads; /* tid -> pid */
	struct hashmap comms;	/* tid -> interned comm of the thread */
	struct hashmap names;	/* interned map names */
	struct process *last;	/* the last one looked up: samples come in runs of one process */
	int last_tid;		/* and the last thread's comm, while comms is unchanged */
	const char *last_comm;
	struct symbols *syms;
	void (*priv_free)(void *);
	void (*unwind_free)(void *);
};

void machine_init(struct machine *m, struct symbols *syms);
void machine_release(struct machine *m);
struct process *machine_process(struct machine *m, int pid);
/* The pid of a thread, or tid itself when unknown. */
int machine_pid_of(struct machine *m, int tid);
const char *machine_comm(struct machine *m, int pid, int tid);
void machine_set_comm(struct machine *m, int pid, int tid, const char *comm, int exec);
void machine_fork(struct machine *m, int ppid, int ptid, int pid, int tid);
void machine_exit(struct machine *m, int pid, int tid);
/* How many processes hold maps now, of the *seen ever. */
size_t machine_processes_with_maps(const struct machine *m, size_t *seen);
int machine_map(struct machine *m, int pid, const struct map *map);
void machine_unmap(struct machine *m, int pid, uint64_t start, uint64_t end);
const struct map *machine_find_map(struct machine *m, int pid, uint64_t addr);
/* The process of pid, NULL when the replay has not seen it. */
struct process *machine_process_find(struct machine *m, int pid);
/* The map of p holding addr, NULL if none; hint (NULL or one of p's maps)
 * is tried first. */
const struct map *process_find_map(const struct process *p, uint64_t addr, const struct map *hint);
const char *machine_intern(struct machine *m, const char *name);
/* Apply a TRACE_META_PROCESS snapshot. */
int machine_load_snapshot(struct machine *m, const char *text, size_t len);

#endif
