/*
 * formats/cache.c: the cache directory; see cache.h.
 */
#include "cache.h"
#include "msg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_MAX_DEFAULT (2ull << 30)
#define CACHE_TEMP_TAG ".tmp-"
/* A temporary file this old is no writer's any more. */
#define CACHE_TEMP_STALE_S 3600

/* As ssh holds ~/.ssh: the directory is ours, not a link, and no one
 * else may write into it; any other is not used, said once: what it holds
 * may have been planted, and what is written there could be read or
 * replaced. Its mode is never changed: a directory named by mistake (a
 * shared /tmp) must stay as others rely on it. */
static int cache_dir_trusted(const char *dir)
{
	static int said;
	struct stat st;

	if (lstat(dir, &st))
		return -1;
	if (S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022))
		return 0;
	if (!__atomic_fetch_add(&said, 1, __ATOMIC_RELAXED))
		msg_warn("the cache directory '%s' is %s: working without a cache; %s, or set MEMSIGHT_CACHE_DIR", dir,
			 !S_ISDIR(st.st_mode)	  ? "no directory (a link?)"
			 : st.st_uid != geteuid() ? "another user's"
						  : "writable by others",
			 S_ISDIR(st.st_mode) && st.st_uid == geteuid() ? "make it private (chmod 700)" : "remove it");
	return -1;
}

int cache_dir(char *buf, size_t len)
{
	const char *d = getenv("MEMSIGHT_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	int n;

	if (d)
		n = snprintf(buf, len, "%s", d);
	else if (x && *x)
		n = snprintf(buf, len, "%s/memsight", x);
	else if (h && *h)
		n = snprintf(buf, len, "%s/.cache/memsight", h);
	else
		return -1;
	if (n <= 0 || (size_t)n >= len)
		return -1;
	/* The last level is made, and ~/.cache as the XDG rules make it
	 * when it is the default that is missing; a directory the user
	 * named must exist but for its last level. */
	if (!d && !(x && *x)) {
		buf[n - 9] = 0;
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -1;
		buf[n - 9] = '/';
	}
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -1;
	return cache_dir_trusted(buf);
}

int cache_write_all(int fd, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int cache_temp(const char *path, char *tmp, size_t len)
{
	int n = snprintf(tmp, len, "%s" CACHE_TEMP_TAG "XXXXXX", path);

	if (n <= 0 || (size_t)n >= len)
		return -1;
	return mkostemp(tmp, O_CLOEXEC);
}

int cache_dir_of(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');
	int n;

	if (!slash)
		return -1;
	n = snprintf(buf, len, "%.*s", (int)(slash - path), path);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

void cache_touch(int fd)
{
	futimens(fd, NULL);
}

static uint64_t cache_max(void)
{
	const char *v = getenv("MEMSIGHT_CACHE_MAX");
	unsigned long long n;
	int shift = 0;
	char *end;

	if (!v || !*v)
		return CACHE_MAX_DEFAULT;
	errno = 0;
	n = strtoull(v, &end, 10);
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	/* A size past what 64 bits hold is no bound at all. */
	if (!errno && !*end && *v != '-' && n > UINT64_MAX >> shift)
		return UINT64_MAX;
	n <<= shift;
	if (errno || *end || *v == '-') {
		static int said;

		if (!__atomic_fetch_add(&said, 1, __ATOMIC_RELAXED))
			msg_warn("MEMSIGHT_CACHE_MAX='%s' is no size (give bytes, or a number with K, M or G): the cache is "
				 "kept to %llu GiB",
				 v, CACHE_MAX_DEFAULT >> 30);
		return CACHE_MAX_DEFAULT;
	}
	return n ? n : UINT64_MAX;
}

struct cache_entry {
	char name[NAME_MAX + 1];
	struct timespec used;
	uint64_t size;
};

static int entry_older(const void *a, const void *b)
{
	const struct cache_entry *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

void cache_trim(const char *dir)
{
	uint64_t max = cache_max(), total = 0;
	struct cache_entry *v = NULL;
	size_t nr = 0, alloc = 0;
	time_t now = time(NULL);
	struct dirent *de;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;

		/* Only what a cache writer of this user made. */
		if (strncmp(de->d_name, CACHE_ENTRY_PREFIX, strlen(CACHE_ENTRY_PREFIX)) ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (strstr(de->d_name, CACHE_TEMP_TAG)) {
			if (now - st.st_mtime > CACHE_TEMP_STALE_S)
				unlinkat(dfd, de->d_name, 0);
			continue;
		}
		if (nr == alloc) {
			struct cache_entry *p = realloc(v, (alloc = alloc ? 2 * alloc : 64) * sizeof(*v));

			if (!p)
				goto out;
			v = p;
		}
		snprintf(v[nr].name, sizeof(v[nr].name), "%s", de->d_name);
		v[nr].used = st.st_mtim;
		v[nr].size = (uint64_t)st.st_blocks * 512;
		total += v[nr++].size;
	}
	if (total > max) {
		uint64_t goal = max / 10 * 9;

		qsort(v, nr, sizeof(*v), entry_older);
		for (size_t i = 0; i + 1 < nr && total > goal; i++)
			if (!unlinkat(dfd, v[i].name, 0))
				total -= v[i].size;
	}
out:
	free(v);
	closedir(d);
}

int cache_store(const char *path, const void *a, size_t alen, const void *b, size_t blen)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	int fd = cache_temp(path, tmp, sizeof(tmp));

	if (fd < 0)
		return -1;
	/* A full disk leaves no half file under the real name. */
	if (cache_write_all(fd, a, alen) || (b && cache_write_all(fd, b, blen))) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (close(fd) || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	if (!cache_dir_of(path, dir, sizeof(dir)))
		cache_trim(dir);
	return 0;
}
