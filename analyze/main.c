/*
 * analyze/main.c: memsight-analyze, the offline analyzer: `memsight-analyze
 * COMMAND [options] FILE` runs the command of ../commands.h with that name
 * (each in cmd/cmd_NAME.c). The environment is read here and nowhere else.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../formats/termsafe.h"
#include "cmd/cmd.h"
#include "stacks/unwind.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv, struct analyze_opts *a);
	const char *summary;
} commands[] = {
#define ENTRY_RECORD(name, summary)
#define ENTRY_FLAMEGRAPH(name, summary)
#define ENTRY_ANALYZE(name, summary) { #name, cmd_##name, summary },
#define ENTRY(name, program, summary) ENTRY_##program(name, summary)
	MEMSIGHT_COMMANDS(ENTRY)
#undef ENTRY
};
#define NR_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fputs("usage: memsight-analyze COMMAND [options] FILE\n\n", f);
	for (size_t i = 0; i < NR_COMMANDS; i++)
		commands_print(f, commands[i].name, commands[i].summary);
	fputs("\n'memsight-analyze COMMAND -h' shows a command's options.\n", f);
}

static int env_on(const char *name)
{
	const char *e = getenv(name);

	return e && *e == '1';
}

/* What the environment says, once. libdw would ask the servers in
 * DEBUGINFOD_URLS on its own (and Debian sets it in every login shell):
 * the network only with --debuginfod, which takes the list from here. */
static void env_read(struct analyze_opts *a)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	a->env_debuginfod_urls = urls ? strdup(urls) : NULL;
	unsetenv("DEBUGINFOD_URLS");
	a->sym.home = getenv("HOME");
	a->sym.check = env_on("MEMSIGHT_SYMBOL_CHECK");
	a->unwind_stats = !!getenv("MEMSIGHT_UNWIND_STATS");
	a->unwind_check = env_on("MEMSIGHT_UNWIND_CHECK");
	a->read_stats = env_on("MEMSIGHT_READ_STATS");
	/* Progress after a second, as perf and heaptrack_print wait; a test
	 * sets 0 to see it on a short task. */
	{
		const char *d = getenv("MEMSIGHT_PROGRESS_DELAY_MS");

		a->progress_delay_ms = d && *d ? (unsigned)strtoul(d, NULL, 10) : 1000;
	}
	/* A descriptor past the standard three, open: never the results'. */
	{
		const char *d = getenv("MEMSIGHT_STATUS_FD");
		char *end;
		long fd = d ? strtol(d, &end, 10) : 0;

		if (d && !*end && fd > 2 && fd < INT_MAX && fcntl((int)fd, F_GETFD) >= 0)
			a->status_fd = (int)fd;
	}
	/* Two such, for memsight top's follower: "REQUESTS,REPLIES". */
	{
		const char *d = getenv("MEMSIGHT_FOLLOW_FDS");
		int in, out, len = 0;

		if (d && sscanf(d, "%d,%d%n", &in, &out, &len) == 2 && !d[len] && in > 2 && out > 2 &&
		    fcntl(in, F_GETFD) >= 0 && fcntl(out, F_GETFD) >= 0) {
			a->follow_fds[0] = in;
			a->follow_fds[1] = out;
		}
	}
	a->unwinder = UNWIND_LIBDW;
}

/* A command run by another memsight program (flamegraph runs folded)
 * speaks under the name of the one the user ran, which it passes in
 * MEMSIGHT_SPEAKER: "memsight " and a command's name, nothing else. */
static int speaker_ok(const char *s)
{
	if (!s || strncmp(s, "memsight ", 9) || strlen(s) > 40 || !s[9])
		return 0;
	for (s += 9; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && *s != '-')
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct analyze_opts a = { 0 };

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < NR_COMMANDS; i++) {
		if (!strcmp(argv[1], commands[i].name)) {
			static char who[64];

			snprintf(who, sizeof(who), "memsight %s", commands[i].name);
			if (speaker_ok(getenv("MEMSIGHT_SPEAKER")))
				snprintf(who, sizeof(who), "%s", getenv("MEMSIGHT_SPEAKER"));
			msg_init(who);
			/* Text results carry what processes and traces named:
			 * cleaned on the way out (formats/termsafe.h). A pprof
			 * profile on stdout is bytes, and written to fd 1; top
			 * shows what its leaks child cleaned, and draws. */
			if (strcmp(commands[i].name, "pprof") && strcmp(commands[i].name, "top") && termsafe_stdout())
				return msg_error("cannot set up standard output"), 1;
			env_read(&a);
			return commands[i].fn(argc - 1, argv + 1, &a);
		}
	}
	msg_error("'%s' is not a memsight command; see 'memsight -h'", argv[1]);
	return 2;
}
