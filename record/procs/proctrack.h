/*
 * record/procs/proctrack.h: what a ring must restate as each segment begins.
 *
 * Owns the recorder's picture of every process it has seen: pid, parent,
 * comm, threads and file mappings, from the /proc snapshots taken at the
 * start and the kernel's MMAP2, COMM, FORK and EXIT records since. A ring
 * overwrites the records that told a process's story; what this module
 * holds, written out as TRACE_META_PROCESS text (procsnap.h's format), is
 * that story's end state, so a window that starts after a process mapped
 * its objects can still name its stacks, and tell a fault on anonymous
 * memory from one on a file (a loader zero-fills a library's .bss over
 * the tail of the file it mapped whole). No record tells of an munmap,
 * so anonymous mappings, which a process can make in their thousands, are
 * kept up to PROCTRACK_ANON_MAX a process, the newest. A process that
 * exited is kept until two segments later, since
 * records of other CPUs that were written later may still be its own.
 *
 * Records reach this module a CPU's ring at a time, so a process's exec
 * can arrive after the mappings its new program made on another CPU. Each
 * change is placed by its time: a mapping goes under those told with a
 * later time, and an exec or fork drops only what was told before it.
 */
#ifndef MEMSIGHT_RECORD_PROCTRACK_H
#define MEMSIGHT_RECORD_PROCTRACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pt_proc;

#define PROCTRACK_ANON_MAX 512

struct proctrack {
	struct pt_proc **slots; /* open addressing by pid */
	size_t alloc, nr;
	uint64_t generation;	/* segments begun */
	uint64_t cut;		/* restatements that left mappings out to keep within their budget */
	uint64_t dropped;	/* of those, the ones that left processes out too */
};

/* Take a TRACE_META_PROCESS text, read from /proc at time (the records'
 * clock; 0 for the start, which every record follows). */
int proctrack_load(struct proctrack *t, const char *text, size_t len, uint64_t time);
/* Look at one perf record: MMAP2, COMM, FORK and EXIT change the picture,
 * anything else is ignored. */
void proctrack_record(struct proctrack *t, const void *rec, size_t len);
/* A segment begins: every process still kept, as TRACE_META_PROCESS text
 * handed to emit (which returns 0 to go on); those that exited two
 * segments ago are dropped first. What is handed over stays within
 * budget bytes, which any process could otherwise outgrow by mapping a
 * file or memory tens of thousands of times: where every mapping does
 * not fit, the processes that map the most restate fewer (their
 * anonymous mappings left out, then those of no code, then all), the
 * others all of theirs; where the processes alone do not fit, the last
 * ones are left out. Returns 0 or what emit returned. */
int proctrack_emit(struct proctrack *t, size_t budget, int (*emit)(void *arg, const char *text, size_t len),
		   void *arg);
void proctrack_release(struct proctrack *t);

#endif
