/*
 * formats/trace_int.h: what the trace writer, reader and merge share and
 * nothing else sees: byte order helpers, sizes fixed by FORMAT.md, the
 * chunk CRC and the reader's error and decode helpers.
 */
#ifndef MEMSIGHT_TRACE_INT_H
#define MEMSIGHT_TRACE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

#define INDEX_EVERY 1024
/* How much later than the records around it a record can reach the file
 * (a CPU's chunk flushed late): what a reader of a ring's recent
 * segments, or of a live trace as it grows, allows for. */
#define RECENT_MARGIN_NS 2000000000ull
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

static inline void put16(unsigned char *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static inline void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static inline void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

static inline uint16_t get16(const unsigned char *p)
{
	return p[0] | p[1] << 8;
}

static inline uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}


/* seed 0 for a linear file's chunks; a ring segment's chunks start from
 * trace_segment_seed(seq). */
uint32_t trace_chunk_crc(uint32_t seed, const unsigned char *hdr, const unsigned char *payload, size_t len);
/* The same from the payload's own CRC (zlib's crc32 of it from 0), where
 * it is known: no pass over the payload. */
uint32_t trace_chunk_crc_known(uint32_t seed, const unsigned char *hdr, uint32_t payload_crc, size_t len);
uint32_t trace_segment_seed(uint64_t seq);
/* Formats into err (when given) and returns -1. */
int trace_error_set(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Chunk i's payload as stored, at *src: in place, or for a live ring's
 * chunk a copy checked again, in *copy (the caller frees it). Returns 0,
 * -1 with a reason, or TRACE_CHUNK_GONE when its recorder overwrote it. */
int trace_chunk_stored(const struct trace_reader *r, size_t i, const unsigned char **src, unsigned char **copy,
		       char *err, size_t errlen);
/* Decompresses chunk i with the zstd context *dctx, made on first use. */
long trace_chunk_decode(const struct trace_reader *r, void **dctx, size_t i, unsigned char **buf,
			size_t *alloc, char *err, size_t errlen);
/* Chunk i's bytes, once read, out of this process's memory. */
void trace_chunk_drop(const struct trace_reader *r, size_t i);
/* The file's bytes [off, off + len) out of this process's memory: a
 * read-only mapping refaults them if they are read again. */
void trace_range_drop(const struct trace_reader *r, uint64_t off, uint64_t len);

#endif
