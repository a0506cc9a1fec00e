/*
 * record/record.c: memsight-record, the recorder.
 *
 * Owns the targets (a command it starts, running pids, or the whole
 * system), the per-CPU perf ring buffers and their drain loop, and the order
 * in which a trace file is put together: header, META (host, tracefs
 * header_page, events, /proc snapshots), DATA chunks as rings fill, then
 * kernel symbols, late build-ids, statistics, LOSS, INDEX and TRAILER.
 *
 * Until the events are open and the command has started, the trace is
 * written under a temporary name beside the output, so a failed start leaves
 * neither garbage nor a clobbered older trace. From then on the file is at
 * its final name and every chunk on disk stays readable whatever happens.
 *
 * Knows nothing of unwinding, symbols or how the analyzer reads records.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../formats/meta.h"
#include "../formats/msg.h"
#include "../formats/trace.h"
#include "archive.h"
#include "embed.h"
#include "events.h"
#include "ksyms.h"
#include "leakcheck.h"
#include "procsnap.h"
#include "scrub.h"
#include "uprobes.h"
#include "writeq.h"

#ifndef MEMSIGHT_VERSION
#define MEMSIGHT_VERSION "0.1"
#endif

static const char usage_text[] =
	"usage: memsight record [options] -- COMMAND [ARGS...]\n"
	"   or: memsight record [options] -p PID[,PID...]\n"
	"   or: memsight record [options] -a [-- COMMAND [ARGS...]]\n"
	"\n"
	"  -e, --event GROUPS       event groups, comma-separated (default: brk,mmap,faults);\n"
	"                           GROUP/N keeps one event in N (kmem/100) on a busy box\n"
	"                             brk     brk() calls with the new break\n"
	"                             mmap    mmap, munmap, mremap with sizes and results\n"
	"                             faults  every page fault (period 1) with its address\n"
	"                             malloc  malloc, calloc, realloc, free, ... through uprobes\n"
	"                             kmem    kmalloc, kmem_cache, page and percpu allocations\n"
	"                                     and frees\n"
	"                             reclaim direct and memcg reclaim, kswapd, slab shrinking\n"
	"                             oom     OOM kills (with the system's state then) and reaping\n"
	"                             shm     shmget, shmat, shmdt, shmctl with results\n"
	"                             rss     RSS counter changes (kmem:rss_stat)\n"
	"                             migrate page migrations\n"
	"                             compaction  compaction runs, kcompactd\n"
	"                             swap    major faults with stacks (swap-ins on anonymous\n"
	"                                     memory; no kernel has a swap-in tracepoint)\n"
	"      --filter EVENT:EXPR  a kernel filter on a tracepoint (kmem:kmalloc:bytes_req > 4096)\n"
	"                             or on every tracepoint of a group (kmem:common_pid == 42);\n"
	"                             repeatable\n"
	"  -p, --pid PID[,PID...]   record running processes, their new threads and children\n"
	"  -a, --all-cpus           record the whole system (while COMMAND runs, when given)\n"
	"  -o, --output FILE        trace file to write (default: memsight.trace)\n"
	"  -d, --duration SECONDS   stop after SECONDS\n"
	"  -g, --call-graph MODE    dwarf[,SIZE] (default, but with -a): kernel callchain,\n"
	"                             user registers and SIZE bytes of user stack (default\n"
	"                             8192), unwound offline through code without frame\n"
	"                             pointers (libc, libstdc++, optimised builds)\n"
	"                           fp (default with -a): kernel and user frame-pointer\n"
	"                             callchains, a tenth of the bytes, broken by code\n"
	"                             without frame pointers\n"
	"                           none: no stacks\n"
	"      --stack-dump MODE    pointers (default): of each stack dump and user register,\n"
	"                             keep only the words that could be user addresses (all\n"
	"                             that unwinding reads), zero the rest; raw: every byte\n"
	"  -m, --mmap-pages N       ring buffer pages per CPU, a power of two (default 1024,\n"
	"                             4096 with dwarf; less where that would pass 256 MiB\n"
	"                             over all CPUs)\n"
	"  -O, --object OBJ         malloc: probe the allocator in OBJ, a path or a soname the\n"
	"                             target maps (default: its libc, and jemalloc, tcmalloc or\n"
	"                             mimalloc where it maps them)\n"
	"  -z, --min-size BYTES     malloc: only allocations of at least BYTES\n"
	"  -Z, --max-size BYTES     malloc: only allocations of at most BYTES\n"
	"  -s, --sample N           malloc: keep one allocation's stack in N (estimates)\n"
	"      --leak-check         malloc: when the command exits (or, with -p, when the\n"
	"                             recording ends) pause it and scan its memory for\n"
	"                             pointers to the blocks still allocated, so leaks tells\n"
	"                             lost from still reachable (as valgrind does)\n"
	"      --embed MODE         minimal (default; none with -a): put the unwind and symbol tables of every\n"
	"                             executable object mapped into the trace, so it can be\n"
	"                             analyzed where the binaries are not; full: the whole\n"
	"                             files; either adds the debug information that names\n"
	"                             inlined functions and lines, where this machine has it,\n"
	"                             and the kernel's vDSO image; none\n"
	"      --compression C[:L]  zstd (default; level 1 with -g dwarf, else 3), zlib or none,\n"
	"                             with an optional level\n"
	"  -q, --quiet              no summary on stderr\n"
	"  -h, --help               show this help\n";

#define CHUNK_TARGET (1u << 20)
/* A chunk's buffer: the target and room for the record that crosses it. */
#define CHUNK_BUF (CHUNK_TARGET + 65536)
#define FLUSH_AGE_NS (2ull * 1000000000ull)
/* Bytes of uncompressed chunks the compression thread may have queued
 * before the drain loop waits for it. */
#define WRITEQ_MAX (256u << 20)
/* The drain loop's poll interval while records flow: a 16 MiB ring
 * fills in about 10 ms at the 1.5 GB/s of dwarf stacks on page faults. */
#define POLL_ACTIVE_MS 2
#define POLL_IDLE_MS 500
/* Chunk buffers faulted in before the command starts: dwarf samples
 * arrive at up to 1.5 GB/s here, and the queue holds what the
 * compressor has not caught up with. Raw dumps queued up to 34 MiB on
 * the XOR benchmark; scrubbed ones, mostly zeros, compress at memory
 * speed and queued 4 MiB, and faulting in memory costs 2 ms per MiB in
 * this VM before the command can start. */
#define PREFAULT_DWARF_RAW (96u << 20)
#define PREFAULT_DWARF (16u << 20)
#define PREFAULT_OTHER (4u << 20)
/* What stays allocated past the end of the trace, for the chunks that
 * close it when the disk fills: statistics, losses, kernel symbols. */
#define WRITE_RESERVE (1u << 20)
/* What the default rings may pin in all (-m sets it per CPU). */
#define RINGS_DEFAULT_MAX (256ull << 20)

struct ring {
	int cpu;
	int fd;			 /* the fd whose mmap this is; others SET_OUTPUT to it */
	void *base;
	struct perf_event_mmap_page *pc;
	unsigned char *data;
	uint64_t size, mask;
	unsigned char *chunk;	 /* records copied out, waiting to be written */
	size_t len, alloc;
	uint64_t nrec, first_time, flushed_at;
	uint64_t lost;
};

struct id_map {
	uint64_t id;
	struct rec_event *ev;
};

struct recorder {
	/* options */
	const char *output;
	char *groups;
	char **filters;		/* --filter EVENT:EXPR, as given */
	size_t nr_filters;
	pid_t *pids;
	size_t nr_pids;
	int system_wide;
	char **command;
	double duration;
	enum rec_callchain callchain;
	unsigned stack_size;
	enum scrub_mode stack_dump;
	unsigned mmap_pages;
	enum trace_codec codec;
	int level;
	int quiet;
	const char *object;
	unsigned long long min_size, max_size;
	unsigned sample;
	int leak_check;
	struct leakcheck lc;
	char allocator[UPROBES_MAX_OBJECTS * (PATH_MAX + 1)];
	int argc;
	char **argv;

	/* state */
	struct rec_event *evs;
	size_t nr_evs;
	int ncpus;
	struct ring *rings;
	int *fds;
	size_t nr_fds, fds_alloc;
	struct id_map *ids;
	size_t nr_ids;
	struct trace_writer w;
	struct writeq q;
	struct scrub scrub;
	int out_fd;
	char tmp_path[PATH_MAX];
	int renamed;
	int old_fd;		/* the trace the new one replaces, held open until the end */
	struct ksyms_set ksyms;
	struct ksyms_table kallsyms;
	struct embed_set embed;
	char **nobid;		/* MMAP2 file names seen without a build-id */
	size_t nr_nobid, nobid_alloc;
	pid_t child;
	int go_fd, err_fd;
	int child_status;
	struct rusage child_ru;
	int child_done;
	int child_stopped;	/* the recorder ended the command (-d ran out, a signal) */
	int disk_full;		/* recording stopped because the trace could not grow */
	int realtime;		/* the drain loop runs SCHED_FIFO */
	uint64_t start_ns, stop_ns;
	uint64_t records;
	uint64_t drained; /* bytes taken from the rings, to tell a busy loop from an idle one */
	uint64_t lost_unreported; /* lost per the event counters, beyond the LOST records */
	uint64_t oom_kills;	/* OOM contexts written */
	int build_id;
	int format_lost;	/* the kernel counts each event's lost samples */
};

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int perf_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int paranoid(void)
{
	char buf[32];
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = 2;

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			v = atoi(buf);
		fclose(f);
	}
	return v;
}

/* The highest kernel.perf_event_paranoid that lets an unprivileged user
 * open ev: every event here samples the kernel (tracepoints fire there,
 * and stacks start there), which needs 1 or lower; a CPU-wide event 0;
 * a tracepoint's raw fields -1, but for the syscalls ones on a task. */
static int paranoid_needed(const struct recorder *rc, const char *ev)
{
	if (strchr(ev, ':') && (rc->system_wide || strncmp(ev, "syscalls:", 9)))
		return -1;
	return rc->system_wide ? 0 : 1;
}

static int explain_open_error(const struct recorder *rc, int err, const char *ev)
{
	if ((err == EACCES || err == EPERM) && rc->system_wide)
		return msg_error("system-wide recording (-a) refused for '%s' (%s): it needs root or CAP_PERFMON, or "
			     "kernel.perf_event_paranoid at most %d (now %d: sysctl -w kernel.perf_event_paranoid=%d); "
			     "without them record your own processes with -p PID or -- COMMAND",
			     ev, strerror(err), paranoid_needed(rc, ev), paranoid(), paranoid_needed(rc, ev));
	if (err == EACCES || err == EPERM)
		return msg_error("perf_event_open refused for '%s' (%s): it needs root or CAP_PERFMON, or "
			     "kernel.perf_event_paranoid at most %d (now %d: sysctl -w kernel.perf_event_paranoid=%d)",
			     ev, strerror(err), paranoid_needed(rc, ev), paranoid(), paranoid_needed(rc, ev));
	if (err == EMFILE || err == ENFILE)
		return msg_error("too many open files for '%s': raise the limit with 'ulimit -n'", ev);
	if (err == ESRCH)
		return msg_error("cannot open '%s': the target process is gone", ev);
	return msg_error("cannot open event '%s': %s", ev, strerror(err));
}

/* ---- options --------------------------------------------------------- */

static int parse_pids(struct recorder *rc, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;

	if (!copy)
		return msg_error("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long v = strtol(tok, &end, 10);
		pid_t *p;

		if (*end || v <= 0 || v > INT_MAX) {
			msg_error("invalid pid '%s' in -p: give numbers separated by commas, e.g. -p 123,456", tok);
			free(copy);
			return -1;
		}
		p = realloc(rc->pids, (rc->nr_pids + 1) * sizeof(*p));
		if (!p) {
			free(copy);
			return msg_error("out of memory");
		}
		rc->pids = p;
		rc->pids[rc->nr_pids++] = v;
	}
	free(copy);
	if (!rc->nr_pids)
		return msg_error("-p needs at least one pid");
	return 0;
}

static int groups_has(const char *groups, const char *group);

static int parse_options(struct recorder *rc, int argc, char **argv)
{
	enum { OPT_COMPRESSION = 256, OPT_EMBED, OPT_FILTER, OPT_STACK_DUMP, OPT_LEAK_CHECK };
	static const struct option longopts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "pid", required_argument, NULL, 'p' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "call-graph", required_argument, NULL, 'g' },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "compression", required_argument, NULL, OPT_COMPRESSION },
		{ "embed", required_argument, NULL, OPT_EMBED },
		{ "filter", required_argument, NULL, OPT_FILTER },
		{ "stack-dump", required_argument, NULL, OPT_STACK_DUMP },
		{ "object", required_argument, NULL, 'O' },
		{ "min-size", required_argument, NULL, 'z' },
		{ "max-size", required_argument, NULL, 'Z' },
		{ "sample", required_argument, NULL, 's' },
		{ "leak-check", no_argument, NULL, OPT_LEAK_CHECK },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, embed_given = 0, cg_given = 0;
	char *end;

	rc->output = "memsight.trace";
	rc->callchain = REC_CG_DWARF;
	rc->embed.mode = EMBED_MINIMAL;
	rc->stack_size = REC_DWARF_STACK_DEFAULT;
	rc->mmap_pages = 0; /* by call-graph mode, after the options */
	rc->codec = TRACE_CODEC_ZSTD;
	/* '+': stop at the first non-option, the command to run. */
	while ((c = getopt_long(argc, argv, "+e:p:ao:d:g:m:O:z:Z:s:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			free(rc->groups);
			rc->groups = strdup(optarg);
			break;
		case 'p':
			if (parse_pids(rc, optarg))
				return -1;
			break;
		case 'a':
			rc->system_wide = 1;
			break;
		case 'o':
			rc->output = optarg;
			break;
		case 'd':
			rc->duration = strtod(optarg, &end);
			if (*end || rc->duration <= 0)
				return msg_error("invalid duration '%s': give seconds, e.g. -d 10 or -d 0.5", optarg);
			break;
		case 'g':
			cg_given = 1;
			if (!strcmp(optarg, "fp")) {
				rc->callchain = REC_CG_FP;
			} else if (!strcmp(optarg, "none")) {
				rc->callchain = REC_CG_NONE;
			} else if (!strncmp(optarg, "dwarf", 5) && (!optarg[5] || optarg[5] == ',')) {
				unsigned long v = REC_DWARF_STACK_DEFAULT;

				rc->callchain = REC_CG_DWARF;
				if (optarg[5]) {
					v = strtoul(optarg + 6, &end, 0);
					/* The kernel takes multiples of 8 that keep a
					 * sample under 64 KiB. */
					if (*end || !optarg[6] || v < 64 || v > 65000 || v % 8)
						return msg_error("invalid stack size in '%s': give a multiple of 8 from 64 "
							     "to 65000, e.g. dwarf,8192", optarg);
				}
				rc->stack_size = v;
			} else {
				return msg_error("unknown call-graph mode '%s': use fp, dwarf[,SIZE] or none", optarg);
			}
			break;
		case 'm': {
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || !v || (v & (v - 1)) || v > (1ul << 20))
				return msg_error("invalid --mmap-pages '%s': give a power of two, e.g. 1024", optarg);
			rc->mmap_pages = v;
			break;
		}
		case OPT_COMPRESSION: {
			char name[16];
			const char *colon = strchr(optarg, ':');
			size_t n = colon ? (size_t)(colon - optarg) : strlen(optarg);

			snprintf(name, sizeof(name), "%.*s", (int)(n < 15 ? n : 15), optarg);
			if (!strcmp(name, "zstd"))
				rc->codec = TRACE_CODEC_ZSTD;
			else if (!strcmp(name, "zlib"))
				rc->codec = TRACE_CODEC_ZLIB;
			else if (!strcmp(name, "none"))
				rc->codec = TRACE_CODEC_NONE;
			else
				return msg_error("unknown compression '%s': use zstd, zlib or none", optarg);
			if (colon) {
				rc->level = strtol(colon + 1, &end, 10);
				if (*end || rc->level < 1 || rc->level > 19)
					return msg_error("invalid compression level in '%s': use 1 to 19", optarg);
			}
			break;
		}
		case 'O':
			rc->object = optarg;
			break;
		case OPT_FILTER: {
			char **p = realloc(rc->filters, (rc->nr_filters + 1) * sizeof(*p));

			if (!p)
				return msg_error("out of memory");
			rc->filters = p;
			p[rc->nr_filters++] = optarg;
			break;
		}
		case OPT_STACK_DUMP:
			if (!strcmp(optarg, "pointers"))
				rc->stack_dump = SCRUB_POINTERS;
			else if (!strcmp(optarg, "raw"))
				rc->stack_dump = SCRUB_RAW;
			else
				return msg_error("unknown --stack-dump mode '%s': use pointers or raw", optarg);
			break;
		case OPT_EMBED: {
			int m = embed_mode_parse(optarg);

			if (m < 0)
				return msg_error("unknown --embed mode '%s': use minimal, full or none", optarg);
			rc->embed.mode = m;
			embed_given = 1;
			break;
		}
		case 'z':
		case 'Z': {
			unsigned long long v = strtoull(optarg, &end, 0);

			if (*end || optarg[0] == '-' || !optarg[0])
				return msg_error("invalid size '%s' for -%c: give bytes, e.g. -%c 4096", optarg, c, c);
			if (c == 'z')
				rc->min_size = v;
			else
				rc->max_size = v;
			break;
		}
		case 's': {
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || !v || v > 1000000000)
				return msg_error("invalid sampling '%s' for -s: give N to keep one stack in N, e.g. -s 10",
					     optarg);
			rc->sample = v;
			break;
		}
		case OPT_LEAK_CHECK:
			rc->leak_check = 1;
			break;
		case 'q':
			rc->quiet = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			fputs(usage_text, stderr);
			return -1;
		}
	}
	if (optind < argc)
		rc->command = argv + optind;
	/* -a with a command records the whole system while it runs, as
	 * perf record -a does. */
	if (!!rc->command + !!rc->nr_pids + (rc->system_wide && !rc->command) != 1)
		return msg_error(rc->command || rc->nr_pids || rc->system_wide
				     ? "give only one target: -p PID, -a [-- COMMAND], or -- COMMAND"
				     : "nothing to record: give -p PID, -a, or -- COMMAND (see memsight record -h)");
	if (rc->min_size && rc->max_size && rc->min_size > rc->max_size)
		return msg_error("-z %llu is above -Z %llu: no allocation could match", rc->min_size, rc->max_size);
	if (rc->system_wide && !embed_given)
		rc->embed.mode = EMBED_NONE;
	/* A whole busy box in DWARF mode writes ten times the bytes of
	 * frame-pointer stacks (124 against 13 a sample over a parallel
	 * build) and can outrun the compressor: -a keeps fp unless asked. */
	if (rc->system_wide && !cg_given)
		rc->callchain = REC_CG_FP;
	/* A DWARF sample is about 8 KiB: faults in a tight loop come at
	 * over a GB/s, so the rings must bridge the moments the drain loop
	 * is off the CPU (16 MiB a CPU is about 10 ms of such a burst). The
	 * rings are pinned kernel memory, one per CPU: on a big box the
	 * default shrinks to keep them within RINGS_DEFAULT_MAX in all. */
	if (!rc->mmap_pages) {
		long ncpus = sysconf(_SC_NPROCESSORS_CONF), page = sysconf(_SC_PAGESIZE);

		rc->mmap_pages = rc->callchain == REC_CG_DWARF ? 4096 : 1024;
		while (rc->mmap_pages > 256 && (uint64_t)rc->mmap_pages * page * (ncpus > 0 ? ncpus : 1) >
						       RINGS_DEFAULT_MAX)
			rc->mmap_pages /= 2;
	}
	/* Stack dumps compress as well at zstd level 1 as at 3 (4.11x against
	 * 4.13x on the XOR sample's) at 1.6 times the speed, and the
	 * compressor shares a CPU with the drain loop. */
	if (!rc->level && rc->codec == TRACE_CODEC_ZSTD && rc->callchain == REC_CG_DWARF)
		rc->level = 1;
	if (!rc->groups)
		rc->groups = strdup("brk,mmap,faults");
	if (!rc->groups)
		return msg_error("out of memory");
	if (rc->leak_check && rc->system_wide)
		return msg_error("--leak-check scans the processes recorded: give -- COMMAND or -p PID, not -a");
	if (rc->leak_check && !groups_has(rc->groups, "malloc"))
		return msg_error("--leak-check tells which allocations are lost: record them too, with -e malloc");
	return 0;
}

/* Whether -e names group (alone or as GROUP/N). */
static int groups_has(const char *groups, const char *group)
{
	size_t l = strlen(group);

	for (const char *p = groups; *p;) {
		size_t n = strcspn(p, ",");

		if (n >= l && !strncmp(p, group, l) && (n == l || p[l] == '/'))
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

/* ---- events and rings ------------------------------------------------ */

static int probe_build_id(void)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
				     .config = PERF_COUNT_SW_DUMMY, .disabled = 1, .mmap2 = 1,
				     .build_id = 1 };
	int fd = perf_open(&a, 0, -1);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static int probe_format_lost(void)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
				     .config = PERF_COUNT_SW_DUMMY, .disabled = 1, .read_format = PERF_FORMAT_LOST };
	int fd = perf_open(&a, 0, -1);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* Which allocators the target's calls go through: libc, and jemalloc,
 * tcmalloc or mimalloc where the target maps them (preloaded or linked),
 * all probed; -O names one instead. */
static int setup_malloc(struct recorder *rc, const struct rec_opts_events *o)
{
	struct uprobe_opts u = { .min_size = rc->min_size, .max_size = rc->max_size, .sample = rc->sample,
				 .exclude_pid = rc->system_wide ? getpid() : 0 };
	struct uprobe_objects found = { .nr = 0 };
	char err[512] = "", why[PATH_MAX + 64] = "";
	size_t n = 0;
	int r = -ENOENT;

	if (rc->nr_pids) {
		for (size_t i = 0; i < rc->nr_pids; i++) {
			struct uprobe_objects one;

			if (uprobes_find_allocators(rc->pids[i], &one))
				continue;
			for (int k = 0; k < one.nr && found.nr < UPROBES_MAX_OBJECTS; k++) {
				int dup = 0;

				for (int j = 0; j < found.nr; j++)
					dup |= !strcmp(found.paths[j], one.paths[k]);
				if (!dup)
					memcpy(found.paths[found.nr++], one.paths[k], sizeof(one.paths[k]));
			}
		}
		r = found.nr ? 0 : -ENOENT;
	} else if (rc->system_wide) {
		r = uprobes_system_allocators(&found);
	} else {
		r = uprobes_command_allocators(rc->command, &found, why, sizeof(why));
		/* A command the loader cannot be asked about (a wrapper,
		 * a missing file): the libc this machine runs. */
		if (r)
			r = uprobes_find_allocators(0, &found);
	}
	if (rc->object) {
		char maps[512] = "";

		for (int i = 0; i < found.nr; i++)
			snprintf(maps + strlen(maps), sizeof(maps) - strlen(maps), "%s%s", i ? ", " : " (it maps ",
				 strrchr(found.paths[i], '/') ? strrchr(found.paths[i], '/') + 1 : found.paths[i]);
		if (uprobes_resolve_object(rc->object, &found, u.objects.paths[0], sizeof(u.objects.paths[0])))
			return msg_error("-O %s names no allocator the target maps%s%s: give a path, or the soname of one "
				     "it maps",
				     rc->object, maps, maps[0] ? ")" : "");
		u.objects.nr = 1;
	} else if (r) {
		if (rc->nr_pids)
			return msg_error("process %d maps no allocator (no libc.so): give the object that holds its malloc "
				     "with -O, e.g. -O /proc/%d/exe for a static executable",
				     (int)rc->pids[0], (int)rc->pids[0]);
		return msg_error("cannot find the allocator to probe: give the object that holds malloc with -O");
	} else {
		u.objects = found;
	}
	for (int i = 0; i < u.objects.nr; i++)
		n += snprintf(rc->allocator + n, n < sizeof(rc->allocator) ? sizeof(rc->allocator) - n : 0, "%s%s",
			      i ? "," : "", u.objects.paths[i]);
	if (!rc->quiet && (u.objects.nr > 1 || why[0])) {
		char names[1024];
		size_t k = 0;

		for (int i = 0; i < u.objects.nr; i++) {
			const char *base = strrchr(u.objects.paths[i], '/');

			k += snprintf(names + k, k < sizeof(names) ? sizeof(names) - k : 0, "%s%s",
				      i ? (i + 1 < u.objects.nr ? ", " : " and ") : "", base ? base + 1 : u.objects.paths[i]);
		}
		msg_note("malloc: probing the malloc family of %s%s%s; -O OBJECT picks one", names,
			 why[0] ? ", " : " (what the target maps)", why);
	}
	if (!events_tracefs())
		return msg_error("cannot record malloc: tracefs is not mounted and cannot be (%s)", strerror(errno));
	uprobes_remove_stale();
	if (uprobes_add(&u, o, &rc->evs, &rc->nr_evs, err, sizeof(err)))
		return msg_error("%s", err);
	return 0;
}

/* GROUP or GROUP/N (one sample in N firings). */
static int group_parse(char *tok, uint64_t *period)
{
	char *slash = strchr(tok, '/'), *end;

	*period = 1;
	if (!slash)
		return 0;
	*slash = 0;
	*period = strtoull(slash + 1, &end, 10);
	if (*end || !slash[1] || !*period)
		return msg_error("invalid sampling in '%s/%s': give GROUP/N to keep one event in N, e.g. kmem/100", tok,
			     slash + 1);
	if (!strcmp(tok, "malloc"))
		return msg_error("malloc takes -s N for sampling, not malloc/%s", slash + 1);
	return 0;
}

/* --filter EVENT:EXPR: EVENT is a tracepoint (sys:name or name) or a
 * group, whose tracepoints all get EXPR. */
static int filters_apply(struct recorder *rc)
{
	for (size_t i = 0; i < rc->nr_filters; i++) {
		const char *arg = rc->filters[i], *expr = NULL;
		size_t matched = 0;

		for (size_t pass = 0; pass < 2 && !matched; pass++) {
			for (size_t j = 0; j < rc->nr_evs; j++) {
				struct rec_event *e = &rc->evs[j];
				const char *shortname = strchr(e->name, ':');
				size_t l;

				if (!e->format || !e->group[0])
					continue;
				if (pass == 0) {
					/* "sys:name:EXPR" */
					l = strlen(e->name);
					if (strncmp(arg, e->name, l) || arg[l] != ':')
						continue;
				} else {
					/* "name:EXPR" or "group:EXPR" */
					const char *colon = strchr(arg, ':');

					if (!colon)
						break;
					l = colon - arg;
					if (!((shortname && strlen(shortname + 1) == l && !strncmp(shortname + 1, arg, l)) ||
					      (strlen(e->group) == l && !strncmp(e->group, arg, l))))
						continue;
				}
				expr = arg + l + 1;
				if (e->filter[0])
					return msg_error("two filters for '%s': join them with && in one --filter", e->name);
				if ((size_t)snprintf(e->filter, sizeof(e->filter), "%s", expr) >= sizeof(e->filter))
					return msg_error("the filter for '%s' is too long: at most %zu bytes", e->name,
						     sizeof(e->filter) - 1);
				matched++;
			}
		}
		if (!matched)
			return msg_error("--filter '%s' names no recorded tracepoint: give EVENT:EXPR with EVENT a tracepoint "
				     "of the groups recorded (e.g. kmem:kmalloc:bytes_req > 4096) or a group",
				     arg);
	}
	return 0;
}

static int setup_events(struct recorder *rc)
{
	struct rec_opts_events o = {
		.callchain = rc->callchain,
		.stack_size = rc->stack_size,
		.system_wide = rc->system_wide,
		.inherit = !rc->system_wide,
		.enable_on_exec = rc->command && !rc->system_wide,
		.wakeup_bytes = rc->mmap_pages * (unsigned)sysconf(_SC_PAGESIZE) / 4,
		.build_id = rc->build_id,
		.format_lost = rc->format_lost,
	};
	char *copy = strdup(rc->groups), *save = NULL, *tok;
	size_t groups_ok = 0;
	int ret = -1;

	if (!copy)
		return msg_error("out of memory");
	if (events_tracking_add(&o, &rc->evs, &rc->nr_evs)) {
		free(copy);
		return msg_error("out of memory");
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char missing[1024] = "";
		uint64_t period;
		int r;

		if (group_parse(tok, &period))
			goto out;
		if (!strcmp(tok, "malloc")) {
			if (setup_malloc(rc, &o))
				goto out;
			groups_ok++;
			continue;
		}
		r = events_group_add(tok, period, &o, &rc->evs, &rc->nr_evs, missing, sizeof(missing));
		if (r == -ENOENT) {
			char known[256] = "";

			for (size_t i = 0; events_group_names[i]; i++)
				snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
					 events_group_names[i]);
			msg_error("unknown event group '%s': known groups are %s", tok, known);
			goto out;
		}
		if (r == -EACCES) {
			msg_error("cannot read the tracepoints of group '%s' in %s: permission denied; run as root", tok,
			      events_tracefs() ? events_tracefs() : "tracefs");
			goto out;
		}
		if (r == -ENODEV) {
			/* One line, then record the rest: a kernel without one
			 * group still has the others. */
			msg_note("skipping group '%s': this kernel has none of %s%s", tok,
				missing, events_tracefs() ? "" : " (tracefs is not mounted and cannot be)");
			continue;
		}
		if (r) {
			msg_error("cannot set up group '%s': %s", tok, strerror(-r));
			goto out;
		}
		if (missing[0])
			msg_note("group '%s' without %s: this kernel lacks them; recording the rest",
				tok, missing);
		groups_ok++;
	}
	if (!groups_ok) {
		msg_error("no event group could be set up: nothing to record");
		goto out;
	}
	ret = filters_apply(rc);
out:
	free(copy);
	return ret;
}

static int fds_push(struct recorder *rc, int fd)
{
	if (rc->nr_fds == rc->fds_alloc) {
		size_t n = rc->fds_alloc ? rc->fds_alloc * 2 : 64;
		int *p = realloc(rc->fds, n * sizeof(*p));

		if (!p)
			return -1;
		rc->fds = p;
		rc->fds_alloc = n;
	}
	rc->fds[rc->nr_fds++] = fd;
	return 0;
}

static int ring_map(struct recorder *rc, struct ring *r, int fd)
{
	size_t page = sysconf(_SC_PAGESIZE);
	size_t len = (rc->mmap_pages + 1) * page;

	r->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		return msg_error("cannot map the ring buffer of cpu %d (%zu KiB): %s; try a smaller -m", r->cpu,
			     len >> 10, strerror(errno));
	}
	r->fd = fd;
	r->pc = r->base;
	r->data = (unsigned char *)r->base + page;
	r->size = (uint64_t)rc->mmap_pages * page;
	r->mask = r->size - 1;
	return 0;
}

/* Returns 0, -1 after reporting an error, or 1 when the kernel refused
 * the event's filter (reported; the caller drops the event). */
static int open_one(struct recorder *rc, struct rec_event *e, pid_t pid, int cpu)
{
	struct ring *r = &rc->rings[cpu];
	char filter[sizeof(e->filter) + 64];
	uint64_t id;
	int fd = perf_open(&e->attr, pid, cpu);

	if (fd < 0) {
		/* A CPU that is offline has nothing to record. */
		if (errno == ENODEV && pid == -1)
			return 0;
		return explain_open_error(rc, errno, e->name);
	}
	filter[0] = 0;
	if (rc->system_wide && e->format && !e->filter[0])
		/* Keep the recorder's own writes and allocations out. */
		snprintf(filter, sizeof(filter), "common_pid != %d", (int)getpid());
	else if (rc->system_wide && e->format && strncmp(e->name, "memsight_", 9))
		snprintf(filter, sizeof(filter), "(%s) && common_pid != %d", e->filter, (int)getpid());
	else if (e->filter[0])
		snprintf(filter, sizeof(filter), "%s", e->filter);
	if (filter[0] && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter)) {
		int err = errno;

		close(fd);
		if (!e->filter[0] || !strncmp(e->name, "memsight_", 9))
			return msg_error("the kernel refused the filter '%s' on '%s': %s", filter, e->name,
				     strerror(err));
		fprintf(stderr,
			"memsight record: the kernel refused the filter '%s' on '%s' (%s): check the expression "
			"against the fields in %s/events/%.*s/%s/format; recording the other events\n",
			e->filter, e->name, strerror(err), events_tracefs() ? events_tracefs() : "tracefs",
			(int)(strchr(e->name, ':') - e->name), e->name, strchr(e->name, ':') + 1);
		return 1;
	}
	if (fds_push(rc, fd)) {
		close(fd);
		return msg_error("out of memory");
	}
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id))
		return msg_error("cannot read the id of '%s': %s", e->name, strerror(errno));
	if (events_id_add(e, id, fd))
		return msg_error("out of memory");
	if (!r->base)
		return ring_map(rc, r, fd);
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd))
		return msg_error("cannot share the ring of cpu %d with '%s': %s", cpu, e->name, strerror(errno));
	return 0;
}

static int id_cmp(const void *a, const void *b)
{
	const struct id_map *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int open_events(struct recorder *rc)
{
	pid_t *targets = NULL;
	size_t nr_targets = 0;
	int ret = -1;

	rc->rings = calloc(rc->ncpus, sizeof(*rc->rings));
	if (!rc->rings)
		return msg_error("out of memory");
	for (int c = 0; c < rc->ncpus; c++)
		rc->rings[c].cpu = c;
	if (rc->system_wide) {
		targets = malloc(sizeof(*targets));
		targets[nr_targets++] = -1;
	} else if (rc->command) {
		targets = malloc(sizeof(*targets));
		targets[nr_targets++] = rc->child;
	} else {
		/* Every existing thread: inherit only covers threads and
		 * children created from now on. */
		for (size_t i = 0; i < rc->nr_pids; i++) {
			pid_t *tids;
			int n = procsnap_list(rc->pids[i], &tids);

			if (n <= 0) {
				free(targets);
				return msg_error("no process with pid %d: check it with 'ps -p %d'", (int)rc->pids[i],
					     (int)rc->pids[i]);
			}
			targets = realloc(targets, (nr_targets + n) * sizeof(*targets));
			memcpy(targets + nr_targets, tids, n * sizeof(*tids));
			nr_targets += n;
			free(tids);
		}
	}
	for (size_t e = 0; e < rc->nr_evs; e++) {
		for (size_t t = 0; t < nr_targets && !rc->evs[e].dropped; t++) {
			for (int c = 0; c < rc->ncpus; c++) {
				int r = open_one(rc, &rc->evs[e], targets[t], c);

				if (r < 0)
					goto out;
				if (r > 0) {
					/* The filter is the same on every fd, so the
					 * first one refused it: nothing to undo. */
					rc->evs[e].dropped = 1;
					break;
				}
			}
		}
	}
	/* Events whose filter was refused are not in the trace at all. */
	{
		size_t keep = 0, sampled = 0;

		for (size_t e = 0; e < rc->nr_evs; e++) {
			if (rc->evs[e].dropped) {
				events_free(&rc->evs[e], 1);
				continue;
			}
			sampled += rc->evs[e].group[0] != 0;
			rc->evs[keep++] = rc->evs[e];
		}
		rc->nr_evs = keep;
		if (!sampled) {
			msg_error("no event is left to record");
			goto out;
		}
	}
	for (size_t e = 0; e < rc->nr_evs; e++)
		rc->nr_ids += rc->evs[e].nr_ids;
	rc->ids = malloc(rc->nr_ids * sizeof(*rc->ids));
	if (!rc->ids) {
		msg_error("out of memory");
		goto out;
	}
	rc->nr_ids = 0;
	for (size_t e = 0; e < rc->nr_evs; e++)
		for (size_t i = 0; i < rc->evs[e].nr_ids; i++)
			rc->ids[rc->nr_ids++] = (struct id_map){ rc->evs[e].ids[i], &rc->evs[e] };
	if (rc->nr_ids > 1)
		qsort(rc->ids, rc->nr_ids, sizeof(*rc->ids), id_cmp);
	ret = 0;
out:
	free(targets);
	return ret;
}

static struct rec_event *event_of(struct recorder *rc, uint64_t id)
{
	size_t lo = 0, hi = rc->nr_ids;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (rc->ids[mid].id == id)
			return rc->ids[mid].ev;
		if (rc->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- the drain loop -------------------------------------------------- */

static void nobid_add(struct recorder *rc, const char *name)
{
	for (size_t i = 0; i < rc->nr_nobid; i++)
		if (!strcmp(rc->nobid[i], name))
			return;
	if (rc->nr_nobid == rc->nobid_alloc) {
		size_t n = rc->nobid_alloc ? rc->nobid_alloc * 2 : 32;
		char **p = realloc(rc->nobid, n * sizeof(*p));

		if (!p)
			return;
		rc->nobid = p;
		rc->nobid_alloc = n;
	}
	if ((rc->nobid[rc->nr_nobid] = strdup(name)))
		rc->nr_nobid++;
}

/* An OOM kill: the state of the system now, while the victim is likely
 * still exiting, goes into the trace in order with the samples. */
static void oom_seen(struct recorder *rc, const struct rec_event *e, const unsigned char *rec, size_t size)
{
	uint32_t raw_len, tid[2];
	uint64_t time;
	int32_t victim = 0;
	const unsigned char *raw = events_sample_raw(e, rec, size, &raw_len);
	char *text;
	size_t len;

	if (raw && (uint32_t)e->victim_pid_off + 4 <= raw_len)
		memcpy(&victim, raw + e->victim_pid_off, 4);
	/* IDENTIFIER, IP, TID (pid, tid), TIME: fixed for every event. */
	memcpy(tid, rec + 24, 8);
	memcpy(&time, rec + 32, 8);
	if (procsnap_oom_context(victim, tid[0], time, &text, &len))
		return;
	writeq_push_meta(&rc->q, TRACE_META_OOM, text, len);
	rc->oom_kills++;
	free(text);
}

/* Look at one record copied out of a ring: count it, collect what the end
 * of the recording needs (kernel addresses, files without build-id). */
static void inspect(struct recorder *rc, struct ring *r, const unsigned char *rec, size_t size)
{
	const struct perf_event_header *h = (const void *)rec;

	switch (h->type) {
	case PERF_RECORD_SAMPLE: {
		uint64_t id;
		struct rec_event *e;

		if (size < 16)
			return;
		memcpy(&id, rec + 8, 8);
		e = event_of(rc, id);
		if (!e)
			return;
		e->samples++;
		if (e->victim_pid_off > 0)
			oom_seen(rc, e, rec, size);
		if (e->callchain_off && e->callchain_off + 8 <= size) {
			uint64_t nr, ip;
			int kernel = 0;

			memcpy(&nr, rec + e->callchain_off, 8);
			for (uint64_t i = 0; i < nr && e->callchain_off + 8 + 8 * (i + 1) <= size; i++) {
				memcpy(&ip, rec + e->callchain_off + 8 + 8 * i, 8);
				if (ip >= PERF_CONTEXT_MAX) {
					kernel = ip == PERF_CONTEXT_KERNEL;
					if (ip == PERF_CONTEXT_USER)
						break;
					continue;
				}
				if (kernel)
					ksyms_set_add(&rc->ksyms, ip);
			}
		}
		break;
	}
	case PERF_RECORD_LOST: {
		uint64_t lost;

		if (size >= 24) {
			memcpy(&lost, rec + 16, 8);
			r->lost += lost;
		}
		break;
	}
	case PERF_RECORD_MMAP2:
		if (size >= 72 + sizeof(TRACE_OBJECT_VDSO) && !memcmp(rec + 72, TRACE_OBJECT_VDSO, sizeof(TRACE_OBJECT_VDSO)))
			rc->embed.vdso = 1;
		if (size > 73 && rec[72] == '/' && rec[73] != '/' && rc->embed.mode != EMBED_NONE) {
			uint32_t prot;

			memcpy(&prot, rec + 64, 4);
			if ((prot & PROT_EXEC) && memchr(rec + 72, 0, size - 72))
				embed_set_add(&rc->embed, (const char *)rec + 72);
		}
		if (!(h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && size > 73 && rec[72] == '/' && rec[73] != '/') {
			char name[PATH_MAX];
			size_t n = strnlen((const char *)rec + 72, size - 72);

			if (n < sizeof(name)) {
				memcpy(name, rec + 72, n);
				name[n] = 0;
				nobid_add(rc, name);
			}
		}
		break;
	}
}

/* On the compression thread, before a DATA chunk is compressed: what of
 * each stack dump is kept, and how (scrub.h). Samples that shrink move the
 * records after them up. Reads only the id table, which is fixed before
 * the thread starts. Returns the chunk's new length. */
static size_t chunk_prepare(void *arg, unsigned char *buf, size_t len)
{
	struct recorder *rc = arg;
	size_t off = 0, out = 0;

	while (off + sizeof(struct perf_event_header) <= len) {
		struct perf_event_header h;
		const struct rec_event *e;
		size_t size;
		uint64_t id;

		memcpy(&h, buf + off, sizeof(h));
		if (h.size < sizeof(h) || h.size > len - off)
			break;
		size = h.size;
		if (h.type == PERF_RECORD_SAMPLE && h.size >= 16) {
			memcpy(&id, buf + off + 8, 8);
			e = event_of(rc, id);
			if (e && (e->attr.sample_type & PERF_SAMPLE_STACK_USER))
				size = scrub_sample(&rc->scrub, e->attr.sample_type, e->attr.sample_regs_user,
						    buf + off, h.size);
		}
		if (out != off)
			memmove(buf + out, buf + off, size);
		out += size;
		off += h.size;
	}
	/* Whatever could not be parsed stays as it was. */
	if (out != off)
		memmove(buf + out, buf + off, len - off);
	return out + (len - off);
}

static void ring_flush(struct recorder *rc, struct ring *r)
{
	if (!r->len)
		return;
	/* The compression thread takes the buffer; the next records go to
	 * a new one. */
	writeq_push(&rc->q, r->cpu, r->first_time, r->chunk, r->len, r->alloc, r->nrec);
	rc->records += r->nrec;
	r->chunk = NULL;
	r->alloc = 0;
	r->len = 0;
	r->nrec = 0;
	r->flushed_at = now_ns(CLOCK_MONOTONIC);
}

static int ring_drain(struct recorder *rc, struct ring *r)
{
	uint64_t head, tail;

	if (!r->base)
		return 0;
	head = __atomic_load_n(&r->pc->data_head, __ATOMIC_ACQUIRE);
	tail = r->pc->data_tail;
	rc->drained += head - tail;
	while (tail < head) {
		size_t off = tail & r->mask, size, first;
		const struct perf_event_header *h = (const void *)(r->data + off);
		unsigned char *dst;

		/* Records are 8-byte aligned, so a header never wraps. */
		size = h->size;
		if (size < sizeof(*h) || size > head - tail)
			return msg_error("ring of cpu %d holds a malformed record (size %zu)", r->cpu, size);
		/* A record is at most 64 KiB (the header's u16) and a chunk is
		 * flushed past CHUNK_TARGET, so a CHUNK_BUF buffer always has
		 * room; buffers are never grown. */
		if (r->len + size > r->alloc)
			ring_flush(rc, r);
		if (!r->alloc) {
			r->chunk = writeq_buffer(&rc->q);
			if (!r->chunk)
				return msg_error("out of memory");
			r->alloc = CHUNK_BUF;
		}
		dst = r->chunk + r->len;
		first = size;
		if (off + size > r->size)
			first = r->size - off;
		memcpy(dst, r->data + off, first);
		if (first < size)
			memcpy(dst + first, r->data, size - first);
		if (!r->nrec)
			r->first_time = trace_record_time(dst, size);
		inspect(rc, r, dst, size);
		r->len += size;
		r->nrec++;
		tail += size;
	}
	/* Free the ring before the slow part: compression and the write. */
	__atomic_store_n(&r->pc->data_tail, tail, __ATOMIC_RELEASE);
	if (r->len >= CHUNK_TARGET)
		ring_flush(rc, r);
	return 0;
}

static int drain_all(struct recorder *rc, int flush_old)
{
	uint64_t now = flush_old ? now_ns(CLOCK_MONOTONIC) : 0;

	for (int c = 0; c < rc->ncpus; c++) {
		struct ring *r = &rc->rings[c];

		if (ring_drain(rc, r))
			return -1;
		/* Bound what a crash could lose on a quiet CPU. */
		if (flush_old && r->len && now - r->flushed_at > FLUSH_AGE_NS)
			ring_flush(rc, r);
	}
	return 0;
}

/* ---- META ------------------------------------------------------------ */

static void meta_add(struct recorder *rc, enum trace_meta_kind kind, const void *data, size_t len)
{
	trace_writer_add(&rc->w, TRACE_CHUNK_META, kind, 0, data, len, 0);
}

static void write_host(struct recorder *rc)
{
	struct utsname u;
	char host[8192], cmd[4096] = "";
	size_t n = 0;
	uint64_t mono = now_ns(CLOCK_MONOTONIC), real = now_ns(CLOCK_REALTIME);
	char hostname[256] = "";

	uname(&u);
	gethostname(hostname, sizeof(hostname) - 1);
	for (int i = 0; i < rc->argc; i++)
		n += snprintf(cmd + n, n < sizeof(cmd) ? sizeof(cmd) - n : 0, "%s%s", i ? " " : "", rc->argv[i]);
	n = 0;
#define ADD(...) n += snprintf(host + n, n < sizeof(host) ? sizeof(host) - n : 0, __VA_ARGS__)
	ADD("memsight_version %s\n", MEMSIGHT_VERSION);
	ADD("hostname %s\n", hostname);
	ADD("sysname %s\nrelease %s\nversion %s\nmachine %s\n", u.sysname, u.release, u.version, u.machine);
	ADD("nr_cpus %d\n", rc->ncpus);
	ADD("page_size %ld\n", sysconf(_SC_PAGESIZE));
	ADD("long_size %zu\n", sizeof(long));
	ADD("byte_order little\n");
	ADD("clock_id %d\n", CLOCK_MONOTONIC);
	ADD("clock_monotonic_ns %llu\nclock_realtime_ns %llu\n", (unsigned long long)mono,
	    (unsigned long long)real);
	ADD("recorder_pid %d\n", (int)getpid());
	ADD("command %s\n", cmd);
	if (rc->callchain == REC_CG_DWARF)
		ADD("call_graph dwarf,%u\n", rc->stack_size);
	else
		ADD("call_graph %s\n", rc->callchain == REC_CG_FP ? "fp" : "none");
	ADD("stack_dump %s\n", rc->scrub.mode == SCRUB_RAW ? "raw" : "pointers");
	ADD("groups %s\n", rc->groups);
	ADD("build_id_in_mmap2 %d\n", rc->build_id);
	if (rc->allocator[0]) {
		ADD("allocator %s\n", rc->allocator);
		ADD("alloc_sample %u\n", rc->sample ? rc->sample : 1);
		ADD("alloc_min_size %llu\nalloc_max_size %llu\n", rc->min_size, rc->max_size);
		if (uprobes_aliases()[0])
			ADD("alloc_aliases %s\n", uprobes_aliases());
		if (rc->leak_check)
			ADD("leak_check 1\n");
	}
	if (rc->system_wide && rc->command)
		ADD("target system command %d\n", (int)rc->child);
	else if (rc->system_wide)
		ADD("target system\n");
	else if (rc->command)
		ADD("target command %d\n", (int)rc->child);
	else {
		ADD("target pids");
		for (size_t i = 0; i < rc->nr_pids; i++)
			ADD("%s%d", i ? "," : " ", (int)rc->pids[i]);
		ADD("\n");
	}
#undef ADD
	if (n >= sizeof(host))
		n = sizeof(host) - 1;
	meta_add(rc, TRACE_META_HOST, host, n);
	rc->start_ns = mono;
}

static int write_start_meta(struct recorder *rc)
{
	size_t len;
	char *hp;

	write_host(rc);
	hp = events_tracefs_read("events/header_page", &len);
	if (hp) {
		meta_add(rc, TRACE_META_HEADER_PAGE, hp, len);
		free(hp);
	}
	for (size_t i = 0; i < rc->nr_evs; i++) {
		struct rec_event *e = &rc->evs[i];
		struct trace_event_desc d = { e->name, (char *)e->group, e->format, &e->attr,
					      sizeof(e->attr), e->ids, e->nr_ids };
		unsigned char *buf;

		if (trace_event_desc_encode(&d, &buf, &len))
			return msg_error("out of memory");
		meta_add(rc, TRACE_META_EVENT, buf, len);
		free(buf);
	}
	if (rc->system_wide || rc->nr_pids) {
		pid_t *pids = rc->pids;
		int n = rc->nr_pids;

		if (rc->system_wide && (n = procsnap_list(0, &pids)) < 0)
			return msg_error("cannot list /proc: %s", strerror(-n));
		for (int i = 0; i < n; i++) {
			char *text;

			/* A process may exit while we look: skip it. */
			if (procsnap_process(pids[i], &text, &len))
				continue;
			meta_add(rc, TRACE_META_PROCESS, text, len);
			if (rc->embed.mode != EMBED_NONE)
				embed_set_add_maps(&rc->embed, text, len);
			free(text);
		}
		if (pids != rc->pids)
			free(pids);
	}
	return rc->w.err ? msg_error("cannot write '%s': %s", rc->output, trace_writer_strerror(&rc->w)) : 0;
}

static void write_end_meta(struct recorder *rc)
{
	char *text = NULL, line[PATH_MAX + 64];
	size_t len = 0, alloc = 0;

	/* The objects first: the kallsyms thread may still be reading. Not
	 * on a full disk: the reserve is for what follows. */
	if (!trace_writer_full(&rc->w))
		embed_set_write(&rc->embed, &rc->w);
	if (!ksyms_extract(&rc->ksyms, &rc->kallsyms, &text, &len) && len)
		meta_add(rc, TRACE_META_KSYMS, text, len);
	free(text);

	/* Build-ids the kernel could not give (page not in memory). */
	text = NULL;
	len = alloc = 0;
	for (size_t i = 0; i < rc->nr_nobid; i++) {
		unsigned char id[BUILD_ID_MAX];
		char hex[2 * BUILD_ID_MAX + 1];
		int l = procsnap_build_id(rc->nobid[i], id), n;

		if (l <= 0)
			continue;
		procsnap_build_id_hex(id, l, hex);
		n = snprintf(line, sizeof(line), "%s\t%s\n", hex, rc->nobid[i]);
		if (len + n + 1 > alloc) {
			char *p = realloc(text, alloc = (len + n + 1) * 2);

			if (!p)
				break;
			text = p;
		}
		memcpy(text + len, line, n);
		len += n;
	}
	if (len)
		meta_add(rc, TRACE_META_BUILDIDS, text, len);
	free(text);

	text = NULL;
	len = alloc = 0;
	{
		char buf[16384];
		size_t n = 0;
		uint64_t lost = 0;

		for (int c = 0; c < rc->ncpus; c++)
			lost += rc->rings[c].lost;
		lost += rc->lost_unreported;
#define ADD(...) n += snprintf(buf + n, n < sizeof(buf) ? sizeof(buf) - n : 0, __VA_ARGS__)
		ADD("duration_ns %llu\n", (unsigned long long)(rc->stop_ns - rc->start_ns));
		ADD("records %llu\n", (unsigned long long)rc->records);
		if (rc->records > rc->w.nr_records)
			ADD("records_not_written %llu\n", (unsigned long long)(rc->records - rc->w.nr_records));
		ADD("lost %llu\n", (unsigned long long)lost);
		ADD("writer_queue_peak %zu\nwriter_queue_waits %llu\n", rc->q.peak,
		    (unsigned long long)rc->q.waits);
		ADD("writer_codec %d\nwriter_level %d\n", (int)rc->w.codec, rc->w.level);
		ADD("writer_fast_chunks %llu\nwriter_raw_chunks %llu\n", (unsigned long long)rc->q.fast_chunks,
		    (unsigned long long)rc->q.raw_chunks);
		ADD("writer_boosts %llu\ndrain_realtime %d\n", (unsigned long long)rc->q.boosts, rc->realtime);
		for (size_t i = 0; i < rc->nr_evs; i++)
			if (rc->evs[i].group[0])
				ADD("samples %s %llu\n", rc->evs[i].name, (unsigned long long)rc->evs[i].samples);
		if (rc->command && rc->child_done) {
			ADD("command_status %d\n", rc->child_status);
			if (rc->child_stopped)
				ADD("command_stopped 1\n");
			/* What the kernel itself counted for the command and the
			 * children it waited for: a check on the fault samples. */
			ADD("command_minflt %ld\ncommand_majflt %ld\n", rc->child_ru.ru_minflt,
			    rc->child_ru.ru_majflt);
			ADD("command_maxrss_kb %ld\n", rc->child_ru.ru_maxrss);
		}
#undef ADD
		if (n >= sizeof(buf))
			n = sizeof(buf) - 1;
		meta_add(rc, TRACE_META_STATS, buf, n);
	}
}

/* A --leak-check scan's payload: in order with the records while the
 * compression thread runs, straight to the writer once it has stopped. */
static int reach_emit(void *arg, const void *payload, size_t len)
{
	struct recorder *rc = arg;

	if (rc->q.running)
		writeq_push_meta(&rc->q, TRACE_META_REACH, payload, len);
	else
		meta_add(rc, TRACE_META_REACH, payload, len);
	return rc->w.err;
}

/* ---- the command ----------------------------------------------------- */

static int start_child(struct recorder *rc, const sigset_t *oldmask)
{
	int go[2], err[2];

	if (pipe2(go, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return msg_error("cannot create a pipe: %s", strerror(errno));
	rc->child = fork();
	if (rc->child < 0)
		return msg_error("cannot fork: %s", strerror(errno));
	if (!rc->child) {
		char c;
		int e;

		close(go[1]);
		close(err[0]);
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		/* Wait until the events are open; EOF means the recorder gave up. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(rc->command[0], rc->command);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	rc->go_fd = go[1];
	rc->err_fd = err[0];
	if (rc->leak_check) {
		int r = leakcheck_follow(rc->child);

		if (r)
			return msg_error("--leak-check cannot follow the command (ptrace: %s)%s", strerror(-r),
				     r == -EPERM ? ": it needs root or CAP_SYS_PTRACE, and kernel.yama.ptrace_scope at most 2"
						 : "");
	}
	return 0;
}

static int release_child(struct recorder *rc)
{
	int e = 0;
	ssize_t n;

	if (write(rc->go_fd, "g", 1) != 1)
		return msg_error("cannot start '%s': %s", rc->command[0], strerror(errno));
	close(rc->go_fd);
	rc->go_fd = -1;
	/* The error pipe closes on a successful exec. */
	do
		n = read(rc->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(rc->err_fd);
	rc->err_fd = -1;
	if (n == sizeof(e)) {
		waitpid(rc->child, NULL, 0);
		rc->child = 0;
		if (e == ENOENT)
			return msg_error("command not found: '%s': check the name or give its path", rc->command[0]);
		return msg_error("cannot run '%s': %s", rc->command[0], strerror(e));
	}
	return 0;
}

/* ---- main ------------------------------------------------------------ */

/* The output is replaced by a rename: whatever sits at its path goes. Only
 * a regular file may (not /dev/null, a FIFO, a directory, or a symlink,
 * whose target would stay as it was), and all is checked before anything
 * starts. */
static int check_output(const char *path)
{
	struct stat st;
	const char *what;

	if (!path[0])
		return msg_error("the output path is empty: give a file name with -o");
	if (!strcmp(path, "-"))
		return msg_error("-o -: the recorder writes a file, not standard output; give a file name");
	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		return msg_error("cannot use '%s' as the output: %s", path, strerror(errno));
	}
	if (S_ISREG(st.st_mode))
		return 0;
	what = S_ISDIR(st.st_mode)   ? "a directory"
	       : S_ISLNK(st.st_mode) ? "a symbolic link"
	       : S_ISFIFO(st.st_mode) ? "a FIFO"
	       : S_ISSOCK(st.st_mode) ? "a socket"
				     : "a device";
	return msg_error("'%s' is %s, which a trace would replace: give the path of a regular file, or of a new one",
		     path, what);
}

/* A recorder killed before its rename leaves .NAME.XXXXXX behind; a live
 * one holds a lock on its own. Those nobody holds go. */
static void remove_stale_temps(const char *dir, const char *base)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t bl = strlen(base);

	while (d && (de = readdir(d))) {
		char path[PATH_MAX];
		int fd;

		if (de->d_name[0] != '.' || strncmp(de->d_name + 1, base, bl) || de->d_name[1 + bl] != '.' ||
		    strlen(de->d_name + 2 + bl) != 6)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			char head[8];

			/* Only what a recorder writes: a trace's magic. */
			if (pread(fd, head, 8, 0) == 8 && !memcmp(head, TRACE_MAGIC, 8))
				unlink(path);
		}
		close(fd);
	}
	if (d)
		closedir(d);
}

static int create_output(struct recorder *rc)
{
	char dir[PATH_MAX], base[PATH_MAX];
	struct trace_writer_opts o = { .codec = rc->codec, .level = rc->level };
	const char *dn, *bn;

	if (strlen(rc->output) >= sizeof(dir) - 16)
		return msg_error("the output path is too long: at most %zu bytes", sizeof(dir) - 17);
	snprintf(dir, sizeof(dir), "%s", rc->output);
	snprintf(base, sizeof(base), "%s", rc->output);
	dn = dirname(dir);
	bn = basename(base);
	snprintf(rc->tmp_path, sizeof(rc->tmp_path), "%s/.%s.XXXXXX", dn, bn);
	remove_stale_temps(dn, bn);
	/* mkstemp makes it 0600: a trace can hold secrets (paths, arguments). */
	rc->out_fd = mkstemp(rc->tmp_path);
	if (rc->out_fd < 0)
		return msg_error("cannot create '%s': %s", rc->output, strerror(errno));
	fcntl(rc->out_fd, F_SETFD, FD_CLOEXEC);
	/* Held until the recorder exits: the file is live (see above). */
	flock(rc->out_fd, LOCK_EX | LOCK_NB);
	if (trace_writer_init_fd(&rc->w, rc->out_fd, &o))
		return msg_error("cannot write '%s': %s", rc->output, trace_writer_strerror(&rc->w));
	trace_writer_reserve(&rc->w, WRITE_RESERVE);
	if (rc->w.full)
		return msg_error("no room for '%s': the disk is full", rc->output);
	return 0;
}

static void summary(struct recorder *rc)
{
	uint64_t lost = rc->lost_unreported, bytes = rc->w.offset, written = rc->w.nr_records;
	uint64_t unwritten = rc->records > written ? rc->records - written : 0;
	double secs = (rc->stop_ns - rc->start_ns) / 1e9;

	for (int c = 0; c < rc->ncpus; c++)
		lost += rc->rings[c].lost;
	if (rc->quiet && !lost && !unwritten)
		return;
	msg_note("%llu records in %.2f s, %.2f MiB written to '%s' (%.1f bytes/record)",
		(unsigned long long)written, secs, bytes / 1048576.0, rc->output,
		written ? (double)bytes / written : 0.0);
	/* Records that never reached the file are lost as surely as those
	 * the kernel dropped: never "0 lost" then. */
	if (unwritten)
		msg_note("NOT WRITTEN %llu of %llu records: %s; %s",
			(unsigned long long)unwritten, (unsigned long long)rc->records,
			rc->disk_full ? "the disk holding the trace filled" : "writing the trace failed",
			rc->w.err ? "the trace ends where the writing failed" : "the trace holds the ones before");
	if (lost && rc->q.waits)
		msg_note("LOST %llu events: the compression thread fell behind (%.0f MiB "
				"queued) for want of CPU; %s",
			(unsigned long long)lost, rc->q.peak / 1048576.0,
			geteuid() ? "run as root, which lets the recorder's threads run ahead of the command, or "
				    "record with -g fp (a tenth of the bytes)"
				  : rc->callchain == REC_CG_DWARF ? "record with -g fp (a tenth of the bytes), fewer "
								    "groups, or with a CPU left free"
								  : "record fewer groups, or with a CPU left free");
	else if (lost)
		msg_note("LOST %llu events: the rings overflowed; enlarge them with -m "
				"or record fewer groups, or sample them (kmem/100)",
			(unsigned long long)lost);
	else if (!rc->quiet && !unwritten)
		msg_note("0 events lost");
	if (rc->leak_check && rc->lc.failed)
		msg_note("--leak-check could not scan %d process%s (%s): leaks will not tell lost "
				"from reachable for %s",
			rc->lc.failed, rc->lc.failed == 1 ? "" : "es", strerror(rc->lc.last_err),
			rc->lc.failed == 1 ? "it" : "them");
	else if (rc->leak_check && !rc->lc.scans)
		msg_note("--leak-check scanned nothing: the process%s ended before the "
				"recording did",
			rc->nr_pids > 1 ? "es" : "");
	else if (rc->leak_check && !rc->quiet)
		msg_note("--leak-check scanned %d process%s, pausing %s %.1f ms", rc->lc.scans,
			rc->lc.scans == 1 ? "" : "es", rc->lc.scans == 1 ? "it" : "them", rc->lc.scan_ns / 1e6);
	if (rc->oom_kills && !rc->quiet)
		msg_note("%llu OOM kill%s recorded with the system's state; see memsight oom",
			(unsigned long long)rc->oom_kills, rc->oom_kills == 1 ? "" : "s");
}

static void stop_command(struct recorder *rc)
{
	/* -d ran out, or we were told to stop: end the command like timeout(1).
	 * Not when the disk filled: the command is the user's to finish, and
	 * it does so unrecorded. */
	if (rc->command && rc->child > 0 && !rc->child_done) {
		if (rc->disk_full)
			msg_note("waiting for the command to end, unrecorded");
		else {
			rc->child_stopped = 1;
			kill(rc->child, SIGTERM);
		}
		/* Followed for --leak-check: stops come before the end. */
		while (wait4(rc->child, &rc->child_status, 0, &rc->child_ru) == rc->child)
			if (!rc->leak_check || !leakcheck_status(&rc->lc, rc->child, rc->child_status)) {
				rc->child_done = 1;
				break;
			}
	}
}

static int reap_child(struct recorder *rc)
{
	pid_t p;
	int st;
	struct rusage ru;

	while ((p = wait4(-1, &st, WNOHANG, &ru)) > 0) {
		/* A stop of the command --leak-check follows, not its end. */
		if (p == rc->child && rc->leak_check && leakcheck_status(&rc->lc, p, st))
			continue;
		if (p == rc->child) {
			rc->child_status = st;
			rc->child_ru = ru;
			rc->child_done = 1;
		}
	}
	return rc->child_done;
}

/* The kernel writes a LOST record only once room comes back, so what is
 * lost in the last moments may never be reported. Each event's own lost
 * count (PERF_FORMAT_LOST, Linux 6.0) is exact. Older kernels: an event
 * with period 1 fired `count` times and each firing is a sample, so count
 * minus the samples received is what was lost (exact for a target's
 * events; system-wide, some kernels count firings they never sample). */
static void count_lost(struct recorder *rc)
{
	uint64_t counted = 0, reported = 0;

	for (size_t i = 0; i < rc->nr_evs; i++) {
		struct rec_event *e = &rc->evs[i];
		uint64_t total = 0, lost = 0;

		for (size_t j = 0; j < e->nr_ids; j++) {
			uint64_t v[2];

			if (read(e->fds[j], v, sizeof(v)) < 8)
				continue;
			/* A sampled event (GROUP/N) takes one sample each time
			 * its own counter passes a multiple of N. */
			total += v[0] / e->attr.sample_period;
			lost += v[1];
		}
		if (e->attr.read_format & PERF_FORMAT_LOST)
			counted += lost;
		else if (e->group[0] && total > e->samples)
			counted += total - e->samples;
	}
	for (int c = 0; c < rc->ncpus; c++)
		reported += rc->rings[c].lost;
	rc->lost_unreported = counted > reported ? counted - reported : 0;
}

static int run(struct recorder *rc, const sigset_t *mask)
{
	struct epoll_event ev, evs[64];
	int ep, sfd, tfd = -1, stop = 0, ret = -1, timeout = POLL_ACTIVE_MS;
	uint64_t before;
	int *pidfds = NULL;
	size_t live = 0;

	ep = epoll_create1(EPOLL_CLOEXEC);
	sfd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (ep < 0 || sfd < 0)
		return msg_error("cannot set up the event loop: %s", strerror(errno));
	ev.events = EPOLLIN;
	ev.data.u64 = 1ull << 32;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	for (int c = 0; c < rc->ncpus; c++) {
		if (!rc->rings[c].base)
			continue;
		ev.events = EPOLLIN;
		ev.data.u64 = c;
		epoll_ctl(ep, EPOLL_CTL_ADD, rc->rings[c].fd, &ev);
	}
	if (rc->duration > 0) {
		struct itimerspec its = { 0 };

		tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		its.it_value.tv_sec = (time_t)rc->duration;
		its.it_value.tv_nsec = (long)((rc->duration - (time_t)rc->duration) * 1e9);
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;
		timerfd_settime(tfd, 0, &its, NULL);
		ev.events = EPOLLIN;
		ev.data.u64 = 2ull << 32;
		epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	}
	if (rc->nr_pids) {
		/* A pidfd turns readable when its process exits. */
		pidfds = calloc(rc->nr_pids, sizeof(*pidfds));
		for (size_t i = 0; pidfds && i < rc->nr_pids; i++) {
			pidfds[i] = syscall(SYS_pidfd_open, rc->pids[i], 0);
			if (pidfds[i] < 0)
				continue;
			ev.events = EPOLLIN;
			ev.data.u64 = (3ull << 32) | i;
			epoll_ctl(ep, EPOLL_CTL_ADD, pidfds[i], &ev);
			live++;
		}
		if (!live)
			stop = 1;
	}
	if (!rc->command)
		for (size_t i = 0; i < rc->nr_fds; i++)
			ioctl(rc->fds[i], PERF_EVENT_IOC_ENABLE, 0);

	while (!stop) {
		int n = epoll_wait(ep, evs, 64, timeout);

		if (n < 0 && errno != EINTR) {
			msg_error("epoll_wait: %s", strerror(errno));
			goto out;
		}
		for (int i = 0; i < n; i++) {
			uint32_t kind = evs[i].data.u64 >> 32, idx = (uint32_t)evs[i].data.u64;

			if (kind == 0 && (evs[i].events & (EPOLLHUP | EPOLLERR))) {
				/* Every task of this ring exited: drain it below,
				 * then stop polling it or epoll would spin. */
				ring_drain(rc, &rc->rings[idx]);
				epoll_ctl(ep, EPOLL_CTL_DEL, rc->rings[idx].fd, NULL);
			} else if (kind == 1) {
				struct signalfd_siginfo si;

				while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGCHLD) {
						if (rc->command && reap_child(rc))
							stop = 1;
					} else {
						stop = 1;
					}
				}
			} else if (kind == 2) {
				stop = 1;
			} else if (kind == 3) {
				epoll_ctl(ep, EPOLL_CTL_DEL, pidfds[idx], NULL);
				if (--live == 0)
					stop = 1;
			}
		}
		before = rc->drained;
		if (drain_all(rc, 1))
			goto out;
		/* A full disk (or a failed write) ends the recording at once:
		 * nothing more could be kept, and a -p recording would go on
		 * for ever. */
		if (trace_writer_full(&rc->w)) {
			msg_error("cannot write '%s': %s; recording stopped after %.1f s, the trace holds what came "
			      "before", rc->output, rc->w.err ? trace_writer_strerror(&rc->w) : "the disk is full",
			      (now_ns(CLOCK_MONOTONIC) - rc->start_ns) / 1e9);
			rc->disk_full = 1;
			stop = 1;
		}
		/* Some kernels (6.18 here, with page-fault samples) now and
		 * then never deliver the ring's watermark wakeup: a whole run
		 * then fills the ring and drops everything after it. So while
		 * records flow, look at the rings every few milliseconds as
		 * well, and back off to the wakeups alone once they stop. */
		if (rc->drained != before)
			timeout = POLL_ACTIVE_MS;
		else if ((timeout *= 4) > POLL_IDLE_MS)
			timeout = POLL_IDLE_MS;
	}
	ret = 0;
out:
	rc->stop_ns = now_ns(CLOCK_MONOTONIC);
	for (size_t i = 0; i < rc->nr_fds; i++)
		ioctl(rc->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	stop_command(rc);
	if (drain_all(rc, 0))
		ret = -1;
	for (int c = 0; c < rc->ncpus; c++)
		ring_flush(rc, &rc->rings[c]);
	writeq_stop(&rc->q);
	count_lost(rc);
	for (size_t i = 0; pidfds && i < rc->nr_pids; i++)
		if (pidfds[i] >= 0)
			close(pidfds[i]);
	free(pidfds);
	if (tfd >= 0)
		close(tfd);
	close(sfd);
	close(ep);
	return ret;
}

/*
 * The last close of a tracepoint or uprobe event waits for an RCU grace
 * period in the kernel (about 28 ms here), once per event and one after
 * another, as the kernel holds one mutex around each; threads cannot make
 * them overlap. By now the trace is complete and nothing waits on them, so
 * a child takes them over, with what must follow them (the uprobe
 * definitions, which can only go once no event uses them) and the trace
 * this one replaced (whose pages are freed on its last close), and the
 * recorder exits at once. The child keeps the recorder's blocked signals
 * and lets go of its standard streams, so neither a second Ctrl-C nor a
 * pipe reading the recorder's output waits for it.
 */
static void events_release(struct recorder *rc)
{
	pid_t child = rc->nr_fds || rc->old_fd >= 0 ? fork() : -1;

	if (child == 0) {
		struct sched_param sp = { .sched_priority = 0 };

		/* Waiting out grace periods needs no real-time priority. */
		sched_setscheduler(0, SCHED_OTHER, &sp);
		for (int fd = 0; fd < 3; fd++)
			close(fd);
		for (size_t i = 0; i < rc->nr_fds; i++)
			close(rc->fds[i]);
		if (rc->old_fd >= 0)
			close(rc->old_fd);
		uprobes_remove();
		_exit(0);
	}
	/* With the child holding them these closes are only a count going
	 * down; without one, they are the slow ones. */
	for (size_t i = 0; i < rc->nr_fds; i++)
		close(rc->fds[i]);
	rc->nr_fds = 0;
	if (rc->old_fd >= 0)
		close(rc->old_fd);
	rc->old_fd = -1;
	if (child < 0)
		uprobes_remove();
}

static void options_release(struct recorder *rc)
{
	free(rc->groups);
	free(rc->filters);
	free(rc->pids);
}

static void cleanup(struct recorder *rc)
{
	size_t page = sysconf(_SC_PAGESIZE);

	/* Started before the command; a failed start ends here. */
	writeq_stop(&rc->q);
	/* Unmapped first: the child that closes the events need not copy
	 * the rings' page tables. */
	for (int c = 0; rc->rings && c < rc->ncpus; c++) {
		if (rc->rings[c].base)
			munmap(rc->rings[c].base, (rc->mmap_pages + 1) * page);
		free(rc->rings[c].chunk);
	}
	events_release(rc);
	free(rc->rings);
	free(rc->fds);
	free(rc->ids);
	events_free(rc->evs, rc->nr_evs);
	free(rc->evs);
	scrub_free(&rc->scrub);
	for (size_t i = 0; i < rc->nr_nobid; i++)
		free(rc->nobid[i]);
	free(rc->nobid);
	ksyms_set_release(&rc->ksyms);
	ksyms_table_release(&rc->kallsyms);
	trace_writer_release(&rc->w);
	embed_set_release(&rc->embed);
	options_release(rc);
}

int main(int argc, char **argv)
{
	struct recorder rc = { .out_fd = -1, .go_fd = -1, .err_fd = -1, .old_fd = -1, .argc = argc, .argv = argv };
	sigset_t mask, oldmask;
	struct rlimit rl;
	int ret = 1;

	if (argc > 1 && !strcmp(argv[1], "archive"))
		return archive_main(argc - 1, argv + 1);
	msg_init("memsight record");
	if (parse_options(&rc, argc, argv)) {
		options_release(&rc);
		return 2;
	}
	rc.ncpus = sysconf(_SC_NPROCESSORS_CONF);
	/* One fd per event, CPU and thread: -p on a big process needs many. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (size_t i = 0; i < rc.nr_pids; i++) {
		if (kill(rc.pids[i], 0) && errno == ESRCH) {
			msg_error("no process with pid %d: check it with 'ps -p %d'", (int)rc.pids[i], (int)rc.pids[i]);
			goto out;
		}
	}
	/* Kernel text is named only at the end, from what kallsyms said:
	 * read it while the recording starts and runs. */
	if (rc.callchain != REC_CG_NONE)
		ksyms_table_start(&rc.kallsyms);
	rc.build_id = probe_build_id();
	rc.format_lost = probe_format_lost();
	rc.lc.emit = reach_emit;
	rc.lc.arg = &rc;
	if (scrub_init(&rc.scrub, rc.stack_dump)) {
		msg_error("out of memory for packing stack dumps");
		goto out;
	}
	if (check_output(rc.output) || setup_events(&rc) || create_output(&rc))
		goto out;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	if (rc.command && start_child(&rc, &oldmask))
		goto out;
	if (open_events(&rc) || write_start_meta(&rc))
		goto out;
	/* System-wide events are not the child's to enable at exec: start
	 * them before it runs. */
	if (rc.command && rc.system_wide)
		for (size_t i = 0; i < rc.nr_fds; i++)
			ioctl(rc.fds[i], PERF_EVENT_IOC_ENABLE, 0);
	/* The drain loop is what the kernel waits on: when root, let it
	 * win the CPU over the command and the compression thread (a
	 * failure just leaves the priority as it was). Before the command
	 * runs: it starts on this CPU and fills a ring in milliseconds.
	 * SCHED_FIFO at the lowest real-time priority, where allowed: with
	 * more busy threads than CPUs (50 on 2) even nice -10 came back too
	 * late a third of the time and 16 MiB rings overflowed; woken as a
	 * real-time thread it never did. It only copies, and sleeps between
	 * polls; what it starts (the compression thread, the child that
	 * closes the events) goes back to normal scheduling. */
	setpriority(PRIO_PROCESS, gettid(), -10);
	{
		struct sched_param sp = { .sched_priority = 1 };

		rc.realtime = !sched_setscheduler(0, SCHED_FIFO, &sp);
	}
	/* From here until the rings are flushed the thread owns the writer.
	 * Started before the command runs: it faults in its buffers. */
	{
		size_t prefault = PREFAULT_OTHER;
		int r;

		if (rc.callchain == REC_CG_DWARF)
			prefault = rc.stack_dump == SCRUB_RAW ? PREFAULT_DWARF_RAW : PREFAULT_DWARF;
		rc.q.prepare = chunk_prepare;
		rc.q.prepare_arg = &rc;
		r = writeq_start(&rc.q, &rc.w, WRITEQ_MAX, CHUNK_BUF, prefault);

		if (r)
			msg_note("no compression thread (%s); compressing in the drain loop", strerror(-r));
	}
	/* Replacing a big trace frees its pages inside rename(), for tens of
	 * milliseconds while the command fills the rings: hold the old file
	 * open so that cost comes when it is closed, at the end. */
	/* Never following a link, never waiting on a FIFO swapped in since. */
	rc.old_fd = open(rc.output, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (rc.command && release_child(&rc))
		goto out;
	if (rename(rc.tmp_path, rc.output)) {
		msg_error("cannot create '%s': %s", rc.output, strerror(errno));
		goto out;
	}
	rc.renamed = 1;
	if (run(&rc, &mask))
		goto finish;
	ret = 0;
	/* -p: the processes are stopped and scanned now, at the end. */
	for (size_t i = 0; rc.leak_check && i < rc.nr_pids; i++)
		if (!kill(rc.pids[i], 0))
			leakcheck_attach(&rc.lc, rc.pids[i]);
finish:
	write_end_meta(&rc);
	{
		struct trace_loss *l = calloc(rc.ncpus + 1, sizeof(*l));
		int n = rc.ncpus;

		for (int c = 0; l && c < rc.ncpus; c++)
			l[c] = (struct trace_loss){ c, 0, rc.rings[c].lost };
		if (l && rc.lost_unreported)
			l[n++] = (struct trace_loss){ TRACE_LOSS_UNREPORTED, 0, rc.lost_unreported };
		if (l)
			trace_writer_add_loss(&rc.w, l, n);
		free(l);
	}
	if (rc.disk_full)
		ret = 1;
	if (trace_writer_finish(&rc.w)) {
		msg_error("cannot write '%s': %s; the trace holds what was written before", rc.output,
		      trace_writer_strerror(&rc.w));
		ret = 1;
	}
	summary(&rc);
	/* As time(1) and perf record do: the command's own status, so a
	 * script sees its failure through the recorder. */
	if (!ret && rc.command && rc.child_done && !rc.child_stopped) {
		int st = rc.child_status;

		if (WIFSIGNALED(st)) {
			msg_note("the command was killed by SIG%s",
				sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
			ret = 128 + WTERMSIG(st);
		} else if (WEXITSTATUS(st)) {
			if (!rc.quiet)
				msg_note("the command exited with status %d", WEXITSTATUS(st));
			ret = WEXITSTATUS(st);
		}
	}
out:
	if (rc.child > 0 && !rc.child_done && rc.go_fd >= 0) {
		/* Closing the go pipe makes the waiting child exit. */
		close(rc.go_fd);
		waitpid(rc.child, NULL, 0);
	}
	if (rc.out_fd >= 0) {
		close(rc.out_fd);
		if (!rc.renamed)
			unlink(rc.tmp_path);
	}
	cleanup(&rc);
	return ret;
}
