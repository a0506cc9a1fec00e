/*
 * analyze/main.c: memsight-analyze, the offline analyzer. One table of
 * subcommands; each lives in its own cmd_*.c with its usage text.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "replay/session.h"
#include "stacks/symbols.h"
#include "stacks/unwind.h"

static const char usage_text[] =
	"usage: memsight-analyze COMMAND [options] FILE\n"
	"\n"
	"  info      header, events, counts, losses; --dump lists every chunk\n"
	"  events    one line per event, with its stack\n"
	"  report    per event type and process: counts, bytes, heap growth, faults, top stacks\n"
	"  folded    folded stacks for flame graphs\n"
	"  leaks     allocations still outstanding, by stack (memleak-style); --kernel for kmem\n"
	"  mmaps     every mapping made, with size, protection, flags, file and stack\n"
	"  brk       heap growth by stack\n"
	"  shm       every System V shared memory call with arguments and result\n"
	"  faults    page faults by stack and by backing file; major faults (swap-ins)\n"
	"  reclaim   direct and memcg reclaim latency, kswapd, slab shrinking\n"
	"  compaction  page migrations and compaction runs\n"
	"  oom       OOM kills: victim, its memory, the trigger's stack, the system then\n"
	"  rss       resident memory over time per process, as text or an SVG chart\n"
	"\n"
	"'memsight-analyze COMMAND -h' shows a command's options.\n";

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "info", cmd_info },
	{ "events", cmd_events },
	{ "report", cmd_report },
	{ "folded", cmd_folded },
	{ "leaks", cmd_leaks },
	{ "mmaps", cmd_mmaps },
	{ "brk", cmd_brk },
	{ "shm", cmd_shm },
	{ "faults", cmd_faults },
	{ "reclaim", cmd_reclaim },
	{ "compaction", cmd_compaction },
	{ "oom", cmd_oom },
	{ "rss", cmd_rss },
};

/* Options every analyzing command takes, removed here so each command's
 * own table stays small. */
static int common_options(int *argc, char **argv)
{
	int out = 1;
	/* libdw asks the servers in DEBUGINFOD_URLS on its own (and Debian
	 * sets it in every login shell): the network only with --debuginfod. */
	char *env_debuginfod_urls = getenv("DEBUGINFOD_URLS");

	if (env_debuginfod_urls) {
		env_debuginfod_urls = strdup(env_debuginfod_urls);
		unsetenv("DEBUGINFOD_URLS");
	}

	for (int i = 1; i < *argc; i++) {
		const char *dir = NULL;

		if (!strcmp(argv[i], "--")) {
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		if (!strcmp(argv[i], "--debug-dir")) {
			if (i + 1 >= *argc) {
				msg_error("--debug-dir needs a directory");
				return -1;
			}
			dir = argv[++i];
		} else if (!strncmp(argv[i], "--debug-dir=", 12)) {
			dir = argv[i] + 12;
		}
		if (dir) {
			if (symbols_debug_dir_add(dir))
				return msg_error("out of memory");
			continue;
		}
		if (!strcmp(argv[i], "--sysroot") || !strncmp(argv[i], "--sysroot=", 10)) {
			const char *root = argv[i][9] == '=' ? argv[i] + 10 : i + 1 < *argc ? argv[++i] : NULL;

			if (!root)
				return msg_error("--sysroot needs a directory");
			if (symbols_sysroot_set(root))
				return msg_error("out of memory");
			continue;
		}
		if (!strcmp(argv[i], "--debuginfod") || !strncmp(argv[i], "--debuginfod=", 13)) {
			int r = symbols_debuginfod_set(argv[i][12] == '=' ? argv[i] + 13 : env_debuginfod_urls);

			if (r == -EINVAL)
				return msg_error("--debuginfod has no server to ask: set DEBUGINFOD_URLS or give "
					     "--debuginfod=URL");
			if (r == -ENOENT)
				return msg_error("--debuginfod needs the debuginfod client library (%s): "
					     "apt-get install libdebuginfod1", "libdebuginfod.so.1");
			if (r)
				return msg_error("cannot start the debuginfod client");
			continue;
		}
		if (!strcmp(argv[i], "--unwinder") || !strncmp(argv[i], "--unwinder=", 11)) {
			const char *name = argv[i][10] == '=' ? argv[i] + 11 : i + 1 < *argc ? argv[++i] : NULL;

			if (!name || (session_unwinder = unwind_backend_parse(name)) < 0)
				return msg_error("unknown unwinder '%s': use libdw (the default) or libunwind",
					     name ? name : "");
			continue;
		}
		if (!strcmp(argv[i], "--inline") || !strcmp(argv[i], "--no-inline")) {
			session_inline = argv[i][2] == 'i';
			continue;
		}
		argv[out++] = argv[i];
	}
	*argc = out;
	argv[out] = NULL;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage_text, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(argv[1], commands[i].name)) {
			static char who[64];

			snprintf(who, sizeof(who), "memsight %s", commands[i].name);
			msg_init(who);
			if (common_options(&argc, argv))
				return 2;
			return commands[i].fn(argc - 1, argv + 1);
		}
	}
	msg_error("'%s' is not a memsight command; see 'memsight -h'", argv[1]);
	return 2;
}
