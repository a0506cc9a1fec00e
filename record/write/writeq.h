/*
 * record/write/writeq.h: the compression thread.
 *
 * Owns handing full DATA chunks from the drain loop to a second thread that
 * compresses and writes them, so the rings are emptied at memcpy speed and
 * a slow codec or disk shows up as a queue, not as lost events. While the
 * queue runs it is the only user of the trace writer; the drain loop waits
 * (and says so in the statistics) only when more than its byte limit is
 * queued. A growing backlog first lowers the zstd level, then stores
 * chunks uncompressed: a bigger file is better than lost events. Written
 * buffers are kept for the next chunks, and the first ones are faulted in
 * at the start, so the drain loop never waits on the kernel for memory.
 * Knows nothing of perf records: work on them that can wait for the
 * compression thread is a prepare callback.
 */
#ifndef MEMSIGHT_RECORD_WRITEQ_H
#define MEMSIGHT_RECORD_WRITEQ_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../../formats/trace.h"

struct writeq_job;

struct writeq {
	struct trace_writer *w;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t more, room;
	struct writeq_job *head, *tail;
	void **pool;		/* written buffers kept for reuse, all pool_size bytes */
	size_t nr_pool, pool_size, pool_max;
	unsigned char *arena;	/* the buffers faulted in at the start */
	size_t arena_len, arena_ready; /* ready: faulted in before the thread started */
	size_t pending, max_pending, peak;
	uint64_t waits;		/* times the drain loop had to wait for room */
	uint64_t fast_chunks;	/* written with a fast level to catch up */
	uint64_t raw_chunks;	/* written uncompressed to catch up */
	uint64_t dropped_records; /* in chunks not written: the disk was full */
	int boosted;		/* running SCHED_FIFO to catch up */
	uint64_t boosts;	/* times it had to */
	int stopping, running;
	/* Called on every DATA chunk just before it is compressed; may
	 * rewrite it in place, shorter, and returns its new length. */
	size_t (*prepare)(void *arg, unsigned char *buf, size_t len);
	void *prepare_arg;
};

/* Start the thread (prepare and prepare_arg set or NULL), with prefault bytes of buffers faulted in now. Returns
 * 0 or a negative errno. */
int writeq_start(struct writeq *q, struct trace_writer *w, size_t max_pending, size_t buf_size, size_t prefault);
/* A buffer of at least q->pool_size bytes for the next chunk: a written
 * one when there is one, so the drain loop does not fault in fresh memory
 * for every chunk. NULL when out of memory. */
void *writeq_buffer(struct writeq *q);
/* Queue one DATA chunk of len bytes in a buffer of size bytes; the queue takes buf (from writeq_buffer or malloc)
 * and frees or reuses it. When the queue is not running the chunk is
 * written at once. */
void writeq_push(struct writeq *q, uint32_t stream, uint64_t time, void *buf, size_t len, size_t size,
		 uint64_t nr);
/* Queue a META chunk (a copy of data) in order with the DATA chunks: for
 * what the recorder learns mid-recording and must survive a crash. */
void writeq_push_meta(struct writeq *q, uint32_t kind, const void *data, size_t len);
/* Run fn(arg, data) on the compression thread, in order with the chunks
 * queued before it (at once when the thread is not running); data, from
 * malloc, is freed after. For work that needs the trace still. */
void writeq_push_call(struct writeq *q, void (*fn)(void *arg, void *data), void *arg, void *data);
/* Write what is queued and end the thread. */
void writeq_stop(struct writeq *q);

#endif
