/*
 * formats/trace_merge.c: visiting a trace's records. Meta and loss chunks
 * come first in file order; then the DATA streams (one per CPU ring) merge
 * by timestamp, holding one decompressed chunk per stream at a time, so
 * memory stays bounded by the number of CPUs, not by the size of the file.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "trace_int.h"

/*
 * Read-ahead: a second thread decompresses DATA chunks, and indexes their
 * records, before the merge asks for them, so that work overlaps whatever
 * the caller does with the records (decoding, unwinding). It works through the chunks in the
 * order of their first timestamps, which is the order the merge needs them
 * in, into a few buffers. Whichever thread reaches a chunk first decodes
 * it: the merge never waits for a chunk the other thread has not started,
 * and the other thread never waits for anything but a free buffer.
 */
#define AHEAD_SLOTS 4

/* A decoded chunk's records in time order: each one's time, offset and
 * length in the payload. */
struct rec_pos {
	uint64_t time;
	uint32_t off, len;
};

struct chunk_recs {
	struct rec_pos *pos;
	size_t nr, alloc;
};

static int pos_cmp(const void *a, const void *b)
{
	const struct rec_pos *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Index chunk ci's n decoded bytes at buf into c. Records inside a chunk
 * are put in time order: a ring can hold a few records out of order when
 * an event nests inside another's output. Returns 0, or -1 with err set. */
static int chunk_index(const struct trace_reader *r, size_t ci, const unsigned char *buf, size_t n,
		       struct chunk_recs *c, char *err, size_t errlen)
{
	size_t off = 0;

	c->nr = 0;
	while (off < n) {
		uint32_t sz;

		/* The kernel's records are 8-byte multiples: the next header
		 * stays aligned for whoever reads it. */
		if (n - off < 8 || (sz = get16(buf + off + 6)) < 8 || sz % 8 || sz > n - off)
			return trace_error_set(err, errlen, "chunk %zu at byte %llu: perf record at %zu is malformed", ci,
					       (unsigned long long)r->chunks[ci].offset, off);
		if (c->nr == c->alloc) {
			size_t a = c->alloc ? c->alloc * 2 : 1024;
			struct rec_pos *p = realloc(c->pos, a * sizeof(*p));

			if (!p)
				return trace_error_set(err, errlen, "out of memory");
			c->pos = p;
			c->alloc = a;
		}
		c->pos[c->nr++] = (struct rec_pos){ trace_record_time(buf + off, sz), off, sz };
		off += sz;
	}
	/* Nearly always in order already: a pass instead of a sort. */
	for (size_t i = 1; i < c->nr; i++)
		if (pos_cmp(&c->pos[i - 1], &c->pos[i]) > 0) {
			qsort(c->pos, c->nr, sizeof(*c->pos), pos_cmp);
			break;
		}
	return 0;
}
/* Fewer DATA chunks than this are not worth a thread. */
#define AHEAD_MIN_CHUNKS 8

enum { CH_IDLE, CH_DECODING, CH_READY, CH_TAKEN };

struct ahead_slot {
	size_t chunk;
	int used;
	unsigned char *buf;
	size_t alloc;
	long n;
	struct chunk_recs recs;
	char err[256];
};

struct ahead {
	struct trace_reader *r;
	pthread_t thread;
	int running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned char *state; /* per chunk of r */
	size_t *order, nr_order, next;
	struct ahead_slot slots[AHEAD_SLOTS];
	int quit;
	void *dctx;
	unsigned char *scratch; /* where the thread decodes (ahead_decode) */
	size_t scratch_alloc;
	uint64_t drop_lo, drop_hi; /* file bytes decoded and not yet dropped */
	size_t taken;		   /* chunks handed to the merge */
};

/* The decoded chunks' file pages not yet dropped: dropped now. */
static void ahead_flush(struct ahead *a)
{
	if (a->drop_hi > a->drop_lo)
		trace_range_drop(a->r, a->drop_lo, a->drop_hi - a->drop_lo);
	a->drop_lo = a->drop_hi = 0;
}

/* Chunk ci is decoded: its file pages can go, a few MiB at a time. Each
 * madvise costs a TLB shootdown on every CPU the threads run on, which
 * one per chunk made a tenth of an analysis. Chunks are taken in time
 * order, not quite in file order: one far from the range flushes it, and
 * the few inside it not yet taken refault if they are read. Called under
 * a->mu when the thread runs. */
static void ahead_drop(struct ahead *a, size_t ci)
{
	const struct trace_chunk *c = &a->r->chunks[ci];
	uint64_t lo = c->offset, hi = lo + TRACE_CHUNK_HEADER_SIZE + c->payload_len;

	if (a->drop_hi > a->drop_lo && (hi + DROP_STEP < a->drop_lo || lo > a->drop_hi + DROP_STEP))
		ahead_flush(a);
	if (a->drop_hi == a->drop_lo) {
		a->drop_lo = lo;
		a->drop_hi = hi;
	} else {
		a->drop_lo = lo < a->drop_lo ? lo : a->drop_lo;
		a->drop_hi = hi > a->drop_hi ? hi : a->drop_hi;
	}
	if (a->drop_hi - a->drop_lo >= DROP_STEP)
		ahead_flush(a);
}

/* Decode chunk ci into slot sl and index its records. zstd decodes into
 * a buffer of this thread's own, which stays in its CPU's cache, and the
 * result is copied to the slot: decoded straight into a slot's buffer,
 * which the merge last read on another CPU, the same chunks took twice
 * as long. Returns the bytes, or -1 with sl->err set. */
static long ahead_decode(struct ahead *a, struct ahead_slot *sl, size_t ci)
{
	long n = trace_chunk_decode(a->r, &a->dctx, ci, &a->scratch, &a->scratch_alloc, sl->err, sizeof(sl->err));

	/* A live ring's chunk overwritten since the scan: no records. */
	if (n == TRACE_CHUNK_GONE) {
		sl->recs.nr = 0;
		return 0;
	}
	/* Indexed here while the bytes are in this CPU's cache: read first
	 * by the merge, each record's header would be a miss. */
	if (n < 0 || chunk_index(a->r, ci, a->scratch, n, &sl->recs, sl->err, sizeof(sl->err)))
		return -1;
	if ((size_t)n > sl->alloc) {
		free(sl->buf);
		sl->alloc = 0;
		if (!(sl->buf = malloc(a->scratch_alloc)))
			return trace_error_set(sl->err, sizeof(sl->err), "out of memory");
		sl->alloc = a->scratch_alloc;
	}
	memcpy(sl->buf, a->scratch, n);
	return n;
}

static void *ahead_run(void *arg)
{
	struct ahead *a = arg;

	pthread_mutex_lock(&a->mu);
	for (;;) {
		struct ahead_slot *sl = NULL;
		size_t ci;

		while (a->next < a->nr_order && a->state[a->order[a->next]] != CH_IDLE)
			a->next++;
		for (int k = 0; k < AHEAD_SLOTS && !sl; k++)
			if (!a->slots[k].used)
				sl = &a->slots[k];
		if (a->quit || a->next == a->nr_order)
			break;
		if (!sl) {
			pthread_cond_wait(&a->cv, &a->mu);
			continue;
		}
		ci = a->order[a->next++];
		a->state[ci] = CH_DECODING;
		sl->used = 1;
		sl->chunk = ci;
		pthread_mutex_unlock(&a->mu);
		sl->n = ahead_decode(a, sl, ci);
		pthread_mutex_lock(&a->mu);
		ahead_drop(a, ci);
		a->state[ci] = CH_READY;
		pthread_cond_broadcast(&a->cv);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

static int order_cmp(const void *x, const void *y, void *arg)
{
	const struct trace_reader *r = arg;
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	if (r->chunks[a].time != r->chunks[b].time)
		return r->chunks[a].time < r->chunks[b].time ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* Start the thread when the file is worth it; without it every chunk is
 * decoded by the caller, as it would be anyway. */
static void ahead_start(struct ahead *a, struct trace_reader *r)
{
	memset(a, 0, sizeof(*a));
	a->r = r;
	for (size_t i = 0; i < r->nr_chunks; i++)
		a->nr_order += r->chunks[i].type == TRACE_CHUNK_DATA;
	if (a->nr_order < AHEAD_MIN_CHUNKS)
		return;
	a->state = calloc(r->nr_chunks, 1);
	a->order = malloc(a->nr_order * sizeof(*a->order));
	if (!a->state || !a->order)
		goto none;
	a->nr_order = 0;
	for (size_t i = 0; i < r->nr_chunks; i++)
		if (r->chunks[i].type == TRACE_CHUNK_DATA)
			a->order[a->nr_order++] = i;
	qsort_r(a->order, a->nr_order, sizeof(*a->order), order_cmp, r);
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	if (pthread_create(&a->thread, NULL, ahead_run, a)) {
		pthread_mutex_destroy(&a->mu);
		pthread_cond_destroy(&a->cv);
		goto none;
	}
	a->running = 1;
	return;
none:
	free(a->state);
	free(a->order);
	a->state = NULL;
	a->order = NULL;
}

static void ahead_stop(struct ahead *a)
{
	if (a->running) {
		pthread_mutex_lock(&a->mu);
		a->quit = 1;
		pthread_cond_broadcast(&a->cv);
		pthread_mutex_unlock(&a->mu);
		pthread_join(a->thread, NULL);
		pthread_mutex_destroy(&a->mu);
		pthread_cond_destroy(&a->cv);
	}
	ahead_flush(a);
	for (int k = 0; k < AHEAD_SLOTS; k++) {
		free(a->slots[k].buf);
		free(a->slots[k].recs.pos);
	}
	ZSTD_freeDCtx(a->dctx);
	free(a->scratch);
	free(a->state);
	free(a->order);
}

/* Chunk ci's payload into *buf and its records into *recs: the
 * read-ahead's when it has them (the buffers are swapped, not copied), else
 * decoded and indexed here. */
static long ahead_get(struct ahead *a, size_t ci, unsigned char **buf, size_t *alloc, struct chunk_recs *recs,
		      char *err, size_t errlen)
{
	struct trace_reader *r = a->r;
	long n;

	r->data_read++;
	a->taken++;
	if (a->running) {
		pthread_mutex_lock(&a->mu);
		while (a->state[ci] == CH_DECODING)
			pthread_cond_wait(&a->cv, &a->mu);
		if (a->state[ci] == CH_READY) {
			n = trace_error_set(err, errlen, "chunk %zu: the read-ahead lost it", ci);
			for (int k = 0; k < AHEAD_SLOTS; k++) {
				struct ahead_slot *sl = &a->slots[k];
				unsigned char *b = *buf;
				size_t al = *alloc;
				struct chunk_recs rc = *recs;

				if (!sl->used || sl->chunk != ci)
					continue;
				*buf = sl->buf;
				*alloc = sl->alloc;
				*recs = sl->recs;
				sl->buf = b;
				sl->alloc = al;
				sl->recs = rc;
				sl->used = 0;
				n = sl->n;
				if (n < 0)
					snprintf(err, errlen, "%s", sl->err);
				break;
			}
			a->state[ci] = CH_TAKEN;
			pthread_cond_broadcast(&a->cv);
			pthread_mutex_unlock(&a->mu);
			return n;
		}
		a->state[ci] = CH_TAKEN;
		pthread_mutex_unlock(&a->mu);
	}
	n = trace_chunk_decode(r, &r->dctx, ci, buf, alloc, err, errlen);
	if (a->running)
		pthread_mutex_lock(&a->mu);
	ahead_drop(a, ci);
	if (a->running)
		pthread_mutex_unlock(&a->mu);
	if (n == TRACE_CHUNK_GONE) {
		recs->nr = 0;
		return 0;
	}
	if (n >= 0 && chunk_index(r, ci, *buf, n, recs, err, errlen))
		n = -1;
	return n;
}

/* One DATA stream being merged: its chunks and the decoded current one. */
struct stream {
	uint32_t id;
	size_t *chunks; /* indices into r->chunks */
	size_t nr, alloc, next;
	unsigned char *buf;
	size_t buf_alloc;
	struct chunk_recs recs;
	size_t cur;
	size_t timed;	/* its chunks follow_horizon has looked at */
};

/* Load the stream's next chunk; returns 1 when one is loaded, 0 at the end,
 * -1 on error. */
static int stream_load(struct ahead *a, struct stream *s, char *err, size_t errlen)
{
	while (s->next < s->nr) {
		size_t ci = s->chunks[s->next++];

		s->cur = 0;
		if (ahead_get(a, ci, &s->buf, &s->buf_alloc, &s->recs, err, errlen) < 0)
			return -1;
		if (s->recs.nr)
			return 1;
	}
	return 0;
}

static int stream_before(const struct stream *a, const struct stream *b)
{
	uint64_t ta = a->recs.pos[a->cur].time, tb = b->recs.pos[b->cur].time;

	return ta != tb ? ta < tb : a->id < b->id;
}

static void heap_down(struct stream **h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < n && stream_before(h[l], h[m]))
			m = l;
		if (l + 1 < n && stream_before(h[l + 1], h[m]))
			m = l + 1;
		if (m == i)
			return;
		struct stream *t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* Meta and loss chunks [from, to) to their callbacks, in file order. */
static int visit_meta(struct trace_reader *r, const struct trace_handler *h, void *arg, size_t from, size_t to,
		      char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t alloc = 0;
	int ret = 0;

	for (size_t i = from; i < to && !ret; i++) {
		const struct trace_chunk *c = &r->chunks[i];
		long n;

		if (c->type == TRACE_CHUNK_META && h->meta_ref && c->stream < 32 && (h->meta_by_ref & 1u << c->stream)) {
			ret = h->meta_ref(c->stream, i, arg);
		} else if (c->type == TRACE_CHUNK_META && h->meta) {
			n = trace_chunk_payload(r, i, &buf, &alloc, err, errlen);
			ret = n == TRACE_CHUNK_GONE ? 0 : n < 0 ? -1 : h->meta(c->stream, buf, n, arg);
		} else if (c->type == TRACE_CHUNK_LOSS && h->loss) {
			n = trace_chunk_payload(r, i, &buf, &alloc, err, errlen);
			for (long o = 0; n >= 0 && o + LOSS_ENTRY_SIZE <= n && !ret; o += LOSS_ENTRY_SIZE) {
				struct trace_loss l = { get32(buf + o), get32(buf + o + 4), get64(buf + o + 8) };

				ret = h->loss(&l, arg);
			}
			if (n < 0 && n != TRACE_CHUNK_GONE)
				ret = -1;
		}
	}
	free(buf);
	return ret;
}

/* The DATA chunks of [from, to) onto the ends of their streams, a stream
 * made for each new one; *newest: the latest chunk time seen. Returns 0,
 * or -1 with err set. */
static int streams_add(struct trace_reader *r, struct stream **streams, size_t *nr_streams, size_t from, size_t to,
		       uint64_t *newest, char *err, size_t errlen)
{
	for (size_t i = from; i < to; i++) {
		const struct trace_chunk *c = &r->chunks[i];
		struct stream *s = NULL;

		if (c->type != TRACE_CHUNK_DATA)
			continue;
		if (c->time > *newest)
			*newest = c->time;
		for (size_t k = 0; k < *nr_streams; k++)
			if ((*streams)[k].id == c->stream)
				s = &(*streams)[k];
		if (!s) {
			struct stream *p = realloc(*streams, (*nr_streams + 1) * sizeof(*p));

			if (!p)
				return trace_error_set(err, errlen, "out of memory");
			*streams = p;
			s = &p[(*nr_streams)++];
			memset(s, 0, sizeof(*s));
			s->id = c->stream;
		}
		if (s->nr == s->alloc) {
			size_t a = s->alloc ? s->alloc * 2 : 64;
			size_t *p = realloc(s->chunks, a * sizeof(*p));

			if (!p)
				return trace_error_set(err, errlen, "out of memory");
			s->chunks = p;
			s->alloc = a;
		}
		s->chunks[s->nr++] = i;
	}
	return 0;
}

/* The latest record time the merge hands on before the next look at the
 * file: all of them, but in a live trace read as it grows (the
 * handler follows it), those older than its newest record, or than the
 * records' clock now, by a margin, which a CPU's chunk written late still
 * finds in their place. The newest record is looked for in each stream's
 * last chunk, once; *newest keeps it. The time, or the handler's stop_at short of it, goes in *horizon;
 * returns 0, or -1 with err set. */
static int follow_horizon(struct trace_reader *r, const struct trace_handler *h, void *arg, struct stream *streams,
			  size_t nr_streams, uint64_t *newest, uint64_t *horizon, char *err, size_t errlen)
{
	uint64_t now;

	*horizon = UINT64_MAX;
	if (!h->follow || !r->live || r->complete || r->stop[0])
		return 0;
	for (size_t k = 0; k < nr_streams; k++) {
		struct stream *s = &streams[k];
		uint64_t t;

		if (s->timed == s->nr)
			continue;
		s->timed = s->nr;
		if (trace_chunk_last_sample(r, s->chunks[s->nr - 1], &t, err, errlen))
			return -1;
		if (t > *newest)
			*newest = t;
	}
	now = h->now ? h->now(arg) : 0;
	if (now < *newest)
		now = *newest;
	*horizon = now > RECENT_MARGIN_NS ? now - RECENT_MARGIN_NS : 0;
	if (h->stop_at) {
		uint64_t at = h->stop_at(arg, *horizon);

		*horizon = at < *horizon ? at : *horizon;
	}
	return 0;
}

/* Every stream with a record to hand on into the heap, in heap order:
 * nr_heap of them. Returns 0, or -1 with err set. */
static int heap_build(struct ahead *a, struct stream *streams, size_t nr_streams, struct stream **heap,
		      size_t *nr_heap, char *err, size_t errlen)
{
	*nr_heap = 0;
	for (size_t k = 0; k < nr_streams; k++) {
		struct stream *s = &streams[k];
		int l = s->cur < s->recs.nr ? 1 : stream_load(a, s, err, errlen);

		if (l < 0)
			return -1;
		if (l)
			heap[(*nr_heap)++] = s;
	}
	for (size_t k = *nr_heap; k-- > 0;)
		heap_down(heap, *nr_heap, k);
	return 0;
}

/* A merge under way: the streams, the heap of those with a record to
 * hand on, and how far it may go before the next look at the file. */
struct merge {
	struct trace_reader *r;
	const struct trace_handler *h;
	void *arg;
	struct ahead ahead;
	struct stream *streams, **heap;
	size_t nr_streams, nr_heap, nr_data;
	uint64_t newest, horizon;
	char *err;
	size_t errlen;
};

/* The DATA chunks of the reader's from on into the merge: onto their
 * streams, the heap made again, the horizon reckoned. Returns 0, or -1
 * with err set. */
static int merge_take(struct merge *m, size_t from)
{
	if (streams_add(m->r, &m->streams, &m->nr_streams, from, m->r->nr_chunks, &m->newest, m->err, m->errlen))
		return -1;
	m->nr_data = 0;
	for (size_t k = 0; k < m->nr_streams; k++)
		m->nr_data += m->streams[k].nr;
	free(m->heap);
	m->heap = calloc(m->nr_streams ? m->nr_streams : 1, sizeof(*m->heap));
	if (!m->heap)
		return trace_error_set(m->err, m->errlen, "out of memory");
	if (heap_build(&m->ahead, m->streams, m->nr_streams, m->heap, &m->nr_heap, m->err, m->errlen))
		return -1;
	return follow_horizon(m->r, m->h, m->arg, m->streams, m->nr_streams, &m->newest, &m->horizon, m->err,
			      m->errlen);
}

int trace_read(struct trace_reader *r, const struct trace_handler *h, void *arg, char *err,
	       size_t errlen)
{
	struct merge m = { .r = r, .h = h, .arg = arg, .ahead = { .r = r }, .err = err, .errlen = errlen };
	size_t seen = r->nr_chunks;
	int ret;

	/* Meta and loss first, in file order. */
	ret = visit_meta(r, h, arg, 0, r->nr_chunks, err, errlen);
	if (ret || !h->record)
		return ret;
	r->replays++;

	ahead_start(&m.ahead, r);
	if (merge_take(&m, 0)) {
		ret = -1;
		goto out;
	}
	for (;;) {
		while (m.nr_heap && m.heap[0]->recs.pos[m.heap[0]->cur].time <= m.horizon) {
			struct stream *s = m.heap[0];
			struct rec_pos *p = &s->recs.pos[s->cur++];

			ret = h->record(s->buf + p->off, p->len, s->id, p->time, arg);
			if (ret)
				goto out;
			if (s->cur == s->recs.nr) {
				int l = stream_load(&m.ahead, s, err, errlen);

				if (l < 0) {
					ret = -1;
					goto out;
				}
				if (h->progress)
					h->progress(m.ahead.taken, m.nr_data, arg);
				if (!l)
					m.heap[0] = m.heap[--m.nr_heap];
			}
			heap_down(m.heap, m.nr_heap, 0);
		}
		if (m.horizon == UINT64_MAX)
			break;
		/* What is left waits for the chunks the file does not hold yet.
		 * The read-ahead's order was of the chunks there were: from
		 * here the merge decodes its chunks itself. */
		if (m.ahead.running) {
			size_t taken = m.ahead.taken;

			ahead_stop(&m.ahead);
			memset(&m.ahead, 0, sizeof(m.ahead));
			m.ahead.r = r;
			m.ahead.taken = taken;
		}
		ret = h->follow(arg);
		if (ret == TRACE_FOLLOW_END) {
			ret = 0;
			break;
		}
		if (ret || (ret = visit_meta(r, h, arg, seen, r->nr_chunks, err, errlen)))
			goto out;
		if (merge_take(&m, seen)) {
			ret = -1;
			goto out;
		}
		seen = r->nr_chunks;
	}
out:
	ahead_stop(&m.ahead);
	for (size_t k = 0; k < m.nr_streams; k++) {
		free(m.streams[k].chunks);
		free(m.streams[k].buf);
		free(m.streams[k].recs.pos);
	}
	free(m.streams);
	free(m.heap);
	return ret;
}
