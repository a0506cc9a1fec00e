/*
 * formats/replace.c: whether an output may replace the file at its path,
 * and writing it so that it does only once whole (replace.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
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

/* The file being written beside its path, removed when a signal ends the
 * program before it is whole: an interrupted command leaves nothing
 * behind, as a failed one does. One at a time: no command writes two. */
static char pending[PATH_MAX];
static volatile sig_atomic_t pending_set;
static const int ending[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static void pending_end(int sig)
{
	if (pending_set)
		unlink(pending);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Watched from before the file exists: mkostemp fills in pending's name
 * in place, so a signal at any point removes what there is by then. */
static void pending_watch(void)
{
	struct sigaction sa, old;

	pending_set = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pending_end;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(ending) / sizeof(ending[0]); i++)
		/* A signal the caller ignores (nohup's SIGHUP) stays ignored. */
		if (!sigaction(ending[i], NULL, &old) && old.sa_handler == SIG_DFL)
			sigaction(ending[i], &sa, NULL);
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

		if (n + 8 > sizeof(pending)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(pending, path, n);
		memcpy(pending + n, ".XXXXXX", 8);
		pending_watch();
		/* mkostemp makes it 0600. */
		fd = mkostemp(pending, O_CLOEXEC);
		if (fd >= 0 && !(o->tmp = strdup(pending))) {
			unlink(pending);
			close(fd);
			fd = -1;
			errno = ENOMEM;
		}
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
	pending_set = 0;
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
		/* Let go of only once renamed or removed: a signal before
		 * that still removes the temporary name, which after a rename
		 * names nothing. */
		if (ok && rename(o->tmp, o->path)) {
			err = errno;
			ok = 0;
		}
		if (!ok)
			unlink(o->tmp);
		pending_set = 0;
		free(o->tmp);
		o->tmp = NULL;
	}
	errno = err;
	return ok ? 0 : -1;
}
