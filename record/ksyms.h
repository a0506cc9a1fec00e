/*
 * record/ksyms.h: the kernel symbols a recording needs.
 *
 * Owns the set of kernel addresses seen in callchains (filled by the drain
 * loop, so it must stay cheap) and the extraction of the kallsyms lines that
 * cover them, for TRACE_META_KSYMS. Storing only those keeps a small trace
 * small: all of /proc/kallsyms is megabytes.
 */
#ifndef MEMSIGHT_RECORD_KSYMS_H
#define MEMSIGHT_RECORD_KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksyms_set {
	uint64_t *slots; /* open addressing, 0 = empty */
	size_t alloc, nr;
};

int ksyms_set_add(struct ksyms_set *s, uint64_t ip);
/* kallsyms lines of the symbols holding each address, plus the symbol after
 * each (its start bounds the one before). Returns 0 or -errno. */
int ksyms_extract(const struct ksyms_set *s, char **text, size_t *len);
void ksyms_set_release(struct ksyms_set *s);

#endif
