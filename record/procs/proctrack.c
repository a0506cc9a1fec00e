/*
 * record/procs/proctrack.c: the processes a ring restates; see proctrack.h.
 */
#include "proctrack.h"

#include "../../formats/trace.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct pt_map {
	uint64_t start, end, pgoff;
	uint64_t time; /* of the record (or /proc read) that told it */
	char *rest;    /* "perms\tpgoff-less fields": perms, dev, inode, build-id, path */
	int anon;      /* no file, no name: counted against PROCTRACK_ANON_MAX */
};

struct pt_proc {
	pid_t pid, ppid;
	char comm[17];
	pid_t *tids;
	size_t nr_tids;
	struct pt_map *maps;
	size_t nr_maps, alloc_maps;
	uint64_t since;	    /* when its address space began: its exec, fork or /proc read */
	uint64_t forked;    /* when it was forked; since equals it until an exec */
	uint64_t last_fork; /* when it last forked a child */
	uint64_t exited;    /* the generation it exited in, plus one; 0 while it runs */
	uint64_t exit_time; /* when it exited */
};

static size_t slot_of(const struct proctrack *t, pid_t pid)
{
	size_t i = ((uint32_t)pid * 2654435761u) & (t->alloc - 1);

	while (t->slots[i] && t->slots[i]->pid != pid)
		i = (i + 1) & (t->alloc - 1);
	return i;
}

static struct pt_proc *find(const struct proctrack *t, pid_t pid)
{
	return t->alloc ? t->slots[slot_of(t, pid)] : NULL;
}

static int grow(struct proctrack *t)
{
	size_t n = t->alloc ? t->alloc * 2 : 256;
	struct pt_proc **old = t->slots, **p = calloc(n, sizeof(*p));
	size_t oa = t->alloc;

	if (!p)
		return -1;
	t->slots = p;
	t->alloc = n;
	for (size_t i = 0; i < oa; i++)
		if (old[i])
			t->slots[slot_of(t, old[i]->pid)] = old[i];
	free(old);
	return 0;
}

static struct pt_proc *get(struct proctrack *t, pid_t pid)
{
	struct pt_proc *p = find(t, pid);

	if (p)
		return p;
	if ((t->nr + 1) * 2 > t->alloc && grow(t))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	t->slots[slot_of(t, pid)] = p;
	t->nr++;
	return p;
}

static void proc_clear_maps(struct pt_proc *p)
{
	for (size_t i = 0; i < p->nr_maps; i++)
		free(p->maps[i].rest);
	p->nr_maps = 0;
}

static void proc_free(struct pt_proc *p)
{
	proc_clear_maps(p);
	free(p->maps);
	free(p->tids);
	free(p);
}

/* Remove what [start, end) covers: a new mapping replaces it. */
static void maps_cut(struct pt_proc *p, uint64_t start, uint64_t end)
{
	size_t n = p->nr_maps;

	for (size_t i = 0; i < n; i++) {
		struct pt_map *m = &p->maps[i];

		if (m->end <= start || m->start >= end)
			continue;
		if (m->start < start && m->end > end) {
			/* Split: the tail stays as a mapping of its own. */
			struct pt_map tail = { end, m->end, m->pgoff + (end - m->start), m->time, strdup(m->rest),
					       m->anon };

			m->end = start;
			if (tail.rest && p->nr_maps < p->alloc_maps)
				p->maps[p->nr_maps++] = tail;
			else
				free(tail.rest);
		} else if (m->start < start) {
			m->end = start;
		} else if (m->end > end) {
			m->pgoff += end - m->start;
			m->start = end;
		} else {
			free(m->rest);
			m->rest = NULL;
		}
	}
	n = 0;
	for (size_t i = 0; i < p->nr_maps; i++)
		if (p->maps[i].rest)
			p->maps[n++] = p->maps[i];
	p->nr_maps = n;
}

/* [start, end) as one mapping, over whatever it covers. */
static int maps_put(struct pt_proc *p, uint64_t start, uint64_t end, uint64_t pgoff, uint64_t time,
		    const char *rest, int anon)
{
	char *copy;

	/* Room for the mapping and the split maps_cut may make. */
	if (p->nr_maps + 2 > p->alloc_maps) {
		size_t n = p->alloc_maps ? p->alloc_maps * 2 : 32;
		struct pt_map *m = realloc(p->maps, n * sizeof(*m));

		if (!m)
			return -1;
		p->maps = m;
		p->alloc_maps = n;
	}
	if (!(copy = strdup(rest)))
		return -1;
	maps_cut(p, start, end);
	p->maps[p->nr_maps++] = (struct pt_map){ start, end, pgoff, time, copy, anon };
	return 0;
}

/* Only the newest PROCTRACK_ANON_MAX anonymous mappings stay. */
static void maps_trim_anon(struct pt_proc *p)
{
	for (;;) {
		size_t nr = 0, oldest = 0;

		for (size_t i = 0; i < p->nr_maps; i++) {
			if (!p->maps[i].anon)
				continue;
			if (!nr++ || p->maps[i].time < p->maps[oldest].time)
				oldest = i;
		}
		if (nr <= PROCTRACK_ANON_MAX)
			return;
		free(p->maps[oldest].rest);
		p->maps[oldest] = p->maps[--p->nr_maps];
	}
}

/*
 * A mapping told at time: over the older ones it covers, and under the
 * newer ones. The records of one process come from every CPU's ring it
 * ran on, one ring after another, so a mapping can arrive after one made
 * later over part of it (a loader maps a library whole, then its segments
 * over it). Only the gaps the newer ones leave are its own.
 */
static int maps_add(struct pt_proc *p, uint64_t start, uint64_t end, uint64_t pgoff, uint64_t time,
		    const char *rest, int anon)
{
	for (uint64_t at = start; at < end;) {
		/* The first newer mapping over what is left: [from, to). */
		uint64_t from = end, to = end;

		for (size_t i = 0; i < p->nr_maps; i++) {
			const struct pt_map *m = &p->maps[i];

			if (m->time > time && m->start < end && m->end > at && m->start < from) {
				from = m->start;
				to = m->end;
			}
		}
		if (from > at && maps_put(p, at, from, pgoff + (at - start), time, rest, anon))
			return -1;
		at = to;
	}
	/* Fewer mappings than the bound hold fewer anonymous ones. */
	if (anon && p->nr_maps > PROCTRACK_ANON_MAX)
		maps_trim_anon(p);
	return 0;
}

/* The address space begins anew at time (an exec, a fork): what was told
 * before it goes, what was told after it (from another CPU's ring, read
 * first) stays. */
static void proc_begin(struct pt_proc *p, uint64_t time)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nr_maps; i++) {
		if (p->maps[i].time >= time)
			p->maps[n++] = p->maps[i];
		else
			free(p->maps[i].rest);
	}
	p->nr_maps = n;
	if (time > p->since)
		p->since = time;
}

static void tid_add(struct pt_proc *p, pid_t tid)
{
	pid_t *v;

	for (size_t i = 0; i < p->nr_tids; i++)
		if (p->tids[i] == tid)
			return;
	v = realloc(p->tids, (p->nr_tids + 1) * sizeof(*v));
	if (!v)
		return;
	p->tids = v;
	p->tids[p->nr_tids++] = tid;
}

int proctrack_load(struct proctrack *t, const char *text, size_t len, uint64_t time)
{
	const char *s = text, *end = text + len;
	struct pt_proc *p = NULL;

	while (s < end) {
		const char *nl = memchr(s, '\n', end - s), *le = nl ? nl : end;
		char line[4352];
		size_t n = (size_t)(le - s) < sizeof(line) - 1 ? (size_t)(le - s) : sizeof(line) - 1;

		memcpy(line, s, n);
		line[n] = 0;
		s = le + 1;
		if (!strncmp(line, "pid ", 4)) {
			p = get(t, atoi(line + 4));
			if (!p)
				return -1;
			proc_begin(p, time);
			p->exited = 0;
		} else if (p && !strncmp(line, "ppid ", 5)) {
			p->ppid = atoi(line + 5);
		} else if (p && !strncmp(line, "comm ", 5)) {
			snprintf(p->comm, sizeof(p->comm), "%.16s", line + 5);
		} else if (p && !strncmp(line, "threads", 7)) {
			char *q = line + 7, *e;

			for (long v; (v = strtol(q, &e, 10)), e != q; q = e)
				if (v != p->pid)
					tid_add(p, v);
		} else if (p && !strncmp(line, "map\t", 4)) {
			char *f = line + 4, *e1, *e2, *perms;
			uint64_t start = strtoull(f, &e1, 16), mend, pgoff;

			if (*e1 != '\t')
				continue;
			mend = strtoull(e1 + 1, &e2, 16);
			if (*e2 != '\t')
				continue;
			perms = e2 + 1;
			e1 = strchr(perms, '\t');
			if (!e1)
				continue;
			pgoff = strtoull(e1 + 1, &e2, 16);
			if (*e2 != '\t')
				continue;
			/* Kept as "perms\tdev\tinode\tbuild-id\tpath". */
			memmove(e1 + 1, e2 + 1, strlen(e2 + 1) + 1);
			if (maps_add(p, start, mend, pgoff, time, perms, perms[strlen(perms) - 1] == '\t'))
				return -1;
		}
	}
	return 0;
}

/* A mapping p made at time, and so the children it had forked since,
 * unless they have exec'd: their FORK records can have been read first. */
static void proc_map(struct proctrack *t, struct pt_proc *p, uint64_t start, uint64_t end, uint64_t pgoff,
		     uint64_t time, const char *rest, int anon, int depth)
{
	maps_add(p, start, end, pgoff, time, rest, anon);
	if (p->last_fork <= time || depth >= 8)
		return;
	for (size_t i = 0; i < t->alloc; i++) {
		struct pt_proc *c = t->slots[i];

		if (c && c->ppid == p->pid && c->forked > time && c->since == c->forked)
			proc_map(t, c, start, end, pgoff, time, rest, anon, depth + 1);
	}
}

static void on_mmap2(struct proctrack *t, const unsigned char *r, size_t len, uint16_t misc, uint64_t time)
{
	uint32_t pid, prot, flags;
	uint64_t addr, size, pgoff;
	const char *name = (const char *)r + 72;
	char rest[4352], dev[32], bid[48] = "-";
	struct pt_proc *p;
	int anon;

	if (len <= 72 || !memchr(name, 0, len - 72))
		return;
	/* "//anon", and what else the kernel names with no path: "[heap]"
	 * and "[stack]" are few, and not counted. */
	anon = name[0] != '[' && (name[0] != '/' || name[1] == '/');
	memcpy(&pid, r + 8, 4);
	memcpy(&addr, r + 16, 8);
	memcpy(&size, r + 24, 8);
	memcpy(&pgoff, r + 32, 8);
	memcpy(&prot, r + 64, 4);
	memcpy(&flags, r + 68, 4);
	p = get(t, (pid_t)pid);
	/* Made before the exec or fork that began what it has now. */
	if (!p || time < p->since)
		return;
	if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		unsigned n = r[40] > 20 ? 20 : r[40];

		for (unsigned i = 0; i < n; i++)
			sprintf(bid + 2 * i, "%02x", r[44 + i]);
		if (!n)
			strcpy(bid, "-");
		strcpy(dev, "00:00\t0");
	} else {
		uint32_t maj, min;
		uint64_t ino;

		memcpy(&maj, r + 40, 4);
		memcpy(&min, r + 44, 4);
		memcpy(&ino, r + 48, 8);
		snprintf(dev, sizeof(dev), "%02x:%02x\t%llu", maj, min, (unsigned long long)ino);
	}
	snprintf(rest, sizeof(rest), "%c%c%c%c\t%s\t%s\t%s", prot & PROT_READ ? 'r' : '-',
		 prot & PROT_WRITE ? 'w' : '-', prot & PROT_EXEC ? 'x' : '-', flags & MAP_SHARED ? 's' : 'p',
		 dev, bid, name[0] == '/' && name[1] == '/' ? "" : name);
	proc_map(t, p, addr, addr + size, pgoff, time, rest, anon, 0);
}

void proctrack_record(struct proctrack *t, const void *rec, size_t len)
{
	const unsigned char *r = rec;
	struct perf_event_header h;
	uint32_t a, b, c;
	struct pt_proc *p, *parent;
	uint64_t time;

	if (len < sizeof(h))
		return;
	memcpy(&h, r, sizeof(h));
	/* Records come a ring at a time, not in time order: each change is
	 * placed by its time among those already told (maps_add). */
	time = trace_record_time(r, len);
	switch (h.type) {
	case PERF_RECORD_MMAP2:
		on_mmap2(t, r, len, h.misc, time);
		break;
	case PERF_RECORD_COMM:
		if (len < 16 + 16)
			return;
		memcpy(&a, r + 8, 4);
		memcpy(&b, r + 12, 4);
		if (a != b || !(p = get(t, (pid_t)a)))
			return;
		snprintf(p->comm, sizeof(p->comm), "%.16s", (const char *)r + 16);
		/* An exec: a new address space, told by the MMAP2s after it. */
		if (h.misc & PERF_RECORD_MISC_COMM_EXEC)
			proc_begin(p, time);
		break;
	case PERF_RECORD_FORK:
		if (len < 24)
			return;
		memcpy(&a, r + 8, 4);  /* pid */
		memcpy(&b, r + 12, 4); /* ppid */
		memcpy(&c, r + 16, 4); /* tid */
		if (a == b) {
			if ((p = get(t, (pid_t)a)) && c != a)
				tid_add(p, (pid_t)c);
			return;
		}
		parent = find(t, (pid_t)b);
		p = get(t, (pid_t)a);
		if (!p)
			return;
		proc_begin(p, time);
		p->forked = time;
		/* An exit read before its fork stands. */
		if (p->exit_time < time)
			p->exited = 0;
		p->ppid = (pid_t)b;
		parent = find(t, (pid_t)b); /* get() may have moved the slots, not the processes */
		if (!parent)
			return;
		if (time > parent->last_fork)
			parent->last_fork = time;
		/* An exec told first began the address space it has now. */
		if (p->since != time)
			return;
		memcpy(p->comm, parent->comm, sizeof(p->comm));
		/* What the parent had then; what it mapped since is its own. */
		for (size_t i = 0; i < parent->nr_maps; i++)
			if (parent->maps[i].time <= time)
				maps_add(p, parent->maps[i].start, parent->maps[i].end, parent->maps[i].pgoff,
					 parent->maps[i].time, parent->maps[i].rest, parent->maps[i].anon);
		break;
	case PERF_RECORD_EXIT:
		if (len < 24)
			return;
		memcpy(&a, r + 8, 4);
		memcpy(&c, r + 16, 4);
		if (a == c && (p = get(t, (pid_t)a)) && !p->exited) {
			p->exited = t->generation + 1;
			p->exit_time = time;
		}
		break;
	}
}

/* How much of its mappings a restatement keeps, the most first. */
enum pt_keep { PT_KEEP_ALL, PT_KEEP_FILES, PT_KEEP_CODE, PT_KEEP_NONE };

static int map_kept(const struct pt_map *m, enum pt_keep keep)
{
	if (keep == PT_KEEP_ALL)
		return 1;
	if (keep == PT_KEEP_NONE || m->anon)
		return 0;
	/* perms first: "r-xp" */
	return keep == PT_KEEP_FILES || m->rest[2] == 'x';
}

/* The most a process's text can take at each keep (the buffer it is
 * written into), in one pass over its mappings. */
static void proc_text_max(const struct pt_proc *p, size_t size[PT_KEEP_NONE + 1])
{
	for (int k = 0; k <= PT_KEEP_NONE; k++)
		size[k] = 128 + 24 * p->nr_tids;
	for (size_t i = 0; i < p->nr_maps; i++) {
		size_t line = 64 + strlen(p->maps[i].rest);

		for (int k = 0; k < PT_KEEP_NONE; k++)
			size[k] += map_kept(&p->maps[i], (enum pt_keep)k) ? line : 0;
	}
}

/* The most of its mappings a process keeps within cap bytes, given its
 * size at each keep. */
static enum pt_keep keep_under(const size_t size[PT_KEEP_NONE + 1], size_t cap)
{
	int k = PT_KEEP_ALL;

	while (k < PT_KEEP_NONE && size[k] > cap)
		k++;
	return (enum pt_keep)k;
}

/* Restated: not one known by its exit alone (its fork not read yet, or
 * never), which has nothing to restate. */
static int proc_restated(const struct pt_proc *p)
{
	return p && !(p->exited && !p->comm[0] && !p->nr_maps);
}

int proctrack_emit(struct proctrack *t, size_t budget, int (*emit)(void *arg, const char *text, size_t len),
		   void *arg)
{
	char *buf = NULL;
	size_t alloc = 0, used = 0, cap = 0, all = 0, (*size)[PT_KEEP_NONE + 1];
	int ret = 0, left_out = 0, cut = 0;

	t->generation++;
	/* Drop those that exited two segments ago, then rehash the rest. */
	for (size_t i = 0; i < t->alloc; i++) {
		struct pt_proc *p = t->slots[i];

		if (p && p->exited && p->exited + 2 <= t->generation) {
			proc_free(p);
			t->slots[i] = NULL;
			t->nr--;
		}
	}
	if (t->alloc) {
		struct pt_proc **old = t->slots;
		size_t oa = t->alloc;

		t->slots = calloc(oa, sizeof(*t->slots));
		if (!t->slots) {
			t->slots = old;
			return -1;
		}
		for (size_t i = 0; i < oa; i++)
			if (old[i])
				t->slots[slot_of(t, old[i]->pid)] = old[i];
		free(old);
	}
	/* Each process's size at each keep, then the largest cap on any
	 * one's size under which they all fit: those above it are cut back
	 * a kind of mapping at a time, the others keep all of theirs. */
	size = malloc((t->alloc ? t->alloc : 1) * sizeof(*size));
	if (!size)
		return -1;
	for (size_t i = 0; i < t->alloc; i++) {
		if (proc_restated(t->slots[i]))
			proc_text_max(t->slots[i], size[i]);
		else
			memset(size[i], 0, sizeof(size[i]));
		all += size[i][PT_KEEP_ALL];
	}
	if (all <= budget)
		cap = SIZE_MAX;
	for (size_t lo = 0, hi = SIZE_MAX / 2; cap != SIZE_MAX && lo <= hi;) {
		size_t mid = lo + (hi - lo) / 2, total = 0;

		for (size_t i = 0; i < t->alloc; i++)
			total += size[i][keep_under(size[i], mid)];
		if (total <= budget) {
			cap = mid;
			lo = mid + 1;
		} else if (!mid) {
			break;
		} else {
			hi = mid - 1;
		}
	}
	for (size_t i = 0; i < t->alloc && !ret; i++) {
		struct pt_proc *p = t->slots[i];
		size_t n, need;
		enum pt_keep keep;

		if (!proc_restated(p))
			continue;
		keep = keep_under(size[i], cap);
		need = size[i][keep];
		cut |= keep != PT_KEEP_ALL;
		/* Where the processes alone do not fit, the last are left out. */
		if (used + need > budget) {
			left_out = 1;
			continue;
		}
		used += need;
		if (need > alloc) {
			char *b = realloc(buf, need);

			if (!b) {
				ret = -1;
				break;
			}
			buf = b;
			alloc = need;
		}
		n = snprintf(buf, alloc, "pid %d\nppid %d\ncomm %s\nthreads %d", p->pid, p->ppid, p->comm, p->pid);
		for (size_t k = 0; k < p->nr_tids; k++)
			n += snprintf(buf + n, alloc - n, " %d", p->tids[k]);
		n += snprintf(buf + n, alloc - n, "\n");
		for (size_t k = 0; k < p->nr_maps; k++) {
			const struct pt_map *m = &p->maps[k];
			const char *tab = strchr(m->rest, '\t');
			int pl = tab ? (int)(tab - m->rest) : (int)strlen(m->rest);

			if (!map_kept(m, keep))
				continue;
			n += snprintf(buf + n, alloc - n, "map\t%llx\t%llx\t%.*s\t%llx%s\n", (unsigned long long)m->start,
				      (unsigned long long)m->end, pl, m->rest, (unsigned long long)m->pgoff,
				      tab ? tab : "\t\t\t-\t");
		}
		ret = emit(arg, buf, n);
	}
	t->cut += cut || left_out;
	t->dropped += left_out;
	free(size);
	free(buf);
	return ret;
}

void proctrack_release(struct proctrack *t)
{
	for (size_t i = 0; i < t->alloc; i++)
		if (t->slots[i])
			proc_free(t->slots[i]);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
