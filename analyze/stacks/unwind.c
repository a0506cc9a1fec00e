/*
 * analyze/stacks/unwind.c: the backend-neutral part of unwinding: choosing the
 * backend, one address space per process and code generation, the
 * registers and the dump of a sample, and the statistics.
 */
#include "unwind_backend.h"
#include "../../formats/msg.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

const char *const unwind_stop_names[UNWIND_STOP_NR] = {
	[UNWIND_STOP_NONE] = "complete",
	[UNWIND_STOP_NO_REGS] = "had no registers",
	[UNWIND_STOP_NO_STACK] = "had no stack bytes (the page at the stack pointer was not in memory)",
	[UNWIND_STOP_STACK_END] = "ran past the stack dump",
	[UNWIND_STOP_NO_OBJECT] = "reached an address outside every mapping, or an object not here",
	[UNWIND_STOP_NO_CFI] = "met code without a usable unwind entry (.eh_frame/.debug_frame)",
	[UNWIND_STOP_DEPTH] = "were deeper than the frame limit",
	[UNWIND_STOP_JIT] = "ended in code compiled at run time, which has no unwind entries and kept no frame pointer",
};

/* Which runtime's compiled code a stack ended in, for the advice. */
enum { RT_JVM, RT_NODE, RT_PYTHON, RT_OTHER };
static const char *const runtime_advice[] = {
	[RT_JVM] = "run Java with -XX:+PreserveFramePointer",
	[RT_NODE] = "run node with --interpreted-frames-native-stack",
	[RT_PYTHON] = "Python: only its perf trampolines (3.12 and later, -X perf or -X perf_jit) are stepped through",
	[RT_OTHER] = "run the runtime with the option that keeps frame pointers in its compiled code",
};

/* By the process's name, or else by how the runtime names its code. */
static int runtime_of(struct unwinder *u, const struct unwind_input *in, uint64_t ip)
{
	const char *comm = machine_comm(u->m, in->pid, in->tid), *name = NULL;
	struct unwind_jit_code c;

	if (comm && !strncmp(comm, "java", 4))
		return RT_JVM;
	if (comm && !strncmp(comm, "node", 4))
		return RT_NODE;
	if (comm && !strncmp(comm, "python", 6))
		return RT_PYTHON;
	if (unwind_jit_code(u, in, ip, &c))
		name = c.name;
	if (name && (!strncmp(name, "JS:", 3) || !strncmp(name, "LazyCompile:", 12) || !strncmp(name, "Builtin:", 8)))
		return RT_NODE;
	if (name && !strncmp(name, "py::", 4))
		return RT_PYTHON;
	return RT_OTHER;
}

struct space_holder {
	unsigned gen;
	const struct unwind_backend_ops *ops;
	void *space;
	uint64_t *entries;	/* where its objects' entry points (_start) run */
	size_t nr_entries;
};

static void holder_free(void *p)
{
	struct space_holder *h = p;

	if (h->space)
		h->ops->space_free(h->space);
	free(h->entries);
	free(h);
}

/* The runtime addresses of the entry points of objs. */
static void holder_entries(struct space_holder *h, const struct unwind_object *objs, size_t n)
{
	h->entries = calloc(n ? n : 1, sizeof(*h->entries));
	for (size_t i = 0; h->entries && i < n; i++)
		if (objs[i].dso->obj_entry)
			h->entries[h->nr_entries++] = objs[i].bias + objs[i].dso->obj_entry;
}

/* Is addr in the first instructions of an entry point (the dynamic
 * loader's or the program's _start)? No frame has a caller beyond one,
 * though ld.so's _start does not mark its return address undefined. */
static int at_entry_point(const struct space_holder *h, uint64_t addr)
{
	for (size_t i = 0; i < h->nr_entries; i++)
		if (addr - h->entries[i] < 64)
			return 1;
	return 0;
}

int unwind_backend_parse(const char *name)
{
	if (!strcmp(name, "libdw"))
		return UNWIND_LIBDW;
	if (!strcmp(name, "libunwind"))
		return UNWIND_LIBUNWIND;
	return -1;
}

const char *unwind_backend_name(enum unwind_backend b)
{
	return b == UNWIND_LIBUNWIND ? "libunwind" : "libdw";
}

/* A thread's last whole stack. */
struct unwind_chain {
	unsigned gen;		/* its process's code generation */
	int n;
	uint64_t v[];		/* n return addresses, then their n stack pointers */
};

struct unwinder *unwind_new(enum unwind_backend b, struct machine *m, int check)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	hashmap_init(&u->chains, 0);
	hashmap_init(&u->deep, 0);
	u->ops = b == UNWIND_LIBUNWIND ? &unwind_libunwind_ops : &unwind_libdw_ops;
	u->m = m;
	u->check = check;
	m->unwind_free = holder_free;
	return u;
}

void unwind_set_jit(struct unwinder *u, unwind_jit_fn fn, void *arg)
{
	u->jit_code = fn;
	u->jit_arg = arg;
}

void unwind_free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->ops->release)
		u->ops->release(u);
	hashmap_for_each(&u->chains, slot) free(slot->ptr);
	hashmap_release(&u->chains);
	hashmap_for_each(&u->deep, slot) free(slot->ptr);
	hashmap_release(&u->deep);
	free(u->sps);
	free(u);
}

static uint64_t chain_key(const struct unwind_input *in)
{
	return (uint64_t)(uint32_t)in->pid << 32 | (uint32_t)in->tid;
}

/* The whole stack of n frames is its thread's latest (or deep one). */
static void chain_keep(struct hashmap *chains, const struct unwind_input *in, unsigned gen, const uint64_t *ips,
		       const uint64_t *sps, int n)
{
	struct hm_slot *slot = hashmap_u64(chains, chain_key(in), NULL);
	struct unwind_chain *c = slot ? slot->ptr : NULL;

	if (!slot)
		return;
	if (!c || c->n < n) {
		free(c);
		slot->ptr = c = malloc(sizeof(*c) + 2 * (size_t)n * sizeof(uint64_t));
		if (!c)
			return;
	}
	c->gen = gen;
	c->n = n;
	memcpy(c->v, ips, n * sizeof(uint64_t));
	memcpy(c->v + n, sps, n * sizeof(uint64_t));
}

/* The stack of n frames that ran past its dump, completed from its
 * thread's latest whole stack where that shows its two outermost frames
 * (unwind.h); the frames it has then, or n. */
static int chain_join(struct hashmap *chains, const struct unwind_input *in, unsigned gen, uint64_t *ips, uint64_t *sps,
		      int n, int max)
{
	struct hm_slot *slot = hashmap_u64_find(chains, chain_key(in));
	const struct unwind_chain *c = slot ? slot->ptr : NULL;
	const uint64_t *cips, *csps;

	if (!c || c->gen != gen || n < 2)
		return n;
	cips = c->v;
	csps = c->v + c->n;
	for (int k = 1; k + 1 < c->n; k++) {
		int add;

		if (csps[k] != sps[n - 1] || cips[k] != ips[n - 1] || csps[k - 1] != sps[n - 2] || cips[k - 1] != ips[n - 2])
			continue;
		add = c->n - (k + 1);
		if (n + add > max)
			add = max - n;
		memcpy(ips + n, cips + k + 1, add * sizeof(uint64_t));
		memcpy(sps + n, csps + k + 1, add * sizeof(uint64_t));
		return n + add;
	}
	return n;
}

/* The executable objects p maps, each once, whose object file is here,
 * with their load bias. Returns a malloc'd array (of *n) or NULL. */
static struct unwind_object *unwind_objects(const struct process *p, size_t *n)
{
	struct unwind_object *v = calloc(p->nr_maps ? p->nr_maps : 1, sizeof(*v));

	*n = 0;
	for (size_t i = 0; v && i < p->nr_maps; i++) {
		const struct map *mp = &p->maps[i];
		size_t j;

		if (!mp->dso || !(mp->prot & PROT_EXEC))
			continue;
		for (j = 0; j < *n && v[j].dso != mp->dso; j++)
			;
		if (j < *n || !symbols_object(mp->dso) ||
		    symbols_object_bias(mp->dso, mp->start, mp->pgoff, &v[*n].bias))
			continue;
		v[(*n)++].dso = mp->dso;
	}
	return v;
}

static int sample_unwind(struct unwinder *u, const struct unwind_input *in, uint64_t *ips, int max,
			 enum unwind_stop *stop)
{
	struct process *p;
	struct space_holder *h;
	struct unwind_object *objs;
	size_t nr_objs = 0;
	uint64_t ip, sp;
	int n;

	u->st.stacks++;
	*stop = UNWIND_STOP_NONE;
	if (!unwind_reg(in, 16, &ip) || !unwind_reg(in, 7, &sp)) {
		*stop = UNWIND_STOP_NO_REGS;
	} else if (!in->stack.size) {
		/* A fault the kernel takes loading a program (execve), whose
		 * registers are the old image's, gone with its stack: there is
		 * no user stack to have stopped. */
		if (!machine_find_map(u->m, in->pid, ip)) {
			u->st.stacks--;
			*stop = UNWIND_STOP_NONE;
			return 0;
		}
		/* A fault with no stack bytes: the page at its stack pointer
		 * was not in memory, a frame reserved but not yet touched (the
		 * fault may be on that page, or on data the code reaches
		 * first) or a stack page swapped out. The kernel copies
		 * nothing from such a page, by nature, whatever the recording:
		 * the sampled ip is all there is, and not a stack that
		 * stopped. */
		if (in->fault_addr) {
			u->st.stacks--;
			if (max < 1)
				return 0;
			ips[0] = ip;
			u->st.frames++;
			return 1;
		}
		/* The sampled ip is still one frame. */
		*stop = UNWIND_STOP_NO_STACK;
		u->st.stopped[*stop]++;
		if (max < 1)
			return 0;
		ips[0] = ip;
		u->st.frames++;
		return 1;
	}
	p = *stop ? NULL : machine_process(u->m, in->pid);
	if (!p) {
		if (!*stop)
			*stop = UNWIND_STOP_NO_OBJECT;
		u->st.stopped[*stop]++;
		return 0;
	}
	h = p->unwind;
	if (h && (h->gen != p->code_gen || h->ops != u->ops)) {
		holder_free(h);
		h = p->unwind = NULL;
	}
	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return 0;
		h->gen = p->code_gen;
		h->ops = u->ops;
		objs = unwind_objects(p, &nr_objs);
		if (objs) {
			u->st.spaces++;
			h->space = u->ops->space_new(u, p, objs, nr_objs);
			holder_entries(h, objs, nr_objs);
		}
		free(objs);
		p->unwind = h;
	}
	if (!h->space) {
		*stop = UNWIND_STOP_NO_OBJECT;
		u->st.stopped[*stop]++;
		ips[0] = ip;
		return max > 0;
	}
	if (u->sps_max < max) {
		uint64_t *v = realloc(u->sps, max * sizeof(*v));

		if (!v)
			return 0;
		u->sps = v;
		u->sps_max = max;
	}
	u->used = 0;
	u->sp = sp;
	stackdump_rank(&in->stack, &u->rank);
	u->proc = p;
	u->hint = NULL;
	n = u->ops->run(u, h->space, in, ips, u->sps, max, stop);
	u->proc = NULL;
	if (u->used > u->st.max_stack_used)
		u->st.max_stack_used = u->used;
	if (n == 0 && max > 0) {
		ips[0] = ip;
		n = 1;
	}
	/* Frames beyond an entry point are whatever lay above the stack:
	 * an unwinder that went on past _start found them. The stack is
	 * complete there. */
	for (int k = n - 1; k >= 0 && k >= n - 3; k--)
		if (at_entry_point(h, ips[k])) {
			n = k + 1;
			*stop = UNWIND_STOP_NONE;
			break;
		}
	/* JIT code has no unwind entries: past it only a frame pointer
	 * goes on, and the runtime's flag is what keeps one. */
	if (*stop != UNWIND_STOP_NONE && *stop != UNWIND_STOP_DEPTH && *stop != UNWIND_STOP_STACK_END && n > 0) {
		const struct map *m = process_find_map(p, ips[n - 1], NULL);

		if (m && !m->dso && (m->prot & PROT_EXEC) && m->name[0] != '[') {
			*stop = UNWIND_STOP_JIT;
			u->st.jit_runtime[runtime_of(u, in, ips[n - 1])]++;
		}
	}
	if (*stop == UNWIND_STOP_NONE)
		u->st.need_kib[u->used / 1024 < 15 ? u->used / 1024 : 15]++;
	if (*stop == UNWIND_STOP_STACK_END && !in->feed) {
		int whole = chain_join(&u->chains, in, p->code_gen, ips, u->sps, n, max);

		if (whole == n)
			whole = chain_join(&u->deep, in, p->code_gen, ips, u->sps, n, max);
		if (whole > n) {
			n = whole;
			*stop = UNWIND_STOP_NONE;
			u->st.joined++;
		}
	}
	if (*stop == UNWIND_STOP_NONE && n > 1)
		chain_keep(in->feed ? &u->deep : &u->chains, in, p->code_gen, ips, u->sps, n);
	if (*stop == UNWIND_STOP_STACK_END && in->stack.size > u->st.past_dump)
		u->st.past_dump = in->stack.size;
	u->st.stopped[*stop]++;
	u->st.frames += n;
	return n;
}

int unwind_sample(struct unwinder *u, const struct unwind_input *in, uint64_t *ips, int max,
		  enum unwind_stop *stop)
{
	struct unwind_stats keep;
	int n;

	if (!in->feed)
		return sample_unwind(u, in, ips, max, stop);
	/* What a feed sample costs is counted, not its stack. */
	keep = u->st;
	n = sample_unwind(u, in, ips, max, stop);
	keep.spaces = u->st.spaces;
	keep.objects_opened = u->st.objects_opened;
	keep.spaces_whole = u->st.spaces_whole;
	keep.fed += *stop == UNWIND_STOP_NONE;
	u->st = keep;
	return n;
}

const struct unwind_stats *unwind_stats(const struct unwinder *u)
{
	return &u->st;
}

/* The advice for each runtime whose code stacks ended in. */
static void report_runtimes(const struct unwinder *u, FILE *f)
{
	int said = 0;

	for (int r = 0; r < UNWIND_RUNTIMES; r++)
		if (u->st.jit_runtime[r])
			fprintf(f, "%s%s", said++ ? "; " : " (", runtime_advice[r]);
	if (said)
		fprintf(f, ")");
}

void unwind_report(const struct unwinder *u, FILE *f)
{
	unsigned dump_size = (unsigned)u->st.past_dump;

	uint64_t checked, differ, further, broken = 0;

	unwind_libdw_fast_stats(&checked, &differ, &further);
	if (checked)
		fprintf(f, "memsight: unwinding check: %llu of %llu stacks stepped with cached rules differ from "
			   "libdw's own walk, and %llu went on where libdw's ended at a PLT entry; frames of JIT code "
			   "stepped: %llu by the runtime's unwind tables, %llu as CPython's trampolines\n",
			(unsigned long long)differ, (unsigned long long)checked, (unsigned long long)further,
			(unsigned long long)u->jit_cfi_steps, (unsigned long long)u->jit_steps);
	for (int i = 1; i < UNWIND_STOP_NR; i++)
		broken += u->st.stopped[i];
	/* Under 1% of the stacks is a small matter, said with -v; unless
	 * stacks ended in a runtime's code, where one flag of the runtime's
	 * makes them whole. */
	if (!msg_verbose() && broken * 100 < u->st.stacks && !u->st.stopped[UNWIND_STOP_JIT])
		broken = 0;
	/* Stacks made whole are no loss: said with -v. */
	if (u->st.joined && msg_verbose())
		fprintf(f, "memsight: %llu of %llu user stacks ran past their stack dump and were completed from an "
			   "earlier stack of the same thread with the same outer frames at the same addresses\n",
			(unsigned long long)u->st.joined, (unsigned long long)u->st.stacks);
	if (!broken)
		return;
	fprintf(f, "memsight: %llu of %llu user stacks stop short of main or a thread's start (%s unwinder):",
		(unsigned long long)broken, (unsigned long long)u->st.stacks, u->ops->name);
	for (int i = 1, sep = 0; i < UNWIND_STOP_NR; i++) {
		if (!u->st.stopped[i])
			continue;
		fprintf(f, "%s %llu %s", sep++ ? ";" : "", (unsigned long long)u->st.stopped[i], unwind_stop_names[i]);
		/* How big a dump would have done: twice this one, as far as
		 * perf takes them. */
		if (i == UNWIND_STOP_STACK_END && dump_size && u->st.fed)
			fprintf(f, " of %u bytes, with %llu deep-stacks samples to complete them from (record with a "
				   "higher --deep-freq, or --call-graph dwarf,%u)",
				dump_size, (unsigned long long)u->st.fed, dump_size * 2 < 65528 ? dump_size * 2 : 65528);
		else if (i == UNWIND_STOP_JIT)
			report_runtimes(u, f);
		else if (i == UNWIND_STOP_STACK_END && dump_size)
			fprintf(f, " of %u bytes (record with --call-graph dwarf,%u%s)", dump_size,
				dump_size * 2 < 65528 ? dump_size * 2 : 65528,
				dump_size * 2 < 65528 ? " or more" : ", the most perf_event_open takes");
	}
	fprintf(f, "\n");
}
