/*
 * formats/sibling.h: finding memsight's other programs and files beside
 * the running one.
 *
 * memsight, memsight-record, memsight-analyze, memsight-flamegraph and the
 * allocation sampler are built in one directory; installed, memsight is in
 * PREFIX/bin and the others in PREFIX/libexec/memsight. Each finds the
 * others beside itself first, then in ../libexec/memsight from its own
 * directory: a build tree runs its own, not what PATH has, and an install
 * works wherever PREFIX put it, with no path fixed at build time.
 */

/* Where the helpers are installed, from the directory memsight is in. */
#define SIBLING_LIBEXEC "../libexec/memsight"
#ifndef MEMSIGHT_FORMATS_SIBLING_H
#define MEMSIGHT_FORMATS_SIBLING_H

#include <stddef.h>

/* NAME in the running program's directory, into out, when access(mode)
 * allows it: 0. Else -1, with out holding that directory (for a message). */
int sibling_path(const char *name, int mode, char *out, size_t len);

#endif
