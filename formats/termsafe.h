/*
 * formats/termsafe.h: text that came from a trace or a recorded process,
 * made safe to reach a terminal.
 *
 * Owns the one rule, for every program that prints such text: a process
 * names itself, its files, its JIT-compiled functions and its cgroups, a
 * trace can say anything, and a terminal obeys escapes. Every byte that
 * would be a control (C0 but tab and newline, DEL, C1 whether raw or
 * encoded in UTF-8) or is not part of valid UTF-8 is shown as '?'. The
 * messages of msg.h and the analyzer's text results go through it; JSON
 * escapes what it writes itself, and files (SVG, HTML) escape for their
 * own format. Knows nothing of where the text came from.
 */
#ifndef MEMSIGHT_FORMATS_TERMSAFE_H
#define MEMSIGHT_FORMATS_TERMSAFE_H

#include <stddef.h>

enum termsafe_flags {
	TERMSAFE_NEWLINES = 1 << 0,	/* keep '\n' (text results); a message is one line */
};

/* Clean the n bytes at s in place, by the rule above; a UTF-8 sequence cut
 * at the end counts as invalid. */
void termsafe_clean(char *s, size_t n, unsigned flags);

/* Make stdout a stream that cleans what is written to it (newlines kept)
 * and writes to file descriptor 1 itself, so that redirecting that
 * descriptor still redirects it. Call before anything is written. 0, or
 * -1 (stdout stays as it was). */
int termsafe_stdout(void);

#endif
