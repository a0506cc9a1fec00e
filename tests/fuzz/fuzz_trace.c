/*
 * tests/fuzz/fuzz_trace.c: a whole trace file, read by every analyzer
 * command.
 *
 * The input goes into a memfd, and each command runs on it as a user
 * would run it, output thrown away (run with -close_fd_mask=3): the trace
 * reader and its checks, META decoding, record parsing, unwinding,
 * pairing, and each view's own decoding. Seeds: tests/fuzz/corpus/trace.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../analyze/cmd/cmd.h"
#include "fuzz.h"

static const struct {
	int (*fn)(int argc, char **argv, struct analyze_opts *a);
	const char *args[6];
} runs[] = {
	{ cmd_info, { "info", "--dump" } },
	{ cmd_events, { "events" } },
	{ cmd_report, { "report" } },
	{ cmd_folded, { "folded" } },
	{ cmd_folded, { "folded", "-e", "malloc", "-w", "peak" } },
	{ cmd_folded, { "folded", "-e", "reclaim", "-w", "latency" } },
	{ cmd_folded, { "folded", "--fault-type", "cow", "--fault-type", "kernel" } },
	{ cmd_leaks, { "leaks", "--json" } },
	{ cmd_leaks, { "leaks", "--kernel" } },
	{ cmd_mmaps, { "mmaps" } },
	{ cmd_brk, { "brk" } },
	{ cmd_shm, { "shm" } },
	{ cmd_faults, { "faults", "--json" } },
	{ cmd_reclaim, { "reclaim" } },
	{ cmd_compaction, { "compaction" } },
	{ cmd_oom, { "oom" } },
	{ cmd_errors, { "errors", "--json" } },
	{ cmd_rss, { "rss" } },
	{ cmd_pprof, { "pprof", "-o", "/dev/null" } },
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_env();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
		fuzz_command(runs[i].fn, runs[i].args, path);
	close(fd);
	return 0;
}
