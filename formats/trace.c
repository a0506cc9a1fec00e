/*
 * formats/trace.c: writer and reader of the memsight trace file.
 *
 * The writer appends self-describing chunks; each one is complete on disk
 * after a single write, so a recorder killed at any moment leaves a file
 * whose every earlier chunk reads back. The first error sticks: later calls
 * do nothing and trace_writer_finish() reports it.
 *
 * The reader maps the file, walks the chunk headers checking magic and
 * bounds, then checks every CRC (on two threads for a large file) and keeps
 * the list of good chunks; the first bad one ends the list and leaves a
 * reason in r->stop. Record visits merge the DATA
 * streams (one per CPU ring) by timestamp, holding one decompressed chunk per
 * stream at a time, so memory stays bounded by the number of CPUs, not by
 * the size of the file.
 */
#include "trace.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "stackdump.h"

#define INDEX_EVERY 1024
/* How much of the file the scan reads before dropping it from memory. */
#define DROP_STEP (2u << 20)
/* Below this many payload bytes one thread checks the CRCs alone. */
#define CRC_SPLIT_MIN (8u << 20)
#define INDEX_ENTRY_SIZE 24
#define TRAILER_SIZE 48
#define LOSS_ENTRY_SIZE 16

/* perf ABI values used to find a record's time (see FORMAT.md). */
#define PERF_RECORD_SAMPLE_TYPE 9
#define PERF_RECORD_USER_START 64

static void put16(unsigned char *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

static uint16_t get16(const unsigned char *p)
{
	return p[0] | p[1] << 8;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint32_t chunk_crc(const unsigned char *hdr, const unsigned char *payload, size_t len)
{
	uLong c = crc32(0, NULL, 0);

	c = crc32(c, hdr, 20);
	c = crc32(c, hdr + 24, 8);
	/* zlib's crc32 takes a uInt length; payloads are capped well below it. */
	c = crc32(c, payload, (uInt)len);
	return (uint32_t)c;
}

const char *trace_chunk_type_name(unsigned type)
{
	switch (type) {
	case TRACE_CHUNK_META: return "META";
	case TRACE_CHUNK_DATA: return "DATA";
	case TRACE_CHUNK_LOSS: return "LOSS";
	case TRACE_CHUNK_INDEX: return "INDEX";
	case TRACE_CHUNK_TRAILER: return "TRAILER";
	}
	return "unknown";
}

const char *trace_codec_name(unsigned codec)
{
	switch (codec) {
	case TRACE_CODEC_NONE: return "none";
	case TRACE_CODEC_ZSTD: return "zstd";
	case TRACE_CODEC_ZLIB: return "zlib";
	}
	return "unknown";
}

const char *trace_meta_kind_name(unsigned kind)
{
	switch (kind) {
	case TRACE_META_HOST: return "host";
	case TRACE_META_HEADER_PAGE: return "header_page";
	case TRACE_META_EVENT: return "event";
	case TRACE_META_PROCESS: return "process";
	case TRACE_META_KSYMS: return "ksyms";
	case TRACE_META_BUILDIDS: return "buildids";
	case TRACE_META_STATS: return "stats";
	case TRACE_META_OBJECT: return "object";
	case TRACE_META_OOM: return "oom";
	case TRACE_META_REACH: return "reach";
	}
	return "unknown";
}

/* ---- writer ---------------------------------------------------------- */

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

/* Blocks held past the end of the file, its size unchanged: the chunks
 * that close a trace still find room once the disk fills. When they
 * cannot be had the writer is full; a file system without fallocate gets
 * no reserve. */
static void writer_keep_reserve(struct trace_writer *w)
{
	if (!fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->offset, (off_t)w->reserve))
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

		while (left) {
			ssize_t r = writev(w->fd, iov + i, n - i);

			if (r < 0) {
				if (errno == EINTR)
					continue;
				return writer_fail(w, -errno, "write failed: %s", strerror(errno));
			}
			left -= r;
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
	if (w->fd >= 0 && w->reserve && !w->full)
		writer_keep_reserve(w);
	return 0;
}

static int writer_init(struct trace_writer *w, int fd, const struct trace_writer_opts *o)
{
	unsigned char h[TRACE_FILE_HEADER_SIZE] = { 0 };
	struct timespec ts;
	uint64_t created = o ? o->created_ns : 0;

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
	memcpy(h, TRACE_MAGIC, 8);
	put32(h + 8, TRACE_VERSION);
	put32(h + 12, TRACE_FILE_HEADER_SIZE);
	put32(h + 16, TRACE_CHUNK_HEADER_SIZE);
	put32(h + 20, o ? o->file_flags : 0);
	put64(h + 24, created);
	put32(h + 60, (uint32_t)crc32(crc32(0, NULL, 0), h, 60));
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
static int writer_chunk_encoded(struct trace_writer *w, enum trace_chunk_type type, uint32_t stream,
				uint64_t time, int codec, const void *payload, size_t plen, size_t len)
{
	unsigned char h[TRACE_CHUNK_HEADER_SIZE];
	uint64_t at = w->offset;

	if (w->err)
		return w->err;
	if (len > TRACE_CHUNK_MAX || plen > TRACE_CHUNK_MAX)
		return writer_fail(w, -EFBIG, "chunk of %zu bytes is over the %u byte limit", len > plen ? len : plen,
				   TRACE_CHUNK_MAX);
	put32(h, TRACE_CHUNK_MAGIC);
	put16(h + 4, type);
	put16(h + 6, codec);
	put32(h + 8, stream);
	put32(h + 12, plen);
	put32(h + 16, len);
	put64(h + 24, time);
	put32(h + 20, chunk_crc(h, payload, plen));
	if (writer_out(w, h, sizeof(h), payload, plen))
		return w->err;
	w->nr_chunks++;
	if (type == TRACE_CHUNK_INDEX || type == TRACE_CHUNK_TRAILER)
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
	return writer_chunk_encoded(w, type, stream, time, codec, payload, plen, len);
}

static int writer_flush_index(struct trace_writer *w)
{
	unsigned char *buf;
	uint64_t at = w->offset;

	if (!w->nr_index || w->err)
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

int trace_writer_add(struct trace_writer *w, enum trace_chunk_type type, uint32_t stream,
		     uint64_t time, const void *data, size_t len, uint64_t nr)
{
	int compress = type == TRACE_CHUNK_META || type == TRACE_CHUNK_DATA;

	if (writer_chunk(w, type, stream, time, data, len, compress))
		return w->err;
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
			     enum trace_codec codec, const void *payload, size_t plen, size_t len)
{
	if (type != TRACE_CHUNK_META || codec > TRACE_CODEC_ZLIB || (codec == TRACE_CODEC_NONE && plen != len))
		return writer_fail(w, -EINVAL, "an encoded chunk must be META with a known codec");
	writer_chunk_encoded(w, type, stream, 0, codec, payload, plen, len);
	if (w->nr_index >= INDEX_EVERY)
		writer_flush_index(w);
	return w->err;
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
		put64(buf + i * LOSS_ENTRY_SIZE + 8, l[i].lost);
		w->lost += l[i].lost;
	}
	writer_chunk(w, TRACE_CHUNK_LOSS, 0, 0, buf, n * LOSS_ENTRY_SIZE, 0);
	free(buf);
	return w->err;
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

/* ---- reader ---------------------------------------------------------- */

static int reader_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static void reader_stop(struct trace_reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->stop, sizeof(r->stop), fmt, ap);
	va_end(ap);
}

static int reader_push(struct trace_reader *r, const struct trace_chunk *c, size_t *alloc)
{
	if (r->nr_chunks == *alloc) {
		size_t n = *alloc ? *alloc * 2 : 256;
		struct trace_chunk *p = realloc(r->chunks, n * sizeof(*p));

		if (!p)
			return -1;
		r->chunks = p;
		*alloc = n;
	}
	r->chunks[r->nr_chunks++] = *c;
	return 0;
}

/* Drop the mapping's pages in [off, off + len) from this process (not
 * from the page cache): a read-only file mapping refaults them if they are
 * needed again, so the analyzer's memory does not grow with the file. */
static void reader_drop(const struct trace_reader *r, uint64_t off, uint64_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), start = (off + page - 1) & ~(page - 1);
	uint64_t end = (off + len) & ~(page - 1);

	if (r->mapped && end > start)
		madvise((void *)(r->base + start), end - start, MADV_DONTNEED);
}

/* Chunk i's bytes, once read, out of this process's memory. */
static void chunk_drop(const struct trace_reader *r, size_t i)
{
	reader_drop(r, r->chunks[i].offset, TRACE_CHUNK_HEADER_SIZE + r->chunks[i].payload_len);
}

/* The CRCs of chunks [from, to), one flag per chunk in bad[]. */
struct crc_job {
	const struct trace_reader *r;
	size_t from, to;
	unsigned char *bad;
};

static void *crc_run(void *arg)
{
	struct crc_job *j = arg;
	uint64_t dropped = j->from < j->to ? j->r->chunks[j->from].offset : 0;

	for (size_t i = j->from; i < j->to; i++) {
		const struct trace_chunk *c = &j->r->chunks[i];
		const unsigned char *h = j->r->base + c->offset;

		j->bad[i] = chunk_crc(h, h + TRACE_CHUNK_HEADER_SIZE, c->payload_len) != c->crc;
		if (c->offset - dropped >= DROP_STEP) {
			reader_drop(j->r, dropped, c->offset - dropped);
			dropped = c->offset;
		}
	}
	if (j->from < j->to) {
		const struct trace_chunk *c = &j->r->chunks[j->to - 1];

		reader_drop(j->r, dropped, c->offset + TRACE_CHUNK_HEADER_SIZE + c->payload_len - dropped);
	}
	return NULL;
}

/* Check every chunk's CRC; on a file of some size the second half goes
 * to another thread, which halves the time the analyzer waits before its
 * first record (the CRC pass is a fifth of a whole analysis). Fills bad[]. */
static void reader_check_crcs(const struct trace_reader *r, unsigned char *bad)
{
	struct crc_job lo = { r, 0, r->nr_chunks, bad }, hi = lo;
	uint64_t total = 0, half = 0;
	pthread_t t;

	for (size_t i = 0; i < r->nr_chunks; i++)
		total += r->chunks[i].payload_len;
	if (total < CRC_SPLIT_MIN) {
		crc_run(&lo);
		return;
	}
	for (lo.to = 0; lo.to < r->nr_chunks && half < total / 2; lo.to++)
		half += r->chunks[lo.to].payload_len;
	hi.from = lo.to;
	if (pthread_create(&t, NULL, crc_run, &hi)) {
		lo.to = r->nr_chunks;
		crc_run(&lo);
		return;
	}
	crc_run(&lo);
	pthread_join(t, NULL);
}

static int reader_scan(struct trace_reader *r, char *err, size_t errlen)
{
	const unsigned char *b = r->base;
	uint64_t off, hsize, csize, dropped = 0;
	size_t alloc = 0, walked;
	unsigned char *bad;

	if (r->size < 16 || memcmp(b, TRACE_MAGIC, 8))
		return reader_error(err, errlen, "not a memsight trace (no MEMSIGHT magic at the start)");
	r->version = get32(b + 8);
	if (r->version > TRACE_VERSION)
		return reader_error(err, errlen,
				    "trace format version %u is newer than this memsight reads (%u); "
				    "use a newer memsight",
				    r->version, TRACE_VERSION);
	if (r->version == 0)
		return reader_error(err, errlen, "trace format version 0 is not valid");
	if (r->size < TRACE_FILE_HEADER_SIZE)
		return reader_error(err, errlen, "trace is cut short inside its %d-byte header",
				    TRACE_FILE_HEADER_SIZE);
	hsize = get32(b + 12);
	csize = get32(b + 16);
	if (hsize < TRACE_FILE_HEADER_SIZE || hsize > r->size || csize != TRACE_CHUNK_HEADER_SIZE)
		return reader_error(err, errlen, "trace header has bad sizes (header %llu, chunk header %llu)",
				    (unsigned long long)hsize, (unsigned long long)csize);
	if (get32(b + 60) != (uint32_t)crc32(crc32(0, NULL, 0), b, 60))
		return reader_error(err, errlen, "trace header is corrupt (crc mismatch)");
	r->file_flags = get32(b + 20);
	r->created_ns = get64(b + 24);

	/* First the headers alone, for where each chunk is: a header whose
	 * magic or lengths are wrong ends the walk, since nothing after it can
	 * be found. */
	for (off = hsize;;) {
		struct trace_chunk c;
		const unsigned char *h = b + off;

		if (off == r->size) {
			reader_stop(r, "ends at byte %llu without a trailer: the recording did not finish "
				       "(recorder killed or disk full?)",
				    (unsigned long long)off);
			break;
		}
		if (r->size - off < TRACE_CHUNK_HEADER_SIZE) {
			reader_stop(r, "cut short at byte %llu: %llu bytes of a chunk header",
				    (unsigned long long)off, (unsigned long long)(r->size - off));
			break;
		}
		if (get32(h) != TRACE_CHUNK_MAGIC) {
			reader_stop(r, "chunk %zu at byte %llu is corrupt (bad chunk magic)", r->nr_chunks,
				    (unsigned long long)off);
			break;
		}
		c.offset = off;
		c.type = get16(h + 4);
		c.codec = get16(h + 6);
		c.stream = get32(h + 8);
		c.payload_len = get32(h + 12);
		c.raw_len = get32(h + 16);
		c.crc = get32(h + 20);
		c.time = get64(h + 24);
		if (c.payload_len > TRACE_CHUNK_MAX || c.raw_len > TRACE_CHUNK_MAX) {
			reader_stop(r, "chunk %zu at byte %llu is corrupt (length %u over the limit)",
				    r->nr_chunks, (unsigned long long)off,
				    c.payload_len > c.raw_len ? c.payload_len : c.raw_len);
			break;
		}
		if (r->size - off - TRACE_CHUNK_HEADER_SIZE < c.payload_len) {
			reader_stop(r, "cut short at byte %llu: chunk %zu needs %u payload bytes, %llu remain",
				    (unsigned long long)off, r->nr_chunks, c.payload_len,
				    (unsigned long long)(r->size - off - TRACE_CHUNK_HEADER_SIZE));
			break;
		}
		if (reader_push(r, &c, &alloc))
			return reader_error(err, errlen, "out of memory");
		off += TRACE_CHUNK_HEADER_SIZE + c.payload_len;
		if (c.type == TRACE_CHUNK_TRAILER)
			break;
		/* Reading a header maps the page cache around it, a large folio
		 * at a time: drop as we go, or the walk alone maps most of the
		 * file. */
		if (off - dropped >= DROP_STEP) {
			reader_drop(r, dropped, off - dropped);
			dropped = off;
		}
	}

	/* Then the payloads, in the order a single pass would have met them:
	 * the first chunk that fails its CRC, has an unknown codec or is a
	 * short trailer ends the good part of the file, and its reason
	 * replaces the walk's, which lies further on. */
	reader_drop(r, dropped, off - dropped);
	walked = r->nr_chunks;
	bad = calloc(walked ? walked : 1, 1);
	if (!bad)
		return reader_error(err, errlen, "out of memory");
	reader_check_crcs(r, bad);
	r->nr_chunks = 0;
	r->valid_end = hsize;
	for (size_t i = 0; i < walked; i++) {
		const struct trace_chunk *c = &r->chunks[i];
		const unsigned char *t = b + c->offset + TRACE_CHUNK_HEADER_SIZE;

		if (bad[i]) {
			reader_stop(r, "chunk %zu at byte %llu is corrupt (crc mismatch)", i,
				    (unsigned long long)c->offset);
			break;
		}
		if (c->codec > TRACE_CODEC_ZLIB) {
			reader_stop(r, "chunk %zu at byte %llu uses unknown codec %u", i,
				    (unsigned long long)c->offset, c->codec);
			break;
		}
		r->nr_chunks++;
		r->valid_end = c->offset + TRACE_CHUNK_HEADER_SIZE + c->payload_len;
		if (c->type != TRACE_CHUNK_TRAILER)
			continue;
		if (c->payload_len < TRAILER_SIZE) {
			reader_stop(r, "trailer at byte %llu is too short", (unsigned long long)c->offset);
			break;
		}
		r->trailer.index_offset = get64(t);
		r->trailer.nr_chunks = get64(t + 8);
		r->trailer.nr_records = get64(t + 16);
		r->trailer.lost = get64(t + 24);
		r->trailer.first_time = get64(t + 32);
		r->trailer.last_time = get64(t + 40);
		r->complete = 1;
		if (r->valid_end != r->size)
			reader_stop(r, "%llu bytes after the trailer at byte %llu were ignored",
				    (unsigned long long)(r->size - r->valid_end), (unsigned long long)c->offset);
	}
	free(bad);
	return 0;
}

int trace_reader_open_mem(struct trace_reader *r, const void *data, size_t len, char *err,
			  size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->base = data;
	r->size = len;
	if (reader_scan(r, err, errlen)) {
		trace_reader_release(r);
		return -1;
	}
	return 0;
}

int trace_reader_open(struct trace_reader *r, const char *path, char *err, size_t errlen)
{
	struct stat st;
	void *map;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return reader_error(err, errlen, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		close(fd);
		return reader_error(err, errlen, "cannot stat '%s': %s", path, strerror(errno));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return reader_error(err, errlen, "'%s' is not a regular file", path);
	}
	if (st.st_size == 0) {
		close(fd);
		return reader_error(err, errlen, "'%s' is empty, not a memsight trace", path);
	}
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return reader_error(err, errlen, "cannot map '%s': %s", path, strerror(errno));
	r->base = map;
	r->size = st.st_size;
	r->mapped = 1;
	if (reader_scan(r, err, errlen)) {
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "%s", err);
		snprintf(err, errlen, "'%s': %s", path, tmp);
		trace_reader_release(r);
		return -1;
	}
	return 0;
}

void trace_reader_release(struct trace_reader *r)
{
	if (r->mapped && r->base)
		munmap((void *)r->base, r->size);
	free(r->chunks);
	ZSTD_freeDCtx(r->dctx);
	memset(r, 0, sizeof(*r));
}

/* Decompress chunk i with the zstd context *dctx (made on first use): the
 * reader's own for the caller's thread, another for the read-ahead thread. */
static long chunk_decode(const struct trace_reader *r, void **dctx, size_t i, unsigned char **buf,
			 size_t *alloc, char *err, size_t errlen)
{
	const struct trace_chunk *c = &r->chunks[i];
	const unsigned char *src = r->base + c->offset + TRACE_CHUNK_HEADER_SIZE;

	if (c->raw_len > *alloc || !*buf) {
		size_t n = c->raw_len ? c->raw_len : 1;
		unsigned char *p = realloc(*buf, n);

		if (!p)
			return reader_error(err, errlen, "out of memory");
		*buf = p;
		*alloc = n;
	}
	switch (c->codec) {
	case TRACE_CODEC_NONE:
		if (c->payload_len != c->raw_len)
			return reader_error(err, errlen, "chunk %zu: stored length %u differs from %u", i,
					    c->payload_len, c->raw_len);
		memcpy(*buf, src, c->raw_len);
		return c->raw_len;
	case TRACE_CODEC_ZSTD: {
		size_t n;

		if (!*dctx && !(*dctx = ZSTD_createDCtx()))
			return reader_error(err, errlen, "out of memory");
		n = ZSTD_decompressDCtx(*dctx, *buf, c->raw_len, src, c->payload_len);
		if (ZSTD_isError(n) || n != c->raw_len)
			return reader_error(err, errlen, "chunk %zu at byte %llu: zstd frame does not decode: %s",
					    i, (unsigned long long)c->offset,
					    ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
		return n;
	}
	case TRACE_CODEC_ZLIB: {
		uLongf n = c->raw_len;
		int z = uncompress(*buf, &n, src, c->payload_len);

		if (z != Z_OK || n != c->raw_len)
			return reader_error(err, errlen, "chunk %zu at byte %llu: zlib data does not decode (%d)",
					    i, (unsigned long long)c->offset, z);
		return n;
	}
	}
	return reader_error(err, errlen, "chunk %zu: unknown codec %u", i, c->codec);
}

long trace_chunk_payload(struct trace_reader *r, size_t i, unsigned char **buf, size_t *alloc,
			 char *err, size_t errlen)
{
	return chunk_decode(r, &r->dctx, i, buf, alloc, err, errlen);
}

uint64_t trace_record_time(const void *rec, size_t len)
{
	const unsigned char *p = rec;
	uint32_t type;

	if (len < 8)
		return 0;
	type = get32(p);
	/* SAMPLE, packed or not: header, IDENTIFIER, IP, TID, then TIME. */
	if (type == PERF_RECORD_SAMPLE_TYPE || type == STACKDUMP_PACKED_SAMPLE)
		return len >= 40 ? get64(p + 32) : 0;
	if (type >= PERF_RECORD_USER_START)
		return 0;
	/* Other kernel records end with the sample_id trailer
	 * TID, TIME, CPU, IDENTIFIER: TIME sits 24 bytes before the end. */
	return len >= 8 + 32 ? get64(p + len - 24) : 0;
}

/*
 * Read-ahead: a second thread decompresses DATA chunks before the merge
 * asks for them, so decompression overlaps whatever the caller does with
 * the records (decoding, unwinding). It works through the chunks in the
 * order of their first timestamps, which is the order the merge needs them
 * in, into a few buffers. Whichever thread reaches a chunk first decodes
 * it: the merge never waits for a chunk the other thread has not started,
 * and the other thread never waits for anything but a free buffer.
 */
#define AHEAD_SLOTS 4
/* Fewer DATA chunks than this are not worth a thread. */
#define AHEAD_MIN_CHUNKS 8

enum { CH_IDLE, CH_DECODING, CH_READY, CH_TAKEN };

struct ahead_slot {
	size_t chunk;
	int used;
	unsigned char *buf;
	size_t alloc;
	long n;
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
};

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
		sl->n = chunk_decode(a->r, &a->dctx, ci, &sl->buf, &sl->alloc, sl->err, sizeof(sl->err));
		chunk_drop(a->r, ci);
		pthread_mutex_lock(&a->mu);
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
	for (int k = 0; k < AHEAD_SLOTS; k++)
		free(a->slots[k].buf);
	ZSTD_freeDCtx(a->dctx);
	free(a->state);
	free(a->order);
}

/* Chunk ci's payload into *buf: the read-ahead's copy when it has one (the
 * buffers are swapped, not copied), else decoded here. */
static long ahead_get(struct ahead *a, size_t ci, unsigned char **buf, size_t *alloc, char *err,
		      size_t errlen)
{
	struct trace_reader *r = a->r;
	long n;

	if (a->running) {
		pthread_mutex_lock(&a->mu);
		while (a->state[ci] == CH_DECODING)
			pthread_cond_wait(&a->cv, &a->mu);
		if (a->state[ci] == CH_READY) {
			n = reader_error(err, errlen, "chunk %zu: the read-ahead lost it", ci);
			for (int k = 0; k < AHEAD_SLOTS; k++) {
				struct ahead_slot *sl = &a->slots[k];
				unsigned char *b = *buf;
				size_t al = *alloc;

				if (!sl->used || sl->chunk != ci)
					continue;
				*buf = sl->buf;
				*alloc = sl->alloc;
				sl->buf = b;
				sl->alloc = al;
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
	n = chunk_decode(r, &r->dctx, ci, buf, alloc, err, errlen);
	chunk_drop(r, ci);
	return n;
}

/* One DATA stream being merged: its chunks and the decoded current one. */
struct stream {
	uint32_t id;
	size_t *chunks; /* indices into r->chunks */
	size_t nr, alloc, next;
	unsigned char *buf;
	size_t buf_alloc;
	struct rec_pos { uint64_t time; uint32_t off, len; } *pos;
	size_t nr_pos, pos_alloc, cur;
};

static int pos_cmp(const void *a, const void *b)
{
	const struct rec_pos *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Load the stream's next chunk; returns 1 when one is loaded, 0 at the end,
 * -1 on error. Records inside a chunk are put in time order: a ring can hold
 * a few records out of order when an event nests inside another's output. */
static int stream_load(struct ahead *a, struct stream *s, char *err, size_t errlen)
{
	struct trace_reader *r = a->r;

	while (s->next < s->nr) {
		size_t ci = s->chunks[s->next++];
		long n = ahead_get(a, ci, &s->buf, &s->buf_alloc, err, errlen);
		size_t off = 0;

		if (n < 0)
			return -1;
		s->nr_pos = s->cur = 0;
		while (off < (size_t)n) {
			uint32_t sz;

			/* The kernel's records are 8-byte multiples: the next
			 * header stays aligned for whoever reads it. */
			if ((size_t)n - off < 8 || (sz = get16(s->buf + off + 6)) < 8 || sz % 8 || sz > (size_t)n - off)
				return reader_error(err, errlen, "chunk %zu at byte %llu: perf record at %zu is malformed",
						    ci, (unsigned long long)r->chunks[ci].offset, off);
			if (s->nr_pos == s->pos_alloc) {
				size_t a = s->pos_alloc ? s->pos_alloc * 2 : 1024;
				struct rec_pos *p = realloc(s->pos, a * sizeof(*p));

				if (!p)
					return reader_error(err, errlen, "out of memory");
				s->pos = p;
				s->pos_alloc = a;
			}
			s->pos[s->nr_pos++] = (struct rec_pos){ trace_record_time(s->buf + off, sz), off, sz };
			off += sz;
		}
		if (s->nr_pos > 1)
			qsort(s->pos, s->nr_pos, sizeof(*s->pos), pos_cmp);
		if (s->nr_pos)
			return 1;
	}
	return 0;
}

static int stream_before(const struct stream *a, const struct stream *b)
{
	uint64_t ta = a->pos[a->cur].time, tb = b->pos[b->cur].time;

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

/* Streaming decoders, so a caller can skip the start of a payload and have
 * the rest land where it wants it, with no whole-payload buffer. */
static int read_into(z_stream *zs, ZSTD_DStream *ds, ZSTD_inBuffer *in, const struct trace_chunk *c,
		     unsigned char *dst, size_t len)
{
	if (c->codec == TRACE_CODEC_NONE) {
		if (in->pos + len > in->size)
			return -1;
		memcpy(dst, (const unsigned char *)in->src + in->pos, len);
		in->pos += len;
		return 0;
	}
	if (c->codec == TRACE_CODEC_ZSTD) {
		ZSTD_outBuffer out = { dst, len, 0 };

		while (out.pos < out.size) {
			size_t was_in = in->pos, was_out = out.pos, z = ZSTD_decompressStream(ds, &out, in);

			/* An error, the frame ending short, or no progress on a
			 * truncated one. */
			if (ZSTD_isError(z) || (!z && out.pos < out.size) || (in->pos == was_in && out.pos == was_out))
				return -1;
		}
		return 0;
	}
	zs->next_out = dst;
	zs->avail_out = len;
	while (zs->avail_out) {
		int z = inflate(zs, Z_NO_FLUSH);

		if (z != Z_OK && !(z == Z_STREAM_END && !zs->avail_out))
			return -1;
	}
	return 0;
}

static int dec_bad(const struct trace_reader *r, size_t i, char *err, size_t errlen)
{
	const struct trace_chunk *c = &r->chunks[i];

	return reader_error(err, errlen, "chunk %zu at byte %llu: %s data does not decode", i,
			    (unsigned long long)c->offset, trace_codec_name(c->codec));
}

/* One chunk's payload being decoded in order, from any thread. */
struct chunk_dec {
	const struct trace_chunk *c;
	ZSTD_inBuffer in;
	ZSTD_DStream *ds;
	z_stream zs;
};

static void dec_close(struct chunk_dec *d)
{
	ZSTD_freeDStream(d->ds);
	if (d->c->codec == TRACE_CODEC_ZLIB)
		inflateEnd(&d->zs);
}

/* Start decoding chunk i and go past its first skip bytes, where len more
 * must follow. Returns 0, or -1 with a reason in err. */
static int dec_open(const struct trace_reader *r, size_t i, uint64_t skip, size_t len, struct chunk_dec *d,
		    char *err, size_t errlen)
{
	const struct trace_chunk *c = &r->chunks[i];
	unsigned char scratch[4096];
	int bad = 0;

	memset(d, 0, sizeof(*d));
	d->c = c;
	d->in = (ZSTD_inBuffer){ r->base + c->offset + TRACE_CHUNK_HEADER_SIZE, c->payload_len, 0 };
	if (skip > c->raw_len || len > c->raw_len - skip)
		return reader_error(err, errlen, "chunk %zu: %zu bytes at %llu are past its %u", i, len,
				    (unsigned long long)skip, c->raw_len);
	if (c->codec == TRACE_CODEC_ZSTD) {
		if (!(d->ds = ZSTD_createDStream()))
			return reader_error(err, errlen, "out of memory");
	} else if (c->codec == TRACE_CODEC_ZLIB) {
		d->zs.next_in = (unsigned char *)d->in.src;
		d->zs.avail_in = c->payload_len;
		if (inflateInit(&d->zs) != Z_OK)
			return reader_error(err, errlen, "out of memory");
	} else if (c->codec != TRACE_CODEC_NONE) {
		return reader_error(err, errlen, "chunk %zu: unknown codec %u", i, c->codec);
	}
	while (!bad && skip) {
		size_t n = skip < sizeof(scratch) ? skip : sizeof(scratch);

		bad = read_into(&d->zs, d->ds, &d->in, c, scratch, n);
		skip -= n;
	}
	if (bad) {
		dec_close(d);
		return dec_bad(r, i, err, errlen);
	}
	return 0;
}

long trace_chunk_read(const struct trace_reader *r, size_t i, uint64_t skip, void *dst, size_t len, char *err,
		      size_t errlen)
{
	struct chunk_dec d;
	int bad;

	if (dec_open(r, i, skip, len, &d, err, errlen))
		return -1;
	bad = read_into(&d.zs, d.ds, &d.in, d.c, dst, len);
	dec_close(&d);
	return bad ? dec_bad(r, i, err, errlen) : (long)len;
}

long trace_chunk_stream(const struct trace_reader *r, size_t i, uint64_t skip, size_t len,
			int (*sink)(void *arg, const void *buf, size_t n), void *arg, char *err, size_t errlen)
{
	/* Small enough to come from the heap, not a fresh mapping, and to
	 * stay in the cache between the decoder and the sink. */
	const size_t piece = 64u << 10;
	unsigned char *buf = malloc(piece);
	struct chunk_dec d;
	size_t done = 0;
	int bad = 0;

	if (!buf)
		return reader_error(err, errlen, "out of memory");
	if (dec_open(r, i, skip, len, &d, err, errlen)) {
		free(buf);
		return -1;
	}
	while (!bad && done < len) {
		size_t n = len - done < piece ? len - done : piece;

		bad = read_into(&d.zs, d.ds, &d.in, d.c, buf, n);
		if (!bad && sink(arg, buf, n)) {
			dec_close(&d);
			free(buf);
			return reader_error(err, errlen, "chunk %zu: %s", i, strerror(errno));
		}
		done += n;
	}
	dec_close(&d);
	free(buf);
	return bad ? dec_bad(r, i, err, errlen) : (long)len;
}

int trace_read(struct trace_reader *r, const struct trace_handler *h, void *arg, char *err,
	       size_t errlen)
{
	struct stream *streams = NULL, **heap = NULL;
	struct ahead ahead = { .r = r };
	size_t nr_streams = 0, nr_heap = 0;
	unsigned char *buf = NULL;
	size_t alloc = 0;
	int ret = 0;

	/* Meta and loss first, in file order. */
	for (size_t i = 0; i < r->nr_chunks && !ret; i++) {
		const struct trace_chunk *c = &r->chunks[i];
		long n;

		if (c->type == TRACE_CHUNK_META && h->meta_ref && c->stream < 32 && (h->meta_by_ref & 1u << c->stream)) {
			ret = h->meta_ref(c->stream, i, arg);
		} else if (c->type == TRACE_CHUNK_META && h->meta) {
			n = trace_chunk_payload(r, i, &buf, &alloc, err, errlen);
			ret = n < 0 ? -1 : h->meta(c->stream, buf, n, arg);
		} else if (c->type == TRACE_CHUNK_LOSS && h->loss) {
			n = trace_chunk_payload(r, i, &buf, &alloc, err, errlen);
			for (long o = 0; n >= 0 && o + LOSS_ENTRY_SIZE <= n && !ret; o += LOSS_ENTRY_SIZE) {
				struct trace_loss l = { get32(buf + o), 0, get64(buf + o + 8) };

				ret = h->loss(&l, arg);
			}
			if (n < 0)
				ret = -1;
		}
	}
	free(buf);
	if (ret || !h->record)
		return ret;

	for (size_t i = 0; i < r->nr_chunks; i++) {
		const struct trace_chunk *c = &r->chunks[i];
		struct stream *s = NULL;

		if (c->type != TRACE_CHUNK_DATA)
			continue;
		for (size_t k = 0; k < nr_streams; k++)
			if (streams[k].id == c->stream)
				s = &streams[k];
		if (!s) {
			struct stream *p = realloc(streams, (nr_streams + 1) * sizeof(*p));

			if (!p) {
				ret = reader_error(err, errlen, "out of memory");
				goto out;
			}
			streams = p;
			s = &streams[nr_streams++];
			memset(s, 0, sizeof(*s));
			s->id = c->stream;
		}
		if (s->nr == s->alloc) {
			size_t a = s->alloc ? s->alloc * 2 : 64;
			size_t *p = realloc(s->chunks, a * sizeof(*p));

			if (!p) {
				ret = reader_error(err, errlen, "out of memory");
				goto out;
			}
			s->chunks = p;
			s->alloc = a;
		}
		s->chunks[s->nr++] = i;
	}
	heap = calloc(nr_streams ? nr_streams : 1, sizeof(*heap));
	if (!heap) {
		ret = reader_error(err, errlen, "out of memory");
		goto out;
	}
	ahead_start(&ahead, r);
	for (size_t k = 0; k < nr_streams; k++) {
		int l = stream_load(&ahead, &streams[k], err, errlen);

		if (l < 0) {
			ret = -1;
			goto out;
		}
		if (l)
			heap[nr_heap++] = &streams[k];
	}
	for (size_t k = nr_heap; k-- > 0;)
		heap_down(heap, nr_heap, k);
	while (nr_heap) {
		struct stream *s = heap[0];
		struct rec_pos *p = &s->pos[s->cur++];

		ret = h->record(s->buf + p->off, p->len, s->id, p->time, arg);
		if (ret)
			goto out;
		if (s->cur == s->nr_pos) {
			int l = stream_load(&ahead, s, err, errlen);

			if (l < 0) {
				ret = -1;
				goto out;
			}
			if (!l)
				heap[0] = heap[--nr_heap];
		}
		heap_down(heap, nr_heap, 0);
	}
out:
	ahead_stop(&ahead);
	for (size_t k = 0; k < nr_streams; k++) {
		free(streams[k].chunks);
		free(streams[k].buf);
		free(streams[k].pos);
	}
	free(streams);
	free(heap);
	return ret;
}
