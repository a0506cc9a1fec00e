/*
 * analyze/replay/frames.c: a sample's stack as frames: the kernel
 * callchain, then the user stack (unwound from its dump, or the
 * frame-pointer chain), each frame named with its inlined callers, and the
 * text forms every command prints.
 */
#include <stdio.h>
#include <string.h>

#include "session.h"
#include "../stacks/unwind.h"

/* A walk of a sample's callchain, over the frames of the parts kept:
 * kernel (context 1) and user (2). */
struct chain_walk {
	const struct sample *smp;
	uint64_t i;
	int ctx, first, kernel, user;
};

/* The next frame kept: its context (0 at the end) and address, and
 * whether it is its part's first (the sampled ip, not a return address). */
static int chain_next(struct chain_walk *w, uint64_t *ip, int *first)
{
	while (w->i < w->smp->nr_ips) {
		uint64_t v = w->smp->ips[w->i++];

		if (v >= PERF_CONTEXT_MAX) {
			w->ctx = v == PERF_CONTEXT_KERNEL ? 1 : v == PERF_CONTEXT_USER ? 2 : 0;
			w->first = 1;
			continue;
		}
		*first = w->first;
		w->first = 0;
		if (!w->ctx || (w->ctx == 1 && !w->kernel) || (w->ctx == 2 && !w->user))
			continue;
		*ip = v;
		return w->ctx;
	}
	return 0;
}

/* The recorder embedded the objects the stacks touch: with the first user
 * stack kept they all start loading, before samples name them. */
static void prefetch_embedded(struct session *s)
{
	struct embedded_info ei;

	if (s->prefetched)
		return;
	s->prefetched = 1;
	/* Debug entries belong to the object of the same build-id. */
	for (size_t i = 0; !symbols_embedded_get(&s->syms, i, &ei); i++)
		if (ei.bid_len && ei.mode != EMBED_DEBUG)
			symbols_prefetch(&s->syms, symbols_dso(&s->syms, ei.path, ei.build_id, ei.bid_len),
					 !s->o.no_inline);
}

void session_frame_prefetch(struct session *s, const struct frame *f)
{
	if (f->kernel)
		return;
	prefetch_embedded(s);
	if (f->obj) {
		symbols_prefetch(&s->syms, f->dso, !s->o.no_inline);
		symbols_prefetch_name(f->dso, f->file_off, f->ret);
	}
}

/* Code a runtime compiled, named by its perf map or jitdump: at the
 * sample's moment, in the sample's process. */
static const struct jit_sym *jit_at(struct session *s, const struct sample *smp, uint64_t ip)
{
	return s->jit.nr_files ? jitsyms_find(&s->jit, smp->pid, ip, smp->time) : NULL;
}

static void jit_frame(struct frame *f, const struct jit_sym *e, uint64_t off, int ret)
{
	f->obj = jitsyms_object;
	f->sym = e->name;
	f->ip = e->start + off;
	f->off = off;
	f->ret = ret;
	if (jitsyms_line(e, off, ret, &f->call_file, &f->call_line))
		f->call_file = NULL;
}

int session_frames_raw(struct session *s, const struct sample *smp, struct frame *out, int max, int kernel,
		       int user)
{
	struct chain_walk w = { smp, 0, 0, 1, kernel, user };
	uint64_t ip;
	int n = 0, ctx, first;

	if (user)
		prefetch_embedded(s);
	while (n < max && (ctx = chain_next(&w, &ip, &first))) {
		struct frame *f = &out[n++];

		memset(f, 0, sizeof(*f));
		f->ip = ip;
		f->off = ip;
		if (ctx == 1) {
			f->kernel = 1;
		} else {
			const struct map *m = machine_find_map(&s->m, smp->pid, ip);
			const struct jit_sym *e = (!m || !m->dso) ? jit_at(s, smp, ip) : NULL;

			if (e) {
				jit_frame(f, e, ip - e->start, !first);
			} else if (m) {
				f->obj = m->name;
				f->off = ip - m->start + m->pgoff;
				f->dso = m->dso;
				f->file_off = f->off;
				f->ret = !first;
				session_frame_prefetch(s, f);
			}
		}
	}
	return n;
}

int session_frames_key(struct session *s, const struct sample *smp, uint64_t *key, int max, int kernel, int user)
{
	struct chain_walk w = { smp, 0, 0, 1, kernel, user };
	const struct process *p = NULL;
	const struct map *hint = NULL;
	uint64_t ip;
	int n = 0, ctx, first, looked = 0;

	/* What session_frames_raw makes a frame of, in words. */
	while (n + FRAME_KEY_WORDS <= max && (ctx = chain_next(&w, &ip, &first))) {
		if (ctx == 1) {
			key[n++] = 1;
			key[n++] = 0;
			key[n++] = ip;
			continue;
		}
		if (!looked) {
			p = machine_process_find(&s->m, smp->pid);
			looked = 1;
		}
		hint = p ? process_find_map(p, ip, hint) : NULL;
		if (!hint || !hint->dso) {
			const struct jit_sym *e = jit_at(s, smp, ip);

			/* The function itself is the key: the address's
			 * meaning depends on the moment. */
			if (e) {
				key[n++] = (uintptr_t)jitsyms_object;
				key[n++] = (uintptr_t)e;
				key[n++] = (ip - e->start) << 1 | !first;
				continue;
			}
		}
		key[n++] = hint ? (uintptr_t)hint->name : 0;
		key[n++] = hint ? (uintptr_t)hint->dso : 0;
		key[n++] = hint ? (ip - hint->start + hint->pgoff) << 1 | !first : ip << 1;
	}
	return n;
}

void frame_of_key(const uint64_t *key, struct frame *f)
{
	memset(f, 0, sizeof(*f));
	if (key[0] == 1) {
		f->kernel = 1;
		f->ip = f->off = key[2];
	} else if (!key[0]) {
		f->ip = f->off = key[2] >> 1;
	} else if (key[0] == (uintptr_t)jitsyms_object) {
		jit_frame(f, (const struct jit_sym *)(uintptr_t)key[1], key[2] >> 1, key[2] & 1);
	} else {
		/* The address in a process is not part of the key: the offset
		 * stands for it, as it does for every process running the path. */
		f->obj = (const char *)(uintptr_t)key[0];
		f->dso = (struct dso *)(uintptr_t)key[1];
		f->ip = f->off = f->file_off = key[2] >> 1;
		f->ret = key[2] & 1;
	}
}

int session_frames_name(struct session *s, const struct frame *raw, int nr, struct frame *out, int max)
{
	int n = 0;

	for (int i = 0; i < nr && n < max; i++) {
		struct frame *f = &out[n++];

		*f = raw[i];
		if (f->kernel) {
			f->sym = symbols_ksym(&s->syms, f->ip, &f->off);
			continue;
		}
		if (!f->dso)
			continue;
		f->sym = symbols_lookup(f->dso, f->file_off, f->ret, &f->off);
		if (f->sym && !s->o.no_inline) {
			const struct sym_inline *inl;
			int k = symbols_inline(f->dso, f->file_off, f->ret, &inl);

			/* The inlined functions go first, innermost first;
			 * each one's caller shows the line that called it. */
			if (k > 0 && n + k <= max) {
				struct frame outer = *f;

				for (int j = 0; j < k; j++) {
					f = &out[n - 1 + j];
					*f = outer;
					f->sym = inl[j].name;
					f->off = 0;
					f->inlined = 1;
					if (j > 0) {
						f->call_file = inl[j - 1].call_file;
						f->call_line = inl[j - 1].call_line;
					}
				}
				out[n - 1 + k] = outer;
				out[n - 1 + k].call_file = inl[k - 1].call_file;
				out[n - 1 + k].call_line = inl[k - 1].call_line;
				n += k;
			}
		}
	}
	return n;
}

int session_frames(struct session *s, const struct sample *smp, struct frame *out, int max, int kernel,
		   int user)
{
	struct frame raw[SESS_MAX_CHAIN];
	int n = session_frames_raw(s, smp, raw, max < SESS_MAX_CHAIN ? max : SESS_MAX_CHAIN, kernel, user);

	return session_frames_name(s, raw, n, out, max);
}

int frame_srcline(const struct frame *f, const char **file, int *line)
{
	if (f->call_file && f->call_line) {
		*file = f->call_file;
		*line = f->call_line;
		return 0;
	}
	if (!f->dso)
		return -1;
	return symbols_srcline(f->dso, f->file_off, f->ret, file, line);
}

const char *frame_name(const struct frame *f, char *buf, size_t len, int with_offset)
{
	if (f->sym && f->inlined) {
		snprintf(buf, len, with_offset ? "%s (inlined)" : "%s", f->sym);
	} else if (f->sym) {
		if (with_offset)
			snprintf(buf, len, "%s+0x%llx", f->sym, (unsigned long long)f->off);
		else
			snprintf(buf, len, "%s", f->sym);
	} else if (f->obj) {
		const char *base = strrchr(f->obj, '/');

		base = base ? base + 1 : f->obj;
		if (f->obj[0] == '[' || f->obj[0] == '/')
			base = f->obj[0] == '[' ? f->obj : base;
		if (f->obj[0] == '/' && f->obj[1] == '/')
			base = "anon";
		if (base[0] == '[')
			snprintf(buf, len, with_offset ? "%s+0x%llx" : "%s", base, (unsigned long long)f->off);
		else
			snprintf(buf, len, with_offset ? "[%s]+0x%llx" : "[%s]", base, (unsigned long long)f->off);
	} else {
		snprintf(buf, len, f->kernel ? "[kernel]" : "[unknown]");
	}
	return buf;
}
