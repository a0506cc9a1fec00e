/*
 * analyze/model/allocs.c: pairing of allocation uprobes.
 *
 * Rules: realloc = free(old) + alloc(new); realloc(NULL, n) = malloc(n);
 * realloc(p, 0) returning NULL frees p; a call that returns NULL (or an
 * error for posix_memalign) allocates nothing; calloc and reallocarray
 * count nmemb * size; a free of a pointer not allocated during the
 * recording is counted apart and never makes a leak.
 */
#include "allocs.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IPS 512

struct pending {
	enum alloc_fn fn;	 /* the probe's, which its return names too */
	enum alloc_fn named;	 /* the function the program called (an alias of fn's) */
	uint64_t size, nmemb, ptr, memptr, caller, time;
	int have_stack;
	int nested;		 /* made by the allocator inside an outer call: not counted */
	struct sample smp;	 /* the entry sample, with ips repaired */
	uint64_t ips[MAX_IPS];
};

struct pending_stack {
	struct pending *v;
	size_t nr, alloc;
	/* The thread's last event, when it was a free's entry: a free that
	 * ends by jumping to another (mimalloc's sized delete to its free)
	 * gives the same block from the same caller twice. */
	struct { uint64_t ptr, caller; enum alloc_fn fn; int valid; } last_free;
};

int allocs_recorded(const struct session *s)
{
	for (size_t i = 0; i < s->nr_evs; i++)
		if (s->evs[i].kind == EVK_ALLOC_ENTRY)
			return 1;
	return 0;
}

static int alloc_fn_of(const char *name, size_t len)
{
	for (int k = 0; k < AF_NR; k++)
		if (strlen(alloc_fns[k].symbol) == len && !strncmp(alloc_fns[k].symbol, name, len))
			return k;
	return -1;
}

/* "aligned_alloc=memalign[,...] ...": functions the recorder probed once
 * because they share an address (FORMAT.md, alloc_aliases). */
static void aliases_parse(struct allocs *a, const char *text)
{
	for (const char *p = text; *p;) {
		const char *eq = strchr(p, '='), *end = p + strcspn(p, " ");
		int k = eq && eq < end ? alloc_fn_of(p, eq - p) : -1;

		for (const char *q = eq ? eq + 1 : end; k >= 0 && q < end;) {
			size_t l = strcspn(q, ", ");
			int j = alloc_fn_of(q, l < (size_t)(end - q) ? l : (size_t)(end - q));

			if (j >= 0)
				a->aliases[k] |= 1ull << j;
			q += l + (q[l] == ',');
		}
		p = *end ? end + 1 : end;
	}
}

/* Which processes' allocations a recording can vouch for. Through the
 * wrapper, a program image that never mapped it ran unseen (a static or
 * setuid program, LD_PRELOAD cleared); through uprobes, one that mapped an
 * allocator object the recorder did not probe. Judged per image, when it
 * is replaced by an exec and at the end of the replay. */
enum alloc_watch { WATCH_NONE, WATCH_WRAPPER, WATCH_UPROBES };

struct image {
	char comm[16];
	uint8_t code;		/* it mapped a file's code */
	uint8_t wrapper;	/* libmemsight-sample.so was among them */
	const char *unprobed;	/* an allocator object outside a->probed (interned by the machine) */
};

#define WRAPPER_BASENAME "libmemsight-sample.so"

static const char *path_base(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

static int probed_has(const struct allocs *a, const char *path)
{
	size_t n = strlen(path);

	for (const char *p = a->probed; p && *p;) {
		const char *end = strchr(p, ',');
		size_t l = end ? (size_t)(end - p) : strlen(p);

		if (l == n && !memcmp(p, path, n))
			return 1;
		p += l + !!end;
	}
	return 0;
}

/* Whether the recorder probed path, as pid mapped it, while recording. */
static const struct alloc_covered *covered_find(const struct allocs *a, int pid, const char *path)
{
	struct hm_slot *slot = hashmap_u64_find(&a->covered_by_pid, (uint32_t)pid);

	for (size_t i = slot ? slot->val : 0; i; i = a->covered[i - 1].next)
		if (!strcmp(a->covered[i - 1].path, path))
			return &a->covered[i - 1];
	return NULL;
}

/* META probes, "pid\tlate_ns\tpath" lines, split in a copy. */
static int covered_load(struct allocs *a, struct session *s)
{
	size_t nr = 0;

	for (size_t i = 0; i < s->probes_len; i++)
		nr += s->probes[i] == '\n';
	if (!nr)
		return 0;
	if (!(a->covered = calloc(nr, sizeof(*a->covered))) || !(a->covered_text = malloc(s->probes_len)))
		return -ENOMEM;
	memcpy(a->covered_text, s->probes, s->probes_len);
	for (char *p = a->covered_text, *end = a->covered_text + s->probes_len; p < end;) {
		char *nl = memchr(p, '\n', end - p), *tab1, *tab2;
		struct alloc_covered *c = &a->covered[a->nr_covered];
		struct hm_slot *slot;
		int created;

		if (!nl)
			break;
		*nl = 0;
		tab1 = strchr(p, '\t');
		tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
		if (tab2 && tab2[1]) {
			c->pid = atoi(p);
			c->late_ns = strtoull(tab1 + 1, NULL, 10);
			c->path = tab2 + 1;
			if (!covered_find(a, c->pid, c->path) &&
			    (slot = hashmap_u64(&a->covered_by_pid, (uint32_t)c->pid, &created))) {
				c->next = created ? 0 : slot->val;
				slot->val = ++a->nr_covered;
			}
		}
		p = nl + 1;
	}
	for (size_t i = 0; i < a->nr_covered; i++) {
		struct alloc_late *v;

		if (!a->covered[i].late_ns || !(v = realloc(a->late, (a->nr_late + 1) * sizeof(*v))))
			continue;
		a->late = v;
		v += a->nr_late;
		memset(v, 0, sizeof(*v));
		v->pid = a->covered[i].pid;
		v->late_ns = a->covered[i].late_ns;
		if ((v->object = strdup(a->covered[i].path)))
			a->nr_late++;
	}
	return 0;
}

/* The processes' names, as the replay left them. */
static void late_names(void *arg)
{
	struct allocs *a = arg;
	struct session *s = a->late_session;

	for (size_t i = 0; i < a->nr_late; i++)
		snprintf(a->late[i].comm, sizeof(a->late[i].comm), "%s",
			 machine_comm(&s->m, a->late[i].pid, a->late[i].pid));
}

static void image_judge(struct allocs *a, int pid, struct image *im)
{
	struct alloc_unseen *v;

	if (!im->code || (a->watch == WATCH_WRAPPER ? im->wrapper : !im->unprobed))
		return;
	v = realloc(a->unseen, (a->nr_unseen + 1) * sizeof(*v));
	if (!v)
		return;
	a->unseen = v;
	v += a->nr_unseen;
	memset(v, 0, sizeof(*v));
	v->pid = pid;
	memcpy(v->comm, im->comm, sizeof(v->comm));
	if (a->watch == WATCH_UPROBES && !(v->object = strdup(im->unprobed)))
		return;
	a->nr_unseen++;
}

/* Whose heap is glibc's: the leak check knows its chunks' layout. */
static void note_allocator(void *arg, struct session *s, int pid, const struct map *map)
{
	struct allocs *a = arg;
	struct hm_slot *slot;

	(void)s;
	if (alloc_object_is_allocator(map->name) && strncmp(path_base(map->name), "libc", 4) &&
	    (slot = hashmap_u64(&a->foreign, (uint32_t)pid, NULL)))
		slot->val = 1;
}

int allocs_glibc_heap(struct allocs *a, struct session *s, int pid)
{
	struct process *p = machine_process_find(&s->m, pid);

	if (hashmap_u64_find(&a->foreign, (uint32_t)pid))
		return 0;
	for (size_t i = 0; p && i < p->nr_maps; i++)
		if (p->maps[i].name && alloc_object_is_allocator(p->maps[i].name) &&
		    strncmp(path_base(p->maps[i].name), "libc", 4))
			return 0;
	return 1;
}

/* A process's first code mapping starts its image from what it has
 * mapped already: a child that forked without exec has its parent's. */
static void on_code_map(void *arg, struct session *s, int pid, const struct map *map)
{
	struct allocs *a = arg;
	struct hm_slot *slot = hashmap_u64(&a->images, (uint32_t)pid, NULL);
	struct image *im;

	if (!slot)
		return;
	if (!(im = slot->ptr)) {
		struct process *p = machine_process_find(&s->m, pid);

		if (!(im = slot->ptr = calloc(1, sizeof(*im))))
			return;
		snprintf(im->comm, sizeof(im->comm), "%s", machine_comm(&s->m, pid, pid));
		for (size_t i = 0; p && i < p->nr_maps; i++)
			if (p->maps[i].name && !strcmp(path_base(p->maps[i].name), WRAPPER_BASENAME))
				im->wrapper = 1;
	}
	im->code = 1;
	if (!strcmp(path_base(map->name), WRAPPER_BASENAME))
		im->wrapper = 1;
	if (a->watch == WATCH_UPROBES && !im->unprobed && alloc_object_is_allocator(map->name) &&
	    !probed_has(a, map->name) && !covered_find(a, pid, map->name))
		im->unprobed = map->name;
}

static void images_end(void *arg)
{
	struct allocs *a = arg;

	hashmap_for_each(&a->images, i) {
		image_judge(a, (int)i->key, i->ptr);
		free(i->ptr);
	}
	hashmap_release(&a->images);
	hashmap_init(&a->images, 0);
}

/* An exec releases every block of the old image with its address space:
 * they are no leak of the new one, and no call pending in it returns. */
static void on_exec(void *arg, struct session *s, int pid, uint64_t time)
{
	struct allocs *a = arg;
	struct hm_slot *slot = hashmap_u64_find(&a->procs, (uint32_t)pid);
	struct hashmap *m = slot ? slot->ptr : NULL;

	hashmap_for_each(m ? m : &a->procs, r) {
		struct alloc_rec *rec;

		if (!m)
			break;
		rec = r->ptr;
		a->exec_released++;
		if (a->cb) {
			struct alloc_event ev = { ALLOC_FREED, rec, time, pid, pid, rec->ptr, NULL, 1 };

			a->cb(s, &ev, a->cb_arg);
		}
		free(rec);
	}
	if (m) {
		hashmap_release(m);
		hashmap_init(m, 0);
	}
	if (a->cb) {
		struct alloc_event ev = { ALLOC_EXEC, NULL, time, pid, pid, 0, NULL, 0 };

		a->cb(s, &ev, a->cb_arg);
	}
	if ((slot = hashmap_u64_find(&a->freed, (uint32_t)pid))) {
		hashmap_release(slot->ptr);
		hashmap_init(slot->ptr, 0);
	}
	hashmap_for_each(&a->threads, t) if (machine_pid_of(&s->m, (int)t->key) == pid)
		((struct pending_stack *)t->ptr)->nr = 0;
	if ((slot = hashmap_u64_find(&a->images, (uint32_t)pid)) && slot->ptr) {
		image_judge(a, pid, slot->ptr);
		free(slot->ptr);
		slot->ptr = NULL;
	}
}

/* Only a recording of a command (and what it starts) can tell which of
 * its images ran unseen: -p and -a recordings hold processes that were
 * never meant to be. */
static int allocs_watch(struct allocs *a, struct session *s)
{
	char v[64];

	if (strncmp(session_host(s, "target", v, sizeof(v), ""), "command ", 8) || !allocs_recorded(s))
		return 0;
	a->watch = session_host(s, "alloc_sampler", v, sizeof(v), NULL) ? WATCH_WRAPPER : WATCH_UPROBES;
	/* No value is longer than the whole META. */
	if (!(a->probed = malloc(s->host_len + 1)))
		return -ENOMEM;
	a->probed[0] = 0;
	session_host(s, "allocator", a->probed, s->host_len + 1, "");
	if (session_on_code_map(s, on_code_map, a) || session_at_replay_end(s, images_end, a))
		return -ENOMEM;
	return 0;
}

int allocs_init(struct allocs *a, struct session *s)
{
	char v[256];

	memset(a, 0, sizeof(*a));
	stacktab_init(&a->stacks, 0, 1);
	hashmap_init(&a->procs, 0);
	hashmap_init(&a->freed, 0);
	hashmap_init(&a->threads, 0);
	a->sample = atoi(session_host(s, "alloc_sample", v, sizeof(v), "1"));
	if (!a->sample)
		a->sample = 1;
	a->min_size = strtoull(session_host(s, "alloc_min_size", v, sizeof(v), "0"), NULL, 10);
	a->asked_rate = strtoull(session_host(s, "alloc_sample_bytes", v, sizeof(v), "0"), NULL, 10);
	a->max_size = strtoull(session_host(s, "alloc_max_size", v, sizeof(v), "0"), NULL, 10);
	aliases_parse(a, session_host(s, "alloc_aliases", v, sizeof(v), ""));
	a->probes_on = (uint64_t)session_stat(s, "probes_on_ns", 0);
	a->probes_off = (uint64_t)session_stat(s, "probes_off_ns", 0);
	hashmap_init(&a->call_names, 0);
	hashmap_init(&a->images, 0);
	hashmap_init(&a->foreign, 0);
	if (session_on_exec(s, on_exec, a) || session_on_code_map(s, note_allocator, a))
		return -ENOMEM;
	hashmap_init(&a->covered_by_pid, 0);
	if (covered_load(a, s))
		return -ENOMEM;
	a->late_session = s;
	if (a->nr_late && session_at_replay_end(s, late_names, a))
		return -ENOMEM;
	return allocs_watch(a, s);
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
	hashmap_for_each(&a->freed, p) {
		hashmap_release(p->ptr);
		free(p->ptr);
	}
	hashmap_release(&a->freed);
	hashmap_release(&a->call_names);
	hashmap_for_each(&a->threads, t) {
		struct pending_stack *ps = t->ptr;

		free(ps->v);
		free(ps);
	}
	hashmap_release(&a->threads);
	stacktab_release(&a->stacks);
	hashmap_for_each(&a->images, i) free(i->ptr);
	hashmap_release(&a->images);
	hashmap_release(&a->foreign);
	for (size_t i = 0; i < a->nr_unseen; i++)
		free(a->unseen[i].object);
	free(a->unseen);
	for (size_t i = 0; i < a->nr_late; i++)
		free(a->late[i].object);
	free(a->late);
	free(a->covered);
	free(a->covered_text);
	hashmap_release(&a->covered_by_pid);
	free(a->probed);
}

static struct hashmap *proc_table(struct allocs *a, int pid)
{
	return hashmap_u64_obj(&a->procs, (uint32_t)pid, sizeof(struct hashmap));
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

/* Whether a call of the family was made by the allocator itself, inside
 * a call still pending on the same thread: glibc's reallocarray calls
 * realloc, realloc(NULL, n) calls malloc and realloc(p, 0) free. Such a
 * call is part of the outer one, which is the user's. Its caller (the
 * return address the entry probe read) lies in the object of the probed
 * function, or, when the outer function jumped to it as its last act, is
 * the trampoline the outer call's return probe put in place of the
 * user's return address. A call from elsewhere (a signal handler's) is
 * the user's own. */
static int nested_call(struct session *s, const struct pending_stack *ps, const struct sample *smp, uint64_t caller)
{
	const struct map *fn, *by;

	if (!ps || !ps->nr || !caller)
		return 0;
	fn = machine_find_map(&s->m, smp->pid, smp->ip);
	by = machine_find_map(&s->m, smp->pid, caller);
	return fn && by && (fn->name == by->name || !strcmp(by->name, "[uprobes]"));
}

/* Undo return-probe trampolines (the session put the skipped caller
 * back already). */
static void repair_stack(struct allocs *a, struct session *s, struct pending_stack *ps, struct pending *p,
			 const struct sample *smp)
{
	uint64_t n = 0, tramp = 0;
	int user = 0, first_user = 0;
	struct process *proc = machine_process_find(&s->m, smp->pid);
	const struct map *m = NULL;

	/* Names are interned: the trampolines' mapping is this pointer. */
	if (!a->uprobes_name)
		a->uprobes_name = machine_intern(&s->m, "[uprobes]");

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
		if (user && !first_user && proc) {
			m = process_find_map(proc, ip, m);
			/* A pending return probe put its trampoline where the
			 * return address was; the outer pending calls, innermost
			 * first, know the real ones. */
			if (m && m->name[0] == '[' && m->name == a->uprobes_name) {
				tramp++;
				if (ps->nr < tramp + 1)
					continue;
				ip = ps->v[ps->nr - 1 - tramp].caller;
			}
		}
		p->ips[n++] = ip;
		if (user && first_user)
			first_user = 0;
	}
	p->smp.ips = p->ips;
	p->smp.nr_ips = n;
}

/* A sampler's probe point is its own innermost frame: drop it, so the
 * stack starts at the wrapper the program called (malloc, calloc, ...). */
static void drop_probe_frame(struct pending *p)
{
	for (uint64_t i = 0; i < p->smp.nr_ips; i++) {
		if (p->ips[i] >= PERF_CONTEXT_MAX)
			continue;
		if (i + 1 < p->smp.nr_ips) {
			memmove(p->ips + i, p->ips + i + 1, (p->smp.nr_ips - i - 1) * sizeof(*p->ips));
			p->smp.nr_ips--;
		}
		return;
	}
}

/* The sampling rate an allocation of size bytes that stands for weight
 * bytes was kept at, by the Poisson rule (kept with probability
 * 1 - exp(-size / rate)): the rate that gives it that weight back. 0 when
 * it stands for itself alone: every allocation was reported. */
static uint64_t rate_of_weight(uint64_t size, uint64_t weight)
{
	double p;

	if (!size || weight <= size)
		return 0;
	p = (double)size / (double)weight;
	return p >= 1 ? 0 : (uint64_t)(-(double)size / log1p(-p) + 0.5);
}

static int out_of_range(struct allocs *a, uint64_t size)
{
	return (a->min_size && size < a->min_size) || (a->max_size && size > a->max_size);
}

/* Which of the functions sharing fn's address the program called: the
 * call instruction before the return address (the entry probe read the 8
 * bytes before it) goes through a PLT entry (call rel32) or a GOT slot
 * (call *disp32(%rip)), and the slot's relocation names the function. */
static enum alloc_fn called_name(struct allocs *a, struct session *s, const struct sample *smp, enum alloc_fn fn,
				 uint64_t caller, uint64_t insn)
{
	uint64_t key = caller ^ (uint64_t)(uint32_t)smp->pid << 40, target, bias;
	struct hm_slot *slot = hashmap_u64(&a->call_names, key, NULL);
	unsigned char b[8];
	const struct map *m;
	const char *name;
	int32_t disp;
	int via_slot, k;

	if (slot && slot->val)
		return (enum alloc_fn)(slot->val - 1);
	memcpy(b, &insn, 8);
	if (b[3] == 0xe8)
		via_slot = 0;
	else if (b[2] == 0xff && b[3] == 0x15)
		via_slot = 1;
	else
		goto keep;
	memcpy(&disp, b + 4, 4);
	target = caller + (int64_t)disp;
	m = machine_find_map(&s->m, smp->pid, target);
	if (!m || !m->dso || symbols_object_bias(m->dso, m->start, m->pgoff, &bias) ||
	    !(name = symbols_call_name(m->dso, target - bias, via_slot)))
		goto keep;
	k = alloc_fn_of(name, strcspn(name, "@"));
	if (k >= 0 && (k == (int)fn || (a->aliases[fn] & (1ull << k))))
		fn = k;
keep:
	if (slot)
		slot->val = fn + 1;
	return fn;
}

/* Whether the caller of a probed call lies in the object of the probed
 * function: the allocator calling itself. */
static int caller_in_allocator(struct session *s, const struct sample *smp, uint64_t caller)
{
	const struct map *fn = machine_find_map(&s->m, smp->pid, smp->ip);
	const struct map *by = caller ? machine_find_map(&s->m, smp->pid, caller) : NULL;

	return fn && by && fn->name == by->name;
}

/* The blocks of pid freed during the recording and not allocated again
 * since: a free of one of them again is no free of memory from before the
 * recording. */
static struct hashmap *freed_table(struct allocs *a, int pid)
{
	return hashmap_u64_obj(&a->freed, (uint32_t)pid, sizeof(struct hashmap));
}

static int do_free(struct allocs *a, struct session *s, int pid, uint64_t ptr, uint64_t time, int internal,
		   const struct sample *stack, alloc_cb cb, void *arg)
{
	struct hashmap *m = proc_table(a, pid), *freed = freed_table(a, pid);
	struct hm_slot *slot;
	struct alloc_rec *r;
	int ret = 0;

	if (!ptr)
		return 0;
	slot = m ? hashmap_u64_find(m, ptr) : NULL;
	if (!slot) {
		/* glibc's tcache_thread_shutdown hands the blocks a thread
		 * kept cached to free() again as the thread ends: blocks the
		 * program freed before. From the program itself that is a
		 * double free. */
		if (freed && hashmap_u64_find(freed, ptr)) {
			if (internal) {
				a->refrees++;
				return 0;
			}
			a->double_frees++;
			if (cb) {
				struct alloc_event ev = { ALLOC_DOUBLE_FREE, NULL, time, a->tid, pid, ptr, stack, 0 };

				return cb(s, &ev, arg);
			}
			return 0;
		}
		/* Its own block, taken without a probed entry point (the
		 * tcache it frees as a thread ends), or one freed for the
		 * program through libc's internals. */
		if (internal) {
			a->internal_frees++;
			return 0;
		}
		a->unmatched_frees++;
		if (cb) {
			struct alloc_event ev = { ALLOC_BAD_FREE, NULL, time, a->tid, pid, ptr, stack, 0 };

			return cb(s, &ev, arg);
		}
		return 0;
	}
	if (freed)
		hashmap_u64(freed, ptr, NULL);
	r = slot->ptr;
	hashmap_u64_remove(m, ptr);
	a->nr_frees += alloc_rec_count(r);
	a->free_bytes += alloc_rec_bytes(r);
	if (cb) {
		struct alloc_event ev = { ALLOC_FREED, r, time, a->tid, pid, ptr, stack, 0 };

		ret = cb(s, &ev, arg);
	}
	free(r);
	return ret;
}

static int do_alloc(struct allocs *a, struct session *s, int pid, uint64_t ptr, uint64_t size, int sized,
		    enum alloc_fn fn, uint64_t time, const struct sample *stack, uint64_t rate, alloc_cb cb, void *arg)
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
	{
		struct hashmap *freed = freed_table(a, pid);

		if (freed && hashmap_u64_find(freed, ptr))
			hashmap_u64_remove(freed, ptr);
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
	r->rate = sized ? rate : 0;
	if (!sized)
		a->unsized++;
	if (stack && sized) {
		r->stack = stacktab_add_n(&a->stacks, s, stack, alloc_rec_count(r), alloc_rec_bytes(r));
		if (!r->stack)
			return -1;
		/* The innermost frame is the probed function's first byte:
		 * call it by the name that was probed, not by whichever alias
		 * (__libc_malloc, je_malloc) the symbol table lists first. A
		 * probe inside an allocator is shown from the wrapper the
		 * program called, named as it is. */
		if (fn != AF_SAMPLED_ALLOC && fn != AF_OTEL_ALLOC)
			stacktab_name_top(r->stack, alloc_fns[fn].name);
		else
			stacktab_trim_to_entry(r->stack);
	}
	a->nr_allocs += alloc_rec_count(r);
	a->alloc_bytes += alloc_rec_bytes(r);
	if (cb) {
		struct alloc_event ev = { ALLOC_NEW, r, time, a->tid, pid, ptr, NULL, 0 };

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

	if (!sample_reg(smp, SAMPLE_REG_SP, &sp) || memptr < sp)
		return 0;
	return !stackdump_read(&smp->stack, NULL, memptr - sp, out, 8);
}

static int on_sample(struct session *s, struct sample *smp, void *arg)
{
	struct replay *rp = arg;
	struct allocs *a = rp->a;
	struct sess_event *e = smp->ev;
	struct pending_stack *ps;
	__typeof__(ps->last_free) last_free;
	struct pending *p;
	enum alloc_op op;
	uint64_t ret, size;
	enum alloc_fn fn;
	int f;

	if (e->kind != EVK_ALLOC_ENTRY && e->kind != EVK_ALLOC_RET)
		return 0;
	/* The events go on and off one after another: a call in those
	 * instants is seen in part (a return with its free missed looks
	 * outstanding), and is left out, as one outside the recording. */
	if (smp->time < a->probes_on || (a->probes_off && smp->time > a->probes_off))
		return 0;
	if ((f = session_alloc_fn(s, smp)) < 0)
		return 0;
	fn = (enum alloc_fn)f;
	a->tid = smp->tid;
	ps = thread_stack(a, smp->tid);
	if (!ps)
		return -1;
	last_free = ps->last_free;
	ps->last_free.valid = 0;
	if (e->kind == EVK_ALLOC_ENTRY && alloc_fns[fn].op == ALLOC_OP_FREE) {
		uint64_t ptr = session_field(s, smp, AF_PTR), caller = session_field(s, smp, AF_CALLER);
		struct pending one;

		/* realloc(p, 0) frees p through free: the realloc counts it. */
		if (nested_call(s, ps, smp, caller)) {
			a->nested++;
			return 0;
		}
		/* A free of the family entered right after another, for the
		 * same block and with the same return address: the first
		 * jumped to it as its last act (a free has no return probe,
		 * whose trampoline would show the jump as nested_call sees
		 * it). A program's own second free comes from a call of its
		 * own, or from the same one to the same function. */
		if (last_free.valid && last_free.ptr == ptr && last_free.caller == caller && last_free.fn != fn) {
			a->nested++;
			return 0;
		}
		ps->last_free = (__typeof__(ps->last_free)){ ptr, caller, fn, 1 };
		/* A free that took a stack gives it as an allocation's is. */
		if (smp->nr_ips)
			repair_stack(a, s, ps, &one, smp);
		return do_free(a, s, smp->pid, ptr, smp->time, caller_in_allocator(s, smp, caller),
			       smp->nr_ips ? &one.smp : NULL, rp->cb, rp->arg);
	}
	if (e->kind == EVK_ALLOC_ENTRY && alloc_fns[fn].op == ALLOC_OP_ALLOC_AT) {
		/* A sampler's sample: pointer, size and rate (or weight) at once. */
		struct pending one;
		uint64_t rate = session_field(s, smp, AF_RATE), size = session_field(s, smp, AF_SIZE);

		repair_stack(a, s, ps, &one, smp);
		/* The old probe points were functions of their own, called by
		 * the wrapper; a USDT site lies in the wrapper itself. */
		if (fn == AF_SAMPLED_ALLOC)
			drop_probe_frame(&one);
		else if (!session_field(s, smp, AF_WEIGHT) && size)
			rate = ALLOC_RATE_NONE;
		else if (!(rate = rate_of_weight(size, session_field(s, smp, AF_WEIGHT))))
			/* A sample as likely as certain (a large block, or a rate
			 * of a byte) is still one of a sampled recording. */
			rate = a->asked_rate;
		/* A rate recovered from a weight rounded to a byte can be off
		 * by one: the one the recording asked for names the recording. */
		if (rate && rate != ALLOC_RATE_NONE)
			a->rate = a->asked_rate ? a->asked_rate : rate;
		return do_alloc(a, s, smp->pid, session_field(s, smp, AF_PTR), session_field(s, smp, AF_SIZE), 1, fn,
				smp->time, smp->nr_ips ? &one.smp : NULL, rate, rp->cb, rp->arg);
	}
	if (e->kind == EVK_ALLOC_ENTRY) {
		if (ps->nr == ps->alloc) {
			size_t n = ps->alloc ? ps->alloc * 2 : 4;
			struct pending *v = realloc(ps->v, n * sizeof(*v));

			if (!v)
				return -1;
			ps->v = v;
			ps->alloc = n;
		}
		p = &ps->v[ps->nr];
		p->fn = fn;
		p->caller = session_field(s, smp, AF_CALLER);
		p->nested = nested_call(s, ps, smp, p->caller);
		ps->nr++;
		if (p->nested) {
			a->nested++;
			return 0;
		}
		p->named = a->aliases[fn] && e->fields[AF_INSN]
				   ? called_name(a, s, smp, fn, p->caller, session_field(s, smp, AF_INSN))
				   : fn;
		p->size = session_field(s, smp, AF_SIZE);
		p->nmemb = session_field(s, smp, AF_NMEMB);
		p->ptr = session_field(s, smp, AF_PTR);
		p->memptr = session_field(s, smp, AF_MEMPTR);
		p->time = smp->time;
		p->have_stack = smp->nr_ips > 0;
		repair_stack(a, s, ps, p, smp);
		return 0;
	}
	/* A return: find its entry, innermost first. Entries left above it
	 * lost their return (a lost event): drop them. */
	while (ps->nr && ps->v[ps->nr - 1].fn != fn) {
		a->entry_lost++;
		ps->nr--;
	}
	ret = session_field(s, smp, AF_RET);
	if (!ps->nr) {
		/* No entry kept (-s N or -z/-Z), or the call began before the
		 * recording did (its return probes come on first): the pointer
		 * is still known, so its free will match, and a block that had
		 * the same address before is not taken as freed twice. */
		op = alloc_fns[fn].op;
		if (!ret || (op != ALLOC_OP_ALLOC && op != ALLOC_OP_ALLOC_N && op != ALLOC_OP_REALLOC &&
			     op != ALLOC_OP_REALLOC_N))
			return 0;
		return do_alloc(a, s, smp->pid, ret, 0, 0, fn, smp->time, NULL, 0, rp->cb, rp->arg);
	}
	p = &ps->v[--ps->nr];
	if (p->nested)
		return 0;
	op = alloc_fns[p->fn].op;
	size = op == ALLOC_OP_ALLOC_N || op == ALLOC_OP_REALLOC_N ? p->nmemb * p->size : p->size;
	if (op == ALLOC_OP_ALLOC_OUT) {
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
	if (op == ALLOC_OP_REALLOC || op == ALLOC_OP_REALLOC_N) {
		if (!ret) {
			/* realloc(p, 0) frees p and may return NULL; any other
			 * NULL leaves the old block as it was. */
			if (p->ptr && !size)
				return do_free(a, s, smp->pid, p->ptr, smp->time, 0, NULL, rp->cb, rp->arg);
			a->failed++;
			return 0;
		}
		if (p->ptr && do_free(a, s, smp->pid, p->ptr, smp->time, 0, NULL, rp->cb, rp->arg))
			return -1;
	} else if (!ret) {
		a->failed++;
		return 0;
	}
	return do_alloc(a, s, smp->pid, ret, size, 1, p->named, p->time, p->have_stack ? &p->smp : NULL, 0, rp->cb,
			rp->arg);
}

int allocs_sample(struct allocs *a, struct session *s, struct sample *smp, alloc_cb cb, void *arg)
{
	struct replay rp = { a, cb, arg };

	a->cb = cb;
	a->cb_arg = arg;
	return on_sample(s, smp, &rp);
}

void allocs_end(struct allocs *a)
{
	hashmap_for_each(&a->threads, t) a->entry_lost += ((struct pending_stack *)t->ptr)->nr;
}

int allocs_forget_before(struct allocs *a, uint64_t from)
{
	size_t n = 0, k = 0, i = 0;
	uint64_t *keys;

	hashmap_for_each(&a->procs, p) {
		hashmap_for_each((struct hashmap *)p->ptr, rs) n += ((struct alloc_rec *)rs->ptr)->time < from;
	}
	if (!n)
		return 0;
	/* Taken out after the walk: a removal moves the slots after it. */
	if (!(keys = malloc(n * sizeof(*keys))))
		return -ENOMEM;
	hashmap_for_each(&a->procs, p) {
		struct hashmap *m = p->ptr;

		k = i;
		hashmap_for_each(m, rs) if (((struct alloc_rec *)rs->ptr)->time < from) keys[i++] = rs->key;
		for (; k < i; k++) {
			struct hm_slot *rs = hashmap_u64_find(m, keys[k]);

			free(rs->ptr);
			hashmap_u64_remove(m, keys[k]);
		}
	}
	free(keys);
	return 0;
}

int allocs_replay(struct allocs *a, struct session *s, alloc_cb cb, void *arg, char *err, size_t errlen)
{
	struct replay rp = { a, cb, arg };
	int r;

	a->cb = cb;
	a->cb_arg = arg;
	r = session_replay(s, on_sample, &rp, err, errlen);
	allocs_end(a);
	return r;
}
