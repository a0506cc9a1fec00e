/*
 * analyze/cmd/cmd_report.c: memsight report, one section per event group: per
 * process counts and bytes, then the heaviest stacks; for mmap the largest
 * single mappings, for faults the mappings that took them.
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../model/allocs.h"
#include "cmd.h"
#include "json.h"
#include "../model/heapprof.h"
#include "../../formats/allocfns.h"
#include "../model/memops.h"
#include "../model/rssstat.h"
#include "../model/stacktab.h"
#include "../model/stacktime.h"
#include "../model/suppress.h"
#include "../model/timeline.h"
#include "../../formats/replace.h"

static const char usage_text[] =
	"usage: memsight report [options] [FILE]\n"
	"   or: memsight report --html PAGE [options] [BASE] FILE\n"
	"\n"
	"One section per kind of event recorded (brk, mmap, page faults, malloc):\n"
	"per process counts and bytes, then the heaviest stacks. With --html and\n"
	"two traces, the page also holds what changed from BASE, as memsight diff\n"
	"gives it, and its differential flame graph.\n";

struct proc_stats {
	int pid;
	const char *comm;
	uint64_t brk_calls, brk_grow, brk_shrink;
	uint64_t mmaps, mmap_bytes, munmaps, munmap_bytes, mremaps, mremap_grow, map_failed;
	uint64_t faults, major, anon, file;
};

struct big_map {
	uint64_t len, addr, prot, flags, fd;
	int pid;
	const char *comm;
	int nr_frames;
	struct frame frames[64];
};

struct fault_map {
	int pid;
	uint64_t start, end, count;
	const char *name, *comm;
};

struct report {
	long pid;
	uint64_t top;
	int lines;		/* file:line on frames */
	struct timeline tl;	/* faults, brk growth and the heap over time */
	struct stacktime st;	/* the same by stack: faults, blocks made and freed */
	struct stacktime sizes;	/* allocations made, by size class + 1 */
	struct rssstat rss;	/* resident memory, for the timeline */
	int have_rss;
	uint64_t procs_shown;	/* --procs: rows of a process table, 0 for all */
	struct hashmap procs;	/* pid -> struct proc_stats * */
	struct stacktab brk, mmap, faults;
	struct big_map *big;	/* the top largest mappings, largest first */
	size_t nr_big;
	struct hashmap fmaps;	/* (pid, start) -> struct fault_map * */
	int have_brk, have_mmap, have_faults, have_malloc;
	/* GROUP/N: each recorded brk, mmap or fault stands for N (the
	 * largest seen per section). */
	uint64_t period_brk, period_mmap, period_faults;
	uint64_t fault_kinds[FAULT_KINDS];
	int fault_kinds_known;
	struct memops_state *mo;
	struct allocs *a;	/* the allocations the replay pairs (cmd_allocs_shared) */
	struct heapprof heap;
	/* --focus and --ignore: the stacks of the timeline by stack kept, as
	 * pprof's options keep samples; NULL where not given. */
	const char *focus, *ignore;
	regex_t focus_re, ignore_re;
};

static struct proc_stats *stats_of(struct report *r, struct session *s, const struct memop *op)
{
	struct hm_slot *slot = hashmap_u64(&r->procs, (uint32_t)op->pid, NULL);
	struct proc_stats *p;

	if (!slot)
		return NULL;
	if (!slot->ptr && (slot->ptr = calloc(1, sizeof(*p))))
		((struct proc_stats *)slot->ptr)->pid = op->pid;
	p = slot->ptr;
	if (p)
		/* The latest name: a process that exec'd shows the new one. */
		p->comm = machine_comm(&s->m, op->pid, op->pid);
	return p;
}

static void big_add(struct report *r, struct session *s, const struct memop *op)
{
	size_t i;
	struct big_map *b;

	if (r->nr_big == r->top && (!r->top || r->big[r->top - 1].len >= op->len))
		return;
	for (i = r->nr_big; i > 0 && r->big[i - 1].len < op->len; i--)
		;
	if (r->nr_big < r->top)
		r->nr_big++;
	memmove(&r->big[i + 1], &r->big[i], (r->nr_big - 1 - i) * sizeof(*r->big));
	b = &r->big[i];
	b->len = op->len;
	b->addr = op->addr;
	b->prot = op->prot;
	b->flags = op->flags;
	b->fd = op->fd;
	b->pid = op->pid;
	b->comm = machine_comm(&s->m, op->pid, op->tid);
	b->nr_frames = session_frames(s, op->stack, b->frames, 64, 0, 1);
}

static int on_op(struct session *s, const struct memop *op, void *arg)
{
	struct report *r = arg;
	struct proc_stats *p;
	uint64_t w;

	if (r->pid >= 0 && op->pid != r->pid)
		return 0;
	p = stats_of(r, s, op);
	if (!p)
		return -1;
	/* GROUP/N: a recorded event counts for N. A brk's growth runs from
	 * the break the last recorded call left, so it is counted once. */
	w = op->weight ? op->weight : 1;
	switch (op->kind) {
	case MEMOP_BRK:
		timeline_at(&r->tl, op->time)->brk_bytes += op->grow;
		r->have_brk = 1;
		r->period_brk = w > r->period_brk ? w : r->period_brk;
		p->brk_calls += w;
		p->brk_grow += op->grow;
		if (op->brk_old && op->brk_new < op->brk_old)
			p->brk_shrink += op->brk_old - op->brk_new;
		return stacktab_add(&r->brk, s, op->stack, op->grow) ? 0 : -1;
	case MEMOP_MMAP:
		r->have_mmap = 1;
		r->period_mmap = w > r->period_mmap ? w : r->period_mmap;
		if (op->failed) {
			p->map_failed += w;
			return 0;
		}
		p->mmaps += w;
		p->mmap_bytes += op->len * w;
		big_add(r, s, op);
		return stacktab_add(&r->mmap, s, op->stack, op->len * w) ? 0 : -1;
	case MEMOP_MUNMAP:
		r->have_mmap = 1;
		r->period_mmap = w > r->period_mmap ? w : r->period_mmap;
		if (op->failed) {
			p->map_failed += w;
			return 0;
		}
		p->munmaps += w;
		p->munmap_bytes += op->len * w;
		return 0;
	case MEMOP_MREMAP:
		r->have_mmap = 1;
		r->period_mmap = w > r->period_mmap ? w : r->period_mmap;
		if (op->failed) {
			p->map_failed += w;
			return 0;
		}
		p->mremaps += w;
		p->mremap_grow += op->grow * w;
		return op->grow && !stacktab_add(&r->mmap, s, op->stack, op->grow * w) ? -1 : 0;
	case MEMOP_FAULT: {
		struct hm_slot *slot;
		struct fault_map *fm;
		uint64_t key;

		r->have_faults = 1;
		r->period_faults = w > r->period_faults ? w : r->period_faults;
		p->faults += w;
		timeline_at(&r->tl, op->time)->faults += w;
		r->fault_kinds_known |= op->fault_kinds != 0;
		for (int k = 0; k < FAULT_KINDS; k++)
			r->fault_kinds[k] += (op->fault_kinds >> k & 1) * w;
		/* "//anon" is anonymous memory, whatever its leading slash. */
		if (op->map && op->map->name[0] == '/' && op->map->name[1] != '/')
			p->file += w;
		else
			p->anon += w;
		if (op->map) {
			key = (uint64_t)(uint32_t)op->pid << 40 ^ op->map->start;
			slot = hashmap_u64(&r->fmaps, key, NULL);
			if (!slot)
				return -1;
			if (!slot->ptr && (slot->ptr = calloc(1, sizeof(*fm)))) {
				fm = slot->ptr;
				fm->pid = op->pid;
				fm->start = op->map->start;
				fm->name = op->map->name;
				fm->comm = p->comm;
			}
			fm = slot->ptr;
			if (fm) {
				fm->end = op->map->end;
				fm->count += w;
			}
		}
		{
			struct stack_entry *e = stacktab_add(&r->faults, s, op->stack, w);

			return e && !stacktime_faults(&r->st, e, op->time, w) ? 0 : -1;
		}
	}
	case MEMOP_FAULT_MAJ:
		p->major += w;
		return 0;
	}
	return 0;
}

static int on_alloc(struct session *s, const struct alloc_event *ev, void *arg)
{
	struct report *r = arg;
	int ret;

	if (r->pid >= 0 && ev->pid != r->pid)
		return 0;
	ret = heapprof_event(&r->heap, s, ev);
	if (!ret && ev->rec) {
		timeline_heap(&r->tl, ev->time, r->heap.cur);
		ret = stacktime_block(&r->st, ev->rec->stack, ev->rec->time, ev->kind == ALLOC_FREED ? ev->time : 0,
				      alloc_rec_bytes(ev->rec), alloc_rec_count(ev->rec), ev->kind == ALLOC_FREED);
		if (!ret && ev->kind == ALLOC_NEW)
			ret = stacktime_block(&r->sizes, (const void *)(uintptr_t)(heapprof_size_class(ev->rec->size) + 1),
					      ev->rec->time, 0, alloc_rec_bytes(ev->rec), alloc_rec_count(ev->rec), 0);
		/* Counted where the allocation was made: a window's temporary
		 * allocations are among those it made. */
		if (!ret && r->heap.was_temporary)
			ret = stacktime_temporary(&r->st, ev->rec->stack, ev->rec->time, 1) ||
			      stacktime_temporary(&r->sizes, (const void *)(uintptr_t)(heapprof_size_class(ev->rec->size) + 1),
						  ev->rec->time, 1);
	}
	return ret;
}

/* The memory operations and resident memory; the allocations are paired
 * for every view of the replay (cmd_allocs_shared), on_alloc told of each. */
static int on_sample(struct session *s, struct sample *smp, void *arg)
{
	struct report *r = arg;
	int ret = memops_sample(r->mo, smp);
	struct rss_mm *mm = NULL;

	if (!ret && smp->ev->kind == EVK_RSS_STAT && (r->pid < 0 || smp->pid == r->pid)) {
		ret = rssstat_sample(&r->rss, s, smp, &mm);
		if (!ret && mm) {
			r->have_rss = 1;
			timeline_rss(&r->tl, smp->time, r->rss.total > 0 ? (uint64_t)r->rss.total : 0);
		}
	}
	return ret;
}

/* The blocks still held at the end, made where they were. */
static int stacktime_held(struct report *r)
{
	hashmap_for_each(&r->a->procs, p) {
		hashmap_for_each((struct hashmap *)p->ptr, rs) {
			const struct alloc_rec *a = rs->ptr;

			if (r->pid >= 0 && a->pid != r->pid)
				continue;
			if (stacktime_block(&r->st, a->stack, a->time, 0, alloc_rec_bytes(a), alloc_rec_count(a), 1))
				return -1;
		}
	}
	return stacktime_finish(&r->st) || stacktime_finish(&r->sizes) ? -1 : 0;
}

/* A row of a process table, with what ranks it in its section. */
struct proc_row {
	uint64_t weight;
	int pid;
	const void *p;		/* struct proc_stats or struct heap_proc */
};

static int row_pid_cmp(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static int row_weight_cmp(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return row_pid_cmp(a, b);
}

/* Order the n rows of a table and return how many to show: all, by pid,
 * when they fit in the limit; else the heaviest, heaviest first. A whole
 * box runs thousands of processes, and a table of each is no report. */
static size_t rows_pick(struct proc_row *v, size_t n, uint64_t limit)
{
	if (!limit || n <= limit) {
		qsort(v, n, sizeof(*v), row_pid_cmp);
		return n;
	}
	qsort(v, n, sizeof(*v), row_weight_cmp);
	return limit;
}

/* The "(N more)" that heads a table's row of the processes left out. */
static const char *rows_rest(size_t n, char *buf, size_t len)
{
	snprintf(buf, len, "(%zu more)", n);
	return buf;
}

static int site_cmp(const void *a, const void *b)
{
	const struct heap_site *x = *(struct heap_site *const *)a, *y = *(struct heap_site *const *)b;

	if (x->at_peak != y->at_peak)
		return x->at_peak > y->at_peak ? -1 : 1;
	/* Ties in the order the stacks were first seen: the same every run. */
	if (!x->stack || !y->stack)
		return !x->stack - !y->stack;
	return (x->stack->seq > y->stack->seq) - (x->stack->seq < y->stack->seq);
}

/* The malloc section: per process the calls, bytes, frees, temporary
 * allocations, peak heap and when, and what was left; the sites that
 * allocated most and those that held most at the peak. */

/* The n heaviest stacks of t, each under its line of weight and calls
 * (count_order: counted events only) and who ran it. */
static void print_top(const struct report *r, struct stacktab *t, int count_order, const char *unit)
{
	size_t k;
	struct stack_entry **v = stacktab_sorted(t, count_order, &k);
	char who[512];

	if (!v)
		return;
	for (size_t i = 0; i < k && i < r->top; i++) {
		if (!count_order && !v[i]->weight)
			break;
		if (count_order)
			printf("  %llu %s from stack (%s)\n", (unsigned long long)v[i]->count, unit,
			       stack_entry_who(v[i], who, sizeof(who)));
		else
			printf("  %llu %s in %llu call%s from stack (%s)\n", (unsigned long long)v[i]->weight, unit,
			       (unsigned long long)v[i]->count, cmd_s(v[i]->count), stack_entry_who(v[i], who, sizeof(who)));
		print_stack(v[i], r->lines, "      ");
	}
	free(v);
}
/* Temporary allocations are counted only where every allocation and
 * free was recorded: which free follows which allocation is not in a
 * sample. */
static int temporary_known(const struct report *r)
{
	return r->a->sample <= 1 && !r->a->rate;
}

/* A TEMPORARY cell: exact, or "-" where the recording was sampled. */
static const char *temporary_text(const struct report *r, uint64_t n, char *b, size_t len)
{
	if (!temporary_known(r))
		return "-";
	snprintf(b, len, "%llu", (unsigned long long)n);
	return b;
}

static void print_malloc(struct report *r, struct session *s)
{
	struct heapprof *h = &r->heap;
	struct proc_row *pv = malloc((h->procs.nr ? h->procs.nr : 1) * sizeof(*pv));
	struct heap_site **sv = malloc((h->sites.nr ? h->sites.nr : 1) * sizeof(*sv));
	uint64_t k = r->a->sample;
	const char *est = k > 1 || r->a->rate ? "~" : "";
	size_t np = 0, ns = 0, shown;
	char a[32], b[32], more[32], t[32];
	struct heap_proc rest = { 0 };

	if (!pv || !sv)
		goto out;
	printf("\n== malloc: allocations ==\n\n");
	if (k > 1)
		printf("(sampled recording, -s %llu: figures are estimates, scaled by %llu)\n\n", (unsigned long long)k,
		       (unsigned long long)k);
	if (r->a->rate)
		printf("(sampled recording: the sampler kept one allocation in about %s; figures are estimates)\n\n",
		       fmt_bytes(r->a->rate, a, sizeof(a)));
	if (k > 1 || r->a->rate)
		printf("(temporary allocations are not estimated: which free follows which allocation is not in a "
		       "sample)\n\n");
	printf("%8s %-16s %9s %14s %9s %10s %12s %10s %12s\n", "PID", "COMM", "CALLS", "ALLOCATED", "FREES", "TEMPORARY",
	       "PEAK HEAP", "AT", "AT END");
	hashmap_for_each(&h->procs, slot) {
		const struct heap_proc *p = slot->ptr;

		pv[np++] = (struct proc_row){ p->peak, p->pid, p };
	}
	shown = rows_pick(pv, np, r->procs_shown);
	for (size_t i = 0; i < np; i++) {
		const struct heap_proc *p = pv[i].p;

		if (i >= shown) {
			rest.calls += p->calls;
			rest.bytes += p->bytes;
			rest.frees += p->frees;
			rest.temporary += p->temporary;
			rest.cur += p->cur;
			continue;
		}
		printf("%8d %-16s %s%8llu %s%13llu %s%8llu %10s %s%11s %+9.3fs %s%11s\n", p->pid, p->comm, est,
		       (unsigned long long)(p->calls * k), est, (unsigned long long)(p->bytes * k), est,
		       (unsigned long long)(p->frees * k), temporary_text(r, p->temporary, t, sizeof(t)), est,
		       fmt_bytes(p->peak * k, a, sizeof(a)), p->peak_time > s->first_time ? (p->peak_time - s->first_time) / 1e9 : 0.0,
		       est, fmt_bytes(p->cur * k, b, sizeof(b)));
	}
	/* Their peaks fell at different times: no sum of them is a peak. */
	if (shown < np)
		printf("%8s %-16s %s%8llu %s%13llu %s%8llu %10s %s%11s %10s %s%11s\n", "-",
		       rows_rest(np - shown, more, sizeof(more)), est, (unsigned long long)(rest.calls * k), est,
		       (unsigned long long)(rest.bytes * k), est, (unsigned long long)(rest.frees * k),
		       temporary_text(r, rest.temporary, t, sizeof(t)), est, "-", "-", est, fmt_bytes(rest.cur * k, b, sizeof(b)));
	printf("\ntop stacks by bytes allocated:\n");
	print_top(r, &r->a->stacks, 0, "bytes");
	hashmap_for_each(&h->sites, slot) if (((struct heap_site *)slot->ptr)->at_peak) sv[ns++] = slot->ptr;
	if (ns > 1)
		qsort(sv, ns, sizeof(*sv), site_cmp);
	printf("\ntop stacks by bytes held at the peak (%s%llu bytes, %s, at +%.3fs):\n", est,
	       (unsigned long long)(h->peak * k), fmt_bytes(h->peak * k, a, sizeof(a)),
	       h->peak_time > s->first_time ? (h->peak_time - s->first_time) / 1e9 : 0.0);
	for (size_t i = 0; i < ns && i < r->top; i++) {
		printf("  %s%llu bytes from stack (pid %d %s)\n", est, (unsigned long long)(sv[i]->at_peak * k),
		       sv[i]->stack->pid, sv[i]->stack->comm);
		print_stack(sv[i]->stack, r->lines, "      ");
	}
out:
	free(pv);
	free(sv);
}

static int fmap_cmp(const void *a, const void *b)
{
	const struct fault_map *x = *(struct fault_map *const *)a, *y = *(struct fault_map *const *)b;

	return x->count != y->count ? (x->count > y->count ? -1 : 1) : x->start > y->start;
}

static int fmap_addr_cmp(const void *a, const void *b)
{
	const struct fault_map *x = *(struct fault_map *const *)a, *y = *(struct fault_map *const *)b;

	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The kernel merges an anonymous mapping into its neighbour and reports
 * the merged range, so the faults of one mapping can sit under several
 * starts, overlapping: they are one mapping. Returns the number left. */
static size_t fmaps_coalesce(struct fault_map **fm, size_t n)
{
	size_t out = 0;

	if (n > 1)
		qsort(fm, n, sizeof(*fm), fmap_addr_cmp);
	for (size_t i = 0; i < n; i++) {
		struct fault_map *prev = out ? fm[out - 1] : NULL;

		if (prev && prev->pid == fm[i]->pid && fm[i]->start < prev->end) {
			if (fm[i]->end > prev->end) {
				prev->end = fm[i]->end;
				prev->name = fm[i]->name;
			}
			prev->count += fm[i]->count;
			continue;
		}
		fm[out++] = fm[i];
	}
	return out;
}

static void prot_str(uint64_t prot, uint64_t flags, char *out)
{
	out[0] = prot & PROT_READ ? 'r' : '-';
	out[1] = prot & PROT_WRITE ? 'w' : '-';
	out[2] = prot & PROT_EXEC ? 'x' : '-';
	out[3] = flags & MAP_SHARED ? 's' : 'p';
	out[4] = 0;
}

/* The process tables of the brk, mmap and faults sections. */
enum section { SEC_BRK, SEC_MMAP, SEC_FAULTS };

/* A process's row of sec, under the pid and name given. */
static void section_row(enum section sec, const char *pid, const char *comm, const struct proc_stats *p,
			const struct session *s)
{
	char a[32];

	if (sec == SEC_BRK)
		printf("%8s %-16s %8llu %14llu %12llu  (%s)\n", pid, comm, (unsigned long long)p->brk_calls,
		       (unsigned long long)p->brk_grow, (unsigned long long)p->brk_shrink,
		       fmt_bytes(p->brk_grow, a, sizeof(a)));
	else if (sec == SEC_MMAP)
		printf("%8s %-16s %7llu %14llu %8llu %14llu %8llu %14llu %7llu\n", pid, comm,
		       (unsigned long long)p->mmaps, (unsigned long long)p->mmap_bytes,
		       (unsigned long long)p->munmaps, (unsigned long long)p->munmap_bytes,
		       (unsigned long long)p->mremaps, (unsigned long long)p->mremap_grow,
		       (unsigned long long)p->map_failed);
	else
		printf("%8s %-16s %10llu %8llu %10llu %10llu %12s\n", pid, comm, (unsigned long long)p->faults,
		       (unsigned long long)p->major, (unsigned long long)p->anon, (unsigned long long)p->file,
		       fmt_bytes(p->faults * s->page_size, a, sizeof(a)));
}

/* Sec's table: its processes (rows_pick), then one row summing those
 * left out. rows has room for every process. */
static void section_table(struct report *r, enum section sec, struct proc_row *rows, const struct session *s)
{
	struct proc_stats rest = { 0 };
	size_t n = 0, shown;
	char pid[16];

	hashmap_for_each(&r->procs, slot) {
		const struct proc_stats *p = slot->ptr;
		uint64_t w = sec == SEC_BRK ? p->brk_grow : sec == SEC_MMAP ? p->mmap_bytes : p->faults;
		int in = sec == SEC_BRK	   ? p->brk_calls != 0
			 : sec == SEC_MMAP ? (p->mmaps || p->munmaps || p->mremaps || p->map_failed)
					   : p->faults != 0;

		if (in)
			rows[n++] = (struct proc_row){ w, p->pid, p };
	}
	shown = rows_pick(rows, n, r->procs_shown);
	for (size_t i = 0; i < n; i++) {
		const struct proc_stats *p = rows[i].p;

		if (i < shown) {
			snprintf(pid, sizeof(pid), "%d", p->pid);
			section_row(sec, pid, p->comm, p, s);
			continue;
		}
		rest.brk_calls += p->brk_calls;
		rest.brk_grow += p->brk_grow;
		rest.brk_shrink += p->brk_shrink;
		rest.mmaps += p->mmaps;
		rest.mmap_bytes += p->mmap_bytes;
		rest.munmaps += p->munmaps;
		rest.munmap_bytes += p->munmap_bytes;
		rest.mremaps += p->mremaps;
		rest.mremap_grow += p->mremap_grow;
		rest.map_failed += p->map_failed;
		rest.faults += p->faults;
		rest.major += p->major;
		rest.anon += p->anon;
		rest.file += p->file;
	}
	if (shown < n) {
		char more[32];

		section_row(sec, "-", rows_rest(n - shown, more, sizeof(more)), &rest, s);
	}
}

/* One process of a cgroup, for the report's cgroups section. */
struct cg_proc {
	const char *cgroup;
	int pid;
};

static int cg_proc_cmp(const void *a, const void *b)
{
	const struct cg_proc *x = a, *y = b;
	int c = strcmp(x->cgroup, y->cgroup);

	return c ? c : (x->pid > y->pid) - (x->pid < y->pid);
}

/* The processes of a system-wide recording by the cgroup their samples
 * came from (a container's, for most of them), with their pid inside
 * their namespace where it is not the host's. */
static void print_cgroups(struct session *s)
{
	struct cg_proc *v = malloc((s->proc_cgroup.nr ? s->proc_cgroup.nr : 1) * sizeof(*v));
	size_t n = 0, k;
	char id[16], root[512];

	if (!v || !s->proc_cgroup.nr) {
		free(v);
		return;
	}
	hashmap_for_each(&s->proc_cgroup, slot) {
		const char *c = session_cgroup_path(s, slot->val);

		if (c && (int)slot->key != s->recorder_pid)
			v[n++] = (struct cg_proc){ c, (int)slot->key };
	}
	qsort(v, n, sizeof(*v), cg_proc_cmp);
	printf("\n== cgroups: the processes' cgroups (under %s) ==\n",
	       session_host(s, "cgroup_root", root, sizeof(root), "the cgroup root"));
	for (size_t i = 0; i < n; i = k) {
		for (k = i; k < n && v[k].cgroup == v[i].cgroup; k++)
			;
		printf("\n%s", v[i].cgroup);
		if (session_container_id(v[i].cgroup, id, sizeof(id)))
			printf(" (container %s)", id);
		printf(": %zu process%s\n ", k - i, k - i == 1 ? "" : "es");
		for (size_t j = i; j < k && j < i + 20; j++) {
			int ns = session_nspid(s, v[j].pid);

			printf(" %d", v[j].pid);
			if (ns)
				printf(" (%d inside)", ns);
			printf(" %s%s", machine_comm(&s->m, v[j].pid, v[j].pid), j + 1 < k && j + 1 < i + 20 ? "," : "");
		}
		printf("%s\n", k - i > 20 ? " ..." : "");
	}
	free(v);
}

/* A section of a GROUP/N recording says its figures are estimates, as
 * faults and brk say it. */
static void report_estimate(const char *what, const char *group, uint64_t period)
{
	if (period > 1)
		printf("ESTIMATE: one %s in %llu was recorded (-e %s/%llu); each counts for %llu\n\n", what,
		       (unsigned long long)period, group, (unsigned long long)period, (unsigned long long)period);
}

static void print_report(struct report *r, struct session *s)
{
	struct proc_row *rows = malloc((r->procs.nr ? r->procs.nr : 1) * sizeof(*rows));
	char a[32], b[32], hb[256];

	if (!rows)
		return;

	printf("# memsight report of '%s'\n", s->path);
	printf("# recorded by: %s\n", session_host(s, "command", hb, sizeof(hb), "?"));
	s->loss_said = 1;
	/* The recording's own length: its samples may span less of it, or
	 * none. A window of a ring is as long as its samples. */
	{
		long long rec = s->r.file_flags & (TRACE_FILE_RING | TRACE_FILE_WINDOW) ? -1
											   : session_stat(s, "duration_ns", -1);
		double span = s->last_time > s->first_time ? (s->last_time - s->first_time) / 1e9 : 0.0;

		printf("# %llu sample%s in %.3f s%s, %llu lost\n", (unsigned long long)s->nr_samples,
		       s->nr_samples == 1 ? "" : "s", rec >= 0 ? rec / 1e9 : span,
		       rec >= 0 ? " of recording" : " of samples",
		       (unsigned long long)session_lost(s));
	}

	if (r->have_brk) {
		printf("\n== brk: heap growth ==\n\n");
		report_estimate("brk call", "brk", r->period_brk);
		printf("%8s %-16s %8s %14s %12s\n", "PID", "COMM", "CALLS", "GROWTH", "SHRINK");
		section_table(r, SEC_BRK, rows, s);
		printf("\ntop stacks by heap growth:\n");
		print_top(r, &r->brk, 0, "bytes");
	}
	if (r->have_mmap) {
		printf("\n== mmap: mappings ==\n\n");
		report_estimate("mapping call", "mmap", r->period_mmap);
		printf("%8s %-16s %7s %14s %8s %14s %8s %14s %7s\n", "PID", "COMM", "MMAPS", "MAPPED", "MUNMAPS",
		       "UNMAPPED", "MREMAPS", "REMAP GROWTH", "FAILED");
		section_table(r, SEC_MMAP, rows, s);
		printf("\nlargest mappings:\n");
		for (size_t i = 0; i < r->nr_big; i++) {
			struct big_map *m = &r->big[i];
			char perm[8];

			prot_str(m->prot, m->flags, perm);
			printf("  %llu bytes (%s) at 0x%llx %s %s (pid %d %s)\n", (unsigned long long)m->len,
			       fmt_bytes(m->len, a, sizeof(a)), (unsigned long long)m->addr, perm,
			       m->flags & MAP_ANONYMOUS ? "anonymous" : "file", m->pid, m->comm);
			if (m->nr_frames)
				print_frames(m->frames, m->nr_frames, r->lines, "      ");
		}
		printf("\ntop stacks by bytes mapped:\n");
		print_top(r, &r->mmap, 0, "bytes");
	}
	if (r->have_faults) {
		struct fault_map **fm = malloc((r->fmaps.nr ? r->fmaps.nr : 1) * sizeof(*fm));
		size_t nf = 0;

		printf("\n== faults: page faults ==\n\n");
		report_estimate("fault", "faults", r->period_faults);
		printf("%8s %-16s %10s %8s %10s %10s %12s\n", "PID", "COMM", "FAULTS", "MAJOR", "ANON", "FILE", "MEMORY");
		section_table(r, SEC_FAULTS, rows, s);
		if (r->fault_kinds_known) {
			static const char *const what[FAULT_KINDS] = {
				[FAULT_READ] = "reads",
				[FAULT_WRITE] = "writes",
				[FAULT_EXEC] = "instruction fetches",
				[FAULT_COW] = "writes to present pages: copy-on-write after fork, or read-only memory",
				[FAULT_KERNEL] = "by the kernel on user memory: read(), recv(), copy_to_user",
			};

			printf("\nby kind (read, write and exec add up to the faults; cow and kernel are among them):\n");
			for (int k = 0; k < FAULT_KINDS; k++)
				printf("  %10llu %-7s %s\n", (unsigned long long)r->fault_kinds[k], fault_kind_names[k],
				       what[k]);
		}
		printf("\ntop stacks by faults:\n");
		print_top(r, &r->faults, 1, "faults");
		if (fm) {
			hashmap_for_each(&r->fmaps, slot) fm[nf++] = slot->ptr;
			nf = fmaps_coalesce(fm, nf);
			if (nf > 1)
				qsort(fm, nf, sizeof(*fm), fmap_cmp);
			printf("\ntop mappings by faults:\n");
			for (size_t i = 0; i < nf && i < r->top; i++)
				printf("  %10llu faults  0x%llx-0x%llx %s (%s) (pid %d %s)\n", (unsigned long long)fm[i]->count,
				       (unsigned long long)fm[i]->start, (unsigned long long)fm[i]->end, fm[i]->name,
				       fmt_bytes(fm[i]->end - fm[i]->start, b, sizeof(b)), fm[i]->pid, fm[i]->comm);
			free(fm);
		}
	}
	if (r->have_malloc)
		print_malloc(r, s);
	print_cgroups(s);
	if (!r->have_brk && !r->have_mmap && !r->have_faults && !r->have_malloc)
		printf("\nno brk, mmap, page fault or allocation events%s\n", r->pid >= 0 ? " for this pid" : "");
	free(rows);
}

/* --json: a section's heaviest stacks, as the text lists them. */
static void json_stacks(struct json *j, const char *key, struct stacktab *t, size_t top, int lines, int by_count,
			const char *weight_key, uint64_t count_scale, const char *count_key)
{
	size_t n = 0;
	struct stack_entry **v = stacktab_sorted(t, by_count, &n);

	json_begin_array(j, key);
	for (size_t i = 0; v && i < n && i < top; i++) {
		json_begin(j, NULL);
		json_str(j, "comm", v[i]->comm);
		if (v[i]->procs > 1)
			json_null(j, "pid");
		else
			json_i64(j, "pid", v[i]->pid);
		json_u64(j, "processes", v[i]->procs);
		if (weight_key)
			json_u64(j, weight_key, v[i]->weight);
		if (count_key)
			json_u64(j, count_key, v[i]->count * count_scale);
		cmd_json_stack(j, "frames", v[i], lines);
		json_end(j);
	}
	json_end(j);
	free(v);
}

static void json_section_head(struct json *j, const char *key, uint64_t period)
{
	json_begin(j, key);
	json_bool(j, "estimate", period > 1);
	json_u64(j, "period", period ? period : 1);
}

/* The figures over time: per bucket, the faults and brk growth in it (as
 * the sections count them, GROUP/N scaled), the most malloc's blocks held
 * (null without malloc) and the most the recorded processes had resident
 * (null without rss). */
static void timeline_json(struct json *j, const struct report *r, const struct session *s)
{
	const struct timeline *t = &r->tl;
	uint64_t k = r->a->sample ? r->a->sample : 1;

	json_begin(j, "timeline");
	json_double(j, "start_s", "%.6f", t->t0 > s->first_time ? (t->t0 - s->first_time) / 1e9 : 0.0);
	json_double(j, "bucket_s", "%.6f", t->width / 1e9);
	json_begin_array(j, "faults");
	for (size_t i = 0; i < t->n; i++)
		json_u64(j, NULL, t->v[i].faults);
	json_end(j);
	json_begin_array(j, "brk_bytes");
	for (size_t i = 0; i < t->n; i++)
		json_u64(j, NULL, t->v[i].brk_bytes);
	json_end(j);
	if (r->have_malloc) {
		json_begin_array(j, "heap_bytes");
		for (size_t i = 0; i < t->n; i++)
			json_u64(j, NULL, t->v[i].heap.max * k);
		json_end(j);
	} else {
		json_null(j, "heap_bytes");
	}
	if (r->have_rss) {
		json_begin_array(j, "rss_bytes");
		for (size_t i = 0; i < t->n; i++)
			json_u64(j, NULL, t->v[i].rss.max);
		json_end(j);
	} else {
		json_null(j, "rss_bytes");
	}
	json_end(j);
}

/* The stacks the page's trees and time window are drawn from, each
 * with its cells; the rest summed into one. Bounded for a page: at most
 * STACK_TIMELINE_STACKS stacks, and buckets merged in pairs until the
 * cells are at most STACK_TIMELINE_CELLS. */
#define STACK_TIMELINE_STACKS 300
#define STACK_TIMELINE_CELLS 60000

struct st_rank {
	const struct stacktime_stack *x;
	double score;
	int suppressed;		/* what it holds at the end leaks suppresses */
};

static const struct stack_entry *stack_of_rank(const struct st_rank *r)
{
	return r->x->key;
}

static int st_rank_cmp(const void *a, const void *b)
{
	const struct st_rank *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return (stack_of_rank(x)->seq > stack_of_rank(y)->seq) - (stack_of_rank(x)->seq < stack_of_rank(y)->seq);
}

/* Distinct cells of the chosen stacks with buckets shifted right by shift
 * (the rest count as one stack). */
static size_t st_cells_at(const struct st_rank *v, size_t n, size_t shown, int shift)
{
	struct hashmap seen;
	size_t total = 0;

	hashmap_init(&seen, 0);
	for (size_t i = 0; i < n; i++) {
		hashmap_for_each(&v[i].x->cells, cs) {
			const struct stacktime_cell *c = cs->ptr;
			uint32_t from, to;
			uint64_t key;
			int created = 0;

			if (!stacktime_cell_shifted(c, shift, &from, &to))
				continue;
			/* Buckets are fewer than TIMELINE_MAX: 10 bits each. */
			key = (uint64_t)c->kind << 62 | (uint64_t)(i < shown ? i : shown) << 20 | (uint64_t)from << 10 |
			      (to == STACKTIME_HELD ? 1023 : to);
			if (!hashmap_u64(&seen, key, &created))
				break;
			total += created;
		}
	}
	hashmap_release(&seen);
	return total;
}

/* One stack's cells (or the sum of v's), in buckets >> shift, by kind:
 * "made": [bucket, bytes, allocations], "live": [made in, freed in or
 * null, bytes, allocations], "faults": [bucket, faults], "temporary":
 * [bucket, allocations] (null where they are not known). */
static void st_cells_json(struct json *j, const struct st_rank *v, size_t n, int shift, uint64_t k, int temp)
{
	static const char *const keys[] = { "made", "live", "faults", "temporary" };
	struct hashmap sum;

	hashmap_init(&sum, 0);
	for (size_t i = 0; i < n; i++) {
		hashmap_for_each(&v[i].x->cells, cs) {
			const struct stacktime_cell *c = cs->ptr;
			struct stacktime_cell *t;
			struct hm_slot *slot;
			uint32_t from, to;

			if (!stacktime_cell_shifted(c, shift, &from, &to) || (c->kind == STACKTIME_LIVE && v[i].suppressed))
				continue;
			if (!(slot = hashmap_u64(&sum, (uint64_t)c->kind << 62 | (uint64_t)from << 31 | to, NULL)) || (!slot->ptr && !(slot->ptr = calloc(1, sizeof(*t)))))
				continue;
			t = slot->ptr;
			*t = (struct stacktime_cell){ c->kind, from, to, t->bytes + c->bytes, t->count + c->count };
		}
	}
	for (int kind = STACKTIME_MADE; kind <= STACKTIME_TEMP; kind++) {
		if (kind == STACKTIME_TEMP && !temp) {
			json_null(j, keys[kind]);
			continue;
		}
		json_begin_array(j, keys[kind]);
		hashmap_for_each(&sum, cs) {
			const struct stacktime_cell *c = cs->ptr;

			if ((int)c->kind != kind)
				continue;
			json_begin_array(j, NULL);
			json_u64(j, NULL, c->from);
			if (kind == STACKTIME_LIVE) {
				if (c->to == STACKTIME_HELD)
					json_null(j, NULL);
				else
					json_u64(j, NULL, c->to);
			}
			if (kind != STACKTIME_FAULTS && kind != STACKTIME_TEMP)
				json_u64(j, NULL, c->bytes * k);
			json_u64(j, NULL, c->count * (kind == STACKTIME_FAULTS || kind == STACKTIME_TEMP ? 1 : k));
			json_end(j);
		}
		json_end(j);
	}
	hashmap_for_each(&sum, cs) free(cs->ptr);
	hashmap_release(&sum);
}

/* A frame's name as the page shows it: the function, or [object]. */
static const char *frame_page_name(const struct frame *f, char *buf, size_t len)
{
	if (f->sym)
		return f->sym;
	snprintf(buf, len, "[%s]", frame_obj_base(f) ? frame_obj_base(f) : "unknown");
	return buf;
}

/* Whether any of the n frames' names matches re. */
static int frames_match(const regex_t *re, const struct frame *fr, int n)
{
	char buf[300];

	for (int i = 0; i < n; i++)
		if (!regexec(re, frame_page_name(&fr[i], buf, sizeof(buf)), 0, NULL, 0))
			return 1;
	return 0;
}

/* Whether --focus and --ignore keep the n frames. */
static int frames_kept(const struct report *r, const struct frame *fr, int n)
{
	return (!r->focus || frames_match(&r->focus_re, fr, n)) && (!r->ignore || !frames_match(&r->ignore_re, fr, n));
}

/* A stack for the page: its frames' names (the function, or [object]),
 * innermost first, as indices into names, each name once. */
struct name_table {
	struct hashmap index;	/* name -> its index + 1 */
	const char **v;
	size_t n, alloc;
};

/* name's index in t, added where it is new; -1 when out of memory. */
static long name_intern(struct name_table *t, const char *name)
{
	struct hm_slot *slot;
	int created = 0;

	/* Room for a new name first: a name in the index has its place. */
	if (t->n == t->alloc) {
		const char **v = realloc(t->v, (t->alloc ? 2 * t->alloc : 256) * sizeof(*v));

		if (!v)
			return -1;
		t->v = v;
		t->alloc = t->alloc ? 2 * t->alloc : 256;
	}
	if (!(slot = hashmap_str(&t->index, name, &created)))
		return -1;
	if (created) {
		t->v[t->n++] = slot->skey;
		slot->val = t->n;
	}
	return (long)slot->val - 1;
}

static void compact_frames_json(struct json *j, struct name_table *t, const struct stack_entry *e)
{
	struct frame fr[STACK_MAX_FRAMES];
	int n = stack_entry_frames(e, fr, STACK_MAX_FRAMES);

	json_begin_array(j, "f");
	for (int i = 0; i < n; i++) {
		char obj[300];
		long at = name_intern(t, frame_page_name(&fr[i], obj, sizeof(obj)));

		if (at < 0)
			break;
		json_u64(j, NULL, (uint64_t)at);
	}
	json_end(j);
}

/* The page's table by function, for the whole recording: what each
 * function's stacks weigh (all of them, not only those the timeline
 * shows), in the columns of the trees. */
enum { FN_PEAK, FN_LEAKED, FN_ALLOCATED, FN_CALLS, FN_TEMPORARY, FN_FAULTS, FN_COLS };
struct fn_row {
	long name;		/* in the name table */
	uint64_t self[FN_COLS], total[FN_COLS];
	uint64_t seen;		/* the last stack it was counted for, + 1 */
};

static int fn_row_cmp(const void *a, const void *b, void *arg)
{
	const struct fn_row *x = *(struct fn_row *const *)a, *y = *(struct fn_row *const *)b;
	const double *sum = arg;
	double sx = 0, sy = 0;

	for (int c = 0; c < FN_COLS; c++) {
		if (!sum[c])
			continue;
		sx = x->total[c] / sum[c] > sx ? x->total[c] / sum[c] : sx;
		sy = y->total[c] / sum[c] > sy ? y->total[c] / sum[c] : sy;
	}
	return sx != sy ? (sx < sy ? 1 : -1) : (x->name > y->name) - (x->name < y->name);
}

/* "functions": [name, self x6, total x6] for the FN_MAX heaviest (by their
 * largest share of a column), from the n ranked stacks. */
#define FN_MAX 300
static void functions_json(struct json *j, const struct report *r, struct name_table *names, const struct st_rank *v,
			   size_t n, uint64_t k)
{
	struct hashmap by;
	struct frame fr[STACK_MAX_FRAMES];
	double sum[FN_COLS] = { 0 };
	struct fn_row **rows;
	size_t nr = 0;

	hashmap_init(&by, 0);
	for (size_t i = 0; i < n; i++) {
		const struct stacktime_stack *x = v[i].x;
		struct hm_slot *hs = hashmap_u64_find(&r->heap.sites, (uint64_t)(uintptr_t)x->key);
		uint64_t w[FN_COLS] = {
			[FN_PEAK] = hs ? ((const struct heap_site *)hs->ptr)->at_peak * k : 0,
			[FN_LEAKED] = v[i].suppressed ? 0 : x->held_bytes * k,
			[FN_ALLOCATED] = x->made_bytes * k,
			[FN_CALLS] = x->made_count * k,
			[FN_TEMPORARY] = x->temporary,
			[FN_FAULTS] = x->faults,
		};
		int nf = stack_entry_frames(x->key, fr, STACK_MAX_FRAMES), self = 0;

		/* A block is its asker's, as the trees have it: the allocation
		 * functions at the top of its stack left out. */
		while (x->made_count && self + 1 < nf && fr[self].sym && alloc_fn_is_entry(fr[self].sym))
			self++;
		for (int f = self; f < nf; f++) {
			char obj[300];
			long at = name_intern(names, frame_page_name(&fr[f], obj, sizeof(obj)));
			struct fn_row *row = at < 0 ? NULL : hashmap_u64_obj(&by, (uint64_t)at, sizeof(*row));

			if (!row)
				continue;
			row->name = at;
			for (int c = 0; c < FN_COLS; c++) {
				if (f == self)
					row->self[c] += w[c];
				if (row->seen != i + 1)
					row->total[c] += w[c];
			}
			row->seen = i + 1;
		}
		for (int c = 0; c < FN_COLS; c++)
			sum[c] += w[c];
	}
	rows = malloc((by.nr ? by.nr : 1) * sizeof(*rows));
	json_begin_array(j, "functions");
	if (rows) {
		hashmap_for_each(&by, slot) rows[nr++] = slot->ptr;
		qsort_r(rows, nr, sizeof(*rows), fn_row_cmp, sum);
		for (size_t i = 0; i < nr && i < FN_MAX; i++) {
			json_begin_array(j, NULL);
			json_u64(j, NULL, (uint64_t)rows[i]->name);
			for (int c = 0; c < FN_COLS; c++)
				json_u64(j, NULL, rows[i]->self[c]);
			for (int c = 0; c < FN_COLS; c++)
				json_u64(j, NULL, rows[i]->total[c]);
			json_end(j);
		}
	}
	json_end(j);
	json_u64(j, "functions_total", nr);
	free(rows);
	hashmap_for_each(&by, slot) free(slot->ptr);
	hashmap_release(&by);
}

/* By stack over time: what the page's trees sum for any window of
 * buckets, as leaks --time and faults --time count it. What the stacks
 * leaks suppresses by default hold at the end is left out, as leaks
 * leaves it out; their allocations count. --focus and --ignore choose the
 * stacks. */
static void stack_timeline_json(struct json *j, const struct report *r, struct session *s, int page)
{
	struct name_table names = { .n = 0 };
	const struct stacktime *st = &r->st;
	uint64_t k = r->a->sample ? r->a->sample : 1, tot[3] = { 0 };
	struct st_rank *v = malloc((st->stacks.nr ? st->stacks.nr : 1) * sizeof(*v));
	struct frame fr[STACK_MAX_FRAMES];
	struct suppress sup;
	char err[256];
	size_t n = 0, shown, left_out = 0, filtered = 0;
	int shift = 0;

	hashmap_init(&names.index, 1);
	if (!v || suppress_setup(&sup, 1, NULL, err, sizeof(err))) {
		free(v);
		hashmap_release(&names.index);
		json_null(j, "stack_timeline");
		return;
	}
	hashmap_for_each(&st->stacks, slot) {
		const struct stacktime_stack *x = slot->ptr;
		int nf = stack_entry_frames(x->key, fr, STACK_MAX_FRAMES);
		int sup_hit = x->made_count && suppress_match(&sup, fr, nf);

		/* The frames as the page names them, the allocation functions
		 * included: a pattern matches what the stack holds. */
		if (!frames_kept(r, fr, nf)) {
			filtered++;
			continue;
		}
		/* libc's one-time allocations count as allocated, but what
		 * they hold is no leak, as leaks has it: their blocks held
		 * across buckets are left out. */
		left_out += sup_hit;
		v[n++] = (struct st_rank){ x, 0, sup_hit };
		if (!sup_hit)
			tot[0] += x->spanning_bytes;
		tot[1] += x->made_bytes;
		tot[2] += x->faults;
	}
	suppress_release(&sup);
	/* A stack counts by its largest share of what can leak in a window,
	 * of what was allocated, or of the faults. */
	for (size_t i = 0; i < n; i++) {
		const struct stacktime_stack *x = v[i].x;
		double a = tot[0] ? (double)x->spanning_bytes / tot[0] : 0, b = tot[1] ? (double)x->made_bytes / tot[1] : 0,
		       c = tot[2] ? (double)x->faults / tot[2] : 0;

		if (v[i].suppressed)
			a = 0;
		v[i].score = a > b ? (a > c ? a : c) : (b > c ? b : c);
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), st_rank_cmp);
	shown = n < STACK_TIMELINE_STACKS ? n : STACK_TIMELINE_STACKS;
	while (shift < 20 && r->tl.width <= UINT64_MAX >> (shift + 1) && st_cells_at(v, n, shown, shift) > STACK_TIMELINE_CELLS)
		shift++;
	json_begin(j, "stack_timeline");
	/* In ns, whole: a window of buckets is then a --time to the ns. */
	json_u64(j, "start_ns", r->tl.t0 > s->first_time ? r->tl.t0 - s->first_time : 0);
	json_u64(j, "bucket_ns", r->tl.width << shift);
	json_u64(j, "buckets", (r->tl.n + (1ull << shift) - 1) >> shift);
	json_u64(j, "stacks_total", n);
	json_u64(j, "suppressed_stacks", left_out);
	if (r->focus)
		json_str(j, "focus", r->focus);
	else
		json_null(j, "focus");
	if (r->ignore)
		json_str(j, "ignore", r->ignore);
	else
		json_null(j, "ignore");
	json_u64(j, "filtered_stacks", filtered);
	json_begin_array(j, "stacks");
	for (size_t i = 0; i < shown; i++) {
		json_begin(j, NULL);
		json_i64(j, "pid", stack_of_rank(&v[i])->pid);
		json_str(j, "comm", stack_of_rank(&v[i])->comm);
		json_bool(j, "suppressed", v[i].suppressed);
		{
			struct hm_slot *hs = hashmap_u64_find(&r->heap.sites, (uint64_t)(uintptr_t)v[i].x->key);

			json_u64(j, "peak_bytes", hs ? ((const struct heap_site *)hs->ptr)->at_peak * k : 0);
		}
		st_cells_json(j, &v[i], 1, shift, k, temporary_known(r));
		if (page)
			compact_frames_json(j, &names, stack_of_rank(&v[i]));
		else
			cmd_json_stack(j, "frames", stack_of_rank(&v[i]), r->lines);
		json_end(j);
	}
	json_end(j);
	json_begin(j, "other");
	json_u64(j, "stacks", n - shown);
	{
		uint64_t rest = 0;

		for (size_t i = shown; i < n; i++) {
			struct hm_slot *hs = hashmap_u64_find(&r->heap.sites, (uint64_t)(uintptr_t)v[i].x->key);

			rest += hs ? ((const struct heap_site *)hs->ptr)->at_peak * k : 0;
		}
		json_u64(j, "peak_bytes", rest);
	}
	st_cells_json(j, v + shown, n - shown, shift, k, temporary_known(r));
	json_end(j);
	/* What the page's size histogram sums for a window: [bucket, the
	 * class's top size (null: larger), allocations, bytes, temporary
	 * allocations (null where not known)]. */
	json_begin_array(j, "sizes");
	hashmap_for_each(&r->sizes.stacks, slot) {
		const struct stacktime_stack *x = slot->ptr;
		unsigned c = (unsigned)((uintptr_t)x->key - 1);
		struct st_rank one = { x, 0, 0 };
		struct hashmap sum;

		hashmap_init(&sum, 0);
		hashmap_for_each(&one.x->cells, cs) {
			const struct stacktime_cell *cell = cs->ptr;
			uint32_t b, to;
			uint64_t *t = stacktime_cell_shifted(cell, shift, &b, &to) &&
						      (cell->kind == STACKTIME_MADE || cell->kind == STACKTIME_TEMP)
					      ? hashmap_u64_obj(&sum, b, 3 * sizeof(uint64_t))
					      : NULL;

			if (t && cell->kind == STACKTIME_TEMP) {
				t[2] += cell->count;
			} else if (t) {
				t[0] += cell->count;
				t[1] += cell->bytes;
			}
		}
		hashmap_for_each(&sum, cs) {
			const uint64_t *t = cs->ptr;

			json_begin_array(j, NULL);
			json_u64(j, NULL, cs->key);
			if (c < HEAP_SIZE_CLASSES - 1)
				json_u64(j, NULL, 1ull << c);
			else
				json_null(j, NULL);
			json_u64(j, NULL, t[0] * k);
			json_u64(j, NULL, t[1] * k);
			if (temporary_known(r))
				json_u64(j, NULL, t[2]);
			else
				json_null(j, NULL);
			json_end(j);
			free(cs->ptr);
		}
		hashmap_release(&sum);
	}
	json_end(j);
	if (page) {
		functions_json(j, r, &names, v, n, k);
		json_begin_array(j, "names");
		for (size_t i = 0; i < names.n; i++)
			json_str(j, NULL, names.v[i]);
		json_end(j);
	}
	json_end(j);
	free(v);
	free(names.v);
	hashmap_release(&names.index);
}

/* page: the form report --html carries (stack_timeline's frames as names). */
static void report_json(struct report *r, struct session *s, int page)
{
	struct json j;
	char hb[256];

	json_init(&j, stdout);
	json_begin(&j, NULL);
	json_str(&j, "trace", s->path);
	json_str(&j, "recorded_by", session_host(s, "command", hb, sizeof(hb), "?"));
	json_u64(&j, "samples", s->nr_samples);
	json_double(&j, "duration_s", "%.6f", s->last_time > s->first_time ? (s->last_time - s->first_time) / 1e9 : 0.0);
	json_u64(&j, "lost", session_lost(s));
	s->loss_said = 1;
	timeline_json(&j, r, s);
	stack_timeline_json(&j, r, s, page);
	if (r->have_brk) {
		json_section_head(&j, "brk", r->period_brk);
		json_begin_array(&j, "processes");
		hashmap_for_each(&r->procs, slot) {
			const struct proc_stats *p = slot->ptr;

			if (!p->brk_calls)
				continue;
			json_begin(&j, NULL);
			cmd_json_process(&j, s, p->pid);
			json_str(&j, "comm", p->comm);
			json_u64(&j, "calls", p->brk_calls);
			json_u64(&j, "growth_bytes", p->brk_grow);
			json_u64(&j, "shrink_bytes", p->brk_shrink);
			json_end(&j);
		}
		json_end(&j);
		json_stacks(&j, "stacks", &r->brk, r->top, r->lines, 0, "bytes", r->period_brk ? r->period_brk : 1, "calls");
		json_end(&j);
	} else {
		json_null(&j, "brk");
	}
	if (r->have_mmap) {
		json_section_head(&j, "mmap", r->period_mmap);
		json_begin_array(&j, "processes");
		hashmap_for_each(&r->procs, slot) {
			const struct proc_stats *p = slot->ptr;

			if (!p->mmaps && !p->munmaps && !p->mremaps && !p->map_failed)
				continue;
			json_begin(&j, NULL);
			cmd_json_process(&j, s, p->pid);
			json_str(&j, "comm", p->comm);
			json_u64(&j, "mmaps", p->mmaps);
			json_u64(&j, "mapped_bytes", p->mmap_bytes);
			json_u64(&j, "munmaps", p->munmaps);
			json_u64(&j, "unmapped_bytes", p->munmap_bytes);
			json_u64(&j, "mremaps", p->mremaps);
			json_u64(&j, "remap_growth_bytes", p->mremap_grow);
			json_u64(&j, "failed", p->map_failed);
			json_end(&j);
		}
		json_end(&j);
		json_begin_array(&j, "largest");
		for (size_t i = 0; i < r->nr_big; i++) {
			struct big_map *m = &r->big[i];
			char perm[8];

			prot_str(m->prot, m->flags, perm);
			json_begin(&j, NULL);
			json_u64(&j, "bytes", m->len);
			json_u64(&j, "addr", m->addr);
			json_str(&j, "prot", perm);
			json_bool(&j, "anonymous", (m->flags & MAP_ANONYMOUS) != 0);
			cmd_json_process(&j, s, m->pid);
			json_str(&j, "comm", m->comm);
			cmd_json_frames(&j, "frames", m->frames, m->nr_frames, r->lines);
			json_end(&j);
		}
		json_end(&j);
		json_stacks(&j, "stacks", &r->mmap, r->top, r->lines, 0, "bytes", 1, NULL);
		json_end(&j);
	} else {
		json_null(&j, "mmap");
	}
	if (r->have_faults) {
		struct fault_map **fm = malloc((r->fmaps.nr ? r->fmaps.nr : 1) * sizeof(*fm));
		size_t nf = 0;

		json_section_head(&j, "faults", r->period_faults);
		json_begin_array(&j, "processes");
		hashmap_for_each(&r->procs, slot) {
			const struct proc_stats *p = slot->ptr;

			if (!p->faults)
				continue;
			json_begin(&j, NULL);
			cmd_json_process(&j, s, p->pid);
			json_str(&j, "comm", p->comm);
			json_u64(&j, "faults", p->faults);
			json_u64(&j, "major", p->major);
			json_u64(&j, "anonymous", p->anon);
			json_u64(&j, "file", p->file);
			json_end(&j);
		}
		json_end(&j);
		if (r->fault_kinds_known) {
			json_begin(&j, "kinds");
			for (int k = 0; k < FAULT_KINDS; k++)
				json_u64(&j, fault_kind_names[k], r->fault_kinds[k]);
			json_end(&j);
		} else {
			json_null(&j, "kinds");
		}
		json_stacks(&j, "stacks", &r->faults, r->top, r->lines, 1, "faults", 1, NULL);
		json_begin_array(&j, "mappings");
		if (fm) {
			hashmap_for_each(&r->fmaps, slot) fm[nf++] = slot->ptr;
			nf = fmaps_coalesce(fm, nf);
			if (nf > 1)
				qsort(fm, nf, sizeof(*fm), fmap_cmp);
			for (size_t i = 0; i < nf && i < r->top; i++) {
				json_begin(&j, NULL);
				json_u64(&j, "faults", fm[i]->count);
				json_u64(&j, "start", fm[i]->start);
				json_u64(&j, "end", fm[i]->end);
				json_str(&j, "name", fm[i]->name);
				cmd_json_process(&j, s, fm[i]->pid);
				json_str(&j, "comm", fm[i]->comm);
				json_end(&j);
			}
			free(fm);
		}
		json_end(&j);
		json_end(&j);
	} else {
		json_null(&j, "faults");
	}
	if (r->have_malloc) {
		struct heapprof *h = &r->heap;
		uint64_t k = r->a->sample;
		struct heap_site **sv = malloc((h->sites.nr ? h->sites.nr : 1) * sizeof(*sv));
		size_t ns = 0;

		json_begin(&j, "malloc");
		json_bool(&j, "estimate", k > 1 || r->a->rate);
		json_u64(&j, "sample", k);
		json_u64(&j, "sample_bytes", r->a->rate);
		json_begin_array(&j, "processes");
		hashmap_for_each(&h->procs, slot) {
			const struct heap_proc *p = slot->ptr;

			json_begin(&j, NULL);
			cmd_json_process(&j, s, p->pid);
			json_str(&j, "comm", p->comm);
			json_u64(&j, "calls", p->calls * k);
			json_u64(&j, "allocated_bytes", p->bytes * k);
			json_u64(&j, "frees", p->frees * k);
			if (!temporary_known(r))
				json_null(&j, "temporary");
			else
				json_u64(&j, "temporary", p->temporary);
			json_u64(&j, "peak_bytes", p->peak * k);
			json_double(&j, "peak_s", "%.6f",
				    p->peak_time > s->first_time ? (p->peak_time - s->first_time) / 1e9 : 0.0);
			json_u64(&j, "end_bytes", p->cur * k);
			json_end(&j);
		}
		json_end(&j);
		/* Allocations by size, each class up to a power of two. */
		json_begin_array(&j, "sizes");
		for (int c = 0; c < HEAP_SIZE_CLASSES; c++) {
			if (!h->size_calls[c])
				continue;
			json_begin(&j, NULL);
			if (c < HEAP_SIZE_CLASSES - 1)
				json_u64(&j, "up_to", 1ull << c);
			else
				json_null(&j, "up_to");
			json_u64(&j, "allocations", h->size_calls[c] * k);
			json_u64(&j, "bytes", h->size_bytes[c] * k);
			if (!temporary_known(r))
				json_null(&j, "temporary");
			else
				json_u64(&j, "temporary", h->size_temporary[c]);
			json_end(&j);
		}
		json_end(&j);
		json_stacks(&j, "stacks", &r->a->stacks, r->top, r->lines, 0, NULL, k, "allocations");
		json_begin(&j, "peak");
		json_u64(&j, "bytes", h->peak * k);
		json_double(&j, "time_s", "%.6f", h->peak_time > s->first_time ? (h->peak_time - s->first_time) / 1e9 : 0.0);
		json_begin_array(&j, "stacks");
		if (sv) {
			hashmap_for_each(&h->sites, slot) if (((struct heap_site *)slot->ptr)->at_peak) sv[ns++] = slot->ptr;
			if (ns > 1)
				qsort(sv, ns, sizeof(*sv), site_cmp);
			for (size_t i = 0; i < ns && i < r->top; i++) {
				json_begin(&j, NULL);
				json_str(&j, "comm", sv[i]->stack->comm);
				json_i64(&j, "pid", sv[i]->stack->pid);
				json_u64(&j, "bytes", sv[i]->at_peak * k);
				cmd_json_stack(&j, "frames", sv[i]->stack, r->lines);
				json_end(&j);
			}
			free(sv);
		}
		json_end(&j);
		json_end(&j);
		json_end(&j);
	} else {
		json_null(&j, "malloc");
	}
	json_end(&j);
}

/* memsight errors' text, before the report's, when it found any: its
 * view ended into a file (none set up: nothing). */
static void report_errors(struct session *s, struct cmd_view *v)
{
	FILE *t;
	char buf[8192];
	size_t n;

	if (!v->end)
		return;
	if (!(t = tmpfile())) {
		v->end(s, v->arg, 0);
		return;
	}
	if (cmd_view_end(s, v, t) == 3) {
		rewind(t);
		while ((n = fread(buf, 1, sizeof(buf), t)) > 0)
			fwrite(buf, 1, n, stdout);
		printf("\n");
	}
	fclose(t);
}

/* The report as text, or as the page's JSON, into a malloc'd buffer
 * (its length in *len); NULL, said, when it cannot be made. */
static char *report_captured(struct report *r, struct session *s, int page_json, size_t *len)
{
	FILE *t = tmpfile();
	int saved = t ? cmd_stdout_to(t) : -1;
	char *buf;

	if (saved < 0) {
		msg_error("cannot make a temporary file: %s", strerror(errno));
		if (t)
			fclose(t);
		return NULL;
	}
	if (page_json)
		report_json(r, s, 1);
	else
		print_report(r, s);
	cmd_stdout_restore(saved);
	if (!(buf = cmd_slurp(t, len)))
		msg_error("out of memory");
	fclose(t);
	return buf;
}

/* --focus and --ignore compiled, or the one that is no extended
 * regular expression reported. */
static int report_patterns(struct report *r)
{
	const char *const names[] = { "focus", "ignore" }, *pats[] = { r->focus, r->ignore };
	regex_t *res[] = { &r->focus_re, &r->ignore_re };

	for (int i = 0; i < 2; i++) {
		char why[128];
		int e;

		if (!pats[i])
			continue;
		e = regcomp(res[i], pats[i], REG_EXTENDED | REG_NOSUB);
		if (!e)
			continue;
		regerror(e, res[i], why, sizeof(why));
		msg_error("--%s '%s' is not an extended regular expression (%s): write it as grep -E takes it", names[i],
			  pats[i], why);
		if (i && r->focus)
			regfree(&r->focus_re);
		r->focus = r->ignore = NULL;
		return -1;
	}
	return 0;
}

int cmd_report(int argc, char **argv, struct analyze_opts *a)
{
	struct report r = { .pid = -1, .top = 5, .procs_shown = 20, .lines = 1 };
	const char *html = NULL;
	struct replace_out page = { 0 };
	int json = 0;
	const struct opt options[] = {
		OPT_U64('T', "top", &r.top, "N", "stacks and mappings shown per section (default 5)"),
		OPT_U64(0, "procs", &r.procs_shown, "N",
			"processes shown per table (default 20; 0 for all): past N, the\n"
			"N heaviest, heaviest first, and a row that sums the rest"),
		OPT_STRING(0, "html", &html, "FILE",
			   "write one self-contained HTML page instead: a summary, the\n"
			   "recording over time on axes (a drag selects a window every view\n"
			   "then counts), a table by function, top-down and bottom-up trees\n"
			   "with peak, leaked, allocated, allocations, temporary and faults\n"
			   "side by side, caller and callee trees, this report, the leak\n"
			   "table, a flame graph for every recorded event and weight, the\n"
			   "RSS chart"),
		OPT_STRING(0, "focus", &r.focus, "RE",
			   "the timeline by stack (the page's trees, flame graph, callers\n"
			   "and table, --json's stack_timeline) holds only the stacks with a\n"
			   "frame whose function matches RE, an extended regular expression"),
		OPT_STRING(0, "ignore", &r.ignore, "RE",
			   "and none with a frame whose function matches RE"),
		OPT_JSON(&json),
		OPT_LINES(&r.lines),
		OPT_PID(&r.pid),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	struct session s;
	/* The report's own view, and the errors' before it as text; or the
	 * page's views. */
	struct cmd_view views[2] = { { 0 }, { 0 } }, *all = views;
	size_t nv = 1;
	struct page *pg = NULL;
	const char *base = NULL;
	int ret = 1, c = cmd_parse_base(argc, argv, options, usage_text, a, &base);

	if (c >= 0)
		return c;
	if (html && json) {
		msg_error("--html and --json are two outputs: give one");
		return 2;
	}
	if (base && !html) {
		msg_error("two traces make a page of what changed: give --html PAGE, or compare them with memsight diff");
		return 2;
	}
	if (report_patterns(&r))
		return 2;
	/* BASE is a trace too, checked before any page is begun. */
	if (base) {
		struct session b;

		if (cmd_open(&b, base, a))
			return 1;
		cmd_close(&b, 0);
	}
	/* The page's file first: a path that cannot be written fails now, not
	 * after the replay. */
	if (html && replace_check(html, REPLACE_HTML, "an HTML page"))
		return 1;
	if (html && replace_open(&page, html)) {
		msg_error("cannot create '%s': %s", html, replace_strerror(&page));
		return 1;
	}
	if (cmd_open(&s, a->trace, a)) {
		if (html)
			replace_finish(&page, 0);
		return 1;
	}
	/* Memory errors come first: they are why the process ended. Their
	 * view is fed by the report's replay. */
	if (!json && !html && session_group_recorded(&s, "signals")) {
		struct analyze_opts copy = *a;
		char *eargv[] = { "errors", "--fail", "-i", (char *)a->trace, NULL };

		errors_view(4, eargv, &copy, &s, &views[1]);
		nv = views[1].end ? 2 : 1;
	}
	hashmap_init(&r.procs, 0);
	hashmap_init(&r.fmaps, 0);
	stacktab_init_per_command(&r.brk, 0, 1);
	stacktab_init_per_command(&r.mmap, 0, 1);
	stacktab_init_per_command(&r.faults, 1, 1);
	r.big = calloc(r.top ? r.top : 1, sizeof(*r.big));
	r.mo = memops_new(&s, on_op, &r);
	r.have_malloc = allocs_recorded(&s);
	r.a = cmd_allocs_shared(&s, r.have_malloc ? on_alloc : NULL, &r);
	heapprof_init(&r.heap);
	timeline_init(&r.tl);
	stacktime_init(&r.st, &r.tl);
	stacktime_init(&r.sizes, &r.tl);
	rssstat_init(&r.rss);
	views[0] = (struct cmd_view){ .sample = on_sample, .arg = &r };
	if (!r.big || !r.mo || !r.a) {
		msg_error("out of memory");
	} else if (html && !(pg = report_html_views(&s, base, a->trace, a, &views[0], &all, &nv))) {
		/* said */
	} else if (cmd_views_replay(&s, all, nv)) {
		/* said */
	} else {
		heapprof_finish(&r.heap);
		timeline_finish(&r.tl);
		ret = 0;
		if (stacktime_held(&r)) {
			msg_error("out of memory");
			ret = 1;
		}
		if (html) {
			/* The page takes the report twice, as text and as
			 * the data its views are drawn from. */
			size_t n = 0, jn = 0;
			char *text = report_captured(&r, &s, 0, &n), *data = text ? report_captured(&r, &s, 1, &jn) : NULL;

			if (!data)
				ret = 1;
			else
				ret = report_html(page.f, html, pg, text, n, data, jn, &s, a) ? 1 : 0;
			pg = NULL;
			free(text);
			free(data);
		} else if (json) {
			report_json(&r, &s, 0);
		} else {
			report_errors(&s, &views[1]);
			views[1].end = NULL;
			print_report(&r, &s);
		}
	}
	report_html_free(&s, pg);
	if (views[1].end)
		views[1].end(&s, views[1].arg, 0);
	memops_free(r.mo);
	stacktime_release(&r.st);
	stacktime_release(&r.sizes);
	if (r.focus)
		regfree(&r.focus_re);
	if (r.ignore)
		regfree(&r.ignore_re);
	rssstat_release(&r.rss);
	heapprof_release(&r.heap);
	hashmap_for_each(&r.procs, slot) free(slot->ptr);
	hashmap_for_each(&r.fmaps, slot) free(slot->ptr);
	hashmap_release(&r.procs);
	hashmap_release(&r.fmaps);
	stacktab_release(&r.brk);
	stacktab_release(&r.mmap);
	stacktab_release(&r.faults);
	free(r.big);
	/* Written whole, or the file that was there stays. */
	if (html && replace_finish(&page, !ret) && !ret) {
		msg_error("cannot write '%s': %s", html, strerror(errno));
		ret = 1;
	}
	return cmd_close(&s, ret);
}
