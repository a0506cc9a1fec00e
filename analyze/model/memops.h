/*
 * analyze/model/memops.h: samples turned into memory operations.
 *
 * Owns the pairing of syscall entry and exit per thread (the entry has the
 * stack and arguments, the exit the result), the heap break of each
 * process, and the mapping a fault landed in. Commands that count memory
 * (report, folded) consume memops; they never pair syscalls themselves.
 */
#ifndef MEMSIGHT_MEMOPS_H
#define MEMSIGHT_MEMOPS_H

#include "../replay/session.h"

enum memop_kind {
	MEMOP_BRK,
	MEMOP_MMAP,
	MEMOP_MUNMAP,
	MEMOP_MREMAP,
	MEMOP_FAULT,
	MEMOP_FAULT_MAJ, /* the major-fault twin of a MEMOP_FAULT: counts only */
};

struct memop {
	enum memop_kind kind;
	int pid, tid;
	uint64_t time;
	uint64_t addr;		/* mmap: result; munmap/mremap: old address; fault: address */
	uint64_t len;		/* mmap/munmap length; mremap: new length */
	uint64_t old_len;	/* mremap */
	uint64_t prot, flags, fd;
	int64_t ret;
	int failed;		/* the call returned an error */
	uint64_t brk_old, brk_new; /* MEMOP_BRK: break before and after */
	uint64_t grow;		/* bytes the operation added: brk growth, mmap length,
				 * mremap growth, a page for a fault */
	const struct map *map;	/* fault: the mapping hit, NULL if none known */
	const struct sample *stack; /* the sample whose callchain caused it */
};

typedef int (*memop_fn)(struct session *s, const struct memop *op, void *arg);

/* Replay the session, calling fn for every operation. Same returns as
 * session_replay(). */
int memops_replay(struct session *s, memop_fn fn, void *arg, char *err, size_t errlen);

/* The same a sample at a time, for a command that feeds one replay to
 * several consumers: memops_sample returns fn's value (0 to go on). */
struct memops_state;
struct memops_state *memops_new(struct session *s, memop_fn fn, void *arg);
int memops_sample(struct memops_state *st, struct sample *smp);
void memops_free(struct memops_state *st);

#endif
