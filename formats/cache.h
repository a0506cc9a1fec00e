/*
 * formats/cache.h: where memsight keeps files between runs.
 *
 * Owns the one rule both programs follow for their caches (the analyzer
 * keeps embedded objects it decoded, the recorder the entries it packed,
 * as perf keeps its build-id cache): $MEMSIGHT_CACHE_DIR, else
 * $XDG_CACHE_HOME/memsight, else ~/.cache/memsight; no cache at all when
 * MEMSIGHT_CACHE_DIR is set but empty. And writing a file there so that no
 * reader ever sees it half made. A cache is an optimisation: every failure
 * here only means working without it. Knows nothing of what the files hold.
 */
#ifndef MEMSIGHT_FORMATS_CACHE_H
#define MEMSIGHT_FORMATS_CACHE_H

#include <stddef.h>

/* The cache directory into buf, made (mode 0700) when only its last level
 * is missing, and used only when it is the user's own directory, not a
 * link, writable by no one else (one of the user's open to others is set
 * to 0700; for any other a warning is printed once). Returns 0, or -1
 * when there is none to use. */
int cache_dir(char *buf, size_t len);

/* Write the two parts (b may be NULL) as the file path, through a
 * temporary file beside it and a rename. Returns 0 or -1 (nothing left
 * behind). */
int cache_store(const char *path, const void *a, size_t alen, const void *b, size_t blen);

/* Write all n bytes to fd, through short writes and EINTR; 0 or -1. */
int cache_write_all(int fd, const void *buf, size_t n);

#endif
