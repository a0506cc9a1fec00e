/*
 * analyze/cmd/cmd.h: the analyzer's subcommands and what they share: reporting
 * an error once with the command's name, opening a trace with its warnings,
 * and printing sizes for people.
 */
#ifndef MEMSIGHT_CMD_H
#define MEMSIGHT_CMD_H

#include <stdint.h>

#include "../../formats/msg.h"
#include "../replay/session.h"

int cmd_info(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_folded(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
int cmd_mmaps(int argc, char **argv);
int cmd_brk(int argc, char **argv);
int cmd_shm(int argc, char **argv);
int cmd_faults(int argc, char **argv);
int cmd_reclaim(int argc, char **argv);
int cmd_compaction(int argc, char **argv);
int cmd_oom(int argc, char **argv);
int cmd_rss(int argc, char **argv);

/* Open FILE for a command: the error is reported here. Returns 0 or -1. */
int cmd_open(struct session *s, const char *path);
/* A view's events must be in the trace: group (or alt, may be NULL) was
 * recorded. Returns 0, or reports "has no WHAT events" with the record
 * command that would add them and returns -1. */
int cmd_need_group(struct session *s, const char *what, const char *group, const char *alt);
/* cmd_open, then cmd_need_group; the session is released when either fails. */
int cmd_open_group(struct session *s, const char *path, const char *what, const char *group, const char *alt);
/* v as "N B" or with a binary unit ("1.5 MiB") in buf; returns buf. */
const char *fmt_bytes(uint64_t v, char *buf, size_t len);
/* -h (ok: on stdout, exit 0) or a bad option (on stderr, exit 2). */
int cmd_usage(const char *usage, int ok);
/* After the options: exactly one FILE must follow. Reports and returns -1
 * when not. */
int cmd_one_file(int argc);
/* Parse an unsigned number option; reports and returns -1 when invalid. */
int parse_u64(const char *opt, const char *arg, uint64_t *out);

/* JSON: a string with its escapes ("" for NULL), and frames as an array
 * of {function, offset, object, kernel, inlined[, file, line]}, the one
 * frame schema of every view. */
void json_str(const char *s);
void json_frames(const struct frame *fr, int n, int lines);
/* Frames one per line, "indent name+off [object][ file:line]". */
void print_frames(const struct frame *fr, int n, int lines, const char *indent);
/* The file name of a frame's object, "kernel.kallsyms" for the kernel. */
const char *frame_obj_base(const struct frame *f);

/* The symbol and unwinding options every command that shows stacks takes
 * (main.c parses them), for its -h. */
#define CMD_STACK_OPTIONS \
	"\nstacks and symbols:\n" \
	"      --debug-dir DIR   find objects by build-id in DIR/.build-id/ too (before ~/.debug\n" \
	"                        and /usr/lib/debug)\n" \
	"      --sysroot DIR     find objects under DIR as under / (a copy of the recording box)\n" \
	"      --debuginfod[=URLS]  ask these debuginfod servers (default: $DEBUGINFOD_URLS) by\n" \
	"                        build-id for objects not found here; never without this option\n" \
	"      --unwinder NAME   for --call-graph dwarf traces: libdw (default) or libunwind\n" \
	"      --no-inline       no frames for inlined functions (shown by default where the\n" \
	"                        debug information has them)\n"

#endif
