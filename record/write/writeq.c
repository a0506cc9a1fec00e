/*
 * record/write/writeq.c: the compression thread; see writeq.h.
 */
#include "writeq.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

/* Level 1 compresses stack dumps as well as 3 at 1.6 times the speed; zstd's
 * negative levels lost a third of the ratio on them. */
#define WRITEQ_FAST_LEVEL 1
/* Below the drain loop (nice -10 when root) and above the command: a
 * command with more busy threads than CPUs starved it at +5 (50 threads
 * on 2 CPUs: the queue filled, the drain loop waited and 11% of the
 * events were lost). Without root it stays at the command's 0. */
#define WRITEQ_NICE -5
/* Queued bytes past which the thread runs real-time (writeq_boost). */
#define WRITEQ_BOOST_AT (8u << 20)
/* Bytes of the arena faulted in before the command starts. */
#define WRITEQ_PREFAULT_NOW (4u << 20)

struct writeq_job {
	struct writeq_job *next;
	void (*call)(void *arg, void *data); /* a call job (type 0): call(call_arg, buf) */
	void *call_arg;
	uint32_t type, stream;
	uint64_t time, nr;
	void *buf;
	size_t len, size;
};

/* Losing events is worse than a bigger file: as the backlog grows, trade
 * ratio for speed, first a fast zstd level, then no compression at all. */
static void writeq_write(struct writeq *q, struct writeq_job *j, size_t backlog)
{
	struct trace_writer *w = q->w;
	enum trace_codec codec = w->codec;
	int level = w->level;
	size_t len = j->len;

	if (j->call) {
		j->call(j->call_arg, j->buf);
		return;
	}
	if (j->type != TRACE_CHUNK_DATA) {
		trace_writer_add(w, j->type, j->stream, j->time, j->buf, j->len, j->nr);
		return;
	}
	/* The disk is full: what is left of the reserve is for the chunks
	 * that close the trace. */
	if (trace_writer_full(w)) {
		q->dropped_records += j->nr;
		return;
	}
	if (q->prepare)
		len = q->prepare(q->prepare_arg, j->buf, len);
	if (backlog > q->max_pending / 2) {
		w->codec = TRACE_CODEC_NONE;
		q->raw_chunks++;
	} else if (backlog > q->max_pending / 8 && codec == TRACE_CODEC_ZSTD) {
		w->level = WRITEQ_FAST_LEVEL;
		q->fast_chunks++;
	}
	trace_writer_add(w, TRACE_CHUNK_DATA, j->stream, j->time, j->buf, len, j->nr);
	w->codec = codec;
	w->level = level;
}

static void writeq_free(struct writeq *q, void *buf)
{
	unsigned char *b = buf;

	/* Arena buffers go back to the pool, never to free(). */
	if (b >= q->arena && b < q->arena + q->arena_len)
		return;
	free(buf);
}

static void writeq_populate(unsigned char *a, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	if (madvise(a, len, MADV_POPULATE_WRITE))
#endif
		for (size_t i = 0; i < len; i += 4096)
			a[i] = 0;
}

/* Fault in the first buffers before the command runs: a page fault per
 * 4 KiB in the drain loop costs more than the copy itself at dwarf rates,
 * and a freed 1 MiB malloc chunk goes back to the kernel. Huge pages where
 * the kernel gives them, so the arena costs a few faults. Only the first
 * WRITEQ_PREFAULT_NOW bytes hold up the start (about 2 ms a MiB here);
 * the thread faults in the rest as its first work, and the pool hands out
 * the ready buffers first. */
static void writeq_arena_make(struct writeq *q, size_t bytes)
{
	size_t n = (bytes + q->pool_size - 1) / q->pool_size;
	unsigned char *a;

	if (!n)
		return;
	if (n > q->pool_max)
		n = q->pool_max;
	a = mmap(NULL, n * q->pool_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		return;
	madvise(a, n * q->pool_size, MADV_HUGEPAGE);
	q->arena = a;
	q->arena_len = n * q->pool_size;
	q->arena_ready = q->arena_len < WRITEQ_PREFAULT_NOW ? q->arena_len : WRITEQ_PREFAULT_NOW;
	writeq_populate(a, q->arena_ready);
	for (size_t i = n; i-- > 0;)
		q->pool[q->nr_pool++] = a + i * q->pool_size;
}

/* A backlog means the command's threads are taking the CPU the
 * compression thread needs, and a growing queue makes the drain loop fault
 * in fresh buffers (2 ms a MiB here) until the rings overflow: past
 * WRITEQ_BOOST_AT queued the thread runs SCHED_FIFO, as the drain loop
 * does, until the queue is down to a quarter of that. Where real-time
 * scheduling is not allowed nothing changes. */
static void writeq_boost(struct writeq *q, size_t backlog)
{
	if (!q->boosted && backlog > WRITEQ_BOOST_AT) {
		struct sched_param sp = { .sched_priority = 1 };

		if (!sched_setscheduler(0, SCHED_FIFO, &sp)) {
			q->boosted = 1;
			q->boosts++;
		}
	} else if (q->boosted && backlog < WRITEQ_BOOST_AT / 4) {
		struct sched_param sp = { .sched_priority = 0 };

		sched_setscheduler(0, SCHED_OTHER, &sp);
		setpriority(PRIO_PROCESS, gettid(), WRITEQ_NICE);
		q->boosted = 0;
	}
}

static void *writeq_main(void *arg)
{
	struct writeq *q = arg;

	/* Draining the rings matters more than compressing: when both want
	 * the same CPU, the drain loop must win or the kernel drops events;
	 * and compressing more than the command, or the queue fills. */
	/* Started by a drain loop that may run SCHED_FIFO: this thread is an
	 * ordinary one, below the drain loop and above the command. */
	sched_setscheduler(0, SCHED_OTHER, &(struct sched_param){ .sched_priority = 0 });
	setpriority(PRIO_PROCESS, gettid(), WRITEQ_NICE);
	if (q->arena_len > q->arena_ready)
		writeq_populate(q->arena + q->arena_ready, q->arena_len - q->arena_ready);
	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct writeq_job *j;
		size_t backlog;

		while (!q->head && !q->stopping)
			pthread_cond_wait(&q->more, &q->lock);
		j = q->head;
		if (!j)
			break;
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
		backlog = q->pending;
		pthread_mutex_unlock(&q->lock);
		writeq_boost(q, backlog);
		writeq_write(q, j, backlog);
		pthread_mutex_lock(&q->lock);
		q->pending -= j->len;
		pthread_cond_signal(&q->room);
		if (j->size == q->pool_size && q->nr_pool < q->pool_max)
			q->pool[q->nr_pool++] = j->buf;
		else
			writeq_free(q, j->buf);
		free(j);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

void *writeq_buffer(struct writeq *q)
{
	void *b = NULL;

	if (q->running) {
		pthread_mutex_lock(&q->lock);
		if (q->nr_pool)
			b = q->pool[--q->nr_pool];
		pthread_mutex_unlock(&q->lock);
	}
	return b ? b : malloc(q->pool_size);
}

int writeq_start(struct writeq *q, struct trace_writer *w, size_t max_pending, size_t buf_size, size_t prefault)
{
	int r;

	q->w = w;
	q->max_pending = max_pending;
	q->pool_size = buf_size;
	/* Every buffer the queue may hold, plus the ones being filled. */
	q->pool_max = max_pending / buf_size + 64;
	q->pool = calloc(q->pool_max, sizeof(*q->pool));
	if (!q->pool)
		return -ENOMEM;
	writeq_arena_make(q, prefault);
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->more, NULL);
	pthread_cond_init(&q->room, NULL);
	r = pthread_create(&q->thread, NULL, writeq_main, q);
	if (r) {
		/* Without the thread the drain loop writes and frees each
		 * buffer itself: no pool, no arena. */
		q->nr_pool = 0;
		free(q->pool);
		q->pool = NULL;
		if (q->arena)
			munmap(q->arena, q->arena_len);
		q->arena = NULL;
		q->arena_len = 0;
		return -r;
	}
	q->running = 1;
	return 0;
}

static void writeq_push_job(struct writeq *q, struct writeq_job *j);

static void writeq_push_chunk(struct writeq *q, uint32_t type, uint32_t stream, uint64_t time, void *buf,
			      size_t len, size_t size, uint64_t nr)
{
	struct writeq_job *j;

	if (!q->running || !(j = calloc(1, sizeof(*j)))) {
		if (type == TRACE_CHUNK_DATA && trace_writer_full(q->w)) {
			q->dropped_records += nr;
		} else {
			if (type == TRACE_CHUNK_DATA && q->prepare)
				len = q->prepare(q->prepare_arg, buf, len);
			trace_writer_add(q->w, type, stream, time, buf, len, nr);
		}
		writeq_free(q, buf);
		return;
	}
	*j = (struct writeq_job){ .type = type, .stream = stream, .time = time, .nr = nr, .buf = buf, .len = len, .size = size };
	writeq_push_job(q, j);
}

static void writeq_push_job(struct writeq *q, struct writeq_job *j)
{
	size_t len = j->len;

	pthread_mutex_lock(&q->lock);
	if (q->pending && q->pending + len > q->max_pending) {
		q->waits++;
		while (q->pending && q->pending + len > q->max_pending)
			pthread_cond_wait(&q->room, &q->lock);
	}
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	q->pending += len;
	if (q->pending > q->peak)
		q->peak = q->pending;
	pthread_cond_signal(&q->more);
	pthread_mutex_unlock(&q->lock);
}

void writeq_push(struct writeq *q, uint32_t stream, uint64_t time, void *buf, size_t len, size_t size,
		 uint64_t nr)
{
	writeq_push_chunk(q, TRACE_CHUNK_DATA, stream, time, buf, len, size, nr);
}

void writeq_push_call(struct writeq *q, void (*fn)(void *arg, void *data), void *arg, void *data)
{
	struct writeq_job *j;

	if (!q->running || !(j = calloc(1, sizeof(*j)))) {
		fn(arg, data);
		free(data);
		return;
	}
	*j = (struct writeq_job){ .call = fn, .call_arg = arg, .buf = data };
	writeq_push_job(q, j);
}

void writeq_push_meta(struct writeq *q, uint32_t kind, const void *data, size_t len)
{
	void *copy = malloc(len ? len : 1);

	if (!copy)
		return;
	memcpy(copy, data, len);
	writeq_push_chunk(q, TRACE_CHUNK_META, kind, 0, copy, len, len, 0);
}

void writeq_stop(struct writeq *q)
{
	if (!q->running)
		return;
	pthread_mutex_lock(&q->lock);
	q->stopping = 1;
	pthread_cond_signal(&q->more);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	q->running = 0;
	while (q->nr_pool)
		writeq_free(q, q->pool[--q->nr_pool]);
	free(q->pool);
	q->pool = NULL;
	if (q->arena)
		munmap(q->arena, q->arena_len);
	q->arena = NULL;
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->more);
	pthread_cond_destroy(&q->room);
}
