/*
 * analyze/model/heapprof.c: the heap over time; see heapprof.h.
 */
#include "heapprof.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

unsigned heapprof_size_class(uint64_t size)
{
	unsigned c = size > 1 ? 64 - (unsigned)__builtin_clzll(size - 1) : 0;

	return c < HEAP_SIZE_CLASSES ? c : HEAP_SIZE_CLASSES - 1;
}

void heapprof_init(struct heapprof *h)
{
	memset(h, 0, sizeof(*h));
	hashmap_init(&h->sites, 0);
	hashmap_init(&h->procs, 0);
	hashmap_init(&h->last, 0);
}

void heapprof_release(struct heapprof *h)
{
	hashmap_for_each(&h->sites, slot) free(slot->ptr);
	hashmap_for_each(&h->procs, slot) free(slot->ptr);
	hashmap_release(&h->sites);
	hashmap_release(&h->procs);
	hashmap_for_each(&h->last, slot) free(slot->ptr);
	hashmap_release(&h->last);
}

/* Every stack's bytes now are its bytes at the peak. */
static void peak_take(struct heapprof *h)
{
	hashmap_for_each(&h->sites, slot) {
		struct heap_site *site = slot->ptr;

		site->at_peak = site->cur;
	}
	h->peak_pending = 0;
}

/* pid exec'd: its row so far is the old program's, under the old name,
 * and the new program starts a row of its own. */
static int proc_retire(struct heapprof *h, int pid)
{
	struct hm_slot *slot = hashmap_u64_find(&h->procs, (uint32_t)pid);
	struct hm_slot *old;

	if (!slot || !slot->ptr)
		return 0;
	old = hashmap_u64(&h->procs, (uint32_t)pid | (uint64_t)++h->retired << 32, NULL);
	if (!old)
		return -ENOMEM;
	/* The insert may have moved the table: look the pid up again. */
	slot = hashmap_u64_find(&h->procs, (uint32_t)pid);
	old->ptr = slot->ptr;
	hashmap_u64_remove(&h->procs, (uint32_t)pid);
	return 0;
}

int heapprof_event(struct heapprof *h, struct session *s, const struct alloc_event *ev)
{
	const struct alloc_rec *r = ev->rec;

	h->was_temporary = 0;
	if (ev->kind == ALLOC_EXEC)
		return proc_retire(h, ev->pid);
	if (!r)
		return 0;
	struct heap_proc *p = hashmap_u64_obj(&h->procs, (uint32_t)r->pid, sizeof(*p));
	struct heap_site *site = r->stack ? hashmap_u64_obj(&h->sites, (uintptr_t)r->stack, sizeof(*site)) : NULL;
	struct heap_last *last = hashmap_u64_obj(&h->last, (uint32_t)r->pid, sizeof(*last));
	uint64_t bytes = alloc_rec_bytes(r); /* a sampler's sample: its estimate */

	if (!p || (r->stack && !site) || !last)
		return -ENOMEM;
	p->pid = r->pid;
	/* A release by exec comes once the new name is in. */
	if (!ev->exec)
		p->comm = machine_comm(&s->m, r->pid, r->pid);
	if (site)
		site->stack = r->stack;
	if (ev->kind == ALLOC_NEW) {
		unsigned c = heapprof_size_class(r->size);

		h->size_calls[c] += alloc_rec_count(r);
		h->size_bytes[c] += bytes;
		p->calls += alloc_rec_count(r);
		p->bytes += bytes;
		p->cur += bytes;
		h->cur += bytes;
		if (site)
			site->cur += bytes;
		last->stack = r->stack;
		last->size = r->size;
		last->set = 1;
		if (p->cur > p->peak) {
			p->peak = p->cur;
			p->peak_time = ev->time;
		}
		if (h->cur > h->peak) {
			h->peak = h->cur;
			h->peak_time = ev->time;
			h->peak_pending = 1;
		}
		return 0;
	}
	/* The heap only falls from here: if it had just climbed to a new
	 * peak, that was the peak's moment. */
	if (h->peak_pending)
		peak_take(h);
	h->cur -= bytes;
	if (site)
		site->cur -= bytes;
	/* What the old program held when it exec'd stays its figure at end. */
	if (ev->exec)
		return 0;
	p->frees += alloc_rec_count(r);
	p->freed_bytes += bytes;
	p->cur -= bytes;
	/* heaptrack's rule: a free whose block was allocated where, and
	 * with the size, the process's latest allocation was, and no free
	 * came between. */
	if (last->set && last->stack == r->stack && last->size == r->size) {
		p->temporary++;
		h->size_temporary[heapprof_size_class(r->size)]++;
		h->was_temporary = 1;
		if (site)
			site->temporary++;
	}
	last->set = 0;
	return 0;
}

void heapprof_finish(struct heapprof *h)
{
	if (h->peak_pending)
		peak_take(h);
}

int heapprof_cb(struct session *s, const struct alloc_event *ev, void *arg)
{
	return heapprof_event(arg, s, ev);
}
