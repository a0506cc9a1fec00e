/*
 * record/write/drain.c: the drain loop's work: copying records out of the rings into
 * chunk buffers, looking at each on the way (counting, snapshotting the
 * system at an OOM kill, firing triggers), and handing full or old chunks
 * to the compression thread, which notes what the end needs (kernel
 * addresses, files without build-id, mappings) before compressing them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../procs/procsnap.h"
#include "../recorder.h"

static void nobid_add(struct recorder *rc, const char *name)
{
	for (size_t i = 0; i < rc->nr_nobid; i++)
		if (!strcmp(rc->nobid[i], name))
			return;
	if (rc->nr_nobid == rc->nobid_alloc) {
		size_t n = rc->nobid_alloc ? rc->nobid_alloc * 2 : 32;
		char **p = realloc(rc->nobid, n * sizeof(*p));

		if (!p)
			return;
		rc->nobid = p;
		rc->nobid_alloc = n;
	}
	if ((rc->nobid[rc->nr_nobid] = strdup(name)))
		rc->nr_nobid++;
}

/* An OOM kill: the state of the system now, while the victim is likely
 * still exiting, goes into the trace in order with the samples. */
static void oom_seen(struct recorder *rc, const struct rec_event *e, const unsigned char *rec, size_t size)
{
	uint32_t raw_len, tid[2];
	uint64_t time;
	int32_t victim = 0;
	const unsigned char *raw = events_sample_raw(e, rec, size, &raw_len);
	char *text;
	size_t len;

	if (raw && (uint32_t)e->victim_pid_off + 4 <= raw_len)
		memcpy(&victim, raw + e->victim_pid_off, 4);
	/* IDENTIFIER, IP, TID (pid, tid), TIME: fixed for every event. */
	memcpy(tid, rec + 24, 8);
	memcpy(&time, rec + 32, 8);
	if (!procsnap_oom_context(victim, tid[0], time, &text, &len)) {
		writeq_push_meta(&rc->q, TRACE_META_OOM, text, len);
		rc->oom_kills++;
		free(text);
	}
	if (rc->fl.nr_trig) {
		char detail[64];

		snprintf(detail, sizeof(detail), "victim pid %d", (int)victim);
		flight_fire(rc, FLIGHT_OOM, detail);
	}
}

/* Drain loop: look at one record copied out of a ring: count it, and
 * what cannot wait for the compression thread (an OOM kill's state while
 * the victim is still there, the triggers). */
static void inspect(struct recorder *rc, struct ring *r, const unsigned char *rec, size_t size)
{
	const struct perf_event_header *h = (const void *)rec;

	if (h->type == PERF_RECORD_SAMPLE && size >= 16) {
		uint64_t id;
		struct rec_event *e;

		memcpy(&id, rec + 8, 8);
		e = rec_event_of(rc, id);
		if (!e)
			return;
		e->samples++;
		if (e->victim_pid_off > 0)
			oom_seen(rc, e, rec, size);
		if (e->watch)
			flight_inspect(rc, e, rec, size);
	} else if (h->type == PERF_RECORD_LOST && size >= 24) {
		uint64_t lost;

		memcpy(&lost, rec + 16, 8);
		r->lost += lost;
	}
}

/* Compression thread: what the end of the recording (and a ring's next
 * segment) needs from a record: kernel addresses, objects to embed, files
 * without build-id, the processes' mappings. */
static void note(struct recorder *rc, const struct rec_event *e, const unsigned char *rec, size_t size)
{
	const struct perf_event_header *h = (const void *)rec;

	if (rc->fl.ring_size && h->type != PERF_RECORD_SAMPLE)
		proctrack_record(&rc->fl.pt, rec, size);
	switch (h->type) {
	case PERF_RECORD_SAMPLE: {
		if (e && e->callchain_off && e->callchain_off + 8 <= size) {
			uint64_t nr, ip;
			int kernel = 0;

			memcpy(&nr, rec + e->callchain_off, 8);
			for (uint64_t i = 0; i < nr && e->callchain_off + 8 + 8 * (i + 1) <= size; i++) {
				memcpy(&ip, rec + e->callchain_off + 8 + 8 * i, 8);
				if (ip >= PERF_CONTEXT_MAX) {
					kernel = ip == PERF_CONTEXT_KERNEL;
					if (ip == PERF_CONTEXT_USER)
						break;
					continue;
				}
				if (kernel)
					ksyms_set_add(&rc->ksyms, ip);
			}
		}
		break;
	}
	case PERF_RECORD_MMAP2:
		if (size >= 72 + sizeof(TRACE_OBJECT_VDSO) && !memcmp(rec + 72, TRACE_OBJECT_VDSO, sizeof(TRACE_OBJECT_VDSO)))
			rc->embed.vdso = 1;
		if (size > 73 && rec[72] == '/' && rec[73] != '/' && rc->embed.mode != EMBED_NONE) {
			uint32_t prot;

			memcpy(&prot, rec + 64, 4);
			if ((prot & PROT_EXEC) && memchr(rec + 72, 0, size - 72))
				embed_set_add(&rc->embed, (const char *)rec + 72);
		}
		if (!(h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && size > 73 && rec[72] == '/' && rec[73] != '/') {
			char name[PATH_MAX];
			size_t n = strnlen((const char *)rec + 72, size - 72);

			if (n < sizeof(name)) {
				memcpy(name, rec + 72, n);
				name[n] = 0;
				nobid_add(rc, name);
			}
		}
		break;
	}
}

/* On the compression thread, before a DATA chunk is compressed: each
 * record noted, then what of each stack dump is kept, and how (scrub.h).
 * Samples that shrink move the records after them up. Reads only the id
 * table, which is fixed before the thread starts. Returns the chunk's new
 * length. */
size_t rec_chunk_prepare(void *arg, unsigned char *buf, size_t len)
{
	struct recorder *rc = arg;
	size_t off = 0, out = 0;

	while (off + sizeof(struct perf_event_header) <= len) {
		struct perf_event_header h;
		const struct rec_event *e;
		size_t size;
		uint64_t id;

		memcpy(&h, buf + off, sizeof(h));
		if (h.size < sizeof(h) || h.size > len - off)
			break;
		size = h.size;
		e = NULL;
		if (h.type == PERF_RECORD_SAMPLE && h.size >= 16) {
			memcpy(&id, buf + off + 8, 8);
			e = rec_event_of(rc, id);
		}
		note(rc, e, buf + off, size);
		if (e && (e->attr.sample_type & PERF_SAMPLE_STACK_USER))
			size = scrub_sample(&rc->scrub, e->attr.sample_type, e->attr.sample_regs_user, buf + off, h.size);
		if (out != off)
			memmove(buf + out, buf + off, size);
		out += size;
		off += h.size;
	}
	/* Whatever could not be parsed stays as it was. */
	if (out != off)
		memmove(buf + out, buf + off, len - off);
	return out + (len - off);
}

void rec_ring_flush(struct recorder *rc, struct ring *r)
{
	if (!r->len)
		return;
	/* The compression thread takes the buffer; the next records go to
	 * a new one. */
	writeq_push(&rc->q, r->cpu, r->first_time, r->chunk, r->len, r->alloc, r->nrec);
	rc->records += r->nrec;
	r->chunk = NULL;
	r->alloc = 0;
	r->len = 0;
	r->nrec = 0;
	r->flushed_at = rec_now_ns(CLOCK_MONOTONIC);
}

int rec_ring_drain(struct recorder *rc, struct ring *r)
{
	uint64_t head, tail;

	if (!r->base)
		return 0;
	head = __atomic_load_n(&r->pc->data_head, __ATOMIC_ACQUIRE);
	tail = r->pc->data_tail;
	rc->drained += head - tail;
	while (tail < head) {
		size_t off = tail & r->mask, size, first;
		const struct perf_event_header *h = (const void *)(r->data + off);
		unsigned char *dst;

		/* Records are 8-byte aligned, so a header never wraps. */
		size = h->size;
		if (size < sizeof(*h) || size > head - tail)
			return msg_error("ring of cpu %d holds a malformed record (size %zu)", r->cpu, size);
		/* A record is at most 64 KiB (the header's u16) and a chunk is
		 * flushed past CHUNK_TARGET, so a CHUNK_BUF buffer always has
		 * room; buffers are never grown. */
		if (r->len + size > r->alloc)
			rec_ring_flush(rc, r);
		if (!r->alloc) {
			r->chunk = writeq_buffer(&rc->q);
			if (!r->chunk)
				return msg_error("out of memory");
			r->alloc = CHUNK_BUF;
		}
		dst = r->chunk + r->len;
		first = size;
		if (off + size > r->size)
			first = r->size - off;
		memcpy(dst, r->data + off, first);
		if (first < size)
			memcpy(dst + first, r->data, size - first);
		if (!r->nrec)
			r->first_time = trace_record_time(dst, size);
		inspect(rc, r, dst, size);
		r->len += size;
		r->nrec++;
		tail += size;
	}
	/* Free the ring before the slow part: compression and the write. */
	__atomic_store_n(&r->pc->data_tail, tail, __ATOMIC_RELEASE);
	if (r->len >= CHUNK_TARGET)
		rec_ring_flush(rc, r);
	return 0;
}

int rec_drain_all(struct recorder *rc, int flush_old)
{
	uint64_t now = flush_old ? rec_now_ns(CLOCK_MONOTONIC) : 0;

	for (int c = 0; c < rc->ncpus; c++) {
		struct ring *r = &rc->rings[c];

		if (rec_ring_drain(rc, r))
			return -1;
		/* Bound what a crash could lose on a quiet CPU. */
		if (flush_old && r->len && now - r->flushed_at > (rc->fl.ring_size ? FLUSH_AGE_RING_NS : FLUSH_AGE_NS))
			rec_ring_flush(rc, r);
	}
	return 0;
}

