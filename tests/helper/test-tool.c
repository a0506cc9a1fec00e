/*
 * tests/helper/test-tool.c: exposes formats/ to the shell tests.
 *
 *   test-tool write FILE [--codec none|zstd|zlib] [--records N] [--no-trailer]
 *       a synthetic trace: host META, N SAMPLE records spread over two
 *       streams with interleaved times, LOSS, INDEX, TRAILER
 *   test-tool read FILE
 *       reads it back; prints records, meta, loss, whether time order held
 *       and every record came right after the one before it (sequence),
 *       completeness and where reading stopped; exit 1 when unreadable
 *   test-tool roundtrip
 *       in-memory write/read of every codec, payloads compared byte for byte (TAP)
 *   test-tool flip FILE OFFSET
 *       inverts one byte
 *   test-tool grep FILE STRING
 *       how many times STRING occurs in the DATA chunks, decompressed
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../formats/trace.h"

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

static int build(struct trace_writer *w, unsigned long n, int trailer)
{
	unsigned char *buf[2];
	size_t len[2] = { 0, 0 };
	uint64_t nr[2] = { 0, 0 }, first[2] = { 0, 0 };
	struct trace_loss loss[2] = { { 0, 0, 0 }, { 1, 0, 3 } };

	trace_writer_add(w, TRACE_CHUNK_META, TRACE_META_HOST, 0, host, strlen(host), 0);
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
	uint64_t last, lost;
};

static int on_meta(uint32_t kind, const void *d, size_t l, void *arg)
{
	(void)kind;
	(void)d;
	(void)l;
	((struct counts *)arg)->meta++;
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
	trace_reader_release(&r);
	return 0;
}

static int cmd_roundtrip(void)
{
	const char *names[] = { "none", "zstd", "zlib" };
	int n = 0, bad = 0;

	for (int k = 0; k < 3; k++) {
		struct trace_writer w;
		struct trace_writer_opts o = { codec_of(names[k]), 0, 0, 1 };
		struct trace_reader r;
		unsigned char *file, *payload = NULL, expect[48];
		size_t flen, alloc = 0;
		char err[256];
		int ok = 1;
		unsigned long seen = 0;

		trace_writer_init_mem(&w, &o);
		build(&w, 5000, 1);
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
	struct trace_writer_opts o = { TRACE_CODEC_ZSTD, 0, 0, 0 };
	unsigned long n = 5000;
	int trailer = 1, fd, r;

	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--codec") && i + 1 < argc)
			o.codec = codec_of(argv[++i]);
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
	r = build(&w, n, trailer);
	if (r)
		fprintf(stderr, "test-tool: %s\n", trace_writer_strerror(&w));
	trace_writer_release(&w);
	close(fd);
	return r ? 1 : 0;
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

		if (r.chunks[i].type != TRACE_CHUNK_DATA)
			continue;
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

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "write"))
		return cmd_write(argc, argv);
	if (argc == 3 && !strcmp(argv[1], "read"))
		return cmd_read(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "roundtrip"))
		return cmd_roundtrip();
	if (argc == 4 && !strcmp(argv[1], "flip"))
		return cmd_flip(argv[2], strtol(argv[3], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "grep"))
		return cmd_grep(argv[2], argv[3]);
	fprintf(stderr, "usage: test-tool write|read|roundtrip|flip|grep ...\n");
	return 2;
}
