/*
 * analyze/stacks/jitsyms.h: names for code a runtime compiled into
 * anonymous memory.
 *
 * Owns reading the perf maps and jitdumps a trace carries
 * (TRACE_META_JITMAP, formats/FORMAT.md) and naming an address of a
 * process at a moment by them. A perf map has no times: where its lines
 * overlap, the last one written wins, as the runtime appends. A jitdump's
 * code load and move records have times: an address is named by the code
 * loaded there last before the moment, so code that replaced other code at
 * the same address names only the samples taken after it came. Its debug
 * records give source lines, its unwinding records the code's .eh_frame
 * (and where the runtime placed it, which the .eh_frame_hdr after it
 * tells). A later copy of a process's file replaces the
 * earlier one (the recorder copies the whole file each time). Bad input (a
 * line that is no map entry, a record cut short or out of bounds) is
 * skipped and counted, never trusted. Knows nothing of sessions or stacks.
 */
#ifndef MEMSIGHT_JITSYMS_H
#define MEMSIGHT_JITSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "../hashmap.h"

/* The object name frames in JIT code carry (compared by address). */
extern const char jitsyms_object[];

struct jit_line {
	uint64_t addr;
	const char *file;
	int line;
};

struct jit_sym {
	uint64_t start, end;
	uint64_t time;		/* when the code was loaded there (jitdump); 0 for a perf map */
	uint64_t seq;		/* order within its file */
	const char *name;
	const struct jit_line *lines; /* sorted by addr; NULL for none */
	uint32_t nr_lines;
	/* The code's .eh_frame from the jitdump's unwinding record, NULL
	 * for none, and the address it was written for: its pc-relative
	 * entries are read as if it lay there. */
	const unsigned char *eh_frame;
	uint32_t eh_frame_len;
	uint64_t eh_frame_addr;
};

enum jit_kind { JIT_PERFMAP, JIT_JITDUMP, JIT_KINDS };

/* One file a trace carried, as info lists it. */
struct jit_file {
	int pid, nspid;
	enum jit_kind kind;
	char *path;		/* as the process named it */
	uint64_t size;		/* of the file when copied */
	uint64_t kept;		/* bytes the trace carries (less when cut at the bound) */
	uint64_t syms;		/* functions read */
	uint64_t bad;		/* lines or records skipped */
	int arch_time;		/* a jitdump timed by the CPU's counter: its times cannot be read */
};

struct jitsyms {
	struct hashmap procs;	/* pid -> struct jit_proc * */
	struct jit_file *files;
	size_t nr_files;
	void **mem;		/* the payload copies names point into */
	size_t nr_mem;
};

void jitsyms_init(struct jitsyms *j);
void jitsyms_release(struct jitsyms *j);
/* Read one TRACE_META_JITMAP payload. Returns 0, or -1 with err set
 * when the payload is no such thing (its file is then not used). */
int jitsyms_add(struct jitsyms *j, const void *payload, size_t len, char *err, size_t errlen);
/* Whether pid has any JIT symbols. */
int jitsyms_has(const struct jitsyms *j, int pid);
/* The function of pid at addr at time, or NULL. */
const struct jit_sym *jitsyms_find(struct jitsyms *j, int pid, uint64_t addr, uint64_t time);
/* The source line of off into sym (ret: off is a return address); -1 for
 * none. */
int jitsyms_line(const struct jit_sym *sym, uint64_t off, int ret, const char **file, int *line);
/* The name of a kind as a trace carries it: "perf-map", "jitdump". */
const char *jitsyms_kind_name(enum jit_kind k);

#endif
