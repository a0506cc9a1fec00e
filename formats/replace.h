/*
 * formats/replace.h: how an output file takes its place at its path.
 *
 * Every program that writes a file (a trace, an SVG, an HTML page, a pprof
 * profile) replaces only what it could have written itself, or an empty
 * file: a mistyped `-o main.c` must not cost anyone their source. And
 * since it may run as root beside users it does not trust, it never
 * writes where another user points it: the path is walked a directory at
 * a time, a symbolic link followed only where no one else could have put
 * it (a link of this user's or root's, in a directory no one else can
 * write, or a sticky one), and the file is made in a directory only this
 * user or root can write (or a sticky one, where no one else can move
 * what is ours), under a name of its own, then renamed in place through
 * that directory's descriptor. A live trace (one a running recorder holds
 * locked) is never replaced.
 */
#ifndef MEMSIGHT_FORMATS_REPLACE_H
#define MEMSIGHT_FORMATS_REPLACE_H

#include <stdio.h>

/* What each output starts with. */
#define REPLACE_TRACE "MEMSIGHT"
#define REPLACE_SVG "<?xml"
#define REPLACE_HTML "<!DOCTYPE html>"
#define REPLACE_GZIP "\x1f\x8b"

/* 1 when path is a non-empty regular file that does not start with sig
 * (the caller refuses, naming what it would have written); 0 when it may
 * be replaced: it does not exist, is empty, starts with sig, or is no
 * regular file (whoever opens it says what is wrong with that). */
int replace_refused(const char *path, const char *sig);
/* 1 when path is a trace a running recorder writes (it holds a lock on
 * it for as long as it runs). */
int replace_live(const char *path);
/* The same of the file fd has open. */
int replace_live_fd(int fd);
/* Both, said: one error line naming what (e.g. "a memsight trace"), and
 * -1, when refused; 0 otherwise. */
int replace_check(const char *path, const char *sig, const char *what);

/* The directory path's file goes into, reached by the walk above: an
 * O_PATH descriptor of it, the file's name into base (NAME_MAX + 1
 * bytes). -1 with errno, and *why set to the reason when the walk refused
 * a link or the directory (NULL: errno says it). */
int replace_dir_open(const char *path, char *base, const char **why);
/* A new file name.XXXXXX in dfd (0600, O_EXCL, never through a link),
 * its name into tmp (NAME_MAX + 1 bytes): a descriptor or -1. */
int replace_temp_at(int dfd, const char *name, char *tmp);

/* An output that takes the place of what is at its path only once it is
 * whole: a failure on the way (a full disk, a trace found bad halfway)
 * leaves the file that was there, and no part of the new one. */
struct replace_out {
	FILE *f;
	const char *path;
	int dfd;	/* its directory; -1 when written straight to path */
	char *tmp;	/* the name written under in dfd; NULL: path itself */
	char *base;	/* the name it takes there */
	const char *why; /* why replace_open refused, or NULL */
};
/* Begin writing path, created 0600 as the trace it comes from (it holds
 * command lines and paths): under a name of its own beside path when that
 * is a regular file or not there yet, straight to path when it is one of
 * this process's descriptors (/dev/stdout), a terminal, a FIFO or a device
 * of this user's or root's. 0, or -1 with errno (replace_strerror says
 * why). */
int replace_open(struct replace_out *o, const char *path);
/* Why replace_open failed, as the end of "cannot create '%s': %s". */
const char *replace_strerror(const struct replace_out *o);
/* End it. ok: what was written takes path's place (0, or -1 with errno
 * when it could not be written whole: nothing was replaced). Not ok:
 * what was written is removed (-1). */
int replace_finish(struct replace_out *o, int ok);

#endif
