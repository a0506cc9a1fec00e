/*
 * analyze/commands.h: every memsight command, once. memsight.c builds its
 * dispatch and its -h from this table, the analyzer its dispatch, its -h
 * and its commands' declarations, and `memsight --list-commands` (which the
 * help test reads) prints it.
 *
 * MEMSIGHT_COMMANDS(X) calls X(name, program, summary) for each, in the
 * order -h lists them. program is RECORD (memsight-record), ANALYZE
 * (memsight-analyze, whose function is cmd_NAME) or FLAMEGRAPH
 * (memsight-flamegraph). A summary's lines are separated by \n.
 */
#ifndef MEMSIGHT_COMMANDS_H
#define MEMSIGHT_COMMANDS_H

#include <stdio.h>
#include <string.h>

#define MEMSIGHT_COMMANDS(X)                                                                                   \
	X(record, RECORD, "record memory events of a command, running processes or the system")                  \
	X(info, ANALYZE, "what a trace holds: host, events, counts, losses, chunks")                               \
	X(events, ANALYZE, "every event of a trace, one per line, with its stack")                                 \
	X(report, ANALYZE, "per event type and process: counts, bytes, heap growth, faults, top stacks")         \
	X(folded, ANALYZE, "folded stacks (comm;outer;...;inner COUNT) for flame graphs")                        \
	X(functions, ANALYZE, "per function: self and total, the flat table of perf report and heaptrack")        \
	X(diff, ANALYZE, "per-stack growth between two recordings, largest first; a gate for CI")                \
	X(pprof, ANALYZE, "a gzipped profile.proto for go tool pprof, Pyroscope and Parca")                       \
	X(leaks, ANALYZE,                                                                                          \
	  "allocations still outstanding when recording ended, by stack;\n--kernel for kernel memory (kmalloc, "   \
	  "slab, pages, percpu)")                                                                                  \
	X(top, ANALYZE, "a trace while it is recorded, refreshed, as top: leaks, faults, brk or\nreclaim by stack; the recorder's CPU, the events lost, each process's RSS")                     \
	X(errors, ANALYZE, "memory errors: use after free, overflows, stack overflow, wild\npointers, double and invalid frees, with their stacks")     \
	X(mmaps, ANALYZE, "every mapping made: size, protection, flags, file, stack (mmapsnoop)")                \
	X(brk, ANALYZE, "heap growth by stack (brkstack)")                                                        \
	X(shm, ANALYZE, "System V shared memory calls with arguments and results (shmsnoop)")                    \
	X(faults, ANALYZE, "page faults by kind, stack, process and file; swap-ins (faults, ffaults)")            \
	X(reclaim, ANALYZE, "direct and memcg reclaim latency, kswapd, shrinkers (vmscan, drsnoop)")             \
	X(compaction, ANALYZE, "page migrations and compaction runs, summarised")                                 \
	X(oom, ANALYZE, "OOM kills: victim, its memory, trigger stack, system state (oomkill)")                   \
	X(rss, ANALYZE, "resident memory over time per process, as text or an SVG chart")                        \
	X(flamegraph, FLAMEGRAPH, "draw an interactive SVG flame graph from a trace or folded stacks")            \
	X(archive, RECORD, "embed in a trace the objects its stacks need, for analysis elsewhere")

/* A -h list: two spaces, the name in this width, a space, the summary
 * (its later lines under its first). */
#define COMMANDS_NAME_WIDTH 11

/* One command's line in a command list: its name, then its summary,
 * whose further lines are indented under the first. */
static inline void commands_print(FILE *f, const char *name, const char *summary)
{
	fprintf(f, "  %-*s ", COMMANDS_NAME_WIDTH, name);
	for (const char *nl; (nl = strchr(summary, '\n')); summary = nl + 1)
		fprintf(f, "%.*s\n  %-*s ", (int)(nl - summary), summary, COMMANDS_NAME_WIDTH, "");
	fprintf(f, "%s\n", summary);
}

#endif
