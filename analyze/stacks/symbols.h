/*
 * analyze/stacks/symbols.h: names for addresses.
 *
 * Owns the objects (DSOs) a recording mapped, keyed by build-id (or by path
 * when the recording has none), finding each on this machine, never using a
 * file whose build-id differs, and turning a file offset into
 * "symbol+offset" through libdw, with a per-object cache. Also the kernel
 * symbols stored in the trace, and the loader thread that loads objects and
 * names addresses ahead of the lookups (an object belongs to one thread at
 * a time: the loader's until a lookup settles it). Knows nothing of
 * processes or maps: callers translate runtime addresses to file offsets
 * first.
 */
#ifndef MEMSIGHT_SYMBOLS_H
#define MEMSIGHT_SYMBOLS_H

#include <libelf.h>
#include <stdint.h>
#include <stdio.h>

#include "../../formats/trace.h"
#include "../hashmap.h"

enum dso_state {
	DSO_UNLOADED,
	DSO_OK,
	DSO_MISSING,  /* no file on this machine */
	DSO_MISMATCH, /* the file here has another build-id */
	DSO_NOTELF,
};

struct dso {
	struct symbols *owner;
	char *path;		 /* as the recording saw it */
	int pid;		 /* a process that mapped it, whose root (a container's) holds path */
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
	/* Every address where libdwfl's choice of symbol can change (each
	 * symbol's start and end, each section's bounds), sorted: between two
	 * of them its answer is the same, so one lookup serves them all. */
	uint64_t *bounds;
	size_t nr_bounds;
	int bounds_state;	 /* 0 not made yet, 1 made, -1 none (look up each address) */
	/* The symbols with a size that libdwfl would consider, by value,
	 * each with the largest end of those before it (sym_sized_find):
	 * an interval inside one is named without libdwfl's whole scan. */
	struct sym_sized *sized;
	size_t nr_sized;
	/* The allocated sections, each with its lowest symbol without a
	 * size: where there is none below an address, libdwfl finds no name
	 * for an address no sized symbol holds. */
	struct sym_section { uint64_t lo, hi, min_sizeless; size_t ndx; } *sects;
	size_t nr_sects;
	int sects_unsure;	 /* a label outside every section: ask libdwfl */
	struct hashmap intervals; /* interval number + 1 -> struct sym_interval * */
	struct hashmap cus;	 /* CU offset -> its functions' ranges, for inlined frames */
	struct cu_scopes *cu_index; /* the CUs' own ranges, where .debug_aranges is missing */
	int cu_index_read;
	uint64_t unresolved;	 /* lookups that found no name */
	/* Loading ahead on the loader thread (see symbols_prefetch): until it
	 * is LOAD_DONE, the fields above belong to whichever thread has it. */
	enum { LOAD_IDLE, LOAD_QUEUED, LOAD_BUSY, LOAD_READY, LOAD_DONE } load;
	struct dso_loader *loader;
	int dwarf;		 /* the loader loads debug information too */
	struct hashmap asked;	 /* addresses given to the loader to name */
	int loaded;		 /* the loader has loaded it (state and used are set) */

	/* The object itself, for unwinding: the first candidate with the
	 * recorded build-id whose unwind tables hold bytes (a separate debug
	 * file has none). Found once, by symbols_object. */
	int obj_state;		 /* 0 not looked for, 1 found, -1 none */
	char *obj_path;
	const unsigned char *obj_bytes; /* the file, mapped read-only */
	size_t obj_size;
	struct dso_load *obj_loads;	/* its PT_LOADs, p_filesz as size */
	uint64_t obj_entry;	 /* e_entry: where a process's outermost frame starts */
	struct dso_sect { uint64_t addr, off, size; } *obj_sects; /* sections with bytes */
	size_t nr_obj_sects;
	size_t nr_obj_loads;
	uint64_t unwind_failed;	 /* stacks that stopped inside this object */
	/* The GOT slots the object's relocations bind to a symbol, sorted:
	 * what a call through the PLT lands on. Made by symbols_call_name. */
	struct dso_slot { uint64_t vaddr; char *name; } *slots;
	size_t nr_slots;
	int slots_state;	 /* 0 not made, 1 made, -1 none */
};

struct ksym {
	uint64_t addr;
	char *name;
	char *module;
};

/* Where objects are looked for, and how: the analyzer's options. */
struct symbols_opts {
	const char *const *debug_dirs; /* --debug-dir, searched in order before ~/.debug */
	size_t nr_debug_dirs;
	const char *sysroot;	 /* --sysroot: objects under it as under / */
	const char *debuginfod_urls; /* --debuginfod: these servers are asked; NULL: never */
	const char *home;	 /* whose ~/.debug; NULL: /root's */
	int hermetic;		 /* only the trace's objects and the directories given */
	int same_boot;		 /* recorded on this machine since it started: /proc/PID/root may hold objects */
	int check;		 /* ask libdwfl for every address too, and count differences */
	int full_names;		 /* C++ template arguments kept (else shortened to <>) */
};

/* A demangled C++ name (malloc'd, changed in place) as the symbols give it
 * unless full_names: every template argument list <...> as <>, so one
 * function's instantiations read and fold as one, as heaptrack shows
 * them. Operators (<, <<, <=, <=>, >, >>, >=, ->) are left alone. */
void symbols_shorten(char *name);

struct symbols {
	struct symbols_opts o;
	struct hashmap dsos;	 /* "b:<hex>" or "p:<path>" -> struct dso * */
	struct dso_loader *loader; /* started by the first symbols_prefetch */
	struct ksym *ksyms;
	size_t nr_ksyms;
	struct embedded **embedded; /* the trace's objects (symbols_embedded_ref) */
	size_t nr_embedded;
	/* What the embedded objects may still expand to, in bytes (see
	 * TRACE_OBJECT_GROWTH); set by the first of them. */
	uint64_t embedded_room;
	int embedded_room_set;
	void *dbgd;		 /* debuginfod_client *, with debuginfod_urls */
	uint64_t checked, differ; /* with check */
};

struct sym_hit {
	const char *name;	 /* NULL when unknown */
	char *demangled;	 /* owned copy when name was a C++ one */
	uint64_t start;		 /* symbol start (vaddr) */
	int nr_inline;		 /* -1 until looked up */
	struct sym_inline {
		const char *name;	/* the inlined function */
		const char *call_file;	/* where its caller called it */
		int call_line;
	} *inl;			 /* innermost first */
};

/* Start with the options o (copied; the strings they point to must last).
 * Returns 0, -EINVAL when debuginfod_urls is empty, -ENOENT when the
 * debuginfod client library is missing, or -ENOMEM. */
int symbols_init(struct symbols *s, const struct symbols_opts *o);
/* An object embedded in the trace: TRACE_META_OBJECT chunk number chunk of
 * r, which must stay open while symbols are looked up. Only its header is
 * read now; its ELF bytes are decompressed when a lookup first needs them.
 * Returns 0, -EINVAL for a payload that does not parse, or -ENOMEM. */
int symbols_embedded_ref(struct symbols *s, const struct trace_reader *r, size_t chunk);
/* The mode byte of an embedded object (FORMAT.md): its unwind and symbol
 * tables, the whole file, or the debug information that names inlined
 * functions and gives lines. */
enum embedded_mode {
	EMBED_MINIMAL = 1,
	EMBED_FULL = 2,
	EMBED_DEBUG = 3,
};

struct embedded_info {
	const char *path;
	const unsigned char *build_id;
	int bid_len;
	int mode;		/* enum embedded_mode */
	uint64_t size, original_size;
};
/* The i-th embedded object; 0, or -1 past the last. */
int symbols_embedded_get(const struct symbols *s, size_t i, struct embedded_info *out);
/* A build-id of len bytes (at most 20) as hex into out (41 bytes). */
void symbols_build_id_hex(const unsigned char *bid, int len, char *out);
/* The section of elf called name that holds bytes, or NULL. */
Elf_Scn *symbols_elf_section(Elf *elf, const char *name);
/* A file the analyzer reads code or debug information from, by a path a
 * trace may have named: opened only when it is a regular file, never
 * waiting on a FIFO or opening a device. A descriptor, or -1. */
int symbols_file_open(const char *path);
/* The object file of d for unwinding (see struct dso), or NULL. */
const char *symbols_object(struct dso *d);
/* The file d's symbols come from (a separate debug file when there is
 * one), or NULL when none was found. */
const char *symbols_debug_file(struct dso *d);
/* Read len bytes of d's object file at file offset off; 0 or -1. */
int symbols_object_read(struct dso *d, uint64_t off, void *buf, size_t len);
/* The load bias of d mapped at start with file offset pgoff: runtime
 * address minus ELF virtual address. Needs symbols_object first. */
int symbols_object_bias(struct dso *d, uint64_t start, uint64_t pgoff, uint64_t *bias);
/* The function a call instruction of d's code reaches through the
 * dynamic linker: vaddr is what the instruction names, a PLT entry (call
 * rel32) or, with slot set, a GOT slot (call *slot(%rip)), as an ELF
 * virtual address of d. Returns the symbol the slot's relocation binds, or
 * NULL. Names functions that share one address apart (glibc's memalign
 * and aligned_alloc), as the call named them. */
const char *symbols_call_name(struct dso *d, uint64_t vaddr, int slot);
void symbols_release(struct symbols *s);
struct dso *symbols_dso(struct symbols *s, const char *path, const unsigned char *bid, int bid_len);
/* A process that mapped d: on the recording machine, its root (a
 * container's) is searched for d's path too. */
static inline void symbols_dso_mapped_by(struct dso *d, int pid)
{
	if (d && !d->pid)
		d->pid = pid;
}
/* Start finding and loading d (its file, symbol table and, with dwarf, the
 * debug information, which libdw inflates whole: 40 ms for libc's) on a
 * thread of its own, so that it overlaps reading the trace; the lookups
 * below wait for it. For callers that name frames only after the replay. */
void symbols_prefetch(struct symbols *s, struct dso *d, int dwarf);
/* Before fork: wait until the loader thread has done every job given it,
 * so that it holds no lock and no object is half loaded. In the child,
 * which has no loader thread: start one (0), or -1 when none could be. */
void symbols_fork_prepare(struct symbols *s);
int symbols_fork_child(struct symbols *s);
/* Have the loader thread name file offset off of a prefetched d (and find
 * its inlined functions) while this thread goes on; the lookups below then
 * find it done. Nothing for objects not prefetched. */
void symbols_prefetch_name(struct dso *d, uint64_t off, int ret);
/* Symbol at file offset `off` of d; `ret` says off is a return address
 * (looked up one byte earlier, so a call at a function's end is named
 * right). Returns the name (NULL if unknown) and the offset into it. */
const char *symbols_lookup(struct dso *d, uint64_t off, int ret, uint64_t *symoff);
/* The functions inlined at file offset `off` of d, innermost first, as
 * debug information tells (none without it): the frames a stack shows
 * above the symbol's own. Call after symbols_lookup named the same
 * offset. Returns how many, with the array in *out. */
int symbols_inline(struct dso *d, uint64_t off, int ret, const struct sym_inline **out);
/* Source file and line of a file offset; returns 0, or -1 when the object
 * has no line information for it. */
int symbols_srcline(struct dso *d, uint64_t off, int ret, const char **file, int *line);
/* Load kallsyms-format text from the trace. Returns 0 or -ENOMEM. */
int symbols_ksyms_load(struct symbols *s, const char *text, size_t len);
const char *symbols_ksym(const struct symbols *s, uint64_t addr, uint64_t *symoff);
/* One line per object whose frames stayed unnamed, with how to fix it. */
void symbols_report_unresolved(struct symbols *s);

#endif
