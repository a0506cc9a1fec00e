/*
 * record/objects/embed.c: objects carried inside a trace; see embed.h.
 *
 * The payload of a TRACE_META_OBJECT chunk (little-endian):
 *   u8 version (1), u8 mode (1 minimal, 2 full), u8 build-id length,
 *   u8 0, 20 bytes build-id, u64 size of the original file,
 *   u16 path length, the path, then the ELF bytes.
 */
#include "embed.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <linux/perf_event.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "../procs/execmap.h"
#include "../../formats/cache.h"
#include "../../formats/elfcut.h"
#include "../../formats/meta.h"
#include "../../formats/replace.h"
#include "../../formats/msg.h"
#include "../procs/procfile.h"
#include "../procs/procsnap.h"

/* One chunk holds at most 64 MiB; leave room for the header. */

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

/* The payload for one object, read from fd; NULL when it cannot be packed
 * (*too_big then says whether its size was why). */
static unsigned char *pack(int fd, const char *path, enum embed_mode mode, const unsigned char *bid, int bid_len,
			   size_t *plen, int *too_big)
{
	unsigned char *elf_bytes = NULL, *p = NULL;
	size_t elf_len = 0;
	struct stat st;
	Elf *elf = NULL;

	*too_big = 0;
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto out;
	if (mode == EMBED_FULL) {
		if ((size_t)st.st_size > TRACE_OBJECT_MAX) {
			*too_big = 1;
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
		if (elf_len > TRACE_OBJECT_MAX) {
			*too_big = 1;
			goto out;
		}
	}
	p = payload(path, mode, bid, bid_len, st.st_size, elf_bytes, elf_len, plen);
out:
	if (elf)
		elf_end(elf);
	free(elf_bytes);
	return p;
}

/* Where the debug information of an object (open at fd) is: the object
 * itself when it has a DIE tree (1), else its debug file by build-id where
 * Debian's -dbg and -dbgsym packages put it, when that file's build-id is
 * the object's (2, that file opened at *dfd); 0 for nowhere. */
static int debug_source(int fd, const unsigned char *bid, int bl, int *dfd, char *dpath, size_t dlen)
{
	unsigned char got[BUILD_ID_MAX];
	char hex[2 * BUILD_ID_MAX + 1];
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t shstrndx;
	struct stat st;
	int own = 0;

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
	if (own)
		return 1;
	procsnap_build_id_hex(bid, bl, hex);
	snprintf(dpath, dlen, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	*dfd = procfile_open_own(dpath, &st);
	if (*dfd < 0) {
		*dfd = -1;
		return 0;
	}
	if (procsnap_build_id_fd(*dfd, got) != bl || memcmp(got, bid, bl)) {
		close(*dfd);
		*dfd = -1;
		return 0;
	}
	return 2;
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
	n = snprintf(out, len, "%s/" CACHE_ENTRY_PREFIX "%s-%d-%08x-%d.packed", dir, hex, mode, h, codec);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Where cached entries are read, kept for the next one: its pages are
 * made in one go (MAP_POPULATE), where a fresh buffer of a large entry
 * (node's tables are 6 MiB) took a fault for each of them as it was read
 * into. */
struct embed_buf {
	unsigned char *p;
	size_t size;
};

static unsigned char *embed_buf_get(struct embed_buf *b, size_t n)
{
	size_t want = (n + 0xfffff) & ~(size_t)0xfffff;
	void *m;

	if (n <= b->size)
		return b->p;
	if (b->p)
		munmap(b->p, b->size);
	b->p = NULL;
	b->size = 0;
	m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	b->p = m;
	b->size = want;
	return b->p;
}

static void embed_buf_release(struct embed_buf *b)
{
	if (b->p)
		munmap(b->p, b->size);
	b->p = NULL;
	b->size = 0;
}

/* The cached entry at name into w; 0 when it was there and whole. Its
 * bytes are checked against the entry's CRC, which then makes the
 * chunk's: one pass over them. */
static int embed_cache_load(const char *name, struct trace_writer *w, struct embed_buf *b, size_t *raw,
			    uint64_t room)
{
	unsigned char h[EMBED_CACHE_HEADER], *p;
	uint32_t codec, len, stored, crc;
	/* Not blocked on a FIFO someone left in its place: only a regular
	 * file is an entry. */
	int fd = open(name, O_RDONLY | O_CLOEXEC | O_NONBLOCK), ret = -1;
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < EMBED_CACHE_HEADER || pread(fd, h, sizeof(h), 0) != sizeof(h) ||
	    memcmp(h, EMBED_CACHE_MAGIC, 8))
		goto out;
	memcpy(&codec, h + 8, 4);
	memcpy(&len, h + 12, 4);
	memcpy(&stored, h + 16, 4);
	memcpy(&crc, h + 20, 4);
	if ((uint64_t)st.st_size != EMBED_CACHE_HEADER + (uint64_t)stored || !(p = embed_buf_get(b, stored ? stored : 1)) ||
	    pread(fd, p, stored, EMBED_CACHE_HEADER) != (ssize_t)stored || crc32(0, p, stored) != crc)
		goto out;
	if (len > room) {
		ret = -2;
		goto out;
	}
	/* A damaged file is only a miss: the entry is packed again. */
	if (trace_writer_add_encoded(w, TRACE_CHUNK_META, TRACE_META_OBJECT, codec, p, stored, len, crc))
		goto out;
	cache_touch(fd);
	*raw = len;
	ret = 0;
out:
	close(fd);
	return ret;
}

static void embed_cache_store(const char *name, int codec, size_t len, const void *stored, size_t slen, uint32_t crc)
{
	unsigned char h[EMBED_CACHE_HEADER];
	uint32_t v[4] = { (uint32_t)codec, (uint32_t)len, (uint32_t)slen, crc };

	memcpy(h, EMBED_CACHE_MAGIC, 8);
	memcpy(h + 8, v, sizeof(v));
	cache_store(name, h, sizeof(h), stored, slen);
}

/* Carry one entry: from the cache when it is there, else packed from fd.
 * Returns the payload's bytes, 0 when it could not be packed (*too_big
 * says whether its size was why). */
static size_t embed_one(struct embed_set *e, struct trace_writer *w, struct embed_buf *b, int fd, const char *path,
			enum embed_mode mode, const unsigned char *bid, int bl, int *too_big)
{
	char name[PATH_MAX];
	int cached = !embed_cache_name(path, mode, bid, bl, w->codec, name, sizeof(name)), codec, r = 0;
	uint64_t room = e->max_bytes > e->bytes ? e->max_bytes - e->bytes : 0;
	size_t len, slen;
	const void *stored;
	unsigned char *p;

	*too_big = 0;
	/* --embed-max is a bound on what is carried: an entry that would
	 * pass it is left out, whatever came before it. */
	if (cached && (r = embed_cache_load(name, w, b, &len, room)) == -2) {
		*too_big = 2;
		return 0;
	}
	if (!cached || r < 0) {
		if (!(p = pack(fd, path, mode, bid, bl, &len, too_big)))
			return 0;
		if (len > room) {
			free(p);
			*too_big = 2;
			return 0;
		}
		codec = trace_writer_encode(w, p, len, &stored, &slen);
		if (codec >= 0) {
			uint32_t crc = (uint32_t)crc32(0, stored, (uInt)slen);

			if (cached)
				embed_cache_store(name, codec, len, stored, slen, crc);
			r = trace_writer_add_encoded(w, TRACE_CHUNK_META, TRACE_META_OBJECT, codec, stored, slen, len, crc);
		}
		free(p);
	}
	/* No room left where it goes (a ring's head): past the bound. */
	if (r == -ENOSPC) {
		*too_big = 2;
		return 0;
	}
	if (mode == EMBED_DEBUG)
		e->debug++;
	else
		e->objects++;
	e->bytes += len;
	return len;
}

/* The kernel maps the same vDSO image into every 64-bit process, so the
 * recorder's own is the recorded processes' one. Only when recording:
 * memsight archive may run under another kernel. */
static size_t embed_vdso(struct embed_set *e, struct trace_writer *w, int *too_big)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo = 0, hi = 0;
	unsigned char bid[BUILD_ID_MAX], *p;
	size_t len;
	int bl;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " [vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			break;
	fclose(f);
	if (hi <= lo || (bl = procsnap_build_id_mem((const void *)lo, hi - lo, bid)) <= 0)
		return 0;
	p = payload(TRACE_OBJECT_VDSO, EMBED_FULL, bid, bl, hi - lo, (const unsigned char *)lo, hi - lo, &len);
	if (!p)
		return 0;
	if (e->bytes + len > e->max_bytes) {
		free(p);
		*too_big = 2;
		return 0;
	}
	trace_writer_add(w, TRACE_CHUNK_META, TRACE_META_OBJECT, 0, p, len, 0);
	e->objects++;
	e->bytes += len;
	free(p);
	return len;
}

static int item_add(struct embed_list *l, int fd, const unsigned char *bid, int bl, const char *path, int vdso,
		    enum objset_why why)
{
	struct embed_item *it;

	if (l->nr == l->alloc) {
		size_t n = l->alloc ? l->alloc * 2 : 64;
		struct embed_item *v = realloc(l->items, n * sizeof(*v));

		if (!v)
			return -1;
		l->items = v;
		l->alloc = n;
	}
	it = &l->items[l->nr];
	memset(it, 0, sizeof(*it));
	if (!(it->path = strdup(path)))
		return -1;
	it->fd = fd;
	it->bid_len = bl > 0 ? (bl > OBJSET_BUILD_ID_MAX ? OBJSET_BUILD_ID_MAX : bl) : 0;
	memcpy(it->bid, bid, it->bid_len);
	it->vdso = vdso;
	it->why = why;
	l->nr++;
	return 0;
}

/* Whether o is the recorder's own executable. Its fork runs it until the
 * command's exec, and those few faults touch it, but nothing recorded is
 * about it: carried, it would take 800 KiB of a ring's head from the
 * objects that matter. */
static int object_is_recorder(const struct objset_obj *o)
{
	static struct stat self;
	static int known;

	if (!known)
		known = stat("/proc/self/exe", &self) ? -1 : 1;
	return known > 0 && o->fd >= 0 && o->dev == self.st_dev && o->ino == self.st_ino;
}

int embed_list_touched(struct embed_list *l, struct objset *os, const struct execmap *em, int only_new)
{
	for (uint32_t id = 1; id <= os->nr; id++) {
		struct objset_obj *o = &os->objs[id - 1];
		int fd = -1;

		if (!execmap_touched(em, id) || (only_new && o->listed) || object_is_recorder(o))
			continue;
		if (only_new)
			o->listed = 1;
		if (o->fd >= 0 && (fd = fcntl(o->fd, F_DUPFD_CLOEXEC, 0)) < 0)
			return -1;
		if (item_add(l, fd, o->bid, o->bid_len, o->path, o->vdso, o->why)) {
			if (fd >= 0)
				close(fd);
			return -1;
		}
	}
	return 0;
}

void embed_list_release(struct embed_list *l)
{
	for (size_t i = 0; i < l->nr; i++) {
		if (l->items[i].fd >= 0)
			close(l->items[i].fd);
		free(l->items[i].path);
	}
	free(l->items);
	memset(l, 0, sizeof(*l));
}

/* The size of the cache's entry for what packing would make of path; 0
 * when it has none. */
static uint64_t embed_cached(const char *path, enum embed_mode mode, const unsigned char *bid, int bl,
			     enum trace_codec codec)
{
	char name[PATH_MAX];
	struct stat st;

	return !embed_cache_name(path, mode, bid, bl, codec, name, sizeof(name)) && !stat(name, &st) &&
		       S_ISREG(st.st_mode) && st.st_size > 0
		       ? (uint64_t)st.st_size
		       : 0;
}

/* Whether carrying it means packing nothing: its entries, the object's
 * and its debug information's, are in the cache (or it has none). Adds
 * their sizes to *bytes. */
static int item_ready(const struct embed_set *e, const struct embed_item *it, enum trace_codec codec, uint64_t *bytes)
{
	char dpath[PATH_MAX];
	int dfd = -1, src;
	uint64_t obj, dbg = 1;

	if (e->mode == EMBED_NONE || it->why != OBJSET_OK || it->vdso)
		return 1;
	if (!(obj = embed_cached(it->path, e->mode, it->bid, it->bid_len, codec)))
		return 0;
	src = debug_source(it->fd, it->bid, it->bid_len, &dfd, dpath, sizeof(dpath));
	if (src == 2)
		dbg = embed_cached(dpath, EMBED_DEBUG, it->bid, it->bid_len, codec);
	else if (src == 1 && e->mode == EMBED_MINIMAL)
		dbg = embed_cached(it->path, EMBED_DEBUG, it->bid, it->bid_len, codec);
	if (dfd >= 0)
		close(dfd);
	if (dbg)
		*bytes += obj + dbg;
	return dbg > 0;
}

/* Move l's item i to the end of rest; 0, or -1 (it stays) when out of memory. */
static int item_move(struct embed_list *l, size_t i, struct embed_list *rest)
{
	struct embed_item *it = &l->items[i];

	if (item_add(rest, it->fd, it->bid, it->bid_len, it->path, it->vdso, it->why))
		return -1;
	/* rest has the fd now, and a copy of the path. */
	free(it->path);
	return 0;
}

uint64_t embed_list_split_ready(const struct embed_set *e, struct embed_list *l, enum trace_codec codec,
				struct embed_list *rest)
{
	size_t kept = 0;
	uint64_t bytes = 0;

	elf_version(EV_CURRENT);
	for (size_t i = 0; i < l->nr; i++)
		if (item_ready(e, &l->items[i], codec, &bytes) || item_move(l, i, rest))
			l->items[kept++] = l->items[i];
	l->nr = kept;
	return bytes;
}

void embed_list_move(struct embed_list *l, struct embed_list *rest)
{
	size_t kept = 0;

	for (size_t i = 0; i < l->nr; i++)
		if (item_move(l, i, rest))
			l->items[kept++] = l->items[i];
	l->nr = kept;
}

/* The word for an object's state in the `objects` entry (FORMAT.md). */
static const char *why_word(enum objset_why why)
{
	switch (why) {
	case OBJSET_OK: return "carried";
	case OBJSET_GONE: return "gone";
	case OBJSET_NO_BUILD_ID: return "no-build-id";
	case OBJSET_NOT_ELF: return "not-elf";
	case OBJSET_UNREADABLE: return "unreadable";
	}
	return "unreadable";
}

void embed_list_write(struct embed_set *e, const struct embed_list *l, struct trace_writer *w)
{
	char *text = NULL, hex[2 * BUILD_ID_MAX + 1];
	size_t len = 0, alloc = 0;
	struct embed_buf b = { NULL, 0 };

	elf_version(EV_CURRENT);
	for (size_t i = 0; i < l->nr; i++) {
		const struct embed_item *it = &l->items[i];
		const char *state = why_word(it->why);
		int dup = 0, too_big = 0, n;

		/* Carried once by build-id: a container's copy of a file the
		 * host has too is the same object. */
		for (size_t j = 0; j < i && !dup; j++)
			dup = l->items[j].bid_len == it->bid_len && it->bid_len &&
			      !memcmp(l->items[j].bid, it->bid, it->bid_len);
		if (dup)
			continue;
		if (e->mode == EMBED_NONE)
			state = "not-asked";
		else if (it->why != OBJSET_OK)
			;
		else if (e->bytes >= e->max_bytes)
			state = "over-bound";
		else if (it->vdso)
			state = embed_vdso(e, w, &too_big) ? "carried" : too_big ? "over-bound" : "unreadable";
		else if (!embed_one(e, w, &b, it->fd, it->path, e->mode, it->bid, it->bid_len, &too_big))
			state = too_big == 2 ? "over-bound" : too_big ? "too-big" : "unreadable";
		else {
			char dpath[PATH_MAX];
			int dfd = -1, src = debug_source(it->fd, it->bid, it->bid_len, &dfd, dpath, sizeof(dpath));

			/* A full object that has its own debug information
			 * carries it already. */
			if (src == 2)
				embed_one(e, w, &b, dfd, dpath, EMBED_DEBUG, it->bid, it->bid_len, &too_big);
			else if (src == 1 && e->mode == EMBED_MINIMAL)
				embed_one(e, w, &b, it->fd, it->path, EMBED_DEBUG, it->bid, it->bid_len, &too_big);
			if (dfd >= 0)
				close(dfd);
		}
		if (strcmp(state, "carried"))
			e->not_carried++;
		procsnap_build_id_hex(it->bid, it->bid_len, hex);
		n = snprintf(NULL, 0, "%s\t%s\t%s\n", it->bid_len ? hex : "-", state, it->path);
		if (len + n + 1 > alloc) {
			char *t = realloc(text, alloc = (len + n + 1) * 2);

			if (!t)
				break;
			text = t;
		}
		len += snprintf(text + len, alloc - len, "%s\t%s\t%s\n", it->bid_len ? hex : "-", state, it->path);
	}
	embed_buf_release(&b);
	if (len)
		trace_writer_add(w, TRACE_CHUNK_META, TRACE_META_OBJECTS, 0, text, len, 0);
	free(text);
}

/* ---- memsight archive ------------------------------------------------ */

/* A path a trace names as executable, with the build-id it recorded for
 * it (bl 0 while not known). */
struct archive_path {
	char *path;
	unsigned char bid[BUILD_ID_MAX];
	int bl;
};

struct archive_paths {
	struct archive_path *v;
	size_t nr, alloc;
};

static void archive_path_add(struct archive_paths *a, const char *path, const unsigned char *bid, int bl)
{
	if (path[0] != '/' || !strncmp(path, "//", 2))
		return;
	for (size_t i = 0; i < a->nr; i++)
		if (!strcmp(a->v[i].path, path)) {
			if (!a->v[i].bl && bl > 0) {
				a->v[i].bl = bl > BUILD_ID_MAX ? BUILD_ID_MAX : bl;
				memcpy(a->v[i].bid, bid, a->v[i].bl);
			}
			return;
		}
	if (a->nr == a->alloc) {
		size_t n = a->alloc ? a->alloc * 2 : 32;
		struct archive_path *v = realloc(a->v, n * sizeof(*v));

		if (!v)
			return;
		a->v = v;
		a->alloc = n;
	}
	a->v[a->nr].path = strdup(path);
	if (!a->v[a->nr].path)
		return;
	a->v[a->nr].bl = bl > 0 ? (bl > BUILD_ID_MAX ? BUILD_ID_MAX : bl) : 0;
	memcpy(a->v[a->nr].bid, bid, a->v[a->nr].bl);
	a->nr++;
}

static int hex_bid(const char *hex, size_t n, unsigned char *bid)
{
	int bl = 0;

	for (; bl < BUILD_ID_MAX && (size_t)(2 * bl + 1) < n && isxdigit((unsigned char)hex[2 * bl]) &&
	       isxdigit((unsigned char)hex[2 * bl + 1]);
	     bl++)
		sscanf(hex + 2 * bl, "%2hhx", &bid[bl]);
	return bl;
}

static void paths_from_records(struct archive_paths *a, const unsigned char *p, size_t len)
{
	size_t off = 0;

	while (off + 8 <= len) {
		const struct perf_event_header *h = (const void *)(p + off);
		uint32_t prot;

		if (h->size < 8 || h->size % 8 || off + h->size > len)
			break;
		if (h->type == PERF_RECORD_MMAP2 && h->size > 73) {
			memcpy(&prot, p + off + 64, 4);
			if ((prot & 4) && memchr(p + off + 72, 0, h->size - 72))
				archive_path_add(a, (const char *)p + off + 72, p + off + 44,
						 h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID ? p[off + 40] : 0);
		}
		off += h->size;
	}
}

static int snapshot_path(void *arg, pid_t pid, const struct procsnap_map *m)
{
	unsigned char bid[BUILD_ID_MAX];

	(void)pid;
	if (m->perms[0] && m->perms[1] && m->perms[2] == 'x')
		archive_path_add(arg, m->path, bid, hex_bid(m->bid_hex, strlen(m->bid_hex), bid));
	return 0;
}

/* "HEX\tPATH" lines: build-ids the recorder read for files whose MMAP2
 * records had none. */
static void paths_from_buildids(struct archive_paths *a, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end, *tab = memchr(p, '\t', le - p);
		unsigned char bid[BUILD_ID_MAX];
		char path[PATH_MAX];
		int bl;

		if (tab && (size_t)(le - tab - 1) < sizeof(path) && (bl = hex_bid(p, tab - p, bid)) > 0) {
			memcpy(path, tab + 1, le - tab - 1);
			path[le - tab - 1] = 0;
			archive_path_add(a, path, bid, bl);
		}
		p = nl ? nl + 1 : end;
	}
}

/* The objects of the paths: a file here is taken only when it is a regular
 * file, opened without waiting on a FIFO, whose build-id is the one the
 * trace recorded; a path with no recorded build-id is not taken at all. */
static int paths_list(const struct archive_paths *a, struct embed_list *l)
{
	for (size_t i = 0; i < a->nr; i++) {
		const struct archive_path *ap = &a->v[i];
		enum objset_why why = OBJSET_OK;
		unsigned char got[BUILD_ID_MAX];
		struct stat st;
		int fd = -1;

		if (!ap->bl) {
			why = OBJSET_NO_BUILD_ID;
		} else {
			/* Looked at before it is opened: a device's open may do
			 * something. */
			fd = procfile_open_own(ap->path, &st);
			if (fd >= 0 && (procsnap_build_id_fd(fd, got) != ap->bl || memcmp(got, ap->bid, ap->bl))) {
				close(fd);
				fd = -1;
			}
			if (fd < 0)
				why = OBJSET_GONE;
		}
		if (item_add(l, fd, ap->bid, ap->bl, ap->path, 0, why)) {
			if (fd >= 0)
				close(fd);
			return -1;
		}
	}
	return 0;
}

int embed_archive(const char *path, const char *to_path, enum embed_mode mode, struct embed_archived *out, char *err,
		  size_t errlen)
{
	struct trace_reader r;
	struct trace_writer w;
	struct trace_writer_opts o = { .codec = TRACE_CODEC_ZSTD };
	struct embed_set e = { .mode = mode, .max_bytes = EMBED_MAX_DEFAULT };
	struct archive_paths paths = { 0 };
	struct embed_list list = { 0 };
	unsigned char *buf = NULL;
	size_t alloc = 0;
	char tmp[NAME_MAX + 1], base[NAME_MAX + 1];
	const char *why;
	int fd, dfd, ret = -1, had = 0;

	/* Renamed over, a live ring would go on in a deleted file, and all
	 * it records from then on would be lost: whichever is replaced. */
	if (replace_live(to_path ? to_path : path)) {
		snprintf(err, errlen,
			 "'%s' is being recorded (a recorder holds it): archive a copy of it, or write the archive "
			 "elsewhere with -o FILE",
			 to_path ? to_path : path);
		return -1;
	}
	if (!to_path)
		to_path = path;
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
	/* Beside it, reached as formats/replace.h says, and renamed through
	 * the directory's descriptor. */
	dfd = replace_dir_open(to_path, base, &why);
	fd = -1;
	if (dfd >= 0 && strlen(base) + 16 < sizeof(tmp)) {
		char name[NAME_MAX + 1];

		snprintf(name, sizeof(name), "%s.archive", base);
		fd = replace_temp_at(dfd, name, tmp);
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a file beside '%s': %s", to_path,
			 why ? why : strerror(errno ? errno : ENAMETOOLONG));
		if (dfd >= 0)
			close(dfd);
		trace_reader_release(&r);
		return -1;
	}
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
			/* Said again below, for what is carried now. */
			if (c->stream == TRACE_META_OBJECTS)
				continue;
			if (c->stream == TRACE_META_PROCESS)
				procsnap_maps_each((const char *)buf, n, snapshot_path, &paths);
			if (c->stream == TRACE_META_BUILDIDS)
				paths_from_buildids(&paths, (const char *)buf, n);
			trace_writer_add(&w, TRACE_CHUNK_META, c->stream, 0, buf, n, 0);
		} else if (c->type == TRACE_CHUNK_DATA) {
			paths_from_records(&paths, buf, n);
			trace_writer_add(&w, TRACE_CHUNK_DATA, c->stream, c->time, buf, n, trace_records_count(buf, n));
		} else if (c->type == TRACE_CHUNK_LOSS) {
			trace_writer_add_loss(&w, (const struct trace_loss *)buf, n / sizeof(struct trace_loss));
		}
	}
	/* Not the vDSO: the one here may not be the one the recording's
	 * kernel mapped. */
	if (paths_list(&paths, &list)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	embed_list_write(&e, &list, &w);
	if (trace_writer_finish(&w)) {
		snprintf(err, errlen, "cannot write '%s': %s", tmp, trace_writer_strerror(&w));
		goto out;
	}
	if (renameat(dfd, tmp, dfd, base)) {
		snprintf(err, errlen, "cannot write '%s': %s", to_path, strerror(errno));
		goto out;
	}
	tmp[0] = 0;
	*out = (struct embed_archived){ e.objects, e.debug, e.bytes, e.not_carried, had };
	ret = 0;
out:
	trace_writer_release(&w);
	close(fd);
	if (tmp[0])
		unlinkat(dfd, tmp, 0);
	close(dfd);
	free(buf);
	embed_list_release(&list);
	for (size_t i = 0; i < paths.nr; i++)
		free(paths.v[i].path);
	free(paths.v);
	trace_reader_release(&r);
	return ret;
}
