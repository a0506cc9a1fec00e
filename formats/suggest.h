/*
 * formats/suggest.h: "did you mean": the known word closest to a mistyped
 * one, for the commands' and the options' one-line errors.
 */
#ifndef MEMSIGHT_FORMATS_SUGGEST_H
#define MEMSIGHT_FORMATS_SUGGEST_H

#include <stddef.h>

/* Of the n words, the one closest to word by edit distance (insertions,
 * deletions, substitutions and transpositions), when it is close enough
 * to be a typing slip or a prefix: at most a third of its length, and at
 * least one letter right. NULL when none is. */
const char *suggest_closest(const char *word, const char *const *words, size_t n);

#endif
