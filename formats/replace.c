/*
 * formats/replace.c: whether an output may replace the file at its path,
 * and writing it so that it does only once whole (replace.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msg.h"
#include "replace.h"

int replace_refused(const char *path, const char *sig)
{
	size_t n = strlen(sig);
	char head[32];
	struct stat st;
	int fd;
	ssize_t got;

	/* Never following a link, never waiting on a FIFO. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return 0;
	}
	got = read(fd, head, n < sizeof(head) ? n : sizeof(head));
	close(fd);
	return got != (ssize_t)n || memcmp(head, sig, n);
}

int replace_check(const char *path, const char *sig, const char *what)
{
	if (!replace_refused(path, sig))
		return 0;
	return msg_error("'%s' exists and is not %s, which this output would replace: remove it first, or give "
			 "another name",
			 path, what);
}

int replace_open(struct replace_out *o, const char *path)
{
	struct stat st;
	int fd, err, missing = 0;

	o->f = NULL;
	o->path = path;
	o->tmp = NULL;
	if (lstat(path, &st)) {
		if (errno != ENOENT)
			return -1;
		missing = 1;
	}
	if (missing || S_ISREG(st.st_mode)) {
		size_t n = strlen(path);

		if (!(o->tmp = malloc(n + 8)))
			return -1;
		memcpy(o->tmp, path, n);
		memcpy(o->tmp + n, ".XXXXXX", 8);
		/* mkostemp makes it 0600. */
		fd = mkostemp(o->tmp, O_CLOEXEC);
	} else {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
	}
	if (fd >= 0 && (o->f = fdopen(fd, "w")))
		return 0;
	err = errno;
	if (fd >= 0) {
		close(fd);
		if (o->tmp)
			unlink(o->tmp);
	}
	free(o->tmp);
	o->tmp = NULL;
	errno = err;
	return -1;
}

int replace_finish(struct replace_out *o, int ok)
{
	int err = 0;

	if (!o->f)
		return -1;
	/* A write that failed before the last one is remembered only here:
	 * fclose says only how the last flush went. */
	if (ferror(o->f) && ok) {
		err = errno ? errno : EIO;
		ok = 0;
	}
	if (fclose(o->f) && ok) {
		err = errno;
		ok = 0;
	}
	o->f = NULL;
	if (o->tmp) {
		if (ok && rename(o->tmp, o->path)) {
			err = errno;
			ok = 0;
		}
		if (!ok)
			unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
	}
	errno = err;
	return ok ? 0 : -1;
}
