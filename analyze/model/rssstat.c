/*
 * analyze/model/rssstat.c: resident memory per mm; see rssstat.h.
 */
#include "rssstat.h"

#include <errno.h>
#include <stdlib.h>

const char *const rss_member_names[RSS_NR] = { "file", "anon", "swap", "shmem" };

void rssstat_init(struct rssstat *r)
{
	hashmap_init(&r->by_mm, 0);
	r->unowned = 0;
	r->total = 0;
}

void rssstat_release(struct rssstat *r)
{
	hashmap_for_each(&r->by_mm, slot) free(slot->ptr);
	hashmap_release(&r->by_mm);
}

int rssstat_sample(struct rssstat *r, struct session *s, struct sample *smp, struct rss_mm **out)
{
	int64_t member;
	uint32_t mm;
	struct hm_slot *slot;
	struct rss_mm *m;

	*out = NULL;
	if (smp->ev->kind != EVK_RSS_STAT)
		return 0;
	member = sample_snum(smp, "member");
	if (member < 0 || member >= RSS_NR)
		return 0;
	mm = (uint32_t)sample_num(smp, "mm_id");
	if (!(slot = hashmap_u64(&r->by_mm, mm, NULL)))
		return -ENOMEM;
	if (!slot->ptr) {
		if (!sample_num(smp, "curr")) {
			r->unowned++;
			return 0;
		}
		if (!(slot->ptr = calloc(1, sizeof(*m))))
			return -ENOMEM;
		m = slot->ptr;
		m->pid = smp->pid;
		m->mm_id = mm;
	}
	m = slot->ptr;
	if (sample_num(smp, "curr"))
		/* After an exec the same task has a new mm: follow the name. */
		m->comm = machine_comm(&s->m, m->pid, m->pid);
	r->total -= rss_resident(m->cur);
	m->cur[member] = sample_snum(smp, "size");
	r->total += rss_resident(m->cur);
	if (rss_resident(m->cur) > m->peak)
		m->peak = rss_resident(m->cur);
	*out = m;
	return 0;
}
