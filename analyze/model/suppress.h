/*
 * analyze/model/suppress.h: leak suppressions in LeakSanitizer's format.
 *
 * Owns the built-in list of the C and C++ runtimes' one-time allocations
 * (stdio buffers, thread-local storage, the dynamic loader, locale and time
 * zone data, setenv's copies, libstdc++'s exception pool), matched against
 * the runtime's frames above the allocation, and the rules loaded with
 * --suppress: one "leak:PATTERN" per line, '#' comments, where PATTERN
 * matches any frame's function or object name as a substring, '*' matching
 * any run of characters, '^' and '$' anchoring it, as in LeakSanitizer.
 */
#ifndef MEMSIGHT_SUPPRESS_H
#define MEMSIGHT_SUPPRESS_H

#include <stddef.h>

#include "../replay/session.h"

struct suppress {
	char **patterns;	/* --suppress: any frame */
	size_t nr, alloc;
	int defaults;		/* the built-in list applies to the runtime's frames */
};

void suppress_init(struct suppress *s);
void suppress_release(struct suppress *s);
int suppress_add_defaults(struct suppress *s);
/* Returns 0, or -1 with a reason in err (cannot read, or a bad line). */
int suppress_load(struct suppress *s, const char *path, char *err, size_t errlen);
/* suppress_init, then the built-in list when defaults is set and the rules
 * of file when it is not NULL. 0, or -1 with a reason in err (s released). */
int suppress_setup(struct suppress *s, int defaults, const char *file, char *err, size_t errlen);
/* The pattern that matches one of the frames, or NULL. */
const char *suppress_match(const struct suppress *s, const struct frame *f, int n);

#endif
