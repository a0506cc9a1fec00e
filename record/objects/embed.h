/*
 * record/objects/embed.h: objects carried inside a trace (--embed, memsight archive).
 *
 * Owns choosing what of an object the analyzer needs elsewhere and packing
 * it as a TRACE_META_OBJECT payload (formats/FORMAT.md): "minimal" is an
 * ELF with the same headers whose only bytes are the unwind tables
 * (.eh_frame, .eh_frame_hdr, .debug_frame), the symbol tables and the
 * notes; every other section keeps its address and size with no bytes.
 * "full" is the file as it is. With either, a second entry carries the
 * debug information that names inlined functions and gives source lines
 * (the DIE tree, line tables, strings, ranges, the symbol table),
 * uncompressed, from the object or its debug file under
 * /usr/lib/debug/.build-id, when the recording machine has it. Objects
 * are deduplicated by build-id, and a file whose build-id is not the
 * recorded one is never packed. The kernel's vDSO image goes in whole,
 * as "[vdso]", when recording. Knows
 * nothing of perf records or rings.
 */
#ifndef MEMSIGHT_RECORD_EMBED_H
#define MEMSIGHT_RECORD_EMBED_H

#include <stddef.h>

#include "../../formats/trace.h"

enum embed_mode {
	EMBED_NONE,
	EMBED_MINIMAL,
	EMBED_FULL,
	EMBED_DEBUG, /* not a mode of --embed: the entry holding an object's debug information */
};

struct embed_set {
	enum embed_mode mode;
	char **paths;		/* executable file mappings seen */
	size_t nr, alloc;
	int vdso;		/* a [vdso] mapping was seen: embed the image */
	uint64_t objects, debug, bytes; /* what was embedded: objects, debug entries */
};

/* Parse "minimal", "full" or "none"; -1 otherwise. */
int embed_mode_parse(const char *s);
/* Remember an executable mapping of path (duplicates are ignored). */
void embed_set_add(struct embed_set *e, const char *path);
/* Remember the executable file mappings of a /proc snapshot's maps lines. */
void embed_set_add_maps(struct embed_set *e, const char *text, size_t len);
/* Pack every remembered object into META chunks of w. Objects that are
 * gone or too big are skipped with one line each on stderr. */
void embed_set_write(struct embed_set *e, struct trace_writer *w);
void embed_set_release(struct embed_set *e);

/* What embed_archive put into the trace. */
struct embed_archived {
	uint64_t objects, debug, bytes; /* as in struct embed_set */
	int replaced;			/* entries the trace had before */
};

/* Embed into the finished trace at path the objects its stacks need,
 * packed again in mode: the file is rewritten beside it and renamed over
 * it. Returns 0, or -1 with the reason in err. */
int embed_archive(const char *path, enum embed_mode mode, struct embed_archived *out, char *err, size_t errlen);

#endif
