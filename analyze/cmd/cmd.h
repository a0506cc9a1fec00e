/*
 * analyze/cmd/cmd.h: the analyzer's commands (one file each, listed in
 * ../commands.h) and what they share: their options as tables (with the
 * options of stacks and symbols every command that shows stacks takes),
 * opening the one trace they read, its closing reports, frames as text and
 * as JSON, and sizes for people.
 *
 * A command is
 *	int cmd_NAME(int argc, char **argv, struct analyze_opts *a)
 * where argv[0] is its name and a holds what main.c read from the
 * environment; it returns the exit status, having reported any error once.
 */
#ifndef MEMSIGHT_CMD_H
#define MEMSIGHT_CMD_H

#include <stdint.h>
#include <unistd.h> /* optind, where cmd_parse leaves the FILE */

#include "../../formats/msg.h"
#include "../../formats/opts.h"
#include "../commands.h"
#include "../replay/session.h"
#include "json.h"

#define CMD_DECLARE_RECORD(name)
#define CMD_DECLARE_FLAMEGRAPH(name)
#define CMD_DECLARE_ANALYZE(name) int cmd_##name(int argc, char **argv, struct analyze_opts *a);
#define CMD_DECLARE(name, program, summary) CMD_DECLARE_##program(name)
MEMSIGHT_COMMANDS(CMD_DECLARE)

/* --pid PID into a long (-1 when absent). */
int cmd_opt_pid(const struct opt *o, const char *arg, void *ctx);
/* The options of stacks and symbols (opts.h's list) into the struct
 * analyze_opts that is cmd_parse's ctx. */
int cmd_opt_stack(const struct opt *o, const char *arg, void *ctx);

#define OPT_PID(v) OPT_CALLBACK(0, "pid", v, "PID", "only these processes (comma-separated)", cmd_opt_pid)
int cmd_opt_tid(const struct opt *o, const char *arg, void *ctx);
int cmd_opt_comm(const struct opt *o, const char *arg, void *ctx);
int cmd_opt_time(const struct opt *o, const char *arg, void *ctx);
int cmd_opt_last(const struct opt *o, const char *arg, void *ctx);
/* --fault-type KIND, repeatable, into an unsigned of enum fault_kind bits. */
#define OPT_FAULT_TYPE(v)                                                                               \
	OPT_CALLBACK(0, "fault-type", v, "KIND",                                                        \
		     "faults only of these kinds (repeatable): read, write, exec; cow, a\n"             \
		     "write to a present page; kernel, a kernel-mode fault on a user address",         \
		     cmd_opt_fault_type)
int cmd_opt_fault_type(const struct opt *o, const char *arg, void *ctx);
/* file:line on frames, as heaptrack prints them: on unless --no-lines
 * (the command sets *v to 1 before parsing). */
#define OPT_LINES(v)                                                                                    \
	OPT_BOOL(0, "lines", v, "file:line on each frame where debug information has it (the\n"       \
		 "default)"),                                                                       \
		OPT_SET(0, "no-lines", v, 0, "frames without file:line (faster on a big trace)")
#define OPT_JSON(v) OPT_BOOL(0, "json", v, "one JSON object instead of text")
#define OPT_NO_STACKS(v) OPT_SET('G', "no-stacks", v, 0, "leave the stacks out")
#define CMD_STACK_OPT(id, name, argh, optional, help) \
	, { 0, name, OPT_CALLBACK_, NULL, argh, help, cmd_opt_stack, CMD_STACK_##id, optional }
enum {
#define CMD_STACK_ID(id, name, argh, optional, help) CMD_STACK_##id,
	OPTS_STACK_LIST(CMD_STACK_ID)
#undef CMD_STACK_ID
};
/* The suppressions of what is still held at the end, as leaks and folded
 * take them: a file of LeakSanitizer's rules, and the built-in list on
 * (defaults 1) unless turned off. */
#define OPT_SUPPRESSIONS(file, defaults)                                                                \
	OPT_STRING(0, "suppress", file, "FILE",                                                          \
		   "more suppressions, one 'leak:PATTERN' per line (LeakSanitizer's format)"),          \
		OPT_SET(0, "no-default-suppressions", defaults, 0,                                        \
			"report libc's one-time allocations (stdio buffers, TLS, loader) too")
/* Which of valgrind's leak-check heuristics hold, by its names, into the
 * struct analyze_opts given to cmd_parse: as valgrind, all by default. */
#define OPT_LEAK_HEURISTICS                                                                               \
	OPT_CALLBACK(0, "leak-check-heuristics", NULL, "SET",                                              \
		     "with a --leak-check scan, the pointers into a block's middle\n"                      \
		     "taken for pointers to it, as valgrind's option: stdstring,\n"                      \
		     "length64, newarray, multipleinheritance, all (default) or none",                 \
		     cmd_opt_leak_heuristics)
int cmd_opt_leak_heuristics(const struct opt *o, const char *arg, void *ctx);
/* -i FILE, as perf's, into the struct analyze_opts given to cmd_parse;
 * and how much is said on stderr, -q and -v, which every command that
 * reads a trace takes with it. */
#define OPT_INPUT                                                                                        \
	OPT_CALLBACK('i', "input", NULL, "FILE",                                                         \
		     "the trace to read, as FILE (default: ./memsight.trace, the\n"                     \
		     "recorder's default output)",                                                       \
		     cmd_opt_input),                                                                     \
	OPT_CALLBACK('q', "quiet", NULL, NULL, "errors and warnings only: no notes, no progress", cmd_opt_level), \
	OPT_CALLBACK('v', "verbose", NULL, NULL,                                                         \
		     "also the notes of small matters (stacks that stop short or\n"                   \
		     "frames unnamed, under 1% of them)",                                                \
		     cmd_opt_level)
int cmd_opt_input(const struct opt *o, const char *arg, void *ctx);
int cmd_opt_level(const struct opt *o, const char *arg, void *ctx);
/* --cgroup PATH into the struct analyze_opts given to cmd_parse. */
int cmd_opt_cgroup(const struct opt *o, const char *arg, void *ctx);
/* In a command's table: the options that choose the samples it counts,
 * under their heading, into the struct analyze_opts given to cmd_parse. */
#define OPT_SAMPLES                                                                                     \
	OPT_GROUP("which samples:"),                                                                    \
	OPT_CALLBACK(0, "cgroup", NULL, "PATH",                                                         \
		     "only the processes of this cgroup and those below it (a\n"                        \
		     "container's), in a recording with -a: its directory, or\n"                        \
		     "its path below the cgroup hierarchy's root",                                       \
		     cmd_opt_cgroup),                                                                    \
	OPT_CALLBACK(0, "tid", NULL, "TID", "only these threads (comma-separated)", cmd_opt_tid),       \
	OPT_CALLBACK(0, "comm", NULL, "NAME",                                                           \
		     "only the processes of these names (comma-separated), as\n"                       \
		     "the kernel names them at each event",                                              \
		     cmd_opt_comm),                                                                      \
	OPT_CALLBACK(0, "time", NULL, "START,END",                                                       \
		     "only the events of this window, in seconds from the trace's\n"                    \
		     "first (1.5,3; 2s, or 2s: from 2 s on; ,500ms): what a\n"                         \
		     "command counts, pairs or holds is what happened in it",                            \
		     cmd_opt_time),                                                                      \
	OPT_CALLBACK(0, "last", NULL, "SECS",                                                            \
		     "only the events of the last SECS seconds up to the trace's\n"                    \
		     "last (as far as it is written, while it is recorded), as --time",                 \
		     cmd_opt_last)
/* In a command's table: the options of stacks and symbols, under their
 * heading, into the struct analyze_opts given to cmd_parse. */
#define OPT_STACKS OPT_GROUP(OPTS_STACK_TITLE) OPTS_STACK_LIST(CMD_STACK_OPT)

/* Parse argv by opts (with usage for -h); a is where OPT_STACKS go. Then
 * exactly one FILE must follow, at argv[optind]. Returns -1 to go on, or
 * the exit status (help shown, or a bad option reported). */
int cmd_parse(int argc, char **argv, const struct opt *opts, const char *usage, struct analyze_opts *a);

/* The event groups s holds, comma-separated, each once, into has ("no
 * events" for none); returns what to print. */
const char *cmd_groups_held(const struct session *s, char *has, size_t size);

/* Open FILE for a command: the error is reported here. Returns 0 or -1. */
int cmd_open(struct session *s, const char *path, const struct analyze_opts *a);
/* A view's events must be in the trace: group (or alt, may be NULL) was
 * recorded. Returns 0, or reports "has no WHAT events" with the record
 * command that would add them and returns -1. */
int cmd_need_group(struct session *s, const char *what, const char *group, const char *alt);
/* cmd_open, then cmd_need_group; the session is released when either fails. */
int cmd_open_group(struct session *s, const char *path, const struct analyze_opts *a, const char *what,
		   const char *group, const char *alt);
/* The end of every command that named frames: why stacks stopped early,
 * which objects went unnamed, then the session is released. Returns ret. */
int cmd_close(struct session *s, int ret);

/* v as "N B" or with a binary unit ("1.5 MiB") in buf; returns buf. */
/* "s" after a count of n, or "" when n is one. */
static inline const char *cmd_s(unsigned long long n)
{
	return n == 1 ? "" : "s";
}
const char *fmt_bytes(uint64_t v, char *buf, size_t len);
/* What part of a flight recording the file holds (a ring, or a snapshot
 * of one: its trigger, what was overwritten before its window), "" for a
 * trace that holds all of its recording. */
const char *cmd_window(struct session *s, char *buf, size_t len);
/* Standard output into f, until cmd_stdout_restore(the value returned);
 * -1 after an error. */
int cmd_stdout_to(FILE *f);
void cmd_stdout_restore(int saved);
/* All of f, from its start, into a malloc'd buffer (*len bytes, then a
 * 0); NULL when it cannot be read or held. */
char *cmd_slurp(FILE *f, size_t *len);
/* Run a command with what it prints going into f; its exit status. */
int cmd_capture(FILE *f, int (*fn)(int, char **, struct analyze_opts *), int argc, char **argv, struct analyze_opts *a);
/*
 * A view: what one command shows, built from a replay it can share. Many
 * commands are one view; report --html puts a dozen on one page, every one
 * from the same replay, so the trace is read, unwound and named once.
 *
 * A command's view function parses its argv as the command does, opens
 * the session unless it is open already (cmd_view_open: the page's views
 * share the report's), checks what it needs and sets up v. It returns -1
 * when v is set, else the exit status (any error said).
 */
struct cmd_view {
	session_sample_fn sample;	/* each sample of the replay, or NULL */
	void *arg;			/* sample's and end's */
	/* After the replay: print what the view shows (print 0: the replay
	 * failed, print nothing), release what it holds; the exit status.
	 * Never NULL once set up. */
	int (*end)(struct session *s, void *arg, int print);
	/* A ring followed as it is written moved its window on to from
	 * (session_on_window): the view drops what it holds of before then;
	 * 0, or -1 when it cannot. NULL: a view that cannot, whose replay
	 * starts again on the window instead. */
	int (*window)(struct session *s, void *arg, uint64_t from);
	int stackless;			/* shows no stacks: a replay for it alone unwinds none */
	int says_all;			/* says what was lost and the window itself: no closing notes */
};
typedef int (*cmd_view_fn)(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v);
/* The commands that are views, by their argv as the command's. */
int info_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v);
int leaks_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v);
int errors_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v);
int rss_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v);
int folded_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v);
int functions_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v);
/* folded -e malloc by each of n weights (leaked, peak, bytes, count,
 * lost), each into outs[i], as one view: what running folded once per
 * weight prints. */
int folded_malloc_view(struct session *s, const char *const *weights, FILE **outs, int n, struct cmd_view *v);
/* The malloc family's allocations of s, paired once in the replay for
 * every view that reads them (report, leaks, the malloc foldings) and
 * ended when it ends: cb (when not NULL) is called with arg on each of
 * their events, after those it was called for before. NULL when out of
 * memory. A view reads the model after the replay and leaves it as it
 * found it. */
struct allocs;
struct alloc_event;
struct allocs *cmd_allocs_shared(struct session *s, int (*cb)(struct session *, const struct alloc_event *, void *),
				 void *arg);
/* Open the session for a view, unless open: 0, or -1 (said). */
int cmd_view_open(struct session *s, const struct analyze_opts *a);
/* The command that is the view fn alone: parse, open, replay, end, close. */
int cmd_view_main(int argc, char **argv, struct analyze_opts *a, cmd_view_fn fn);
/* One replay of s feeding every view set up (each sample to each in turn,
 * each its own copy of the sample): 0, or -1 (said). */
int cmd_views_replay(struct session *s, struct cmd_view *v, size_t n);
/* A view's end with what it prints into f (stdout where f is NULL). */
int cmd_view_end(struct session *s, struct cmd_view *v, FILE *f);
/* diff's event and weight where not given (*event, *weight NULL): malloc
 * by leaked bytes where both traces recorded malloc, else faults; bytes
 * for brk and mmap. 0, or -1 when a trace cannot be opened (said). */
int diff_defaults(const char *base, const char *new, struct analyze_opts *a, const char **event, const char **weight);
/* diff --json --top top of base and new, folded (memsight folded --header)
 * from the traces base_path and new_path by event and weight: what diff
 * prints for those traces. Its exit status. */
int diff_json_folded(FILE *base, FILE *new, const char *base_path, const char *new_path, const char *event,
		     const char *weight, uint64_t top);
/* report --html (report_html.c): the page's views set up on s, the
 * report's own first, to be fed by one replay (*views, *n of them; NULL
 * after an error, said); then the page at path, from the report's text,
 * its JSON (report_json's page form: the data the page's views are drawn
 * from) and those views, which it ends and frees, as report_html_free
 * does where no page is written. */
struct page;
struct page *report_html_views(struct session *s, const char *base, const char *trace, const struct analyze_opts *a,
			       const struct cmd_view *report, struct cmd_view **views, size_t *n);
int report_html(FILE *out, const char *path, struct page *pg, const char *text, size_t text_len, const char *data,
		size_t data_len, struct session *s, struct analyze_opts *a);
void report_html_free(struct session *s, struct page *pg);
/* cmd_parse for a command that also takes a BASE before its trace (report
 * --html BASE NEW): *base is it, or NULL when one trace was given. */
int cmd_parse_base(int argc, char **argv, const struct opt *opts, const char *usage, struct analyze_opts *a,
		   const char **base);
/* Frames as an array of {function, offset, object, kernel, inlined[,
 * file, line]}: the one frame schema of every command's JSON. */
void cmd_json_frames(struct json *j, const char *key, const struct frame *fr, int n, int lines);
/* Frames one per line, "indent name+off [object][ file:line]". */
void print_frames(const struct frame *fr, int n, int lines, const char *indent);
/* The same two for a stack table's entry (NULL: no stack recorded). */
struct stack_entry;
void cmd_json_stack(struct json *j, const char *key, const struct stack_entry *e, int lines);
/* A process as JSON: "pid", and where known "nspid" (its pid inside its
 * pid namespace), "cgroup" and "container". */
void cmd_json_process(struct json *j, const struct session *s, int pid);
/* -T: what a list shows, given (non-zero) or by default: text_default
 * lines of text, or all of it in JSON, which is complete unless asked. */
uint64_t cmd_top_count(uint64_t given, int json, uint64_t text_default);
/* A JSON list cut by -T says so: "truncated": {"shown": N, "total": M}. */
void cmd_json_truncated(struct json *j, uint64_t shown, uint64_t total);

/* A list of events as JSON: one object {"trace": TRACE, "events": [...]},
 * its events streamed into the array as they come (json_begin(j, NULL)
 * ... json_end(j) each), closed by cmd_json_events_end. */
void cmd_json_events_begin(struct json *j, const struct session *s);
void cmd_json_events_end(struct json *j, const struct session *s);
/* The events a trace lost while recording (its LOSS chunks, or the lost
 * records a replay met, whichever is more, and the records a full disk
 * kept from the file), and that as "lost" in JSON:
 * every view that counts says it. */
uint64_t cmd_lost(const struct session *s);
void cmd_json_lost(struct json *j, const struct session *s);
/* Who ran a stack, as JSON: "pid" (null when several processes did, and
 * with cmd_json_process's keys when one did), "comm" and "processes". */
void cmd_json_who(struct json *j, const struct session *s, const struct stack_entry *e);
void print_stack(const struct stack_entry *e, int lines, const char *indent);

/* n bytes of s as text in HTML or SVG (SIZE_MAX: up to its NUL): the
 * markup characters escaped, control bytes, which XML forbids, as '?'. */
void cmd_markup_escape(FILE *out, const char *s, size_t n);
/* The file name of a frame's object, "kernel.kallsyms" for the kernel. */
const char *frame_obj_base(const struct frame *f);

#endif
