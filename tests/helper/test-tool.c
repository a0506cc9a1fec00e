/*
 * tests/helper/test-tool.c: exposes formats/ to the shell tests.
 *
 *   test-tool write FILE [--codec none|zstd|zlib] [--records N] [--no-trailer]
 *                   [--ring SEGMENTS BYTES]
 *       a synthetic trace: host META, N SAMPLE records spread over two
 *       streams with interleaved times, LOSS, INDEX, TRAILER; or a ring of
 *       SEGMENTS segments of BYTES, each restating "pid SEQ" as its state
 *   test-tool ringify IN OUT SEGMENTS BYTES
 *       IN as a ring (uncompressed): its host, header_page and events in the
 *       head, its processes and kernel symbols restated in each segment,
 *       then its other META, DATA and LOSS; no embedded objects
 *   test-tool read FILE
 *       reads it back; prints records, meta, loss, whether time order held
 *       and every record came right after the one before it (sequence),
 *       completeness and where reading stopped, and for a ring its window;
 *       exit 1 when unreadable
 *   test-tool follow FILE SEGMENTS BYTES [--onward] STEP...
 *       a ring of SEGMENTS segments of BYTES written STEP records at a time
 *       (1 ms apart, uncompressed) under the lock a recorder holds, and read
 *       as it is written, as memsight top's commands read: after the first
 *       step it is opened, and at each look the next step is written and
 *       the reader reads on (--onward: into the segments begun since). Each
 *       look's window or why it cannot read on, then what was read, as read
 *       prints it
 *   test-tool roundtrip
 *       in-memory write/read of every codec, payloads compared byte for byte (TAP)
 *   test-tool flip FILE OFFSET
 *       inverts one byte
 *   test-tool grep FILE STRING
 *       how many times STRING occurs in the chunks (DATA, META, every one), decompressed
 *   test-tool restack IN OUT MODE
 *       IN's samples with a stack dump rewritten (every other chunk copied):
 *       unpack   in the kernel's layout again, the dump as packed
 *       cut=N    the same, the dump cut to its first N bytes (dyn_size N)
 *       noregs   the same, without user registers (ABI none)
 *       badpack  packed ones with a word count past the record's end
 *       prints how many samples it rewrote and the DATA bytes before and after
 *   test-tool stackdump
 *       packs and reads back dumps of many shapes, and refuses malformed
 *       packed fields (TAP)
 *   test-tool seeds FILE DIR
 *       fuzz seeds from a trace: DIR/chunk-N in fuzz_chunk's input layout
 *       (DATA cut into pieces of at most 4 KiB at record boundaries, and
 *       the other chunks whole), DIR/object-N in fuzz_embedded's (each
 *       embedded ELF of at most 256 KiB, then its mode byte)
 *   test-tool reembed IN OUT MODE BUILDID FILE
 *       IN with the embedded object of that build-id and mode (1 minimal,
 *       2 full, 3 debug) holding FILE's bytes instead, as a forger would
 *       make it; every other chunk copied as it is stored
 *   test-tool zbomb FILE MIB
 *       a GNU .zdebug section's bytes ("ZLIB", the size, zlib's stream)
 *       that inflate to MIB MiB of zeros, for objcopy --add-section
 *   test-tool sha256 FILE
 *       the file's SHA-256, in hex
 *   test-tool hashmap|suppress|json|symcheck|catalog
 *       unit tests of the analyzer's internals (test-unit.c)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include <zlib.h>

#include "../../formats/stackdump.h"
#include "../../formats/trace.h"
#include "test-unit.h"

static const char host[] = "memsight_version test\nhostname test\npage_size 4096\n";

/* A PERF_RECORD_SAMPLE laid out as FORMAT.md requires: header, identifier,
 * ip, pid/tid, time, cpu. */
static size_t make_sample(unsigned char *p, uint64_t time, uint32_t cpu, uint64_t seq)
{
	uint32_t type = 9;
	uint16_t misc = 0, size = 48;
	uint64_t id = 1, ip = 0x400000 + seq;
	uint32_t pid = 100, tid = 100 + cpu;

	memcpy(p, &type, 4);
	memcpy(p + 4, &misc, 2);
	memcpy(p + 6, &size, 2);
	memcpy(p + 8, &id, 8);
	memcpy(p + 16, &ip, 8);
	memcpy(p + 24, &pid, 4);
	memcpy(p + 28, &tid, 4);
	memcpy(p + 32, &time, 8);
	memcpy(p + 40, &cpu, 4);
	memset(p + 44, 0, 4);
	return size;
}

/* A ring's state as each segment begins: one process entry naming the
 * segment, so a reader shows which segment's state it took. */
static int tool_carry(void *arg, struct trace_writer *w)
{
	char text[64];
	int n = snprintf(text, sizeof(text), "pid %llu\ncomm seg\n", (unsigned long long)w->seq);

	(void)arg;
	return trace_writer_add_state(w, TRACE_META_PROCESS, text, n);
}

/* A ring of nr_segs segments of seg bytes after the head written so far. */
static int ring_begin(struct trace_writer *w, uint32_t nr_segs, uint32_t seg)
{
	w->ring_size = ((w->offset + 4095) & ~4095ull) + (uint64_t)nr_segs * seg;
	return trace_writer_ring_begin(w, 0, tool_carry, NULL);
}

static int build(struct trace_writer *w, unsigned long n, int trailer, uint32_t nr_segs, uint32_t seg)
{
	unsigned char *buf[2];
	size_t len[2] = { 0, 0 };
	uint64_t nr[2] = { 0, 0 }, first[2] = { 0, 0 };
	struct trace_loss loss[2] = { { 0, 0, 0 }, { 1, 0, 3 } };

	trace_writer_add(w, TRACE_CHUNK_META, TRACE_META_HOST, 0, host, strlen(host), 0);
	if (nr_segs && ring_begin(w, nr_segs, seg))
		return w->err;
	buf[0] = malloc(48 * 1024);
	buf[1] = malloc(48 * 1024);
	for (unsigned long i = 0; i < n; i++) {
		/* Even records on cpu 0, odd on cpu 1; times interleave. */
		int c = i & 1;
		uint64_t t = 1000 + 10 * i;

		if (!nr[c])
			first[c] = t;
		len[c] += make_sample(buf[c] + len[c], t, c, i);
		nr[c]++;
		if (nr[c] == 1000) {
			trace_writer_add(w, TRACE_CHUNK_DATA, c, first[c], buf[c], len[c], nr[c]);
			len[c] = nr[c] = 0;
		}
	}
	for (int c = 0; c < 2; c++)
		if (nr[c])
			trace_writer_add(w, TRACE_CHUNK_DATA, c, first[c], buf[c], len[c], nr[c]);
	free(buf[0]);
	free(buf[1]);
	trace_writer_add_loss(w, loss, 2);
	return trailer ? trace_writer_finish(w) : w->err;
}

static enum trace_codec codec_of(const char *s)
{
	return !strcmp(s, "none") ? TRACE_CODEC_NONE : !strcmp(s, "zlib") ? TRACE_CODEC_ZLIB : TRACE_CODEC_ZSTD;
}

struct counts {
	unsigned long records, meta, loss, disorder, skips;
	uint64_t last, lost, first_ip, last_ip;
	char state[64];
};

static int on_meta(uint32_t kind, const void *d, size_t l, void *arg)
{
	struct counts *c = arg;

	if (kind == TRACE_META_PROCESS)
		snprintf(c->state, sizeof(c->state), "%.*s", (int)(memchr(d, '\n', l) ? (const char *)memchr(d, '\n', l) - (const char *)d : (long)l), (const char *)d);
	c->meta++;
	return 0;
}

static int on_loss(const struct trace_loss *l, void *arg)
{
	((struct counts *)arg)->loss++;
	((struct counts *)arg)->lost += l->lost;
	return 0;
}

static int on_record(const void *rec, size_t len, uint32_t stream, uint64_t time, void *arg)
{
	struct counts *c = arg;

	uint64_t ip;

	(void)stream;
	/* Records were written with ip = 0x400000 + their place in time:
	 * each must come right after the one before it. */
	if (len >= 24) {
		memcpy(&ip, (const unsigned char *)rec + 16, 8);
		if (!c->records)
			c->first_ip = ip;
		c->last_ip = ip;
		c->skips += ip != 0x400000 + c->records;
	}
	if (time < c->last)
		c->disorder++;
	c->last = time;
	c->records++;
	return 0;
}

static int cmd_read(const char *path)
{
	struct trace_reader r;
	struct trace_handler h = { .meta = on_meta, .loss = on_loss, .record = on_record };
	struct counts c = { 0 };
	char err[512];

	if (trace_reader_open(&r, path, err, sizeof(err))) {
		fprintf(stderr, "test-tool: %s\n", err);
		return 1;
	}
	if (trace_read(&r, &h, &c, err, sizeof(err))) {
		fprintf(stderr, "test-tool: %s\n", err);
		trace_reader_release(&r);
		return 1;
	}
	printf("records %lu\nmeta %lu\nloss %lu\nlost %llu\nordered %s\nsequence %s\ncomplete %s\n", c.records,
	       c.meta, c.loss, (unsigned long long)c.lost, c.disorder ? "no" : "yes", c.skips ? "broken" : "whole",
	       r.complete ? "yes" : "no");
	if (r.stop[0])
		printf("stop %s\n", r.stop);
	/* A ring's window: which records, and whose state it starts from. */
	if (r.file_flags & TRACE_FILE_RING)
		printf("first %llu\nlast %llu\nstate %s\nsegments %u of %u\nseq %llu..%llu\noverwritten %llu records\n",
		       (unsigned long long)(c.first_ip - 0x400000), (unsigned long long)(c.last_ip - 0x400000), c.state,
		       r.ring.segments, r.ring.nr_segments, (unsigned long long)r.ring.first_seq,
		       (unsigned long long)r.ring.last_seq, (unsigned long long)r.ring.overwritten_records);
	trace_reader_release(&r);
	return 0;
}

/* follow's writer and reader, in one process: the writer's lock is on
 * its own open file, so the reader sees the ring live. What was read
 * comes first: the read callbacks take the whole as their counts. */
struct follow {
	struct counts c;
	struct trace_writer w;
	int fd, onward;
	const char *path;
	char **steps;
	int nr_steps, step;
	unsigned long written;
	unsigned char *buf[2];
	size_t len[2];
	uint64_t nr[2], first[2];
	struct trace_reader r;
	char err[512];
};

static void follow_flush(struct follow *f, int c)
{
	if (f->nr[c])
		trace_writer_add(&f->w, TRACE_CHUNK_DATA, c, f->first[c], f->buf[c], f->len[c], f->nr[c]);
	f->len[c] = f->nr[c] = 0;
}

/* The next step's records, even ones on cpu 0 and odd on cpu 1, 1 ms
 * apart (a reader following keeps the last 2 s for its next look). */
static void follow_write(struct follow *f, unsigned long n)
{
	for (unsigned long k = 0; k < n; k++, f->written++) {
		int c = f->written & 1;

		if (!f->nr[c])
			f->first[c] = 1000000ull * (f->written + 1);
		f->len[c] += make_sample(f->buf[c] + f->len[c], 1000000ull * (f->written + 1), c, f->written);
		if (++f->nr[c] == 1000)
			follow_flush(f, c);
	}
	follow_flush(f, 0);
	follow_flush(f, 1);
}

static int follow_look(void *arg)
{
	struct follow *f = arg;

	/* After the last step, the recording ends and lets go of the file. */
	if (f->step < f->nr_steps)
		follow_write(f, strtoul(f->steps[f->step], NULL, 10));
	else if (f->step == f->nr_steps && (trace_writer_finish(&f->w) || flock(f->fd, LOCK_UN)))
		return -1;
	f->step++;
	f->r.ring_onward = f->onward;
	if (trace_reader_more(&f->r, f->path, f->err, sizeof(f->err))) {
		printf("look %d: %s\n", f->step, f->err);
		return -1;
	}
	printf("look %d: seq %llu..%llu, moved %u\n", f->step, (unsigned long long)f->r.ring.first_seq,
	       (unsigned long long)f->r.ring.last_seq, f->r.ring.moved);
	return 0;
}

static int cmd_follow(int argc, char **argv)
{
	struct trace_writer_opts o = { .codec = TRACE_CODEC_NONE, .ring_size = 1 };
	struct follow f = { .path = argv[2] };
	struct trace_handler h = { .meta = on_meta, .loss = on_loss, .record = on_record, .follow = follow_look };
	struct counts *c = &f.c;
	int i = 5, ret;

	o.ring_segment = strtoul(argv[4], NULL, 10);
	if (i < argc && !strcmp(argv[i], "--onward"))
		f.onward = i++;
	f.steps = argv + i;
	f.nr_steps = argc - i;
	f.fd = open(f.path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	f.buf[0] = malloc(48 * 1000);
	f.buf[1] = malloc(48 * 1000);
	if (f.fd < 0 || flock(f.fd, LOCK_EX) || !f.buf[0] || !f.buf[1] || !f.nr_steps) {
		fprintf(stderr, "test-tool: cannot begin the ring '%s'\n", f.path);
		return 1;
	}
	trace_writer_init_fd(&f.w, f.fd, &o);
	trace_writer_add(&f.w, TRACE_CHUNK_META, TRACE_META_HOST, 0, host, strlen(host), 0);
	if (ring_begin(&f.w, strtoul(argv[3], NULL, 10), o.ring_segment)) {
		fprintf(stderr, "test-tool: %s\n", trace_writer_strerror(&f.w));
		return 1;
	}
	follow_write(&f, strtoul(f.steps[f.step++], NULL, 10));
	if (trace_reader_open(&f.r, f.path, f.err, sizeof(f.err))) {
		fprintf(stderr, "test-tool: %s\n", f.err);
		return 1;
	}
	f.err[0] = 0;
	ret = trace_read(&f.r, &h, &f, f.err, sizeof(f.err));
	printf("records %lu of %lu\nordered %s\nsequence %s\ncomplete %s\n", c->records, f.written,
	       c->disorder ? "no" : "yes", c->skips ? "broken" : "whole", f.r.complete ? "yes" : "no");
	if (c->records)
		printf("first %llu\nlast %llu\n", (unsigned long long)(c->first_ip - 0x400000),
		       (unsigned long long)(c->last_ip - 0x400000));
	trace_reader_release(&f.r);
	trace_writer_release(&f.w);
	close(f.fd);
	free(f.buf[0]);
	free(f.buf[1]);
	return ret ? 1 : 0;
}

static int cmd_roundtrip(void)
{
	const char *names[] = { "none", "zstd", "zlib" };
	int n = 0, bad = 0;

	for (int k = 0; k < 3; k++) {
		struct trace_writer w;
		struct trace_writer_opts o = { .codec = codec_of(names[k]), .created_ns = 1 };
		struct trace_reader r;
		unsigned char *file, *payload = NULL, expect[48];
		size_t flen, alloc = 0;
		char err[256];
		int ok = 1;
		unsigned long seen = 0;

		trace_writer_init_mem(&w, &o);
		build(&w, 5000, 1, 0, 0);
		file = trace_writer_steal_mem(&w, &flen);
		trace_writer_release(&w);
		if (trace_reader_open_mem(&r, file, flen, err, sizeof(err))) {
			printf("not ok %d - %s: reopen: %s\n", ++n, names[k], err);
			bad++;
			free(file);
			continue;
		}
		ok = r.complete && !r.stop[0] && r.trailer.nr_records == 5000;
		/* Every DATA payload must decode to exactly what was written. */
		for (size_t i = 0; ok && i < r.nr_chunks; i++) {
			long l;

			if (r.chunks[i].type != TRACE_CHUNK_DATA)
				continue;
			l = trace_chunk_payload(&r, i, &payload, &alloc, err, sizeof(err));
			if (l < 0 || l % 48) {
				ok = 0;
				break;
			}
			for (long off = 0; off < l; off += 48, seen++) {
				uint64_t t;

				memcpy(&t, payload + off + 32, 8);
				make_sample(expect, t, r.chunks[i].stream, (t - 1000) / 10);
				ok &= !memcmp(expect, payload + off, 48);
			}
			/* Part of a payload read on its own: a middle slice, and
			 * the tail through the end; one byte past it fails. */
			{
				size_t at = l / 3, len = l / 3 + 5;
				unsigned char *part = malloc(l);

				ok &= part && trace_chunk_read(&r, i, at, part, len, err, sizeof(err)) == (long)len &&
				      !memcmp(part, payload + at, len);
				ok &= part && trace_chunk_read(&r, i, l - 7, part, 7, err, sizeof(err)) == 7 &&
				      !memcmp(part, payload + l - 7, 7);
				ok &= part && trace_chunk_read(&r, i, l - 7, part, 8, err, sizeof(err)) == -1;
				free(part);
			}
		}
		ok &= seen == 5000;
		printf("%s %d - %s round trip: %lu records, %zu chunks, %zu bytes\n", ok ? "ok" : "not ok", ++n, names[k],
		       seen, r.nr_chunks, flen);
		bad += !ok;
		free(payload);
		trace_reader_release(&r);
		free(file);
	}
	printf("1..%d\n", n);
	return bad ? 1 : 0;
}

static int cmd_write(int argc, char **argv)
{
	struct trace_writer w;
	struct trace_writer_opts o = { .codec = TRACE_CODEC_ZSTD };
	unsigned long n = 5000;
	int trailer = 1, fd, r;
	uint32_t nr_segs = 0, seg = 4096;

	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--codec") && i + 1 < argc)
			o.codec = codec_of(argv[++i]);
		else if (!strcmp(argv[i], "--ring") && i + 2 < argc) {
			/* --ring SEGMENTS SEGMENT_BYTES */
			nr_segs = strtoul(argv[++i], NULL, 10);
			seg = strtoul(argv[++i], NULL, 10);
			o.ring_size = 1;
			o.ring_segment = seg;
		}
		else if (!strcmp(argv[i], "--records") && i + 1 < argc)
			n = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--no-trailer"))
			trailer = 0;
	}
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(argv[2]);
		return 1;
	}
	trace_writer_init_fd(&w, fd, &o);
	r = build(&w, n, trailer, nr_segs, seg);
	if (r)
		fprintf(stderr, "test-tool: %s\n", trace_writer_strerror(&w));
	trace_writer_release(&w);
	close(fd);
	return r ? 1 : 0;
}

/* ringify's state: IN's process and kernel symbol entries. */
struct ringify {
	struct trace_reader *r;
	unsigned char *buf;
	size_t alloc;
};

static int ringify_carry(void *arg, struct trace_writer *w)
{
	struct ringify *rf = arg;
	char err[256];

	for (size_t i = 0; i < rf->r->nr_chunks; i++) {
		const struct trace_chunk *c = &rf->r->chunks[i];
		long n;

		if (c->type != TRACE_CHUNK_META || (c->stream != TRACE_META_PROCESS && c->stream != TRACE_META_KSYMS))
			continue;
		n = trace_chunk_payload(rf->r, i, &rf->buf, &rf->alloc, err, sizeof(err));
		if (n < 0)
			return -EIO;
		if (c->stream == TRACE_META_PROCESS)
			trace_writer_add_state(w, TRACE_META_PROCESS, rf->buf, n);
		else
			trace_writer_add(w, TRACE_CHUNK_META, TRACE_META_KSYMS, 0, rf->buf, n, 0);
	}
	return w->err;
}

static int cmd_ringify(const char *in, const char *out, uint32_t nr_segs, uint32_t seg)
{
	struct trace_reader r;
	struct trace_writer w;
	struct trace_writer_opts o = { .codec = TRACE_CODEC_NONE, .ring_size = 1, .ring_segment = seg };
	struct ringify rf = { &r, NULL, 0 };
	char err[512];
	int fd, ret = 1;

	if (trace_reader_open(&r, in, err, sizeof(err))) {
		fprintf(stderr, "test-tool: %s\n", err);
		return 1;
	}
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(out);
		trace_reader_release(&r);
		return 1;
	}
	trace_writer_init_fd(&w, fd, &o);
	for (int pass = 0; pass < 2 && !w.err; pass++) {
		for (size_t i = 0; i < r.nr_chunks && !w.err; i++) {
			const struct trace_chunk *c = &r.chunks[i];
			int head = c->type == TRACE_CHUNK_META && (c->stream == TRACE_META_HOST ||
								   c->stream == TRACE_META_HEADER_PAGE ||
								   c->stream == TRACE_META_EVENT);
			long n;

			if (head != !pass || c->type == TRACE_CHUNK_INDEX || c->type == TRACE_CHUNK_TRAILER ||
			    (c->type == TRACE_CHUNK_META && (c->stream == TRACE_META_PROCESS || c->stream == TRACE_META_KSYMS ||
							     c->stream == TRACE_META_OBJECT)))
				continue;
			n = trace_chunk_payload(&r, i, &rf.buf, &rf.alloc, err, sizeof(err));
			if (n < 0) {
				fprintf(stderr, "test-tool: %s\n", err);
				goto out;
			}
			if (c->type != TRACE_CHUNK_DATA) {
				trace_writer_add_copy(&w, c->type, c->stream, c->time, TRACE_CODEC_NONE, rf.buf, n, n, 0);
				continue;
			}
			/* DATA in pieces that fit a quarter of a segment, at record
			 * boundaries, each with its first record's time. */
			for (long at = 0, end; at < n && !w.err; at = end) {
				uint64_t nr = 0;
				uint16_t size;

				for (end = at; end + 8 <= n; end += size, nr++) {
					memcpy(&size, rf.buf + end + 6, 2);
					if (size < 8 || size > n - end || (nr && end + size - at > (long)seg / 4))
						break;
				}
				if (end == at)
					break;
				trace_writer_add_copy(&w, TRACE_CHUNK_DATA, c->stream, trace_record_time(rf.buf + at, n - at),
						      TRACE_CODEC_NONE, rf.buf + at, end - at, end - at, nr);
			}
		}
		if (!pass && !w.err) {
			w.ring_size = ((w.offset + 4095) & ~4095ull) + (uint64_t)nr_segs * seg;
			trace_writer_ring_begin(&w, 0, ringify_carry, &rf);
		}
	}
	if (trace_writer_finish(&w))
		fprintf(stderr, "test-tool: %s\n", trace_writer_strerror(&w));
	else
		ret = 0;
out:
	trace_writer_release(&w);
	close(fd);
	free(rf.buf);
	trace_reader_release(&r);
	return ret;
}

static int cmd_flip(const char *path, long off)
{
	int fd = open(path, O_RDWR);
	unsigned char b;

	if (fd < 0 || pread(fd, &b, 1, off) != 1) {
		perror(path);
		return 1;
	}
	b ^= 0xff;
	if (pwrite(fd, &b, 1, off) != 1) {
		perror(path);
		return 1;
	}
	close(fd);
	return 0;
}

static int cmd_grep(const char *path, const char *needle)
{
	struct trace_reader r;
	unsigned char *buf = NULL;
	size_t alloc = 0, n = strlen(needle), hits = 0;
	char err[512];

	if (trace_reader_open(&r, path, err, sizeof(err))) {
		fprintf(stderr, "test-tool: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < r.nr_chunks; i++) {
		long len;

		len = trace_chunk_payload(&r, i, &buf, &alloc, err, sizeof(err));
		if (len < 0) {
			fprintf(stderr, "test-tool: %s\n", err);
			free(buf);
			trace_reader_release(&r);
			return 1;
		}
		for (const unsigned char *p = buf, *end = buf + len;
		     n && (p = memmem(p, end - p, needle, n)); p++)
			hits++;
	}
	printf("matches %zu\n", hits);
	free(buf);
	trace_reader_release(&r);
	return 0;
}

/* ---- seeds ------------------------------------------------------------ */

static int seed_write(const char *dir, const char *kind, int n, const void *head, size_t hlen, const void *body,
		      size_t blen, const void *tail, size_t tlen)
{
	char path[4096];
	FILE *f;
	int bad;

	snprintf(path, sizeof(path), "%s/%s-%d", dir, kind, n);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "test-tool: cannot create '%s': %s\n", path, strerror(errno));
		return -1;
	}
	fwrite(head, 1, hlen, f);
	fwrite(body, 1, blen, f);
	fwrite(tail, 1, tlen, f);
	bad = ferror(f) | fclose(f);
	if (bad)
		fprintf(stderr, "test-tool: cannot write '%s'\n", path);
	return bad ? -1 : 0;
}

/* fuzz_chunk's layout: type, codec (0x80: let the writer compress it),
 * stream, time, payload. */
static int seed_chunk(const char *dir, int n, const struct trace_chunk *c, uint64_t time, const void *p, size_t len)
{
	unsigned char head[14];

	head[0] = c->type;
	head[1] = n & 1 ? 0x80 : 0;
	memcpy(head + 2, &c->stream, 4);
	memcpy(head + 6, &time, 8);
	return seed_write(dir, "chunk", n, head, sizeof(head), p, len, NULL, 0);
}

static int cmd_seeds(const char *path, const char *dir)
{
	struct trace_reader r;
	unsigned char *buf = NULL;
	size_t alloc = 0;
	int chunks = 0, objects = 0, bad = 0;
	char err[512];

	if (trace_reader_open(&r, path, err, sizeof(err))) {
		fprintf(stderr, "test-tool: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < r.nr_chunks && !bad; i++) {
		const struct trace_chunk *c = &r.chunks[i];
		long len;

		if (c->type == TRACE_CHUNK_META && (c->stream != TRACE_META_OBJECT || c->raw_len > 256 << 10))
			continue;
		len = trace_chunk_payload(&r, i, &buf, &alloc, err, sizeof(err));
		if (len < 0) {
			fprintf(stderr, "test-tool: %s\n", err);
			bad = 1;
			break;
		}
		if (c->type == TRACE_CHUNK_META) {
			/* object: 34 bytes of header and the path, then the ELF. */
			size_t skip = len >= 34 ? 34 + (size_t)(buf[32] | buf[33] << 8) : (size_t)len;
			unsigned char mode = len > 1 && buf[1] == 2 ? 1 : len > 1 && buf[1] == 3 ? 2 : 0;

			if (skip < (size_t)len)
				bad = seed_write(dir, "object", objects++, buf + skip, len - skip, NULL, 0, &mode, 1);
			continue;
		}
		if (c->type != TRACE_CHUNK_DATA) {
			bad = seed_chunk(dir, chunks++, c, c->time, buf, len);
			continue;
		}
		/* Pieces of at most 4 KiB, each starting at a record. */
		for (size_t at = 0; at < (size_t)len && !bad;) {
			size_t end = at;

			while (end + 8 <= (size_t)len) {
				size_t rs = buf[end + 6] | buf[end + 7] << 8;

				if (rs < 8 || end + rs > (size_t)len || (end > at && end + rs - at > 4096))
					break;
				end += rs;
			}
			if (end == at)
				break;
			bad = seed_chunk(dir, chunks++, c, trace_record_time(buf + at, end - at), buf + at, end - at);
			at = end;
		}
	}
	if (!bad)
		printf("chunks %d\nobjects %d\n", chunks, objects);
	free(buf);
	trace_reader_release(&r);
	return bad;
}

/* ---- restack ------------------------------------------------------------ */

struct ev_ids {
	uint64_t id, sample_type, regs_mask;
};

enum restack_mode { RS_UNPACK, RS_CUT, RS_NOREGS, RS_BADPACK };

/* Rewrite one sample into out (at least 64 KiB); returns its new size, or
 * 0 to copy it as it is. */
static size_t restack_sample(const unsigned char *rec, size_t size, const struct ev_ids *e, enum restack_mode mode,
			     uint64_t cut, unsigned char *out)
{
	uint64_t st = e->sample_type, v, abi = 0;
	static const uint64_t before[] = { PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID,
					   PERF_SAMPLE_TIME, PERF_SAMPLE_ADDR, PERF_SAMPLE_ID,
					   PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD };
	size_t off = 8, regs_at, nregs = 0, o;
	struct stackdump d = { 0 };
	struct perf_event_header h;
	int packed;
	uint64_t dump, dyn;

	memcpy(&h, rec, sizeof(h));
	packed = h.type == STACKDUMP_PACKED_SAMPLE;
	if (!(st & PERF_SAMPLE_STACK_USER))
		return 0;
	for (size_t i = 0; i < sizeof(before) / sizeof(before[0]); i++)
		off += st & before[i] ? 8 : 0;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		memcpy(&v, rec + off, 8);
		off += 8 + 8 * v;
	}
	if (st & PERF_SAMPLE_RAW) {
		uint32_t raw;

		memcpy(&raw, rec + off, 4);
		off += 4 + raw;
	}
	regs_at = off;
	if (st & PERF_SAMPLE_REGS_USER) {
		memcpy(&abi, rec + off, 8);
		nregs = abi ? (size_t)__builtin_popcountll(e->regs_mask) : 0;
		off += 8 + 8 * nregs;
	}
	if (off + 8 > size)
		return 0;
	if (mode == RS_BADPACK) {
		if (!packed)
			return 0;
		memcpy(out, rec, size);
		v = 1ull << 40;
		memcpy(out + off + 16, &v, 8);
		return size;
	}
	if (packed) {
		if (!stackdump_parse_packed(rec + off, size - off, &d))
			return 0;
		memcpy(&dump, rec + off, 8);
	} else {
		memcpy(&dump, rec + off, 8);
		if (!dump)
			return 0;
		d.bytes = rec + off + 8;
		memcpy(&d.size, rec + off + 8 + dump, 8);
	}
	dyn = d.size;
	if (mode == RS_CUT && dyn > cut)
		dyn = cut;
	/* The fields before the registers, the registers (or not), then the
	 * dump in the kernel's layout. */
	memcpy(out, rec, regs_at);
	o = regs_at;
	if (st & PERF_SAMPLE_REGS_USER) {
		if (mode == RS_NOREGS) {
			memset(out + o, 0, 8);
			o += 8;
		} else {
			memcpy(out + o, rec + regs_at, 8 + 8 * nregs);
			o += 8 + 8 * nregs;
		}
	}
	memcpy(out + o, &dump, 8);
	memset(out + o + 8, 0, dump);
	for (uint64_t k = 0; k < dyn; k += 8)
		stackdump_read(&d, NULL, k, out + o + 8 + k, dyn - k < 8 ? dyn - k : 8);
	memcpy(out + o + 8 + dump, &dyn, 8);
	o += 16 + dump;
	h.type = PERF_RECORD_SAMPLE;
	h.size = (uint16_t)o;
	memcpy(out, &h, sizeof(h));
	return o;
}

static int cmd_restack(const char *in, const char *outp, const char *how)
{
	struct trace_reader r;
	struct trace_writer w;
	struct ev_ids *ids = NULL;
	size_t nr_ids = 0, alloc = 0, rewritten = 0;
	uint64_t bytes_in = 0, bytes_out = 0;
	unsigned char *buf = NULL, *out = NULL, *rec = malloc(1 << 16);
	enum restack_mode mode;
	uint64_t cut = 0;
	char err[512];
	int fd, ret = 1;

	if (!strcmp(how, "unpack"))
		mode = RS_UNPACK;
	else if (!strncmp(how, "cut=", 4))
		mode = RS_CUT, cut = strtoull(how + 4, NULL, 0);
	else if (!strcmp(how, "noregs"))
		mode = RS_NOREGS;
	else if (!strcmp(how, "badpack"))
		mode = RS_BADPACK;
	else {
		fprintf(stderr, "test-tool: unknown restack mode '%s'\n", how);
		return 2;
	}
	if (trace_reader_open(&r, in, err, sizeof(err))) {
		fprintf(stderr, "test-tool: %s\n", err);
		return 1;
	}
	fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || !rec) {
		perror(outp);
		trace_reader_release(&r);
		return 1;
	}
	trace_writer_init_fd(&w, fd, &(struct trace_writer_opts){ .codec = TRACE_CODEC_ZSTD, .level = 1, .file_flags = r.file_flags, .created_ns = r.created_ns });
	for (size_t i = 0; i < r.nr_chunks; i++) {
		const struct trace_chunk *c = &r.chunks[i];
		long n;

		if (c->type == TRACE_CHUNK_INDEX || c->type == TRACE_CHUNK_TRAILER)
			continue;
		n = trace_chunk_payload(&r, i, &buf, &alloc, err, sizeof(err));
		if (n < 0) {
			fprintf(stderr, "test-tool: %s\n", err);
			goto out;
		}
		if (c->type == TRACE_CHUNK_LOSS) {
			for (long o = 0; o + 16 <= n; o += 16) {
				struct trace_loss l = { 0 };

				memcpy(&l.cpu, buf + o, 4);
				memcpy(&l.lost, buf + o + 8, 8);
				trace_writer_add_loss(&w, &l, 1);
			}
			continue;
		}
		if (c->type == TRACE_CHUNK_META && c->stream == TRACE_META_EVENT && n >= 24) {
			uint32_t as, nid;
			struct perf_event_attr a = { 0 };

			memcpy(&as, buf + 4, 4);
			memcpy(&nid, buf + 8, 4);
			memcpy(&a, buf + 24, as < sizeof(a) ? as : sizeof(a));
			ids = realloc(ids, (nr_ids + nid) * sizeof(*ids));
			for (uint32_t k = 0; ids && k < nid; k++) {
				memcpy(&ids[nr_ids].id, buf + 24 + as + 8 * k, 8);
				ids[nr_ids].sample_type = a.sample_type;
				ids[nr_ids++].regs_mask = a.sample_regs_user;
			}
		}
		if (c->type == TRACE_CHUNK_DATA) {
			size_t o = 0, outlen = 0, cap = (size_t)n * 2 + (1 << 17);
			uint64_t nrec = 0;

			out = realloc(out, cap);
			for (long off = 0; out && off + 8 <= n; off += o, nrec++) {
				struct perf_event_header h;
				size_t sz = 0;
				uint64_t id;

				/* A dump grows back to its kernel size: at most 64 KiB
				 * a record, which a packed one may be a fiftieth of. */
				if (outlen + (1 << 17) > cap) {
					unsigned char *v = realloc(out, cap *= 2);

					if (!v) {
						free(out);
						out = NULL;
						break;
					}
					out = v;
				}
				memcpy(&h, buf + off, sizeof(h));
				o = h.size;
				if (o < 8 || o > (size_t)(n - off))
					break;
				if ((h.type == PERF_RECORD_SAMPLE || h.type == STACKDUMP_PACKED_SAMPLE) && o >= 16) {
					memcpy(&id, buf + off + 8, 8);
					for (size_t k = 0; k < nr_ids; k++)
						if (ids[k].id == id) {
							sz = restack_sample(buf + off, o, &ids[k], mode, cut, rec);
							break;
						}
				}
				memcpy(out + outlen, sz ? rec : buf + off, sz ? sz : o);
				outlen += sz ? sz : o;
				rewritten += sz != 0;
			}
			if (!out)
				goto out;
			bytes_in += n;
			bytes_out += outlen;
			trace_writer_add(&w, TRACE_CHUNK_DATA, c->stream, c->time, out, outlen, nrec);
			continue;
		}
		trace_writer_add(&w, c->type, c->stream, c->time, buf, n, 0);
	}
	if (trace_writer_finish(&w)) {
		fprintf(stderr, "test-tool: %s\n", trace_writer_strerror(&w));
		goto out;
	}
	printf("rewrote %zu samples, DATA %llu bytes before, %llu after\n", rewritten, (unsigned long long)bytes_in,
	       (unsigned long long)bytes_out);
	ret = 0;
out:
	trace_writer_release(&w);
	close(fd);
	trace_reader_release(&r);
	free(buf);
	free(out);
	free(rec);
	free(ids);
	return ret;
}

/* ---- stackdump ------------------------------------------------------------ */

static int tap_nr;
static int tap_ok(int ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++tap_nr, what);
	return ok;
}

/* A kernel STACK_USER field of size bytes, dyn of them copied, of a shape:
 * 0 every seventh word non-zero, 1 every word, 2 only the last, 3 none. */
static size_t make_field(unsigned char *f, uint64_t size, uint64_t dyn, int shape)
{
	memcpy(f, &size, 8);
	memset(f + 8, 0, size);
	for (uint64_t i = 0; i < dyn / 8; i++) {
		uint64_t v = 0x7ffd00000000ull + i * 0x10001;
		int keep = shape == 0 ? i % 7 == 3 : shape == 1 ? 1 : shape == 2 ? i == dyn / 8 - 1 : 0;

		if (keep)
			memcpy(f + 8 + 8 * i, &v, 8);
	}
	memcpy(f + 8 + size, &dyn, 8);
	return 16 + size;
}

static int cmd_stackdump(void)
{
	static unsigned char field[16 + 65536], packed[16 + 65536];
	const uint64_t sizes[][2] = { { 8192, 8192 }, { 8192, 5000 }, { 8192, 8 }, { 512, 512 }, { 65528, 65528 },
				      { 8192, 0 }, { 8192, 4095 } };
	const char *shapes[] = { "sparse", "dense", "last word only", "all zero" };
	int fails = 0;

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int shape = 0; shape < 4; shape++) {
			uint64_t size = sizes[s][0], dyn = sizes[s][1];
			size_t flen = make_field(field, size, dyn, shape), plen = stackdump_pack(field, flen, packed);
			struct stackdump d;
			struct stackdump_rank rank;
			char what[160];
			int ok = 1;

			snprintf(what, sizeof(what), "%s dump of %llu of %llu bytes: %s", shapes[shape],
				 (unsigned long long)dyn, (unsigned long long)size,
				 plen ? "packed, every byte reads back" : "left as it is (packing would not shrink it)");
			if (!plen) {
				/* Only a dump that is mostly non-zero stays. */
				fails += !tap_ok(shape == 1 || dyn < 16, what);
				continue;
			}
			ok = stackdump_parse_packed(packed, plen, &d) == plen && d.size == dyn && plen < flen;
			stackdump_rank(&d, &rank);
			for (uint64_t off = 0; ok && off < dyn; off++)
				for (size_t len = 1; ok && len <= 8 && off + len <= dyn; len++) {
					unsigned char a[8];

					/* With the rank table and without. */
					ok = !stackdump_read(&d, len % 2 ? &rank : NULL, off, a, len) &&
					     !memcmp(a, field + 8 + off, len);
				}
			{
				uint64_t v;

				ok = ok && stackdump_read(&d, &rank, dyn, &v, 1) && stackdump_read(&d, NULL, dyn - 1, &v, 2);
			}
			/* Each cut of the packed field is refused. */
			for (size_t cutlen = 0; ok && cutlen < plen; cutlen += 8)
				ok = !stackdump_parse_packed(packed, cutlen, &d);
			fails += !tap_ok(ok, what);
		}
	{
		/* Fields that lie: more words than the dump has, dyn_size past size. */
		size_t flen = make_field(field, 8192, 8192, 0), plen = stackdump_pack(field, flen, packed);
		struct stackdump d;
		uint64_t v = 8193;

		memcpy(packed + 16, &(uint64_t){ 1025 }, 8);
		fails += !tap_ok(!stackdump_parse_packed(packed, plen, &d), "a word count past the dump is refused");
		stackdump_pack(field, flen, packed);
		memcpy(packed + 8, &v, 8);
		fails += !tap_ok(!stackdump_parse_packed(packed, plen, &d), "a dyn_size past the size is refused");
		/* A non-zero byte in a last partial word cannot be packed. */
		make_field(field, 64, 60, 0);
		field[8 + 58] = 1;
		fails += !tap_ok(!stackdump_pack(field, 80, packed), "a dump with data in a last partial word is not packed");
	}
	printf("1..%d\n", tap_nr);
	return fails ? 1 : 0;
}

static int cmd_reembed(const char *in, const char *out, int mode, const char *bid_hex, const char *file)
{
	struct trace_reader r;
	struct trace_writer w;
	struct trace_writer_opts o = { .codec = TRACE_CODEC_ZSTD, .level = 1 };
	unsigned char bid[20], *buf = NULL, *forged = NULL;
	size_t alloc = 0, bl = strlen(bid_hex) / 2, flen = 0, replaced = 0;
	char err[512];
	int fd, ret = 1;
	FILE *f;

	for (size_t i = 0; i < bl && i < sizeof(bid); i++)
		sscanf(bid_hex + 2 * i, "%2hhx", &bid[i]);
	if (!(f = fopen(file, "rb"))) {
		perror(file);
		return 1;
	}
	for (size_t n; (forged = realloc(forged, flen + 65536)) && (n = fread(forged + flen, 1, 65536, f)) > 0;)
		flen += n;
	fclose(f);
	if (!forged || trace_reader_open(&r, in, err, sizeof(err))) {
		fprintf(stderr, "test-tool: %s\n", forged ? err : "out of memory");
		free(forged);
		return 1;
	}
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(out);
		goto out;
	}
	trace_writer_init_fd(&w, fd, &o);
	for (size_t i = 0; i < r.nr_chunks && !w.err; i++) {
		const struct trace_chunk *c = &r.chunks[i];
		const unsigned char *p = r.base + c->offset + TRACE_CHUNK_HEADER_SIZE;

		if (c->type == TRACE_CHUNK_INDEX || c->type == TRACE_CHUNK_TRAILER)
			continue;
		if (c->type == TRACE_CHUNK_META && c->stream == TRACE_META_OBJECT) {
			long n = trace_chunk_payload(&r, i, &buf, &alloc, err, sizeof(err));
			uint16_t pl;

			if (n >= 34 && buf[1] == mode && buf[2] == bl && !memcmp(buf + 4, bid, bl)) {
				unsigned char *e;
				uint64_t size = flen;

				memcpy(&pl, buf + 32, 2);
				if (!(e = malloc(34 + pl + flen)))
					goto out_w;
				memcpy(e, buf, 34 + pl);
				memcpy(e + 24, &size, 8);
				memcpy(e + 34 + pl, forged, flen);
				trace_writer_add(&w, TRACE_CHUNK_META, TRACE_META_OBJECT, c->time, e, 34 + pl + flen, 0);
				free(e);
				replaced++;
				continue;
			}
		}
		trace_writer_add_copy(&w, c->type, c->stream, c->time, c->codec, p, c->payload_len, c->raw_len, 0);
	}
	if (trace_writer_finish(&w))
		fprintf(stderr, "test-tool: %s\n", trace_writer_strerror(&w));
	else if (!replaced)
		fprintf(stderr, "test-tool: no embedded object of build-id %s and mode %d in %s\n", bid_hex, mode, in);
	else
		ret = 0;
out_w:
	trace_writer_release(&w);
	close(fd);
out:
	free(buf);
	free(forged);
	trace_reader_release(&r);
	return ret;
}

static int cmd_zbomb(const char *path, unsigned long mib)
{
	static unsigned char zero[1 << 16], out[1 << 16];
	uint64_t size = (uint64_t)mib << 20;
	unsigned char head[12] = "ZLIB";
	z_stream z = { 0 };
	FILE *f = fopen(path, "wb");
	int ret = 1;

	if (!f || deflateInit(&z, 9) != Z_OK) {
		perror(path);
		return 1;
	}
	for (int i = 0; i < 8; i++)
		head[4 + i] = size >> (56 - 8 * i);
	fwrite(head, 1, sizeof(head), f);
	for (uint64_t left = size;;) {
		uInt n = left < sizeof(zero) ? (uInt)left : sizeof(zero);
		int flush = n == left ? Z_FINISH : Z_NO_FLUSH, r;

		z.next_in = zero;
		z.avail_in = n;
		left -= n;
		do {
			z.next_out = out;
			z.avail_out = sizeof(out);
			r = deflate(&z, flush);
			fwrite(out, 1, sizeof(out) - z.avail_out, f);
		} while (z.avail_out == 0);
		if (r == Z_STREAM_END) {
			ret = 0;
			break;
		}
		if (flush == Z_FINISH)
			break;
	}
	deflateEnd(&z);
	if (fclose(f))
		ret = 1;
	return ret;
}

int main(int argc, char **argv)
{
	int ret;

	if (argc >= 3 && !strcmp(argv[1], "write"))
		return cmd_write(argc, argv);
	if (argc >= 6 && !strcmp(argv[1], "follow"))
		return cmd_follow(argc, argv);
	if (argc == 7 && !strcmp(argv[1], "reembed"))
		return cmd_reembed(argv[2], argv[3], atoi(argv[4]), argv[5], argv[6]);
	if (argc == 4 && !strcmp(argv[1], "zbomb"))
		return cmd_zbomb(argv[2], strtoul(argv[3], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "read"))
		return cmd_read(argv[2]);
	if (argc == 6 && !strcmp(argv[1], "ringify"))
		return cmd_ringify(argv[2], argv[3], strtoul(argv[4], NULL, 10), strtoul(argv[5], NULL, 10));
	if (argc == 2 && !strcmp(argv[1], "roundtrip"))
		return cmd_roundtrip();
	if (argc == 4 && !strcmp(argv[1], "flip"))
		return cmd_flip(argv[2], strtol(argv[3], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "grep"))
		return cmd_grep(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "restack"))
		return cmd_restack(argv[2], argv[3], argv[4]);
	if (argc == 2 && !strcmp(argv[1], "stackdump"))
		return cmd_stackdump();
	if (argc == 4 && !strcmp(argv[1], "seeds"))
		return cmd_seeds(argv[2], argv[3]);
	if ((ret = unit_main(argc, argv)) >= 0)
		return ret;
	fprintf(stderr, "usage: test-tool write|read|ringify|roundtrip|flip|grep|restack|stackdump|seeds|\n"
			"                 hashmap|suppress|json|symcheck|catalog ...\n");
	return 2;
}
