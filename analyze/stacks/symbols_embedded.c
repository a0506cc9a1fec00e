/*
 * analyze/stacks/symbols_embedded.c: the objects a trace carries (META object chunks): their
 * headers read when the trace opens, their ELF bytes decompressed into the
 * cache directory or a memfd the first time a lookup needs them.
 */
#include "symbols_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../formats/cache.h"
#include "../sha256.h"

int symbols_embedded_ref(struct symbols *s, const struct trace_reader *r, size_t chunk)
{
	unsigned char p[34];
	struct embedded **v, *e;
	uint32_t raw = r->chunks[chunk].raw_len;
	uint16_t pl;
	char err[256];

	if (raw < sizeof(p) || trace_chunk_read(r, chunk, 0, p, sizeof(p), err, sizeof(err)) < 0 || p[0] != 1 ||
	    p[1] < EMBED_MINIMAL || p[1] > EMBED_DEBUG || p[2] > 20)
		return -EINVAL;
	memcpy(&pl, p + 32, 2);
	if (34 + (size_t)pl > raw)
		return -EINVAL;
	v = realloc(s->embedded, (s->nr_embedded + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->embedded = v;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	pthread_mutex_init(&e->mu, NULL);
	e->mode = p[1];
	e->bid_len = p[2];
	memcpy(e->bid, p + 4, 20);
	memcpy(&e->original_size, p + 24, 8);
	e->fd = -1;
	e->r = r;
	e->chunk = chunk;
	e->skip = 34 + pl;
	e->len = raw - e->skip;
	e->path = malloc(pl + 1);
	if (!e->path || trace_chunk_read(r, chunk, 34, e->path, pl, err, sizeof(err)) < 0) {
		int ret = e->path ? -EINVAL : -ENOMEM;

		free(e->path);
		pthread_mutex_destroy(&e->mu);
		free(e);
		return ret;
	}
	e->path[pl] = 0;
	s->embedded[s->nr_embedded++] = e;
	return 0;
}

static int fd_write_all(void *arg, const void *buf, size_t n)
{
	return cache_write_all(*(int *)arg, buf, n);
}

/* e's file in the cache, named by the SHA-256 of what it is decoded
 * from: the stored chunk's codec and bytes, and where the ELF lies in
 * them. Another trace reaches that name only with the very same bytes,
 * which decode to the very same file: what one trace carries never
 * changes how another is read. The build-id leads, for whoever lists the
 * directory. */
static int cache_name(const struct embedded *e, char *buf, size_t len)
{
	const struct trace_chunk *c = &e->r->chunks[e->chunk];
	char dir[PATH_MAX], hex[41], key[65];
	unsigned char sum[32];
	uint64_t what[3] = { c->codec, e->skip, e->len };
	struct sha256 h;
	int n;

	if (cache_dir(dir, sizeof(dir)) || c->offset + TRACE_CHUNK_HEADER_SIZE + c->payload_len > e->r->size)
		return -1;
	sha256_init(&h);
	sha256_update(&h, what, sizeof(what));
	sha256_update(&h, e->r->base + c->offset + TRACE_CHUNK_HEADER_SIZE, c->payload_len);
	sha256_final(&h, sum);
	for (int i = 0; i < 32; i++)
		snprintf(key + 2 * i, 3, "%02x", sum[i]);
	symbols_build_id_hex(e->bid, e->bid_len, hex);
	n = snprintf(buf, len, "%s/%s-%d-%s.elf", dir, hex, e->mode, key);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Decompress e's ELF, a piece at a time through write(): neither page
 * faults nor a populating mmap, which holds the address space's lock and
 * stalls the other thread's mmap and faults for as long as it runs. Into
 * the cache when there is one (the next run of any command on this trace,
 * or another with the same object, opens it instead of decoding: 8.7 MB
 * for libc's debug entry), else into a memfd. One that fails is not tried
 * again (fd -2). */
static int embedded_open(struct embedded *e)
{
	char name[PATH_MAX], tmp[PATH_MAX + 32], err[256];
	int fd, cached = e->fd != -2 && !cache_name(e, name, sizeof(name));
	struct stat st;

	if (e->fd == -2)
		return -1;
	e->fd = -2;
	if (cached) {
		/* Not through a link, nor blocking on a FIFO left under the
		 * name. */
		fd = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_size == e->len) {
			e->fd = fd;
			return 0;
		}
		if (fd >= 0)
			close(fd);
		snprintf(tmp, sizeof(tmp), "%s.%d.%lx", name, (int)getpid(), (unsigned long)pthread_self());
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		cached = fd >= 0;
	}
	if (cached && trace_chunk_stream(e->r, e->chunk, e->skip, e->len, fd_write_all, &fd, err, sizeof(err)) < 0) {
		/* A full disk, say: the memfd below does without the cache. */
		close(fd);
		unlink(tmp);
		cached = 0;
	}
	if (!cached) {
		fd = memfd_create("memsight-object", MFD_CLOEXEC);
		if (fd < 0)
			return -1;
		if (trace_chunk_stream(e->r, e->chunk, e->skip, e->len, fd_write_all, &fd, err, sizeof(err)) < 0) {
			close(fd);
			return -1;
		}
	}
	/* Complete: only now under its name, so no reader sees it half made. */
	if (cached && rename(tmp, name))
		unlink(tmp);
	e->fd = fd;
	return 0;
}

void embedded_release(struct symbols *s)
{
	for (size_t i = 0; i < s->nr_embedded; i++) {
		struct embedded *e = s->embedded[i];

		if (e->fd >= 0)
			close(e->fd);
		pthread_mutex_destroy(&e->mu);
		free(e->path);
		free(e);
	}
	free(s->embedded);
	s->embedded = NULL;
	s->nr_embedded = 0;
}

int symbols_embedded_get(const struct symbols *s, size_t i, struct embedded_info *out)
{
	const struct embedded *e;

	if (i >= s->nr_embedded)
		return -1;
	e = s->embedded[i];
	*out = (struct embedded_info){ e->path, e->bid, e->bid_len, e->mode, e->len, e->original_size };
	return 0;
}

int embedded_path(const struct dso *d, unsigned modes, char *buf, size_t len)
{
	for (size_t i = 0; d->bid_len && i < d->owner->nr_embedded; i++) {
		struct embedded *e = d->owner->embedded[i];
		int fd;

		if (e->bid_len != d->bid_len || memcmp(e->bid, d->build_id, e->bid_len) || !(modes & (1u << e->mode)))
			continue;
		pthread_mutex_lock(&e->mu);
		if (e->fd < 0)
			embedded_open(e);
		fd = e->fd;
		pthread_mutex_unlock(&e->mu);
		if (fd < 0)
			return 0;
		snprintf(buf, len, "/proc/self/fd/%d", fd);
		return e->mode;
	}
	return 0;
}

