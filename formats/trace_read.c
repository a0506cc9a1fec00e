/*
 * formats/trace_read.c: opening a trace file and reading its chunks.
 *
 * The reader maps the file, walks the chunk headers checking magic and
 * bounds, then checks every CRC (on two threads for a large file) and keeps
 * the list of good chunks; the first bad one ends the list and leaves a
 * reason in r->stop. Chunks decompress whole, or piecewise for embedded
 * objects too large to hold twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "trace_int.h"

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

void trace_chunk_drop(const struct trace_reader *r, size_t i)
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

		j->bad[i] = trace_chunk_crc(h, h + TRACE_CHUNK_HEADER_SIZE, c->payload_len) != c->crc;
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
		return trace_error_set(err, errlen, "not a memsight trace (no MEMSIGHT magic at the start)");
	r->version = get32(b + 8);
	if (r->version > TRACE_VERSION)
		return trace_error_set(err, errlen,
				    "trace format version %u is newer than this memsight reads (%u); "
				    "use a newer memsight",
				    r->version, TRACE_VERSION);
	if (r->version == 0)
		return trace_error_set(err, errlen, "trace format version 0 is not valid");
	if (r->size < TRACE_FILE_HEADER_SIZE)
		return trace_error_set(err, errlen, "trace is cut short inside its %d-byte header",
				    TRACE_FILE_HEADER_SIZE);
	hsize = get32(b + 12);
	csize = get32(b + 16);
	if (hsize < TRACE_FILE_HEADER_SIZE || hsize > r->size || csize != TRACE_CHUNK_HEADER_SIZE)
		return trace_error_set(err, errlen, "trace header has bad sizes (header %llu, chunk header %llu)",
				    (unsigned long long)hsize, (unsigned long long)csize);
	if (get32(b + 60) != (uint32_t)crc32(crc32(0, NULL, 0), b, 60))
		return trace_error_set(err, errlen, "trace header is corrupt (crc mismatch)");
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
			return trace_error_set(err, errlen, "out of memory");
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
		return trace_error_set(err, errlen, "out of memory");
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
		return trace_error_set(err, errlen, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		close(fd);
		return trace_error_set(err, errlen, "cannot stat '%s': %s", path, strerror(errno));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return trace_error_set(err, errlen, "'%s' is not a regular file", path);
	}
	if (st.st_size == 0) {
		close(fd);
		return trace_error_set(err, errlen, "'%s' is empty, not a memsight trace", path);
	}
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return trace_error_set(err, errlen, "cannot map '%s': %s", path, strerror(errno));
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
long trace_chunk_decode(const struct trace_reader *r, void **dctx, size_t i, unsigned char **buf,
			 size_t *alloc, char *err, size_t errlen)
{
	const struct trace_chunk *c = &r->chunks[i];
	const unsigned char *src = r->base + c->offset + TRACE_CHUNK_HEADER_SIZE;

	if (c->raw_len > *alloc || !*buf) {
		size_t n = c->raw_len ? c->raw_len : 1;
		unsigned char *p = realloc(*buf, n);

		if (!p)
			return trace_error_set(err, errlen, "out of memory");
		*buf = p;
		*alloc = n;
	}
	switch (c->codec) {
	case TRACE_CODEC_NONE:
		if (c->payload_len != c->raw_len)
			return trace_error_set(err, errlen, "chunk %zu: stored length %u differs from %u", i,
					    c->payload_len, c->raw_len);
		memcpy(*buf, src, c->raw_len);
		return c->raw_len;
	case TRACE_CODEC_ZSTD: {
		size_t n;

		if (!*dctx && !(*dctx = ZSTD_createDCtx()))
			return trace_error_set(err, errlen, "out of memory");
		n = ZSTD_decompressDCtx(*dctx, *buf, c->raw_len, src, c->payload_len);
		if (ZSTD_isError(n) || n != c->raw_len)
			return trace_error_set(err, errlen, "chunk %zu at byte %llu: zstd frame does not decode: %s",
					    i, (unsigned long long)c->offset,
					    ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
		return n;
	}
	case TRACE_CODEC_ZLIB: {
		uLongf n = c->raw_len;
		int z = uncompress(*buf, &n, src, c->payload_len);

		if (z != Z_OK || n != c->raw_len)
			return trace_error_set(err, errlen, "chunk %zu at byte %llu: zlib data does not decode (%d)",
					    i, (unsigned long long)c->offset, z);
		return n;
	}
	}
	return trace_error_set(err, errlen, "chunk %zu: unknown codec %u", i, c->codec);
}

long trace_chunk_payload(struct trace_reader *r, size_t i, unsigned char **buf, size_t *alloc,
			 char *err, size_t errlen)
{
	return trace_chunk_decode(r, &r->dctx, i, buf, alloc, err, errlen);
}


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

	return trace_error_set(err, errlen, "chunk %zu at byte %llu: %s data does not decode", i,
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
		return trace_error_set(err, errlen, "chunk %zu: %zu bytes at %llu are past its %u", i, len,
				    (unsigned long long)skip, c->raw_len);
	if (c->codec == TRACE_CODEC_ZSTD) {
		if (!(d->ds = ZSTD_createDStream()))
			return trace_error_set(err, errlen, "out of memory");
	} else if (c->codec == TRACE_CODEC_ZLIB) {
		d->zs.next_in = (unsigned char *)d->in.src;
		d->zs.avail_in = c->payload_len;
		if (inflateInit(&d->zs) != Z_OK)
			return trace_error_set(err, errlen, "out of memory");
	} else if (c->codec != TRACE_CODEC_NONE) {
		return trace_error_set(err, errlen, "chunk %zu: unknown codec %u", i, c->codec);
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
		return trace_error_set(err, errlen, "out of memory");
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
			return trace_error_set(err, errlen, "chunk %zu: %s", i, strerror(errno));
		}
		done += n;
	}
	dec_close(&d);
	free(buf);
	return bad ? dec_bad(r, i, err, errlen) : (long)len;
}

