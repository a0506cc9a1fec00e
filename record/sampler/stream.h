/*
 * record/sampler/stream.h: how the allocation sampler hands its reports to
 * a recorder without a trap. The contract between stream.c, in the
 * recorded process, and record/write/allocstream.c, in the recorder.
 *
 * A recording that starts its command gives it MEMSIGHT_STREAM=PATH,DUMP
 * or PATH,DUMP:FLAGS: the unix socket (SOCK_SEQPACKET) the recorder listens
 * on, in a directory only the recorder's user may enter, the most bytes of
 * stack a report carries, and in FLAGS "1" when frees carry stacks too,
 * "n" when the program must never wait for the recorder (see below). A process that can connect does so once (again after fork or
 * exec); one that cannot, reports at the probe sites as before. Each of
 * its threads makes a ring of its own, a memfd of STREAM_HDR_SIZE +
 * STREAM_DATA_SIZE bytes sealed at its size, and sends it over the connection (SCM_RIGHTS,
 * with a struct stream_hello) before writing to it. The thread appends
 * records to its ring and publishes them by storing head; the recorder
 * copies them out and stores tail. A thread that finds no room makes a
 * ring twice the size, up to STREAM_DATA_MAX, and tells the full one
 * closed: the recorder reads that one to its end and merges the two by
 * time. At the largest size it waits for the recorder, which writes a
 * byte to the connection when it freed room in a ring whose writer waits:
 * nothing is dropped; or, with "n", it drops the report and counts it in
 * the ring's header (dropped), never waiting, never trapping, and the
 * recorder counts those as lost. With "n" the connection is
 * non-blocking too: a recorder that stopped reading sends a new thread or
 * process to the probe sites rather than hold it. The recorder keeps its
 * own mapping of each ring, so what a process wrote before it died is
 * still read.
 *
 * Most of a stack dump is data that unwinding never reads, and the
 * recorder drops it (record/write/scrub.h): only the words that point
 * into the dump or into the process's code stay. So that the recorder
 * is not the one that reads every word, it publishes in each ring's
 * header the process's code filter (procs/execmap.h: one bit per hashed
 * 2 MiB granule that holds code) and the time up to which the filter
 * holds every executable mapping the process made. A writer whose own
 * latest executable mapping (mmap, mprotect, dlopen; the library's start;
 * a fork) is no later than that time sends only the words that pass:
 * STREAM_PACKED, a bitmap of the dump's words and the words it marks.
 * Otherwise, or when no filter is published, it sends the dump whole.
 * The filter only gains bits while a ring lives; the recorder still
 * applies its exact rule to what comes.
 *
 * Records are 8-byte aligned and never wrap the end of the data: a
 * STREAM_PAD record fills the rest of it instead. Times are
 * CLOCK_MONOTONIC, as the recorder's perf events count them.
 */
#ifndef MEMSIGHT_SAMPLER_STREAM_H
#define MEMSIGHT_SAMPLER_STREAM_H

#include <stdint.h>

#include "../../formats/wrapper.h"

#define STREAM_ENV "MEMSIGHT_STREAM"
/* The rings' memfd name, which the analyzer knows them by. */
#define STREAM_MEMFD_NAME WRAPPER_STREAM_NAME
#define STREAM_MAGIC 0x4d535352u /* "RSSM" as bytes */
#define STREAM_VERSION 3u
#define STREAM_HDR_SIZE 4096u
/* A thread's first ring holds STREAM_DATA_SIZE bytes of records; a thread
 * that finds its ring full makes one twice the size to take over from it,
 * up to STREAM_DATA_MAX. The size is the memfd's, less the header page.
 * Small to start with: each page of a ring is first touched in the
 * program's own time, and a sampled recording's few reports never fill
 * one; a thread that reports every call grows its ring in a few steps. */
#define STREAM_DATA_SIZE (1u << 18)
#define STREAM_DATA_MAX (8u << 20)
/* The registers an alloc record carries: perf's x86-64 user registers AX
 * BX CX DX SI DI BP SP IP R8..R15 (sample_regs_user 0xff01ff), in that
 * order, as they were where the report was made. */
#define STREAM_REGS_MASK 0xff01ffull
#define STREAM_NR_REGS 17
#define STREAM_REG_BP 6
#define STREAM_REG_SP 7
#define STREAM_REG_IP 8

/* The code filter's size in 64-bit words: procs/execmap.h's
 * EXECMAP_FILTER_BITS / 64, which the recorder checks at build time. */
#define STREAM_CODE_WORDS 128

/* The ring's first page. head and tail count bytes since the ring was
 * made; data starts at STREAM_HDR_SIZE. */
struct stream_ring_hdr {
	uint32_t magic, version;
	uint64_t data_size;			     /* of the data, a power of two */
	int32_t pid, tid;			     /* the writer, as its process sees them */
	uint32_t closed;			     /* the thread ended: nothing more comes */
	uint32_t waiting;			     /* the writer waits for room */
	uint64_t dropped;			     /* reports the writer dropped for want of room ("n") */
	uint64_t head __attribute__((aligned(64))); /* written by the thread */
	uint64_t tail __attribute__((aligned(64))); /* written by the recorder */
	/* Written by the recorder: code is set before horizon is stored. */
	uint64_t horizon __attribute__((aligned(64))); /* CLOCK_MONOTONIC ns: mappings made by then are in code */
	uint32_t code_ok;			     /* code holds the process's filter */
	uint32_t pad;
	uint64_t code[STREAM_CODE_WORDS];
};

/* Sent with a ring's file descriptor. */
struct stream_hello {
	uint32_t magic, version;
	int32_t pid, tid;
};

enum { STREAM_PAD, STREAM_ALLOC, STREAM_FREE };
/* In a record's kind: its dump is packed. */
#define STREAM_PACKED 0x100u

/* Every record starts so. A STREAM_FREE record is this alone, or where
 * frees carry stacks, a struct stream_alloc of size and weight 0. */
struct stream_rec {
	uint32_t size;	/* bytes, this header included, a multiple of 8 */
	uint16_t kind;
	uint16_t cpu;
	uint64_t time;
	uint64_t ptr;
};

/* A STREAM_ALLOC record: then dump_len bytes of stack from regs[SP] up,
 * a multiple of 8. Packed: instead, a bitmap of the dump's words, one
 * 64-bit word per 64 of them (bit j of word b: word 64b+j), then the words
 * it marks, in order. */
struct stream_alloc {
	struct stream_rec h;
	uint64_t size, weight;
	uint64_t regs[STREAM_NR_REGS];
	uint64_t dump_len;
};

#endif
