/*
 * analyze/stacks/symbols_embedded.c: the objects a trace carries (META object chunks): their
 * headers read when the trace opens, their ELF bytes decompressed into the
 * cache directory or a memfd the first time a lookup needs them.
 */
#include "symbols_int.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../formats/cache.h"
#include "../../formats/msg.h"
#include "../sha256.h"

/* The room the embedded objects have left (struct symbols), taken by the
 * loader thread and the main one. */
static pthread_mutex_t room_lock = PTHREAD_MUTEX_INITIALIZER;

/* One line for an object not used: what it claims (with its size in
 * MiB), and the bound it passes. */
static void refused(const struct embedded *e, const char *what, unsigned long long mib)
{
	char hex[41];

	symbols_build_id_hex(e->bid, e->bid_len, hex);
	if (mib)
		msg_warn("the trace's copy of '%s' (build-id %s) %s %llu MiB, past the %llu MiB its objects may expand "
			 "to (%u times the trace's size, and %llu MiB): not used, so what ran in it may stay unnamed",
			 e->path, hex, what, mib,
			 (TRACE_OBJECT_GROWTH * (unsigned long long)e->r->size + TRACE_OBJECT_SLACK) >> 20,
			 TRACE_OBJECT_GROWTH, TRACE_OBJECT_SLACK >> 20);
	else
		msg_warn("the trace's copy of '%s' (build-id %s) claims more than the %u MiB an embedded object may "
			 "hold: not used, so what ran in it may stay unnamed",
			 e->path, hex, (TRACE_OBJECT_MAX + 4095) >> 20);
}

/* Take n bytes of the room the trace's objects may expand to; 0, or -1
 * when that would pass the bound. */
static int room_take(struct symbols *s, uint64_t n)
{
	int ok;

	pthread_mutex_lock(&room_lock);
	ok = n <= s->embedded_room;
	if (ok)
		s->embedded_room -= n;
	pthread_mutex_unlock(&room_lock);
	return ok ? 0 : -1;
}

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
	e->owner = s;
	if (!s->embedded_room_set) {
		s->embedded_room = TRACE_OBJECT_GROWTH * (uint64_t)r->size + TRACE_OBJECT_SLACK;
		s->embedded_room_set = 1;
	}
	/* No recorder writes one this big: a bomb, or damage. */
	if (e->len > TRACE_OBJECT_MAX) {
		refused(e, NULL, 0);
		e->fd = -2;
	}
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
	n = snprintf(buf, len, "%s/" CACHE_ENTRY_PREFIX "%s-%d-%s.elf", dir, hex, e->mode, key);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* What the compressed sections of the ELF file fd would expand to when
 * libelf inflates them (SHF_COMPRESSED, and GNU's older .zdebug_ ones). */
static uint64_t inflated_sections(int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	uint64_t sum = 0;
	size_t shstr;

	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstr)) {
		if (elf)
			elf_end(elf);
		return 0;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		GElf_Chdr ch;
		const char *name;
		unsigned char z[12];

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		if (sh.sh_flags & SHF_COMPRESSED) {
			if (gelf_getchdr(scn, &ch))
				sum += ch.ch_size;
		} else if ((name = elf_strptr(elf, shstr, sh.sh_name)) && !strncmp(name, ".zdebug", 7) &&
			   sh.sh_size >= 12 && pread(fd, z, 12, sh.sh_offset) == 12 && !memcmp(z, "ZLIB", 4)) {
			uint64_t n = 0;

			for (int i = 4; i < 12; i++)
				n = n << 8 | z[i];
			sum += n;
		}
	}
	elf_end(elf);
	return sum;
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
	char name[PATH_MAX], tmp[PATH_MAX + 32] = "", err[256];
	int fd, cached = e->fd != -2 && !cache_name(e, name, sizeof(name));
	uint64_t inflated;
	struct stat st;

	if (e->fd == -2)
		return -1;
	e->fd = -2;
	if (room_take(e->owner, e->len)) {
		refused(e, "holds", (e->len + (1 << 20) - 1) >> 20);
		return -1;
	}
	if (cached) {
		/* Not through a link, nor blocking on a FIFO left under the
		 * name. */
		fd = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_size == e->len) {
			cache_touch(fd);
			goto made;
		}
		if (fd >= 0)
			close(fd);
		fd = cache_temp(name, tmp, sizeof(tmp));
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
made:
	/* libelf inflates a compressed section whole, in memory, when libdw
	 * reads it: what the sections claim counts as the file does. */
	if (room_take(e->owner, inflated = inflated_sections(fd))) {
		refused(e, "has compressed sections that inflate to", (inflated + (1 << 20) - 1) >> 20);
		close(fd);
		if (cached && tmp[0])
			unlink(tmp);
		return -1;
	}
	/* Complete: only now under its name, so no reader sees it half made. */
	if (cached && tmp[0]) {
		char dir[PATH_MAX];

		if (rename(tmp, name))
			unlink(tmp);
		else if (!cache_dir_of(name, dir, sizeof(dir)))
			cache_trim(dir);
	}
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

