/*
 * record/probes/lateprobe.c: which allocator objects recorded processes map
 * that no probe covers yet (lateprobe.h has the contract). A uprobe
 * belongs to a file, and the kernel puts it into every mapping of that
 * file made after it is defined, at the mapping itself: so for -a an
 * object probed once is covered everywhere from then on. Events that
 * follow tasks reach only the tasks they were opened on and the children
 * those fork afterwards, which is what the per-process lists track.
 */
#include "lateprobe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../formats/allocfns.h"

void lateprobe_start(struct lateprobe *lp, const struct uprobe_opts *u, const struct rec_opts_events *o,
		     int per_task, int nr_groups, uint64_t start_ns)
{
	lp->on = 1;
	lp->per_task = per_task;
	lp->u = *u;
	lp->o = *o;
	lp->next_group = nr_groups + 1;
	lp->start_ns = start_ns;
	/* The files probed, as uprobes_add found them. */
	for (int i = 0; i < u->objects.nr; i++) {
		struct late_obj *ob;

		if (!u->objects.v[i].ino || !(ob = lateprobe_obj_add(lp, u->objects.v[i].dev, u->objects.v[i].ino)))
			continue;
		ob->at_start = 1;
	}
}

struct late_obj *lateprobe_obj_find(struct lateprobe *lp, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < lp->nr; i++)
		if (lp->objs[i].dev == dev && lp->objs[i].ino == ino)
			return &lp->objs[i];
	return NULL;
}

struct late_obj *lateprobe_obj_add(struct lateprobe *lp, dev_t dev, ino_t ino)
{
	struct late_obj *ob;

	if (lp->nr == lp->alloc) {
		size_t n = lp->alloc ? lp->alloc * 2 : 8;
		struct late_obj *v = realloc(lp->objs, n * sizeof(*v));

		if (!v)
			return NULL;
		lp->objs = v;
		lp->alloc = n;
	}
	ob = &lp->objs[lp->nr++];
	memset(ob, 0, sizeof(*ob));
	ob->dev = dev;
	ob->ino = ino;
	return ob;
}

static struct late_pid *pid_find(struct late_obj *ob, pid_t pid)
{
	for (size_t i = 0; i < ob->nr_pids; i++)
		if (ob->pids[i].pid == pid)
			return &ob->pids[i];
	return NULL;
}

int lateprobe_pid_add(struct late_obj *ob, pid_t pid, uint64_t since)
{
	struct late_pid *p = pid_find(ob, pid);

	if (p)
		return 0;
	if (ob->nr_pids == ob->alloc_pids) {
		size_t n = ob->alloc_pids ? ob->alloc_pids * 2 : 8;
		struct late_pid *v = realloc(ob->pids, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ob->pids = v;
		ob->alloc_pids = n;
	}
	ob->pids[ob->nr_pids++] = (struct late_pid){ pid, since };
	return 0;
}

int lateprobe_covers(const struct lateprobe *lp, struct late_obj *ob, pid_t pid, uint64_t *since)
{
	struct late_pid *p;

	*since = 0;
	if (ob->at_start)
		return 1;
	if (!ob->end_ev)
		return 0;
	if (!lp->per_task) {
		*since = ob->live_ns;
		return 1;
	}
	if (!(p = pid_find(ob, pid)))
		return 0;
	*since = p->since;
	return 1;
}

void lateprobe_line(struct lateprobe *lp, pid_t pid, uint64_t mapped, uint64_t since, const char *path)
{
	char line[64 + sizeof(((struct late_pending *)0)->path)];
	int n;

	if (!mapped)
		mapped = lp->start_ns;
	n = snprintf(line, sizeof(line), "%d\t%llu\t%s\n", (int)pid,
		     (unsigned long long)(since > mapped ? since - mapped : 0), path);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	if (lp->lines_len + n > lp->lines_alloc) {
		size_t a = lp->lines_alloc ? lp->lines_alloc * 2 : 4096;
		char *v;

		while (a < lp->lines_len + n)
			a *= 2;
		if (!(v = realloc(lp->lines, a)))
			return;
		lp->lines = v;
		lp->lines_alloc = a;
	}
	memcpy(lp->lines + lp->lines_len, line, n);
	lp->lines_len += n;
}

void lateprobe_map(struct lateprobe *lp, pid_t pid, uint64_t start, uint64_t end, const char *path, uint64_t time)
{
	char mf[96];
	struct stat st;
	struct late_obj *ob;
	struct late_pending *p;
	uint64_t since;

	if (!lp->on || path[0] != '/' || !alloc_object_is_allocator(path))
		return;
	/* The very file this process mapped, whatever its path means here. */
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)start,
		 (unsigned long long)end);
	if (stat(mf, &st) || !S_ISREG(st.st_mode))
		return;
	ob = lateprobe_obj_find(lp, st.st_dev, st.st_ino);
	if (ob && lateprobe_covers(lp, ob, pid, &since)) {
		/* Said for each process that maps a file probed while
		 * recording, so an analyzer knows it was seen. */
		if (!ob->at_start)
			lateprobe_line(lp, pid, time, since, path);
		return;
	}
	if (ob && ob->failed)
		return;
	for (size_t i = 0; i < lp->nr_pend; i++)
		if (lp->pend[i].pid == pid && lp->pend[i].dev == st.st_dev && lp->pend[i].ino == st.st_ino)
			return;
	if (lp->nr_pend == lp->alloc_pend) {
		size_t n = lp->alloc_pend ? lp->alloc_pend * 2 : 8;
		struct late_pending *v = realloc(lp->pend, n * sizeof(*v));

		if (!v)
			return;
		lp->pend = v;
		lp->alloc_pend = n;
	}
	p = &lp->pend[lp->nr_pend++];
	*p = (struct late_pending){ pid, start, end, time, st.st_dev, st.st_ino, "" };
	snprintf(p->path, sizeof(p->path), "%s", path);
}

void lateprobe_fork(struct lateprobe *lp, pid_t child, pid_t parent, uint64_t time)
{
	if (!lp->on || !lp->per_task)
		return;
	/* A child forked after its parent's events were opened has them. */
	for (size_t i = 0; i < lp->nr; i++) {
		struct late_pid *p = pid_find(&lp->objs[i], parent);

		if (p && time >= p->since)
			lateprobe_pid_add(&lp->objs[i], child, p->since);
	}
}

void lateprobe_exit(struct lateprobe *lp, pid_t pid)
{
	if (!lp->on || !lp->per_task)
		return;
	for (size_t i = 0; i < lp->nr; i++) {
		struct late_obj *ob = &lp->objs[i];
		struct late_pid *p = pid_find(ob, pid);

		if (p)
			*p = ob->pids[--ob->nr_pids];
	}
}

char *lateprobe_take_lines(struct lateprobe *lp, size_t *len)
{
	char *t = lp->lines;

	*len = lp->lines_len;
	lp->lines = NULL;
	lp->lines_len = lp->lines_alloc = 0;
	return *len ? t : (free(t), NULL);
}

void lateprobe_release(struct lateprobe *lp)
{
	for (size_t i = 0; i < lp->nr; i++)
		free(lp->objs[i].pids);
	free(lp->objs);
	free(lp->pend);
	free(lp->lines);
	memset(lp, 0, sizeof(*lp));
}
