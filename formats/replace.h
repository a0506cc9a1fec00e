/*
 * formats/replace.h: whether an output file may replace what is at its
 * path. Every program that writes a file (a trace, an SVG, an HTML page,
 * a pprof profile) replaces only what it could have written itself, or an
 * empty file: a mistyped `-o main.c` must not cost anyone their source.
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
/* The same, said: one error line naming what (e.g. "a memsight trace"),
 * and -1, when refused; 0 otherwise. */
int replace_check(const char *path, const char *sig, const char *what);

/* An output that takes the place of what is at its path only once it is
 * whole: a failure on the way (a full disk, a trace found bad halfway)
 * leaves the file that was there, and no part of the new one. */
struct replace_out {
	FILE *f;
	const char *path;
	char *tmp;	/* the file written beside path; NULL: path itself */
};
/* Begin writing path, created 0600 as the trace it comes from (it holds
 * command lines and paths): under a name of its own beside path when that
 * is a regular file or not there yet, straight to path when it is
 * anything else (a FIFO, a terminal, a link). 0, or -1 with errno. */
int replace_open(struct replace_out *o, const char *path);
/* End it. ok: what was written takes path's place (0, or -1 with errno
 * when it could not be written whole: nothing was replaced). Not ok:
 * what was written is removed (-1). */
int replace_finish(struct replace_out *o, int ok);

#endif
