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

#include "replace.h"
#include "trace_int.h"

/* The address space a live file's mapping keeps past its end to grow
 * into: no memory, and more than any recording writes between two looks. */
#define READER_GROW_ROOM (64ull << 30)

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
void trace_range_drop(const struct trace_reader *r, uint64_t off, uint64_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), start = (off + page - 1) & ~(page - 1);
	uint64_t end = (off + len) & ~(page - 1);

	if (r->mapped && end > start)
		madvise((void *)(r->base + start), end - start, MADV_DONTNEED);
}

void trace_chunk_drop(const struct trace_reader *r, size_t i)
{
	trace_range_drop(r, r->chunks[i].offset, TRACE_CHUNK_HEADER_SIZE + r->chunks[i].payload_len);
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

		j->bad[i] = !c->held && trace_chunk_crc(c->crc_seed, h, h + TRACE_CHUNK_HEADER_SIZE, c->payload_len) != c->crc;
		/* A ring's segments come in window order, not file order. */
		if (c->offset < dropped) {
			dropped = c->offset;
		} else if (c->offset - dropped >= DROP_STEP) {
			trace_range_drop(j->r, dropped, c->offset - dropped);
			dropped = c->offset;
		}
	}
	if (j->from < j->to) {
		const struct trace_chunk *c = &j->r->chunks[j->to - 1];

		if (c->offset >= dropped)
			trace_range_drop(j->r, dropped, c->offset + TRACE_CHUNK_HEADER_SIZE + c->payload_len - dropped);
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

/* Walk the chunk headers from off up to end, each with the CRC seed and
 * segment given, pushing where each chunk is: a header whose magic or
 * lengths are wrong ends the walk, since nothing after it can be found.
 * quiet: running out of room or into garbage is how a ring's segment
 * ends, not news. Returns the offset where the walk ended, or 0 when out
 * of memory. */
static uint64_t reader_walk(struct trace_reader *r, uint64_t off, uint64_t end, uint32_t seed, uint32_t segment,
			    int quiet, size_t *alloc)
{
	const unsigned char *b = r->base;
	uint64_t dropped = off;

	for (;;) {
		struct trace_chunk c = { .held = NULL };
		const unsigned char *h = b + off;

		if (off == end) {
			if (!quiet && !r->live)
				reader_stop(r, "ends at byte %llu without a trailer: the recording did not finish "
					       "(recorder killed or disk full?)",
					    (unsigned long long)off);
			break;
		}
		if (end - off < TRACE_CHUNK_HEADER_SIZE) {
			if (!quiet && !r->live)
				reader_stop(r, "cut short at byte %llu: %llu bytes of a chunk header",
					    (unsigned long long)off, (unsigned long long)(end - off));
			break;
		}
		if (get32(h) != TRACE_CHUNK_MAGIC) {
			if (!quiet)
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
		c.crc_seed = seed;
		c.segment = segment;
		if (c.payload_len > TRACE_CHUNK_MAX || c.raw_len > TRACE_CHUNK_MAX) {
			if (!quiet)
				reader_stop(r, "chunk %zu at byte %llu is corrupt (length %u over the limit)",
					    r->nr_chunks, (unsigned long long)off,
					    c.payload_len > c.raw_len ? c.payload_len : c.raw_len);
			break;
		}
		if (end - off - TRACE_CHUNK_HEADER_SIZE < c.payload_len) {
			if (!quiet && !r->live)
				reader_stop(r, "cut short at byte %llu: chunk %zu needs %u payload bytes, %llu remain",
					    (unsigned long long)off, r->nr_chunks, c.payload_len,
					    (unsigned long long)(end - off - TRACE_CHUNK_HEADER_SIZE));
			break;
		}
		if (reader_push(r, &c, alloc))
			return 0;
		off += TRACE_CHUNK_HEADER_SIZE + c.payload_len;
		if (c.type == TRACE_CHUNK_TRAILER)
			break;
		/* Reading a header maps the page cache around it, a large folio
		 * at a time: drop as we go, or the walk alone maps most of the
		 * file. */
		if (off - dropped >= DROP_STEP) {
			trace_range_drop(r, dropped, off - dropped);
			dropped = off;
		}
	}
	trace_range_drop(r, dropped, off - dropped);
	return off;
}

struct seg_found {
	uint64_t offset, seq, time, bytes_before, records_before;
};

static int seg_cmp(const void *a, const void *b)
{
	const struct seg_found *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Chunk c's header and payload copied out of the file, or NULL: *gone
 * says whether because the copy fails its checks (a ring's recorder
 * overwrote the chunk since the walk read its header) or for memory. */
static unsigned char *chunk_copy(const struct trace_reader *r, const struct trace_chunk *c, int *gone)
{
	size_t len = TRACE_CHUNK_HEADER_SIZE + (size_t)c->payload_len;
	unsigned char *copy = malloc(len);

	*gone = 0;
	if (!copy)
		return NULL;
	memcpy(copy, r->base + c->offset, len);
	if (get32(copy) != TRACE_CHUNK_MAGIC || get32(copy + 12) != c->payload_len ||
	    trace_chunk_crc(c->crc_seed, copy, copy + TRACE_CHUNK_HEADER_SIZE, c->payload_len) != c->crc) {
		free(copy);
		*gone = 1;
		return NULL;
	}
	return copy;
}

/* The window's oldest segment, its chunks from index from on: the chunks
 * that restate the processes at its start (those before its first DATA)
 * are copied and checked now. In a ring still being written they are the
 * next the recorder overwrites, and a view read without them names no
 * stack; read in place later, they could be gone. A segment that begins
 * with DATA had nothing to restate (the first of a recording that started
 * its command: the head holds what there was). Returns 1 when they are
 * held, 0 when one is bad or the segment has no chunk (it is being
 * overwritten), -1 when out of memory. */
static int reader_hold(struct trace_reader *r, size_t from)
{
	size_t n = r->nr_held, i;
	int gone = 0;

	for (i = from; i < r->nr_chunks && r->chunks[i].type != TRACE_CHUNK_DATA; i++) {
		unsigned char *copy, **p = realloc(r->held, (r->nr_held + 1) * sizeof(*p));

		if (!p)
			return -1;
		r->held = p;
		if (!(copy = chunk_copy(r, &r->chunks[i], &gone)))
			break;
		r->held[r->nr_held++] = copy;
		r->chunks[i].held = copy;
	}
	if (gone || from == r->nr_chunks) {
		while (r->nr_held > n)
			free(r->held[--r->nr_held]);
		return 0;
	}
	return i < r->nr_chunks && r->chunks[i].type != TRACE_CHUNK_DATA ? -1 : 1;
}

/* A ring: the head, then each segment that starts with a good SEGMENT
 * chunk, oldest first, as long as its sequence number says it belongs
 * to the last pass over the ring. */
static int reader_walk_ring(struct trace_reader *r, uint64_t hsize, size_t *alloc, char *err, size_t errlen)
{
	const unsigned char *b = r->base;
	struct trace_ring_info *ri = &r->ring;
	uint64_t start = get64(b + 32), seg = get32(b + 40), nr = get32(b + 44), head_end;
	struct seg_found *found;
	size_t nf = 0;

	if (start && (start < hsize || seg < 4096 || !nr || start > r->size || nr > (UINT64_MAX - start) / seg))
		return trace_error_set(err, errlen, "ring header is corrupt (segments of %llu bytes x %llu from byte %llu)",
				       (unsigned long long)seg, (unsigned long long)nr, (unsigned long long)start);
	head_end = start ? start : r->size;
	if (!reader_walk(r, hsize, head_end, 0, 0, 1, alloc))
		return trace_error_set(err, errlen, "out of memory");
	if (!start)
		return 0;
	ri->start = start;
	ri->segment_size = seg;
	ri->nr_segments = (uint32_t)nr;
	/* Segments past the end of the file (a copy cut short) hold nothing. */
	found = calloc(nr < (r->size - start) / seg + 1 ? nr : (r->size - start) / seg + 1, sizeof(*found));
	if (!found)
		return trace_error_set(err, errlen, "out of memory");
	for (uint64_t i = 0; i < nr && start + i * seg < r->size; i++) {
		uint64_t off = start + i * seg;
		const unsigned char *h = b + off;

		if (off > r->size || r->size - off < TRACE_CHUNK_HEADER_SIZE + TRACE_SEGMENT_SIZE)
			break;
		if (get32(h) != TRACE_CHUNK_MAGIC || get16(h + 4) != TRACE_CHUNK_SEGMENT || get16(h + 6) != 0 ||
		    get32(h + 12) != TRACE_SEGMENT_SIZE || get32(h + 16) != TRACE_SEGMENT_SIZE ||
		    trace_chunk_crc(0, h, h + TRACE_CHUNK_HEADER_SIZE, TRACE_SEGMENT_SIZE) != get32(h + 20))
			continue;
		h += TRACE_CHUNK_HEADER_SIZE;
		found[nf++] = (struct seg_found){ off, get64(h), get64(h + 8), get64(h + 16), get64(h + 24) };
	}
	qsort(found, nf, sizeof(*found), seg_cmp);
	for (size_t i = 0, firsts = 0; i < nf; i++) {
		uint64_t off = found[i].offset, end = off + seg > r->size ? r->size : off + seg;
		size_t before = r->nr_chunks;

		/* Only the last pass: a segment the writer has since gone past
		 * twice cannot be part of the window. */
		if (found[i].seq + nr <= found[nf - 1].seq || (i && found[i].seq == found[i - 1].seq))
			continue;
		if (!firsts++) {
			ri->first_seq = found[i].seq;
			ri->first_time = found[i].time;
			ri->overwritten_bytes = found[i].bytes_before;
			ri->overwritten_records = found[i].records_before;
		}
		/* Passed over: a segment whose next began, a margin before,
		 * earlier than the window the reader wants. The newest
		 * segment's start bounds the trace's end from below. */
		if (r->recent && i + 1 < nf && found[i + 1].time + RECENT_MARGIN_NS <= found[nf - 1].time &&
		    found[nf - 1].time - found[i + 1].time - RECENT_MARGIN_NS >= r->recent) {
			ri->passed++;
			continue;
		}
		ri->last_seq = found[i].seq;
		ri->last_offset = off;
		ri->last_end = off + TRACE_CHUNK_HEADER_SIZE + TRACE_SEGMENT_SIZE;
		ri->segments++;
		if (!reader_walk(r, off + TRACE_CHUNK_HEADER_SIZE + TRACE_SEGMENT_SIZE, end,
				 trace_segment_seed(found[i].seq), ri->segments, 1, alloc)) {
			free(found);
			return trace_error_set(err, errlen, "out of memory");
		}
		if (ri->segments != 1)
			continue;
		int held = reader_hold(r, before);

		if (held < 0) {
			free(found);
			return trace_error_set(err, errlen, "out of memory");
		}
		/* Its recorder has begun to overwrite it: the next segment
		 * restates the processes instead, and the window starts there. */
		if (!held && i + 1 < nf) {
			r->nr_chunks = before;
			ri->segments--;
			firsts = 0;
		}
	}
	free(found);
	return 0;
}

/* Keep the good chunks of r->chunks[from, walked), which the walk put
 * there (bad[i - from]: chunk i failed its CRC), in the order a single
 * pass would have met them: the first chunk that fails its CRC, has an
 * unknown codec or is a short trailer ends the good part of its segment
 * (of the file, when it is linear), and its reason replaces the walk's,
 * which lies further on. In a ring's segment that is where the last
 * pass's writing stopped, and no news. Only the oldest segment's STATE is
 * the window's: it becomes META; the other segments' is dropped. */
static void reader_accept(struct trace_reader *r, const unsigned char *bad, size_t from, size_t walked, int ring)
{
	uint32_t cut = UINT32_MAX; /* the segment a bad chunk ended */

	for (size_t i = from; i < walked; i++) {
		struct trace_chunk c = r->chunks[i];
		const unsigned char *t = r->base + c.offset + TRACE_CHUNK_HEADER_SIZE;

		if (c.segment == cut)
			continue;
		if (bad[i - from] || c.codec > TRACE_CODEC_ZLIB) {
			/* A live file's last chunk may be read while it is
			 * written: it is not there yet. */
			int quiet = c.segment || (r->live && i + 1 == walked);

			if (!quiet && bad[i - from])
				reader_stop(r, "chunk %zu at byte %llu is corrupt (crc mismatch)", i,
					    (unsigned long long)c.offset);
			else if (!quiet)
				reader_stop(r, "chunk %zu at byte %llu uses unknown codec %u", i,
					    (unsigned long long)c.offset, c.codec);
			cut = c.segment;
			if (!ring)
				break;
			continue;
		}
		if (ring && c.segment && c.segment == r->ring.segments &&
		    c.offset + TRACE_CHUNK_HEADER_SIZE + c.payload_len > r->ring.last_end)
			r->ring.last_end = c.offset + TRACE_CHUNK_HEADER_SIZE + c.payload_len;
		if (c.type == TRACE_CHUNK_SEGMENT)
			continue;
		if (c.type == TRACE_CHUNK_STATE) {
			if (c.segment != 1)
				continue;
			c.type = TRACE_CHUNK_META;
		}
		r->chunks[r->nr_chunks++] = c;
		if (c.offset + TRACE_CHUNK_HEADER_SIZE + c.payload_len > r->valid_end)
			r->valid_end = c.offset + TRACE_CHUNK_HEADER_SIZE + c.payload_len;
		if (c.type != TRACE_CHUNK_TRAILER)
			continue;
		if (c.payload_len < TRAILER_SIZE) {
			reader_stop(r, "trailer at byte %llu is too short", (unsigned long long)c.offset);
			return;
		}
		/* A ring's trailer counts only in its newest segment. */
		if (ring && c.segment != r->ring.segments)
			continue;
		r->trailer.index_offset = get64(t);
		r->trailer.nr_chunks = get64(t + 8);
		r->trailer.nr_records = get64(t + 16);
		r->trailer.lost = get64(t + 24);
		r->trailer.first_time = get64(t + 32);
		r->trailer.last_time = get64(t + 40);
		r->complete = 1;
		if (!ring && r->valid_end != r->size)
			reader_stop(r, "%llu bytes after the trailer at byte %llu were ignored",
				    (unsigned long long)(r->size - r->valid_end), (unsigned long long)c.offset);
	}
}

static int reader_scan(struct trace_reader *r, char *err, size_t errlen)
{
	const unsigned char *b = r->base;
	uint64_t hsize, csize;
	size_t alloc = 0, walked;
	unsigned char *bad;
	int ring;

	/* perf's own file is the one most often given by mistake. */
	if (r->size >= 8 && !memcmp(b, "PERFILE2", 8))
		return trace_error_set(err, errlen,
				       "a perf.data file (perf record's output), not a memsight trace: perf report and perf "
				       "script read it; record with 'memsight record' for memsight");
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
	ring = r->version >= 3 && (r->file_flags & TRACE_FILE_RING);

	if (ring) {
		if (reader_walk_ring(r, hsize, &alloc, err, errlen))
			return -1;
	} else if (!reader_walk(r, hsize, r->size, 0, 0, 0, &alloc)) {
		return trace_error_set(err, errlen, "out of memory");
	}

	/* Then the payloads. */
	walked = r->nr_chunks;
	bad = calloc(walked ? walked : 1, 1);
	if (!bad)
		return trace_error_set(err, errlen, "out of memory");
	reader_check_crcs(r, bad);
	r->nr_chunks = 0;
	r->valid_end = hsize;
	reader_accept(r, bad, 0, walked, ring);
	free(bad);
	if (ring && !r->complete && !r->stop[0] && !r->live)
		reader_stop(r, "has no trailer: a ring still being written, or whose recorder was killed; read up to "
			       "its last good chunk");
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

static int reader_open_fd(struct trace_reader *r, int fd, const char *path, uint64_t recent, char *err,
			  size_t errlen)
{
	struct stat st;
	void *map;

	memset(r, 0, sizeof(*r));
	r->recent = recent;
	if (fstat(fd, &st))
		return trace_error_set(err, errlen, "cannot stat '%s': %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return trace_error_set(err, errlen, "'%s' is not a regular file: give a trace file (a FIFO, device or directory cannot be one)", path);
	if (st.st_size == 0)
		return trace_error_set(err, errlen, "'%s' is empty, not a memsight trace", path);
	r->live = replace_live_fd(fd);
	/* A live file is mapped with room to grow into (trace_reader_more):
	 * its pages become readable as the recorder writes them, and the
	 * addresses other threads hold into it stay good. */
	r->map_len = st.st_size + (r->live ? READER_GROW_ROOM : 0);
	map = mmap(NULL, r->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED && r->live)
		map = mmap(NULL, r->map_len = st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return trace_error_set(err, errlen, "cannot map '%s': %s", path, strerror(errno));
	r->base = map;
	r->size = st.st_size;
	r->mapped = 1;
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	if (reader_scan(r, err, errlen)) {
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "%s", err);
		snprintf(err, errlen, "'%s': %s", path, tmp);
		trace_reader_release(r);
		return -1;
	}
	return 0;
}

int trace_reader_open_fd(struct trace_reader *r, int fd, const char *path, char *err, size_t errlen)
{
	return reader_open_fd(r, fd, path, 0, err, errlen);
}

int trace_reader_open_recent(struct trace_reader *r, const char *path, uint64_t window_ns, char *err,
			     size_t errlen)
{
	/* Not blocking: a FIFO would wait for a writer before the check
	 * below could refuse it. A regular file reads the same either way. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), ret;

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return trace_error_set(err, errlen, "cannot open '%s': %s", path, strerror(errno));
	ret = reader_open_fd(r, fd, path, window_ns, err, errlen);
	close(fd);
	return ret;
}

/* The ring segment at off as its SEGMENT chunk says, in *f: 0 where that
 * chunk is not whole (being written, or never). */
static int segment_at(const struct trace_reader *r, uint64_t off, struct seg_found *f)
{
	const unsigned char *h = r->base + off;

	if (off > r->size || r->size - off < TRACE_CHUNK_HEADER_SIZE + TRACE_SEGMENT_SIZE ||
	    get32(h) != TRACE_CHUNK_MAGIC || get16(h + 4) != TRACE_CHUNK_SEGMENT ||
	    get32(h + 12) != TRACE_SEGMENT_SIZE ||
	    trace_chunk_crc(0, h, h + TRACE_CHUNK_HEADER_SIZE, TRACE_SEGMENT_SIZE) != get32(h + 20))
		return 0;
	h += TRACE_CHUNK_HEADER_SIZE;
	*f = (struct seg_found){ off, get64(h), get64(h + 8), get64(h + 16), get64(h + 24) };
	return 1;
}

/* The segment the writer fills after the one at off. */
static uint64_t segment_after(const struct trace_ring_info *ri, uint64_t off)
{
	uint64_t next = off + ri->segment_size;

	return next + ri->segment_size > ri->start + (uint64_t)ri->nr_segments * ri->segment_size ? ri->start : next;
}

/* A live ring walked on from where the last look left it: the rest of
 * the window's newest segment, then, with r->ring_onward, each segment
 * its recorder has begun since, in turn, the window's oldest moving on
 * with them. A recorder that has begun a segment without ring_onward, or
 * gone past one the reader never walked (it overwrote the newest, or the
 * sequence skips), leaves what the reader holds no longer a run of the
 * window: -1, only a new reading reads it. */
static int reader_more_ring(struct trace_reader *r, size_t *alloc, char *err, size_t errlen)
{
	struct trace_ring_info *ri = &r->ring;
	struct seg_found f;
	uint64_t off, seq = ri->last_seq;
	uint32_t begun = 0;

	/* Its segments had not begun when it was opened (the head alone was
	 * read): once they have, only a new reading reads them. */
	if (!ri->segments) {
		if (!ri->start && get64(r->base + 32))
			return trace_error_set(err, errlen, "the ring's segments have begun");
		return reader_walk(r, r->valid_end, r->size, 0, 0, 0, alloc) ? 0 : trace_error_set(err, errlen, "out of memory");
	}
	if (!segment_at(r, ri->last_offset, &f) || f.seq != ri->last_seq)
		return trace_error_set(err, errlen, "the ring's window moved on past the segment read last");
	for (off = segment_after(ri, ri->last_offset); segment_at(r, off, &f) && f.seq > seq && begun < ri->nr_segments;
	     off = segment_after(ri, off), begun++) {
		if (!r->ring_onward)
			return trace_error_set(err, errlen, "the ring's window moved on: its recorder began a segment");
		if (f.seq != ++seq)
			return trace_error_set(err, errlen, "the ring's window moved on past a segment never read");
	}
	/* The newest segment from where the last look left it, then each
	 * one begun since, which becomes the newest, from its start. */
	for (;;) {
		off = ri->last_offset;
		if (!reader_walk(r, ri->last_end, off + ri->segment_size < r->size ? off + ri->segment_size : r->size,
				 trace_segment_seed(ri->last_seq), ri->segments, 1, alloc))
			return trace_error_set(err, errlen, "out of memory");
		if (!begun-- || !segment_at(r, off = segment_after(ri, off), &f))
			break;
		ri->last_seq = f.seq;
		ri->last_offset = off;
		ri->last_end = off + TRACE_CHUNK_HEADER_SIZE + TRACE_SEGMENT_SIZE;
		ri->segments++;
	}
	/* The window's oldest segment now: the one the writer fills next,
	 * until it does. */
	if (segment_at(r, segment_after(ri, ri->last_offset), &f) && f.seq > ri->first_seq &&
	    f.seq + ri->nr_segments > ri->last_seq) {
		ri->first_seq = f.seq;
		ri->first_time = f.time;
		ri->overwritten_bytes = f.bytes_before;
		ri->overwritten_records = f.records_before;
		ri->moved++;
	}
	return 0;
}

int trace_reader_more(struct trace_reader *r, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), live;
	size_t alloc = r->nr_chunks, from = r->nr_chunks, walked;
	struct stat st;
	unsigned char *bad;
	void *map;

	if (fd < 0)
		return trace_error_set(err, errlen, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) || st.st_dev != r->dev || st.st_ino != r->ino) {
		close(fd);
		return trace_error_set(err, errlen, "'%s' is another file now: a new recording replaced it", path);
	}
	/* Whether the recorder still holds it, asked before its size: what
	 * a recorder that has let go wrote is all there is. */
	live = replace_live_fd(fd);
	if (!r->mapped || !r->live || r->complete || r->stop[0] || (uint64_t)st.st_size < r->size) {
		close(fd);
		return 0;
	}
	if ((uint64_t)st.st_size > r->map_len) {
		struct old_map *v = realloc(r->old_maps, (r->nr_old_maps + 1) * sizeof(*v));
		size_t len = st.st_size + READER_GROW_ROOM;

		map = v ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
		if (v)
			r->old_maps = v;
		if (map == MAP_FAILED) {
			close(fd);
			return trace_error_set(err, errlen, "cannot map '%s': %s", path, strerror(errno));
		}
		/* The old mapping stays until the reader goes: another thread
		 * may be reading an object out of it. */
		v[r->nr_old_maps].base = r->base;
		v[r->nr_old_maps++].len = r->map_len;
		r->base = map;
		r->map_len = len;
	}
	r->size = st.st_size;
	close(fd);
	r->live = live;
	r->looks++;
	if (r->file_flags & TRACE_FILE_RING) {
		if (reader_more_ring(r, &alloc, err, errlen)) {
			r->nr_chunks = from;
			return -1;
		}
	} else if (!reader_walk(r, r->valid_end, r->size, 0, 0, 0, &alloc))
		return trace_error_set(err, errlen, "out of memory");
	walked = r->nr_chunks;
	bad = calloc(walked - from + 1, 1);
	if (!bad)
		return trace_error_set(err, errlen, "out of memory");
	for (size_t i = from; i < walked; i++) {
		const struct trace_chunk *c = &r->chunks[i];
		const unsigned char *h = r->base + c->offset;

		bad[i - from] = trace_chunk_crc(c->crc_seed, h, h + TRACE_CHUNK_HEADER_SIZE, c->payload_len) != c->crc;
	}
	r->nr_chunks = from;
	reader_accept(r, bad, from, walked, r->ring.segments != 0);
	free(bad);
	return 0;
}

int trace_reader_open(struct trace_reader *r, const char *path, char *err, size_t errlen)
{
	return trace_reader_open_recent(r, path, 0, err, errlen);
}

void trace_reader_release(struct trace_reader *r)
{
	if (r->mapped && r->base)
		munmap((void *)r->base, r->map_len);
	for (size_t i = 0; i < r->nr_old_maps; i++)
		munmap((void *)r->old_maps[i].base, r->old_maps[i].len);
	free(r->old_maps);
	for (size_t i = 0; i < r->nr_held; i++)
		free(r->held[i]);
	free(r->held);
	free(r->chunks);
	ZSTD_freeDCtx(r->dctx);
	memset(r, 0, sizeof(*r));
}

/* Decompress chunk i with the zstd context *dctx (made on first use): the
 * reader's own for the caller's thread, another for the read-ahead thread. */
static long chunk_decode(const struct trace_chunk *c, const unsigned char *src, void **dctx, size_t i,
			 unsigned char **buf, size_t *alloc, char *err, size_t errlen);

int trace_chunk_stored(const struct trace_reader *r, size_t i, const unsigned char **src, unsigned char **copy,
		       char *err, size_t errlen)
{
	const struct trace_chunk *c = &r->chunks[i];
	int gone;

	*copy = NULL;
	*src = (c->held ? c->held : r->base + c->offset) + TRACE_CHUNK_HEADER_SIZE;
	if (c->held || !r->live || !c->segment)
		return 0;
	/* A ring its recorder still writes: the chunk may have been
	 * overwritten since the scan checked it. Its bytes are copied and
	 * checked again, and used from the copy, which nothing rewrites. */
	if (!(*copy = chunk_copy(r, c, &gone))) {
		if (!gone)
			return trace_error_set(err, errlen, "out of memory");
		trace_error_set(err, errlen, "chunk %zu at byte %llu was overwritten by its recorder while it was read", i,
				(unsigned long long)c->offset);
		return TRACE_CHUNK_GONE;
	}
	*src = *copy + TRACE_CHUNK_HEADER_SIZE;
	return 0;
}

long trace_chunk_decode(const struct trace_reader *r, void **dctx, size_t i, unsigned char **buf,
			 size_t *alloc, char *err, size_t errlen)
{
	const unsigned char *src;
	unsigned char *copy;
	long n = trace_chunk_stored(r, i, &src, &copy, err, errlen);

	if (n)
		return n;
	n = chunk_decode(&r->chunks[i], src, dctx, i, buf, alloc, err, errlen);
	free(copy);
	return n;
}

/* Chunk c (number i), its payload at src, into *buf. */
static long chunk_decode(const struct trace_chunk *c, const unsigned char *src, void **dctx, size_t i,
			 unsigned char **buf, size_t *alloc, char *err, size_t errlen)
{
	if (c->raw_len > *alloc || !*buf) {
		/* Nothing in it is kept: a fresh buffer, not a copy, and a
		 * power of two, so that the buffers the readers pass around
		 * stop growing after the first few chunks. */
		size_t n = 64 << 10;
		unsigned char *p;

		while (n < c->raw_len)
			n *= 2;
		free(*buf);
		*alloc = 0;
		if (!(*buf = p = malloc(n)))
			return trace_error_set(err, errlen, "out of memory");
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
	d->in = (ZSTD_inBuffer){ (c->held ? c->held : r->base + c->offset) + TRACE_CHUNK_HEADER_SIZE, c->payload_len, 0 };
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

