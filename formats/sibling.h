/*
 * formats/sibling.h: finding memsight's other programs and files beside
 * the running one.
 *
 * memsight, memsight-record, memsight-analyze, memsight-flamegraph and the
 * allocation sampler are installed (or built) in one directory: each finds
 * the others there first, so a build tree runs its own, not what PATH has.
 */
#ifndef MEMSIGHT_FORMATS_SIBLING_H
#define MEMSIGHT_FORMATS_SIBLING_H

#include <stddef.h>

/* NAME in the running program's directory, into out, when access(mode)
 * allows it: 0. Else -1, with out holding that directory (for a message). */
int sibling_path(const char *name, int mode, char *out, size_t len);

#endif
