/*
 * record/probes/usdt.h: statically defined probes (USDT, SystemTap's SDT
 * notes) in an ELF object, as uprobe definitions.
 *
 * Owns reading an object's .note.stapsdt entries of one provider: where
 * each probe site is in the file, where its semaphore is (the counter a
 * tracer raises so that the program evaluates the probe's arguments only
 * while someone listens; the kernel raises it when a uprobe names it), and
 * its arguments, translated from the assembler operands the note gives
 * ("8@%rdi", "-4@-12(%rbp)", "8@$5") into tracefs fetchargs. A probe may
 * have several sites (each place the program's code reaches it). Knows
 * nothing of perf events or of what the probes mean.
 */
#ifndef MEMSIGHT_RECORD_USDT_H
#define MEMSIGHT_RECORD_USDT_H

#include <stddef.h>
#include <stdint.h>

#define USDT_MAX_ARGS 12

struct usdt_site {
	char name[64];		/* the probe's name */
	uint64_t offset;	/* file offset of the site's instruction */
	uint64_t semaphore;	/* file offset of its semaphore, 0 for none */
	int nargs;
	char args[USDT_MAX_ARGS][48]; /* each a tracefs fetcharg ("%di:u64"), "" when not expressible */
};

/* The sites of provider's probes in the ELF object open at fd, into a
 * malloc'd *out. Returns how many (0: none), or -1 when fd is not an ELF
 * object. */
int usdt_sites(int fd, const char *provider, struct usdt_site **out);

#endif
