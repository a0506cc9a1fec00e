/*
 * formats/opts.h: command-line options as a table, for every memsight
 * command: each option is declared once, with where its value goes and its
 * help, and the parser (getopt_long underneath) and the -h text both come
 * from that table.
 *
 *	static const struct opt options[] = {
 *		OPT_U64('T', "top", &o.top, "N", "stacks shown (default 10)"),
 *		OPT_BOOL(0, "json", &o.json, "one JSON object instead of text"),
 *		OPT_END(),
 *	};
 *	int r = opts_parse(argc, argv, options, usage_head, NULL);
 *	if (r >= 0)
 *		return r;	// -h (0) or a bad option (2), already reported
 *	// argv[optind] is the first operand
 *
 * Also the options of stacks and symbols that the analyzer's commands take
 * and that `memsight flamegraph FILE.trace` hands on to the analyzer:
 * OPTS_STACK_LIST names them once for both.
 */
#ifndef MEMSIGHT_OPTS_H
#define MEMSIGHT_OPTS_H

#include <stdint.h>
#include <stdio.h>

enum opt_type {
	OPT_END_,
	OPT_GROUP_,	/* a heading in the help */
	OPT_SET_,	/* int *value = set */
	OPT_STRING_,	/* const char **value = the argument */
	OPT_U64_,	/* uint64_t *value = the argument, a non-negative number */
	OPT_CALLBACK_,	/* parse(o, arg, ctx): 0, or -1 after reporting */
	OPT_COMMAND_,	/* the first operand ends the options: it starts a command line */
};

struct opt {
	int short_name;		/* 0: none */
	const char *long_name;
	enum opt_type type;
	void *value;
	const char *argh;	/* the argument's name in the help; NULL: no argument */
	const char *help;	/* lines separated by \n; NULL: not shown (an alias) */
	int (*parse)(const struct opt *o, const char *arg, void *ctx);
	int set;		/* OPT_SET_: what is stored */
	int optional_arg;	/* --name[=ARG]: arg is NULL when absent */
};

#define OPT_END() { 0, NULL, OPT_END_, NULL, NULL, NULL, NULL, 0, 0 }
#define OPT_GROUP(title) { 0, NULL, OPT_GROUP_, NULL, NULL, title, NULL, 0, 0 }
#define OPT_SET(s, l, v, n, h) { s, l, OPT_SET_, v, NULL, h, NULL, n, 0 }
#define OPT_BOOL(s, l, v, h) OPT_SET(s, l, v, 1, h)
#define OPT_STRING(s, l, v, a, h) { s, l, OPT_STRING_, v, a, h, NULL, 0, 0 }
#define OPT_U64(s, l, v, a, h) { s, l, OPT_U64_, v, a, h, NULL, 0, 0 }
#define OPT_CALLBACK(s, l, v, a, h, fn) { s, l, OPT_CALLBACK_, v, a, h, fn, 0, 0 }
#define OPT_CALLBACK_OPTARG(s, l, v, a, h, fn) { s, l, OPT_CALLBACK_, v, a, h, fn, 0, 1 }
/* In a table whose operands are a command to run: options stop at its name. */
#define OPT_COMMAND() { 0, NULL, OPT_COMMAND_, NULL, NULL, NULL, NULL, 0, 0 }

/* Parse argv by the table; -h and --help are always there; callbacks get
 * ctx. Returns -1 to go on (optind is the first operand), or the exit
 * status when the command is done: 0 after printing the help on stdout, 2
 * after a bad option was reported (one line, and where to look). */
int opts_parse(int argc, char **argv, const struct opt *opts, const char *usage, void *ctx);
/* The help: usage, then one line (or more) per option. */
void opts_usage(FILE *f, const struct opt *opts, const char *usage);
/* A non-negative number for option name; reports and returns -1 when not. */
int opts_u64(const char *name, const char *arg, uint64_t *out);
/* A duration of len bytes of s: seconds ("10", "0.5"), or with a unit
 * ("250ms", "30s", "1m", "2h", "100us"), into *out seconds; -1 (nothing
 * reported) when it is none. */
int opts_seconds(const char *s, size_t len, double *out);

/*
 * The analyzer's options of stacks and symbols: X(id, long name, argument
 * name or NULL, takes it optionally, help). The analyzer gives each its
 * meaning; memsight flamegraph hands them on as they were given.
 */
#define OPTS_STACK_LIST(X)                                                                           \
	X(DEBUG_DIR, "debug-dir", "DIR", 0,                                                          \
	  "find objects by build-id in DIR/.build-id/ too (before ~/.debug\nand /usr/lib/debug)")    \
	X(SYSROOT, "sysroot", "DIR", 0, "find objects under DIR as under / (a copy of the recording box)") \
	X(DEBUGINFOD, "debuginfod", "URLS", 1,                                                       \
	  "ask these debuginfod servers (default: $DEBUGINFOD_URLS) by\nbuild-id for objects not "   \
	  "found here; never without this option")                                                   \
	X(UNWINDER, "unwinder", "NAME", 0, "for --call-graph dwarf traces: libdw (default) or libunwind") \
	X(NO_INLINE, "no-inline", NULL, 0,                                                           \
	  "no frames for inlined functions (shown by default where the\ndebug information has them)") \
	X(FULL_NAMES, "full-names", NULL, 0,                                                         \
	  "C++ names with their template arguments (by default each\n<...> is shortened to <>, as heaptrack shows them)")
#define OPTS_STACK_TITLE "stacks and symbols:"

#endif
