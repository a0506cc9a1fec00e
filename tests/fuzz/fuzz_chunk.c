/*
 * tests/fuzz/fuzz_chunk.c: one chunk, behind the META of a real trace.
 *
 * The input's first byte is the chunk's type, the second its codec (the
 * high bit: compress the rest with the trace's own writer, so that the
 * records the reader decodes are the input's bytes), then 4 bytes of
 * stream, 8 of time, then the payload. The chunk follows the header and
 * META chunks of samples/traces/xor-8m.trace, with a good CRC, so what is
 * fuzzed is what lies behind the framing: decompression, records, samples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../../analyze/cmd/cmd.h"
#include "../../formats/trace.h"
#include "fuzz.h"

#ifndef FUZZ_TEMPLATE
#define FUZZ_TEMPLATE "samples/traces/xor-8m.trace"
#endif

static unsigned char *prefix;
static size_t prefix_len;

static const struct {
	int (*fn)(int argc, char **argv, struct analyze_opts *a);
	const char *args[6];
} runs[] = {
	{ cmd_info, { "info", "--dump" } },
	{ cmd_events, { "events" } },
	{ cmd_report, { "report" } },
	{ cmd_folded, { "folded", "-e", "mmap", "-w", "bytes" } },
	{ cmd_faults, { "faults" } },
};

/* The template's file header and the META chunks before its first DATA. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("FUZZ_TEMPLATE") ? getenv("FUZZ_TEMPLATE") : FUZZ_TEMPLATE;
	struct trace_reader r;
	char err[256];

	(void)argc;
	(void)argv;
	fuzz_env();
	if (trace_reader_open(&r, path, err, sizeof(err))) {
		fprintf(stderr, "fuzz_chunk: %s\n", err);
		exit(1);
	}
	prefix_len = TRACE_FILE_HEADER_SIZE;
	for (size_t i = 0; i < r.nr_chunks && r.chunks[i].type == TRACE_CHUNK_META; i++)
		prefix_len = r.chunks[i].offset + TRACE_CHUNK_HEADER_SIZE + r.chunks[i].payload_len;
	prefix = malloc(prefix_len);
	memcpy(prefix, r.base, prefix_len);
	trace_reader_release(&r);
	return 0;
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace_writer w;
	struct trace_writer_opts o = { TRACE_CODEC_ZSTD, 1, 0, 0 };
	const void *payload;
	size_t plen, raw, len;
	unsigned char *file, *h;
	uint32_t crc;
	int codec, fd;
	char path[64];

	if (size < 14)
		return 0;
	payload = data + 14;
	plen = raw = size - 14;
	codec = data[1] & 3;
	trace_writer_init_mem(&w, &o);
	if (data[1] & 0x80) {
		codec = trace_writer_encode(&w, data + 14, size - 14, &payload, &plen);
		if (codec < 0) {
			trace_writer_release(&w);
			return 0;
		}
	}
	len = prefix_len + TRACE_CHUNK_HEADER_SIZE + plen;
	file = malloc(len);
	memcpy(file, prefix, prefix_len);
	h = file + prefix_len;
	put32(h, TRACE_CHUNK_MAGIC);
	h[4] = data[0] % 6;
	h[5] = 0;
	h[6] = codec;
	h[7] = 0;
	memcpy(h + 8, data + 2, 4);
	put32(h + 12, (uint32_t)plen);
	put32(h + 16, (uint32_t)raw);
	memcpy(h + 24, data + 6, 8);
	memcpy(h + 32, payload, plen);
	/* FORMAT.md: header bytes 0..19, then 24..31, then the payload. */
	crc = crc32(0, h, 20);
	crc = crc32(crc, h + 24, 8);
	crc = crc32(crc, h + 32, plen);
	put32(h + 20, crc);
	trace_writer_release(&w);
	fd = fuzz_memfd(file, len, path, sizeof(path));
	free(file);
	if (fd < 0)
		return 0;
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
		fuzz_command(runs[i].fn, runs[i].args, path);
	close(fd);
	return 0;
}
