/*
 * analyze/model/kallocs.c: kernel allocation pairing; see kallocs.h.
 */
#include "kallocs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const kalloc_class_names[KA_NR] = { "slab", "pages", "percpu" };

int kallocs_init(struct kallocs *k, struct session *s, long pid)
{
	memset(k, 0, sizeof(*k));
	stacktab_init(&k->stacks, 1, 1);
	for (int c = 0; c < KA_NR; c++)
		hashmap_init(&k->live[c], 0);
	k->pid = pid;
	k->page_size = s->page_size;
	k->period = session_group_period(s, "kmem");
	return 0;
}

void kallocs_release(struct kallocs *k)
{
	for (int c = 0; c < KA_NR; c++) {
		hashmap_for_each(&k->live[c], slot) free(slot->ptr);
		hashmap_release(&k->live[c]);
	}
	stacktab_release(&k->stacks);
}

static int alloc_add(struct kallocs *k, struct session *s, const struct sample *smp, int cls, uint64_t key,
		     uint64_t bytes, int order)
{
	struct hm_slot *slot;
	struct kalloc_rec *r;
	int created;

	if (k->pid >= 0 && smp->pid != (uint32_t)k->pid)
		return 0;
	slot = hashmap_u64(&k->live[cls], key, &created);
	if (!slot)
		return -1;
	if (!created) {
		/* Its free was lost or filtered out: the old one is gone. */
		k->replaced[cls]++;
		free(slot->ptr);
	}
	r = slot->ptr = calloc(1, sizeof(*r));
	if (!r)
		return -1;
	r->key = key;
	r->bytes = bytes;
	r->time = smp->time;
	r->pid = smp->pid;
	r->cls = cls;
	r->order = order;
	r->stack = smp->nr_ips ? stacktab_add(&k->stacks, s, smp, bytes) : NULL;
	k->allocs[cls]++;
	k->alloc_bytes[cls] += bytes;
	return 0;
}

static void free_add(struct kallocs *k, int cls, uint64_t key)
{
	struct hm_slot *slot = hashmap_u64_find(&k->live[cls], key);

	k->frees[cls]++;
	if (!slot) {
		k->unmatched[cls]++;
		return;
	}
	k->matched[cls]++;
	free(slot->ptr);
	hashmap_u64_remove(&k->live[cls], key);
}

static int on_sample(struct session *s, struct sample *smp, void *arg)
{
	struct kallocs *k = arg;
	uint64_t ptr, order;

	switch (smp->ev->kind) {
	case EVK_KMALLOC:
	case EVK_KMEM_CACHE_ALLOC:
		ptr = sample_num(smp, "ptr");
		/* A failed allocation returns NULL; ZERO_SIZE_PTR is 16. */
		if (ptr <= 16)
			return 0;
		return alloc_add(k, s, smp, KA_SLAB, ptr, sample_num(smp, "bytes_alloc"), 0);
	case EVK_KFREE:
	case EVK_KMEM_CACHE_FREE:
		ptr = sample_num(smp, "ptr");
		if (ptr > 16)
			free_add(k, KA_SLAB, ptr);
		return 0;
	case EVK_PAGE_ALLOC:
		ptr = sample_num(smp, "pfn");
		order = sample_num(smp, "order");
		if (ptr == ~0ull || order > 20) {
			k->failed++;
			return 0;
		}
		return alloc_add(k, s, smp, KA_PAGE, ptr, (uint64_t)k->page_size << order, order);
	case EVK_PAGE_FREE:
	case EVK_PAGE_FREE_BATCHED:
		free_add(k, KA_PAGE, sample_num(smp, "pfn"));
		return 0;
	case EVK_PERCPU_ALLOC:
		ptr = sample_num(smp, "ptr");
		if (!ptr)
			return 0;
		return alloc_add(k, s, smp, KA_PERCPU, ptr, sample_num(smp, "bytes_alloc"), 0);
	case EVK_PERCPU_FREE:
		free_add(k, KA_PERCPU, sample_num(smp, "ptr"));
		return 0;
	default:
		return 0;
	}
}

int kallocs_sample(struct kallocs *k, struct session *s, struct sample *smp)
{
	return on_sample(s, smp, k);
}

int kallocs_replay(struct kallocs *k, struct session *s, char *err, size_t errlen)
{
	int r;

	err[0] = 0;
	r = session_replay(s, on_sample, k, err, errlen);
	if (r && !err[0])
		snprintf(err, errlen, "out of memory");
	return r ? -1 : 0;
}
