/*
 * analyze/symbols.h: names for addresses.
 *
 * Owns the objects (DSOs) a recording mapped, keyed by build-id (or by path
 * when the recording has none), finding each on this machine, never using a
 * file whose build-id differs, and turning a file offset into
 * "symbol+offset" through libdw, with a per-object cache. Also the kernel
 * symbols stored in the trace. Knows nothing of processes or maps: callers
 * translate runtime addresses to file offsets first.
 */
#ifndef MEMSIGHT_SYMBOLS_H
#define MEMSIGHT_SYMBOLS_H

#include <stdint.h>
#include <stdio.h>

#include "hashmap.h"

enum dso_state {
	DSO_UNLOADED,
	DSO_OK,
	DSO_MISSING,  /* no file on this machine */
	DSO_MISMATCH, /* the file here has another build-id */
	DSO_NOTELF,
};

struct dso {
	char *path;		 /* as the recording saw it */
	const char *short_name;	 /* basename of path */
	unsigned char build_id[20];
	int bid_len;
	enum dso_state state;
	char *used;		 /* the file symbols came from */
	void *dwfl;		 /* Dwfl *, one per object */
	void *mod;		 /* Dwfl_Module * */
	struct dso_load { uint64_t off, vaddr, size; } *loads;
	size_t nr_loads;
	struct hashmap cache;	 /* vaddr -> struct sym_hit * */
	uint64_t unresolved;	 /* lookups that found no name */
};

struct ksym {
	uint64_t addr;
	char *name;
	char *module;
};

struct symbols {
	struct hashmap dsos;	 /* "b:<hex>" or "p:<path>" -> struct dso * */
	struct ksym *ksyms;
	size_t nr_ksyms;
};

struct sym_hit {
	const char *name;	 /* NULL when unknown */
	char *demangled;	 /* owned copy when name was a C++ one */
	uint64_t start;		 /* symbol start (vaddr) */
};

void symbols_init(struct symbols *s);
/* Also look for objects as DIR/.build-id/xx/rest.debug (for every session). */
int symbols_debug_dir_add(const char *dir);
void symbols_release(struct symbols *s);
struct dso *symbols_dso(struct symbols *s, const char *path, const unsigned char *bid, int bid_len);
/* Symbol at file offset `off` of d; `ret` says off is a return address
 * (looked up one byte earlier, so a call at a function's end is named
 * right). Returns the name (NULL if unknown) and the offset into it. */
const char *symbols_lookup(struct dso *d, uint64_t off, int ret, uint64_t *symoff);
/* Source file and line of a file offset; returns 0, or -1 when the object
 * has no line information for it. */
int symbols_srcline(struct dso *d, uint64_t off, int ret, const char **file, int *line);
/* Load kallsyms-format text from the trace. Returns 0 or -ENOMEM. */
int symbols_ksyms_load(struct symbols *s, const char *text, size_t len);
const char *symbols_ksym(const struct symbols *s, uint64_t addr, uint64_t *symoff);
/* One line per object whose frames stayed unnamed, with how to fix it. */
void symbols_report_unresolved(struct symbols *s, FILE *f);

#endif
