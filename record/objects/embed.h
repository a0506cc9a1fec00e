/*
 * record/objects/embed.h: objects carried inside a trace (--embed, memsight
 * archive).
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
 * /usr/lib/debug/.build-id, when the recording machine has it and its
 * build-id is the object's. The kernel's vDSO image goes in whole, as
 * "[vdso]".
 *
 * What is packed is a list of objects (struct embed_list): the ones a
 * recording's stacks touched, each with the file its process mapped, held
 * open (objset.h), or for memsight archive, files found by the paths a
 * trace names and taken only when their build-id is the recorded one.
 * Each is carried once by build-id, within a bound on the bytes packed;
 * a META `objects` entry then says, of each object the list held, whether
 * it was carried and, when not, why. The list is made on the thread that
 * owns the object set and packed on another (the compression thread, for
 * a snapshot): it holds its own fds. Knows nothing of perf records or
 * rings.
 */
#ifndef MEMSIGHT_RECORD_EMBED_H
#define MEMSIGHT_RECORD_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "../../formats/trace.h"
#include "objset.h"

struct execmap;

enum embed_mode {
	EMBED_NONE,
	EMBED_MINIMAL,
	EMBED_FULL,
	EMBED_DEBUG, /* not a mode of --embed: the entry holding an object's debug information */
};

/* The packed bytes a recording carries at most by default (--embed-max):
 * the 29 objects a parallel build of C code ran in took 19 MiB minimal,
 * libc's debug information 8.5 MiB of it. */
#define EMBED_MAX_DEFAULT (256ull << 20)

struct embed_set {
	enum embed_mode mode;
	uint64_t max_bytes;	/* --embed-max: packed bytes at most, over all objects */
	uint64_t objects, debug, bytes; /* what was embedded: objects, debug entries, packed bytes */
	uint64_t not_carried;	/* objects of the list that were not, for a reason the META says */
};

struct embed_item {
	int fd;			/* the file, -1 when there is none (why says so) or for the vDSO */
	unsigned char bid[OBJSET_BUILD_ID_MAX];
	int bid_len;
	char *path;		/* as its process named it */
	int vdso;
	enum objset_why why;
};

struct embed_list {
	struct embed_item *items;
	size_t nr, alloc;
};

/* Parse "minimal", "full" or "none"; -1 otherwise. */
int embed_mode_parse(const char *s);
/* The objects of os that em says stacks touched, their fds duplicated;
 * with only_new, those not listed so before (for a ring, which carries
 * each once). Returns 0, or -1 when out of memory. */
int embed_list_touched(struct embed_list *l, struct objset *os, const struct execmap *em, int only_new);
void embed_list_release(struct embed_list *l);
/* Pack the list's objects into META chunks of w, in e's mode and within
 * its bound, then the `objects` entry that says what was carried. Counts
 * into e. */
void embed_list_write(struct embed_set *e, const struct embed_list *l, struct trace_writer *w);
/* Move to rest the items of l whose carrying needs packing (an entry of
 * theirs is not in the cache yet, for codec): what is left is carried in
 * a few milliseconds, as copies. Returns the bytes of their cached
 * entries. */
uint64_t embed_list_split_ready(const struct embed_set *e, struct embed_list *l, enum trace_codec codec,
				struct embed_list *rest);
/* Move every item of l to rest. */
void embed_list_move(struct embed_list *l, struct embed_list *rest);

/* What embed_archive put into the trace. */
struct embed_archived {
	uint64_t objects, debug, bytes; /* as in struct embed_set */
	uint64_t not_carried;
	int replaced;			/* entries the trace had before */
};

/* Embed into the finished trace at path the objects its stacks need,
 * packed again in mode, written beside to_path and renamed over it; over
 * path itself when to_path is NULL, which a file a recorder still writes
 * (a live ring) refuses. Returns 0, or -1 with the reason in err. */
int embed_archive(const char *path, const char *to_path, enum embed_mode mode, struct embed_archived *out, char *err,
		  size_t errlen);

#endif
