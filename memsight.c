/*
 * memsight.c: the front door. Every command in analyze/commands.h runs its
 * program, git-style: `memsight record` and `memsight archive` run
 * memsight-record, `memsight flamegraph` memsight-flamegraph, and every
 * other command `memsight-analyze COMMAND`. The programs are looked up
 * beside this binary first, then on PATH. Links nothing but libc.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/commands.h"
#include "formats/sibling.h"
#include "formats/suggest.h"

static const struct command {
	const char *name, *program, *summary;
} commands[] = {
#define PROGRAM_RECORD "memsight-record"
#define PROGRAM_ANALYZE "memsight-analyze"
#define PROGRAM_FLAMEGRAPH "memsight-flamegraph"
#define ENTRY(name, program, summary) { #name, PROGRAM_##program, summary },
	MEMSIGHT_COMMANDS(ENTRY)
#undef ENTRY
};
#define NR_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fputs("usage: memsight COMMAND [ARGS...]\n\n", f);
	for (size_t i = 0; i < NR_COMMANDS; i++)
		commands_print(f, commands[i].name, commands[i].summary);
	fputs("\n'memsight COMMAND -h' or 'memsight help COMMAND' shows a command's options.\n", f);
}

/* The analyzer touches tens of megabytes of fresh heap, and a page fault
 * costs microseconds (tens in a VM whose host backs memory lazily):
 * glibc's heap in transparent huge pages, and kept rather than handed back
 * and faulted in again, takes a quarter off a system-wide trace's
 * analysis. A tunable the user set comes after these and wins. */
static void analyzer_tunables(void)
{
	static const char ours[] = "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=268435456:"
				   "glibc.malloc.trim_threshold=268435456";
	const char *user = getenv("GLIBC_TUNABLES");
	char *v;

	if (!user || !*user) {
		setenv("GLIBC_TUNABLES", ours, 1);
		return;
	}
	v = malloc(sizeof(ours) + 1 + strlen(user));
	if (!v)
		return;
	sprintf(v, "%s:%s", ours, user);
	setenv("GLIBC_TUNABLES", v, 1);
	free(v);
}

static void run(const char *prog, char **argv)
{
	if (!strcmp(prog, PROGRAM_ANALYZE))
		analyzer_tunables();
	char path[PATH_MAX + 64];

	if (!sibling_path(prog, X_OK, path, sizeof(path))) {
		argv[0] = path;
		execv(path, argv);
	}
	argv[0] = (char *)prog;
	execvp(prog, argv);
	fprintf(stderr, "memsight: cannot run '%s': %s; is memsight installed completely?\n", prog,
		strerror(errno));
	exit(127);
}

int main(int argc, char **argv)
{
	static char help_opt[] = "-h";
	char **args, *help_argv[4] = { NULL, NULL, help_opt, NULL };

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	/* "memsight help record" is "memsight record -h", as git and perf
	 * have it. */
	if (!strcmp(argv[1], "help") && argc == 3) {
		help_argv[0] = argv[0];
		help_argv[1] = argv[2];
		argv = help_argv;
	} else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("memsight %s\n", MEMSIGHT_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--list-commands")) {
		for (size_t i = 0; i < NR_COMMANDS; i++)
			printf("%s\n", commands[i].name);
		return 0;
	}
	for (size_t i = 0; i < NR_COMMANDS; i++) {
		const struct command *c = &commands[i];
		char name[64];

		if (strcmp(argv[1], c->name))
			continue;
		/* The command a program is named after is its main one: it is
		 * run as "memsight NAME ARGS"; the others as "PROGRAM NAME ARGS". */
		if (!strncmp(c->program, "memsight-", 9) && !strcmp(c->program + 9, c->name)) {
			snprintf(name, sizeof(name), "memsight %s", c->name);
			argv[1] = name;
			run(c->program, argv + 1);
		}
		/* The program's own first argument is the command. */
		args = calloc(argc + 1, sizeof(*args));
		if (!args)
			return 1;
		memcpy(args + 1, argv + 1, argc * sizeof(*args));
		run(c->program, args);
	}
	{
		const char *names[NR_COMMANDS + 1], *near;

		for (size_t i = 0; i < NR_COMMANDS; i++)
			names[i] = commands[i].name;
		names[NR_COMMANDS] = "help";
		near = suggest_closest(argv[1], names, NR_COMMANDS + 1);
		fprintf(stderr, "memsight: '%s' is not a memsight command%s%s%s; see 'memsight -h'\n", argv[1],
			near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
	}
	return 2;
}
