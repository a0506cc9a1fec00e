/*
 * formats/meta.h: the payloads of META chunks that are not plain text.
 *
 * Owns the encoding of one recorded event (TRACE_META_EVENT): its
 * perf_event_attr as the recorder passed it, the sample ids the kernel gave
 * each of its file descriptors, its name, the event group the user asked for,
 * and for tracepoints the tracefs format text. Also a lookup helper for the
 * "key value" lines of the text META kinds, and the layout of a memory
 * scan (TRACE_META_REACH). Knows nothing of what the analyzer does with
 * them.
 */
#ifndef MEMSIGHT_META_H
#define MEMSIGHT_META_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_EVENT_DESC_VERSION 1

struct trace_event_desc {
	char *name;	    /* "syscalls:sys_enter_mmap", "page-faults", ... */
	char *group;	    /* the -e group that asked for it: "mmap", "faults", ... */
	char *format;	    /* tracefs format text; "" for non-tracepoints */
	void *attr;	    /* struct perf_event_attr bytes as given to the kernel */
	uint32_t attr_size;
	uint64_t *ids;	    /* PERF_EVENT_IOC_ID of each fd opened for it */
	uint32_t nr_ids;
};

/* Encode into a malloc'd buffer. Returns 0 or -ENOMEM. */
int trace_event_desc_encode(const struct trace_event_desc *d, unsigned char **out, size_t *len);
/* Decode into malloc'd members. Returns 0, -EINVAL for a malformed payload
 * or -ENOMEM. */
int trace_event_desc_decode(const void *data, size_t len, struct trace_event_desc *d);
void trace_event_desc_release(struct trace_event_desc *d);

/* A TRACE_META_REACH payload: one part of a scan of a stopped process's
 * memory for the words that could point into its heap (FORMAT.md). The
 * arrays point into the payload: regions of REACH_REGION_SIZE bytes
 * {u64 start, u64 end, u32 kind, u32 0}, pairs of REACH_PAIR_SIZE bytes
 * {u64 where, u64 what}, sorted by where, where 0 meaning a register;
 * since MSREACH2, the vtables (u64 addresses) and words of REACH_WORD_SIZE
 * bytes {u64 where, u64 value}, sorted by where: what the leak check's
 * heuristics read of the heap. A MSREACH1 payload has neither. */
#define REACH_MAGIC "MSREACH2"
#define REACH_MAGIC_V1 "MSREACH1"
#define REACH_HEADER_SIZE 56
#define REACH_REGION_SIZE 24
#define REACH_PAIR_SIZE 16
#define REACH_WORD_SIZE 16

enum reach_region_kind {
	REACH_REGION_HEAP = 1,	/* [heap] */
	REACH_REGION_ANON = 2,	/* anonymous and writable */
	REACH_REGION_FILE = 3,	/* a file's writable data */
	REACH_REGION_STACK = 4,	/* a thread's stack, scanned from its stack pointer */
	REACH_REGION_UNREADABLE = 5, /* anonymous memory that cannot be read (PROT_NONE): blocks may lie there */
};

struct reach_part {
	uint32_t pid, part, nr_regions, nr_vtables;
	uint64_t nr_pairs, scan_ns, scanned_bytes, time, nr_words;
	const unsigned char *regions, *pairs, *vtables, *words;
};

/* Returns 0, or -EINVAL for a payload that does not parse. */
int reach_part_decode(const void *data, size_t len, struct reach_part *p);

/* Find "key value" in newline-separated text; copies the value (to the end
 * of its line) into out. Returns 0, or -1 when the key is absent. */
int trace_kv_get(const char *text, size_t len, const char *key, char *out, size_t outlen);

#endif
