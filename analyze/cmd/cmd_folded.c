/*
 * analyze/cmd/cmd_folded.c: memsight folded, Brendan Gregg's folded stack format
 * (comm;outer;...;inner WEIGHT), one weight per run. Stacks are summed by
 * their raw addresses first and named once each, so the cost per sample is
 * a hash, not a symbol lookup.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "../model/allocs.h"
#include "../model/heapprof.h"
#include "../model/kallocs.h"
#include "../model/memops.h"
#include "../model/stacktab.h"

static const char usage_text[] =
	"usage: memsight folded [options] FILE\n"
	"\n"
	"  -e, --event EVENT     brk, mmap, faults (default), malloc, kmem (kernel allocations),\n"
	"                        reclaim (direct and memcg) or swap (major faults on anonymous memory)\n"
	"  -w, --weight WEIGHT   count (default), bytes or pages; for malloc and kmem: leaked\n"
	"                        (outstanding bytes), bytes (allocated) or count (allocations), and\n"
	"                        pages for kmem; for malloc also peak (bytes held when the heap was\n"
	"                        largest); for reclaim: latency (microseconds) or count\n"
	"      --pid PID         only this process\n"
	"      --kernel          include kernel frames (default for faults, kmem, reclaim)\n"
	"      --no-kernel       leave kernel frames out (default for brk and mmap)\n"
	"  -h, --help            show this help\n"
	CMD_STACK_OPTIONS;

enum weight { W_COUNT, W_BYTES, W_PAGES, W_LEAKED, W_LATENCY, W_PEAK };
enum fold_source { FS_MEMOPS, FS_MALLOC, FS_KMEM, FS_RECLAIM, FS_SWAP };

struct folded {
	enum fold_source src;
	struct hashmap begins;	/* reclaim: tid -> struct reclaim_begin * */
	enum memop_kind kind;
	enum weight weight;
	long pid;
	struct stacktab tab;
};

static int on_op(struct session *s, const struct memop *op, void *arg)
{
	struct folded *f = arg;
	uint64_t w;

	if (f->pid >= 0 && op->pid != f->pid)
		return 0;
	if (f->src == FS_SWAP) {
		/* A major fault on anonymous memory reads it back from swap. */
		if (op->kind != MEMOP_FAULT_MAJ || !op->map || (op->map->name && op->map->name[0] == '/' &&
								 op->map->name[1] != '/'))
			return 0;
		return stacktab_add(&f->tab, s, op->stack, 1) ? 0 : -1;
	}
	if (op->kind != f->kind && !(f->kind == MEMOP_MMAP && op->kind == MEMOP_MREMAP))
		return 0;
	if (op->failed)
		return 0;
	if (f->kind == MEMOP_MMAP && op->kind == MEMOP_MREMAP && !op->grow)
		return 0;
	switch (f->weight) {
	case W_COUNT:
		w = 1;
		break;
	case W_BYTES:
		w = op->grow;
		break;
	default:
		w = (op->grow + s->page_size - 1) / s->page_size;
		break;
	}
	return w && !stacktab_add(&f->tab, s, op->stack, w) ? -1 : 0;
}

struct line {
	const char *text;
	uint64_t weight;
};

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* Append one frame name to buf, replacing ';' (the separator) and spaces at
 * the ends, which would break the format. */
static size_t put_frame(char *buf, size_t at, size_t cap, const char *name, const char *suffix)
{
	for (const char *p = name; *p && at + 1 < cap; p++)
		buf[at++] = *p == ';' ? ':' : *p == '\n' ? ' ' : *p;
	for (const char *p = suffix; *p && at + 1 < cap; p++)
		buf[at++] = *p;
	buf[at] = 0;
	return at;
}

static int print_folded(struct folded *f)
{
	struct hashmap lines;
	struct line *v;
	size_t n = 0;
	char buf[65536], name[512];

	hashmap_init(&lines, 1);
	hashmap_for_each(&f->tab.map, slot) {
		for (struct stack_entry *e = slot->ptr; e; e = e->next) {
			if (!e->weight)
				continue;
			size_t at = put_frame(buf, 0, sizeof(buf), e->comm, "");
			struct hm_slot *l;

			for (int i = e->nr_frames - 1; i >= 0; i--) {
				const struct frame *fr = &e->frames[i];

				buf[at++] = ';';
				at = put_frame(buf, at, sizeof(buf) - 64, frame_name(fr, name, sizeof(name), 0),
					       fr->kernel ? "_[k]" : "");
			}
			l = hashmap_str(&lines, buf, NULL);
			if (!l) {
				hashmap_release(&lines);
				return msg_error("out of memory");
			}
			l->val += e->weight;
		}
	}
	v = malloc((lines.nr ? lines.nr : 1) * sizeof(*v));
	if (!v) {
		hashmap_release(&lines);
		return msg_error("out of memory");
	}
	hashmap_for_each(&lines, slot) v[n++] = (struct line){ slot->skey, slot->val };
	if (n > 1)
		qsort(v, n, sizeof(*v), line_cmp);
	for (size_t i = 0; i < n; i++)
		printf("%s %llu\n", v[i].text, (unsigned long long)v[i].weight);
	free(v);
	hashmap_release(&lines);
	return 0;
}

/* Allocations fold by their own stack table: weights are per entry. */
static int fold_allocs(struct folded *f, struct session *s)
{
	struct allocs a;
	struct heapprof h;
	char err[512];
	int ret = 1;

	if (!allocs_recorded(s))
		return msg_error("'%s' has no allocation events: record them with 'memsight record -e malloc'", s->path), 1;
	allocs_init(&a, s);
	heapprof_init(&h);
	if (allocs_replay(&a, s, f->weight == W_PEAK ? heapprof_cb : NULL, &h, err, sizeof(err))) {
		msg_error("%s", err);
		goto out;
	}
	heapprof_finish(&h);
	hashmap_for_each(&a.stacks.map, slot) for (struct stack_entry *e = slot->ptr; e; e = e->next) {
		e->weight = f->weight == W_COUNT ? e->count * a.sample : f->weight == W_BYTES ? e->weight * a.sample : 0;
	}
	if (f->weight == W_PEAK)
		hashmap_for_each(&h.sites, slot) {
			struct heap_site *site = slot->ptr;

			site->stack->weight = site->at_peak * a.sample;
		}
	if (f->weight == W_LEAKED) {
		hashmap_for_each(&a.procs, p) hashmap_for_each((struct hashmap *)p->ptr, r) {
			struct alloc_rec *rec = r->ptr;

			if (rec->stack)
				rec->stack->weight += rec->size * a.sample;
		}
	}
	/* Print from the allocation stacks: swap the table in. */
	stacktab_release(&f->tab);
	f->tab = a.stacks;
	stacktab_init(&a.stacks, 0, 1);
	if (a.sample > 1)
		msg_note("sampled recording (-s %u): weights are estimates, scaled by %u",
			a.sample, a.sample);
	ret = print_folded(f) ? 1 : 0;
out:
	heapprof_release(&h);
	allocs_release(&a);
	return ret;
}

/* Kernel allocations fold by the kallocs stack table, as malloc does. */
static int fold_kmem(struct folded *f, struct session *s)
{
	struct kallocs k;
	char err[512];
	int ret = 1;

	if (cmd_need_group(s, "kernel allocation", "kmem", NULL))
		return 1;
	kallocs_init(&k, s, f->pid);
	if (kallocs_replay(&k, s, err, sizeof(err))) {
		msg_error("%s", err);
		goto out;
	}
	hashmap_for_each(&k.stacks.map, slot) for (struct stack_entry *e = slot->ptr; e; e = e->next) {
		e->weight = f->weight == W_COUNT ? e->count * k.period
			    : f->weight == W_BYTES ? e->weight * k.period
			    : f->weight == W_PAGES ? (e->weight * k.period + s->page_size - 1) / s->page_size : 0;
	}
	if (f->weight == W_LEAKED)
		for (int c = 0; c < KA_NR; c++)
			hashmap_for_each(&k.live[c], r) {
				struct kalloc_rec *rec = r->ptr;

				if (rec->stack)
					rec->stack->weight += rec->bytes * k.period;
			}
	if (!f->tab.kernel)
		msg_note("kmem stacks keep their kernel frames");
	stacktab_release(&f->tab);
	f->tab = k.stacks;
	stacktab_init(&k.stacks, 1, 1);
	ret = print_folded(f) ? 1 : 0;
out:
	kallocs_release(&k);
	return ret;
}

/* Reclaim: each begin's stack weighs its latency, to its end. */
struct reclaim_begin {
	struct stack_entry *stack;
	uint64_t time;
};

static int on_reclaim(struct session *s, struct sample *smp, void *arg)
{
	struct folded *f = arg;
	enum ev_kind k = smp->ev->kind;
	struct reclaim_begin *b;
	struct hm_slot *slot;

	if (f->pid >= 0 && smp->pid != (uint32_t)f->pid)
		return 0;
	if (k == EVK_DIRECT_RECLAIM_BEGIN || k == EVK_MEMCG_RECLAIM_BEGIN) {
		slot = hashmap_u64(&f->begins, smp->tid, NULL);
		if (!slot || (!slot->ptr && !(slot->ptr = calloc(1, sizeof(*b)))))
			return -1;
		b = slot->ptr;
		b->stack = smp->nr_ips ? stacktab_add(&f->tab, s, smp, 0) : NULL;
		b->time = smp->time;
		return 0;
	}
	if (k == EVK_DIRECT_RECLAIM_END || k == EVK_MEMCG_RECLAIM_END) {
		slot = hashmap_u64_find(&f->begins, smp->tid);
		b = slot ? slot->ptr : NULL;
		if (b && b->stack && b->time) {
			b->stack->weight += f->weight == W_LATENCY ? (smp->time - b->time) / 1000 : 1;
			b->time = 0;
		}
	}
	return 0;
}

int cmd_folded(int argc, char **argv)
{
	enum { OPT_PID = 256, OPT_KERNEL, OPT_NO_KERNEL };
	static const struct option longopts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "weight", required_argument, NULL, 'w' },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "kernel", no_argument, NULL, OPT_KERNEL },
		{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct folded f = { .kind = MEMOP_FAULT, .weight = W_COUNT, .pid = -1, .src = FS_MEMOPS };
	struct session s;
	char err[512];
	int c, kernel = -1, ret = 1;
	uint64_t v;

	while ((c = getopt_long(argc, argv, "e:w:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (!strcmp(optarg, "brk"))
				f.kind = MEMOP_BRK;
			else if (!strcmp(optarg, "mmap"))
				f.kind = MEMOP_MMAP;
			else if (!strcmp(optarg, "faults") || !strcmp(optarg, "page-faults"))
				f.kind = MEMOP_FAULT;
			else if (!strcmp(optarg, "malloc"))
				f.src = FS_MALLOC;
			else if (!strcmp(optarg, "kmem"))
				f.src = FS_KMEM;
			else if (!strcmp(optarg, "reclaim"))
				f.src = FS_RECLAIM;
			else if (!strcmp(optarg, "swap"))
				f.src = FS_SWAP;
			else {
				msg_error("unknown event '%s' for folded stacks: use brk, mmap, faults, malloc, kmem, reclaim "
				      "or swap",
				      optarg);
				return 2;
			}
			break;
		case 'w':
			if (!strcmp(optarg, "count"))
				f.weight = W_COUNT;
			else if (!strcmp(optarg, "bytes"))
				f.weight = W_BYTES;
			else if (!strcmp(optarg, "pages"))
				f.weight = W_PAGES;
			else if (!strcmp(optarg, "leaked"))
				f.weight = W_LEAKED;
			else if (!strcmp(optarg, "latency"))
				f.weight = W_LATENCY;
			else if (!strcmp(optarg, "peak"))
				f.weight = W_PEAK;
			else {
				msg_error("unknown weight '%s': use count, bytes, pages, leaked, peak or latency", optarg);
				return 2;
			}
			break;
		case OPT_PID:
			if (parse_u64("--pid", optarg, &v))
				return 2;
			f.pid = v;
			break;
		case OPT_KERNEL:
			kernel = 1;
			break;
		case OPT_NO_KERNEL:
			kernel = 0;
			break;
		case 'h':
			return cmd_usage(usage_text, 1);
		default:
			return cmd_usage(usage_text, 0);
		}
	}
	if (cmd_one_file(argc))
		return 2;
	if (kernel < 0)
		/* A syscall's kernel half is always the same entry path; for
		 * the kernel's own memory it is the point. */
		kernel = (f.kind == MEMOP_FAULT && f.src == FS_MEMOPS) || f.src == FS_KMEM || f.src == FS_RECLAIM ||
			 f.src == FS_SWAP;
	{
		/* Which weights each source has. */
		int ok = f.weight == W_COUNT ||
			 (f.weight == W_BYTES && f.src != FS_RECLAIM && f.src != FS_SWAP) ||
			 (f.weight == W_PAGES && (f.src == FS_MEMOPS || f.src == FS_KMEM)) ||
			 (f.weight == W_LEAKED && (f.src == FS_MALLOC || f.src == FS_KMEM)) ||
			 (f.weight == W_PEAK && f.src == FS_MALLOC) ||
			 (f.weight == W_LATENCY && f.src == FS_RECLAIM);

		if (!ok) {
			msg_error("this weight does not apply to this event: leaked is for malloc and kmem, peak for "
			      "malloc, pages for brk, mmap, faults and kmem, latency for reclaim");
			return 2;
		}
	}
	if (cmd_open(&s, argv[optind]))
		return 1;
	stacktab_init(&f.tab, kernel, 1);
	hashmap_init(&f.begins, 0);
	if (f.src == FS_MALLOC) {
		ret = fold_allocs(&f, &s);
	} else if (f.src == FS_KMEM) {
		ret = fold_kmem(&f, &s);
	} else if (f.src == FS_RECLAIM) {
		err[0] = 0;
		if (!cmd_need_group(&s, "reclaim", "reclaim", NULL)) {
			if (session_replay(&s, on_reclaim, &f, err, sizeof(err)))
				msg_error("%s", err[0] ? err : "out of memory");
			else if (!print_folded(&f))
				ret = 0;
		}
	} else if (memops_replay(&s, on_op, &f, err, sizeof(err))) {
		msg_error("%s", err);
	} else if (!print_folded(&f)) {
		ret = 0;
	}
	hashmap_for_each(&f.begins, slot) free(slot->ptr);
	hashmap_release(&f.begins);
	session_report_unwind(&s);
	symbols_report_unresolved(&s.syms, stderr);
	stacktab_release(&f.tab);
	session_release(&s);
	return ret;
}
