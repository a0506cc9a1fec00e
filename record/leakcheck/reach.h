/*
 * record/leakcheck/reach.h: the memory scan behind --leak-check.
 *
 * Owns reading a stopped process's memory, as LeakSanitizer and valgrind
 * do at exit, for the words that could point into its heap: every word of
 * its writable mappings (a stack from its thread's stack pointer up) and
 * of its threads' registers whose value lies in an anonymous writable
 * mapping or [heap]. It records them as (where, what) pairs with the
 * mappings, in a TRACE_META_REACH payload (formats/FORMAT.md), with the
 * heap words the leak check's heuristics read (vtable pointers, and what
 * could be a header before a pointer); it does not know the blocks: the
 * analyzer, which pairs the allocations, marks what the roots reach.
 * Knows nothing of perf or of how the process was stopped.
 */
#ifndef MEMSIGHT_RECORD_REACH_H
#define MEMSIGHT_RECORD_REACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A thread of the process, stopped, with its registers. */
struct reach_thread {
	pid_t tid;
	uint64_t sp;
	uint64_t regs[16];	/* the general-purpose registers */
	int nr_regs;
	int in_syscall;		/* stopped in a system call: nothing below sp is live (no red zone) */
};

/* Scan pid's memory. The payloads (one per part: a big scan is split to
 * fit the trace's chunks) go to emit, which returns 0 to go on. Returns
 * 0, or a negative errno (nothing emitted) when the process's maps or
 * memory cannot be read. */
int reach_scan(pid_t pid, const struct reach_thread *threads, size_t nr_threads,
	       int (*emit)(void *arg, const void *payload, size_t len), void *arg);

#endif
