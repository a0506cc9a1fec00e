/*
 * formats/trace.h: the on-disk memsight trace, version 2.
 *
 * Owns the file header, the chunk layout, the writer (first error sticks,
 * later calls are no-ops, the error is reported once at finish) and the
 * reader (validates every chunk, stops at the first bad one and says where,
 * visits meta items and then perf records in time order across CPUs).
 *
 * Knows nothing of perf_event_open, tracefs, libdw or symbols: DATA chunks
 * hold perf records (verbatim, but for packed stack dumps) and the only
 * thing read from them is their timestamp, at the position FORMAT.md
 * fixes. formats/FORMAT.md is the byte-level specification and must stay
 * true to this file.
 */
#ifndef MEMSIGHT_TRACE_H
#define MEMSIGHT_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TRACE_MAGIC "MEMSIGHT"
/* 3: the ring layout (flight recorder, FORMAT.md); only ring files carry
 * it, so a linear file stays readable by version 2 readers.
 * 2: DATA may hold packed samples (stackdump.h); 1 had none. */
#define TRACE_VERSION 3
#define TRACE_VERSION_LINEAR 2
#define TRACE_FILE_HEADER_SIZE 64
#define TRACE_CHUNK_HEADER_SIZE 32
#define TRACE_CHUNK_MAGIC 0x4b43534du /* "MSCK" read as a little-endian u32 */
/* A chunk's payload is capped so that a corrupt length cannot make a reader
 * allocate gigabytes; writers split anything larger. */
#define TRACE_CHUNK_MAX (64u << 20)
/* Stream number of DATA chunks whose records came from no CPU ring. */
#define TRACE_STREAM_NONE 0xffffffffu
/* DATA: the samples of the allocation sampler's stream (record/sampler/stream.h). */
#define TRACE_STREAM_WRAPPER 0xfffffffeu
/* DATA: a CPU's second ring, which holds only the deep-stacks samples
 * (catalog.h), so that its overflow costs no other event: this plus the
 * CPU. */
#define TRACE_STREAM_DEEP 0x40000000u

enum trace_chunk_type {
	TRACE_CHUNK_META = 1,
	TRACE_CHUNK_DATA = 2,
	TRACE_CHUNK_LOSS = 3,
	TRACE_CHUNK_INDEX = 4,
	TRACE_CHUNK_TRAILER = 5,
	TRACE_CHUNK_SEGMENT = 6, /* ring: starts a segment, says its place in the ring */
	TRACE_CHUNK_STATE = 7,	 /* ring: a META payload restating the state a segment starts from */
};

enum trace_codec {
	TRACE_CODEC_NONE = 0,
	TRACE_CODEC_ZSTD = 1,
	TRACE_CODEC_ZLIB = 2,
};

/* The stream field of a META chunk says what its payload is. */
enum trace_meta_kind {
	TRACE_META_HOST = 1,	    /* "key value\n" text: host, kernel, clocks, command */
	TRACE_META_HEADER_PAGE = 2, /* tracefs events/header_page, verbatim */
	TRACE_META_EVENT = 3,	    /* one event: attr, ids, names, format text */
	TRACE_META_PROCESS = 4,	    /* /proc snapshot of one process, with build-ids */
	TRACE_META_KSYMS = 5,	    /* kallsyms lines for the kernel text stacks hit */
	TRACE_META_BUILDIDS = 6,    /* "buildid\tpath\n" for objects seen without one */
	TRACE_META_STATS = 7,	    /* "key value\n" text written when recording ends */
	TRACE_META_OBJECT = 8,	    /* an object embedded for unwinding and symbols */
	TRACE_META_OOM = 9,	    /* the system's state when an OOM kill was recorded */
	TRACE_META_REACH = 10,	    /* a scan of a stopped process's memory for pointers (--leak-check) */
	TRACE_META_SNAPSHOT = 11,   /* "key value\n" text: the trigger that cut this window from a ring */
	TRACE_META_OBJECTS = 12,    /* "buildid\tstate\tpath\n": the objects stacks touched, carried or why not */
	TRACE_META_CGROUPS = 13,    /* "id\tpath\n": the cgroups whose ids samples carry */
	TRACE_META_NSPIDS = 14,	    /* "pid\tnspid\n": processes in pid namespaces, and their pid there */
	TRACE_META_JITMAP = 15,	    /* a runtime's perf map or jitdump: a header line, then the file's bytes */
	TRACE_META_PROBES = 16,	    /* "pid\tlate_ns\tpath\n": allocators probed while recording, per process */
	TRACE_META_LOST = 17,	    /* "lost N\n": the events lost so far, written while recording */
};

/* Where memsight record writes without -o, and what an analyzer reads
 * when it is given no trace (as perf's perf.data). */
#define TRACE_DEFAULT_PATH "memsight.trace"

/* The most ELF bytes an OBJECT entry holds: the recorder embeds nothing
 * bigger, and a reader refuses an entry that claims more. */
#define TRACE_OBJECT_MAX ((64u << 20) - 4096)
/* What a reader lets a trace's OBJECT entries expand to, their ELF bytes
 * and the compressed sections in them together: TRACE_OBJECT_GROWTH times
 * the trace's size, and TRACE_OBJECT_SLACK more. ELF stored compressed
 * takes 2 to 4 times less room; a bomb of zeros, thousands of times. */
#define TRACE_OBJECT_GROWTH 32u
#define TRACE_OBJECT_SLACK (256ull << 20)

/* The path of an OBJECT entry holding the kernel's vDSO image, which has
 * no file: as the vDSO's mappings are named. */
#define TRACE_OBJECT_VDSO "[vdso]"

enum trace_file_flags {
	TRACE_FILE_RING = 1 << 0,   /* flight recorder: segments overwritten oldest first */
	TRACE_FILE_WINDOW = 1 << 1, /* a linear copy of a ring's window: what came before was overwritten */
};

/* A ring is cut into at most this many segments, each at least
 * TRACE_RING_SEGMENT_MIN bytes: the oldest segment goes as a whole, so
 * more of them keep the window closer to the ring's size. */
#define TRACE_RING_SEGMENTS 16
#define TRACE_RING_SEGMENT_MIN (2u << 20)
#define TRACE_SEGMENT_SIZE 32 /* a SEGMENT chunk's payload */

/* What a reader learns of a ring: where its window starts in the life of
 * the recording. */
struct trace_ring_info {
	uint64_t start;		  /* offset of the first segment */
	uint64_t segment_size;
	uint32_t nr_segments;	  /* in the file */
	uint32_t segments;	  /* in the window: good ones, oldest first */
	uint64_t first_seq, last_seq;
	uint64_t overwritten_bytes;   /* chunk bytes written before the window */
	uint64_t overwritten_records; /* perf records in them */
	uint64_t first_time;	      /* when the window's oldest segment began */
	uint32_t passed;	      /* window's segments not read (trace_reader_open_recent) */
	uint64_t last_offset;	      /* the newest segment's place in the file */
	uint64_t last_end;	      /* where its good chunks end: a live ring is read on from there */
	unsigned moved;		      /* times trace_reader_more moved the window's oldest segment on */
};

/* A LOSS entry for events the kernel's counters show were lost but no
 * PERF_RECORD_LOST reported (see FORMAT.md). */
#define TRACE_LOSS_UNREPORTED 0xffffffffu

/* Which of a CPU's rings a LOSS entry counts. */
enum trace_loss_ring { TRACE_LOSS_EVENTS = 0, TRACE_LOSS_DEEP = 1 };

struct trace_loss {
	uint32_t cpu;
	uint32_t ring; /* enum trace_loss_ring */
	uint64_t lost; /* records the kernel could not put in this CPU's ring */
};

struct trace_trailer {
	uint64_t index_offset; /* offset of the last INDEX chunk, 0 if none */
	uint64_t nr_chunks;    /* chunks before the trailer */
	uint64_t nr_records;   /* perf records in all DATA chunks */
	uint64_t lost;	       /* sum of all LOSS entries */
	uint64_t first_time;
	uint64_t last_time;
};

struct trace_index_entry {
	uint64_t offset;
	uint16_t type;
	uint16_t codec;
	uint32_t stream;
	uint64_t time;
};

/* ---- writer ---------------------------------------------------------- */

struct trace_writer_opts {
	enum trace_codec codec;
	int level;	      /* compression level; 0 picks the codec's default */
	uint32_t file_flags;  /* enum trace_file_flags; TRACE_FILE_RING is set by ring_size */
	uint64_t created_ns;  /* CLOCK_REALTIME at creation, 0 for now() */
	uint64_t ring_size;   /* a ring of at most this many bytes (fd backend), 0 for a linear file */
	uint32_t ring_segment; /* segments of exactly this many bytes (a multiple of 4096, for tests
				* and tools); 0 picks them from ring_size */
};

struct trace_writer;
/* Called as each ring segment begins, to restate what a reader of the
 * window needs from before it (trace_writer_add_state, META). Returns 0,
 * or a negative errno that ends the writing. */
typedef int (*trace_carry_fn)(void *arg, struct trace_writer *w);

struct trace_writer {
	int fd;			/* -1 for the memory backend */
	unsigned char *mem;	/* memory backend: the file so far */
	size_t mem_len, mem_alloc;
	uint64_t offset;
	int err;		/* first error (negative errno), sticky */
	char errmsg[256];
	enum trace_codec codec;
	int level;		/* as used: the codec's default when the options gave 0 */
	void *zctx;		/* ZSTD_CCtx, reused across chunks */
	unsigned char *cbuf;	/* compression output buffer */
	size_t cbuf_alloc;
	struct trace_index_entry *index;
	size_t nr_index, index_alloc;
	uint64_t last_index_offset;
	uint64_t nr_chunks, nr_records, lost;
	uint64_t data_stored;	/* bytes of DATA chunks written, headers included */
	uint64_t first_time, last_time;
	size_t reserve;		/* bytes kept allocated past the end (trace_writer_reserve) */
	uint64_t held;		/* the file's blocks are allocated up to here, past the end */
	int full;		/* the reserve could not be kept: the disk is full */
	/* ring: once trace_writer_ring_begin ran, chunks go into segments */
	uint64_t ring_size, ring_start, seg_size, seg_used, ring_segment;
	uint32_t nr_segs, seg;
	uint64_t seq;		/* of the current segment, from 1 */
	uint64_t ring_bytes;	/* chunk bytes written into segments so far */
	uint32_t crc_seed;	/* the current segment's, for its chunks' CRCs */
	trace_carry_fn carry;
	void *carry_arg;
	int in_carry;
	uint64_t head_at;	/* ring: where the next chunk of the head's room goes */
	int to_head;		/* ring: chunks go into the head's room (trace_writer_to_head) */
	uint32_t file_flags;
	uint64_t created_ns;
};

/* Start a trace on an open file descriptor (positioned at 0) or in memory.
 * Writes the file header. Returns 0 or a negative errno (also kept). */
int trace_writer_init_fd(struct trace_writer *w, int fd, const struct trace_writer_opts *o);
int trace_writer_init_mem(struct trace_writer *w, const struct trace_writer_opts *o);

/* Append one chunk. META and DATA payloads are compressed with the writer's
 * codec; LOSS, INDEX and TRAILER are stored as they are. For DATA, nr is the
 * number of perf records in the payload and time the first record's time.
 * Returns 0 or the sticky negative errno. */
int trace_writer_add(struct trace_writer *w, enum trace_chunk_type type, uint32_t stream,
		     uint64_t time, const void *data, size_t len, uint64_t nr);
int trace_writer_add_loss(struct trace_writer *w, const struct trace_loss *l, size_t n);
/* Keep bytes allocated past the end of the file as it grows, so the
 * chunks that close it still fit when the disk fills (fd backend, file
 * systems with fallocate). Once the reserve cannot be kept the writer is
 * full: the caller stops adding DATA and closes the trace. */
void trace_writer_reserve(struct trace_writer *w, size_t bytes);
/* Whether bytes more of chunks can be written before the reserve: 0 once
 * they and the reserve after them are allocated (or nothing is kept in
 * reserve), -ENOSPC when the disk cannot hold them (the writer is not
 * full for it: smaller chunks may still fit), or the writer's error. */
int trace_writer_room(struct trace_writer *w, uint64_t bytes);
/* Whether the writer is full or failed; safe from any thread. */
int trace_writer_full(const struct trace_writer *w);
/* A META payload as the writer would store it: *out is the stored bytes
 * (in a buffer the writer reuses on its next call, or data itself) and
 * the return value their codec, or the sticky negative errno. With
 * trace_writer_add_encoded, for payloads kept encoded between runs. */
int trace_writer_encode(struct trace_writer *w, const void *data, size_t len, const void **out, size_t *outlen);
/* Append a META chunk whose payload is already stored as codec: plen
 * bytes, len once decoded, crc zlib's crc32 of those plen bytes from 0,
 * which the chunk's CRC is made from without a pass over them. The reader
 * checks it like any other. */
int trace_writer_add_encoded(struct trace_writer *w, enum trace_chunk_type type, uint32_t stream,
			     enum trace_codec codec, const void *payload, size_t plen, size_t len, uint32_t crc);

/* Ring writers: end the head (host, events: what never changes), keep
 * head_room bytes (rounded up to a page) after it for chunks added to the
 * head later, and start the segments. The file is allocated to its full
 * size now, so a full disk shows at the start; carry runs as each segment
 * begins, the first one included. Returns 0 or the sticky negative errno (too small a ring:
 * -EINVAL with the size needed in the message). */
int trace_writer_ring_begin(struct trace_writer *w, uint64_t head_room, trace_carry_fn carry, void *arg);
/* Ring writers: while on, META chunks go after the head's, into the
 * head_room bytes trace_writer_ring_begin kept, in order: what a window
 * needs whatever its segments, written once (objects the stacks run in).
 * A chunk that does not fit there is not written and returns -ENOSPC,
 * which is not sticky. Returns 0, or -EINVAL for a writer that is not a
 * ring's. */
int trace_writer_to_head(struct trace_writer *w, int on);
/* From a carry callback: a STATE chunk of META kind `kind`. */
int trace_writer_add_state(struct trace_writer *w, uint32_t kind, const void *data, size_t len);
/* A chunk copied from another trace as it is stored (codec, plen bytes,
 * len decoded); DATA with its record count. */
int trace_writer_add_copy(struct trace_writer *w, enum trace_chunk_type type, uint32_t stream, uint64_t time,
			  enum trace_codec codec, const void *payload, size_t plen, size_t len, uint64_t nr);

/* Write the last INDEX and the TRAILER, then sync. Returns the sticky error. */
int trace_writer_finish(struct trace_writer *w);
const char *trace_writer_strerror(const struct trace_writer *w);
/* Frees what the writer holds; the fd stays open, the memory backend's
 * buffer is handed over with trace_writer_steal_mem first if wanted. */
void trace_writer_release(struct trace_writer *w);
unsigned char *trace_writer_steal_mem(struct trace_writer *w, size_t *len);

/* ---- reader ---------------------------------------------------------- */

struct trace_chunk {
	uint64_t offset; /* of the chunk header */
	uint16_t type;
	uint16_t codec;
	uint32_t stream;
	uint32_t payload_len;
	uint32_t raw_len;
	uint32_t crc;
	uint64_t time;
	uint32_t crc_seed;	/* 0, or the ring segment's (FORMAT.md) */
	uint32_t segment;	/* 0 in a linear file and a ring's head, else 1.. in window order */
	const unsigned char *held; /* a live ring's restating chunk: its header and payload, copied
				    * and checked at the scan (the reader's), NULL when read in place */
};

struct trace_reader {
	const unsigned char *base; /* whole file, mapped or in memory */
	size_t size;
	int mapped;		    /* base maps the file: pages read are dropped as the reader goes */
	uint32_t version, file_flags;
	uint64_t created_ns;
	struct trace_chunk *chunks; /* every valid chunk, in file order */
	size_t nr_chunks;
	uint64_t valid_end;	    /* bytes of the file that were read as good */
	int complete;		    /* a good TRAILER closed the file */
	int live;		    /* a running recorder writes the file (it holds its lock): what
				     * follows its last whole chunk is not written yet, not lost */
	struct trace_trailer trailer;
	char stop[256];		    /* why reading stopped early, "" if it did not */
	void *dctx;		    /* ZSTD_DCtx */
	struct trace_ring_info ring; /* a ring's (TRACE_FILE_RING); zero otherwise */
	uint64_t recent;	    /* trace_reader_open_recent's window, 0 for all */
	unsigned replays;	    /* trace_read calls that read records */
	uint64_t data_read;	    /* DATA chunks they were handed, all together */
	unsigned looks;		    /* trace_reader_more calls that looked at a live file */
	int ring_onward;	    /* trace_reader_more reads a ring on into the segments begun since */
	unsigned char **held;	    /* the copies chunks' held points at */
	size_t nr_held;
	dev_t dev;		    /* the file mapped, which trace_reader_more looks at again */
	ino_t ino;
	size_t map_len;		    /* bytes mapped at base: a live file's has room to grow */
	struct old_map { const unsigned char *base; size_t len; } *old_maps; /* outgrown, kept */
	size_t nr_old_maps;
};

/* Open and validate a trace. Returns 0 when the header is good (a bad tail
 * leaves r->stop set and r->complete 0), or -1 with a one-line reason in err
 * for a file that cannot be read as a trace at all. */
int trace_reader_open(struct trace_reader *r, const char *path, char *err, size_t errlen);
int trace_reader_open_mem(struct trace_reader *r, const void *data, size_t len, char *err,
			  size_t errlen);
/* The same on an open file (kept open by the caller). */
int trace_reader_open_fd(struct trace_reader *r, int fd, const char *name, char *err, size_t errlen);
/* The same for a reader that wants only what was recorded in the last
 * window_ns before the trace's end: of a ring, the segments that began
 * before that (with a margin for records written late) are passed over,
 * the first one read taking the window's place (its restated processes).
 * A linear file is read whole. */
int trace_reader_open_recent(struct trace_reader *r, const char *path, uint64_t window_ns, char *err,
			     size_t errlen);
void trace_reader_release(struct trace_reader *r);
/* A live trace as it has grown since it was opened (or since the last
 * call): the chunks its recorder has written since are added to
 * r->chunks, after those it had, and r->live, r->complete and r->stop
 * say what the file is now. Of a ring, those of the window's newest
 * segment and, with r->ring_onward, of each segment its recorder began
 * since, r->ring then saying where the window starts now (the chunks
 * before it stay in r->chunks, to be read as overwritten). A finished
 * file, or one the reader found a fault in, is left as it is. Returns 0,
 * or -1 with the reason in err (the path names another file now: a new
 * recording replaced it; a ring's recorder began another segment without
 * ring_onward, or went past a segment the reader never read, so what it
 * holds is no longer a run of the window). */
int trace_reader_more(struct trace_reader *r, const char *path, char *err, size_t errlen);

/* What reading a chunk of a live ring returns when its recorder has
 * overwritten it since the reader checked it: it holds nothing of the
 * window read, and is skipped as the ring's overwritten part is. */
#define TRACE_CHUNK_GONE (-2)

/* Decompress chunk i into *buf (grown as needed; *alloc is its size).
 * Returns the payload length, or -1 with a reason in err, or
 * TRACE_CHUNK_GONE (with a reason) for a live ring's chunk overwritten. */
long trace_chunk_payload(struct trace_reader *r, size_t i, unsigned char **buf, size_t *alloc,
			 char *err, size_t errlen);
/* Decompress len bytes of chunk i's payload, from byte skip on, into dst:
 * part of a big payload, or all of it straight where it is wanted. Safe on
 * any thread (its own decoder). Returns len, or -1 with a reason in err. */
long trace_chunk_read(const struct trace_reader *r, size_t i, uint64_t skip, void *dst, size_t len, char *err,
		      size_t errlen);
/* The same, handed to sink a piece at a time (sink returns 0, or -1 with
 * errno set): for a payload that goes to a file, never whole in memory. */
long trace_chunk_stream(const struct trace_reader *r, size_t i, uint64_t skip, size_t len,
			int (*sink)(void *arg, const void *buf, size_t n), void *arg, char *err, size_t errlen);

const char *trace_chunk_type_name(unsigned type);
const char *trace_codec_name(unsigned codec);
const char *trace_meta_kind_name(unsigned kind);

/*
 * Visitor callbacks for trace_read(). Any member may be NULL. A callback
 * returns 0 to go on; any other value stops the visit and trace_read()
 * returns it.
 */
struct trace_handler {
	/* Every META chunk, in file order, before any record. */
	int (*meta)(uint32_t kind, const void *data, size_t len, void *arg);
	/* Every LOSS entry, before any record. */
	int (*loss)(const struct trace_loss *l, void *arg);
	/* Every perf record in time order across streams. rec points at the
	 * perf_event_header; it is valid only during the call. */
	int (*record)(const void *rec, size_t len, uint32_t stream, uint64_t time, void *arg);
	/* META chunks of the kinds in meta_by_ref (bit 1 << kind) go to
	 * meta_ref by index, undecoded, instead of to meta: for big payloads
	 * (embedded objects) read later, in part, with trace_chunk_read. */
	uint32_t meta_by_ref;
	int (*meta_ref)(uint32_t kind, size_t chunk, void *arg);
	/* As the records go: done of the total data chunks taken. */
	void (*progress)(size_t done, size_t total, void *arg);
	/* A live linear trace read as it grows: called when the merge has
	 * handed on every record it can (those a margin older than the
	 * file's newest chunk: a CPU's chunk can reach the file late). It
	 * returns 0 once trace_reader_more has looked at the file again
	 * (new META and LOSS chunks then go to their callbacks first, then
	 * the records merge on), TRACE_FOLLOW_END to end the visit there,
	 * or another value to stop with it. NULL: what the file holds is
	 * read, and the visit ends. */
	int (*follow)(void *arg);
	/* With follow: where, given the look's horizon, the merge stops for
	 * follow (at most the horizon: a caller that shows a window of the
	 * latest records stops where the window begins). NULL: the horizon. */
	uint64_t (*stop_at)(void *arg, uint64_t horizon);
	/* With follow: the records' clock now, or 0 when the reader cannot
	 * read it (a trace from another boot). The margin is then reckoned
	 * from now as well, so that a program gone quiet has its last records
	 * shown; with 0, from the newest record alone. */
	uint64_t (*now)(void *arg);
};
#define TRACE_FOLLOW_END 1

/* Returns 0 when all was visited, -1 on a decoding error (reason in err),
 * or the value a callback stopped with. */
int trace_read(struct trace_reader *r, const struct trace_handler *h, void *arg, char *err,
	       size_t errlen);

/* Copy what reader r holds into the linear writer w (made with
 * TRACE_FILE_WINDOW when r is a ring): META (a ring's window state as
 * META), DATA and LOSS as they are stored; no INDEX or TRAILER, which w
 * writes itself. Returns 0, or -1 with the reason in err. */
int trace_copy_window(struct trace_reader *r, struct trace_writer *w, char *err, size_t errlen);

/* The perf records framed in a DATA payload, up to the first that is not. */
uint64_t trace_records_count(const void *data, size_t len);

/* The time of a perf record, by the rule FORMAT.md gives; 0 if it has none. */
uint64_t trace_record_time(const void *rec, size_t len);

/* The latest time of a sample in DATA chunk i into *time (0: none; a
 * live ring's chunk overwritten meanwhile holds none). Returns 0, or -1
 * with the reason in err. */
int trace_chunk_last_sample(struct trace_reader *r, size_t i, uint64_t *time, char *err, size_t errlen);

#endif
