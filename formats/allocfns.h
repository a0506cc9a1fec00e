/*
 * formats/allocfns.h: the allocation functions memsight probes, one table
 * for the recorder and the analyzer.
 *
 * Owns the malloc family as traces name it: each function's symbol (which
 * is also its uprobe event's name), the name stacks show it by, the fields
 * its entry probe fetches, whether a return probe gives its result, and
 * what pairing does with it. The recorder defines its probes from this
 * table, the analyzer classifies their events by it: a function added here
 * is recorded and paired, and an event name the table lacks is no
 * allocation. The C++ operators and jemalloc's *allocx are probed where an
 * allocator replaces them (jemalloc and tcmalloc define their own operator
 * new, which never calls malloc); libstdc++'s operator new calls malloc and
 * is seen there. Knows nothing of tracefs or pairing state.
 */
#ifndef MEMSIGHT_FORMATS_ALLOCFNS_H
#define MEMSIGHT_FORMATS_ALLOCFNS_H

#include <stddef.h>

enum alloc_fn {
	AF_MALLOC,
	AF_CALLOC,
	AF_REALLOC,
	AF_REALLOCARRAY,
	AF_FREE,
	AF_POSIX_MEMALIGN,
	AF_ALIGNED_ALLOC,
	AF_MEMALIGN,
	AF_VALLOC,
	AF_PVALLOC,
	AF_NEW,
	AF_NEW_ARRAY,
	AF_NEW_NOTHROW,
	AF_NEW_ARRAY_NOTHROW,
	AF_NEW_ALIGNED,
	AF_NEW_ARRAY_ALIGNED,
	AF_NEW_ALIGNED_NOTHROW,
	AF_NEW_ARRAY_ALIGNED_NOTHROW,
	AF_DELETE,
	AF_DELETE_ARRAY,
	AF_DELETE_SIZED,
	AF_DELETE_ARRAY_SIZED,
	AF_DELETE_NOTHROW,
	AF_DELETE_ARRAY_NOTHROW,
	AF_DELETE_ALIGNED,
	AF_DELETE_ARRAY_ALIGNED,
	AF_DELETE_SIZED_ALIGNED,
	AF_DELETE_ARRAY_SIZED_ALIGNED,
	AF_DELETE_ALIGNED_NOTHROW,
	AF_DELETE_ARRAY_ALIGNED_NOTHROW,
	AF_MALLOCX,
	AF_RALLOCX,
	AF_DALLOCX,
	AF_SDALLOCX,
	/* libmemsight-sample.so's probe points before it had USDT probes:
	 * a kept allocation (its pointer, size and the sampling rate, at
	 * entry) and its free. Read in older traces, no longer recorded. */
	AF_SAMPLED_ALLOC,
	AF_SAMPLED_FREE,
	/* The USDT probes of OpenTelemetry's memory profiling contract,
	 * provider otel_memory, wherever an object has them (memsight's
	 * sampler, or any allocator or program that emits them): alloc(ptr,
	 * size, weight), weight the bytes the allocation stands for (size
	 * itself when every allocation is reported), and free(ptr). A probe
	 * with several sites has an event each: the first named as here,
	 * the others with "__N" after it. */
	AF_OTEL_ALLOC,
	AF_OTEL_FREE,
	/* Both probes of an object as one event (the kernel's multi-probe
	 * uprobe events: each site a probe of the event, with the same
	 * fields), so that one event, not two, waits out the kernel's grace
	 * periods as the recording ends: ptr, size and weight, and `kind`,
	 * OTEL_KIND_ALLOC or OTEL_KIND_FREE (whose size and weight are 0). */
	AF_OTEL_SITES,
	/* The probes of an allocator object as few events, each probe an
	 * entry or return of one function (the kernel's multi-probe uprobe
	 * events): "allocs" the entries of the functions that allocate,
	 * "frees" those of the ones that free, "allocs_ret" the returns (but
	 * posix_memalign's, which takes stack bytes). Their fields are the
	 * union of the functions' (0 where a function has none) and `fn`,
	 * which function: its number in the trace's `alloc_fns` list. So
	 * that three events, not one or two a function, wait out the
	 * kernel's grace periods as a recording ends. */
	AF_ALLOCS,
	AF_FREES,
	AF_NR,
};

enum { OTEL_KIND_ALLOC = 1, OTEL_KIND_FREE = 2 };

/* The sampler's probe points come after every function an allocator has. */
#define AF_SAMPLED_FIRST AF_SAMPLED_ALLOC

/* What pairing does with a call. */
enum alloc_op {
	ALLOC_OP_ALLOC,		/* a new block of `size` bytes: the result */
	ALLOC_OP_ALLOC_N,	/* of `nmemb` * `size` bytes */
	ALLOC_OP_REALLOC,	/* `ptr` freed, a block of `size` bytes returned */
	ALLOC_OP_REALLOC_N,	/* `ptr` freed, `nmemb` * `size` bytes returned */
	ALLOC_OP_FREE,		/* `ptr` freed; no return probe */
	ALLOC_OP_ALLOC_OUT,	/* `size` bytes, the result stored at `memptr`, 0 returned */
	ALLOC_OP_ALLOC_AT,	/* `ptr`, a block of `size` bytes, kept with probability 1 - exp(-size/`rate`),
				 * or standing for `weight` bytes; all given at entry, no return probe */
};

enum alloc_fn_flags {
	ALLOC_FN_SIZE_FILTER = 1 << 0, /* `size` is the whole request: -z/-Z can drop the entry in the kernel */
	ALLOC_FN_EVERY = 1 << 1,       /* every entry is kept under -s N: its return needs it */
};

struct alloc_fn_desc {
	const char *symbol;	/* as the object exports it, and the probe event's name */
	const char *name;	/* as stacks show it */
	enum alloc_op op;
	const char *args;	/* the entry probe's fetchargs, x86-64 */
	unsigned flags;		/* enum alloc_fn_flags */
};

extern const struct alloc_fn_desc alloc_fns[AF_NR];

/* The function a probe event names ("malloc", "_Znwm_ret",
 * "otel_memory_alloc__3"): its index, with *ret set for a return probe; -1
 * when it names none. */
int alloc_fn_lookup(const char *event, size_t len, int *ret);

/* Whether a file (a path or a basename) is an allocator object: glibc's
 * libc, jemalloc, tcmalloc or mimalloc, by its basename. */
int alloc_object_is_allocator(const char *path);

/* Whether a function of that name (as stacks show it, or its symbol) is
 * one of the allocation functions a program calls: malloc, operator new... */
int alloc_fn_is_entry(const char *sym);

#endif
