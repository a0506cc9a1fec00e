/*
 * formats/trace.c: what the writer and the reader of the trace file share:
 * the names of chunk types, codecs and meta kinds, the chunk CRC, and where
 * a perf record keeps its time.
 *
 * The rest of the format lives beside it: trace_write.c (the writer),
 * trace_read.c (the scan that checks every chunk, and decompression) and
 * trace_merge.c (record visits in time order across the per-CPU streams).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "stackdump.h"
#include "trace_int.h"

uint32_t trace_chunk_crc(uint32_t seed, const unsigned char *hdr, const unsigned char *payload, size_t len)
{
	uLong c = seed;

	c = crc32(c, hdr, 20);
	c = crc32(c, hdr + 24, 8);
	/* zlib's crc32 takes a uInt length; payloads are capped well below it. */
	c = crc32(c, payload, (uInt)len);
	return (uint32_t)c;
}

uint32_t trace_chunk_crc_known(uint32_t seed, const unsigned char *hdr, uint32_t payload_crc, size_t len)
{
	uLong c = seed;

	c = crc32(c, hdr, 20);
	c = crc32(c, hdr + 24, 8);
	return (uint32_t)crc32_combine(c, payload_crc, (z_off_t)len);
}

/* A segment's chunks are checked against its sequence number: what an
 * older pass of the ring left behind in it fails, so a reader stops where
 * the current pass's writing did. */
uint32_t trace_segment_seed(uint64_t seq)
{
	unsigned char b[8];

	put64(b, seq);
	return (uint32_t)crc32(crc32(0, NULL, 0), b, 8);
}

const char *trace_chunk_type_name(unsigned type)
{
	switch (type) {
	case TRACE_CHUNK_META: return "META";
	case TRACE_CHUNK_DATA: return "DATA";
	case TRACE_CHUNK_LOSS: return "LOSS";
	case TRACE_CHUNK_INDEX: return "INDEX";
	case TRACE_CHUNK_TRAILER: return "TRAILER";
	case TRACE_CHUNK_SEGMENT: return "SEGMENT";
	case TRACE_CHUNK_STATE: return "STATE";
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
	case TRACE_META_SNAPSHOT: return "snapshot";
	case TRACE_META_OBJECTS: return "objects";
	case TRACE_META_CGROUPS: return "cgroups";
	case TRACE_META_NSPIDS: return "nspids";
	case TRACE_META_JITMAP: return "jitmap";
	case TRACE_META_PROBES: return "probes";
	case TRACE_META_LOST: return "lost";
	}
	return "unknown";
}

int trace_error_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

uint64_t trace_records_count(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t nr = 0;

	for (size_t off = 0; off + 8 <= len;) {
		uint16_t size = get16(p + off + 6);

		if (size < 8 || size > len - off)
			break;
		off += size;
		nr++;
	}
	return nr;
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

int trace_chunk_last_sample(struct trace_reader *r, size_t i, uint64_t *time, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t alloc = 0, off = 0;
	long n = trace_chunk_payload(r, i, &buf, &alloc, err, errlen);

	*time = 0;
	/* Records come nearly in time order within a chunk: the latest, not
	 * the last. A malformed one ends the walk; the replay says so. */
	while (n > 0 && (size_t)n - off >= 8) {
		uint32_t type = get32(buf + off), size = get16(buf + off + 6);
		uint64_t t;

		if (size < 8 || size % 8 || size > (size_t)n - off)
			break;
		t = type == PERF_RECORD_SAMPLE_TYPE || type == STACKDUMP_PACKED_SAMPLE ? trace_record_time(buf + off, size)
										 : 0;
		if (t > *time)
			*time = t;
		off += size;
	}
	free(buf);
	return n < 0 && n != TRACE_CHUNK_GONE ? -1 : 0;
}
