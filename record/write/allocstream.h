/*
 * record/write/allocstream.h: the recorder's end of the allocation
 * sampler's stream (record/sampler/stream.h): the socket the command's
 * processes connect to, the rings they hand over, and their reports taken
 * into the trace as the samples of the sampler's probe sites, so that the
 * analyzer reads them as it reads the sites'.
 */
#ifndef MEMSIGHT_RECORD_ALLOCSTREAM_H
#define MEMSIGHT_RECORD_ALLOCSTREAM_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

struct as_conn;
struct as_ring;
struct as_ref;
struct rec_event;

struct allocstream {
	int listen_fd;		/* -1: no stream */
	int ep;			/* the listening socket and the connections, for the event loop */
	char dir[PATH_MAX], path[PATH_MAX];
	char env[PATH_MAX + 32]; /* MEMSIGHT_STREAM's value for the command */
	uint32_t dump_max;
	uint64_t min_size, max_size; /* -z, -Z: what the kernel's filter would have dropped */
	uint64_t period, count;	/* -s N: one allocation in N, as the kernel's sample_period */
	struct rec_event *alloc_ev, *free_ev; /* one event, the sites' (AF_OTEL_SITES), where kind is set */
	int kind;		/* raw offset of its kind, 0 when the sites are two events */
	uint64_t alloc_id, free_id;
	int alloc_ptr, alloc_size, alloc_weight, alloc_raw; /* raw data: offsets, length */
	int free_ptr, free_raw;
	int pack;		/* the wrapper may pack its dumps by a published code filter */
	struct as_conn *conns;
	size_t nr_conns, conns_alloc;
	struct as_ring *rings;
	size_t nr_rings, rings_alloc;
	struct as_ref *batch;
	size_t nr_batch, batch_alloc;
	unsigned char *rec;	/* one record copied out of a ring, and the sample made of it */
	uint64_t processes, threads, reports, broken;
	uint64_t packed;	/* reports whose dumps came packed */
	uint64_t grown;		/* rings that took over from a full one of the same thread */
	uint64_t dropped;	/* reports threads dropped for want of room (--no-block) */
};

#endif
