/*
 * record/options.c: the recorder's command line, as a table (formats/opts.h)
 * whose -e help lists the groups of formats/catalog.h; then the defaults
 * that depend on more than one option.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../formats/catalog.h"
#include "../formats/opts.h"
#include "../formats/guard.h"
#include "recorder.h"

static const char usage_text[] =
	"usage: memsight record [options] -- COMMAND [ARGS...]\n"
	"   or: memsight record [options] -p PID[,PID...]\n"
	"   or: memsight record [options] -a [-- COMMAND [ARGS...]]\n";

/* What the options say that the defaults after them depend on. */
struct options_seen {
	struct recorder *rc;
	char **argv;
};

static int opt_groups(const struct opt *o, const char *arg, void *ctx)
{
	struct recorder *rc = ((struct options_seen *)ctx)->rc;

	(void)o;
	free(rc->groups);
	rc->groups = strdup(arg);
	return rc->groups ? 0 : msg_error("out of memory");
}

static int opt_pids(const struct opt *o, const char *arg, void *ctx)
{
	struct recorder *rc = ((struct options_seen *)ctx)->rc;
	char *copy = strdup(arg), *save = NULL, *tok;

	(void)o;
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

static int opt_duration(const struct opt *o, const char *arg, void *ctx)
{
	double v;

	(void)ctx;
	if (opts_seconds(arg, strlen(arg), &v) || !(v > 0))
		return msg_error("invalid duration '%s': give seconds, or a time with its unit: -d 10, -d 0.5, -d 30s, "
				 "-d 1m, -d 500ms",
				 arg);
	*(double *)o->value = v;
	return 0;
}

static int opt_call_graph(const struct opt *o, const char *arg, void *ctx)
{
	struct options_seen *seen = ctx;
	struct recorder *rc = seen->rc;
	char path[PATH_MAX];

	(void)o;
	if (!strcmp(arg, "fp")) {
		rc->callchain = REC_CG_FP;
	} else if (!strcmp(arg, "none")) {
		rc->callchain = REC_CG_NONE;
	} else if (!strncmp(arg, "dwarf", 5) && (!arg[5] || arg[5] == ',')) {
		unsigned long v = REC_DWARF_STACK_DEFAULT;
		char *end;

		rc->callchain = REC_CG_DWARF;
		if (arg[5]) {
			v = strtoul(arg + 6, &end, 0);
			/* The kernel takes multiples of 8 below 64 KiB, as perf
			 * does, and copies less where a sample would not fit. */
			if (*end || !arg[6] || v < 64 || v > 65528 || v % 8)
				return msg_error("invalid stack size in '%s': give a multiple of 8 from 64 to 65528, "
						 "e.g. dwarf,8192",
						 arg);
		}
		rc->stack_size = v;
	} else if (optind > 0 && arg == seen->argv[optind - 1] && (arg[0] == '-' || !uprobes_command_path(arg, path, sizeof(path)))) {
		/* A bare -g, as perf's: the next word is not a mode but an
		 * option or the command, read again as that (`record -g
		 * ./prog`, `record -g -e malloc ...`). A mistyped mode is no
		 * program, and says so below. */
		rc->callchain = REC_CG_DWARF;
		rc->stack_size = REC_DWARF_STACK_DEFAULT;
		optind--;
	} else {
		return msg_error("unknown call-graph mode '%s': use fp, dwarf[,SIZE] or none", arg);
	}
	return 0;
}

static int opt_mmap_pages(const struct opt *o, const char *arg, void *ctx)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	(void)ctx;
	if (*end || !v || (v & (v - 1)) || v > (1ul << 20))
		return msg_error("invalid --mmap-pages '%s': give a power of two, e.g. 1024", arg);
	*(unsigned *)o->value = v;
	return 0;
}

static int opt_deep_freq(const struct opt *o, const char *arg, void *ctx)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	(void)ctx;
	if (*end || !arg[0] || arg[0] == '-' || v > REC_DEEP_FREQ_MAX)
		return msg_error("invalid --deep-freq '%s': give samples a second from 0 (none) to %u, e.g. 100", arg,
				 REC_DEEP_FREQ_MAX);
	*(int *)o->value = (int)v;
	return 0;
}

static int opt_compression(const struct opt *o, const char *arg, void *ctx)
{
	struct recorder *rc = ((struct options_seen *)ctx)->rc;
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
	char name[16], *end;

	(void)o;
	snprintf(name, sizeof(name), "%.*s", (int)(n < 15 ? n : 15), arg);
	if (!strcmp(name, "zstd"))
		rc->codec = TRACE_CODEC_ZSTD;
	else if (!strcmp(name, "zlib"))
		rc->codec = TRACE_CODEC_ZLIB;
	else if (!strcmp(name, "none"))
		rc->codec = TRACE_CODEC_NONE;
	else
		return msg_error("unknown compression '%s': use zstd, zlib or none", arg);
	if (colon) {
		rc->level = strtol(colon + 1, &end, 10);
		if (*end || rc->level < 1 || rc->level > 19)
			return msg_error("invalid compression level in '%s': use 1 to 19", arg);
	}
	return 0;
}

static int opt_filter(const struct opt *o, const char *arg, void *ctx)
{
	struct recorder *rc = ((struct options_seen *)ctx)->rc;
	char **p = realloc(rc->filters, (rc->nr_filters + 1) * sizeof(*p));

	(void)o;
	if (!p)
		return msg_error("out of memory");
	rc->filters = p;
	p[rc->nr_filters++] = (char *)arg;
	return 0;
}

static int opt_stack_dump(const struct opt *o, const char *arg, void *ctx)
{
	int m = scrub_mode_parse(arg);

	(void)ctx;
	if (m < 0)
		return msg_error("unknown --stack-dump mode '%s': use unwind, pointers or raw", arg);
	*(enum scrub_mode *)o->value = m;
	return 0;
}

static int opt_embed(const struct opt *o, const char *arg, void *ctx)
{
	struct options_seen *seen = ctx;
	int m = embed_mode_parse(arg);

	(void)o;
	if (m < 0)
		return msg_error("unknown --embed mode '%s': use minimal, full or none", arg);
	seen->rc->embed.mode = m;
	return 0;
}

static int opt_embed_max(const struct opt *o, const char *arg, void *ctx);

static int opt_size(const struct opt *o, const char *arg, void *ctx)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 0);

	(void)ctx;
	if (*end || arg[0] == '-' || !arg[0])
		return msg_error("invalid size '%s' for -%c: give bytes, e.g. -%c 4096", arg, o->short_name,
				 o->short_name);
	*(unsigned long long *)o->value = v;
	return 0;
}

int rec_size_parse(const char *arg, uint64_t *out)
{
	char *end;
	double v = strtod(arg, &end);
	double mul = 1;

	switch (*end) {
	case 'k': case 'K': mul = 1024.0; end++; break;
	case 'm': case 'M': mul = 1048576.0; end++; break;
	case 'g': case 'G': mul = 1073741824.0; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (end == arg || *end || !(v > 0) || v * mul > 1e15)
		return -1;
	*out = (uint64_t)(v * mul);
	return 0;
}

static int opt_embed_max(const struct opt *o, const char *arg, void *ctx)
{
	(void)ctx;
	if (rec_size_parse(arg, o->value))
		return msg_error("invalid --embed-max '%s': give bytes with K, M or G, e.g. --embed-max 256M", arg);
	return 0;
}

static int opt_ring(const struct opt *o, const char *arg, void *ctx)
{
	(void)ctx;
	if (rec_size_parse(arg, o->value))
		return msg_error("invalid ring size '%s': give bytes with K, M or G, e.g. --ring 256M", arg);
	return 0;
}

static int opt_sample_bytes(const struct opt *o, const char *arg, void *ctx)
{
	(void)ctx;
	if (rec_size_parse(arg, o->value) || !*(uint64_t *)o->value)
		return msg_error("invalid --sample-bytes '%s': give bytes with K or M, e.g. --sample-bytes 512K", arg);
	return 0;
}

static int opt_guard(const struct opt *o, const char *arg, void *ctx)
{
	char *end;
	unsigned long long v = arg ? strtoull(arg, &end, 10) : GUARD_RATE_DEFAULT;

	(void)ctx;
	if (arg && (!*arg || *end || !v || v > 1000000000))
		return msg_error("invalid --guard '%s': give N to guard one allocation in N, e.g. --guard=1000 "
				 "(--guard=1: every one that fits a slot)",
				 arg);
	*(uint64_t *)o->value = v;
	return 0;
}

static int opt_malloc_via(const struct opt *o, const char *arg, void *ctx)
{
	(void)ctx;
	if (!strcmp(arg, "wrapper"))
		*(int *)o->value = MALLOC_VIA_WRAPPER;
	else if (!strcmp(arg, "uprobes"))
		*(int *)o->value = MALLOC_VIA_UPROBES;
	else
		return msg_error("unknown --malloc-via '%s': use wrapper or uprobes", arg);
	return 0;
}

static int opt_trigger(const struct opt *o, const char *arg, void *ctx)
{
	(void)o;
	return flight_trigger_add(&((struct options_seen *)ctx)->rc->fl, arg);
}

static int opt_after(const struct opt *o, const char *arg, void *ctx)
{
	double v;

	(void)ctx;
	if (opts_seconds(arg, strlen(arg), &v) || v > 3600)
		return msg_error("invalid --after '%s': give from 0 to 3600 seconds, e.g. --after 5 or --after 500ms",
				 arg);
	*(double *)o->value = v;
	return 0;
}

static int opt_holdoff(const struct opt *o, const char *arg, void *ctx)
{
	double v;

	(void)ctx;
	if (opts_seconds(arg, strlen(arg), &v) || v > 86400)
		return msg_error("invalid --trigger-holdoff '%s': give from 0 to 86400 seconds, e.g. 60 or 10m", arg);
	*(double *)o->value = v;
	return 0;
}

static int opt_burst(const struct opt *o, const char *arg, void *ctx)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	(void)ctx;
	if (end == arg || *end || !v || v > 1000)
		return msg_error("invalid --trigger-burst '%s': give how many snapshots a cause may save in a holdoff, "
				 "from 1 to 1000",
				 arg);
	*(unsigned *)o->value = v;
	return 0;
}

static int opt_max_snapshots(const struct opt *o, const char *arg, void *ctx)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	(void)ctx;
	if (end == arg || *end || !v || v > 100000)
		return msg_error("invalid --max-snapshots '%s': give how many to keep, e.g. 16", arg);
	*(unsigned *)o->value = v;
	return 0;
}

static int opt_sample(const struct opt *o, const char *arg, void *ctx)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	(void)ctx;
	if (*end || !v || v > 1000000000)
		return msg_error("invalid sampling '%s' for -s: give N to keep one stack in N, e.g. -s 10", arg);
	*(unsigned *)o->value = v;
	return 0;
}

/* One group's lines in -e's help: its name beside the first. */
static size_t group_help_add(char *buf, size_t size, size_t n, const char *name, const char *help)
{
	for (const char *h = help, *nl; n < size; h = nl + 1) {
		nl = strchr(h, '\n');
		n += snprintf(buf + n, size - n, "\n  %-10s %.*s", h == help ? name : "",
			      nl ? (int)(nl - h) : (int)strlen(h), h);
		if (!nl)
			break;
	}
	return n;
}

/* -e's help: what it takes, then the groups of the catalogue. */
static const char *groups_help(void)
{
	static char buf[2048];
	size_t n = snprintf(buf, sizeof(buf), "event groups, comma-separated (default: brk,mmap,faults);\n"
					      "GROUP/N keeps one event in N (kmem/100) on a busy box");

#define GROUP_LINE(name, help) n = group_help_add(buf, sizeof(buf), n, name, help);
	CATALOG_GROUPS(GROUP_LINE)
#undef GROUP_LINE
	return buf;
}

/* Whether -e names group (alone or as GROUP/N). */
static int groups_has(const char *groups, const char *group)
{
	size_t l = strlen(group);

	for (const char *p = groups ? groups : ""; *p;) {
		size_t n = strcspn(p, ",");

		if (n >= l && !strncmp(p, group, l) && (n == l || p[l] == '/'))
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

/* The groups a guarded recording needs, added to what -e asked: the
 * blocks, the faults that hit them and the signals that follow. */
static int groups_add_guard(struct recorder *rc)
{
	static const char *const need[] = { "malloc", "faults", "signals" };
	char *g;

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (groups_has(rc->groups, need[i]))
			continue;
		if (asprintf(&g, "%s,%s", rc->groups, need[i]) < 0)
			return msg_error("out of memory");
		free(rc->groups);
		rc->groups = g;
	}
	return 0;
}

/* The defaults that depend on more than one option, and the options that
 * cannot go together. */
static int options_finish(struct recorder *rc)
{
	/* -a with a command records the whole system while it runs, as
	 * perf record -a does. */
	if (!!rc->command + !!rc->nr_pids + (rc->system_wide && !rc->command) != 1)
		return msg_error(rc->command || rc->nr_pids || rc->system_wide
					 ? "give only one target: -p PID, -a [-- COMMAND], or -- COMMAND"
					 : "nothing to record: give -p PID, -a, or -- COMMAND (see memsight record -h)");
	if (rc->min_size && rc->max_size && rc->min_size > rc->max_size)
		return msg_error("-z %llu is above -Z %llu: no allocation could match", rc->min_size, rc->max_size);
	/* A stack that ran past its dump is completed from a deeper one of
	 * its thread: with a dump as large as the deep one, there is none. */
	if (rc->deep_freq > 0 && rc->callchain != REC_CG_DWARF)
		return msg_error("--deep-freq completes stacks unwound from dumps: it goes with -g dwarf, not fp or none");
	if (rc->deep_freq < 0)
		rc->deep_freq = rc->callchain == REC_CG_DWARF ? REC_DEEP_FREQ_DEFAULT : 0;
	if (rc->stack_size >= CATALOG_DEEP_DUMP)
		rc->deep_freq = 0;
	/* -a records DWARF stacks too: Debian's binaries have no frame
	 * pointers, so frame-pointer stacks of a whole box reached main in
	 * 0.4% of a parallel build's faults, 8 KiB dumps in 95.7%; the dumps
	 * keep only what unwinding reads (write/scrub.h), which cost the build
	 * 1.12 times its time where perf -a -g cost 1.04 (tests/bench/bench-box.sh). */
	/* A DWARF sample is about 8 KiB: faults in a tight loop come at
	 * over a GB/s, so the rings must bridge the moments the drain loop
	 * is off the CPU (16 MiB a CPU is about 10 ms of such a burst). The
	 * rings are pinned kernel memory, one per CPU: on a big box the
	 * default shrinks to keep them within RINGS_DEFAULT_MAX in all. */
	if (!rc->mmap_pages) {
		long ncpus = sysconf(_SC_NPROCESSORS_CONF), page = sysconf(_SC_PAGESIZE);

		rc->mmap_pages = rc->callchain == REC_CG_DWARF ? 4096 : 1024;
		/* Every malloc call of a busy program is an event with a
		 * dump: a runtime's start-up (node's makes 900,000 calls in
		 * 0.1 s) comes faster than any fault storm. */
		if (rc->callchain == REC_CG_DWARF && groups_has(rc->groups, "malloc") &&
		    rc->sample_bytes < 4096)
			rc->mmap_pages = 8192;
		while (rc->mmap_pages > 256 &&
		       (uint64_t)rc->mmap_pages * page * (ncpus > 0 ? ncpus : 1) > RINGS_DEFAULT_MAX)
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
	if (rc->cgroup && !rc->system_wide)
		return msg_error("--cgroup records the processes of one cgroup across the system: give -a too");
	if (rc->guard_recover && !rc->guard)
		rc->guard = GUARD_RATE_DEFAULT;
	if (rc->guard && !rc->command)
		return msg_error("--guard starts a command with memsight's wrapper guarding its blocks; a running process "
				 "guards with the wrapper it runs with (LD_PRELOAD=libmemsight-sample.so "
				 GUARD_ENV "=N): record it with -p, without --guard");
	if (rc->guard && rc->malloc_via == MALLOC_VIA_UPROBES)
		return msg_error("--guard guards blocks in memsight's wrapper: drop --malloc-via uprobes");
	if (rc->guard && groups_add_guard(rc))
		return -1;
	if (rc->leak_check && rc->system_wide)
		return msg_error("--leak-check scans the processes recorded: give -- COMMAND or -p PID, not -a");
	if (rc->leak_check && !groups_has(rc->groups, "malloc"))
		return msg_error("--leak-check tells which allocations are lost: record them too, with -e malloc");
	if (rc->sample_bytes && !groups_has(rc->groups, "malloc"))
		return msg_error("--sample-bytes samples allocations: record them, with -e malloc");
	if (rc->sample_bytes && rc->system_wide)
		return msg_error("--sample-bytes starts a command with the sampler, or uses the one -p processes run with: "
				 "not with -a");
	if (rc->sample_bytes && (rc->sample || rc->object || rc->min_size || rc->max_size || rc->leak_check))
		return msg_error("--sample-bytes chooses which allocations to keep by itself: drop -s, -O, -z, -Z and "
				 "--leak-check");
	/* memsight errors names who freed a block used after its free, or
	 * freed twice: a recording of memory errors gives frees stacks. */
	rc->free_stacks = groups_has(rc->groups, "signals") && groups_has(rc->groups, "malloc") && !rc->sample_bytes;
	/* Every call is an exact account, as heaptrack's is; a sampler is
	 * left on in production, where the program must never wait. */
	if (!rc->block)
		rc->block = rc->sample_bytes ? REC_BLOCK_NO : REC_BLOCK_YES;
	if (rc->leak_check && rc->fl.ring_size)
		return msg_error("--leak-check scans at the end, which a ring's window may not reach: record it without --ring");
	return flight_options_check(rc, groups_has);
}

int rec_options_parse(struct recorder *rc, int argc, char **argv)
{
	struct options_seen seen = { rc, argv };
	/* The recorder's one environment knob: tests point it at a copy of
	 * tracefs that lacks some events, to show what a kernel without
	 * them does. */
	const char *tracefs = getenv("MEMSIGHT_TRACEFS");
	const struct opt options[] = {
		OPT_CALLBACK('e', "event", NULL, "GROUPS", groups_help(), opt_groups),
		OPT_CALLBACK(0, "filter", NULL, "EVENT:EXPR",
			     "a kernel filter on a tracepoint (kmem:kmalloc:bytes_req > 4096)\n"
			     "or on every tracepoint of a group (kmem:common_pid == 42);\nrepeatable",
			     opt_filter),
		OPT_CALLBACK('p', "pid", NULL, "PID[,PID...]", "record running processes, their new threads and children",
			     opt_pids),
		OPT_BOOL('a', "all-cpus", &rc->system_wide, "record the whole system (while COMMAND runs, when given)"),
		OPT_STRING('G', "cgroup", &rc->cgroup, "PATH",
			   "with -a: only the processes of this cgroup and those\nbelow it (a container's), v1 or v2"),
		OPT_STRING('o', "output", &rc->output, "FILE", "trace file to write (default: memsight.trace)"),
		OPT_CALLBACK('d', "duration", &rc->duration, "TIME", "stop after TIME: seconds, or with a unit (30s, 1m, 500ms)", opt_duration),
		OPT_CALLBACK('g', "call-graph", NULL, "MODE",
			     "dwarf[,SIZE] (default): kernel callchain, user registers\n"
			     "  and SIZE bytes of user stack (default 8192), unwound\n"
			     "  offline through code without frame pointers (libc,\n"
			     "  libstdc++, optimised builds)\n"
			     "fp: kernel and user frame-pointer callchains, a third\n"
			     "  of the recorder's work, broken by code without frame\n"
			     "  pointers\n"
			     "none: no stacks\n"
			     "-g alone, as perf's: the default",
			     opt_call_graph),
		OPT_CALLBACK(0, "deep-freq", &rc->deep_freq, "HZ",
			     "dwarf: HZ times a second (on each CPU with -a, and in\n"
			     "each thread of a command or -p process) a page fault\n"
			     "also takes a 64 KiB stack dump (the deep-stacks\n"
			     "event), from which the analyzer completes the stacks\n"
			     "that ran past SIZE (default 500; 0: none)",
			     opt_deep_freq),
		OPT_CALLBACK(0, "stack-dump", &rc->stack_dump, "MODE",
			     "unwind (default): of each stack dump and user register,\n"
			     "keep only the words unwinding reads (addresses in the\n"
			     "process's code or in the dump), zero the rest; pointers:\n"
			     "every word that could be a user address; raw: every byte",
			     opt_stack_dump),
		OPT_CALLBACK('m', "mmap-pages", &rc->mmap_pages, "N",
			     "ring buffer pages per CPU, a power of two (default 1024,\n"
			     "4096 with dwarf, 8192 with dwarf and every malloc call;\n"
			     "less where that would pass 256 MiB over all CPUs)",
			     opt_mmap_pages),
		OPT_STRING('O', "object", &rc->object, "OBJ",
			   "malloc: probe the allocator in OBJ, a path or a soname the\n"
			   "target maps (default: its libc, and jemalloc, tcmalloc or\nmimalloc where it maps them)"),
		OPT_CALLBACK('z', "min-size", &rc->min_size, "BYTES", "malloc: only allocations of at least BYTES",
			     opt_size),
		OPT_CALLBACK('Z', "max-size", &rc->max_size, "BYTES", "malloc: only allocations of at most BYTES",
			     opt_size),
		OPT_CALLBACK('s', "sample", &rc->sample, "N", "malloc: keep one allocation's stack in N (estimates)",
			     opt_sample),
		OPT_CALLBACK(0, "sample-bytes", &rc->sample_bytes, "SIZE",
			     "malloc: keep one allocation every SIZE bytes on average\n"
			     "(512K for always-on use; estimates), decided in memsight's\n"
			     "wrapper, so the others cost no trap; -p uses the rate a\n"
			     "process runs with",
			     opt_sample_bytes),
		OPT_CALLBACK_OPTARG(0, "guard", &rc->guard, "N",
				    "malloc: serve about one allocation in N (default 5000)\n"
				    "of at most a page from a slot between inaccessible\n"
				    "pages, so that an overflow, an underflow or a use after\n"
				    "free faults where it happens (memsight errors explains\n"
				    "it); adds -e malloc,faults,signals",
				    opt_guard),
		OPT_BOOL(0, "guard-recover", &rc->guard_recover,
			 "with --guard: a guarded fault is reported, its page\n"
			 "opened, and the program goes on"),
		OPT_SET(0, "block", &rc->block, REC_BLOCK_YES,
			"malloc: a program whose recorder falls behind waits for it:\n"
			"nothing is lost (the default without --sample-bytes)"),
		OPT_SET(0, "no-block", &rc->block, REC_BLOCK_NO,
			"malloc: a program whose recorder falls behind never waits:\n"
			"it reports through a trap instead, and what the kernel\n"
			"cannot keep is counted lost (the default with --sample-bytes)"),
		OPT_CALLBACK(0, "malloc-via", &rc->malloc_via, "HOW",
			     "malloc: wrapper (the default for a command): memsight's\n"
			     "wrapper preloaded into the command and what it executes,\n"
			     "in front of whichever allocator it runs, its reports\n"
			     "handed over in shared memory (no trap; a process that\n"
			     "cannot reach the recorder takes a probe site's trap);\n"
			     "uprobes: an entry and a return probe on the allocator\n"
			     "itself (what -p, -a and static executables get)",
			     opt_malloc_via),
		OPT_BOOL(0, "leak-check", &rc->leak_check,
			 "malloc: when the command exits (or, with -p, when the\n"
			 "recording ends) pause it and scan its memory for\n"
			 "pointers to the blocks still allocated, so leaks tells\n"
			 "lost from still reachable (as valgrind does)"),
		OPT_CALLBACK(0, "embed", NULL, "MODE",
			     "minimal (default): put the unwind and symbol tables of\n"
			     "every object the stacks run in into the trace, once by\n"
			     "build-id, read as its process maps it (containers,\n"
			     "deleted files), so it can be analyzed where the binaries\n"
			     "are not; full: the whole files; either adds the debug\n"
			     "information that names inlined functions and lines,\n"
			     "where this machine has it, and the kernel's vDSO image;\n"
			     "none",
			     opt_embed),
		OPT_CALLBACK(0, "embed-max", &rc->embed.max_bytes, "SIZE",
			     "carry at most SIZE bytes of objects (default 256M); info\n"
			     "lists those left out", opt_embed_max),
		OPT_CALLBACK(0, "compression", NULL, "C[:L]",
			     "zstd (default; level 1 with -g dwarf, else 3), zlib or none,\nwith an optional level",
			     opt_compression),
		OPT_CALLBACK(0, "ring", &rc->fl.ring_size, "SIZE",
			     "flight recorder: a trace file that never grows past SIZE\n"
			     "(e.g. 256M); the oldest events give way to new ones",
			     opt_ring),
		OPT_CALLBACK(0, "trigger", NULL, "KIND[:ARG]",
			     "with --ring: save a snapshot of the ring, beside it, when\n"
			     "oom: an OOM kill (-e oom); rss:PID_OR_COMM>SIZE: a\n"
			     "process's RSS passes SIZE (-e rss); psi:some|full>PCT:\n"
			     "memory pressure passes PCT% of a second; reclaim>MS: a\n"
			     "reclaim stall passes MS (-e reclaim); crash[:COMM]: a\n"
			     "process dies of a memory error's signal (-e signals);\n"
			     "signal: SIGUSR1; repeatable",
			     opt_trigger),
		OPT_CALLBACK(0, "after", &rc->fl.after, "SECONDS",
			     "a snapshot also keeps what follows its trigger (default 2)", opt_after),
		OPT_CALLBACK(0, "max-snapshots", &rc->fl.max_snapshots, "N",
			     "keep the newest N snapshots of this ring (and the first of\n"
			     "each cause), and N rings that restarts replaced (default 16)",
			     opt_max_snapshots),
		OPT_CALLBACK(0, "trigger-holdoff", &rc->fl.holdoff, "SECONDS",
			     "a cause saves at most --trigger-burst snapshots, and one a\n"
			     "process (by name), in any SECONDS (default 60)",
			     opt_holdoff),
		OPT_CALLBACK(0, "trigger-burst", &rc->fl.burst, "N",
			     "snapshots a cause may save within a holdoff (default 3)", opt_burst),
		OPT_BOOL('q', "quiet", &rc->quiet, "no summary on stderr"),
		OPT_BOOL('f', "force", &rc->force,
			 "let -o replace a file that is not a trace (a trace it replaces is\n"
			 "kept as FILE.old, as perf keeps perf.data.old)"),
		OPT_STRING(0, "pidfile", &rc->pidfile, "FILE",
			   "write the recorder's pid to FILE while it records (for kill -INT,\n"
			   "or -USR1 to a ring)"),
		OPT_COMMAND(),
		OPT_END(),
	};
	int r;

	rc->output = TRACE_DEFAULT_PATH;
	rc->callchain = REC_CG_DWARF;
	rc->embed.mode = EMBED_MINIMAL;
	rc->embed.max_bytes = EMBED_MAX_DEFAULT;
	rc->stack_size = REC_DWARF_STACK_DEFAULT;
	rc->deep_freq = -1; /* by call-graph mode, after the options */
	rc->mmap_pages = 0; /* by call-graph mode, after the options */
	rc->codec = TRACE_CODEC_ZSTD;
	rc->fl.after = -1; /* by --ring, after the options */
	rc->fl.holdoff = -1;
	if (tracefs && *tracefs)
		events_tracefs_use(tracefs);
	r = opts_parse(argc, argv, options, usage_text, &seen);
	if (r >= 0)
		return r ? -1 : 1;
	if (optind < argc)
		rc->command = argv + optind;
	return options_finish(rc);
}

void rec_options_release(struct recorder *rc)
{
	free(rc->groups);
	free(rc->filters);
	free(rc->pids);
}
