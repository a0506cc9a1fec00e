/*
 * formats/cache.c: the cache directory; see cache.h.
 */
#include "cache.h"
#include "msg.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* As ssh holds ~/.ssh: the directory is ours, not a link, and no one
 * else may write into it. One that is ours but open to others is closed
 * (0700); any other is not used, said once: what it holds may have been
 * planted, and what is written there could be read or replaced. */
static int cache_dir_trusted(const char *dir)
{
	static int said;
	struct stat st;

	if (lstat(dir, &st))
		return -1;
	if (S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) && !chmod(dir, 0700))
		st.st_mode &= ~(mode_t)077;
	if (S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022))
		return 0;
	if (!__atomic_fetch_add(&said, 1, __ATOMIC_RELAXED))
		msg_warn("the cache directory '%s' is %s: working without a cache; remove it, or set MEMSIGHT_CACHE_DIR", dir,
			 !S_ISDIR(st.st_mode)	  ? "no directory (a link?)"
			 : st.st_uid != geteuid() ? "another user's"
						  : "writable by others");
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

int cache_store(const char *path, const void *a, size_t alen, const void *b, size_t blen)
{
	char tmp[PATH_MAX];
	int fd, n = snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);

	if (n <= 0 || (size_t)n >= sizeof(tmp))
		return -1;
	fd = mkstemp(tmp);
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
	return 0;
}
