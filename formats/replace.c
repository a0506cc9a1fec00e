/*
 * formats/replace.c: whether an output may replace the file at its path,
 * the walk to its directory, and writing it so that it does only once
 * whole (replace.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
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

int replace_live_fd(int fd)
{
	struct stat st;

	/* Only a regular file is asked: a lock on anything else says
	 * nothing of a recorder. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB))
		return errno == EWOULDBLOCK;
	/* Taken: given back at once, so that a recorder starting on the
	 * file meanwhile still gets it. */
	flock(fd, LOCK_UN);
	return 0;
}

int replace_live(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY), busy;

	if (fd < 0)
		return 0;
	busy = replace_live_fd(fd);
	close(fd);
	return busy;
}

/* Whether what dir holds can be changed by this user or root alone: 1
 * when it is theirs and writable by no one else, 2 when others may write
 * it but it is sticky (no one else can move or remove what is ours
 * there), 0 when another user can put or swap things in it. */
static int dir_ours(const struct stat *d)
{
	uid_t me = geteuid();
	int group = 0;

	if (d->st_uid != me && d->st_uid != 0)
		return 0;
	if (d->st_mode & S_IWGRP) {
		gid_t v[256];
		int n = getgroups(256, v);

		group = d->st_gid != getegid();
		for (int i = 0; i < n && group; i++)
			group = v[i] != d->st_gid;
	}
	if ((d->st_mode & S_IWOTH) || group)
		return d->st_mode & S_ISVTX ? 2 : 0;
	return 1;
}

/* Whether dfd is this process's own /proc/self/fd: its entries are the
 * descriptors it was given (/dev/stdout names one), not paths anyone
 * planted. */
static int own_fd_dir(int dfd)
{
	struct stat a, b;

	return !fstat(dfd, &a) && !stat("/proc/self/fd", &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

#define WALK_LINKS_MAX 40

struct walk {
	int dfd;		/* the directory reached */
	char base[NAME_MAX + 1]; /* the last component, in it */
	int stream;		/* base is one of this process's descriptors */
	int links;		/* links followed so far */
	const char *why;
};

/* Walk rel from dfd (taken over), a component at a time, to the
 * directory of its last component. 0, or -1 with errno (and w->why). */
static int walk_from(int dfd, const char *rel, struct walk *w)
{
	char path[PATH_MAX], *save = NULL, *c, *next;
	size_t l = strlen(rel);

	if (l >= sizeof(path)) {
		close(dfd);
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(path, rel, l + 1);
	/* A trailing slash names a directory, which no output is. */
	if (l && path[l - 1] == '/') {
		close(dfd);
		errno = EISDIR;
		return -1;
	}
	c = strtok_r(path, "/", &save);
	while (c) {
		struct stat ls, ds;
		int nfd;

		next = strtok_r(NULL, "/", &save);
		if (!strcmp(c, ".") && next) {
			c = next;
			continue;
		}
		if (fstatat(dfd, c, &ls, AT_SYMLINK_NOFOLLOW)) {
			if (errno == ENOENT && !next)
				goto last;
			goto fail;
		}
		if (S_ISLNK(ls.st_mode)) {
			char target[PATH_MAX], rest[PATH_MAX];
			ssize_t n;

			if (!next && own_fd_dir(dfd)) {
				w->stream = 1;
				goto last;
			}
			if (fstat(dfd, &ds))
				goto fail;
			if (!dir_ours(&ds) || (ls.st_uid != geteuid() && ls.st_uid != 0)) {
				w->why = "a symbolic link on its way is another user's, or in a directory another user can "
					 "write";
				errno = EPERM;
				goto fail;
			}
			if (++w->links > WALK_LINKS_MAX) {
				errno = ELOOP;
				goto fail;
			}
			n = readlinkat(dfd, c, target, sizeof(target) - 1);
			if (n <= 0)
				goto fail;
			target[n] = 0;
			/* The link's target, then what followed the link. */
			if (snprintf(rest, sizeof(rest), "%s%s%s", target, next ? "/" : "",
				     next ? rel + (next - path) : "") >= (int)sizeof(rest)) {
				errno = ENAMETOOLONG;
				goto fail;
			}
			if (target[0] == '/') {
				close(dfd);
				if ((dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
					return -1;
			}
			return walk_from(dfd, rest, w);
		}
		if (!next)
			goto last;
		if (!S_ISDIR(ls.st_mode)) {
			errno = ENOTDIR;
			goto fail;
		}
		nfd = openat(dfd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0)
			goto fail;
		close(dfd);
		dfd = nfd;
		c = next;
	}
	/* No component: "/" or "", a directory or nothing. */
	errno = l ? EISDIR : ENOENT;
fail:
	close(dfd);
	return -1;
last:
	if (strlen(c) >= sizeof(w->base)) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	snprintf(w->base, sizeof(w->base), "%s", c);
	w->dfd = dfd;
	return 0;
}

static int walk(const char *path, struct walk *w)
{
	int dfd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);

	memset(w, 0, sizeof(*w));
	w->dfd = -1;
	if (dfd < 0)
		return -1;
	return walk_from(dfd, path, w);
}

/* Where an output at path would go: the walk to it, and what is there.
 * 0, or -1 with errno and *why when it may not go there. */
static int out_place(const char *path, struct walk *w, struct stat *st, int *missing, const char **why)
{
	struct stat ds;

	*missing = 0;
	if (walk(path, w)) {
		*why = w->why;
		return -1;
	}
	if (w->stream)
		return 0;
	if (fstatat(w->dfd, w->base, st, AT_SYMLINK_NOFOLLOW)) {
		if (errno != ENOENT)
			goto fail;
		*missing = 1;
	}
	if (*missing || S_ISREG(st->st_mode)) {
		if (fstat(w->dfd, &ds))
			goto fail;
		if (!dir_ours(&ds)) {
			*why = "its directory can be written by another user, who could swap what is written; write it "
			       "to a directory only you can write";
			errno = EPERM;
			goto fail;
		}
	} else if (S_ISDIR(st->st_mode)) {
		errno = EISDIR;
		goto fail;
	} else if (st->st_uid != geteuid() && st->st_uid != 0) {
		*why = "it is another user's FIFO or device";
		errno = EPERM;
		goto fail;
	}
	return 0;
fail:
	close(w->dfd);
	w->dfd = -1;
	return -1;
}

int replace_check(const char *path, const char *sig, const char *what)
{
	struct walk w;
	struct stat st;
	const char *why = NULL;
	int missing;

	if (replace_live(path))
		return msg_error("'%s' is a trace a running recorder writes, which this output would replace: give "
				 "another name, or stop that recorder first",
				 path);
	if (replace_refused(path, sig))
		return msg_error("'%s' exists and is not %s, which this output would replace: remove it first, or "
				 "give another name",
				 path, what);
	if (out_place(path, &w, &st, &missing, &why))
		return msg_error("cannot create '%s': %s", path, why ? why : strerror(errno));
	close(w.dfd);
	return 0;
}

int replace_dir_open(const char *path, char *base, const char **why)
{
	struct walk w;
	struct stat ds;

	*why = NULL;
	if (walk(path, &w)) {
		*why = w.why;
		return -1;
	}
	if (w.stream || fstat(w.dfd, &ds) || !dir_ours(&ds)) {
		*why = w.stream ? "it is a descriptor, not a file" : "its directory can be written by another user";
		close(w.dfd);
		errno = EPERM;
		return -1;
	}
	memcpy(base, w.base, sizeof(w.base));
	return w.dfd;
}

int replace_temp_at(int dfd, const char *name, char *tmp)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	uint64_t r = (uint64_t)getpid() * 2654435761u;
	struct timespec ts;

	if (strlen(name) + 8 > NAME_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (int tries = 0; tries < 100; tries++) {
		int fd;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = r * 6364136223846793005ull + (uint64_t)ts.tv_nsec + (uint64_t)tries;
		snprintf(tmp, NAME_MAX + 1, "%s.", name);
		for (int i = 0; i < 6; i++)
			tmp[strlen(name) + 1 + i] = set[(r >> (6 * i)) % (sizeof(set) - 1)];
		tmp[strlen(name) + 7] = 0;
		fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

/* The file being written beside its path, removed when a signal ends the
 * program before it is whole: an interrupted command leaves nothing
 * behind, as a failed one does. One at a time: no command writes two. */
static char pending[NAME_MAX + 1];
static int pending_dfd = -1;
static volatile sig_atomic_t pending_set;
static const int ending[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static void pending_end(int sig)
{
	if (pending_set)
		unlinkat(pending_dfd, pending, 0);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Watched from before the file exists: replace_temp_at fills in
 * pending's name in place, so a signal at any point removes what there
 * is by then. */
static void pending_watch(int dfd)
{
	struct sigaction sa, old;

	pending_dfd = dfd;
	pending[0] = 0;
	pending_set = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pending_end;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(ending) / sizeof(ending[0]); i++)
		/* A signal the caller ignores (nohup's SIGHUP) stays ignored. */
		if (!sigaction(ending[i], NULL, &old) && old.sa_handler == SIG_DFL)
			sigaction(ending[i], &sa, NULL);
}

const char *replace_strerror(const struct replace_out *o)
{
	return o->why ? o->why : strerror(errno);
}

static void out_clear(struct replace_out *o)
{
	if (o->dfd >= 0)
		close(o->dfd);
	free(o->tmp);
	free(o->base);
	o->dfd = -1;
	o->tmp = o->base = NULL;
}

int replace_open(struct replace_out *o, const char *path)
{
	struct walk w;
	struct stat st;
	int fd = -1, err, missing;

	memset(o, 0, sizeof(*o));
	o->path = path;
	o->dfd = -1;
	if (out_place(path, &w, &st, &missing, &o->why))
		return -1;
	o->dfd = w.dfd;
	if (w.stream) {
		/* One of ours, as the shell gave it (/dev/stdout). */
		fd = openat(o->dfd, w.base, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
	} else if (missing || S_ISREG(st.st_mode)) {
		if (!(o->tmp = malloc(NAME_MAX + 1)) || !(o->base = strdup(w.base))) {
			errno = ENOMEM;
			goto fail;
		}
		o->tmp[0] = 0;
		pending_watch(o->dfd);
		fd = replace_temp_at(o->dfd, w.base, pending);
		if (fd >= 0)
			memcpy(o->tmp, pending, NAME_MAX + 1);
		else
			pending_set = 0;
	} else {
		/* A FIFO, a terminal, a device of this user's or root's:
		 * written to as it is. */
		fd = openat(o->dfd, w.base, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	}
	if (fd >= 0 && (o->f = fdopen(fd, "w")))
		return 0;
fail:
	err = errno;
	if (fd >= 0) {
		close(fd);
		if (o->tmp && o->tmp[0])
			unlinkat(o->dfd, o->tmp, 0);
	}
	pending_set = 0;
	out_clear(o);
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
		if (ok && renameat(o->dfd, o->tmp, o->dfd, o->base)) {
			err = errno;
			ok = 0;
		}
		if (!ok)
			unlinkat(o->dfd, o->tmp, 0);
		pending_set = 0;
	}
	out_clear(o);
	errno = err;
	return ok ? 0 : -1;
}
