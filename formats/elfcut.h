/*
 * formats/elfcut.h: an ELF object cut down to what memsight reads of it.
 *
 * Owns which sections each cut keeps: the unwind and symbol tables, or the
 * debug information that names inlined functions and gives source lines;
 * and writing the cut. The recorder embeds cuts in traces; the analyzer
 * keeps the debug cut of a compressed debug file in its cache, so that
 * libdw does not inflate the file whole on every run.
 */
#ifndef MEMSIGHT_FORMATS_ELFCUT_H
#define MEMSIGHT_FORMATS_ELFCUT_H

#include <gelf.h>

enum elfcut_keep {
	ELFCUT_MINIMAL,	/* unwinding, symbol tables, the PLT and its relocations */
	ELFCUT_DEBUG,	/* the DIE tree, lines, strings, ranges, .debug_frame, the symbol table */
};

/* The names of the sections a cut keeps (notes are always kept), NULL
 * ended: what a cache's name should cover. */
const char *const *elfcut_sections(enum elfcut_keep keep);

/* Write in, cut, to fd (empty, writable): the same ELF, program and
 * section headers, in the same order; bytes only in the sections kept,
 * and those uncompressed; the others become SHT_NOBITS of their size.
 * Returns 0 or -1. */
int elfcut_write(Elf *in, enum elfcut_keep keep, int fd);

/* Does the file at path hold debug information libdw would inflate
 * (a compressed .debug_info)? */
int elfcut_debug_compressed(const char *path);

#endif
