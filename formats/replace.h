/*
 * formats/replace.h: whether an output file may replace what is at its
 * path. Every program that writes a file (a trace, an SVG, an HTML page,
 * a pprof profile) replaces only what it could have written itself, or an
 * empty file: a mistyped `-o main.c` must not cost anyone their source.
 */
#ifndef MEMSIGHT_FORMATS_REPLACE_H
#define MEMSIGHT_FORMATS_REPLACE_H

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

#endif
