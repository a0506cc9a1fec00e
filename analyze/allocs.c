/*
 * analyze/allocs.c: pairing of allocation uprobes.
 *
 * Rules: realloc = free(old) + alloc(new); realloc(NULL, n) = malloc(n);
 * realloc(p, 0) returning NULL frees p; a call that returns NULL (or an
 * error for posix_memalign) allocates nothing; calloc and reallocarray
 * count nmemb * size; a free of a pointer not allocated during the
 * recording is counted apart and never makes a leak.
 */
#include "allocs.h"

#include <stdlib.h>
#include <string.h>

#define MAX_IPS 512
#define X86_REG_SP 7

struct pending {
	enum alloc_fn fn;
	uint64_t size, nmemb, ptr, memptr, caller, time;
	int have_stack;
	struct sample smp;	 /* the entry sample, with ips repaired */
	uint64_t ips[MAX_IPS];
};

struct pending_stack {
	struct pending *v;
	size_t nr, alloc;
};

int allocs_recorded(const struct session *s)
{
	for (size_t i = 0; i < s->nr_evs; i++)
		if (s->evs[i].kind == EVK_ALLOC_ENTRY)
			return 1;
	return 0;
}

int allocs_init(struct allocs *a, struct session *s)
{
	char v[64];

	memset(a, 0, sizeof(*a));
	stacktab_init(&a->stacks, 0, 1);
	hashmap_init(&a->procs, 0);
	hashmap_init(&a->threads, 0);
	a->sample = atoi(session_host(s, "alloc_sample", v, sizeof(v), "1"));
	if (!a->sample)
		a->sample = 1;
	a->min_size = strtoull(session_host(s, "alloc_min_size", v, sizeof(v), "0"), NULL, 10);
	a->max_size = strtoull(session_host(s, "alloc_max_size", v, sizeof(v), "0"), NULL, 10);
	return 0;
}

void allocs_release(struct allocs *a)
{
	hashmap_for_each(&a->procs, p) {
		struct hashmap *m = p->ptr;

		hashmap_for_each(m, r) free(r->ptr);
		hashmap_release(m);
		free(m);
	}
	hashmap_release(&a->procs);
	hashmap_for_each(&a->threads, t) {
		struct pending_stack *ps = t->ptr;

		free(ps->v);
		free(ps);
	}
	hashmap_release(&a->threads);
	stacktab_release(&a->stacks);
}

static struct hashmap *proc_table(struct allocs *a, int pid)
{
	struct hm_slot *s = hashmap_u64(&a->procs, (uint32_t)pid, NULL);

	if (!s)
		return NULL;
	if (!s->ptr && (s->ptr = malloc(sizeof(struct hashmap))))
		hashmap_init(s->ptr, 0);
	return s->ptr;
}

static struct pending_stack *thread_stack(struct allocs *a, int tid)
{
	struct hm_slot *s = hashmap_u64(&a->threads, (uint32_t)tid, NULL);

	if (!s)
		return NULL;
	if (!s->ptr)
		s->ptr = calloc(1, sizeof(struct pending_stack));
	return s->ptr;
}

/* Put the skipped caller back and undo return-probe trampolines. */
static void repair_stack(struct session *s, struct pending_stack *ps, struct pending *p, const struct sample *smp)
{
	uint64_t n = 0, tramp = 0;
	int user = 0, first_user = 0;

	p->smp = *smp;
	p->smp.raw = NULL;
	p->smp.regs = NULL;
	p->smp.stack = (struct stackdump){ 0 };
	for (uint64_t i = 0; i < smp->nr_ips && n < MAX_IPS - 1; i++) {
		uint64_t ip = smp->ips[i];

		if (ip >= PERF_CONTEXT_MAX) {
			user = ip == PERF_CONTEXT_USER;
			first_user = user;
			p->ips[n++] = ip;
			continue;
		}
		if (user && !first_user) {
			const struct map *m = machine_find_map(&s->m, smp->pid, ip);

			/* A pending return probe put its trampoline where the
			 * return address was; the outer pending calls, innermost
			 * first, know the real ones. */
			if (m && !strcmp(m->name, "[uprobes]")) {
				tramp++;
				if (ps->nr < tramp + 1)
					continue;
				ip = ps->v[ps->nr - 1 - tramp].caller;
			}
		}
		p->ips[n++] = ip;
		if (user && first_user) {
			first_user = 0;
			/* The entry IP is the function's first instruction; the
			 * walk from the caller's frame pointer reads its caller's
			 * return address next, so the caller itself is missing. */
			if (p->caller && (i + 1 >= smp->nr_ips || smp->ips[i + 1] != p->caller) &&
			    n < MAX_IPS - 1)
				p->ips[n++] = p->caller;
		}
	}
	p->smp.ips = p->ips;
	p->smp.nr_ips = n;
}

static int out_of_range(struct allocs *a, uint64_t size)
{
	return (a->min_size && size < a->min_size) || (a->max_size && size > a->max_size);
}

static int do_free(struct allocs *a, struct session *s, int pid, uint64_t ptr, uint64_t time, alloc_cb cb,
		   void *arg)
{
	struct hashmap *m = proc_table(a, pid);
	struct hm_slot *slot;
	struct alloc_rec *r;
	int ret = 0;

	if (!ptr)
		return 0;
	slot = m ? hashmap_u64_find(m, ptr) : NULL;
	if (!slot) {
		a->unmatched_frees++;
		return 0;
	}
	r = slot->ptr;
	hashmap_u64_remove(m, ptr);
	a->nr_frees++;
	a->free_bytes += r->size;
	if (cb) {
		struct alloc_event ev = { ALLOC_FREED, r, time };

		ret = cb(s, &ev, arg);
	}
	free(r);
	return ret;
}

static int do_alloc(struct allocs *a, struct session *s, int pid, uint64_t ptr, uint64_t size, int sized,
		    enum alloc_fn fn, uint64_t time, const struct sample *stack, alloc_cb cb, void *arg)
{
	struct hashmap *m = proc_table(a, pid);
	struct hm_slot *slot;
	struct alloc_rec *r;

	if (!m)
		return -1;
	if (sized && out_of_range(a, size)) {
		a->filtered++;
		sized = 0;
		stack = NULL;
	}
	slot = hashmap_u64(m, ptr, NULL);
	if (!slot)
		return -1;
	if (slot->ptr) {
		/* The same address again without a free we saw: the free was
		 * lost or happened outside the probes (e.g. inside libc). */
		free(slot->ptr);
	}
	r = calloc(1, sizeof(*r));
	if (!(slot->ptr = r))
		return -1;
	r->ptr = ptr;
	r->size = sized ? size : 0;
	r->time = time;
	r->pid = pid;
	r->fn = fn;
	r->sized = sized;
	if (!sized)
		a->unsized++;
	if (stack && sized) {
		r->stack = stacktab_add(&a->stacks, s, stack, size);
		if (!r->stack)
			return -1;
		/* The innermost frame is the probed function's first byte:
		 * call it by the name that was probed, not by whichever alias
		 * (__libc_malloc, je_malloc) the symbol table lists first. */
		stacktab_name_top(r->stack, alloc_fn_names[fn]);
	}
	a->nr_allocs++;
	a->alloc_bytes += r->size;
	if (cb) {
		struct alloc_event ev = { ALLOC_NEW, r, time };

		return cb(s, &ev, arg);
	}
	return 0;
}

struct replay {
	struct allocs *a;
	alloc_cb cb;
	void *arg;
};

/* posix_memalign hands its pointer back through *memptr: read it from the
 * stack bytes the return sample carries. */
static int read_memptr(const struct sample *smp, uint64_t memptr, uint64_t *out)
{
	uint64_t sp;

	if (!sample_reg(smp, X86_REG_SP, &sp) || memptr < sp)
		return 0;
	return !stackdump_read(&smp->stack, NULL, memptr - sp, out, 8);
}

static int on_sample(struct session *s, struct sample *smp, void *arg)
{
	struct replay *rp = arg;
	struct allocs *a = rp->a;
	struct sess_event *e = smp->ev;
	struct pending_stack *ps;
	struct pending *p;
	uint64_t ret, size;

	if (e->kind == EVK_ALLOC_ENTRY && e->fn == AF_FREE)
		return do_free(a, s, smp->pid, session_field(s, smp, AF_PTR), smp->time, rp->cb, rp->arg);
	if (e->kind != EVK_ALLOC_ENTRY && e->kind != EVK_ALLOC_RET)
		return 0;
	ps = thread_stack(a, smp->tid);
	if (!ps)
		return -1;
	if (e->kind == EVK_ALLOC_ENTRY) {
		if (ps->nr == ps->alloc) {
			size_t n = ps->alloc ? ps->alloc * 2 : 4;
			struct pending *v = realloc(ps->v, n * sizeof(*v));

			if (!v)
				return -1;
			ps->v = v;
			ps->alloc = n;
		}
		p = &ps->v[ps->nr++];
		p->fn = e->fn;
		p->size = session_field(s, smp, AF_SIZE);
		p->nmemb = session_field(s, smp, AF_NMEMB);
		p->ptr = session_field(s, smp, AF_PTR);
		p->memptr = session_field(s, smp, AF_MEMPTR);
		p->caller = session_field(s, smp, AF_CALLER);
		p->time = smp->time;
		p->have_stack = smp->nr_ips > 0;
		repair_stack(s, ps, p, smp);
		return 0;
	}
	/* A return: find its entry, innermost first. Entries left above it
	 * lost their return (a lost event): drop them. */
	while (ps->nr && ps->v[ps->nr - 1].fn != e->fn) {
		a->entry_lost++;
		ps->nr--;
	}
	ret = session_field(s, smp, AF_RET);
	if (!ps->nr) {
		/* No entry kept (-s N or -z/-Z): the pointer is still known,
		 * so its free will match. */
		if (!ret || e->fn == AF_POSIX_MEMALIGN || e->fn == AF_REALLOC || e->fn == AF_REALLOCARRAY)
			return 0;
		return do_alloc(a, s, smp->pid, ret, 0, 0, e->fn, smp->time, NULL, rp->cb, rp->arg);
	}
	p = &ps->v[--ps->nr];
	switch (p->fn) {
	case AF_CALLOC:
	case AF_REALLOCARRAY:
		size = p->nmemb * p->size;
		break;
	default:
		size = p->size;
	}
	if (p->fn == AF_POSIX_MEMALIGN) {
		uint64_t ptr;

		if ((int32_t)ret != 0) {
			a->failed++;
			return 0;
		}
		if (!read_memptr(smp, p->memptr, &ptr)) {
			a->unknown_result++;
			return 0;
		}
		ret = ptr;
	}
	if (p->fn == AF_REALLOC || p->fn == AF_REALLOCARRAY) {
		if (!ret) {
			/* realloc(p, 0) frees p and may return NULL; any other
			 * NULL leaves the old block as it was. */
			if (p->ptr && !size)
				return do_free(a, s, smp->pid, p->ptr, smp->time, rp->cb, rp->arg);
			a->failed++;
			return 0;
		}
		if (p->ptr && do_free(a, s, smp->pid, p->ptr, smp->time, rp->cb, rp->arg))
			return -1;
	} else if (!ret) {
		a->failed++;
		return 0;
	}
	return do_alloc(a, s, smp->pid, ret, size, 1, p->fn, p->time, p->have_stack ? &p->smp : NULL, rp->cb,
			rp->arg);
}

int allocs_replay(struct allocs *a, struct session *s, alloc_cb cb, void *arg, char *err, size_t errlen)
{
	struct replay rp = { a, cb, arg };
	int r = session_replay(s, on_sample, &rp, err, errlen);

	hashmap_for_each(&a->threads, t) a->entry_lost += ((struct pending_stack *)t->ptr)->nr;
	return r;
}
