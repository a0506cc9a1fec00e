/*
 * formats/msg.h: how every memsight program speaks to its user on stderr.
 * One line per message, prefixed with the program and command that speaks
 * ("memsight record: ", "memsight leaks: "): an error says what failed, on
 * what, and how to fix it; a warning says what the results lack; a note is
 * progress or a summary. Library code returns its errors to the command,
 * which reports them once through msg_error; what a library must say on its
 * own (a warning about the input) goes through msg_warn, so the prefix and
 * the stream are decided here alone.
 */
#ifndef MEMSIGHT_MSG_H
#define MEMSIGHT_MSG_H

/* The speaker, e.g. "memsight record"; kept by pointer. */
void msg_init(const char *who);
const char *msg_who(void);
/* "WHO: TEXT"; returns -1, so `return msg_error(...)` reports and fails. */
int msg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "WHO: warning: TEXT" */
void msg_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "WHO: TEXT": progress and summaries, which are not results. */
void msg_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From now on (on 1), a warning or note said before is not said again: for
 * a command that runs others on the same trace (report --html), whose
 * notes would each come once per view. Errors are always said. */
void msg_once(int on);
/* How much is said: MSG_QUIET (-q: errors and warnings only, no notes, no
 * progress), MSG_NORMAL, MSG_VERBOSE (-v: the notes of small matters too,
 * which msg_verbose tells a speaker to say). */
enum { MSG_QUIET = -1, MSG_NORMAL = 0, MSG_VERBOSE = 1 };
void msg_level_set(int level);
int msg_verbose(void);
/* Progress of one long task, on stderr when it is a terminal and not -q,
 * once the task has run delay_ms (a second, as perf and heaptrack_print
 * wait): one line rewritten in place at most ten times a second, erased
 * by msg_progress_end or by the next message. */
void msg_progress_begin(unsigned delay_ms);
void msg_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void msg_progress_end(void);

#endif
