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

/*
 * What a page fault was, from the x86 error code the exceptions
 * tracepoints carry (the page-faults software event has none):
 *   bit 0  P     the page was present: a protection fault (else not present)
 *   bit 1  W     a write (else a read)
 *   bit 2  U     in user mode (else the kernel, on a user address: copying
 *                to or from a user buffer, as read() and recv() do)
 *   bit 4  I     an instruction fetch
 * The kinds, as --fault-type names them: the access is exactly one of
 * read, write and exec; cow is a write to a present page (copy-on-write
 * after fork, or a write to read-only memory); kernel is a kernel-mode
 * fault. A fault has several kinds: a kernel-mode write is write and
 * kernel.
 */
enum fault_kind {
	FAULT_READ,
	FAULT_WRITE,
	FAULT_EXEC,
	FAULT_COW,
	FAULT_KERNEL,
	FAULT_KINDS,
};
extern const char *const fault_kind_names[FAULT_KINDS];
/* The kinds of an error code, one bit per enum fault_kind. */
unsigned fault_kinds(uint64_t error_code);
/* A kind by name; -1 for none. */
int fault_kind_parse(const char *name);

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
	unsigned fault_kinds;	/* fault: bits of enum fault_kind; 0 when the event has no error code */
	const struct sample *stack; /* the sample whose callchain caused it */
	uint64_t weight;	/* the operations it stands for: N of a GROUP/N recording, else 1 */
};

typedef int (*memop_fn)(struct session *s, const struct memop *op, void *arg);

/* Replay the session, calling fn for every operation. Same returns as
 * session_replay(). */
int memops_replay(struct session *s, memop_fn fn, void *arg, char *err, size_t errlen);
/* Whether op counts as a call of kind, as stacks of kind weigh them: one
 * that succeeded, and for MEMOP_MMAP an mremap that grew too. */
int memop_is(const struct memop *op, enum memop_kind kind);

/* The same a sample at a time, for a command that feeds one replay to
 * several consumers: memops_sample returns fn's value (0 to go on). */
struct memops_state;
struct memops_state *memops_new(struct session *s, memop_fn fn, void *arg);
int memops_sample(struct memops_state *st, struct sample *smp);
void memops_free(struct memops_state *st);

#endif
