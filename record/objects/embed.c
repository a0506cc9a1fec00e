/*
 * record/objects/embed.c: objects carried inside a trace; see embed.h.
 *
 * The payload of a TRACE_META_OBJECT chunk (little-endian):
 *   u8 version (1), u8 mode (1 minimal, 2 full), u8 build-id length,
 *   u8 0, 20 bytes build-id, u64 size of the original file,
 *   u16 path length, the path, then the ELF bytes.
 */
#include "embed.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <linux/perf_event.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "../../formats/cache.h"
#include "../../formats/elfcut.h"
#include "../../formats/meta.h"
#include "../../formats/msg.h"
#include "../procs/procsnap.h"

/* One chunk holds at most 64 MiB; leave room for the header. */
#define EMBED_MAX ((64u << 20) - 4096)

int embed_mode_parse(const char *s)
{
	if (!strcmp(s, "minimal"))
		return EMBED_MINIMAL;
	if (!strcmp(s, "full"))
		return EMBED_FULL;
	if (!strcmp(s, "none"))
		return EMBED_NONE;
	return -1;
}

void embed_set_add(struct embed_set *e, const char *path)
{
	char *p;

	for (size_t i = 0; i < e->nr; i++)
		if (!strcmp(e->paths[i], path))
			return;
	if (e->nr == e->alloc) {
		size_t n = e->alloc ? e->alloc * 2 : 32;
		char **v = realloc(e->paths, n * sizeof(*v));

		if (!v)
			return;
		e->paths = v;
		e->alloc = n;
	}
	if ((p = strdup(path)))
		e->paths[e->nr++] = p;
}

void embed_set_release(struct embed_set *e)
{
	for (size_t i = 0; i < e->nr; i++)
		free(e->paths[i]);
	free(e->paths);
	e->paths = NULL;
	e->nr = e->alloc = 0;
}

/* An object cut down (formats/elfcut.h), in memory: a debug file's
 * sections are often zlib; the trace's zstd chunk does better, and the
 * analyzer then reads them without inflating. */
static int cut_elf(Elf *in, enum elfcut_keep keep, unsigned char **out, size_t *len)
{
	int fd = memfd_create("memsight-embed", MFD_CLOEXEC), ret = -1;
	struct stat st;

	if (fd < 0)
		return -1;
	if (!elfcut_write(in, keep, fd) && !fstat(fd, &st) && (*out = malloc(st.st_size ? st.st_size : 1)) &&
	    pread(fd, *out, st.st_size, 0) == st.st_size) {
		*len = st.st_size;
		ret = 0;
	}
	close(fd);
	return ret;
}

/* The META payload around elf_len bytes of ELF (FORMAT.md, "object"). */
static unsigned char *payload(const char *path, enum embed_mode mode, const unsigned char *bid, int bid_len,
			      uint64_t size, const unsigned char *elf_bytes, size_t elf_len, size_t *plen)
{
	size_t pl = strlen(path), n = 4 + 20 + 8 + 2 + pl + elf_len;
	unsigned char *p = malloc(n);
	uint16_t l16 = pl;

	if (!p)
		return NULL;
	p[0] = 1;
	p[1] = mode;
	p[2] = bid_len;
	p[3] = 0;
	memset(p + 4, 0, 20);
	memcpy(p + 4, bid, bid_len);
	memcpy(p + 24, &size, 8);
	memcpy(p + 32, &l16, 2);
	memcpy(p + 34, path, pl);
	memcpy(p + 34 + pl, elf_bytes, elf_len);
	*plen = n;
	return p;
}

/* The payload for one object; NULL (with a line on stderr) when it cannot be packed. */
static unsigned char *pack(const char *path, enum embed_mode mode, const unsigned char *bid, int bid_len,
			   size_t *plen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned char *elf_bytes = NULL, *p = NULL;
	size_t elf_len = 0;
	struct stat st;
	Elf *elf = NULL;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto out;
	if (mode == EMBED_FULL) {
		if ((size_t)st.st_size > EMBED_MAX) {
			msg_note("not embedding '%s': %lld bytes is over a chunk's limit; "
					"use --embed minimal",
				path, (long long)st.st_size);
			goto out;
		}
		elf_bytes = malloc(st.st_size ? st.st_size : 1);
		if (!elf_bytes || pread(fd, elf_bytes, st.st_size, 0) != st.st_size)
			goto out;
		elf_len = st.st_size;
	} else {
		elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (!elf || elf_kind(elf) != ELF_K_ELF ||
		    cut_elf(elf, mode == EMBED_DEBUG ? ELFCUT_DEBUG : ELFCUT_MINIMAL, &elf_bytes, &elf_len))
			goto out;
		if (elf_len > EMBED_MAX) {
			msg_note("not embedding %s of '%s': %zu bytes is over a chunk's limit",
				mode == EMBED_DEBUG ? "the debug information" : "the tables", path, elf_len);
			goto out;
		}
	}
	p = payload(path, mode, bid, bid_len, st.st_size, elf_bytes, elf_len, plen);
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	free(elf_bytes);
	return p;
}

/* Where the debug information of an object is: the object itself when it
 * has a DIE tree, else its debug file by build-id where Debian's -dbg and
 * -dbgsym packages put it, when that file's build-id is the object's. */
static int debug_source(const char *path, const unsigned char *bid, int bl, char *out, size_t outlen)
{
	unsigned char got[BUILD_ID_MAX];
	char hex[2 * BUILD_ID_MAX + 1];
	int fd = open(path, O_RDONLY | O_CLOEXEC), own = 0;
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t shstrndx;

	if (elf && !elf_getshdrstrndx(elf, &shstrndx)) {
		Elf_Scn *scn = NULL;

		while (!own && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			own = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS && sh.sh_size &&
			      (name = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(name, ".debug_info");
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	if (own) {
		snprintf(out, outlen, "%s", path);
		return 1;
	}
	procsnap_build_id_hex(bid, bl, hex);
	snprintf(out, outlen, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	return procsnap_build_id(out, got) == bl && !memcmp(got, bid, bl) ? 2 : 0;
}

/*
 * Packed entries are kept between recordings in the cache directory
 * (formats/cache.h), stored as the trace stores them: packing libc's debug
 * entry means inflating 8.5 MiB of zlib and compressing it again, most of
 * what a short recording costs. A file is named by what makes its bytes
 * (the build-id, the mode, a hash of the path the payload names and of
 * the sections packing keeps, the codec) and holds: "MSEMBED1", u32 codec, u32 length decoded, u32 length
 * stored, u32 CRC of the stored bytes, then those bytes.
 */
#define EMBED_CACHE_MAGIC "MSEMBED1"
#define EMBED_CACHE_HEADER 24

static int embed_cache_name(const char *path, enum embed_mode mode, const unsigned char *bid, int bl,
			    enum trace_codec codec, char *out, size_t len)
{
	const char *const *keep = elfcut_sections(mode == EMBED_DEBUG ? ELFCUT_DEBUG : ELFCUT_MINIMAL);
	char dir[PATH_MAX], hex[2 * BUILD_ID_MAX + 1];
	uint32_t h = 2166136261u;
	int n;

	if (cache_dir(dir, sizeof(dir)))
		return -1;
	/* The hash covers what packing keeps, so an entry packed by a
	 * recorder that kept other sections is never taken for one. */
	for (const char *c = path; *c; c++)
		h = (h ^ (unsigned char)*c) * 16777619u;
	for (int i = 0; mode != EMBED_FULL && keep[i]; i++)
		for (const char *c = keep[i]; *c; c++)
			h = (h ^ (unsigned char)*c) * 16777619u;
	procsnap_build_id_hex(bid, bl, hex);
	n = snprintf(out, len, "%s/%s-%d-%08x-%d.packed", dir, hex, mode, h, codec);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* The cached entry at name into w; 0 when it was there and whole. */
static int embed_cache_load(const char *name, struct trace_writer *w, size_t *raw)
{
	unsigned char h[EMBED_CACHE_HEADER], *p = NULL;
	uint32_t codec, len, stored, crc;
	int fd = open(name, O_RDONLY | O_CLOEXEC), ret = -1;
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_size < EMBED_CACHE_HEADER || pread(fd, h, sizeof(h), 0) != sizeof(h) ||
	    memcmp(h, EMBED_CACHE_MAGIC, 8))
		goto out;
	memcpy(&codec, h + 8, 4);
	memcpy(&len, h + 12, 4);
	memcpy(&stored, h + 16, 4);
	memcpy(&crc, h + 20, 4);
	if ((uint64_t)st.st_size != EMBED_CACHE_HEADER + (uint64_t)stored || !(p = malloc(stored ? stored : 1)) ||
	    pread(fd, p, stored, EMBED_CACHE_HEADER) != (ssize_t)stored ||
	    crc32(0, p, stored) != crc)
		goto out;
	/* A damaged file is only a miss: the entry is packed again. */
	if (trace_writer_add_encoded(w, TRACE_CHUNK_META, TRACE_META_OBJECT, codec, p, stored, len))
		goto out;
	*raw = len;
	ret = 0;
out:
	free(p);
	close(fd);
	return ret;
}

static void embed_cache_store(const char *name, int codec, size_t len, const void *stored, size_t slen)
{
	unsigned char h[EMBED_CACHE_HEADER];
	uint32_t v[4] = { (uint32_t)codec, (uint32_t)len, (uint32_t)slen, (uint32_t)crc32(0, stored, slen) };

	memcpy(h, EMBED_CACHE_MAGIC, 8);
	memcpy(h + 8, v, sizeof(v));
	cache_store(name, h, sizeof(h), stored, slen);
}

static void embed_one(struct embed_set *e, struct trace_writer *w, const char *path, enum embed_mode mode,
		      const unsigned char *bid, int bl)
{
	char name[PATH_MAX];
	int cached = !embed_cache_name(path, mode, bid, bl, w->codec, name, sizeof(name)), codec;
	size_t len, slen;
	const void *stored;
	unsigned char *p;

	if (!cached || embed_cache_load(name, w, &len)) {
		if (!(p = pack(path, mode, bid, bl, &len)))
			return;
		codec = trace_writer_encode(w, p, len, &stored, &slen);
		if (codec >= 0) {
			if (cached)
				embed_cache_store(name, codec, len, stored, slen);
			trace_writer_add_encoded(w, TRACE_CHUNK_META, TRACE_META_OBJECT, codec, stored, slen, len);
		}
		free(p);
	}
	if (mode == EMBED_DEBUG)
		e->debug++;
	else
		e->objects++;
	e->bytes += len;
}

/* The kernel maps the same vDSO image into every 64-bit process, so the
 * recorder's own is the recorded processes' one. Only when recording:
 * memsight archive may run under another kernel. */
static void embed_vdso(struct embed_set *e, struct trace_writer *w)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo = 0, hi = 0;
	unsigned char bid[BUILD_ID_MAX], *p;
	size_t len;
	int bl;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " [vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			break;
	fclose(f);
	if (hi <= lo || (bl = procsnap_build_id_mem((const void *)lo, hi - lo, bid)) <= 0)
		return;
	p = payload(TRACE_OBJECT_VDSO, EMBED_FULL, bid, bl, hi - lo, (const unsigned char *)lo, hi - lo, &len);
	if (!p)
		return;
	trace_writer_add(w, TRACE_CHUNK_META, TRACE_META_OBJECT, 0, p, len, 0);
	e->objects++;
	e->bytes += len;
	free(p);
}

void embed_set_write(struct embed_set *e, struct trace_writer *w)
{
	unsigned char (*seen)[BUILD_ID_MAX] = calloc(e->nr ? e->nr : 1, sizeof(*seen));
	size_t nr_seen = 0;

	if (e->mode == EMBED_NONE || !seen) {
		free(seen);
		return;
	}
	elf_version(EV_CURRENT);
	for (size_t i = 0; i < e->nr; i++) {
		unsigned char bid[BUILD_ID_MAX] = { 0 };
		int bl = procsnap_build_id(e->paths[i], bid), dup = 0, src;
		char dbg[PATH_MAX];

		/* Without a build-id nothing could tell a wrong file from
		 * the right one: such objects stay out. */
		if (bl <= 0)
			continue;
		for (size_t j = 0; j < nr_seen && !dup; j++)
			dup = !memcmp(seen[j], bid, sizeof(bid));
		if (dup)
			continue;
		memcpy(seen[nr_seen++], bid, sizeof(bid));
		if (bl > BUILD_ID_MAX)
			bl = BUILD_ID_MAX;
		embed_one(e, w, e->paths[i], e->mode, bid, bl);
		/* A full object that has its own debug information carries it
		 * already. */
		src = debug_source(e->paths[i], bid, bl, dbg, sizeof(dbg));
		if (src == 2 || (src == 1 && e->mode == EMBED_MINIMAL))
			embed_one(e, w, dbg, EMBED_DEBUG, bid, bl);
	}
	free(seen);
	if (e->vdso)
		embed_vdso(e, w);
}

/* ---- memsight archive ------------------------------------------------ */

static void objects_from_records(struct embed_set *e, const unsigned char *p, size_t len)
{
	size_t off = 0;

	while (off + 8 <= len) {
		const struct perf_event_header *h = (const void *)(p + off);
		uint32_t prot;

		if (h->size < 8 || h->size % 8 || off + h->size > len)
			break;
		if (h->type == PERF_RECORD_MMAP2 && h->size > 73) {
			memcpy(&prot, p + off + 64, 4);
			if ((prot & 4) && p[off + 72] == '/' && memchr(p + off + 72, 0, h->size - 72))
				embed_set_add(e, (const char *)p + off + 72);
		}
		off += h->size;
	}
}

void embed_set_add_maps(struct embed_set *e, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	/* A snapshot's map lines (procsnap.c): "map", start, end, perms,
	 * offset, dev, inode, build-id, then the path, tab-separated. */
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end, *perms = NULL, *file = NULL;
		char path[PATH_MAX];
		int tabs = 0;

		for (const char *q = p; q < le && !file; q++) {
			if (*q != '\t')
				continue;
			if (++tabs == 3)
				perms = q + 1;
			else if (tabs == 8)
				file = q + 1;
		}
		if (!strncmp(p, "map\t", 4) && file && (size_t)(le - file) < sizeof(path) && le - perms > 3) {
			memcpy(path, file, le - file);
			path[le - file] = 0;
			if (perms[2] == 'x' && path[0] == '/')
				embed_set_add(e, path);
			else if (!strcmp(path, TRACE_OBJECT_VDSO))
				e->vdso = 1;
		}
		p = nl ? nl + 1 : end;
	}
}

int embed_archive(const char *path, enum embed_mode mode, struct embed_archived *out, char *err, size_t errlen)
{
	struct trace_reader r;
	struct trace_writer w;
	struct trace_writer_opts o = { .codec = TRACE_CODEC_ZSTD };
	struct embed_set e = { .mode = mode };
	unsigned char *buf = NULL;
	size_t alloc = 0;
	char tmp[PATH_MAX];
	int fd, ret = -1, had = 0;

	if (trace_reader_open(&r, path, err, errlen))
		return -1;
	/* A ring is archived as the window it holds now, running or not. */
	if (!r.complete && !(r.file_flags & TRACE_FILE_RING)) {
		snprintf(err, errlen, "'%s' is not complete (%s); archive only finished recordings", path, r.stop);
		trace_reader_release(&r);
		return -1;
	}
	o.file_flags = r.file_flags & TRACE_FILE_RING ? TRACE_FILE_WINDOW : r.file_flags;
	o.created_ns = r.created_ns;
	snprintf(tmp, sizeof(tmp), "%s.archive-XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a file beside '%s': %s", path, strerror(errno));
		trace_reader_release(&r);
		return -1;
	}
	fchmod(fd, 0600);
	trace_writer_init_fd(&w, fd, &o);
	if (r.file_flags & TRACE_FILE_RING) {
		char text[128];
		int n = snprintf(text, sizeof(text), "overwritten_bytes %llu\noverwritten_records %llu\n",
				 (unsigned long long)r.ring.overwritten_bytes, (unsigned long long)r.ring.overwritten_records);

		/* What the window no longer holds, said as a snapshot says it. */
		trace_writer_add(&w, TRACE_CHUNK_META, TRACE_META_SNAPSHOT, 0, text, n, 0);
	}
	for (size_t i = 0; i < r.nr_chunks; i++) {
		const struct trace_chunk *c = &r.chunks[i];
		long n;

		if (c->type == TRACE_CHUNK_INDEX || c->type == TRACE_CHUNK_TRAILER)
			continue;
		n = trace_chunk_payload(&r, i, &buf, &alloc, err, errlen);
		if (n < 0)
			goto out;
		if (c->type == TRACE_CHUNK_META) {
			if (c->stream == TRACE_META_OBJECT) {
				had++;
				continue; /* packed again below, in the mode asked for */
			}
			if (c->stream == TRACE_META_PROCESS)
				embed_set_add_maps(&e, (const char *)buf, n);
			trace_writer_add(&w, TRACE_CHUNK_META, c->stream, 0, buf, n, 0);
		} else if (c->type == TRACE_CHUNK_DATA) {
			objects_from_records(&e, buf, n);
			trace_writer_add(&w, TRACE_CHUNK_DATA, c->stream, c->time, buf, n, trace_records_count(buf, n));
		} else if (c->type == TRACE_CHUNK_LOSS) {
			trace_writer_add_loss(&w, (const struct trace_loss *)buf, n / sizeof(struct trace_loss));
		}
	}
	/* The vDSO now may not be the one the recording's kernel mapped. */
	e.vdso = 0;
	embed_set_write(&e, &w);
	if (trace_writer_finish(&w)) {
		snprintf(err, errlen, "cannot write '%s': %s", tmp, trace_writer_strerror(&w));
		goto out;
	}
	if (rename(tmp, path)) {
		snprintf(err, errlen, "cannot replace '%s': %s", path, strerror(errno));
		goto out;
	}
	tmp[0] = 0;
	*out = (struct embed_archived){ e.objects, e.debug, e.bytes, had };
	ret = 0;
out:
	trace_writer_release(&w);
	close(fd);
	if (tmp[0])
		unlink(tmp);
	free(buf);
	embed_set_release(&e);
	trace_reader_release(&r);
	return ret;
}
