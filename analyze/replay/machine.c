/*
 * analyze/replay/machine.c: processes, threads and maps during replay.
 */
#include "machine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void machine_init(struct machine *m, struct symbols *syms)
{
	memset(m, 0, sizeof(*m));
	hashmap_init(&m->procs, 0);
	hashmap_init(&m->threads, 0);
	hashmap_init(&m->comms, 0);
	hashmap_init(&m->names, 1);
	m->syms = syms;
}

void machine_release(struct machine *m)
{
	hashmap_for_each(&m->procs, s) {
		struct process *p = s->ptr;

		if (m->priv_free && p->priv)
			m->priv_free(p->priv);
		if (m->unwind_free && p->unwind)
			m->unwind_free(p->unwind);
		free(p->maps);
		free(p);
	}
	hashmap_release(&m->procs);
	hashmap_release(&m->threads);
	hashmap_release(&m->comms);
	hashmap_release(&m->names);
}

const char *machine_intern(struct machine *m, const char *name)
{
	struct hm_slot *s = hashmap_str(&m->names, name, NULL);

	return s ? s->skey : "";
}

struct process *machine_process(struct machine *m, int pid)
{
	int created;
	struct hm_slot *s = hashmap_u64(&m->procs, (uint32_t)pid, &created);
	struct process *p;

	if (!s)
		return NULL;
	if (!created)
		return s->ptr;
	p = calloc(1, sizeof(*p));
	s->ptr = p;
	if (p) {
		p->pid = pid;
		snprintf(p->comm, sizeof(p->comm), ":%d", pid);
	}
	return p;
}

int machine_pid_of(struct machine *m, int tid)
{
	struct hm_slot *s = hashmap_u64_find(&m->threads, (uint32_t)tid);

	return s ? (int)s->val : tid;
}

const char *machine_comm(struct machine *m, int pid, int tid)
{
	struct hm_slot *s;
	struct process *p;

	if (m->last_comm && m->last_tid == tid)
		return m->last_comm;
	s = hashmap_u64_find(&m->comms, (uint32_t)tid);
	if (s && s->ptr) {
		m->last_tid = tid;
		m->last_comm = s->ptr;
	}
	if (s)
		return s->ptr;
	p = machine_process(m, pid);
	return p ? p->comm : "?";
}

void machine_set_comm(struct machine *m, int pid, int tid, const char *raw, int exec)
{
	struct process *p = machine_process(m, pid);
	struct hm_slot *s;
	char comm[sizeof(((struct process *)0)->comm)];
	size_t n = 0;

	if (!p)
		return;
	/* A process names itself, escapes and all: text results and
	 * messages clean what they print (formats/termsafe.h). */
	for (; raw[n] && n < sizeof(comm) - 1; n++)
		comm[n] = raw[n];
	comm[n] = 0;
	if (exec) {
		/* exec replaced the address space; its new mappings follow. */
		p->nr_maps = 0;
		p->code_gen++;
	}
	if (pid == tid || exec)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	s = hashmap_u64(&m->threads, (uint32_t)tid, NULL);
	if (s)
		s->val = pid;
	m->last_comm = NULL;
	s = hashmap_u64(&m->comms, (uint32_t)tid, NULL);
	if (s)
		s->ptr = (void *)machine_intern(m, comm);
}

void machine_fork(struct machine *m, int ppid, int ptid, int pid, int tid)
{
	struct hm_slot *s = hashmap_u64(&m->threads, (uint32_t)tid, NULL);
	const char *comm = machine_comm(m, ppid, ptid);

	if (s)
		s->val = pid;
	m->last_comm = NULL;
	s = hashmap_u64(&m->comms, (uint32_t)tid, NULL);
	if (s)
		s->ptr = (void *)machine_intern(m, comm);
	if (pid != ppid) {
		/* A new process starts as a copy of its parent. */
		struct process *parent = machine_process(m, ppid);
		struct process *child = machine_process(m, pid);

		if (!parent || !child)
			return;
		snprintf(child->comm, sizeof(child->comm), "%s", comm);
		child->exited = 0;
		child->threads = 1;
		child->leader_counted = 1;
		child->code_gen++;
		free(child->maps);
		child->maps = NULL;
		child->nr_maps = child->maps_alloc = 0;
		if (parent->nr_maps) {
			child->maps = malloc(parent->nr_maps * sizeof(*child->maps));
			if (child->maps) {
				memcpy(child->maps, parent->maps, parent->nr_maps * sizeof(*child->maps));
				child->nr_maps = child->maps_alloc = parent->nr_maps;
			}
		}
	} else {
		struct process *p = machine_process(m, pid);

		if (p)
			p->threads++;
	}
}

void machine_exit(struct machine *m, int pid, int tid)
{
	struct process *p = machine_process_find(m, pid);

	if (!p)
		return;
	/* A leader that began before the recording was never counted: its
	 * end (pthread_exit, while the threads it started run on) is not one
	 * of theirs. */
	if (p->threads > 0 && (pid != tid || p->leader_counted))
		p->threads--;
	if (pid == tid) {
		p->exited = 1;
		/* Its unwinding state is remade if a thread still running
		 * brings a sample; until then it holds nothing. */
		if (m->unwind_free && p->unwind) {
			m->unwind_free(p->unwind);
			p->unwind = NULL;
		}
	}
	/* No thread left to bring a sample: a box that ran thousands of
	 * processes keeps the maps of those still running only. A process
	 * already running when recording began has threads it never saw
	 * start, and keeps its maps until its leader exits. */
	if (p->exited && p->threads <= 0 && p->maps) {
		free(p->maps);
		p->maps = NULL;
		p->nr_maps = p->maps_alloc = 0;
		p->code_gen++;
	}
}

size_t machine_processes_with_maps(const struct machine *m, size_t *seen)
{
	size_t n = 0;

	*seen = m->procs.nr;
	hashmap_for_each(&m->procs, s)
		n += s->ptr && ((struct process *)s->ptr)->nr_maps > 0;
	return n;
}

static int maps_reserve(struct process *p, size_t extra)
{
	if (p->nr_maps + extra > p->maps_alloc) {
		size_t n = p->maps_alloc ? p->maps_alloc * 2 : 64;
		struct map *v;

		while (n < p->nr_maps + extra)
			n *= 2;
		v = realloc(p->maps, n * sizeof(*v));
		if (!v)
			return -1;
		p->maps = v;
		p->maps_alloc = n;
	}
	return 0;
}

static void unmap_range(struct process *p, uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < p->nr_maps;) {
		struct map *mp = &p->maps[i];

		if (mp->end <= start || mp->start >= end) {
			i++;
			continue;
		}
		if (mp->dso)
			p->code_gen++;
		if (mp->start < start && mp->end > end) {
			/* Punch a hole: split in two. */
			struct map tail = *mp;

			if (maps_reserve(p, 1))
				return;
			mp = &p->maps[i];
			tail.pgoff += end - mp->start;
			tail.start = end;
			mp->end = start;
			memmove(&p->maps[i + 2], &p->maps[i + 1], (p->nr_maps - i - 1) * sizeof(*mp));
			p->maps[i + 1] = tail;
			p->nr_maps++;
			return;
		}
		if (mp->start < start) {
			mp->end = start;
			i++;
		} else if (mp->end > end) {
			mp->pgoff += end - mp->start;
			mp->start = end;
			i++;
		} else {
			memmove(mp, mp + 1, (p->nr_maps - i - 1) * sizeof(*mp));
			p->nr_maps--;
		}
	}
}

int machine_map(struct machine *m, int pid, const struct map *map)
{
	struct process *p = machine_process(m, pid);
	size_t i;

	if (!p || map->end <= map->start)
		return -1;
	unmap_range(p, map->start, map->end);
	if (map->dso)
		p->code_gen++;
	if (maps_reserve(p, 1))
		return -1;
	for (i = p->nr_maps; i > 0 && p->maps[i - 1].start > map->start; i--)
		;
	memmove(&p->maps[i + 1], &p->maps[i], (p->nr_maps - i) * sizeof(*map));
	p->maps[i] = *map;
	p->nr_maps++;
	return 0;
}

void machine_unmap(struct machine *m, int pid, uint64_t start, uint64_t end)
{
	struct process *p = machine_process(m, pid);

	if (p)
		unmap_range(p, start, end);
}

struct process *machine_process_find(struct machine *m, int pid)
{
	struct hm_slot *s;

	/* A process lives as long as the machine, so the pointer stays good. */
	if (m->last && m->last->pid == pid)
		return m->last;
	s = hashmap_u64_find(&m->procs, (uint32_t)pid);
	if (s && s->ptr)
		m->last = s->ptr;
	return s ? s->ptr : NULL;
}

const struct map *machine_find_map(struct machine *m, int pid, uint64_t addr)
{
	struct process *p = machine_process_find(m, pid);

	return p ? process_find_map(p, addr, NULL) : NULL;
}

const struct map *process_find_map(const struct process *p, uint64_t addr, const struct map *hint)
{
	size_t lo = 0, hi = p->nr_maps;

	/* A stack's frames run in few objects, one after another. */
	if (hint && addr >= hint->start && addr < hint->end)
		return hint;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < p->maps[lo - 1].end)
		return &p->maps[lo - 1];
	return NULL;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int machine_load_snapshot(struct machine *m, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int pid = -1;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *le = nl ? nl : end;
		char line[4352];
		size_t n = (size_t)(le - p) < sizeof(line) - 1 ? (size_t)(le - p) : sizeof(line) - 1;

		memcpy(line, p, n);
		line[n] = 0;
		p = le + 1;
		if (!strncmp(line, "pid ", 4)) {
			pid = atoi(line + 4);
			machine_process(m, pid);
		} else if (!strncmp(line, "comm ", 5) && pid > 0) {
			machine_set_comm(m, pid, pid, line + 5, 0);
		} else if (!strncmp(line, "threads", 7) && pid > 0) {
			char *q = line + 7;

			while (*q) {
				char *e;
				long t = strtol(q, &e, 10);

				if (e == q)
					break;
				machine_fork(m, pid, pid, pid, (int)t);
				q = e;
			}
		} else if (!strncmp(line, "map\t", 4) && pid > 0) {
			char *f[8], *save = NULL, *q = line + 4;
			struct map mp = { 0 };
			unsigned char bid[20];
			int bl = 0;

			for (int i = 0; i < 7; i++)
				f[i] = strtok_r(i ? NULL : q, "\t", &save);
			f[7] = save; /* the path: everything after the seventh tab */
			if (!f[6])
				continue;
			mp.start = strtoull(f[0], NULL, 16);
			mp.end = strtoull(f[1], NULL, 16);
			mp.prot = (f[2][0] == 'r' ? PROT_READ : 0) | (f[2][1] == 'w' ? PROT_WRITE : 0) |
				  (f[2][2] == 'x' ? PROT_EXEC : 0);
			mp.flags = f[2][3] == 's' ? MAP_SHARED : MAP_PRIVATE;
			mp.pgoff = strtoull(f[3], NULL, 16);
			for (const char *h = f[6]; h[0] && h[1] && bl < 20 && hexval(h[0]) >= 0; h += 2)
				bid[bl++] = hexval(h[0]) << 4 | hexval(h[1]);
			mp.name = machine_intern(m, f[7] && f[7][0] ? f[7] : "//anon");
			if (f[7] && f[7][0] == '/')
				mp.dso = symbols_dso(m->syms, f[7], bid, bl);
			symbols_dso_mapped_by(mp.dso, pid);
			machine_map(m, pid, &mp);
		}
	}
	return 0;
}
