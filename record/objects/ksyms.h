/*
 * record/objects/ksyms.h: the kernel symbols a recording needs.
 *
 * Owns the set of kernel addresses seen in callchains (filled by the drain
 * loop, so it must stay cheap) and the extraction of the kallsyms lines that
 * cover them, for TRACE_META_KSYMS. Storing only those keeps a small trace
 * small: all of /proc/kallsyms is megabytes. Reading it costs the kernel
 * about 30 ms and parsing it as much again, so a thread does both while
 * the recording runs; a module loaded meanwhile makes the end read it again.
 * The core kernel's text symbols stay where they are until the next boot:
 * the first recording of a boot keeps them in the cache (formats/cache.h),
 * by the boot's id, and the next ones read kallsyms only for an address
 * outside the core kernel's text (a module's, a BPF program's).
 */
#ifndef MEMSIGHT_RECORD_KSYMS_H
#define MEMSIGHT_RECORD_KSYMS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct ksyms_set {
	uint64_t *slots; /* open addressing, 0 = empty */
	size_t alloc, nr;
};

/* /proc/kallsyms, its text symbols sorted by address. */
struct ksyms_table {
	char *text;		/* the file as read */
	size_t len;
	struct ksym_line *lines;
	size_t nr;
	char *modules;		/* /proc/modules when text was read */
	size_t modules_len;
	int err;		/* -errno of the read, 0 when it worked */
	pthread_t thread;
	int loading;		/* the thread is reading */
	/* The core kernel's text symbols from the cache (mapped), when the
	 * boot's entry was there: addresses sorted, and for each the offset
	 * of its "TYPE NAME\n" in names (one more offset ends the last). */
	void *core;
	size_t core_size;
	const uint64_t *core_addr;
	const uint32_t *core_off;
	const char *core_names;
	size_t core_nr, core_names_len;
	uint64_t core_end;	/* _etext: past the core kernel's text */
};

int ksyms_set_add(struct ksyms_set *s, uint64_t ip);
void ksyms_set_release(struct ksyms_set *s);

/* Start reading kallsyms on a thread. Never fails: without a thread
 * ksyms_extract reads it itself. */
void ksyms_table_start(struct ksyms_table *t);
/* kallsyms lines of the symbols holding each address, plus the symbol after
 * each (its start bounds the one before). Returns 0 or -errno. */
int ksyms_extract(const struct ksyms_set *s, struct ksyms_table *t, char **text, size_t *len);
void ksyms_table_release(struct ksyms_table *t);

#endif
