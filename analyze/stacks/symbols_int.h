/*
 * analyze/stacks/symbols_int.h: what the parts of the symbols module share
 * and nothing else sees: the loader thread (symbols_loader.c), finding
 * objects (symbols_find.c), the trace's embedded objects
 * (symbols_embedded.c), inlined frames and lines (symbols_inline.c), and
 * naming (symbols.c).
 */
#ifndef MEMSIGHT_SYMBOLS_INT_H
#define MEMSIGHT_SYMBOLS_INT_H

#include <elfutils/libdw.h>
#include <pthread.h>

#include "symbols.h"

/* From libstdc++: C++ names are shown demangled. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct dso_loader {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int quit;
	int busy;		/* a job is under way (outside the lock) */
	/* In order: an object to load, or an address of one to name. */
	struct load_job { struct dso *d; uint64_t off; unsigned char name, ret; } *queue;
	size_t head, nr, alloc;
};

/*
 * The address ranges of a CU's top-level DIEs, sorted, made on the CU's
 * first lookup. dwarf_getscopes walks every top-level DIE of the CU on
 * every call, and a big CU (glibc's malloc.c, rtld.c) has thousands of
 * them: over a hundred microseconds an address. With this the walk is
 * once per CU, and each address descends only into the function that
 * holds it.
 */
struct cu_scopes {
	struct cu_range {
		uint64_t lo, hi;
		uint32_t order; /* the DIE's place among its siblings */
		Dwarf_Die die;
	} *v;
	size_t n;
	uint64_t longest;
};
/* Objects embedded in the trace: handed to libdw and libunwind as files,
 * so each is decompressed once, straight into a memfd, when first needed.
 * Each has its own lock: the loader thread decoding libc's debug entry
 * must not hold up the main thread that needs libc's unwind tables. The
 * table is complete before either thread looks in it. */
struct embedded {
	pthread_mutex_t mu;	/* held while fd is made */
	unsigned char bid[20];
	int bid_len, mode, fd;
	char *path;
	const struct trace_reader *r;
	size_t chunk;
	uint64_t skip;		/* payload bytes before the ELF */
	size_t len;		/* of the ELF */
	uint64_t original_size;
	struct symbols *owner;
};

/* symbols_find.c */
void dso_load(struct dso *d);
int symbols_debuginfod_start(struct symbols *s);
void symbols_debuginfod_end(struct symbols *s);

/* symbols_loader.c */
/* Make d this thread's: wait while the loader works on it, or take it
 * back when the loader has not started it yet. */
void dso_settle(struct dso *d);
/* Wait for the loader thread to have loaded d (its state and the file
 * used), leaving d the loader's to name ahead: 1 when it has, 0 when d is
 * not the loader's (or its load job was dropped), for the caller to load
 * it itself. */
int dso_wait_loaded(struct dso *d);
void loader_stop(struct dso_loader *l);

/* symbols.c: the loader thread's share of naming. */
void dso_name_ahead(struct dso *d, uint64_t off, int ret);
/* The ELF address of file offset off in a loaded d, and the one to look
 * up: a return address one byte earlier, so that a call at a function's
 * end is named right. 0, or -1 when d has no name for it. */
int dso_addr(const struct dso *d, uint64_t off, int ret, uint64_t *vaddr, uint64_t *look);

/* symbols_embedded.c */
/* The trace's entry for d in one of the modes of the mask (1 << mode),
 * as a path; returns its mode, or 0 when there is none. */
int embedded_path(const struct dso *d, unsigned modes, char *buf, size_t len);
void embedded_release(struct symbols *s);

/* symbols_inline.c: fill hit's inlined frames, once. */
void hit_inline(struct dso *d, struct sym_hit *hit, uint64_t look);

#endif
