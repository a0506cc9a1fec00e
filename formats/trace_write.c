/*
 * formats/trace_write.c: the writer of the trace file.
 *
 * It appends self-describing chunks; each one is complete on disk after a
 * single write, so a recorder killed at any moment leaves a file whose every
 * earlier chunk reads back. The first error sticks: later calls do nothing
 * and trace_writer_finish() reports it.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "trace_int.h"

static int writer_fail(struct trace_writer *w, int err, const char *fmt, ...)
{
	va_list ap;

	if (w->err)
		return w->err;
	w->err = err;
	va_start(ap, fmt);
	vsnprintf(w->errmsg, sizeof(w->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

/* The file's blocks allocated from the end up to end, its size unchanged.
 * A reserve more is asked for, so that most chunks find their room held
 * already and make no call (on ext4 one costs tens of microseconds, and a
 * system-wide recording writes hundreds of chunks a minute); where the
 * disk cannot give that much, exactly end. 0, or -1 with errno. */
static int writer_hold(struct trace_writer *w, uint64_t end)
{
	if (end <= w->held)
		return 0;
	if (!fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->offset, (off_t)(end - w->offset + w->reserve))) {
		w->held = end + w->reserve;
		return 0;
	}
	if ((errno != ENOSPC && errno != EDQUOT) ||
	    fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->offset, (off_t)(end - w->offset)))
		return -1;
	w->held = end;
	return 0;
}

/* Blocks held past the end of the file, its size unchanged: the chunks
 * that close a trace still find room once the disk fills. When they
 * cannot be had the writer is full; a file system without fallocate gets
 * no reserve. */
static void writer_keep_reserve(struct trace_writer *w)
{
	if (!writer_hold(w, w->offset + w->reserve))
		return;
	if (errno == ENOSPC || errno == EDQUOT)
		w->full = 1;
	else if (errno != EINTR)
		w->reserve = 0;
}

static int writer_out(struct trace_writer *w, const void *a, size_t alen, const void *b, size_t blen)
{
	if (w->err)
		return w->err;
	if (w->fd < 0) {
		size_t need = w->mem_len + alen + blen;

		if (need > w->mem_alloc) {
			size_t n = w->mem_alloc ? w->mem_alloc : 4096;
			unsigned char *p;

			while (n < need)
				n *= 2;
			p = realloc(w->mem, n);
			if (!p)
				return writer_fail(w, -ENOMEM, "out of memory");
			w->mem = p;
			w->mem_alloc = n;
		}
		memcpy(w->mem + w->mem_len, a, alen);
		if (blen)
			memcpy(w->mem + w->mem_len + alen, b, blen);
		w->mem_len = need;
	} else {
		struct iovec iov[2] = { { (void *)a, alen }, { (void *)b, blen } };
		size_t left = alen + blen;
		int n = blen ? 2 : 1, i = 0;

		uint64_t at = w->offset;

		while (left) {
			/* A ring writes where its segment is, not at the end. */
			ssize_t r = w->ring_start ? pwritev(w->fd, iov + i, n - i, (off_t)at) : writev(w->fd, iov + i, n - i);

			if (r < 0) {
				if (errno == EINTR)
					continue;
				return writer_fail(w, -errno, "write failed: %s", strerror(errno));
			}
			left -= r;
			at += r;
			while (r > 0 && i < n) {
				if ((size_t)r >= iov[i].iov_len) {
					r -= iov[i].iov_len;
					i++;
				} else {
					iov[i].iov_base = (char *)iov[i].iov_base + r;
					iov[i].iov_len -= r;
					r = 0;
				}
			}
		}
	}
	w->offset += alen + blen;
	if (w->fd >= 0 && w->reserve && !w->full && !w->ring_start)
		writer_keep_reserve(w);
	return 0;
}

/* The file header; a ring's names its segments once they are laid out
 * (ring_start 0 until then: a reader takes the head alone). */
static void writer_header(const struct trace_writer *w, unsigned char *h, uint32_t flags, uint64_t created)
{
	memset(h, 0, TRACE_FILE_HEADER_SIZE);
	memcpy(h, TRACE_MAGIC, 8);
	put32(h + 8, flags & TRACE_FILE_RING ? TRACE_VERSION : TRACE_VERSION_LINEAR);
	put32(h + 12, TRACE_FILE_HEADER_SIZE);
	put32(h + 16, TRACE_CHUNK_HEADER_SIZE);
	put32(h + 20, flags);
	put64(h + 24, created);
	put64(h + 32, w->ring_start);
	put32(h + 40, (uint32_t)w->seg_size);
	put32(h + 44, w->nr_segs);
	put32(h + 60, (uint32_t)crc32(crc32(0, NULL, 0), h, 60));
}

static int writer_init(struct trace_writer *w, int fd, const struct trace_writer_opts *o)
{
	unsigned char h[TRACE_FILE_HEADER_SIZE];
	struct timespec ts;
	uint64_t created = o ? o->created_ns : 0;
	uint32_t flags = o ? o->file_flags & ~TRACE_FILE_RING : 0;

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->codec = o ? o->codec : TRACE_CODEC_ZSTD;
	w->level = o ? o->level : 0;
	if (!w->level)
		w->level = w->codec == TRACE_CODEC_ZLIB ? 6 : w->codec == TRACE_CODEC_ZSTD ? 3 : 0;
	if (w->codec > TRACE_CODEC_ZLIB)
		return writer_fail(w, -EINVAL, "unknown codec %d", w->codec);
	if (w->codec == TRACE_CODEC_ZSTD) {
		w->zctx = ZSTD_createCCtx();
		if (!w->zctx)
			return writer_fail(w, -ENOMEM, "cannot create a zstd context");
	}
	if (!created) {
		clock_gettime(CLOCK_REALTIME, &ts);
		created = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	}
	w->created_ns = created;
	if (o && o->ring_size) {
		if (fd < 0)
			return writer_fail(w, -EINVAL, "a ring needs a file");
		w->ring_size = o->ring_size;
		w->ring_segment = o->ring_segment;
		flags |= TRACE_FILE_RING;
	}
	w->file_flags = flags;
	writer_header(w, h, flags, created);
	return writer_out(w, h, sizeof(h), NULL, 0);
}

int trace_writer_init_fd(struct trace_writer *w, int fd, const struct trace_writer_opts *o)
{
	return writer_init(w, fd, o);
}

int trace_writer_init_mem(struct trace_writer *w, const struct trace_writer_opts *o)
{
	return writer_init(w, -1, o);
}

static int writer_compress(struct trace_writer *w, const void *data, size_t len,
			   const void **out, size_t *outlen)
{
	size_t bound;

	*out = data;
	*outlen = len;
	if (w->codec == TRACE_CODEC_NONE || len == 0)
		return TRACE_CODEC_NONE;
	bound = w->codec == TRACE_CODEC_ZSTD ? ZSTD_compressBound(len) : compressBound(len);
	if (bound > w->cbuf_alloc) {
		unsigned char *p = realloc(w->cbuf, bound);

		if (!p)
			return writer_fail(w, -ENOMEM, "out of memory");
		w->cbuf = p;
		w->cbuf_alloc = bound;
	}
	if (w->codec == TRACE_CODEC_ZSTD) {
		size_t r = ZSTD_compressCCtx(w->zctx, w->cbuf, bound, data, len,
					     w->level);

		if (ZSTD_isError(r))
			return writer_fail(w, -EIO, "zstd: %s", ZSTD_getErrorName(r));
		*outlen = r;
	} else {
		uLongf dl = bound;
		int r = compress2(w->cbuf, &dl, data, len, w->level);

		if (r != Z_OK)
			return writer_fail(w, -EIO, "zlib: error %d", r);
		*outlen = dl;
	}
	/* Incompressible payloads are stored as they are. */
	if (*outlen >= len) {
		*outlen = len;
		return TRACE_CODEC_NONE;
	}
	*out = w->cbuf;
	return w->codec;
}

/* One chunk whose payload is stored as plen bytes of codec, len once
 * decoded. */
static int ring_next(struct trace_writer *w, uint64_t time);

/* A chunk into the head's room of a ring (trace_writer_to_head): written
 * where the head's chunks end, as a head chunk (CRC from 0), so a reader
 * takes it with them. One that does not fit is left out. */
static int head_chunk(struct trace_writer *w, enum trace_chunk_type type, uint32_t stream, int codec,
		      const void *payload, size_t plen, size_t len, const uint32_t *pcrc)
{
	unsigned char h[TRACE_CHUNK_HEADER_SIZE];
	uint64_t offset = w->offset;
	int r;

	if (type != TRACE_CHUNK_META)
		return -EINVAL;
	if (w->head_at + sizeof(h) + plen > w->ring_start)
		return -ENOSPC;
	put32(h, TRACE_CHUNK_MAGIC);
	put16(h + 4, type);
	put16(h + 6, codec);
	put32(h + 8, stream);
	put32(h + 12, plen);
	put32(h + 16, len);
	put64(h + 24, 0);
	put32(h + 20, pcrc ? trace_chunk_crc_known(0, h, *pcrc, plen) : trace_chunk_crc(0, h, payload, plen));
	w->offset = w->head_at;
	r = writer_out(w, h, sizeof(h), payload, plen);
	w->offset = offset;
	if (r)
		return w->err;
	w->head_at += sizeof(h) + plen;
	w->nr_chunks++;
	return 0;
}

static int writer_chunk_encoded(struct trace_writer *w, enum trace_chunk_type type, uint32_t stream,
				uint64_t time, int codec, const void *payload, size_t plen, size_t len,
				const uint32_t *pcrc)
{
	unsigned char h[TRACE_CHUNK_HEADER_SIZE];
	uint64_t at;

	if (w->err)
		return w->err;
	if (len > TRACE_CHUNK_MAX || plen > TRACE_CHUNK_MAX)
		return writer_fail(w, -EFBIG, "chunk of %zu bytes is over the %u byte limit", len > plen ? len : plen,
				   TRACE_CHUNK_MAX);
	if (w->to_head)
		return head_chunk(w, type, stream, codec, payload, plen, len, pcrc);
	if (w->ring_start && type != TRACE_CHUNK_SEGMENT && w->seg_used + TRACE_CHUNK_HEADER_SIZE + plen > w->seg_size) {
		if (w->in_carry)
			return writer_fail(w, -ENOSPC,
					   "the ring's segments of %llu KiB cannot hold the state each one restates: give a larger ring",
					   (unsigned long long)(w->seg_size >> 10));
		/* The carry compresses into cbuf too: keep this chunk's payload
		 * out of its way. */
		unsigned char *held = payload == w->cbuf ? w->cbuf : NULL;
		size_t held_alloc = w->cbuf_alloc;

		if (held) {
			w->cbuf = NULL;
			w->cbuf_alloc = 0;
		}
		ring_next(w, time);
		if (held) {
			free(w->cbuf);
			w->cbuf = held;
			w->cbuf_alloc = held_alloc;
		}
		if (w->err)
			return w->err;
		if (w->seg_used + TRACE_CHUNK_HEADER_SIZE + plen > w->seg_size)
			return writer_fail(w, -ENOSPC,
					   "a chunk of %zu bytes does not fit in the ring's segments of %llu KiB: give a larger ring",
					   plen, (unsigned long long)(w->seg_size >> 10));
	}
	/* A record chunk bigger than the reserve could meet a full disk in
	 * the middle of its write, leaving a torn chunk and no room: its
	 * room and the reserve after it are taken first, and when they
	 * cannot be, the writer is full and the chunk is not written (its
	 * records count as not written). */
	if (type == TRACE_CHUNK_DATA && w->fd >= 0 && w->reserve && !w->full && !w->ring_start &&
	    writer_hold(w, w->offset + sizeof(h) + plen + w->reserve) && (errno == ENOSPC || errno == EDQUOT)) {
		__atomic_store_n(&w->full, 1, __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	at = w->offset;
	put32(h, TRACE_CHUNK_MAGIC);
	put16(h + 4, type);
	put16(h + 6, codec);
	put32(h + 8, stream);
	put32(h + 12, plen);
	put32(h + 16, len);
	put64(h + 24, time);
	put32(h + 20, pcrc ? trace_chunk_crc_known(type == TRACE_CHUNK_SEGMENT ? 0 : w->crc_seed, h, *pcrc, plen)
			   : trace_chunk_crc(type == TRACE_CHUNK_SEGMENT ? 0 : w->crc_seed, h, payload, plen));
	if (writer_out(w, h, sizeof(h), payload, plen))
		return w->err;
	w->nr_chunks++;
	if (type == TRACE_CHUNK_DATA)
		w->data_stored += sizeof(h) + plen;
	if (w->ring_start) {
		w->seg_used += sizeof(h) + plen;
		w->ring_bytes += sizeof(h) + plen;
	}
	/* A ring keeps no index: the chunks it would point at are overwritten. */
	if (type == TRACE_CHUNK_INDEX || type == TRACE_CHUNK_TRAILER || w->ring_start)
		return 0;
	if (w->nr_index == w->index_alloc) {
		size_t n = w->index_alloc ? w->index_alloc * 2 : 64;
		struct trace_index_entry *p = realloc(w->index, n * sizeof(*p));

		if (!p)
			return writer_fail(w, -ENOMEM, "out of memory");
		w->index = p;
		w->index_alloc = n;
	}
	w->index[w->nr_index++] = (struct trace_index_entry){ at, type, codec, stream, time };
	return 0;
}

static int writer_chunk(struct trace_writer *w, enum trace_chunk_type type, uint32_t stream,
			uint64_t time, const void *data, size_t len, int compress)
{
	const void *payload = data;
	size_t plen = len;
	int codec = TRACE_CODEC_NONE;

	if (w->err)
		return w->err;
	if (len > TRACE_CHUNK_MAX)
		return writer_fail(w, -EFBIG, "chunk of %zu bytes is over the %u byte limit", len,
				   TRACE_CHUNK_MAX);
	if (compress) {
		codec = writer_compress(w, data, len, &payload, &plen);
		if (codec < 0)
			return codec;
	}
	return writer_chunk_encoded(w, type, stream, time, codec, payload, plen, len, NULL);
}

static int writer_flush_index(struct trace_writer *w)
{
	unsigned char *buf;
	uint64_t at = w->offset;

	if (!w->nr_index || w->err || w->ring_start)
		return w->err;
	buf = malloc(w->nr_index * INDEX_ENTRY_SIZE);
	if (!buf)
		return writer_fail(w, -ENOMEM, "out of memory");
	for (size_t i = 0; i < w->nr_index; i++) {
		unsigned char *p = buf + i * INDEX_ENTRY_SIZE;

		put64(p, w->index[i].offset);
		put16(p + 8, w->index[i].type);
		put16(p + 10, w->index[i].codec);
		put32(p + 12, w->index[i].stream);
		put64(p + 16, w->index[i].time);
	}
	writer_chunk(w, TRACE_CHUNK_INDEX, 0, 0, buf, w->nr_index * INDEX_ENTRY_SIZE, 0);
	free(buf);
	if (!w->err) {
		w->last_index_offset = at;
		w->nr_index = 0;
	}
	return w->err;
}

/* After a chunk was written: the trailer's counts, and the index when
 * it is due. */
static int writer_added(struct trace_writer *w, enum trace_chunk_type type, uint64_t time, uint64_t nr)
{
	if (type == TRACE_CHUNK_DATA) {
		w->nr_records += nr;
		if (time && (!w->first_time || time < w->first_time))
			w->first_time = time;
		if (time > w->last_time)
			w->last_time = time;
	}
	if (w->nr_index >= INDEX_EVERY)
		writer_flush_index(w);
	return w->err;
}

int trace_writer_add(struct trace_writer *w, enum trace_chunk_type type, uint32_t stream,
		     uint64_t time, const void *data, size_t len, uint64_t nr)
{
	int compress = type == TRACE_CHUNK_META || type == TRACE_CHUNK_DATA;

	if (writer_chunk(w, type, stream, time, data, len, compress))
		return w->err;
	return writer_added(w, type, time, nr);
}

int trace_writer_room(struct trace_writer *w, uint64_t bytes)
{
	if (w->err)
		return w->err;
	if (w->fd < 0 || !w->reserve || w->full || w->ring_start)
		return 0;
	if (writer_hold(w, w->offset + bytes + w->reserve) && (errno == ENOSPC || errno == EDQUOT))
		return -ENOSPC;
	return 0;
}

void trace_writer_reserve(struct trace_writer *w, size_t bytes)
{
	w->reserve = bytes;
	if (w->fd >= 0 && bytes && !w->full)
		writer_keep_reserve(w);
}

int trace_writer_full(const struct trace_writer *w)
{
	return __atomic_load_n(&w->full, __ATOMIC_RELAXED) || __atomic_load_n(&w->err, __ATOMIC_RELAXED);
}

int trace_writer_encode(struct trace_writer *w, const void *data, size_t len, const void **out, size_t *outlen)
{
	if (w->err)
		return w->err;
	if (len > TRACE_CHUNK_MAX)
		return writer_fail(w, -EFBIG, "chunk of %zu bytes is over the %u byte limit", len,
				   TRACE_CHUNK_MAX);
	return writer_compress(w, data, len, out, outlen);
}

int trace_writer_add_encoded(struct trace_writer *w, enum trace_chunk_type type, uint32_t stream,
			     enum trace_codec codec, const void *payload, size_t plen, size_t len, uint32_t crc)
{
	if (type != TRACE_CHUNK_META || codec > TRACE_CODEC_ZLIB || (codec == TRACE_CODEC_NONE && plen != len))
		return writer_fail(w, -EINVAL, "an encoded chunk must be META with a known codec");
	if (writer_chunk_encoded(w, type, stream, 0, codec, payload, plen, len, &crc))
		return w->err;
	return writer_added(w, type, 0, 0);
}

int trace_writer_add_copy(struct trace_writer *w, enum trace_chunk_type type, uint32_t stream, uint64_t time,
			  enum trace_codec codec, const void *payload, size_t plen, size_t len, uint64_t nr)
{
	if ((type != TRACE_CHUNK_META && type != TRACE_CHUNK_DATA && type != TRACE_CHUNK_LOSS) || codec > TRACE_CODEC_ZLIB ||
	    (codec == TRACE_CODEC_NONE && plen != len))
		return writer_fail(w, -EINVAL, "only META, DATA and LOSS chunks of a known codec are copied");
	if (writer_chunk_encoded(w, type, stream, time, codec, payload, plen, len, NULL))
		return w->err;
	return writer_added(w, type, time, nr);
}

/* The next segment, oldest first once all are used: its SEGMENT chunk,
 * then what the carry callback restates. What the segment held before
 * now fails its CRCs against the new sequence number. */
static int ring_next(struct trace_writer *w, uint64_t time)
{
	unsigned char p[TRACE_SEGMENT_SIZE];

	w->seg = w->seq ? (w->seg + 1) % w->nr_segs : 0;
	w->seq++;
	w->offset = w->ring_start + (uint64_t)w->seg * w->seg_size;
	w->seg_used = 0;
	put64(p, w->seq);
	put64(p + 8, time ? time : w->last_time);
	put64(p + 16, w->ring_bytes);
	put64(p + 24, w->nr_records);
	if (writer_chunk_encoded(w, TRACE_CHUNK_SEGMENT, 0, 0, TRACE_CODEC_NONE, p, sizeof(p), sizeof(p), NULL))
		return w->err;
	w->crc_seed = trace_segment_seed(w->seq);
	if (w->carry) {
		int r;

		w->in_carry = 1;
		r = w->carry(w->carry_arg, w);
		w->in_carry = 0;
		if (r && !w->err)
			writer_fail(w, r, "restating the state for a new segment failed: %s", strerror(-r));
	}
	return w->err;
}

int trace_writer_to_head(struct trace_writer *w, int on)
{
	if (!w->ring_start)
		return -EINVAL;
	w->to_head = on;
	return 0;
}

int trace_writer_ring_begin(struct trace_writer *w, uint64_t head_room, trace_carry_fn carry, void *arg)
{
	unsigned char h[TRACE_FILE_HEADER_SIZE];
	uint64_t start = (w->offset + head_room + 4095) & ~4095ull, space, seg, nr;

	if (w->err)
		return w->err;
	if (!w->ring_size || w->fd < 0 || w->ring_start)
		return writer_fail(w, -EINVAL, "not a ring writer");
	space = w->ring_size > start ? w->ring_size - start : 0;
	/* As many segments as fit, up to TRACE_RING_SEGMENTS, sharing all
	 * the room. */
	nr = space / (w->ring_segment ? w->ring_segment : TRACE_RING_SEGMENT_MIN);
	if (nr > TRACE_RING_SEGMENTS && !w->ring_segment)
		nr = TRACE_RING_SEGMENTS;
	if (nr < 2 || (w->ring_segment && (w->ring_segment < 4096 || w->ring_segment % 4096)))
		return writer_fail(w, -EINVAL,
				   "a ring of %llu KiB is too small: its head takes %llu KiB and it needs two segments of "
				   "at least %u KiB; give at least %llu KiB",
				   (unsigned long long)(w->ring_size >> 10), (unsigned long long)(start >> 10),
				   TRACE_RING_SEGMENT_MIN >> 10,
				   (unsigned long long)((start + 2ull * TRACE_RING_SEGMENT_MIN + 1023) >> 10));
	seg = (w->ring_segment ? w->ring_segment : space / nr) & ~4095ull;
	/* The header keeps a segment's size in 32 bits. */
	if (seg > 0xfffff000ull)
		return writer_fail(w, -EINVAL, "a ring of %llu KiB is too large: at most %u segments of %llu KiB",
				   (unsigned long long)(w->ring_size >> 10), TRACE_RING_SEGMENTS, 0xfffff000ull >> 10);
	w->nr_segs = (uint32_t)nr;
	w->seg_size = seg;
	/* All the disk the ring will take, now: a full disk shows at the
	 * start, not at 3 a.m. */
	if (fallocate(w->fd, 0, 0, (off_t)(start + w->nr_segs * seg)) && errno != EOPNOTSUPP && errno != EINTR)
		return writer_fail(w, -errno, "cannot allocate the ring's %llu KiB: %s",
				   (unsigned long long)((start + w->nr_segs * seg) >> 10), strerror(errno));
	w->ring_start = start;
	w->head_at = w->offset;
	writer_header(w, h, w->file_flags, w->created_ns);
	if (pwrite(w->fd, h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		w->ring_start = 0;
		return writer_fail(w, -errno, "write failed: %s", strerror(errno));
	}
	w->carry = carry;
	w->carry_arg = arg;
	return ring_next(w, 0);
}

int trace_writer_add_state(struct trace_writer *w, uint32_t kind, const void *data, size_t len)
{
	return writer_chunk(w, TRACE_CHUNK_STATE, kind, 0, data, len, 1);
}

int trace_writer_add_loss(struct trace_writer *w, const struct trace_loss *l, size_t n)
{
	unsigned char *buf;

	if (w->err || !n)
		return w->err;
	buf = calloc(n, LOSS_ENTRY_SIZE);
	if (!buf)
		return writer_fail(w, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		put32(buf + i * LOSS_ENTRY_SIZE, l[i].cpu);
		put32(buf + i * LOSS_ENTRY_SIZE + 4, l[i].ring);
		put64(buf + i * LOSS_ENTRY_SIZE + 8, l[i].lost);
		if (l[i].ring == TRACE_LOSS_EVENTS)
			w->lost += l[i].lost;
	}
	writer_chunk(w, TRACE_CHUNK_LOSS, 0, 0, buf, n * LOSS_ENTRY_SIZE, 0);
	free(buf);
	return w->err;
}

/* The blocks held past the end, given back once nothing more is written:
 * a truncation to the size the file has frees them (ext4, tmpfs). Only
 * where the file ends where the trace does; a failure costs the disk those
 * blocks and nothing else. */
static void writer_release(struct trace_writer *w)
{
	struct stat st;

	if (w->fd < 0 || w->held <= w->offset || w->ring_start || fstat(w->fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != w->offset)
		return;
	if (!ftruncate(w->fd, st.st_size))
		w->held = w->offset;
}

int trace_writer_finish(struct trace_writer *w)
{
	unsigned char t[TRAILER_SIZE];

	if (writer_flush_index(w))
		return w->err;
	put64(t, w->last_index_offset);
	put64(t + 8, w->nr_chunks);
	put64(t + 16, w->nr_records);
	put64(t + 24, w->lost);
	put64(t + 32, w->first_time);
	put64(t + 40, w->last_time);
	if (writer_chunk(w, TRACE_CHUNK_TRAILER, 0, w->last_time, t, sizeof(t), 0))
		return w->err;
	writer_release(w);
	if (w->fd >= 0 && fdatasync(w->fd) && errno != EINVAL && errno != EROFS)
		return writer_fail(w, -errno, "sync failed: %s", strerror(errno));
	return 0;
}

const char *trace_writer_strerror(const struct trace_writer *w)
{
	return w->err ? w->errmsg : "no error";
}

unsigned char *trace_writer_steal_mem(struct trace_writer *w, size_t *len)
{
	unsigned char *p = w->mem;

	*len = w->mem_len;
	w->mem = NULL;
	w->mem_len = w->mem_alloc = 0;
	return p;
}

void trace_writer_release(struct trace_writer *w)
{
	ZSTD_freeCCtx(w->zctx);
	free(w->cbuf);
	free(w->index);
	free(w->mem);
	w->zctx = NULL;
	w->cbuf = NULL;
	w->index = NULL;
	w->mem = NULL;
}

