/*
 * record/write/allocstream.c: the recorder's end of the allocation
 * sampler's stream (record/sampler/stream.h). It listens on a socket in a
 * directory of its own, takes the rings the command's processes hand
 * over, and on each pass of the drain loop turns their records into the
 * PERF_RECORD_SAMPLEs the sampler's probe sites would have given (the
 * sites' events, ids and raw layout; the registers and stack bytes the
 * wrapper copied; a frame-pointer walk of those bytes where the events
 * take callchains), so the trace and the analyzer know nothing of it.
 *
 * Order. Each pass takes the records of every ring up to a time read
 * before the pass looked at any ring, and merges them by time into one
 * DATA stream; later records wait for the next pass. A record is
 * published before its call returns, so whatever follows from the call
 * (the block freed by another thread, an address reused) is stamped after
 * it was published, and so after that time was read: it is in the same
 * pass, later in the merge, or in a later pass. The kernel's records
 * (mappings, exits) are drained first, for the same reason.
 *
 * What a ring holds is the recorded program's memory: every record is
 * copied out before it is read, and a ring that holds anything malformed
 * is no longer read, and counted.
 *
 * Packing. Where the dumps are scrubbed by the unwind rule, each pass
 * ends by publishing in every ring the code filter of its process as the
 * pass knew it (procs/execmap.h), and the time up to which it knew: the
 * wrapper then sends only the words the filter lets through, and the
 * scrub applies its exact rule to those alone (scrub_repack).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../formats/allocfns.h"
#include "../../formats/stackdump.h"
#include "../procs/execmap.h"
#include "../recorder.h"
#include "../sampler/stream.h"
#include "allocstream.h"

_Static_assert(STREAM_CODE_WORDS * 64 == EXECMAP_FILTER_BITS, "the published filter is the execmap's");

/* A sample made of a record: header, the fixed fields, a callchain, the
 * raw data, the registers, the dump's two sizes. */
#define SAMPLE_FIXED (8 + 8 * 8 + 8 * (2 + CALLCHAIN_MAX) + 8 + 64 + 8 * (1 + 64) + 16)
#define CALLCHAIN_MAX 127
/* With frame-pointer callchains the wrapper copies this much stack for
 * the recorder to walk; the kernel's own walk stops at 127 frames. */
#define FP_DUMP 16384u
#define SAMPLE_ALLOWED                                                                                              \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |          \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER | \
	 PERF_SAMPLE_STACK_USER)

/* The listening socket's key in the epoll set; a connection's is its index. */
#define LISTEN_KEY UINT64_MAX

struct as_conn {
	int fd;
	pid_t pid;		/* as the recorder sees it */
	int closed;		/* the process exited or executed: no more rings or records */
};

struct as_ring {
	struct stream_ring_hdr *hdr;
	unsigned char *data;
	uint64_t size;		/* of data, from the memfd's size: never read from the ring */
	uint64_t tail;
	size_t conn;
	pid_t pid, tid;
	int broken;
	int unfiltered;		/* its process's code fills no filter: dumps come whole */
	uint64_t stamp;		/* the mappings whose filter was published last */
	uint64_t dropped;	/* of its header's count, what was added to the total */
};

/* The reports ring r's writer dropped since the last look, counted. */
static void dropped_take(struct allocstream *as, struct as_ring *r)
{
	uint64_t d = __atomic_load_n(&r->hdr->dropped, __ATOMIC_RELAXED);

	/* The program's memory: only ever counted upwards. */
	if (d > r->dropped) {
		as->dropped += d - r->dropped;
		r->dropped = d;
	}
}

/* A record of this pass: where it is, for the merge. */
struct as_ref {
	uint64_t time;
	uint32_t ring, off, size;
};

static void put64(unsigned char **p, uint64_t v)
{
	memcpy(*p, &v, 8);
	*p += 8;
}

/* The sampler's own probe events: its group is the first, memsight_PID. */
static struct rec_event *site_event(struct recorder *rc, const char *fn)
{
	char prefix[64];
	struct rec_event *best = NULL;
	size_t pl, fl = strlen(fn);

	snprintf(prefix, sizeof(prefix), "memsight_%d:", (int)getpid());
	pl = strlen(prefix);
	for (size_t i = 0; i < rc->nr_evs; i++) {
		struct rec_event *e = &rc->evs[i];
		const char *n = e->name + pl;

		if (strncmp(e->name, prefix, pl) || strncmp(n, fn, fl) || (n[fl] && strncmp(n + fl, "__", 2)))
			continue;
		/* The site that copies the most stack: a report's dump is sized
		 * to its stack, whatever the site. */
		if (!best || e->attr.sample_stack_user > best->attr.sample_stack_user)
			best = e;
	}
	return best;
}

static int raw_layout(const struct rec_event *e, const char *last, int *end)
{
	int off = events_field_offset(e->format, last);

	if (events_field_offset(e->format, "common_type") != 0 || events_field_offset(e->format, "common_pid") != 4 ||
	    events_field_offset(e->format, "__probe_ip") != 8 || off < 16 || off > 256)
		return -1;
	*end = off + 8;
	return 0;
}

static void as_reset(struct allocstream *as)
{
	as->listen_fd = -1;
	as->ep = -1;
	as->path[0] = as->dir[0] = as->env[0] = 0;
}

void allocstream_close(struct recorder *rc)
{
	struct allocstream *as = &rc->as;

	for (size_t i = 0; i < as->nr_conns; i++)
		if (as->conns[i].fd >= 0)
			close(as->conns[i].fd);
	for (size_t i = 0; i < as->nr_rings; i++)
		if (as->rings[i].hdr)
			munmap(as->rings[i].hdr, STREAM_HDR_SIZE + as->rings[i].size);
	if (as->listen_fd >= 0)
		close(as->listen_fd);
	if (as->ep >= 0)
		close(as->ep);
	if (as->path[0])
		unlink(as->path);
	if (as->dir[0])
		rmdir(as->dir);
	free(as->conns);
	free(as->rings);
	free(as->batch);
	free(as->rec);
	as->conns = NULL;
	as->rings = NULL;
	as->batch = NULL;
	as->rec = NULL;
	as->nr_conns = as->nr_rings = as->nr_batch = 0;
	as_reset(as);
}

/* Before the command starts: a stream for the wrapper it runs with, when
 * the events its reports become can be written by the recorder. Without
 * one the wrapper reports at its probe sites, so nothing here is an
 * error; the reason goes to stderr. */
int allocstream_listen(struct recorder *rc)
{
	struct allocstream *as = &rc->as;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN };
	const char *tmp = getenv("TMPDIR");
	const char *why = NULL;
	uint64_t st;

	as_reset(as);
	if (!rc->sampler[0] || !rc->command)
		return 0;
	as->alloc_ev = site_event(rc, alloc_fns[AF_OTEL_ALLOC].symbol);
	as->free_ev = site_event(rc, alloc_fns[AF_OTEL_FREE].symbol);
	as->kind = 0;
	if (!as->alloc_ev && !as->free_ev)
		as->alloc_ev = as->free_ev = site_event(rc, alloc_fns[AF_OTEL_SITES].symbol);
	if (!as->alloc_ev || !as->free_ev || !as->alloc_ev->format || !as->free_ev->format)
		return 0;
	st = as->alloc_ev->attr.sample_type | as->free_ev->attr.sample_type;
	if ((st & ~(uint64_t)SAMPLE_ALLOWED) || (as->alloc_ev->attr.sample_type & PERF_SAMPLE_REGS_USER &&
						  as->alloc_ev->attr.sample_regs_user & ~STREAM_REGS_MASK))
		why = "the probe events take fields it does not give";
	else if (as->alloc_ev == as->free_ev ? raw_layout(as->alloc_ev, "kind", &as->alloc_raw) ||
						       (as->kind = events_field_offset(as->alloc_ev->format, "kind")) < 16
					     : raw_layout(as->alloc_ev, "weight", &as->alloc_raw) ||
						       raw_layout(as->free_ev, "ptr", &as->free_raw))
		why = "the probe events' raw layout is not the one it writes";
	if (as->kind)
		as->free_raw = as->alloc_raw;
	if (why) {
		msg_note("malloc: reports through the probe sites: %s", why);
		return 0;
	}
	as->alloc_ptr = events_field_offset(as->alloc_ev->format, "ptr");
	as->alloc_size = events_field_offset(as->alloc_ev->format, "size");
	as->alloc_weight = events_field_offset(as->alloc_ev->format, "weight");
	as->free_ptr = events_field_offset(as->free_ev->format, "ptr");
	if (as->alloc_ptr < 16 || as->alloc_size < 16 || as->alloc_weight < 16)
		return 0;
	if (as->alloc_ev->attr.sample_type & PERF_SAMPLE_STACK_USER)
		as->dump_max = as->alloc_ev->attr.sample_stack_user;
	else if (as->alloc_ev->attr.sample_type & PERF_SAMPLE_CALLCHAIN)
		as->dump_max = FP_DUMP;
	else
		as->dump_max = 0;
	/* Packing by the unwind rule's filter, where a sample's dump is its
	 * only stack: its exact rule is then applied to what comes. */
	as->pack = rc->scrub.mode == SCRUB_UNWIND && rc->scrub.map && as->dump_max &&
		   (as->alloc_ev->attr.sample_type & PERF_SAMPLE_STACK_USER) && !(st & PERF_SAMPLE_CALLCHAIN) &&
		   (!rc->free_stacks || (as->free_ev->attr.sample_type & PERF_SAMPLE_STACK_USER));
	/* A packed dump can take its bitmap and count more than a whole one. */
	if (as->dump_max > 65528 - SAMPLE_FIXED - 8 * (STACKDUMP_MAX_BLOCKS + 1))
		as->dump_max = (65528 - SAMPLE_FIXED - 8 * (STACKDUMP_MAX_BLOCKS + 1)) & ~7u;
	as->min_size = rc->min_size;
	as->max_size = rc->max_size;
	as->period = !as->alloc_ev->attr.freq && as->alloc_ev->attr.sample_period > 1 ? as->alloc_ev->attr.sample_period : 1;
	as->count = 0;
	as->rec = malloc(2 * 65536);
	snprintf(as->dir, sizeof(as->dir), "%s/memsight-stream.XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
	/* mkdtemp makes it 0700: only this user's processes reach the socket. */
	if (!as->rec || strlen(as->dir) + 3 > sizeof(a.sun_path) || !mkdtemp(as->dir)) {
		as->dir[0] = 0;
		msg_note("malloc: reports through the probe sites: no directory for the wrapper's socket (%s)",
			 strerror(errno));
		allocstream_close(rc);
		return 0;
	}
	snprintf(as->path, sizeof(as->path), "%s/s", as->dir);
	memcpy(a.sun_path, as->path, strlen(as->path) + 1);
	ev.data.u64 = LISTEN_KEY;
	as->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	as->ep = epoll_create1(EPOLL_CLOEXEC);
	if (as->listen_fd < 0 || as->ep < 0 || bind(as->listen_fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(as->listen_fd, 256) || epoll_ctl(as->ep, EPOLL_CTL_ADD, as->listen_fd, &ev)) {
		msg_note("malloc: reports through the probe sites: cannot listen at '%s' (%s)", as->path,
			 strerror(errno));
		allocstream_close(rc);
		return 0;
	}
	snprintf(as->env, sizeof(as->env), "%s,%u%s%s%s", as->path, as->dump_max,
		 rc->free_stacks || rc->block == REC_BLOCK_NO ? ":" : "", rc->free_stacks ? "1" : "",
		 rc->block == REC_BLOCK_NO ? "n" : "");
	return 0;
}

/* Once the events are open: the ids the samples name. */
void allocstream_bind(struct recorder *rc)
{
	struct allocstream *as = &rc->as;

	if (as->listen_fd < 0)
		return;
	if (!as->alloc_ev->nr_ids || !as->free_ev->nr_ids || as->alloc_ev->dropped || as->free_ev->dropped) {
		allocstream_close(rc);
		return;
	}
	as->alloc_id = as->alloc_ev->ids[0];
	as->free_id = as->free_ev->ids[0];
}

/* The recording stops: the connections are shut, so writers waiting
 * for room report at the probe sites (disabled by now) instead of waiting
 * for a recorder that waits for their process to end. What the rings hold
 * is still read, by the last pass. */
void allocstream_shut(struct recorder *rc)
{
	struct allocstream *as = &rc->as;

	if (as->listen_fd < 0)
		return;
	shutdown(as->listen_fd, SHUT_RDWR);
	for (size_t i = 0; i < as->nr_conns; i++)
		if (as->conns[i].fd >= 0)
			shutdown(as->conns[i].fd, SHUT_RDWR);
}

int allocstream_fd(const struct recorder *rc)
{
	return rc->as.ep;
}

/* A thread id as the process's namespace gives it, as the recorder's
 * gives it: the task of pid whose NSpid line ends with it. */
static pid_t tid_here(pid_t pid, pid_t nstid)
{
	char path[64], line[256];
	struct dirent *d;
	DIR *dir;
	pid_t found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return 0;
	while (!found && (d = readdir(dir))) {
		FILE *f;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/status", (int)pid, d->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "NSpid:", 6)) {
				char *last = strrchr(line, '\t');

				if (last && atoi(last + 1) == nstid)
					found = atoi(d->d_name);
				break;
			}
		fclose(f);
	}
	closedir(dir);
	return found;
}

static void conn_accept(struct recorder *rc)
{
	struct allocstream *as = &rc->as;
	int fd;

	while ((fd = accept4(as->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		struct ucred cr;
		socklen_t l = sizeof(cr);
		struct epoll_event ev = { .events = EPOLLIN };

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) || cr.pid <= 0) {
			close(fd);
			continue;
		}
		if (as->nr_conns == as->conns_alloc) {
			size_t n = as->conns_alloc ? as->conns_alloc * 2 : 16;
			struct as_conn *p = realloc(as->conns, n * sizeof(*p));

			if (!p) {
				close(fd);
				return;
			}
			as->conns = p;
			as->conns_alloc = n;
		}
		ev.data.u64 = as->nr_conns;
		epoll_ctl(as->ep, EPOLL_CTL_ADD, fd, &ev);
		as->conns[as->nr_conns++] = (struct as_conn){ fd, cr.pid, 0 };
		as->processes++;
	}
}

static void ring_add(struct recorder *rc, size_t ci, int fd, const struct stream_hello *h)
{
	struct allocstream *as = &rc->as;
	struct stream_ring_hdr *hdr;
	struct stat st;
	uint64_t size;
	pid_t tid;

	/* Only a memfd sealed at its size: a file the program could shrink
	 * would fault the recorder's reads of it. Its size, a power of two
	 * within the stream's bounds, is the ring's from here on, whatever
	 * the program later writes into its header. */
	if (h->magic != STREAM_MAGIC || h->version != STREAM_VERSION || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < STREAM_HDR_SIZE || (fcntl(fd, F_GET_SEALS) & F_SEAL_SHRINK) != F_SEAL_SHRINK)
		goto bad;
	size = (uint64_t)st.st_size - STREAM_HDR_SIZE;
	if (size < STREAM_DATA_SIZE || size > STREAM_DATA_MAX || (size & (size - 1)))
		goto bad;
	hdr = mmap(NULL, STREAM_HDR_SIZE + size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED)
		goto bad;
	if (hdr->magic != STREAM_MAGIC || hdr->data_size != size) {
		munmap(hdr, STREAM_HDR_SIZE + size);
		goto bad;
	}
	if (as->nr_rings == as->rings_alloc) {
		size_t n = as->rings_alloc ? as->rings_alloc * 2 : 16;
		struct as_ring *p = realloc(as->rings, n * sizeof(*p));

		if (!p) {
			munmap(hdr, STREAM_HDR_SIZE + size);
			goto bad;
		}
		as->rings = p;
		as->rings_alloc = n;
	}
	/* The same pid in the process's namespace: the same namespace. */
	tid = h->pid == as->conns[ci].pid ? h->tid : tid_here(as->conns[ci].pid, h->tid);
	as->rings[as->nr_rings++] = (struct as_ring){ .hdr = hdr,
						      .data = (unsigned char *)hdr + STREAM_HDR_SIZE,
						      .size = size,
						      .conn = ci,
						      .pid = as->conns[ci].pid,
						      .tid = tid ? tid : as->conns[ci].pid };
	/* A bigger ring takes over from its thread's full one. */
	if (size == STREAM_DATA_SIZE)
		as->threads++;
	else
		as->grown++;
	close(fd);
	return;
bad:
	/* A ring it cannot read: what its thread writes is lost. */
	as->broken++;
	close(fd);
}

/* New rings and nudges from one connection; its end. */
static void conn_read(struct recorder *rc, size_t ci)
{
	struct allocstream *as = &rc->as;
	struct as_conn *c = &as->conns[ci];

	while (!c->closed) {
		struct stream_hello h;
		union {
			char buf[CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr align;
		} u;
		struct iovec iov = { &h, sizeof(h) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
		ssize_t n = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		int fd = -1;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			epoll_ctl(as->ep, EPOLL_CTL_DEL, c->fd, NULL);
			close(c->fd);
			c->fd = -1;
			c->closed = 1;
			return;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				int nfd = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

				for (int k = 0; k < nfd; k++) {
					int one;

					memcpy(&one, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
					if (fd < 0)
						fd = one;
					else
						close(one);
				}
			}
		if (fd >= 0 && n == sizeof(h))
			ring_add(rc, ci, fd, &h);
		else if (fd >= 0)
			close(fd);
	}
}

/* A ring holds what no wrapper writes: it is read no further, and its
 * process's connection is shut, so its threads report at the probe sites
 * from now on rather than wait for room that never comes. */
static void ring_broken(struct allocstream *as, struct as_ring *r)
{
	struct as_conn *c = &as->conns[r->conn];

	r->broken = 1;
	as->broken++;
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
}

/* The records of ring ri published up to head and stamped by t0 (all of
 * them when final), into the batch. A ring that holds anything malformed
 * is read no further. */
static int ring_collect(struct allocstream *as, size_t ri, uint64_t t0, int final)
{
	struct as_ring *r = &as->rings[ri];
	uint64_t head = __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE), pos = r->tail, ahead = pos;

	if (head - pos > r->size || head < pos)
		goto broken;
	while (pos < head) {
		uint64_t off = pos & (r->size - 1);
		struct stream_rec h;
		uint32_t size;
		uint16_t kind_raw;

		/* The lines ahead, which the copies read next anyway. */
		for (; ahead < head && ahead < pos + REC_PREFETCH_AHEAD; ahead += 64)
			__builtin_prefetch(r->data + (ahead & (r->size - 1)));

		/* A pad can be a word long: its size and kind first. The ring
		 * is the program's memory: what is checked is the copy, and
		 * only the copy is used after (read again, the size could be
		 * another by then). */
		memcpy(&h, r->data + off, 8);
		size = h.size;
		kind_raw = h.kind;
		if (size < 8 || size % 8 || off + size > r->size || size > head - pos || size > 65536)
			goto broken;
		if (kind_raw != STREAM_PAD) {
			unsigned kind = kind_raw & ~STREAM_PACKED;

			if (size < sizeof(h) || (kind != STREAM_ALLOC && kind != STREAM_FREE) ||
			    (kind_raw & STREAM_PACKED && !as->pack))
				goto broken;
			memcpy(&h.time, r->data + off + 8, sizeof(h.time));
			if (!final && h.time > t0)
				break;
			if (as->nr_batch == as->batch_alloc) {
				size_t n = as->batch_alloc ? as->batch_alloc * 2 : 4096;
				struct as_ref *p = realloc(as->batch, n * sizeof(*p));

				if (!p)
					return -1;
				as->batch = p;
				as->batch_alloc = n;
			}
			as->batch[as->nr_batch++] = (struct as_ref){ h.time, (uint32_t)ri, (uint32_t)off, size };
		}
		pos += size;
	}
	r->tail = pos;
	return 0;
broken:
	ring_broken(as, r);
	return 0;
}

static int ref_cmp(const void *a, const void *b)
{
	const struct as_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->ring != y->ring)
		return x->ring < y->ring ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The sample the site's event would have given for one record of size
 * bytes, whose fixed part was copied to rec and whose stack bytes are
 * those after it in the ring, at ring_rec; its size, or 0 for a record
 * that does not make one. The stack bytes are copied straight from the
 * ring: whatever the program writes there meanwhile is data like any
 * other, and every length comes from the copy. */
static size_t sample_make(struct allocstream *as, const struct as_ring *r, const unsigned char *rec,
			  const unsigned char *ring_rec, size_t size, unsigned char *out)
{
	struct stream_rec h;
	struct stream_alloc a;
	const struct rec_event *e;
	const unsigned char *dump = NULL;
	unsigned char *p = out + 8, raw[320];
	uint64_t st, ip = 0, dump_len = 0, bits[STACKDUMP_MAX_BLOCKS], blocks = 0, nr_words = 0;
	uint32_t raw_len, raw_size;
	struct perf_event_header ph = { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 0 };
	uint32_t tid[2] = { (uint32_t)r->pid, (uint32_t)r->tid }, cpu[2];
	unsigned kind;
	int stacked, packed;

	memcpy(&h, rec, sizeof(h));
	kind = h.kind & ~STREAM_PACKED;
	packed = (h.kind & STREAM_PACKED) != 0;
	/* Checked again on this copy: the program may have written its
	 * ring since it was collected. */
	if ((kind != STREAM_ALLOC && kind != STREAM_FREE) || (packed && !as->pack))
		return 0;
	/* An allocation, or a free that carries its stack (stream.h). */
	stacked = kind == STREAM_ALLOC || size > sizeof(h);
	if (packed && !stacked)
		return 0;
	if (stacked) {
		if (size < sizeof(a))
			return 0;
		memcpy(&a, rec, sizeof(a));
		if (a.dump_len > as->dump_max || a.dump_len % 8)
			return 0;
		dump = ring_rec + sizeof(a);
		dump_len = a.dump_len;
		ip = a.regs[STREAM_REG_IP];
		if (packed) {
			/* The bitmap copied out first: the words it marks are
			 * counted from the copy. */
			uint64_t words = dump_len / 8;

			blocks = (words + 63) / 64;
			if (blocks > STACKDUMP_MAX_BLOCKS || sizeof(a) + 8 * blocks > size)
				return 0;
			memcpy(bits, dump, 8 * blocks);
			for (uint64_t b = 0; b < blocks; b++)
				nr_words += stackdump_pop64(bits[b]);
			if ((words % 64 && bits[blocks - 1] >> (words % 64)) || sizeof(a) + 8 * (blocks + nr_words) != size)
				return 0;
			dump += 8 * blocks;
		} else if (sizeof(a) + a.dump_len > size) {
			return 0;
		}
	}
	e = kind == STREAM_ALLOC ? as->alloc_ev : as->free_ev;
	st = e->attr.sample_type;
	cpu[0] = h.cpu;
	cpu[1] = 0;
	if (st & PERF_SAMPLE_IDENTIFIER)
		put64(&p, kind == STREAM_ALLOC ? as->alloc_id : as->free_id);
	if (st & PERF_SAMPLE_IP)
		put64(&p, ip);
	if (st & PERF_SAMPLE_TID) {
		memcpy(p, tid, 8);
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME)
		put64(&p, h.time);
	if (st & PERF_SAMPLE_ADDR)
		put64(&p, 0);
	if (st & PERF_SAMPLE_CPU) {
		memcpy(p, cpu, 8);
		p += 8;
	}
	if (st & PERF_SAMPLE_PERIOD)
		put64(&p, 1);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		/* The user frames, as the kernel walks them: ip, then the
		 * return address above each saved frame pointer, while the
		 * frames stay inside the copied stack and go up it. */
		unsigned char *nr_at = p;
		uint64_t n = 0, bp, sp;

		p += 8;
		if (stacked && !packed) {
			put64(&p, PERF_CONTEXT_USER);
			put64(&p, ip);
			n = 2;
			bp = a.regs[STREAM_REG_BP];
			sp = a.regs[STREAM_REG_SP];
			while (n < CALLCHAIN_MAX + 1 && bp >= sp && bp % 8 == 0 && bp - sp + 16 <= dump_len) {
				uint64_t next, ret;

				memcpy(&next, dump + (bp - sp), 8);
				memcpy(&ret, dump + (bp - sp) + 8, 8);
				if (!ret)
					break;
				put64(&p, ret);
				n++;
				if (next <= bp)
					break;
				bp = next;
			}
		}
		memcpy(nr_at, &n, 8);
	}
	if (st & PERF_SAMPLE_RAW) {
		raw_len = (uint32_t)(kind == STREAM_ALLOC ? as->alloc_raw : as->free_raw);
		raw_size = ((raw_len + 4 + 7) & ~7u) - 4;
		memset(raw, 0, raw_size);
		{
			uint16_t type = (uint16_t)e->attr.config;
			int32_t pid = (int32_t)r->tid;

			memcpy(raw, &type, 2);
			memcpy(raw + 4, &pid, 4);
			memcpy(raw + 8, &ip, 8);
		}
		if (kind == STREAM_ALLOC) {
			memcpy(raw + as->alloc_ptr, &h.ptr, 8);
			memcpy(raw + as->alloc_size, &a.size, 8);
			memcpy(raw + as->alloc_weight, &a.weight, 8);
		} else {
			memcpy(raw + as->free_ptr, &h.ptr, 8);
		}
		if (as->kind) {
			uint64_t k = kind == STREAM_ALLOC ? OTEL_KIND_ALLOC : OTEL_KIND_FREE;

			memcpy(raw + as->kind, &k, 8);
		}
		memcpy(p, &raw_size, 4);
		memcpy(p + 4, raw, raw_size);
		p += 4 + raw_size;
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		if (stacked && e->attr.sample_regs_user) {
			int k = 0;

			put64(&p, PERF_SAMPLE_REGS_ABI_64);
			for (int bit = 0; bit < 64; bit++) {
				if (!(STREAM_REGS_MASK >> bit & 1))
					continue;
				if (e->attr.sample_regs_user >> bit & 1)
					put64(&p, a.regs[k]);
				k++;
			}
		} else {
			put64(&p, PERF_SAMPLE_REGS_ABI_NONE);
		}
	}
	if ((st & PERF_SAMPLE_STACK_USER) && packed && dump_len) {
		/* formats/stackdump.h's packed field: size and dyn_size are
		 * one, the wrapper having copied only what the stack holds. */
		put64(&p, dump_len);
		put64(&p, dump_len);
		put64(&p, nr_words);
		memcpy(p, bits, 8 * blocks);
		p += 8 * blocks;
		memcpy(p, dump, 8 * nr_words);
		p += 8 * nr_words;
		ph.type = STACKDUMP_PACKED_SAMPLE;
	} else if (st & PERF_SAMPLE_STACK_USER) {
		put64(&p, dump_len);
		if (dump_len) {
			memcpy(p, dump, dump_len);
			p += dump_len;
			put64(&p, dump_len);
		}
	}
	ph.size = (uint16_t)(p - out);
	memcpy(out, &ph, sizeof(ph));
	return ph.size;
}

/* What the kernel would have kept of an allocation with the site's
 * filter (-z, -Z) and period (-s N); every free is kept. */
static int alloc_kept(struct allocstream *as, const unsigned char *rec, size_t size)
{
	struct stream_alloc a;

	if ((((const struct stream_rec *)rec)->kind & ~STREAM_PACKED) != STREAM_ALLOC || size < sizeof(a))
		return 1;
	memcpy(&a, rec, sizeof(a));
	if ((as->min_size && a.size < as->min_size) || (as->max_size && a.size > as->max_size))
		return 0;
	return ++as->count % as->period == 0;
}

/* A waiting writer is told it has room again. */
static void tail_store(struct allocstream *as, struct as_ring *r)
{
	__atomic_store_n(&r->hdr->tail, r->tail, __ATOMIC_RELEASE);
	if (__atomic_load_n(&r->hdr->waiting, __ATOMIC_ACQUIRE)) {
		struct as_conn *c = &as->conns[r->conn];
		char b = 0;

		__atomic_store_n(&r->hdr->waiting, 0, __ATOMIC_RELEASE);
		if (c->fd >= 0 && send(c->fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			/* A full socket already holds a wakeup. */
		}
	}
}

/* The ring's process's code filter as the mappings applied up to horizon
 * have it, and then the horizon (stream.h). Bits are only ever added: a
 * writer may be reading them. */
static void code_publish(struct recorder *rc, struct as_ring *r, uint64_t horizon)
{
	struct stream_ring_hdr *h = r->hdr;
	struct em_gen *g;

	if (r->unfiltered || !(g = execmap_at(&rc->em, r->pid, horizon)))
		return;
	if (g->all) {
		/* Code too big for a filter: every word may be code. */
		r->unfiltered = 1;
		__atomic_store_n(&h->code_ok, 0, __ATOMIC_RELEASE);
	} else if (g->stamp != r->stamp) {
		for (size_t i = 0; i < STREAM_CODE_WORDS; i++)
			__atomic_fetch_or(&h->code[i], g->filter[i], __ATOMIC_RELAXED);
		__atomic_store_n(&h->code_ok, 1, __ATOMIC_RELEASE);
		r->stamp = g->stamp;
	}
	__atomic_store_n(&h->horizon, horizon, __ATOMIC_RELEASE);
}

int allocstream_drain(struct recorder *rc, uint64_t t0, int final)
{
	struct allocstream *as = &rc->as;
	size_t w = 0, known;
	struct epoll_event evs[64];
	int n;

	if (as->listen_fd < 0)
		return 0;
	/* Only the connections with something to say: a long recording can
	 * have seen thousands of processes come and go. */
	known = as->nr_conns;
	do {
		n = epoll_wait(as->ep, evs, 64, 0);
		for (int i = 0; i < n; i++)
			if (evs[i].data.u64 == LISTEN_KEY)
				conn_accept(rc);
			else if (evs[i].data.u64 < as->nr_conns)
				conn_read(rc, (size_t)evs[i].data.u64);
	} while (n == 64);
	/* Those accepted now: their rings before their records. */
	for (size_t i = known; i < as->nr_conns; i++)
		conn_read(rc, i);
	as->nr_batch = 0;
	for (size_t i = 0; i < as->nr_rings; i++)
		if (!as->rings[i].broken && ring_collect(as, i, t0, final))
			return msg_error("out of memory for the wrapper's reports");
	if (as->nr_batch > 1)
		qsort(as->batch, as->nr_batch, sizeof(*as->batch), ref_cmp);
	for (size_t i = 0; i < as->nr_batch; i++) {
		const struct as_ref *b = &as->batch[i];
		struct as_ring *r = &as->rings[b->ring];
		struct rec_event *e;
		unsigned kind;
		size_t n;

		/* The record after next: the collecting pass's lines may be
		 * gone from the cache by now. */
		if (i + 2 < as->nr_batch) {
			const struct as_ref *c = &as->batch[i + 2];

			for (uint32_t o = 0; o < c->size && o < 1024; o += 64)
				__builtin_prefetch(as->rings[c->ring].data + c->off + o);
		}

		/* The fixed part copied out first: the ring is the program's
		 * memory. */
		memcpy(as->rec, r->data + b->off, b->size < sizeof(struct stream_alloc) ? b->size : sizeof(struct stream_alloc));
		if (!alloc_kept(as, as->rec, b->size))
			continue;
		n = sample_make(as, r, as->rec, r->data + b->off, b->size, as->rec + 65536);
		if (!n) {
			if (!r->broken)
				ring_broken(as, r);
			continue;
		}
		kind = ((const struct stream_rec *)as->rec)->kind;
		e = (kind & ~STREAM_PACKED) == STREAM_ALLOC ? as->alloc_ev : as->free_ev;
		as->packed += (kind & STREAM_PACKED) != 0;
		if (rec_record_put(rc, &rc->wrapper_out, e, as->rec + 65536, n))
			return -1;
		as->reports++;
	}
	/* Rings taken to their end whose writers are gone are let go. */
	for (size_t i = 0; i < as->nr_rings; i++) {
		struct as_ring *r = &as->rings[i];
		int gone = as->conns[r->conn].closed || __atomic_load_n(&r->hdr->closed, __ATOMIC_ACQUIRE);

		dropped_take(as, r);
		if (!r->broken) {
			tail_store(as, r);
			if (as->pack)
				code_publish(rc, r, t0);
		}
		if (r->broken || (gone && r->tail == __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE))) {
			munmap(r->hdr, STREAM_HDR_SIZE + r->size);
			continue;
		}
		as->rings[w++] = *r;
	}
	as->nr_rings = w;
	if (rc->wrapper_out.len >= CHUNK_TARGET)
		rec_ring_flush(rc, &rc->wrapper_out);
	return 0;
}
