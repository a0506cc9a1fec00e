/*
 * memsight.c: the front door. `memsight record` runs memsight-record,
 * `memsight flamegraph` runs memsight-flamegraph and every other command runs
 * `memsight-analyze COMMAND`, git-style. The helpers are looked up beside
 * this binary first, then on PATH. Links nothing but libc.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: memsight COMMAND [ARGS...]\n"
	"\n"
	"  record      record memory events of a command, running processes or the system\n"
	"  info        what a trace holds: host, events, counts, losses, chunks\n"
	"  events      every event of a trace, one per line, with its stack\n"
	"  report      per event type and process: counts, bytes, heap growth, faults, top stacks\n"
	"  folded      folded stacks (comm;outer;...;inner COUNT) for flame graphs\n"
	"  leaks       allocations still outstanding when recording ended, by stack;\n"
	"              --kernel for kernel memory (kmalloc, slab, pages, percpu)\n"
	"  mmaps       every mapping made: size, protection, flags, file, stack (mmapsnoop)\n"
	"  brk         heap growth by stack (brkstack)\n"
	"  shm         System V shared memory calls with arguments and results (shmsnoop)\n"
	"  faults      page faults by stack and by backing file; swap-ins (faults, ffaults)\n"
	"  reclaim     direct and memcg reclaim latency, kswapd, shrinkers (vmscan, drsnoop)\n"
	"  compaction  page migrations and compaction runs, summarised\n"
	"  oom         OOM kills: victim, its memory, trigger stack, system state (oomkill)\n"
	"  rss         resident memory over time per process, as text or an SVG chart\n"
	"  flamegraph  draw an interactive SVG flame graph from a trace or folded stacks\n"
	"  archive     embed in a trace the objects its stacks need, for analysis elsewhere\n"
	"\n"
	"'memsight COMMAND -h' shows a command's options.\n";

static const char *const analyze_commands[] = { "info",	 "events",     "report", "folded", "leaks",
						"mmaps", "brk",	       "shm",	 "faults", "reclaim",
						"compaction", "oom",   "rss",	 NULL };

static void run(const char *prog, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		char *slash;

		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(path, sizeof(path), "%s/%s", self, prog);
			if (!access(path, X_OK)) {
				argv[0] = path;
				execv(path, argv);
			}
		}
	}
	argv[0] = (char *)prog;
	execvp(prog, argv);
	fprintf(stderr, "memsight: cannot run '%s': %s; is memsight installed completely?\n", prog,
		strerror(errno));
	exit(127);
}

int main(int argc, char **argv)
{
	char **args;

	if (argc < 2) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("memsight %s\n", MEMSIGHT_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "record")) {
		argv[1] = "memsight record";
		run("memsight-record", argv + 1);
	}
	if (!strcmp(argv[1], "flamegraph")) {
		argv[1] = "memsight flamegraph";
		run("memsight-flamegraph", argv + 1);
	}
	if (!strcmp(argv[1], "archive")) {
		/* On the recording box, by the recorder: it needs only libelf. */
		args = calloc(argc + 1, sizeof(*args));
		if (!args)
			return 1;
		memcpy(args + 1, argv + 1, argc * sizeof(*args));
		run("memsight-record", args);
	}
	for (int i = 0; analyze_commands[i]; i++) {
		if (!strcmp(argv[1], analyze_commands[i])) {
			args = calloc(argc + 1, sizeof(*args));
			if (!args)
				return 1;
			memcpy(args + 1, argv + 1, argc * sizeof(*args));
			run("memsight-analyze", args);
		}
	}
	fprintf(stderr, "memsight: '%s' is not a memsight command; see 'memsight -h'\n", argv[1]);
	return 2;
}
