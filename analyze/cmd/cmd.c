/*
 * analyze/cmd/cmd.c: what the commands share; see cmd.h.
 */
#include "cmd.h"
#include "../model/allocs.h"
#include "../model/reach.h"
#include "../model/stacktab.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../model/memops.h"
#include "../stacks/unwind.h"

/* PID[,PID...] into v (n of them so far), at most ANALYZE_MAX_SELECT. */
static int id_list(const char *opt, const char *arg, int *v, int *n)
{
	char buf[32];

	for (const char *p = arg;; p++) {
		size_t l = strcspn(p, ",");
		uint64_t id;

		if (!l || l >= sizeof(buf))
			return msg_error("%s '%s': give numbers, comma-separated (%s 123,456)", opt, arg, opt);
		memcpy(buf, p, l);
		buf[l] = 0;
		if (opts_u64(opt, buf, &id))
			return -1;
		if (id > INT32_MAX)
			return msg_error("%s %s is no process or thread id", opt, buf);
		if (*n == ANALYZE_MAX_SELECT)
			return msg_error("%s: at most %d", opt, ANALYZE_MAX_SELECT);
		v[(*n)++] = (int)id;
		p += l;
		if (!*p)
			return 0;
	}
}

int cmd_opt_pid(const struct opt *o, const char *arg, void *ctx)
{
	struct analyze_opts *a = ctx;

	if (id_list("--pid", arg, a->pids, &a->nr_pids))
		return -1;
	/* The replay keeps only these processes' samples; a command that
	 * names its one process still has it. */
	if (o->value)
		*(long *)o->value = a->nr_pids == 1 ? a->pids[0] : -1;
	return 0;
}

int cmd_opt_tid(const struct opt *o, const char *arg, void *ctx)
{
	struct analyze_opts *a = ctx;

	(void)o;
	return id_list("--tid", arg, a->tids, &a->nr_tids);
}

int cmd_opt_comm(const struct opt *o, const char *arg, void *ctx)
{
	struct analyze_opts *a = ctx;

	(void)o;
	for (const char *p = arg;; p++) {
		size_t l = strcspn(p, ",");

		if (!l)
			return msg_error("--comm '%s': give names, comma-separated (--comm nginx,redis-server)", arg);
		if (a->nr_comms == ANALYZE_MAX_SELECT)
			return msg_error("--comm: at most %d names", ANALYZE_MAX_SELECT);
		/* The kernel keeps 15 bytes of a name. */
		snprintf(a->comms[a->nr_comms++], sizeof(a->comms[0]), "%.*s", (int)(l < 15 ? l : 15), p);
		p += l;
		if (!*p)
			return 0;
	}
}

/* A time from the trace's start, in ns; -1 when it is none. */
static int time_parse(const char *s, size_t len, uint64_t *ns)
{
	double v;

	if (opts_seconds(s, len, &v))
		return -1;
	/* Rounded: 0.123456789 is not 123456789 ns in binary. */
	*ns = (uint64_t)(v * 1e9 + 0.5);
	return 0;
}

/* START,END; START alone (10s) is START to the end, as 10s, is. */
int cmd_opt_time(const struct opt *o, const char *arg, void *ctx)
{
	struct analyze_opts *a = ctx;
	const char *comma = strchr(arg, ',');
	size_t l1 = comma ? (size_t)(comma - arg) : strlen(arg);

	(void)o;
	a->time_from = 0;
	a->time_to = 0;
	if ((!comma && !l1) || (l1 && time_parse(arg, l1, &a->time_from)) ||
	    (comma && comma[1] && time_parse(comma + 1, strlen(comma + 1), &a->time_to)))
		return msg_error("--time '%s': give START,END in seconds from the trace's first event, either one may be "
				 "left out (--time 1.5,3, --time 10s, --time ,500ms)",
				 arg);
	if (a->time_to && a->time_to <= a->time_from)
		return msg_error("--time '%s': END (%.9g s) is not after START (%.9g s); give START,END", arg,
				 a->time_to / 1e9, a->time_from / 1e9);
	return 0;
}

int cmd_opt_last(const struct opt *o, const char *arg, void *ctx)
{
	struct analyze_opts *a = ctx;

	(void)o;
	if (time_parse(arg, strlen(arg), &a->time_last) || !a->time_last)
		return msg_error("--last '%s': give the seconds to keep before the trace's last event, more than 0 "
				 "(--last 10, --last 500ms)",
				 arg);
	return 0;
}

int cmd_opt_cgroup(const struct opt *o, const char *arg, void *ctx)
{
	(void)o;
	if (!arg[0])
		return msg_error("--cgroup needs a cgroup: its directory, or its path below the hierarchy's root");
	((struct analyze_opts *)ctx)->cgroup = arg;
	return 0;
}

/* valgrind's names, and all or none; what is not named is turned off. */
int cmd_opt_leak_heuristics(const struct opt *o, const char *arg, void *ctx)
{
	char buf[256], *save = NULL;
	unsigned on = 0;

	(void)o;
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int k = 0;

		if (!strcmp(w, "all")) {
			on = (1u << REACH_HEUR_NR) - 1;
			continue;
		}
		if (!strcmp(w, "none"))
			continue;
		while (k < REACH_HEUR_NR && strcmp(reach_heuristic_names[k], w))
			k++;
		if (k == REACH_HEUR_NR)
			return msg_error("--leak-check-heuristics: unknown heuristic '%s': give stdstring, length64, "
					 "newarray, multipleinheritance, all or none, comma-separated",
					 w);
		on |= 1u << k;
	}
	((struct analyze_opts *)ctx)->leak_heuristics_off = ((1u << REACH_HEUR_NR) - 1) & ~on;
	return 0;
}

int cmd_opt_input(const struct opt *o, const char *arg, void *ctx)
{
	(void)o;
	((struct analyze_opts *)ctx)->trace = arg;
	return 0;
}

int cmd_opt_level(const struct opt *o, const char *arg, void *ctx)
{
	(void)arg;
	(void)ctx;
	msg_level_set(o->short_name == 'q' ? MSG_QUIET : MSG_VERBOSE);
	return 0;
}

int cmd_opt_stack(const struct opt *o, const char *arg, void *ctx)
{
	struct analyze_opts *a = ctx;

	switch (o->set) {
	case CMD_STACK_DEBUG_DIR:
		if (a->sym.nr_debug_dirs == ANALYZE_MAX_DEBUG_DIRS)
			return msg_error("at most %d --debug-dir options", ANALYZE_MAX_DEBUG_DIRS);
		a->debug_dirs[a->sym.nr_debug_dirs++] = arg;
		a->sym.debug_dirs = a->debug_dirs;
		return 0;
	case CMD_STACK_SYSROOT:
		a->sym.sysroot = arg;
		return 0;
	case CMD_STACK_DEBUGINFOD:
		/* Bare, the servers the environment names. */
		a->sym.debuginfod_urls = arg ? arg : a->env_debuginfod_urls;
		if (!a->sym.debuginfod_urls || !*a->sym.debuginfod_urls)
			return msg_error("--debuginfod has no server to ask: set DEBUGINFOD_URLS or give --debuginfod=URL");
		return 0;
	case CMD_STACK_UNWINDER:
		a->unwinder = unwind_backend_parse(arg);
		if (a->unwinder < 0)
			return msg_error("unknown unwinder '%s': use libdw (the default) or libunwind", arg);
		return 0;
	case CMD_STACK_NO_INLINE:
		a->no_inline = 1;
		return 0;
	case CMD_STACK_FULL_NAMES:
		a->sym.full_names = 1;
		return 0;
	}
	return 0;
}

int cmd_parse(int argc, char **argv, const struct opt *opts, const char *usage, struct analyze_opts *a)
{
	return cmd_parse_base(argc, argv, opts, usage, a, NULL);
}

int cmd_parse_base(int argc, char **argv, const struct opt *opts, const char *usage, struct analyze_opts *a,
		   const char **base)
{
	int r;

	/* A command that runs others (report --html) hands them a as it is:
	 * the trace is each one's own to name. */
	a->trace = NULL;
	if (base)
		*base = NULL;
	r = opts_parse(argc, argv, opts, usage, a);
	if (r >= 0)
		return r;
	if (base && optind == argc - 2 && !a->trace) {
		*base = argv[optind];
		a->trace = argv[optind + 1];
		return -1;
	}
	if (optind == argc - 1 && !a->trace) {
		a->trace = argv[optind];
		return -1;
	}
	if (optind < argc) {
		msg_error("give one trace file%s (see %s -h)", a->trace ? ", as FILE or with -i" : "", msg_who());
		return 2;
	}
	if (a->trace)
		return -1;
	/* As perf report reads perf.data: what memsight record writes
	 * without -o. */
	if (!access(TRACE_DEFAULT_PATH, F_OK)) {
		a->trace = TRACE_DEFAULT_PATH;
		return -1;
	}
	msg_error("give a trace file: there is no ./%s here, where memsight record writes without -o (see %s -h)",
		  TRACE_DEFAULT_PATH, msg_who());
	return 2;
}

/*
 * memsight top's follower (MEMSIGHT_FOLLOW_FDS): the command reads a live
 * trace, then reads on as the trace grows, each look only what is new.
 * Between looks a child forked here reads on to the look's horizon, ends
 * the replay there and prints the view of what was read, while this
 * process keeps the replay's state (with --last it stops where the
 * window begins, its samples left out, and the child reads the window);
 * each look's output and messages replace the last one's (the
 * descriptors start again empty). Then it tells top on the reply descriptor, "STATUS
 * CPU\n" (the child's exit status, the CPU seconds this process and its
 * children have used), and waits for a byte on the request descriptor
 * before it looks at the file again; none (top is gone, or wants another
 * view) ends it. A trace that changed in a way only a new replay reads
 * gets "again\n" and ends it too: top starts another.
 */
static void fd_empty(int fd)
{
	if (ftruncate(fd, 0) == 0)
		lseek(fd, 0, SEEK_SET);
}

static int cmd_follow(struct session *s, void *arg, int again)
{
	struct rusage self, kids;
	unsigned char c;
	int status;
	ssize_t n;
	pid_t pid;

	(void)arg;
	/* The child, at the horizon: the window is read. */
	if (s->follow_shown)
		return TRACE_FOLLOW_END;
	if (again) {
		dprintf(s->o.follow_fds[1], "again\n");
		_exit(0);
	}
	fflush(stdout);
	fflush(stderr);
	symbols_fork_prepare(&s->syms);
	pid = fork();
	if (pid == 0) {
		s->follow_shown = 1;
		if (symbols_fork_child(&s->syms)) {
			msg_error("cannot start a thread to read symbols: %s", strerror(errno));
			_exit(1);
		}
		return SESSION_FOLLOW_SHOW;
	}
	if (pid < 0) {
		msg_error("cannot fork to show '%s' as it grows: %s", s->path, strerror(errno));
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	dprintf(s->o.follow_fds[1], "%d %.6f\n", status,
		self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec + kids.ru_stime.tv_sec +
			(self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) / 1e6);
	while ((n = read(s->o.follow_fds[0], &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		_exit(0);
	/* What the next look shows replaces this one's: its messages, then
	 * the next child's view, or this process's own when the look finds
	 * the recording over. */
	fd_empty(STDOUT_FILENO);
	fd_empty(STDERR_FILENO);
	if (s->o.status_fd)
		fd_empty(s->o.status_fd);
	return 0;
}

int cmd_open(struct session *s, const char *path, const struct analyze_opts *a)
{
	char err[512];

	if (session_open(s, path, a, err, sizeof(err))) {
		msg_error("%s", err);
		session_release(s);
		return -1;
	}
	session_warn_incomplete(s);
	if (a->follow_fds[0] > 2 && a->follow_fds[1] > 2)
		s->follow = cmd_follow;
	return 0;
}

const char *cmd_groups_held(const struct session *s, char *has, size_t size)
{
	size_t n = 0;

	has[0] = 0;
	for (size_t i = 0; i < s->nr_evs; i++) {
		const char *g = s->evs[i].d.group;
		size_t l = strlen(g);
		int dup = 0;

		for (const char *p = has; g[0] && (p = strstr(p, g)); p += l)
			dup |= (p == has || p[-1] == ' ') && (p[l] == ',' || !p[l]);
		if (!g[0] || dup || s->evs[i].kind == EVK_SYSCALLS)
			continue;
		n += snprintf(has + n, n < size ? size - n : 0, "%s%s", n ? ", " : "", g);
	}
	return has[0] ? has : "no events";
}

int cmd_need_group(struct session *s, const char *what, const char *group, const char *alt)
{
	char has[256];

	if (session_group_recorded(s, group) || (alt && session_group_recorded(s, alt)))
		return 0;
	cmd_groups_held(s, has, sizeof(has));
	return msg_error("'%s' has no %s events: record them with 'memsight record -e %s'%s%s%s (it holds %s)", s->path,
			 what, group, alt ? " (or -e " : "", alt ? alt : "", alt ? ")" : "", has);
}

int cmd_open_group(struct session *s, const char *path, const struct analyze_opts *a, const char *what,
		   const char *group, const char *alt)
{
	if (cmd_open(s, path, a))
		return -1;
	if (cmd_need_group(s, what, group, alt)) {
		session_release(s);
		return -1;
	}
	return 0;
}

int cmd_close(struct session *s, int ret)
{
	uint64_t lost = session_lost(s);
	char window[512] = "";

	/* Results of a ring or a snapshot cover its window alone: said with
	 * them (a failed command says only why). */
	if (!ret && cmd_window(s, window, sizeof(window))[0])
		msg_note("'%s' is %s", s->path, window);
	/* The program that ran the view (top) reads the count here rather
	 * than from the words below, which only come when it is not 0. Of
	 * a ring's window, unless a LOSS chunk or the recorder's count while
	 * recording (both from the start) says more. */
	if (!ret && s->o.status_fd)
		dprintf(s->o.status_fd, "lost %llu\nwindow %d\n", (unsigned long long)cmd_lost(s),
			window[0] && !s->lost && !s->lost_live);
	/* Every figure counts what was kept: said once, whatever the view
	 * (no figures, no word: a failed command said why). */
	if (lost && !s->loss_said && !ret)
		msg_warn("%llu events were lost while recording '%s' (%.1f%% of them): every figure here counts only "
			 "those kept; see memsight info for why",
			 (unsigned long long)lost, s->path, 100.0 * lost / (double)(lost + s->nr_samples));
	if (s->own_faults && !ret)
		msg_note("%llu page faults of memsight's wrapper writing its own report buffers in '%s' are left out: they "
			 "are the recording's cost, not the program's memory",
			 (unsigned long long)s->own_faults, s->path);
	session_report_unwind(s);
	symbols_report_unresolved(&s->syms);
	/* A follower's child: what it holds is the follower's too, whose
	 * copy goes on; freeing it all would cost more than the look. */
	if (s->follow_shown) {
		session_say_reads(s);
		fflush(stdout);
		fflush(stderr);
		_exit(ret);
	}
	session_release(s);
	return ret;
}

const char *fmt_bytes(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = v;
	int u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%llu B", (unsigned long long)v);
	else
		snprintf(buf, len, "%.1f %s", d, unit[u]);
	return buf;
}

const char *frame_obj_base(const struct frame *f)
{
	const char *o = f->kernel ? "kernel.kallsyms" : f->obj ? f->obj : "unknown";
	const char *b = strrchr(o, '/');

	return b ? b + 1 : o;
}

void cmd_json_frames(struct json *j, const char *key, const struct frame *fr, int n, int lines)
{
	json_begin_array(j, key);
	for (int i = 0; i < n; i++) {
		const struct frame *f = &fr[i];
		const char *file;
		int line;

		json_begin(j, NULL);
		json_str(j, "function", f->sym);
		json_u64(j, "offset", f->off);
		json_str(j, "object", frame_obj_base(f));
		json_bool(j, "kernel", f->kernel);
		json_bool(j, "inlined", f->inlined);
		if (lines && !frame_srcline(f, &file, &line)) {
			json_str(j, "file", file);
			json_i64(j, "line", line);
		}
		json_end(j);
	}
	json_end(j);
}

void print_frames(const struct frame *fr, int n, int lines, const char *indent)
{
	for (int j = 0; j < n; j++) {
		char name[512];
		const char *file;
		int line;

		printf("%s%s [%s]", indent, frame_name(&fr[j], name, sizeof(name), 1), frame_obj_base(&fr[j]));
		if (lines && !frame_srcline(&fr[j], &file, &line))
			printf(" %s:%d", file, line);
		putchar('\n');
	}
	if (!n)
		printf("%s(no stack recorded)\n", indent);
}

void cmd_json_stack(struct json *j, const char *key, const struct stack_entry *e, int lines)
{
	struct frame fr[STACK_MAX_FRAMES];

	cmd_json_frames(j, key, fr, e ? stack_entry_frames(e, fr, STACK_MAX_FRAMES) : 0, lines);
}

void cmd_json_process(struct json *j, const struct session *s, int pid)
{
	const char *cg = session_process_cgroup(s, pid);
	int ns = session_nspid(s, pid);
	char id[16];

	json_i64(j, "pid", pid);
	if (ns)
		json_i64(j, "nspid", ns);
	if (cg) {
		json_str(j, "cgroup", cg);
		if (session_container_id(cg, id, sizeof(id)))
			json_str(j, "container", id);
	}
}

uint64_t cmd_top_count(uint64_t given, int json, uint64_t text_default)
{
	return given ? given : json ? UINT64_MAX : text_default;
}

void cmd_json_truncated(struct json *j, uint64_t shown, uint64_t total)
{
	if (shown >= total)
		return;
	json_begin(j, "truncated");
	json_u64(j, "shown", shown);
	json_u64(j, "total", total);
	json_end(j);
}

uint64_t cmd_lost(const struct session *s)
{
	/* The LOSS chunks' count, or what the replay met of lost records
	 * where that is more (a trace cut before its last LOSS chunk), and
	 * the records a full disk kept from the file. */
	long long unwritten = session_stat(s, "records_not_written", 0);

	return session_lost(s) + (unwritten > 0 ? (uint64_t)unwritten : 0);
}

void cmd_json_lost(struct json *j, const struct session *s)
{
	json_u64(j, "lost", cmd_lost(s));
}

void cmd_json_events_begin(struct json *j, const struct session *s)
{
	json_init(j, stdout);
	json_begin(j, NULL);
	json_str(j, "trace", s->path);
	json_begin_array(j, "events");
}

void cmd_json_events_end(struct json *j, const struct session *s)
{
	json_end(j);
	/* After the replay: what it met of lost records counts. */
	cmd_json_lost(j, s);
	json_end(j);
}

void cmd_json_who(struct json *j, const struct session *s, const struct stack_entry *e)
{
	if (e->procs > 1)
		json_null(j, "pid");
	else
		cmd_json_process(j, s, e->pid);
	json_str(j, "comm", e->comm);
	json_u64(j, "processes", e->procs);
}

void cmd_markup_escape(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n && (n != SIZE_MAX || s[i]); i++) {
		switch (s[i]) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fputc((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t' ? '?' : s[i], out);
		}
	}
}

char *cmd_slurp(FILE *f, size_t *len)
{
	long n;
	char *buf;

	fflush(f);
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		return NULL;
	buf = malloc(n + 1);
	if (!buf)
		return NULL;
	*len = fread(buf, 1, n, f);
	buf[*len] = 0;
	return buf;
}

void print_stack(const struct stack_entry *e, int lines, const char *indent)
{
	struct frame fr[STACK_MAX_FRAMES];

	print_frames(fr, e ? stack_entry_frames(e, fr, STACK_MAX_FRAMES) : 0, lines, indent);
}

/* --fault-type KIND, repeatable: faults of any of the kinds given. */
int cmd_opt_fault_type(const struct opt *o, const char *arg, void *ctx)
{
	int k = fault_kind_parse(arg);

	(void)ctx;
	if (k < 0)
		return msg_error("unknown fault type '%s': use read, write, exec, cow or kernel", arg);
	*(unsigned *)o->value |= 1u << k;
	return 0;
}

/* One line on what part of a flight recording the file holds, or "" for
 * a trace that holds all of its recording. */
const char *cmd_window(struct session *s, char *buf, size_t len)
{
	char v[256], detail[128] = "?", when[64] = "?", sz[32];
	uint64_t bytes = s->r.ring.overwritten_bytes, records = s->r.ring.overwritten_records;
	const char *snap = s->snapshot;
	size_t sl = s->snapshot_len;

	buf[0] = 0;
	if (snap && !trace_kv_get(snap, sl, "overwritten_bytes", v, sizeof(v)))
		bytes = strtoull(v, NULL, 10);
	if (snap && !trace_kv_get(snap, sl, "overwritten_records", v, sizeof(v)))
		records = strtoull(v, NULL, 10);
	fmt_bytes(bytes, sz, sizeof(sz));
	if (snap && !trace_kv_get(snap, sl, "trigger", v, sizeof(v))) {
		char t[64];
		time_t secs;

		trace_kv_get(snap, sl, "detail", detail, sizeof(detail));
		if (!trace_kv_get(snap, sl, "trigger_realtime_ns", t, sizeof(t))) {
			secs = (time_t)(strtoull(t, NULL, 10) / 1000000000ull);
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", localtime(&secs));
		}
		snprintf(buf, len, "a snapshot of a ring, saved by trigger %s (%s) at %s; %s (%llu records) had been "
			 "overwritten before its window", v, detail, when, sz, (unsigned long long)records);
	} else if (s->r.file_flags & TRACE_FILE_RING) {
		if (!s->r.ring.segments)
			snprintf(buf, len, "a ring whose segments have not begun");
		else
			snprintf(buf, len, "a ring of %u segments of %s; %s (%llu records) overwritten before its window%s",
				 s->r.ring.nr_segments, fmt_bytes(s->r.ring.segment_size, when, sizeof(when)), sz,
				 (unsigned long long)records,
				 s->r.ring.passed ? "; its segments older than --last were not read" : "");
	} else if (s->r.file_flags & TRACE_FILE_WINDOW) {
		snprintf(buf, len, "the window of a ring; %s (%llu records) had been overwritten before it", sz,
			 (unsigned long long)records);
	}
	return buf;
}

int cmd_stdout_to(FILE *f)
{
	int saved;

	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	if (saved < 0 || dup2(fileno(f), STDOUT_FILENO) < 0) {
		if (saved >= 0)
			close(saved);
		return msg_error("cannot redirect standard output: %s", strerror(errno));
	}
	return saved;
}

void cmd_stdout_restore(int saved)
{
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
}

int cmd_capture(FILE *f, int (*fn)(int, char **, struct analyze_opts *), int argc, char **argv, struct analyze_opts *a)
{
	int saved = cmd_stdout_to(f), r;

	if (saved < 0)
		return 1;
	r = fn(argc, argv, a);
	cmd_stdout_restore(saved);
	return r;
}

struct shared_allocs {
	struct allocs a;
	struct { alloc_cb fn; void *arg; } *subs;
	size_t nr_subs;
};

static void shared_allocs_release(void *p)
{
	struct shared_allocs *sh = p;

	allocs_release(&sh->a);
	free(sh->subs);
	free(sh);
}

static int shared_allocs_event(struct session *s, const struct alloc_event *ev, void *arg)
{
	struct shared_allocs *sh = arg;
	int r = 0;

	for (size_t i = 0; i < sh->nr_subs && !r; i++)
		r = sh->subs[i].fn(s, ev, sh->subs[i].arg);
	return r;
}

struct allocs *cmd_allocs_shared(struct session *s, alloc_cb cb, void *arg)
{
	struct shared_allocs *sh = s->shared;

	if (!sh) {
		if (!(sh = calloc(1, sizeof(*sh))))
			return NULL;
		if (allocs_init(&sh->a, s)) {
			free(sh);
			return NULL;
		}
		s->shared = sh;
		s->shared_release = shared_allocs_release;
	}
	if (cb) {
		void *v = realloc(sh->subs, (sh->nr_subs + 1) * sizeof(*sh->subs));

		if (!v)
			return NULL;
		sh->subs = v;
		sh->subs[sh->nr_subs].fn = cb;
		sh->subs[sh->nr_subs++].arg = arg;
	}
	return &sh->a;
}

int cmd_view_open(struct session *s, const struct analyze_opts *a)
{
	if (s->path)
		return 0;
	if (cmd_open(s, a->trace, a)) {
		memset(s, 0, sizeof(*s));
		return -1;
	}
	return 0;
}

struct views {
	struct cmd_view *v;
	size_t n;
};

static int views_sample(struct session *s, struct sample *smp, void *arg)
{
	struct views *vs = arg;
	struct shared_allocs *sh = s->shared;

	if (sh) {
		struct sample copy = *smp;
		int r = allocs_sample(&sh->a, s, &copy, sh->nr_subs ? shared_allocs_event : NULL, sh);

		if (r)
			return r;
	}

	for (size_t i = 0; i < vs->n; i++) {
		/* A view may narrow its copy (a fault's kernel entry left
		 * out): the next sees the sample whole. */
		struct sample copy = *smp;
		int r;

		if (vs->v[i].sample && (r = vs->v[i].sample(s, &copy, vs->v[i].arg)))
			return r;
	}
	return 0;
}

/* A followed ring's window moved on: every view drops what came before. */
static int views_window(void *arg, struct session *s, uint64_t from)
{
	struct views *vs = arg;

	for (size_t i = 0; i < vs->n; i++)
		if (vs->v[i].window(s, vs->v[i].arg, from))
			return -1;
	return 0;
}

int cmd_views_replay(struct session *s, struct cmd_view *v, size_t n)
{
	struct views vs = { v, n };
	char err[512] = "";
	int stackless = 1, window = 1;

	for (size_t i = 0; i < n; i++) {
		stackless &= v[i].stackless;
		window &= v[i].window != NULL;
	}
	s->no_unwind |= stackless;
	if (window)
		session_on_window(s, views_window, &vs);
	if (session_replay(s, views_sample, &vs, err, sizeof(err)))
		return msg_error("%s", err[0] ? err : "out of memory");
	if (s->shared)
		allocs_end(&((struct shared_allocs *)s->shared)->a);
	return 0;
}

int cmd_view_end(struct session *s, struct cmd_view *v, FILE *f)
{
	int saved = f ? cmd_stdout_to(f) : -1, r;

	if (f && saved < 0)
		return v->end(s, v->arg, 0), 1;
	r = v->end(s, v->arg, 1);
	if (f)
		cmd_stdout_restore(saved);
	return r;
}

int cmd_view_main(int argc, char **argv, struct analyze_opts *a, cmd_view_fn fn)
{
	struct session s;
	struct cmd_view v = { 0 };
	int r;

	memset(&s, 0, sizeof(s));
	r = fn(argc, argv, a, &s, &v);
	if (r < 0)
		r = cmd_views_replay(&s, &v, 1) ? (v.end(&s, v.arg, 0), 1) : v.end(&s, v.arg, 1);
	if (!s.path)
		return r;
	if (v.says_all) {
		session_release(&s);
		return r;
	}
	/* Exit 3 is a gate that closed, not a failure: the closing notes
	 * still go with the results. */
	cmd_close(&s, r == 3 ? 0 : r);
	return r;
}
