/*
 * formats/cache.h: where memsight keeps files between runs.
 *
 * Owns the one rule both programs follow for their caches (the analyzer
 * keeps embedded objects it decoded, the recorder the entries it packed,
 * as perf keeps its build-id cache): $MEMSIGHT_CACHE_DIR, else
 * $XDG_CACHE_HOME/memsight, else ~/.cache/memsight; no cache at all when
 * MEMSIGHT_CACHE_DIR is set but empty. A directory is used only when it
 * is the user's own and no one else can write it, and is never changed:
 * a directory named by mistake (a /tmp) keeps its mode and every file
 * that is not the cache's. Every entry's name starts with
 * CACHE_ENTRY_PREFIX, and only files of that name and of this user are
 * ever removed. And writing a file there so that no reader ever sees it
 * half made. A cache is an optimisation: every failure
 * here only means working without it. Knows nothing of what the files hold.
 */
#ifndef MEMSIGHT_FORMATS_CACHE_H
#define MEMSIGHT_FORMATS_CACHE_H

#include <stddef.h>

/* What every entry's file name starts with. */
#define CACHE_ENTRY_PREFIX "memsight-"

/* The cache directory into buf, made (mode 0700) when only its last level
 * is missing, and used only when it is the user's own directory, not a
 * link, writable by no one else (for any other a warning is printed
 * once). Returns 0, or -1 when there is none to use. */
int cache_dir(char *buf, size_t len);

/* Write the two parts (b may be NULL) as the file path, through a
 * temporary file beside it and a rename, then cache_trim. Returns 0 or -1
 * (nothing left behind). */
int cache_store(const char *path, const void *a, size_t alen, const void *b, size_t blen);

/* A temporary file for the entry at path, "PATH.tmp-XXXXXX", mode 0600,
 * its name into tmp: a descriptor, or -1. Whoever makes one renames it
 * over path when it is whole and calls cache_trim, or unlinks it. */
int cache_temp(const char *path, char *tmp, size_t len);

/* After an entry was added to the cache dir (of the entries, only files
 * of this user's named CACHE_ENTRY_PREFIX... are looked at): temporary
 * files a crashed writer left (an hour old) go, and while the entries
 * pass the size cap
 * (MEMSIGHT_CACHE_MAX: bytes, with K, M or G; default 2G; 0 for none) the
 * least recently used go, down to nine tenths of it; the newest stays,
 * whatever its size, as its writer is about to open it. */
void cache_trim(const char *dir);

/* An entry was used: it goes last when the cache is trimmed. */
void cache_touch(int fd);

/* The cache directory of an entry's path, into buf; 0 or -1. */
int cache_dir_of(const char *path, char *buf, size_t len);

/* Write all n bytes to fd, through short writes and EINTR; 0 or -1. */
int cache_write_all(int fd, const void *buf, size_t n);

#endif
