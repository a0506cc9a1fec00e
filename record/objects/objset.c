/*
 * record/objects/objset.c: the files recorded processes run code from; see
 * objset.h.
 */
#include "objset.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../procs/procfile.h"
#include "../procs/procsnap.h"

static uint64_t key_bid(const unsigned char *bid, int len)
{
	uint64_t h = 1469598103934665603ull;

	for (int i = 0; i < len; i++)
		h = (h ^ bid[i]) * 1099511628211ull;
	return h | 1;
}

static size_t slot_bid(const struct objset *s, const unsigned char *bid, int len)
{
	size_t i = key_bid(bid, len) & (s->alloc_bid - 1);

	for (; s->by_bid[i]; i = (i + 1) & (s->alloc_bid - 1)) {
		const struct objset_obj *o = &s->objs[s->by_bid[i] - 1];

		if (o->bid_len == len && !memcmp(o->bid, bid, len))
			break;
	}
	return i;
}

static uint32_t find_bid(const struct objset *s, const unsigned char *bid, int len)
{
	return s->alloc_bid && len > 0 ? s->by_bid[slot_bid(s, bid, len)] : 0;
}

static int index_bid(struct objset *s, uint32_t id)
{
	const struct objset_obj *o = &s->objs[id - 1];

	if (o->bid_len <= 0)
		return 0;
	if ((s->nr + 1) * 2 > s->alloc_bid) {
		size_t n = s->alloc_bid ? s->alloc_bid * 2 : 256;
		uint32_t *old = s->by_bid, *v = calloc(n, sizeof(*v));
		size_t oa = s->alloc_bid;

		if (!v)
			return -1;
		s->by_bid = v;
		s->alloc_bid = n;
		for (size_t i = 0; i < oa; i++)
			if (old[i])
				s->by_bid[slot_bid(s, s->objs[old[i] - 1].bid, s->objs[old[i] - 1].bid_len)] = old[i];
		free(old);
	}
	s->by_bid[slot_bid(s, o->bid, o->bid_len)] = id;
	return 0;
}

static uint32_t find_file(const struct objset *s, dev_t dev, ino_t ino)
{
	/* Only mappings whose record had no build-id come here: few. */
	for (size_t i = 0; i < s->nr; i++)
		if (s->objs[i].fd >= 0 && s->objs[i].dev == dev && s->objs[i].ino == ino)
			return s->objs[i].id;
	return 0;
}

static struct objset_obj *obj_new(struct objset *s, const char *path)
{
	struct objset_obj *o;

	if (s->nr == s->alloc) {
		size_t n = s->alloc ? s->alloc * 2 : 64;
		struct objset_obj *v = realloc(s->objs, n * sizeof(*v));

		if (!v)
			return NULL;
		s->objs = v;
		s->alloc = n;
	}
	o = &s->objs[s->nr];
	memset(o, 0, sizeof(*o));
	o->path = strdup(path);
	if (!o->path)
		return NULL;
	o->fd = -1;
	o->id = ++s->nr;
	return o;
}

/* The rights pid's files are opened with: read once for the pid last
 * asked about, as the mappings of one process come together. */
static const struct procfile_cred *cred_of(struct objset *s, pid_t pid)
{
	if (pid != s->cred_pid) {
		procfile_cred_read(pid, &s->cred);
		s->cred_pid = pid;
	}
	return &s->cred;
}

/* The mapped file, by the way objset.h gives, checked against bid when
 * one is known (bid_len > 0); fills bid when not. -1 when none is it. */
static int open_mapped(struct objset *s, pid_t pid, uint64_t start, uint64_t end, const char *path,
		       unsigned char *bid, int *bid_len, struct stat *st)
{
	const struct procfile_cred *c = cred_of(s, pid);
	char p[64], base[PATH_MAX];
	size_t l = strlen(path);
	const char *del = " (deleted)";
	int fd;

	if (s->map_files >= 0) {
		fd = procfile_open_mapped(pid, start, end, c, 0, st);
		if (fd >= 0) {
			s->map_files = 1;
			if (*bid_len <= 0)
				*bid_len = procsnap_build_id_fd(fd, bid);
			return fd;
		}
		/* Not allowed at all (no CAP_SYS_ADMIN): stop asking. */
		if (fd == -EPERM && !s->map_files)
			s->map_files = -1;
	}
	/* A deleted file is gone from its path: what sits there now is
	 * another one, which the build-id check below turns away. */
	if (l >= sizeof(base))
		return -1;
	snprintf(base, sizeof(base), "%s", path);
	if (l > strlen(del) && !strcmp(path + l - strlen(del), del))
		base[l - strlen(del)] = 0;
	for (int i = 0; i < 2; i++) {
		unsigned char got[OBJSET_BUILD_ID_MAX];
		int gl, root = -1;

		/* As the process sees it, then as this recorder does. */
		if (i == 0) {
			snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
			if ((root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
				continue;
		}
		fd = procfile_open(root, base, c, 0, st);
		if (root >= 0)
			close(root);
		if (fd < 0)
			continue;
		gl = procsnap_build_id_fd(fd, got);
		/* Without a build-id to check, only the process's own root
		 * says which file it is. */
		if ((*bid_len > 0 && gl == *bid_len && !memcmp(got, bid, gl)) || (*bid_len <= 0 && i == 0)) {
			if (*bid_len <= 0 && gl > 0) {
				memcpy(bid, got, gl);
				*bid_len = gl;
			}
			return fd;
		}
		close(fd);
	}
	return -1;
}

uint32_t objset_add(struct objset *s, pid_t pid, uint64_t start, uint64_t end, const char *path,
		    const unsigned char *kbid, int kbid_len)
{
	unsigned char bid[OBJSET_BUILD_ID_MAX];
	int bid_len = kbid_len > OBJSET_BUILD_ID_MAX ? OBJSET_BUILD_ID_MAX : kbid_len;
	struct objset_obj *o;
	struct stat st;
	uint32_t id;
	int fd;

	if (bid_len > 0) {
		memcpy(bid, kbid, bid_len);
		id = find_bid(s, bid, bid_len);
		if (id && s->objs[id - 1].fd >= 0)
			return id;
		/* Known but not read yet (its process was gone): this one
		 * may still be there. */
		if (id) {
			o = &s->objs[id - 1];
			o->fd = open_mapped(s, pid, start, end, path, bid, &bid_len, &st);
			if (o->fd >= 0) {
				o->dev = st.st_dev;
				o->ino = st.st_ino;
				o->why = OBJSET_OK;
			}
			return id;
		}
	}
	fd = open_mapped(s, pid, start, end, path, bid, &bid_len, &st);
	if (fd >= 0 && kbid_len <= 0) {
		/* The record had no build-id: the same file seen before, or
		 * the same build-id in another file. */
		if ((id = find_file(s, st.st_dev, st.st_ino)) || (id = find_bid(s, bid, bid_len))) {
			close(fd);
			return id;
		}
	}
	o = obj_new(s, path);
	if (!o) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	o->fd = fd;
	if (bid_len > 0) {
		memcpy(o->bid, bid, bid_len);
		o->bid_len = bid_len;
	}
	if (fd >= 0) {
		unsigned char magic[4];

		o->dev = st.st_dev;
		o->ino = st.st_ino;
		if (pread(fd, magic, 4, 0) != 4 || memcmp(magic, "\177ELF", 4))
			o->why = OBJSET_NOT_ELF;
		else if (bid_len <= 0)
			o->why = OBJSET_NO_BUILD_ID;
	} else {
		o->why = OBJSET_GONE;
	}
	index_bid(s, o->id);
	return o->id;
}

uint32_t objset_vdso(struct objset *s)
{
	struct objset_obj *o;

	if (s->vdso_id)
		return s->vdso_id;
	o = obj_new(s, "[vdso]");
	if (!o)
		return 0;
	o->vdso = 1;
	s->vdso_id = o->id;
	return o->id;
}

const struct objset_obj *objset_get(const struct objset *s, uint32_t id)
{
	return id && id <= s->nr ? &s->objs[id - 1] : NULL;
}

void objset_release(struct objset *s)
{
	for (size_t i = 0; i < s->nr; i++) {
		if (s->objs[i].fd >= 0)
			close(s->objs[i].fd);
		free(s->objs[i].path);
	}
	free(s->objs);
	free(s->by_bid);
	memset(s, 0, sizeof(*s));
}
