/*
 * analyze/cmd/cmd_info.c: memsight info, what a trace holds. Reads only the
 * chunk list and META unless counts are asked for, so it is quick on any
 * size of file; --dump lists every chunk like a hex editor's ruler.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "../../formats/catalog.h"
#include "cmd.h"
#include "json.h"

static const char usage_text[] =
	"usage: memsight info [--dump] [--json] [FILE]\n"
	"\n"
	"What a trace holds: the host, the recording, its events and their counts,\n"
	"losses, the objects it carries, its chunks.\n";

/* The first event of the probe whose site event i is: USDT probes have
 * one event per site, the second and later named NAME__2, NAME__3 in the
 * same group; an event that is no such site is its own. */
static size_t event_site_of(struct session *s, size_t i)
{
	const char *name = s->evs[i].d.name, *u = strstr(name, "__");
	size_t base;

	if (!u || !u[2] || strspn(u + 2, "0123456789") != strlen(u + 2))
		return i;
	base = (size_t)(u - name);
	for (size_t j = 0; j < i; j++)
		if (!strncmp(s->evs[j].d.name, name, base) && !s->evs[j].d.name[base] &&
		    !strcmp(s->evs[j].d.group, s->evs[i].d.group))
			return j;
	return i;
}

/* Allocators the recorder found mapped while recording and probed then:
 * each process that mapped one, and how late its probes came. */
static void print_probes(struct session *s)
{
	size_t lines = 0, late = 0;

	for (size_t i = 0; i < s->probes_len; i++)
		lines += s->probes[i] == '\n';
	if (!lines)
		return;
	printf("probed while recording: %zu processes mapped allocators found then\n", lines);
	for (const char *p = s->probes, *end = s->probes + s->probes_len; p < end;) {
		const char *nl = memchr(p, '\n', end - p);
		unsigned long long ns = 0;
		int pid = 0, n = 0;

		if (!nl)
			break;
		if (sscanf(p, "%d\t%llu\t%n", &pid, &ns, &n) == 2 && n && ns && late++ < 10)
			printf("  pid %-7d %-15s %.*s, probed %.1f ms after it mapped it\n", pid,
			       machine_comm(&s->m, pid, pid), (int)(nl - p - n), p + n, ns / 1e6);
		p = nl + 1;
	}
	if (late > 10)
		printf("  and %zu more probed after their process mapped them\n", late - 10);
}

static void print_recording(struct session *s)
{
	char buf[512], when[64], sz[32];
	time_t t = s->r.created_ns / 1000000000ull;

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", localtime(&t));
	printf("file:        %s (%s, format version %u)\n", s->path, fmt_bytes(s->r.size, sz, sizeof(sz)),
	       s->r.version);
	if (s->r.stop[0])
		printf("status:      %s\n", s->r.stop);
	else if (s->r.live)
		printf("status:      being recorded (a running recorder still writes it): what it holds so far\n");
	else
		printf("status:      complete\n");
	if (cmd_window(s, buf, sizeof(buf))[0])
		printf("flight:      %s\n", buf);
	/* A ring's own summary (a snapshot carries none). */
	if (session_stat(s, "snapshots", -1) >= 0)
		printf("snapshots:   %lld saved, %lld failed, %lld triggers held back by --trigger-holdoff and "
		       "--trigger-burst\n",
		       session_stat(s, "snapshots", 0), session_stat(s, "snapshots_failed", 0),
		       session_stat(s, "snapshots_suppressed", 0));
	printf("created:     %s\n", when);
	printf("host:        %s", session_host(s, "hostname", buf, sizeof(buf), "?"));
	printf(", %s", session_host(s, "sysname", buf, sizeof(buf), "?"));
	printf(" %s", session_host(s, "release", buf, sizeof(buf), "?"));
	printf(" %s", session_host(s, "machine", buf, sizeof(buf), "?"));
	printf(", %s CPUs", session_host(s, "nr_cpus", buf, sizeof(buf), "?"));
	printf(", page size %u\n", s->page_size);
	printf("recorded by: %s\n", session_host(s, "command", buf, sizeof(buf), "?"));
	printf("target:      %s\n", session_host(s, "target", buf, sizeof(buf), "?"));
	printf("call graph:  %s\n", session_host(s, "call_graph", buf, sizeof(buf), "?"));
	/* Traces from before --stack-dump have no key and raw dumps. */
	if (!strncmp(buf, "dwarf", 5)) {
		uint64_t words = session_stat(s, "dump_words", 0), kept = session_stat(s, "dump_words_kept", 0);

		session_host(s, "stack_dump", buf, sizeof(buf), "raw");
		printf("stack dumps: %s", !strcmp(buf, "raw")	     ? "raw process memory, may hold secrets"
					  : !strcmp(buf, "pointers") ? "pointers only, other words zeroed when recorded"
								     : "addresses of code and of the dump only, other "
								       "words zeroed when recorded");
		if (words)
			printf(" (%.1f%% of %llu words kept)", 100.0 * kept / words, (unsigned long long)words);
		printf("\n");
	}
	if (session_stat(s, "duration_ns", -1) >= 0 && !(s->r.file_flags & (TRACE_FILE_RING | TRACE_FILE_WINDOW)))
		printf("duration:    %.3f s of recording, %.3f s of it between the first and the last sample\n",
		       session_stat(s, "duration_ns", 0) / 1e9,
		       s->last_time > s->first_time ? (s->last_time - s->first_time) / 1e9 : 0.0);
	else if (s->last_time > s->first_time)
		printf("duration:    %.3f s of samples%s\n", (s->last_time - s->first_time) / 1e9,
		       s->r.file_flags & (TRACE_FILE_RING | TRACE_FILE_WINDOW) ? ", the window" : "");
	printf("samples:     %llu\n", (unsigned long long)s->nr_samples);
	printf("lost:        %llu%s", (unsigned long long)session_lost(s),
	       s->r.complete ? "" : " (as far as the trace goes)");
	if (session_stat(s, "records_not_written", 0))
		printf(", and %lld records not written (below)", session_stat(s, "records_not_written", 0));
	if (session_lost_deep(s))
		printf("; %llu %s samples lost apart (they only complete other stacks)",
		       (unsigned long long)session_lost_deep(s), CATALOG_DEEP_EVENT);
	printf("\n");
	printf("events:\n");
	for (size_t i = 0; i < s->nr_evs; i++) {
		struct sess_event *e = &s->evs[i];
		unsigned long long n = e->nr_samples;
		size_t sites = 1, len = strlen(e->d.name);
		char name[64];

		/* The syscall carrier's samples are its calls' events'. */
		if (e->kind == EVK_TRACKING || event_site_of(s, i) != i || (e->kind == EVK_SYSCALLS && !n))
			continue;
		for (size_t j = i + 1; j < s->nr_evs; j++)
			if (event_site_of(s, j) == i) {
				n += s->evs[j].nr_samples;
				sites++;
			}
		/* A DWARF stack may have no callchain at all (a uprobe's kernel
		 * part is left out); an allocation's return dumps a few words
		 * of stack only for its out-pointer. */
		int stacks = (e->attr.sample_type & PERF_SAMPLE_CALLCHAIN) ||
			     ((e->attr.sample_type & PERF_SAMPLE_STACK_USER) && e->kind != EVK_ALLOC_RET);

		if (sites > 1)
			snprintf(name, sizeof(name), "%.*s (%zu sites)", (int)(len < 40 ? len : 40), e->d.name, sites);
		else
			snprintf(name, sizeof(name), "%s", e->d.name);
		printf("  %-28s %-8s %10llu samples%s\n", name, e->d.group, n, stacks ? "  with stacks" : "");
	}
	print_probes(s);
}

/* Where a loss came from: the compression queue backing up into the
 * drain loop, or the loop itself falling behind. */
static void print_writer(struct session *s)
{
	/* Older traces have no codec stat: they were zstd. */
	int codec = (int)session_stat(s, "writer_codec", TRACE_CODEC_ZSTD);
	char how[128];

	if (codec == TRACE_CODEC_NONE)
		snprintf(how, sizeof(how), "no compression");
	else if (session_stat(s, "writer_level", -1) < 0)
		snprintf(how, sizeof(how), "%s, %lld chunks at its fast level, %lld stored uncompressed",
			 trace_codec_name(codec), session_stat(s, "writer_fast_chunks", 0),
			 session_stat(s, "writer_raw_chunks", 0));
	else
		snprintf(how, sizeof(how), "%s level %lld, %lld chunks at its fast level, %lld stored uncompressed",
			 trace_codec_name(codec), session_stat(s, "writer_level", 0),
			 session_stat(s, "writer_fast_chunks", 0), session_stat(s, "writer_raw_chunks", 0));
	long long missed = session_stat(s, "drain_wakeups_missed", 0);

	printf("writer:      queue peak %.1f MiB, %lld waits for room, %s, %lld real-time boosts",
	       session_stat(s, "writer_queue_peak", 0) / 1048576.0, session_stat(s, "writer_queue_waits", 0), how,
	       session_stat(s, "writer_boosts", 0));
	/* The drain loop looked at the rings more often from then on. */
	if (missed)
		printf(", %lld ring wakeups the kernel missed", missed);
	printf("\n");
}

static void print_stats(struct session *s)
{
	long long minflt = session_stat(s, "command_minflt", -1);

	if (minflt >= 0) {
		/* A wait status: an exit code, or the signal that ended it. */
		int st = (int)session_stat(s, "command_status", 0);
		char how[64];

		if (WIFSIGNALED(st))
			snprintf(how, sizeof(how), "killed by SIG%s%s",
				 sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?",
				 session_stat(s, "command_stopped", 0) ? " (at the end of the recording)" : "");
		else
			snprintf(how, sizeof(how), "exit status %d", WEXITSTATUS(st));
		printf("command:     %s, the kernel counted %lld page faults (%lld major)\n", how,
		       minflt + session_stat(s, "command_majflt", 0), session_stat(s, "command_majflt", 0));
	}
	if (session_stat(s, "wrapper_processes", -1) >= 0)
		printf("malloc wrapper: %lld reports in shared memory from %lld processes (%lld threads, %lld rings "
		       "grown for threads that filled theirs), %lld of them with their stacks filtered in the process, "
		       "%lld rings refused or malformed; a process that could not reach the recorder reported at the "
		       "probe sites\n",
		       session_stat(s, "wrapper_reports", 0), session_stat(s, "wrapper_processes", 0),
		       session_stat(s, "wrapper_threads", 0), session_stat(s, "wrapper_grown", 0),
		       session_stat(s, "wrapper_packed", 0), session_stat(s, "wrapper_broken", 0));
	if (session_stat(s, "records_not_written", 0))
		printf("not written: %lld records, after the disk filled or a write failed\n",
		       session_stat(s, "records_not_written", 0));
	print_writer(s);
}

/* The recorder's word for why an object the stacks ran in was not carried
 * (FORMAT.md, META objects), in words. */
static const char *not_carried_why(const char *word)
{
	static const struct {
		const char *word, *why;
	} whys[] = {
		{ "gone", "its processes were gone before it could be read, and no file here had its build-id" },
		{ "no-build-id", "it has no build-id, so no copy of it could be checked" },
		{ "not-elf", "not an ELF file: code a runtime wrote into it (its perf map or jitdump names that)" },
		{ "unreadable", "it could not be read" },
		{ "over-bound", "past the --embed-max bound" },
		{ "too-big", "over 64 MiB, a chunk's limit: --embed minimal carries its tables" },
		{ "not-asked", "--embed none" },
	};

	for (size_t i = 0; i < sizeof(whys) / sizeof(whys[0]); i++)
		if (!strcmp(word, whys[i].word))
			return whys[i].why;
	return word;
}

/* The objects the stacks ran in that the trace does not carry, and why:
 * lines "BUILDID\tSTATE\tPATH". */
static void print_not_carried(struct session *s)
{
	const char *p = s->objects, *end;
	size_t touched = 0, missing = 0;

	if (!p)
		return;
	end = p + s->objects_len;
	for (const char *q = p; q < end; q = strchr(q, '\n') ? strchr(q, '\n') + 1 : end) {
		const char *t = strchr(q, '\t');

		touched++;
		missing += t && strncmp(t + 1, "carried\t", 8);
	}
	if (!missing)
		return;
	printf("not carried: %zu of the %zu objects stacks ran in:\n", missing, touched);
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end;
		const char *t1 = memchr(p, '\t', le - p), *t2 = t1 ? memchr(t1 + 1, '\t', le - t1 - 1) : NULL;
		char word[32];

		if (t2 && strncmp(t1 + 1, "carried\t", 8) && (size_t)(t2 - t1 - 1) < sizeof(word)) {
			memcpy(word, t1 + 1, t2 - t1 - 1);
			word[t2 - t1 - 1] = 0;
			printf("  %.*s: %s\n", (int)(le - t2 - 1), t2 + 1, not_carried_why(word));
		}
		p = nl ? nl + 1 : end;
	}
}

/* The runtimes' symbol files the trace carries: which process, which
 * file, how much of it. */
static void print_jit(struct session *s)
{
	if (!s->jit.nr_files && !s->jit_bad)
		return;
	printf("jit maps:    %zu perf maps and jitdumps of runtimes, naming their compiled code%s\n", s->jit.nr_files,
	       s->jit_bad ? " (some copies could not be read)" : "");
	for (size_t i = 0; i < s->jit.nr_files; i++) {
		const struct jit_file *f = &s->jit.files[i];
		const char *comm = machine_comm(&s->m, f->pid, f->pid);

		printf("  %-8s  pid %-7d %-15s %8llu functions  %s", jitsyms_kind_name(f->kind), f->pid, comm ? comm : "?",
		       (unsigned long long)f->syms, f->path);
		if (f->kept < f->size)
			printf(" (its first %.1f of %.1f MiB)", f->kept / 1048576.0, f->size / 1048576.0);
		if (f->bad)
			printf(" (%llu lines or records skipped)", (unsigned long long)f->bad);
		if (f->arch_time)
			printf(" (timed by the CPU's counter: the last code at each address names it)");
		printf("\n");
	}
}

static void print_embedded(struct session *s)
{
	static const char *const names[] = { "?", "minimal", "full", "debug" };
	struct embedded_info ei;
	uint64_t total = 0;
	size_t n = 0, debug = 0;

	for (size_t i = 0; !symbols_embedded_get(&s->syms, i, &ei); i++) {
		total += ei.size;
		debug += ei.mode == EMBED_DEBUG;
		n += ei.mode != EMBED_DEBUG;
	}
	printf("embedded:    %zu objects and the debug information of %zu, %.1f KiB%s\n", n, debug, total / 1024.0,
	       n ? "" : " (analysis elsewhere needs the binaries or their debug files; see memsight archive)");
	for (size_t i = 0; !symbols_embedded_get(&s->syms, i, &ei); i++) {
		char hex[41];

		symbols_build_id_hex(ei.build_id, ei.bid_len, hex);
		printf("  %-7s %10.1f KiB of %10.1f KiB  %s  %s\n", names[ei.mode >= 1 && ei.mode <= 3 ? ei.mode : 0],
		       ei.size / 1024.0, ei.original_size / 1024.0, hex, ei.path);
	}
	print_not_carried(s);
}

static void print_chunks(struct session *s)
{
	uint64_t per_type[8] = { 0 }, payload[8] = { 0 }, raw[8] = { 0 };
	char sz[32], sz2[32];

	for (size_t i = 0; i < s->r.nr_chunks; i++) {
		unsigned ty = s->r.chunks[i].type < 8 ? s->r.chunks[i].type : 0;

		per_type[ty]++;
		payload[ty] += s->r.chunks[i].payload_len;
		raw[ty] += s->r.chunks[i].raw_len;
	}
	printf("chunks:      %zu", s->r.nr_chunks);
	for (unsigned ty = 1; ty < 8; ty++)
		if (per_type[ty])
			printf(", %llu %s", (unsigned long long)per_type[ty], trace_chunk_type_name(ty));
	printf("\n");
	printf("data:        %s of records stored in %s (%.1fx)\n", fmt_bytes(raw[TRACE_CHUNK_DATA], sz, sizeof(sz)),
	       fmt_bytes(payload[TRACE_CHUNK_DATA], sz2, sizeof(sz2)),
	       payload[TRACE_CHUNK_DATA] ? (double)raw[TRACE_CHUNK_DATA] / payload[TRACE_CHUNK_DATA] : 0.0);
}

/* --json: what the text says, as one object. */
static void info_json(struct session *s, int dump)
{
	static const char *const modes[] = { "?", "minimal", "full", "debug" };
	struct embedded_info ei;
	struct json j;
	char buf[512];
	uint64_t per_type[8] = { 0 }, payload[8] = { 0 }, raw[8] = { 0 };

	json_init(&j, stdout);
	json_begin(&j, NULL);
	json_str(&j, "trace", s->path);
	json_u64(&j, "size", s->r.size);
	json_u64(&j, "format_version", s->r.version);
	json_bool(&j, "complete", s->r.complete && !s->r.stop[0]);
	json_bool(&j, "live", s->r.live);
	if (s->r.stop[0])
		json_str(&j, "stopped", s->r.stop);
	else
		json_null(&j, "stopped");
	if (cmd_window(s, buf, sizeof(buf))[0])
		json_str(&j, "flight", buf);
	else
		json_null(&j, "flight");
	json_u64(&j, "created_ns", s->r.created_ns);
	json_begin(&j, "host");
	json_str(&j, "hostname", session_host(s, "hostname", buf, sizeof(buf), "?"));
	json_str(&j, "sysname", session_host(s, "sysname", buf, sizeof(buf), "?"));
	json_str(&j, "release", session_host(s, "release", buf, sizeof(buf), "?"));
	json_str(&j, "machine", session_host(s, "machine", buf, sizeof(buf), "?"));
	json_i64(&j, "nr_cpus", atoi(session_host(s, "nr_cpus", buf, sizeof(buf), "0")));
	json_u64(&j, "page_size", s->page_size);
	json_end(&j);
	json_str(&j, "recorded_by", session_host(s, "command", buf, sizeof(buf), "?"));
	json_str(&j, "target", session_host(s, "target", buf, sizeof(buf), "?"));
	json_str(&j, "call_graph", session_host(s, "call_graph", buf, sizeof(buf), "?"));
	json_str(&j, "stack_dump", session_host(s, "stack_dump", buf, sizeof(buf), "raw"));
	json_double(&j, "duration_s", "%.6f", s->last_time > s->first_time ? (s->last_time - s->first_time) / 1e9 : 0.0);
	json_u64(&j, "samples", s->nr_samples);
	json_u64(&j, "lost", session_lost(s));
	json_u64(&j, "lost_deep_stacks", session_lost_deep(s));
	json_begin_array(&j, "events");
	for (size_t i = 0; i < s->nr_evs; i++) {
		struct sess_event *e = &s->evs[i];
		unsigned long long n = e->nr_samples;
		size_t sites = 1;

		/* The syscall carrier's samples are its calls' events'. */
		if (e->kind == EVK_TRACKING || event_site_of(s, i) != i || (e->kind == EVK_SYSCALLS && !n))
			continue;
		for (size_t k = i + 1; k < s->nr_evs; k++)
			if (event_site_of(s, k) == i) {
				n += s->evs[k].nr_samples;
				sites++;
			}
		json_begin(&j, NULL);
		json_str(&j, "name", e->d.name);
		json_str(&j, "group", e->d.group);
		json_u64(&j, "samples", n);
		json_u64(&j, "sites", sites);
		json_bool(&j, "stacks", (e->attr.sample_type & PERF_SAMPLE_CALLCHAIN) ||
						((e->attr.sample_type & PERF_SAMPLE_STACK_USER) && e->kind != EVK_ALLOC_RET));
		json_end(&j);
	}
	json_end(&j);
	json_begin_array(&j, "probed_while_recording");
	for (const char *p = s->probes, *end = s->probes + s->probes_len; p && p < end;) {
		const char *nl = memchr(p, '\n', end - p);
		unsigned long long ns = 0;
		int pid = 0, n = 0;

		if (!nl)
			break;
		if (sscanf(p, "%d\t%llu\t%n", &pid, &ns, &n) == 2 && n) {
			snprintf(buf, sizeof(buf), "%.*s", (int)(nl - p - n), p + n);
			json_begin(&j, NULL);
			json_i64(&j, "pid", pid);
			json_str(&j, "comm", machine_comm(&s->m, pid, pid));
			json_str(&j, "object", buf);
			json_u64(&j, "late_ns", ns);
			json_end(&j);
		}
		p = nl + 1;
	}
	json_end(&j);
	if (s->stats) {
		json_begin(&j, "writer");
		json_str(&j, "codec", trace_codec_name((int)session_stat(s, "writer_codec", TRACE_CODEC_ZSTD)));
		json_i64(&j, "level", session_stat(s, "writer_level", -1));
		json_i64(&j, "queue_peak_bytes", session_stat(s, "writer_queue_peak", 0));
		json_i64(&j, "queue_waits", session_stat(s, "writer_queue_waits", 0));
		json_i64(&j, "fast_chunks", session_stat(s, "writer_fast_chunks", 0));
		json_i64(&j, "raw_chunks", session_stat(s, "writer_raw_chunks", 0));
		json_i64(&j, "boosts", session_stat(s, "writer_boosts", 0));
		json_i64(&j, "wakeups_missed", session_stat(s, "drain_wakeups_missed", 0));
		json_i64(&j, "records_not_written", session_stat(s, "records_not_written", 0));
		json_end(&j);
	} else {
		json_null(&j, "writer");
	}
	if (s->stats && session_stat(s, "command_minflt", -1) >= 0) {
		int st = (int)session_stat(s, "command_status", 0);

		json_begin(&j, "command");
		if (WIFSIGNALED(st)) {
			json_null(&j, "exit_status");
			json_str(&j, "signal", sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
		} else {
			json_i64(&j, "exit_status", WEXITSTATUS(st));
			json_null(&j, "signal");
		}
		json_bool(&j, "stopped_by_recorder", session_stat(s, "command_stopped", 0) != 0);
		json_i64(&j, "page_faults", session_stat(s, "command_minflt", 0) + session_stat(s, "command_majflt", 0));
		json_i64(&j, "major_faults", session_stat(s, "command_majflt", 0));
		json_end(&j);
	} else {
		json_null(&j, "command");
	}
	json_i64(&j, "processes_in_snapshot", s->nr_snapshots);
	json_u64(&j, "kernel_symbols", s->syms.nr_ksyms);
	json_begin_array(&j, "jit_maps");
	for (size_t i = 0; i < s->jit.nr_files; i++) {
		const struct jit_file *f = &s->jit.files[i];

		json_begin(&j, NULL);
		json_str(&j, "kind", jitsyms_kind_name(f->kind));
		json_i64(&j, "pid", f->pid);
		json_str(&j, "comm", machine_comm(&s->m, f->pid, f->pid));
		json_str(&j, "path", f->path);
		json_u64(&j, "functions", f->syms);
		json_u64(&j, "size", f->size);
		json_u64(&j, "kept", f->kept);
		json_u64(&j, "skipped", f->bad);
		json_end(&j);
	}
	json_end(&j);
	json_begin_array(&j, "embedded");
	for (size_t i = 0; !symbols_embedded_get(&s->syms, i, &ei); i++) {
		char hex[41];

		symbols_build_id_hex(ei.build_id, ei.bid_len, hex);
		json_begin(&j, NULL);
		json_str(&j, "mode", modes[ei.mode >= 1 && ei.mode <= 3 ? ei.mode : 0]);
		json_u64(&j, "bytes", ei.size);
		json_u64(&j, "original_size", ei.original_size);
		json_str(&j, "build_id", hex);
		json_str(&j, "path", ei.path);
		json_end(&j);
	}
	json_end(&j);
	/* META objects lines: BUILDID\tSTATE\tPATH. */
	json_begin_array(&j, "not_carried");
	for (const char *p = s->objects, *end = p ? p + s->objects_len : NULL; p && p < end;) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end;
		const char *t1 = memchr(p, '\t', le - p), *t2 = t1 ? memchr(t1 + 1, '\t', le - t1 - 1) : NULL;
		char word[32];

		if (t2 && strncmp(t1 + 1, "carried\t", 8) && (size_t)(t2 - t1 - 1) < sizeof(word)) {
			memcpy(word, t1 + 1, t2 - t1 - 1);
			word[t2 - t1 - 1] = 0;
			snprintf(buf, sizeof(buf), "%.*s", (int)(le - t2 - 1), t2 + 1);
			json_begin(&j, NULL);
			json_str(&j, "path", buf);
			json_str(&j, "state", word);
			json_str(&j, "why", not_carried_why(word));
			json_end(&j);
		}
		p = nl ? nl + 1 : end;
	}
	json_end(&j);
	for (size_t i = 0; i < s->r.nr_chunks; i++) {
		unsigned ty = s->r.chunks[i].type < 8 ? s->r.chunks[i].type : 0;

		per_type[ty]++;
		payload[ty] += s->r.chunks[i].payload_len;
		raw[ty] += s->r.chunks[i].raw_len;
	}
	json_begin(&j, "chunks");
	json_u64(&j, "total", s->r.nr_chunks);
	for (unsigned ty = 1; ty < 8; ty++)
		if (per_type[ty])
			json_u64(&j, trace_chunk_type_name(ty), per_type[ty]);
	json_end(&j);
	json_u64(&j, "data_bytes", raw[TRACE_CHUNK_DATA]);
	json_u64(&j, "data_stored_bytes", payload[TRACE_CHUNK_DATA]);
	if (dump) {
		json_begin_array(&j, "chunk_list");
		for (size_t i = 0; i < s->r.nr_chunks; i++) {
			const struct trace_chunk *ch = &s->r.chunks[i];

			json_begin(&j, NULL);
			json_u64(&j, "offset", ch->offset);
			json_str(&j, "type", trace_chunk_type_name(ch->type));
			json_str(&j, "codec", trace_codec_name(ch->codec));
			if (ch->type == TRACE_CHUNK_META)
				json_str(&j, "meta", trace_meta_kind_name(ch->stream));
			else
				json_u64(&j, "stream", ch->stream);
			json_u64(&j, "stored", ch->payload_len);
			json_u64(&j, "raw", ch->raw_len);
			json_u64(&j, "crc", ch->crc);
			json_u64(&j, "time", ch->time);
			json_end(&j);
		}
		json_end(&j);
	}
	json_end(&j);
}

/* --dump: every chunk, as a hex editor's ruler would place it. */
static void print_dump(struct session *s)
{
	printf("\n%-6s %-12s %-8s %-5s %-12s %10s %10s %-10s %s\n", "#", "offset", "type", "codec", "stream", "stored",
	       "raw", "crc", "time");
	for (size_t i = 0; i < s->r.nr_chunks; i++) {
		const struct trace_chunk *ch = &s->r.chunks[i];
		char stream[32];

		if (ch->type == TRACE_CHUNK_META)
			snprintf(stream, sizeof(stream), "%s", trace_meta_kind_name(ch->stream));
		else if (ch->type == TRACE_CHUNK_DATA && ch->stream == TRACE_STREAM_WRAPPER)
			snprintf(stream, sizeof(stream), "wrapper");
		else if (ch->type == TRACE_CHUNK_DATA && ch->stream >= TRACE_STREAM_DEEP && ch->stream < TRACE_STREAM_WRAPPER)
			snprintf(stream, sizeof(stream), "deep cpu %u", ch->stream - TRACE_STREAM_DEEP);
		else if (ch->type == TRACE_CHUNK_DATA)
			snprintf(stream, sizeof(stream), "cpu %u", ch->stream);
		else
			snprintf(stream, sizeof(stream), "-");
		printf("%-6zu 0x%010llx %-8s %-5s %-12s %10u %10u 0x%08x %llu\n", i, (unsigned long long)ch->offset,
		       trace_chunk_type_name(ch->type), trace_codec_name(ch->codec), stream, ch->payload_len, ch->raw_len,
		       ch->crc, (unsigned long long)ch->time);
	}
	if (s->r.stop[0])
		printf("stopped: %s\n", s->r.stop);
}

struct info {
	int dump, json;
};

static int info_end(struct session *s, void *arg, int print)
{
	struct info *in = arg;

	if (print && in->json) {
		info_json(s, in->dump);
	} else if (print) {
		print_recording(s);
		if (s->stats)
			print_stats(s);
		printf("processes:   %d in the /proc snapshot\n", s->nr_snapshots);
		printf("kernel syms: %zu\n", s->syms.nr_ksyms);
		print_jit(s);
		print_embedded(s);
		print_chunks(s);
		if (in->dump)
			print_dump(s);
	}
	free(in);
	return print ? 0 : 1;
}

int info_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v)
{
	struct info in = { 0 };
	const struct opt options[] = {
		OPT_BOOL(0, "dump", &in.dump, "list every chunk: offset, type, codec, stream, sizes, crc, time"),
		OPT_JSON(&in.json),
		OPT_INPUT,
		OPT_END(),
	};
	int r = cmd_parse(argc, argv, options, usage_text, a);

	if (r >= 0)
		return r;
	if (cmd_view_open(s, a))
		return 1;
	if (!(v->arg = malloc(sizeof(in))))
		return msg_error("out of memory"), 1;
	memcpy(v->arg, &in, sizeof(in));
	v->end = info_end;
	/* Counting needs no stacks: no unwinding; and what was lost is
	 * what info is about. */
	v->stackless = 1;
	v->says_all = 1;
	return -1;
}

int cmd_info(int argc, char **argv, struct analyze_opts *a)
{
	return cmd_view_main(argc, argv, a, info_view);
}
