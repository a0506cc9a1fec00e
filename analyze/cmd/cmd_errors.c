/*
 * analyze/cmd/cmd_errors.c: memsight errors, the memory errors a recording
 * proves: each fatal signal of a memory error (record -e signals) read
 * against the thread's last page fault (-e faults) and the allocation
 * history (-e malloc), and each free of a block freed already or of a
 * pointer no allocation returned. An entry names its kind, the address,
 * the block with its offset or distance, and the stacks: faulting,
 * allocating, freeing.
 *
 * What the recording cannot know it does not claim: an address that a
 * later allocation took again proves no use after free, and a free of a
 * pointer never seen returned is an error only where the allocator said
 * so (glibc aborts), or where it lies inside a live block.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../formats/catalog.h"
#include "../../formats/guard.h"
#include "../model/allocs.h"
#include "../model/memops.h"
#include "cmd.h"

static const char usage_text[] =
	"usage: memsight errors [options] [FILE]\n"
	"\n"
	"The memory errors of a recording, one entry each with its kind and stacks:\n"
	"use after free, heap overflow and underflow, stack overflow, null and wild\n"
	"pointers, double and invalid frees, and the other signals that end a\n"
	"process for a memory error. Record them with\n"
	"  memsight record -e malloc,faults,signals -- COMMAND\n"
	"(-e faults,signals alone gives the kinds a mapping tells; malloc adds\n"
	"the blocks, and with signals, the stacks of frees).\n";

#define ERR_FRAMES 128
/* How far from a live block a fault is still its overflow, and from the
 * stack pointer a stack overflow: a guard page and what one frame skips. */
#define NEAR_BLOCK (64u << 10)
#define NEAR_SP (64u << 10)
/* The lowest address a process may map (vm.mmap_min_addr's default): a
 * fault below it is a null pointer's. */
#define NULL_ZONE 65536u
/* The live blocks an abort for heap corruption lists. */
#define SUSPECTS 3
/* The fault of a signal comes just before it, in the same thread. */
#define FAULT_WINDOW_NS 100000000ull

enum err_kind {
	ERR_UAF,
	ERR_OVERFLOW,
	ERR_UNDERFLOW,
	ERR_STACK,
	ERR_NULL,
	ERR_WILD,
	ERR_DOUBLE_FREE,
	ERR_INVALID_FREE,
	ERR_HEAP_CORRUPTION,
	ERR_SIGNAL,
};

static const char *const kind_names[] = {
	[ERR_UAF] = "use-after-free",	[ERR_OVERFLOW] = "heap-overflow",     [ERR_UNDERFLOW] = "heap-underflow",
	[ERR_STACK] = "stack-overflow", [ERR_NULL] = "null-pointer",	      [ERR_WILD] = "wild-pointer",
	[ERR_DOUBLE_FREE] = "double-free", [ERR_INVALID_FREE] = "invalid-free", [ERR_HEAP_CORRUPTION] = "heap-corruption",
	[ERR_SIGNAL] = "signal",
};

static const char *const kind_titles[] = {
	[ERR_UAF] = "use after free",	[ERR_OVERFLOW] = "heap overflow",     [ERR_UNDERFLOW] = "heap underflow",
	[ERR_STACK] = "stack overflow", [ERR_NULL] = "null pointer",	      [ERR_WILD] = "wild pointer",
	[ERR_DOUBLE_FREE] = "double free", [ERR_INVALID_FREE] = "invalid free", [ERR_HEAP_CORRUPTION] = "heap corruption",
	[ERR_SIGNAL] = "fatal signal",
};

/* A block freed during the recording: the latest at its address. */
struct freed_blk {
	uint64_t ptr, size, alloc_time, free_time;
	int free_tid;
	const struct stack_entry *alloc_stack, *free_stack;
};

/* A thread's last user page fault. */
struct last_fault {
	uint64_t time, addr, ip;
	unsigned kinds;
};

struct err {
	enum err_kind kind;
	uint64_t time;
	int pid, tid;
	char comm[16];
	int sig, code;		 /* sig 0: none (a bad free the allocator let pass) */
	int handled;		 /* the process had a handler for the signal */
	int recovered;		 /* ... and no crash followed it (a JVM's null checks) */
	int went_on;		 /* ... and the process was seen after it */
	int have_addr;
	uint64_t addr;		 /* the fault's, or the pointer freed */
	unsigned access;	 /* the fault's kinds (enum fault_kind bits) */
	uint64_t block, size;	 /* the block it concerns, when one */
	int64_t offset;		 /* into the block (negative: before it) */
	uint64_t since_free;	 /* use after free, double free: ns since the (first) free */
	int reused;		 /* the freed address is in a live block again */
	uint64_t stack_depth;	 /* stack overflow: bytes from the highest stack pointer the thread showed */
	int lost_before;	 /* events were lost before it: the history it rests on may miss some */
	const char *where;	 /* wild pointer: what lies there */
	int aborted;		 /* SIGABRT from the process's own abort() */
	int guarded;		 /* the address is in a guard pool: the guard made it fault */
	/* Heap corruption: the allocator's function that found it, and the
	 * one that called it (the check that failed). */
	char detector[64], check[128];
	const struct stack_entry *alloc_stack, *free_stack, *free2_stack;
	const struct stack_entry *stack; /* where the signal found the thread */
	/* An abort: the blocks next to where the allocator found its heap
	 * corrupted, the likeliest culprit first; shown for heap corruption. */
	struct suspect {
		uint64_t ptr, size;
		const char *why;
		const struct stack_entry *alloc_stack;
	} suspects[SUSPECTS];
	int nr_suspects;
};

/* What a thread did last with the heap: where an abort of its allocator
 * was looking. */
struct thread_last {
	uint64_t alloc_ptr, alloc_time;
	uint64_t free_ptr, free_size, free_time;
	const struct stack_entry *free_alloc_stack;
};

/* A thread's last bad free, until the allocator aborts on it or the
 * thread frees again: err, its entry (index + 1), or for a pointer in no
 * block none yet, made only when the abort proves it. */
struct bad_free {
	size_t err;
	uint64_t time, ptr;
	const struct stack_entry *stack;
};

struct errors {
	struct allocs a;
	int have_malloc;
	struct stacktab frees;	   /* the stacks of frees */
	struct stacktab stacks;	   /* the stacks the signals found */
	struct hashmap freed;	   /* pid -> struct hashmap * (ptr -> struct freed_blk *) */
	struct hashmap faults;	   /* tid -> struct last_fault */
	struct hashmap bad_frees;  /* tid -> struct bad_free, awaiting the allocator's abort */
	struct err *v;
	size_t nr;
	uint64_t unmatched;	   /* frees of pointers never seen returned, not shown as errors */
	struct hashmap last_seen;  /* pid -> time of its last sample */
	struct hashmap top_sp;	   /* tid -> the highest stack pointer its samples showed */
	struct hashmap guards;	   /* pid -> struct guard_pool */
	struct hashmap last;	   /* tid -> struct thread_last */
	uint64_t guarded;	   /* allocations served from guard pools */
	int lines, all;
	int json, fail;
};

/* Where a process's guard pool lies (formats/guard.h), looked for again
 * whenever its file mappings changed. */
struct guard_pool {
	unsigned gen;
	int looked;
	uint64_t start, page;
};

static struct err *err_new(struct errors *e, struct session *s, enum err_kind kind, uint64_t time, int pid, int tid)
{
	struct err *v = realloc(e->v, (e->nr + 1) * sizeof(*v));

	if (!v)
		return NULL;
	e->v = v;
	v = &v[e->nr++];
	memset(v, 0, sizeof(*v));
	v->kind = kind;
	v->time = time;
	v->pid = pid;
	v->tid = tid;
	snprintf(v->comm, sizeof(v->comm), "%s", machine_comm(&s->m, pid, tid));
	return v;
}

static struct hashmap *freed_of(struct errors *e, int pid)
{
	return hashmap_u64_obj(&e->freed, (uint32_t)pid, sizeof(struct hashmap));
}

static void freed_drop(struct hashmap *m)
{
	hashmap_for_each(m, b) free(b->ptr);
	hashmap_release(m);
}

/* The guard pool of pid holding addr: its start, and *page its page size
 * (its named first page's length); 0 when addr is in none. */
static uint64_t guard_pool_at(struct errors *e, struct session *s, int pid, uint64_t addr, uint64_t *page)
{
	struct process *p = machine_process_find(&s->m, pid);
	struct guard_pool *g;

	if (!p || !(g = hashmap_u64_obj(&e->guards, (uint32_t)pid, sizeof(*g))))
		return 0;
	if (!g->looked || g->gen != p->code_gen) {
		g->looked = 1;
		g->gen = p->code_gen;
		g->start = 0;
		for (size_t i = 0; i < p->nr_maps; i++)
			if (p->maps[i].name && strstr(p->maps[i].name, "/memfd:" GUARD_NAME)) {
				g->start = p->maps[i].start;
				g->page = p->maps[i].end - p->maps[i].start;
				break;
			}
	}
	*page = g->page;
	return g->start && addr - g->start < (2 * GUARD_SLOTS + 1) * g->page ? g->start : 0;
}

/* An exec replaces the address space: its freed blocks are gone. */
static void on_exec(void *arg, struct session *s, int pid, uint64_t time)
{
	struct errors *e = arg;
	struct hm_slot *slot = hashmap_u64_find(&e->freed, (uint32_t)pid);

	(void)s;
	(void)time;
	if (slot && slot->ptr) {
		freed_drop(slot->ptr);
		hashmap_init(slot->ptr, 0);
	}
	/* and its stack is a new one */
	hashmap_u64_remove(&e->top_sp, (uint32_t)pid);
}

/* The live block holding addr, else the nearest one it lies past the end
 * of (*after) or before the start of (*before), within NEAR_BLOCK. */
static const struct alloc_rec *live_near(struct errors *e, int pid, uint64_t addr, const struct alloc_rec **after,
					 const struct alloc_rec **before)
{
	struct hm_slot *slot = hashmap_u64_find(&e->a.procs, (uint32_t)pid);
	const struct hashmap *m = slot ? slot->ptr : NULL;

	*after = *before = NULL;
	if (!m)
		return NULL;
	hashmap_for_each(m, b) {
		const struct alloc_rec *r = b->ptr;
		uint64_t end = r->ptr + r->size;

		if (!r->sized)
			continue;
		if (addr >= r->ptr && addr < end)
			return r;
		if (addr >= end && addr - end < NEAR_BLOCK && (!*after || end > (*after)->ptr + (*after)->size))
			*after = r;
		if (addr < r->ptr && r->ptr - addr <= NEAR_BLOCK && (!*before || r->ptr < (*before)->ptr))
			*before = r;
	}
	return NULL;
}

/* The block freed during the recording that held addr, the latest freed. */
static const struct freed_blk *freed_holding(struct errors *e, int pid, uint64_t addr)
{
	struct hm_slot *slot = hashmap_u64_find(&e->freed, (uint32_t)pid);
	const struct freed_blk *best = NULL;

	if (!slot || !slot->ptr)
		return NULL;
	hashmap_for_each((struct hashmap *)slot->ptr, b) {
		const struct freed_blk *f = b->ptr;

		if (addr >= f->ptr && addr < f->ptr + f->size && (!best || f->free_time > best->free_time))
			best = f;
	}
	return best;
}

/* A free's stack, shown from the free the program called: a wrapper's
 * own frames above it (memsight's, reporting the call) are left out. */
static const struct stack_entry *free_stack(struct errors *e, struct session *s, const struct sample *smp)
{
	struct stack_entry *st = smp ? stacktab_add(&e->frees, s, smp, 0) : NULL;

	if (st)
		stacktab_trim_to_entry(st);
	return st;
}

static int on_alloc(struct session *s, const struct alloc_event *ev, void *arg)
{
	struct errors *e = arg;
	struct hashmap *m;
	struct freed_blk *f;
	struct err *x = NULL;
	struct bad_free *bf;
	struct hm_slot *slot;
	const struct alloc_rec *r, *after, *before;

	switch (ev->kind) {
	case ALLOC_NEW: {
		uint64_t page;
		struct thread_last *tl = hashmap_u64_obj(&e->last, (uint32_t)ev->tid, sizeof(*tl));

		if (!tl)
			return -1;
		tl->alloc_ptr = ev->rec->ptr;
		tl->alloc_time = ev->time;
		e->guarded += guard_pool_at(e, s, ev->pid, ev->rec->ptr, &page) != 0;
		return 0;
	}
	case ALLOC_EXEC:
		return 0;
	case ALLOC_FREED:
		if (!(m = freed_of(e, ev->pid)) || !(f = hashmap_u64_obj(m, ev->rec->ptr, sizeof(*f))))
			return -1;
		f->ptr = ev->rec->ptr;
		f->size = ev->rec->size;
		f->alloc_time = ev->rec->time;
		f->free_time = ev->time;
		f->free_tid = ev->tid;
		f->alloc_stack = ev->rec->stack;
		f->free_stack = free_stack(e, s, ev->stack);
		if (!ev->exec) {
			struct thread_last *tl = hashmap_u64_obj(&e->last, (uint32_t)ev->tid, sizeof(*tl));

			if (!tl)
				return -1;
			tl->free_ptr = f->ptr;
			tl->free_size = f->size;
			tl->free_time = ev->time;
			tl->free_alloc_stack = f->alloc_stack;
		}
		/* The thread went on freeing: an abort now is not for its
		 * last bad free. */
		if ((slot = hashmap_u64_find(&e->bad_frees, (uint32_t)ev->tid)))
			((struct bad_free *)slot->ptr)->time = 0;
		return 0;
	case ALLOC_DOUBLE_FREE:
		if (!(x = err_new(e, s, ERR_DOUBLE_FREE, ev->time, ev->pid, ev->tid)))
			return -1;
		x->have_addr = 1;
		x->addr = x->block = ev->ptr;
		slot = (m = freed_of(e, ev->pid)) ? hashmap_u64_find(m, ev->ptr) : NULL;
		if (slot && (f = slot->ptr)) {
			x->size = f->size;
			x->since_free = ev->time - f->free_time;
			x->alloc_stack = f->alloc_stack;
			x->free_stack = f->free_stack;
		}
		x->free2_stack = free_stack(e, s, ev->stack);
		break;
	case ALLOC_BAD_FREE:
		r = live_near(e, ev->pid, ev->ptr, &after, &before);
		if (!r) {
			/* Memory from before the recording, maybe: an error
			 * once the allocator aborts on it. */
			x = NULL;
			e->unmatched++;
			break;
		}
		if (!(x = err_new(e, s, ERR_INVALID_FREE, ev->time, ev->pid, ev->tid)))
			return -1;
		x->have_addr = 1;
		x->addr = ev->ptr;
		x->block = r->ptr;
		x->size = r->size;
		x->offset = (int64_t)(ev->ptr - r->ptr);
		x->alloc_stack = r->stack;
		x->free2_stack = free_stack(e, s, ev->stack);
		break;
	}
	if (!(bf = hashmap_u64_obj(&e->bad_frees, (uint32_t)ev->tid, sizeof(*bf))))
		return -1;
	bf->err = x ? e->nr : 0;
	bf->time = ev->time;
	bf->ptr = ev->ptr;
	bf->stack = free_stack(e, s, ev->stack);
	return 0;
}

/* The recursion at the top of frames (from the first user frame, *at):
 * how many times in a row the cycle of *period functions repeats (f calls
 * f: 1; f calls g calls f: 2), up to 8 functions a cycle. 0 when nothing
 * repeats. */
static int recursion_depth(const struct frame *fr, int n, int *at, int *period)
{
	int i = 0, best = 0;

	while (i < n && fr[i].kernel)
		i++;
	*at = i;
	*period = 0;
	for (int p = 1; p <= 8 && i + p < n; p++) {
		int k = i + p;

		while (k < n && fr[k].sym && fr[k - p].sym && !strcmp(fr[k].sym, fr[k - p].sym))
			k++;
		/* whole cycles only, and at least two of them */
		if ((k - i) / p >= 2 && (k - i) / p > best) {
			best = (k - i) / p;
			*period = p;
		}
	}
	return best;
}

static int classify_fault(struct errors *e, struct session *s, struct err *x, const struct sample *smp)
{
	const struct alloc_rec *r = NULL, *after = NULL, *before = NULL;
	const struct freed_blk *f = NULL;
	uint64_t a = x->addr, sp = 0, page = 0, pool = guard_pool_at(e, s, x->pid, a, &page);
	const struct map *map = machine_find_map(&s->m, x->pid, a);

	x->guarded = pool != 0;
	if (e->have_malloc) {
		f = freed_holding(e, x->pid, a);
		r = live_near(e, x->pid, a, &after, &before);
	}
	/* In a guard pool, a block in the next slot is no neighbour: only
	 * those of the slots beside the page hit. */
	if (pool && after && a - (after->ptr + after->size) >= page)
		after = NULL;
	if (pool && before && before->ptr - a > page)
		before = NULL;
	if (f) {
		x->kind = ERR_UAF;
		x->block = f->ptr;
		x->size = f->size;
		x->offset = (int64_t)(a - f->ptr);
		x->since_free = x->time - f->free_time;
		x->alloc_stack = f->alloc_stack;
		x->free_stack = f->free_stack;
		/* A block allocated since at that address makes it no proof. */
		x->reused = r && r->time > f->free_time;
		return 0;
	}
	if (after || before) {
		uint64_t da = after ? a - (after->ptr + after->size) : UINT64_MAX;
		uint64_t db = before ? before->ptr - a : UINT64_MAX;

		r = da <= db ? after : before;
		x->kind = da <= db ? ERR_OVERFLOW : ERR_UNDERFLOW;
		x->block = r->ptr;
		x->size = r->size;
		x->offset = (int64_t)(a - r->ptr);
		x->alloc_stack = r->stack;
		return 0;
	}
	if (pool) {
		/* No block recorded there (allocated before the recording, or
		 * its report lost): what the pool's layout tells. Odd pages
		 * are slots, inaccessible once freed; even ones guards. */
		uint64_t k = (a - pool) / page, in = (a - pool) % page;

		x->kind = k % 2 ? ERR_UAF : in < page / 2 ? ERR_OVERFLOW : ERR_UNDERFLOW;
		x->where = k % 2 ? "in a guarded slot freed before; the block's allocation was not recorded"
			   : in < page / 2 ? "on the guard page after a guarded slot; the block's allocation was not recorded"
					   : "on the guard page before a guarded slot; the block's allocation was not recorded";
		return 0;
	}
	if (a < NULL_ZONE) {
		x->kind = ERR_NULL;
		return 0;
	}
	if (sample_reg(smp, SAMPLE_REG_SP, &sp) && (!map || x->code == SEGV_ACCERR) && a + NEAR_SP > sp && a < sp + NEAR_SP) {
		struct hm_slot *top = hashmap_u64_find(&e->top_sp, (uint32_t)x->tid);

		x->kind = ERR_STACK;
		if (top && top->val > sp)
			x->stack_depth = top->val - sp;
		return 0;
	}
	x->kind = ERR_WILD;
	if (!map)
		x->where = "in no mapping the recording knows of";
	else
		x->where = map->name;
	return 0;
}

static void suspect_add(struct err *x, uint64_t ptr, uint64_t size, const char *why, const struct stack_entry *st)
{
	if (x->nr_suspects < SUSPECTS)
		x->suspects[x->nr_suspects++] = (struct suspect){ ptr, size, why, st };
}

/* The live block of pid that ends nearest at or below addr, among those
 * in lo..addr; NULL for none. */
static const struct alloc_rec *live_below(struct errors *e, int pid, uint64_t lo, uint64_t addr,
					  const struct alloc_rec *not1, const struct alloc_rec *not2)
{
	struct hm_slot *slot = hashmap_u64_find(&e->a.procs, (uint32_t)pid);
	const struct alloc_rec *best = NULL;

	if (!slot || !slot->ptr)
		return NULL;
	hashmap_for_each((struct hashmap *)slot->ptr, b) {
		const struct alloc_rec *r = b->ptr;

		if (r->sized && r != not1 && r != not2 && r->ptr >= lo && r->ptr + r->size <= addr &&
		    (!best || r->ptr + r->size > best->ptr + best->size))
			best = r;
	}
	return best;
}

/* An allocator that aborts finds a chunk's header, or a free chunk's
 * links, overwritten: by a write past the end of the block before it, or
 * through a pointer to a block freed already. Where it was looking
 * follows from what the thread did last. A free: the block being freed
 * (whose own overflow reaches the next chunk's header) and the block just
 * below it (whose overflow reaches the freed one's). A malloc: the blocks
 * nearest below the top of the heap the thread allocates from, the top
 * chunk's header just past the highest. */
static void suspects_find(struct errors *e, struct session *s, struct err *x)
{
	struct hm_slot *slot = hashmap_u64_find(&e->last, (uint32_t)x->tid);
	const struct thread_last *tl = slot ? slot->ptr : NULL;
	const struct alloc_rec *r, *r2;
	const struct map *map;
	uint64_t lo, hi;

	if (!e->have_malloc || !tl)
		return;
	if (tl->free_time && tl->free_time >= tl->alloc_time && x->time - tl->free_time < FAULT_WINDOW_NS) {
		map = machine_find_map(&s->m, x->pid, tl->free_ptr);
		lo = map ? map->start : tl->free_ptr - NEAR_BLOCK;
		suspect_add(x, tl->free_ptr, tl->free_size,
			    "being freed when the allocator looked: a write past its end reaches the next chunk's header",
			    tl->free_alloc_stack);
		if ((r = live_below(e, x->pid, lo, tl->free_ptr, NULL, NULL)))
			suspect_add(x, r->ptr, r->size, "the live block just below it: a write past its end reaches the "
					"freed block's header", r->stack);
		return;
	}
	if (!tl->alloc_time || !(map = machine_find_map(&s->m, x->pid, tl->alloc_ptr)))
		return;
	lo = map->start;
	hi = map->end;
	r = live_below(e, x->pid, lo, hi, NULL, NULL);
	r2 = r ? live_below(e, x->pid, lo, hi, r, NULL) : NULL;
	if (r)
		suspect_add(x, r->ptr, r->size, "the highest live block of the heap the thread allocates from: a write "
				"past its end reaches the free space after it", r->stack);
	if (r2)
		suspect_add(x, r2->ptr, r2->size, "the next one below", r2->stack);
	if (r2 && (r = live_below(e, x->pid, lo, hi, r, r2)))
		suspect_add(x, r->ptr, r->size, "the next one below", r->stack);
}

static int on_signal(struct errors *e, struct session *s, struct sample *smp)
{
	int sig = (int)sample_snum(smp, "sig"), code = (int)sample_snum(smp, "code");
	struct hm_slot *slot = hashmap_u64_find(&e->bad_frees, (uint32_t)smp->tid);
	struct bad_free *bf = slot ? slot->ptr : NULL;
	const struct last_fault *lf;
	struct err *x;
	uint64_t ip;

	/* The allocator aborting on a free it caught: that free is the error. */
	if (sig == SIGABRT && bf && bf->time) {
		if (bf->err) {
			x = &e->v[bf->err - 1];
		} else {
			if (!(x = err_new(e, s, ERR_INVALID_FREE, bf->time, smp->pid, smp->tid)))
				return -1;
			x->have_addr = 1;
			x->addr = bf->ptr;
			x->free2_stack = bf->stack;
			e->unmatched--;
		}
		x->sig = sig;
		x->code = code;
		x->stack = stacktab_add(&e->stacks, s, smp, 1);
		bf->time = 0;
		return 0;
	}
	if (!(x = err_new(e, s, ERR_SIGNAL, smp->time, smp->pid, smp->tid)))
		return -1;
	x->sig = sig;
	x->code = code;
	/* SIG_DFL is 0 and SIG_IGN 1: above, the process's own handler. */
	x->handled = sample_num(smp, "sa_handler") > 1;
	x->stack = stacktab_add(&e->stacks, s, smp, 1);
	if (sig == SIGABRT && code <= 0)
		suspects_find(e, s, x);
	/* A fault's signal (si_code > 0 for SIGSEGV and SIGBUS: the kernel
	 * raised it for an access) carries the address of the thread's last
	 * user fault, taken just before. A signal some process sent has none. */
	if ((sig != SIGSEGV && sig != SIGBUS) || code <= 0 || code == SI_KERNEL)
		return 0;
	slot = hashmap_u64_find(&e->faults, (uint32_t)smp->tid);
	lf = slot ? slot->ptr : NULL;
	if (!lf || lf->time > smp->time || smp->time - lf->time > FAULT_WINDOW_NS)
		return 0;
	/* The fault at the instruction the signal stopped at, where both
	 * are known (a stack dump's registers hold it). */
	if (lf->ip && sample_reg(smp, SAMPLE_REG_IP, &ip) && ip != lf->ip)
		return 0;
	x->have_addr = 1;
	x->addr = lf->addr;
	x->access = lf->kinds;
	return sig == SIGSEGV ? classify_fault(e, s, x, smp) : 0;
}

static int on_sample(struct session *s, struct sample *smp, void *arg)
{
	struct errors *e = arg;
	struct hm_slot *seen = hashmap_u64(&e->last_seen, smp->pid, NULL);

	if (!seen)
		return -1;
	seen->val = smp->time;
	/* How deep a stack went shows only against where it started: the
	 * highest stack pointer of the thread's samples (a DWARF stack's
	 * registers), its first frames' at the latest. */
	{
		uint64_t sp, ip;
		struct hm_slot *top;

		/* Not a fault the kernel took loading the program, whose
		 * registers are the old image's: its ip lies in no mapping. */
		if (sample_reg(smp, SAMPLE_REG_SP, &sp) && sample_reg(smp, SAMPLE_REG_IP, &ip) &&
		    machine_find_map(&s->m, smp->pid, ip) && (top = hashmap_u64(&e->top_sp, (uint32_t)smp->tid, NULL)) &&
		    sp > top->val)
			top->val = sp;
	}

	if (smp->ev->kind == EVK_FAULT && smp->ev->tp) {
		uint64_t code = sample_num(smp, "error_code"), addr = sample_num(smp, "address");
		struct last_fault *lf;

		if (!(code & 4) || addr >> 63) /* user-mode faults on user addresses */
			return 0;
		if (!(lf = hashmap_u64_obj(&e->faults, (uint32_t)smp->tid, sizeof(*lf))))
			return -1;
		lf->time = smp->time;
		lf->addr = addr;
		lf->ip = sample_num(smp, "ip");
		lf->kinds = fault_kinds(code);
		return 0;
	}
	if (smp->ev->kind == EVK_FAULT && (smp->ev->attr.sample_type & PERF_SAMPLE_ADDR)) {
		struct last_fault *lf = hashmap_u64_obj(&e->faults, (uint32_t)smp->tid, sizeof(*lf));

		if (!lf)
			return -1;
		lf->time = smp->time;
		lf->addr = smp->addr;
		lf->kinds = 0;
		return 0;
	}
	if (smp->ev->kind == EVK_SIGNAL)
		return on_signal(e, s, smp);
	if (e->have_malloc)
		return allocs_sample(&e->a, s, smp, on_alloc, e);
	return 0;
}

static const char *access_name(unsigned kinds)
{
	return kinds >> FAULT_EXEC & 1 ? "exec" : kinds >> FAULT_WRITE & 1 ? "write" : kinds ? "read" : "access";
}

static int frame_same(const struct frame *a, const struct frame *b)
{
	return a->ip == b->ip && a->kernel == b->kernel && a->inlined == b->inlined;
}

/* Frames with each run of one frame (a recursion's) folded to its first. */
static void print_folded(const struct frame *fr, int n, int lines)
{
	for (int i = 0; i < n;) {
		int k = i + 1;

		while (k < n && frame_same(&fr[k], &fr[i]))
			k++;
		print_frames(fr + i, 1, lines, "\t\t");
		if (k - i > 1)
			printf("\t\t... the same frame %d more times\n", k - i - 1);
		i = k;
	}
}

static void print_stack_of(const char *title, const struct stack_entry *st, int lines)
{
	struct frame fr[ERR_FRAMES];
	int n = st ? stack_entry_frames(st, fr, ERR_FRAMES) : 0;

	printf("\t%s:\n", title);
	if (n)
		print_folded(fr, n, lines);
	else
		printf("\t\t(not recorded)\n");
}

static void text_err(const struct session *s, const struct err *x, int lines)
{
	struct frame fr[ERR_FRAMES];
	int nr = x->stack ? stack_entry_frames(x->stack, fr, ERR_FRAMES) : 0, at, period;
	int depth = recursion_depth(fr, nr, &at, &period);
	char b1[32];

	printf("\n%s at +%.6fs: pid %d tid %d (%s)",
	       x->kind == ERR_SIGNAL && x->recovered ? "handled signal" : kind_titles[x->kind], (x->time - s->first_time) / 1e9, x->pid,
	       x->tid, x->comm);
	if (x->sig > 0)
		printf(", %s", catalog_signal_name(x->sig));
	printf("\n\t");
	switch (x->kind) {
	case ERR_UAF:
		if (!x->block) {
			printf("%s of 0x%llx, %s\n", access_name(x->access), (unsigned long long)x->addr, x->where);
			break;
		}
		printf("%s of 0x%llx, %lld bytes into a block of %s freed %.3f ms before\n", access_name(x->access),
		       (unsigned long long)x->addr, (long long)x->offset, fmt_bytes(x->size, b1, sizeof(b1)),
		       x->since_free / 1e6);
		if (x->reused)
			printf("\tnot proven: a block allocated since holds that address again\n");
		break;
	case ERR_OVERFLOW:
	case ERR_UNDERFLOW:
		if (!x->block) {
			printf("%s of 0x%llx, %s\n", access_name(x->access), (unsigned long long)x->addr, x->where);
			break;
		}
		if (x->kind == ERR_UNDERFLOW) {
			printf("%s of 0x%llx, %llu bytes before the start of a live block of %s at 0x%llx\n",
			       access_name(x->access), (unsigned long long)x->addr, (unsigned long long)(x->block - x->addr),
			       fmt_bytes(x->size, b1, sizeof(b1)), (unsigned long long)x->block);
			break;
		}
		printf("%s of 0x%llx, %llu bytes past the end of a live block of %s at 0x%llx\n", access_name(x->access),
		       (unsigned long long)x->addr, (unsigned long long)(x->addr - x->block - x->size),
		       fmt_bytes(x->size, b1, sizeof(b1)), (unsigned long long)x->block);
		break;
	case ERR_STACK:
		printf("%s of 0x%llx, in the guard gap below the thread's stack", access_name(x->access),
		       (unsigned long long)x->addr);
		if (depth && period == 1)
			printf("; %d frames of %s in a row in the recorded stack", depth, fr[at].sym);
		for (int k = 0; depth && period > 1 && k < period; k++)
			printf("%s%s", k ? " -> " : "; the cycle ", fr[at + k].sym);
		if (depth && period > 1)
			printf(" %d times in a row in the recorded stack", depth);
		if (depth && at + depth * period >= nr)
			printf(", and deeper than it reaches");
		if (x->stack_depth)
			printf("; the stack %s deep, from the highest stack pointer the thread showed",
			       fmt_bytes(x->stack_depth, b1, sizeof(b1)));
		printf("\n");
		break;
	case ERR_NULL:
		printf("%s of 0x%llx: %llu bytes past NULL\n", access_name(x->access), (unsigned long long)x->addr,
		       (unsigned long long)x->addr);
		break;
	case ERR_WILD:
		if (!x->have_addr)
			printf("%s: %s\n", catalog_signal_name(x->sig), x->where);
		else
			printf("%s of 0x%llx, %s%s\n", access_name(x->access), (unsigned long long)x->addr,
			       x->where[0] == '/' || x->where[0] == '[' ? "in " : "", x->where);
		break;
	case ERR_HEAP_CORRUPTION:
		printf("%s found its heap corrupted%s%s%s: %s from abort(); a write out of a block's bounds, or "
		       "through a pointer already freed, came before it\n",
		       x->detector, x->check[0] ? " (its check in " : "", x->check, x->check[0] ? ")" : "",
		       catalog_signal_name(x->sig));
		break;
	case ERR_DOUBLE_FREE:
		printf("free of 0x%llx, a block of %s freed %.3f ms before%s\n", (unsigned long long)x->addr,
		       fmt_bytes(x->size, b1, sizeof(b1)), x->since_free / 1e6,
		       x->sig == SIGABRT ? "; the allocator aborted" : "");
		break;
	case ERR_INVALID_FREE:
		if (x->size)
			printf("free of 0x%llx, %lld bytes into a live block of %s at 0x%llx%s\n",
			       (unsigned long long)x->addr, (long long)x->offset, fmt_bytes(x->size, b1, sizeof(b1)),
			       (unsigned long long)x->block, x->sig == SIGABRT ? "; the allocator aborted" : "");
		else
			printf("free of 0x%llx, a pointer no allocation returned; the allocator aborted\n",
			       (unsigned long long)x->addr);
		break;
	case ERR_SIGNAL:
		if (x->have_addr)
			printf("%s code %d at 0x%llx\n", catalog_signal_name(x->sig), x->code, (unsigned long long)x->addr);
		else if (x->sig == SIGSEGV && x->code == SI_KERNEL)
			printf("SIGSEGV from a general protection fault: a non-canonical address (a pointer with "
			       "garbage in its top bits) or a privileged instruction; the kernel gives no address\n");
		else if (x->sig == SIGABRT && x->aborted)
			printf("SIGABRT from the process's own abort()\n");
		else if (x->code <= 0)
			printf("%s sent by a process (code %d), not raised by an access\n", catalog_signal_name(x->sig), x->code);
		else
			printf("%s code %d%s\n", catalog_signal_name(x->sig), x->code,
			       x->sig == SIGSEGV || x->sig == SIGBUS ? "; its address is unknown: record -e faults too" : "");
		break;
	}
	if (x->guarded && x->recovered)
		printf("\tcaught by memsight's guard, which opened the page: the process went on\n");
	else if (x->guarded)
		printf("\tcaught by memsight's guard\n");
	else if (x->recovered && x->went_on)
		printf("\thandled: the process's own handler took it, and the process went on\n");
	else if (x->recovered)
		printf("\thandled: the process's own handler took it, and no crash followed\n");
	else if (x->handled)
		printf("\tthe process had a handler for it, which gave up: the signal came again and ended it\n");
	if (x->lost_before)
		printf("\tnot proven: events were lost before it, and with them maybe an allocation or a free\n");
	if (x->kind == ERR_DOUBLE_FREE || x->kind == ERR_INVALID_FREE) {
		print_stack_of("freed by", x->free2_stack ? x->free2_stack : x->stack, lines);
		if (x->kind == ERR_DOUBLE_FREE)
			print_stack_of("first freed by", x->free_stack, lines);
	} else {
		print_stack_of("at", x->stack, lines);
		if (x->kind == ERR_UAF)
			print_stack_of("freed by", x->free_stack, lines);
	}
	if (x->block || x->alloc_stack)
		print_stack_of("allocated by", x->alloc_stack, lines);
	if (x->kind != ERR_HEAP_CORRUPTION)
		return;
	if (x->nr_suspects)
		printf("\tthe blocks next to where it looked, the likeliest culprit first:\n");
	for (int k = 0; k < x->nr_suspects; k++) {
		printf("\t%d. %s at 0x%llx, %s\n", k + 1, fmt_bytes(x->suspects[k].size, b1, sizeof(b1)),
		       (unsigned long long)x->suspects[k].ptr, x->suspects[k].why);
		print_stack_of("allocated by", x->suspects[k].alloc_stack, lines);
	}
}

static void json_err(struct json *j, const struct session *s, const struct err *x, int lines)
{
	json_begin(j, NULL);
	json_str(j, "kind", kind_names[x->kind]);
	json_double(j, "time_s", "%.6f", (x->time - s->first_time) / 1e9);
	cmd_json_process(j, s, x->pid);
	json_i64(j, "tid", x->tid);
	json_str(j, "comm", x->comm);
	if (x->sig > 0) {
		json_str(j, "signal", catalog_signal_name(x->sig));
		json_i64(j, "code", x->code);
		json_bool(j, "handled", x->handled);
		json_bool(j, "recovered", x->recovered);
	} else {
		json_null(j, "signal");
	}
	if (x->have_addr)
		json_u64(j, "address", x->addr);
	else
		json_null(j, "address");
	if (x->access)
		json_str(j, "access", access_name(x->access));
	if (x->block || x->size) {
		json_begin(j, "block");
		json_u64(j, "address", x->block);
		json_u64(j, "size", x->size);
		json_i64(j, "offset", x->offset);
		json_end(j);
	}
	if (x->kind == ERR_OVERFLOW)
		json_u64(j, "distance", x->addr - x->block - x->size);
	if (x->kind == ERR_UNDERFLOW)
		json_u64(j, "distance", x->block - x->addr);
	if (x->kind == ERR_UAF || x->kind == ERR_DOUBLE_FREE)
		json_u64(j, "since_free_ns", x->since_free);
	if (x->kind != ERR_STACK && x->kind != ERR_NULL && x->kind != ERR_WILD && x->kind != ERR_SIGNAL &&
	    x->kind != ERR_HEAP_CORRUPTION)
		json_bool(j, "proven", !x->reused && !x->lost_before);
	if (x->kind == ERR_STACK) {
		struct frame fr[ERR_FRAMES];
		int nr = x->stack ? stack_entry_frames(x->stack, fr, ERR_FRAMES) : 0, at, period;

		json_i64(j, "recursion", recursion_depth(fr, nr, &at, &period));
		json_i64(j, "recursion_period", period);
		if (x->stack_depth)
			json_u64(j, "stack_depth_bytes", x->stack_depth);
	}
	if (x->kind == ERR_WILD || (x->where && !x->block))
		json_str(j, "where", x->where);
	if (x->guarded)
		json_bool(j, "guard", 1);
	if (x->kind == ERR_HEAP_CORRUPTION) {
		json_str(j, "detector", x->detector);
		if (x->check[0])
			json_str(j, "check", x->check);
		json_begin_array(j, "suspects");
		for (int k = 0; k < x->nr_suspects; k++) {
			json_begin(j, NULL);
			json_u64(j, "address", x->suspects[k].ptr);
			json_u64(j, "size", x->suspects[k].size);
			json_str(j, "why", x->suspects[k].why);
			cmd_json_stack(j, "alloc_frames", x->suspects[k].alloc_stack, lines);
			json_end(j);
		}
		json_end(j);
	}
	if (x->kind == ERR_SIGNAL && x->aborted)
		json_bool(j, "abort", 1);
	if ((x->kind == ERR_DOUBLE_FREE || x->kind == ERR_INVALID_FREE) && x->free2_stack)
		cmd_json_stack(j, "frames", x->free2_stack, lines);
	else
		cmd_json_stack(j, "frames", x->stack, lines);
	if (x->kind == ERR_UAF || x->kind == ERR_DOUBLE_FREE)
		cmd_json_stack(j, "free_frames", x->free_stack, lines);
	if (x->block || x->alloc_stack)
		cmd_json_stack(j, "alloc_frames", x->alloc_stack, lines);
	json_end(j);
}

/* The functions through which an allocator aborts on a heap it finds
 * corrupted, and whose they are. */
static const struct {
	const char *fn, *allocator;
} heap_checks[] = {
	{ "malloc_printerr", "glibc's malloc" },
	{ "je_safety_check_fail", "jemalloc" },
	{ "safety_check_fail", "jemalloc" },
	{ "_mi_error_message", "mimalloc" },
};

/* What a signal with no address tells by itself: a general protection
 * fault is a wild pointer; a SIGABRT is the process's own abort(), and
 * through an allocator's check, heap corruption. */
static void signal_explain(struct err *x)
{
	struct frame fr[ERR_FRAMES];
	int nr;

	if (x->kind != ERR_SIGNAL || x->have_addr)
		return;
	if (x->sig == SIGSEGV && x->code == SI_KERNEL) {
		x->kind = ERR_WILD;
		x->where = "a non-canonical address (a pointer with garbage in its top bits) or a privileged "
			   "instruction: the kernel gives no address";
		return;
	}
	if (x->sig != SIGABRT || x->code > 0 || !x->stack)
		return;
	nr = stack_entry_frames(x->stack, fr, ERR_FRAMES);
	for (int k = 0; k < nr; k++) {
		if (!fr[k].sym)
			continue;
		if (!strcmp(fr[k].sym, "abort") || !strcmp(fr[k].sym, "__GI_abort"))
			x->aborted = 1;
		for (size_t c = 0; c < sizeof(heap_checks) / sizeof(heap_checks[0]); c++) {
			if (strcmp(fr[k].sym, heap_checks[c].fn))
				continue;
			x->kind = ERR_HEAP_CORRUPTION;
			snprintf(x->detector, sizeof(x->detector), "%s", heap_checks[c].allocator);
			/* The caller: the first frame out of the check's own. */
			for (int up = k + 1; up < nr; up++)
				if (fr[up].sym && strcmp(fr[up].sym, fr[k].sym)) {
					snprintf(x->check, sizeof(x->check), "%s", fr[up].sym);
					break;
				}
			return;
		}
	}
}

/* The guard's mode as the recording asked it (META alloc_guard: RATE or
 * RATE,recover; empty for a process that ran with it by itself). */
static const char *guard_said(const char *guard, char *b, size_t n)
{
	if (!guard[0])
		snprintf(b, n, "at the rate the process ran with");
	else
		snprintf(b, n, "one in %llu asked, %u slots%s", strtoull(guard, NULL, 10), GUARD_SLOTS,
			 strstr(guard, ",recover") ? ", recovering" : "");
	return b;
}

static int errors_end(struct session *s, void *arg, int print)
{
	struct errors *e = arg;
	struct json j;
	size_t shown = 0, recovered = 0;
	uint64_t horizon;
	int ret = 1, json = e->json;
	char guard[64], b[128];

	if (e->have_malloc)
		allocs_end(&e->a);
	if (!print)
		goto out;
	/* A signal the process handled was no crash (a JVM takes SIGSEGV
	 * for its null checks and safepoints) unless one its handler did not
	 * take came after it, as a crash handler that gives up raises it
	 * again with the default action. Seen after it, the process went on;
	 * with signals alone recorded it may not be seen again at all. */
	for (size_t i = 0; i < e->nr; i++) {
		struct hm_slot *seen = hashmap_u64_find(&e->last_seen, (uint32_t)e->v[i].pid);
		int crashed = 0;

		for (size_t k = i + 1; k < e->nr && !crashed; k++)
			crashed = e->v[k].kind == ERR_SIGNAL && e->v[k].pid == e->v[i].pid && !e->v[k].handled &&
				  e->v[k].time >= e->v[i].time;
		e->v[i].went_on = seen && seen->val > e->v[i].time;
		e->v[i].recovered = e->v[i].handled && (e->v[i].went_on || !crashed);
		/* The guard's recovered faults are errors all the same. */
		recovered += e->v[i].recovered && !e->v[i].guarded;
	}
	for (size_t i = 0; i < e->nr; i++)
		signal_explain(&e->v[i]);
	session_host(s, "alloc_guard", guard, sizeof(guard), "");
	shown = e->all ? e->nr : e->nr - recovered;
	if (json) {
		json_init(&j, stdout);
		json_begin(&j, NULL);
		json_str(&j, "trace", s->path);
		cmd_json_lost(&j, s);
		json_bool(&j, "malloc_recorded", e->have_malloc);
		if (e->guarded || guard[0]) {
			json_begin(&j, "guard");
			json_u64(&j, "allocations", e->guarded);
			if (guard[0])
				json_u64(&j, "rate", strtoull(guard, NULL, 10));
			else
				json_null(&j, "rate");
			json_bool(&j, "recover", strstr(guard, ",recover") != NULL);
			json_end(&j);
		}
		json_begin_array(&j, "errors");
	} else if (!shown) {
		printf("# memsight errors of '%s': no memory errors recorded\n", s->path);
	} else {
		printf("# memsight errors of '%s': %zu memory error%s\n", s->path, shown, cmd_s(shown));
	}
	if (!json && (e->guarded || guard[0]))
		printf("# the guard served %llu allocation%s from its slots (%s): an error on one of them faults where "
		       "it happens\n",
		       (unsigned long long)e->guarded, cmd_s(e->guarded), guard_said(guard, b, sizeof(b)));
	/* What rests on the allocation history is no proof where events
	 * may be missing before it: a lost allocation, a lost free. */
	horizon = session_loss_horizon(s);
	for (size_t i = 0; i < e->nr; i++)
		if (e->v[i].time <= horizon && (e->v[i].kind == ERR_UAF || e->v[i].kind == ERR_DOUBLE_FREE ||
					       e->v[i].kind == ERR_OVERFLOW || e->v[i].kind == ERR_UNDERFLOW ||
					       e->v[i].kind == ERR_INVALID_FREE))
			e->v[i].lost_before = 1;
	for (size_t i = 0; i < e->nr; i++) {
		if (e->v[i].recovered && !e->v[i].guarded && !e->all)
			continue;
		if (json)
			json_err(&j, s, &e->v[i], e->lines);
		else
			text_err(s, &e->v[i], e->lines);
	}
	if (json) {
		json_end(&j);
		json_u64(&j, "unmatched_frees", e->unmatched);
		json_u64(&j, "recovered_signals", recovered);
		json_end(&j);
	} else if (e->unmatched) {
		printf("\n# and %llu free%s of pointers the recording never saw returned: memory from before it, "
		       "or invalid frees the allocator let pass\n",
		       (unsigned long long)e->unmatched, cmd_s(e->unmatched));
	}
	if (recovered && !e->all && !json)
		printf("\n# and %zu signal%s that processes handled, no crash following (a JVM takes SIGSEGV for its "
		       "null checks): --all shows them\n",
		       recovered, cmd_s(recovered));
	if (!shown && !e->have_malloc && !json)
		printf("# malloc was not recorded: frees and heap blocks are not checked (record -e malloc,faults,signals)\n");
	ret = e->fail && shown ? 3 : 0;
out:
	hashmap_for_each(&e->freed, slot) if (slot->ptr) {
		freed_drop(slot->ptr);
		free(slot->ptr);
	}
	hashmap_release(&e->freed);
	hashmap_for_each(&e->faults, slot) free(slot->ptr);
	hashmap_release(&e->faults);
	hashmap_for_each(&e->bad_frees, slot) free(slot->ptr);
	hashmap_release(&e->bad_frees);
	hashmap_release(&e->last_seen);
	hashmap_release(&e->top_sp);
	hashmap_for_each(&e->guards, slot) free(slot->ptr);
	hashmap_release(&e->guards);
	hashmap_for_each(&e->last, slot) free(slot->ptr);
	hashmap_release(&e->last);
	stacktab_release(&e->frees);
	stacktab_release(&e->stacks);
	if (e->have_malloc)
		allocs_release(&e->a);
	free(e->v);
	free(e);
	return ret;
}

int errors_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v)
{
	struct errors *e = calloc(1, sizeof(*e));
	const struct opt options[] = {
		OPT_LINES(&e->lines),
		OPT_JSON(&e->json),
		OPT_BOOL(0, "fail", &e->fail, "exit 3 when any memory error was recorded (for CI)"),
		OPT_BOOL(0, "all", &e->all, "also the signals a process handled and went on after"),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	int r;

	if (!e)
		return msg_error("out of memory"), 1;
	e->lines = 1;
	r = cmd_parse(argc, argv, options, usage_text, a);
	if (r < 0 && (cmd_view_open(s, a) || cmd_need_group(s, "signal", "signals", NULL)))
		r = 1;
	if (r >= 0) {
		free(e);
		return r;
	}
	e->have_malloc = allocs_recorded(s);
	stacktab_init(&e->frees, 0, 1);
	stacktab_init(&e->stacks, 0, 1);
	hashmap_init(&e->freed, 0);
	hashmap_init(&e->faults, 0);
	hashmap_init(&e->bad_frees, 0);
	hashmap_init(&e->last_seen, 0);
	hashmap_init(&e->top_sp, 0);
	hashmap_init(&e->guards, 0);
	hashmap_init(&e->last, 0);
	v->sample = on_sample;
	v->end = errors_end;
	v->arg = e;
	if ((e->have_malloc && allocs_init(&e->a, s)) || session_on_exec(s, on_exec, e)) {
		errors_end(s, e, 0);
		return msg_error("out of memory"), 1;
	}
	return -1;
}

int cmd_errors(int argc, char **argv, struct analyze_opts *a)
{
	return cmd_view_main(argc, argv, a, errors_view);
}
