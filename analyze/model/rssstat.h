/*
 * analyze/model/rssstat.h: resident memory per mm, from kmem:rss_stat
 * (record -e rss).
 *
 * Owns reading the kernel's counters: each change of a counter (file,
 * anonymous, swap entries, shmem) of an mm gives its new size. rss_stat
 * names an mm by a hashed id, and a change is often made by a task that is
 * not the mm's owner (reclaim, exit): an id is tied to a process the first
 * time its own task reports it (curr=1), and changes before that are left
 * out, counted. Knows nothing of printing.
 */
#ifndef MEMSIGHT_RSSSTAT_H
#define MEMSIGHT_RSSSTAT_H

#include <stdint.h>

#include "../hashmap.h"
#include "../replay/session.h"

enum { RSS_FILE, RSS_ANON, RSS_SWAP, RSS_SHMEM, RSS_NR };

extern const char *const rss_member_names[RSS_NR];	/* "file", "anon", "swap", "shmem" */

struct rss_mm {
	int pid;
	uint32_t mm_id;
	const char *comm;
	int64_t cur[RSS_NR];	/* bytes */
	int64_t peak;		/* of file + anon + shmem */
	void *user;		/* the caller's */
};

struct rssstat {
	struct hashmap by_mm;	/* mm_id -> struct rss_mm * */
	uint64_t unowned;	/* changes to an mm never reported by its own task */
	int64_t total;		/* resident, summed over the mms */
};

void rssstat_init(struct rssstat *r);
void rssstat_release(struct rssstat *r);
/* Take smp when it is an rss_stat change: *mm is the mm it changed (NULL
 * when smp is no such change, or one left out). Returns 0 or -ENOMEM. */
int rssstat_sample(struct rssstat *r, struct session *s, struct sample *smp, struct rss_mm **mm);

/* file + anon + shmem */
static inline int64_t rss_resident(const int64_t *v)
{
	return v[RSS_FILE] + v[RSS_ANON] + v[RSS_SHMEM];
}

#endif
