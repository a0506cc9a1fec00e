/*
 * analyze/model/allocs.h: user allocations paired with their frees.
 *
 * Owns turning the malloc-family uprobe samples into allocations and frees:
 * entry and return paired per thread on a LIFO of pending calls (glibc's
 * realloc(NULL, n) enters malloc), the stack of each allocation repaired
 * (the caller a frame-pointer walk skips at a function's first instruction
 * is put back from the return address the entry probe read, and return
 * addresses a pending return probe replaced are restored), and the table of
 * allocations still outstanding, per process. Knows nothing of how results
 * are printed.
 */
#ifndef MEMSIGHT_ALLOCS_H
#define MEMSIGHT_ALLOCS_H

#include <math.h>
#include <stdint.h>

#include "../replay/session.h"
#include "stacktab.h"

struct alloc_rec {
	uint64_t ptr, size, time;
	uint64_t rate;		   /* a sampler's sample: one in every rate bytes on average; 0 when exact */
	struct stack_entry *stack; /* NULL when the entry was not sampled */
	int pid;
	uint8_t fn;
	uint8_t sized;		   /* the size is known (the entry was seen) */
	uint8_t reach;		   /* enum reach_kind, once reach_classify has run */
	struct alloc_rec *leader;  /* indirectly lost: the definitely lost block that holds it */
};

/* What a block stands for. Exact, itself. A sampler's sample was kept
 * with probability 1 - exp(-size / rate): it stands for 1 / that many
 * allocations of its size, which makes sums of these unbiased estimates
 * (as Go's heap profiles scale theirs). Counts round up or down with the
 * odds of the fraction, by the block's address, so they stay unbiased. */
/* The rate of a block the wrapper's guard chose and the profile did not
 * (reported with weight 0): it stands for nothing, and is kept for where
 * it was allocated and freed. */
#define ALLOC_RATE_NONE UINT64_MAX

static inline double alloc_rec_weight(const struct alloc_rec *r)
{
	if (r->rate == ALLOC_RATE_NONE)
		return 0;
	return r->rate && r->size ? 1.0 / -expm1(-(double)r->size / (double)r->rate) : 1.0;
}

static inline uint64_t alloc_rec_bytes(const struct alloc_rec *r)
{
	return r->rate ? (uint64_t)((double)r->size * alloc_rec_weight(r) + 0.5) : r->size;
}

static inline uint64_t alloc_rec_count(const struct alloc_rec *r)
{
	double w = alloc_rec_weight(r), whole = floor(w);
	uint64_t h = (r->ptr >> 4) * 0x9e3779b97f4a7c15ull;

	return r->rate ? (uint64_t)whole + ((double)(h >> 11) * (1.0 / 9007199254740992.0) < w - whole) : 1;
}

/* ALLOC_DOUBLE_FREE: the program freed a block it had freed already, not
 * allocated again since. ALLOC_BAD_FREE: it freed a pointer the recording
 * never saw returned, which is memory from before the recording unless
 * the recording saw the process start. ALLOC_EXEC: pid exec'd a new
 * program, after an ALLOC_FREED with exec set for each block of the old
 * one. None of the three has a rec. */
enum alloc_event_kind { ALLOC_NEW, ALLOC_FREED, ALLOC_DOUBLE_FREE, ALLOC_BAD_FREE, ALLOC_EXEC };

struct alloc_event {
	enum alloc_event_kind kind;
	const struct alloc_rec *rec; /* ALLOC_FREED: the allocation being freed */
	uint64_t time;		     /* of the event (the free's time for ALLOC_FREED) */
	int tid;		     /* the thread that allocated or freed */
	int pid;
	uint64_t ptr;		     /* the pointer freed */
	const struct sample *stack;  /* a free's stack, where its probe took one (-e malloc,signals); else NULL */
	int exec;		     /* ALLOC_FREED: released with the address space by an exec, no free of the program's */
};

typedef int (*alloc_cb)(struct session *s, const struct alloc_event *ev, void *arg);

/* A program image (a process between two execs) whose allocations the
 * recording could not see: it ran without memsight's wrapper while the
 * others were seen through it, or it mapped an allocator the recorder had
 * put no probes on. */
struct alloc_unseen {
	int pid;
	char comm[16];
	char *object;		/* the allocator not probed; NULL: the wrapper was not in it */
};

/* An allocator object a process mapped before the recorder could probe it
 * (found while recording): what went through it in between is not seen. */
struct alloc_late {
	int pid;
	char comm[16];
	char *object;
	uint64_t late_ns;	/* from its mapping (or the recording's start) to its probes */
};

/* A process an allocator probed while recording covered (META probes). */
struct alloc_covered {
	int pid;
	const char *path;	/* in covered_text */
	uint64_t late_ns;
	size_t next;		/* the pid's next entry + 1, 0 for none */
};

struct allocs {
	struct stacktab stacks;	  /* allocation stacks; weight = bytes allocated */
	struct hashmap procs;	  /* pid -> struct hashmap * (ptr -> struct alloc_rec *) */
	struct hashmap freed;	  /* pid -> struct hashmap * of blocks freed and not allocated again */
	struct hashmap threads;	  /* tid -> struct pending_stack * */
	unsigned sample;	  /* -s N of the recording, 1 when every entry was kept */
	uint64_t rate;		  /* the sampler's rate, when its samples were seen (0: none) */
	uint64_t asked_rate;	  /* the rate --sample-bytes asked for (0: every call, or -p's own) */
	/* The calls seen whole: every probe was on from probes_on, the first
	 * went off at probes_off (0: no bound), both in the samples' clock. */
	uint64_t probes_on, probes_off;
	uint64_t aliases[AF_NR];  /* per probed function, the others at its address (bits) */
	const char *uprobes_name;  /* the uretprobe trampolines' mapping, interned */
	struct hashmap call_names; /* caller address (per pid) -> enum alloc_fn + 1 */
	int tid;		  /* the thread of the sample being paired */
	alloc_cb cb;		  /* the replay's callback, for the blocks an exec releases */
	void *cb_arg;
	uint64_t exec_released;	  /* blocks an exec released with the address space */
	uint64_t min_size, max_size;
	uint64_t nr_allocs, alloc_bytes, nr_frees, free_bytes;
	uint64_t unmatched_frees;  /* frees of memory allocated before the recording */
	uint64_t refrees;	   /* the allocator freeing again blocks freed before (tcache at thread exit) */
	uint64_t internal_frees;   /* the allocator freeing blocks no probed call made (its tcache) */
	uint64_t double_frees;	   /* the program freeing again blocks freed before */
	uint64_t nested;	   /* calls the allocator made inside the user's (reallocarray -> realloc) */
	uint64_t failed;	   /* calls that returned no memory */
	uint64_t unknown_result;   /* posix_memalign whose pointer could not be read */
	uint64_t filtered;	   /* outside -z/-Z (applied here for calloc and realloc) */
	uint64_t unsized;	   /* allocations whose entry was not kept (-s, -z/-Z) */
	uint64_t entry_lost;	   /* entries without a return (the recording ended, lost events) */
	int watch;		   /* which images to judge: enum alloc_watch */
	char *probed;		   /* the allocator objects the recorder probed, comma-separated */
	struct hashmap images;	   /* pid -> struct image * of its program image so far */
	struct alloc_unseen *unseen; /* images judged unseen, in the order they ended */
	size_t nr_unseen;
	struct alloc_covered *covered; /* allocators probed while recording, per process */
	char *covered_text;	   /* the META probes lines they point into */
	size_t nr_covered;
	struct hashmap covered_by_pid; /* pid -> first index in covered + 1 */
	struct alloc_late *late;   /* those probed after a process had mapped them */
	size_t nr_late;
	struct session *late_session; /* whose replay names them, at its end */
	struct hashmap foreign;	   /* pids that mapped an allocator other than glibc's */
};

int allocs_init(struct allocs *a, struct session *s);
void allocs_release(struct allocs *a);
/* Replay the session, calling cb (may be NULL) for every allocation and
 * free. Outstanding allocations stay in a->procs afterwards. */
int allocs_replay(struct allocs *a, struct session *s, alloc_cb cb, void *arg, char *err, size_t errlen);
/* The same a sample at a time, for a command that feeds one replay to
 * several consumers; allocs_end once the replay is over. */
int allocs_sample(struct allocs *a, struct session *s, struct sample *smp, alloc_cb cb, void *arg);
void allocs_end(struct allocs *a);
/* A followed ring's window moved on to from (session_on_window): the
 * blocks still outstanding that were allocated before then are dropped,
 * no free of the program's, as a reading of the window alone never saw
 * them (a free of one is then a free of memory from before, as there).
 * Returns 0, or -ENOMEM with nothing dropped. */
int allocs_forget_before(struct allocs *a, uint64_t from);
/* Whether pid's heap is glibc's malloc (no other allocator mapped). */
int allocs_glibc_heap(struct allocs *a, struct session *s, int pid);
/* Whether the trace holds malloc-family events at all. */
int allocs_recorded(const struct session *s);

#endif
