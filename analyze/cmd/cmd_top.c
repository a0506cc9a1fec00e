/*
 * analyze/cmd/cmd_top.c: memsight top, a view of a trace while it is
 * recorded, read every interval: the leak table, or the faults,
 * brk, reclaim or report view where the recording has no allocations.
 *
 * A refresh has this program's own command for the view, in a child, show
 * the trace as far as its recorder has written it (a live trace reads so:
 * formats/trace.h), with the child's output and messages in memory files,
 * and shows them: at a terminal redrawn in place on the alternate screen,
 * with keys; elsewhere one table a refresh, as vmstat prints, until the
 * recording has ended. So what top shows is what that command prints of
 * the same bytes. The child follows the trace (cmd.c: the follower): it
 * keeps running, and each refresh reads only what was written since the
 * last (a view of the last seconds, that window again); of a ring, on
 * into each segment its recorder begins, the view dropping what the
 * window no longer holds, until the recorder overwrites what the last
 * refresh read, when the command starts again.
 *
 * Above the view, while the recording goes on, top adds what only the
 * machine knows now, from /proc: the recorder (the process holding the
 * trace's lock) with its CPU and memory, and the processes the view
 * names with their resident memory and fault rate; and the events the
 * child counted lost, which it writes for top alone on a descriptor of
 * its own (MEMSIGHT_STATUS_FD) whether or not there were any.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "../model/allocs.h"
#include "../../formats/msg.h"
#include "../../formats/replace.h"
#include "../../formats/termsafe.h"

static const char usage_text[] =
	"usage: memsight top [options] [FILE]\n"
	"\n"
	"A trace while it is recorded, read every interval as far as the recorder\n"
	"has written it: the leak table (record -e malloc), the stacks whose\n"
	"outstanding bytes grow fastest first, or the faults, brk, reclaim or\n"
	"report view; above it the recorder's CPU and memory, the events lost so\n"
	"far and the named processes' resident memory, faults per second and\n"
	"(leaks) heap in use. Each interval reads only what the recorder wrote\n"
	"since the last (of a ring, while it keeps up with the recorder).\n"
	"At a terminal it redraws in place: q quits, v shows the next view, s\n"
	"sorts the leak table by growth or by size, p pauses, f keeps some pids\n"
	"or names, + and - show more or fewer stacks, e folds every stack to its\n"
	"first lines, up and down select one and Enter folds or unfolds it.\n"
	"Elsewhere it prints one table per interval until the recording ends.\n";

/* The views, each a command of this program run on the trace; the first
 * the trace has events for is the default. */
enum { VIEW_LEAKS, VIEW_FAULTS, VIEW_BRK, VIEW_RECLAIM, VIEW_REPORT, NR_VIEWS };
static const char *const view_names[NR_VIEWS] = { "leaks", "faults", "brk", "reclaim", "report" };

/* A process the view names, as /proc saw it at the last refresh. */
struct top_proc {
	int pid;
	char comm[64];
	unsigned long long start; /* with the pid, the process: a pid is reused */
	uint64_t rss0, rss, faults;
	long long heap;     /* bytes outstanding, as the leak table sums them; -1 unknown */
	double faults_rate; /* per second over the last interval, -1 before two looks */
	struct timespec seen;
};

#define TOP_PROCS 5
/* Stacks the terminal shows the other way from the rest (folded when all
 * are whole, whole when all are folded), by their frames. */
#define TOP_TOGGLED 64
/* A folded stack keeps this many lines under its first. */
#define TOP_FOLD_LINES 3
/* The processes seen, with their RSS when first seen: one that drops out
 * of the view and comes back keeps its change. */
#define TOP_SEEN 64

struct top {
	const char *path, *pid, *comm, *delay_arg, *view_arg, *last;
	double delay;
	uint64_t top, iterations, max_cpu;
	double cost;          /* CPU seconds the last read of the trace took */
	double every;         /* seconds from the last read to the next */
	double last_secs;     /* --last: the window of the views but leaks' */
	struct timespec start; /* when top started, for its share of a CPU */
	char filter[256];     /* what f was given: the pids or names kept */
	int by_size, paused, tty, raw;
	int view, views;      /* the view shown; the mask of those the trace has events for */
	dev_t dev;            /* the trace file the views were picked for */
	ino_t ino;
	long long lost;       /* events lost, as the last read counted them; -1 when it did not say */
	int lost_window;      /* that count is of a ring's window, not of the whole recording */
	int recorder;         /* the pid holding the trace's lock, 0 when none is seen */
	uint64_t rec_ticks;   /* its CPU time at the last look */
	struct timespec rec_seen;
	double rec_cpu;       /* its share of one CPU since the last look, -1 before two */
	unsigned long long rec_rss; /* its resident bytes at the last look */
	struct top_proc procs[TOP_PROCS], seen[TOP_SEEN];
	int nr_procs, nr_seen;
	int fold_all;         /* e: every stack folded */
	uint64_t toggled[TOP_TOGGLED];
	int nr_toggled;
	int sel, nr_stacks;   /* the stack selected (up and down), from the first; how many are shown */
	uint64_t sel_key;     /* the selected stack's, as drawn last */
	int redraw;           /* a key changed only what is drawn */
	struct termios saved;
	/* The view's command, kept running between refreshes while it
	 * follows a live linear trace (cmd.c: the follower): each refresh
	 * it reads only what was written since the last. */
	struct {
		pid_t pid;	/* 0: none runs */
		int sock;	/* requests out, replies in */
		FILE *fo, *fe, *fs; /* its output, messages and counts */
		char args[1024]; /* the arguments it runs with */
		double cpu;	/* the CPU seconds it said it had used */
	} fw;
};

static volatile sig_atomic_t top_stopped;

static void top_signal(int sig)
{
	(void)sig;
	top_stopped = 1;
}

/* A memory file to hold what the child writes; NULL when none could be
 * made. */
static FILE *memfile(const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w+");

	if (fd >= 0 && !f)
		close(fd);
	return f;
}

/* The CPU seconds, user and system, an rusage counts. */
static double rusage_secs(const struct rusage *ru)
{
	return ru->ru_utime.tv_sec + ru->ru_stime.tv_sec + (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
}

/* The child's descriptor for what its view counted (analyze/main.c reads
 * MEMSIGHT_STATUS_FD): the first past the standard three. */
#define TOP_STATUS_FD 3
#define TOP_STR_(x) #x
#define TOP_STR(x) TOP_STR_(x)

/* The follower's descriptor for requests and replies: the next one. */
#define TOP_FOLLOW_FD 4

/* Its descriptor in a child as fd, open across exec. */
static int fd_give(int have, int fd)
{
	return have == fd ? fcntl(fd, F_SETFD, 0) : dup2(have, fd);
}

/* Stop the follower, which ends when its socket closes, and wait for
 * it: its exit status, its rusage in *ru. Its files stay. */
static int follower_wait(struct top *t, struct rusage *ru)
{
	int status = 0;

	close(t->fw.sock);
	while (wait4(t->fw.pid, &status, 0, ru) < 0 && errno == EINTR)
		;
	t->fw.pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void follower_files_close(struct top *t)
{
	if (t->fw.fo)
		fclose(t->fw.fo);
	if (t->fw.fe)
		fclose(t->fw.fe);
	if (t->fw.fs)
		fclose(t->fw.fs);
	t->fw.fo = t->fw.fe = t->fw.fs = NULL;
}

static void follower_end(struct top *t)
{
	struct rusage ru;

	if (t->fw.pid)
		follower_wait(t, &ru);
	follower_files_close(t);
}

/* Start the view's command as a follower of the trace; 0, or -1. */
static int follower_start(struct top *t, const char **argv, const char *args)
{
	int sv[2];
	pid_t pid;

	t->fw.fo = memfile("memsight-top-out");
	t->fw.fe = memfile("memsight-top-err");
	t->fw.fs = memfile("memsight-top-status");
	if (!t->fw.fo || !t->fw.fe || !t->fw.fs || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		follower_files_close(t);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		/* Above those it is given as, so that none lands on it. */
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC), sock = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);

		if (null < 0 || sock < 0 || dup2(null, 0) < 0 || dup2(fileno(t->fw.fo), 1) < 0 ||
		    dup2(fileno(t->fw.fe), 2) < 0 || fd_give(fileno(t->fw.fs), TOP_STATUS_FD) < 0 ||
		    fd_give(sock, TOP_FOLLOW_FD) < 0)
			_exit(127);
		setenv("MEMSIGHT_SPEAKER", "memsight top", 1);
		setenv("MEMSIGHT_STATUS_FD", TOP_STR(TOP_STATUS_FD), 1);
		setenv("MEMSIGHT_FOLLOW_FDS", TOP_STR(TOP_FOLLOW_FD) "," TOP_STR(TOP_FOLLOW_FD), 1);
		execv("/proc/self/exe", (char **)argv);
		_exit(127);
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		follower_files_close(t);
		return -1;
	}
	t->fw.pid = pid;
	t->fw.sock = sv[0];
	t->fw.cpu = 0;
	snprintf(t->fw.args, sizeof(t->fw.args), "%s", args);
	return 0;
}

/* The follower's reply to the last request: 1 with its status and CPU, 2
 * for "again", 0 when it closed its end. */
static int follower_reply(struct top *t, int *status, double *cpu)
{
	char line[64];
	size_t n = 0;

	while (n + 1 < sizeof(line)) {
		ssize_t k = read(t->fw.sock, line + n, 1);

		if (k < 0 && errno == EINTR && !top_stopped)
			continue;
		if (k <= 0)
			break;
		if (line[n++] == '\n')
			break;
	}
	line[n] = 0;
	if (!strcmp(line, "again\n"))
		return 2;
	return sscanf(line, "%d %lf", status, cpu) == 2 ? 1 : 0;
}

/*
 * The view's command on the trace, its output in *out and its messages in
 * *err; its exit status, or -1 when it could not run. What CPU it used
 * goes in t->cost, what it counted lost in t->lost. The command is a
 * follower (cmd.c): started once, it reads the trace and shows it, then
 * at each refresh reads on from where it was. One that ends by itself
 * (the trace is finished) showed the trace whole, and the next refresh
 * starts another; one that says "again" (the trace changed as only a new
 * reading reads: a ring's window moved on) is started again at once.
 */
static int top_run(struct top *t, char **out, char **err)
{
	struct rusage ru = { 0 };
	const char *argv[16];
	char n[32], args[1024], *said;
	unsigned long long lost;
	size_t len, used = 0;
	int ac = 0, status = -1, window, ended = 0;
	double cpu = 0;

	*out = *err = NULL;
	t->lost = -1;
	snprintf(n, sizeof(n), "%llu", (unsigned long long)t->top);
	argv[ac++] = "memsight-analyze";
	argv[ac++] = view_names[t->view];
	if (t->view == VIEW_LEAKS) {
		argv[ac++] = "--sort";
		argv[ac++] = t->by_size ? "size" : "growth";
	}
	if (t->view != VIEW_LEAKS && t->last) {
		argv[ac++] = "--last";
		argv[ac++] = t->last;
	}
	argv[ac++] = "-T";
	argv[ac++] = n;
	if (t->pid) {
		argv[ac++] = "--pid";
		argv[ac++] = t->pid;
	}
	if (t->comm) {
		argv[ac++] = "--comm";
		argv[ac++] = t->comm;
	}
	argv[ac++] = "-i";
	argv[ac++] = t->path;
	argv[ac] = NULL;
	for (int i = 1; i < ac && used < sizeof(args); i++)
		used += snprintf(args + used, sizeof(args) - used, "%s\n", argv[i]);
	/* Another view, sort or filter: another command. */
	if (t->fw.pid && strcmp(args, t->fw.args))
		follower_end(t);
	for (int tries = 0; tries < 2; tries++) {
		int r;

		/* A new one reads and shows the trace unasked; one started
		 * after another said "again" is running, its files open. */
		if (!t->fw.pid) {
			if (follower_start(t, argv, args))
				return -1;
			ended = 0;
		} else {
			send(t->fw.sock, "x", 1, MSG_NOSIGNAL);
		}
		r = follower_reply(t, &status, &cpu);
		if (r == 1) {
			t->cost = cpu - t->fw.cpu;
			t->fw.cpu = cpu;
			break;
		}
		cpu = t->fw.cpu;
		status = follower_wait(t, &ru);
		t->cost = rusage_secs(&ru) - cpu;
		ended = 1;
		if (r != 2)
			break;
		follower_files_close(t);
	}
	/* Said "again" twice: the trace is being replaced as it is read. */
	if (!t->fw.fo) {
		errno = EAGAIN;
		return -1;
	}
	*out = cmd_slurp(t->fw.fo, &len);
	*err = cmd_slurp(t->fw.fe, &len);
	said = cmd_slurp(t->fw.fs, &len);
	if (said && sscanf(said, "lost %llu\nwindow %d", &lost, &window) == 2 && lost <= LLONG_MAX) {
		t->lost = (long long)lost;
		t->lost_window = window;
	}
	free(said);
	if (ended)
		follower_files_close(t);
	return *out && *err ? status : -1;
}

static void term_restore(struct top *t)
{
	if (!t->raw)
		return;
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &t->saved);
	t->raw = 0;
}

/* Keys one at a time, no echo; the alternate screen, as top's. */
static int term_raw(struct top *t)
{
	struct termios raw;

	if (tcgetattr(STDIN_FILENO, &t->saved))
		return -1;
	raw = t->saved;
	raw.c_lflag &= ~(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw))
		return -1;
	t->raw = 1;
	fputs("\033[?1049h\033[?25l", stdout);
	return 0;
}

/* The views the trace has events for, looked at again only when the path
 * names another file (a recorder restarted on it); the first of them is
 * shown unless --view chose. A trace not readable yet is looked at again at
 * the next refresh. */
static void top_views_pick(struct top *t)
{
	struct session s;
	struct stat st;
	char err[512];
	int views = 1 << VIEW_REPORT;

	if (stat(t->path, &st) || (t->views && st.st_dev == t->dev && st.st_ino == t->ino))
		return;
	if (session_open(&s, t->path, NULL, err, sizeof(err))) {
		session_release(&s);
		return;
	}
	if (allocs_recorded(&s))
		views |= 1 << VIEW_LEAKS;
	if (session_group_recorded(&s, "faults") || session_group_recorded(&s, "swap"))
		views |= 1 << VIEW_FAULTS;
	if (session_group_recorded(&s, "brk"))
		views |= 1 << VIEW_BRK;
	if (session_group_recorded(&s, "reclaim"))
		views |= 1 << VIEW_RECLAIM;
	session_release(&s);
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->views = views;
	if (!t->view_arg)
		t->view = __builtin_ctz(views);
}

/* What /proc/PID/stat says of a process: its name, its faults, its CPU
 * time in clock ticks, when it started (ticks after boot); and its
 * resident bytes. Returns 0, or -1 when it is gone, exiting or
 * unreadable. */
struct pstat {
	char comm[64];
	unsigned long long faults, ticks, start, rss;
};

/* VmRSS of /proc/PID/status in bytes, or fallback: the kernel sums its
 * per-CPU counters there, where stat's resident pages may be a batch of
 * pages behind. */
static unsigned long long status_rss(int pid, unsigned long long fallback)
{
	char path[64], line[128];
	unsigned long long kib, rss = fallback;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %llu kB", &kib) == 1) {
			rss = kib * 1024;
			break;
		}
	if (f)
		fclose(f);
	return rss;
}

static int pstat_read(int pid, struct pstat *ps)
{
	unsigned long long minflt, majflt, utime, stime;
	char path[64], buf[1024], *l, *r, state;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	l = strchr(buf, '(');
	r = strrchr(buf, ')');
	if (!l || !r || r < l || (size_t)(r - l - 1) >= sizeof(ps->comm))
		return -1;
	memcpy(ps->comm, l + 1, r - l - 1);
	ps->comm[r - l - 1] = 0;
	/* From the state, field 3, to the resident pages, field 24. */
	if (sscanf(r + 1, " %c %*d %*d %*d %*d %*d %*u %llu %*u %llu %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %*u %llu",
		   &state, &minflt, &majflt, &utime, &stime, &ps->start, &ps->rss) != 7)
		return -1;
	/* A zombie's memory is gone, and so is the process. */
	if (state == 'Z' || state == 'X')
		return -1;
	ps->faults = minflt + majflt;
	ps->ticks = utime + stime;
	ps->rss = status_rss(pid, ps->rss * sysconf(_SC_PAGESIZE));
	return 0;
}

static double ts_since(const struct timespec *then, const struct timespec *now)
{
	return (now->tv_sec - then->tv_sec) + (now->tv_nsec - then->tv_nsec) / 1e9;
}

/* The pid holding the write lock on the file st describes: its recorder
 * (record/write/output.c takes the lock), 0 when none is seen from here. */
static int top_lock_holder(const struct stat *st)
{
	FILE *f = fopen("/proc/locks", "re");
	char line[256];
	int pid = 0;

	while (f && !pid && fgets(line, sizeof(line), f)) {
		const char *w = strstr(line, " WRITE ");
		unsigned maj, min;
		unsigned long long ino;
		int p;

		if (w && strstr(line, "FLOCK") && sscanf(w + 7, "%d %x:%x:%llu", &p, &maj, &min, &ino) == 4 && p > 0 &&
		    maj == major(st->st_dev) && min == minor(st->st_dev) && ino == st->st_ino)
			pid = p;
	}
	if (f)
		fclose(f);
	return pid;
}

/* The recorder's CPU share since the last look (since it started, at the
 * first), from its clock ticks. */
static void top_recorder_update(struct top *t, const struct stat *st)
{
	long hz = sysconf(_SC_CLK_TCK);
	int pid = top_lock_holder(st);
	struct timespec now;
	struct pstat ps;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!pid || pstat_read(pid, &ps)) {
		t->recorder = 0;
		return;
	}
	if (pid == t->recorder && ts_since(&t->rec_seen, &now) > 0) {
		t->rec_cpu = (ps.ticks - t->rec_ticks) / (double)hz / ts_since(&t->rec_seen, &now);
	} else {
		/* The start time counts from boot, as CLOCK_BOOTTIME does. */
		struct timespec boot;
		double up;

		clock_gettime(CLOCK_BOOTTIME, &boot);
		up = boot.tv_sec + boot.tv_nsec / 1e9 - (double)ps.start / hz;
		t->rec_cpu = up > 0 ? ps.ticks / (double)hz / up : -1;
	}
	t->recorder = pid;
	t->rec_rss = ps.rss;
	t->rec_ticks = ps.ticks;
	t->rec_seen = now;
}

/* The bytes a process holds outstanding, from the leak table's text:
 * its line under "outstanding by process" when the table has more than
 * one process; else the table's total, all of one process's then, when
 * the header counts what is outstanding (not what a scan found lost).
 * -1 when the table does not say. */
static long long top_heap_of(const char *out, int pid)
{
	static const char by_proc[] = "\n# outstanding by process:\n";
	const char *nl = strchrnul(out, '\n'), *p, *tag;
	unsigned long long bytes;

	if ((p = strstr(out, by_proc))) {
		/* The line's first "(pid ": the name after it may hold another. */
		for (p += sizeof(by_proc) - 1; !strncmp(p, "#\t", 2); p = *nl ? nl + 1 : nl) {
			nl = strchrnul(p, '\n');
			tag = memmem(p, nl - p, "(pid ", 5);
			if (sscanf(p + 2 + (p[2] == '~'), "%llu bytes in ", &bytes) == 1 && tag && atoi(tag + 5) == pid)
				return bytes;
		}
		return -1;
	}
	if (strncmp(out, "# memsight leaks of '", 21) || !memmem(out, nl - out, " outstanding from ", 18))
		return -1;
	/* The path in quotes may hold anything: the count follows its end. */
	for (p = nl; p > out; p--)
		if (!strncmp(p, "': ", 3) && sscanf(p + 3, "%llu bytes in ", &bytes) == 1)
			return bytes;
	return -1;
}

/* The processes the view names, "(pid N COMM)" in its stacks' lines, in
 * the view's order: those still running under that name are looked at
 * in /proc (a pid reused by another program is not theirs). */
static void top_procs_update(struct top *t, const char *out)
{
	struct top_proc next[TOP_PROCS];
	struct timespec now;
	int n = 0;

	clock_gettime(CLOCK_MONOTONIC, &now);
	for (const char *p = out; p && n < TOP_PROCS && (p = strstr(p, "(pid ")); p += 5) {
		const char *nl, *close;
		struct top_proc *tp = &next[n];
		struct pstat ps;
		char *end;
		long pid = strtol(p + 5, &end, 10);
		int known = 0;

		if (pid <= 0 || pid > INT_MAX || *end != ' ')
			continue;
		nl = strchrnul(end, '\n');
		close = memrchr(end, ')', nl - end);
		if (!close || (size_t)(close - end - 1) >= sizeof(tp->comm))
			continue;
		for (int k = 0; k < n; k++)
			known |= next[k].pid == pid;
		if (known || pstat_read(pid, &ps) || strlen(ps.comm) != (size_t)(close - end - 1) ||
		    memcmp(ps.comm, end + 1, close - end - 1))
			continue;
		*tp = (struct top_proc){ .pid = pid, .start = ps.start, .faults_rate = -1, .rss0 = ps.rss,
					 .heap = t->view == VIEW_LEAKS ? top_heap_of(out, pid) : -1 };
		snprintf(tp->comm, sizeof(tp->comm), "%s", ps.comm);
		for (int k = 0; k < t->nr_seen; k++) {
			const struct top_proc *old = &t->seen[k];

			if (old->pid != pid || old->start != ps.start)
				continue;
			tp->rss0 = old->rss0;
			if (ts_since(&old->seen, &now) > 0 && ps.faults >= old->faults)
				tp->faults_rate = (ps.faults - old->faults) / ts_since(&old->seen, &now);
		}
		tp->rss = ps.rss;
		tp->faults = ps.faults;
		tp->seen = now;
		n++;
	}
	memcpy(t->procs, next, n * sizeof(*next));
	t->nr_procs = n;
	/* Into the seen, replacing the same process or else the one seen
	 * longest ago. */
	for (int i = 0; i < n; i++) {
		int k = 0, oldest = 0;

		while (k < t->nr_seen && (t->seen[k].pid != next[i].pid || t->seen[k].start != next[i].start))
			k++;
		if (k == t->nr_seen && t->nr_seen < TOP_SEEN)
			t->nr_seen++;
		else if (k == t->nr_seen)
			for (k = oldest = 0; k < TOP_SEEN; k++)
				if (ts_since(&t->seen[k].seen, &t->seen[oldest].seen) > 0)
					oldest = k;
		t->seen[k < t->nr_seen ? k : oldest] = next[i];
	}
}

/* Append to buf as printf would, never past len. */
static void __attribute__((format(printf, 4, 5))) buf_add(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (*n >= len)
		return;
	va_start(ap, fmt);
	r = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	*n = r < 0 ? *n : *n + r < len ? *n + r : len - 1;
}

/* What top adds above the view while the recording goes on: the
 * recorder's line, then the processes' table. */
static void top_panel(const struct top *t, const struct stat *st, char *buf, size_t len)
{
	char a[32], b[32];
	size_t n = 0;

	buf[0] = 0;
	fmt_bytes(st->st_size, b, sizeof(b));
	if (!t->recorder) {
		/* The lock held by no process seen here: one of another pid
		 * namespace, or none since the view was read. */
		buf_add(buf, len, &n, "recorder: %s; trace %s",
			replace_live(t->path) ? "its process is not visible from here" : "it has just ended", b);
	} else {
		buf_add(buf, len, &n, "recorder: pid %d", t->recorder);
		if (t->rec_cpu >= 0)
			buf_add(buf, len, &n, ", %.1f%% of a CPU", 100 * t->rec_cpu);
		buf_add(buf, len, &n, ", %s resident; trace %s", fmt_bytes(t->rec_rss, a, sizeof(a)), b);
	}
	/* What the trace read holds: the kernel says what it lost once it
	 * has room again, and the recorder writes that within a second. */
	if (t->lost >= 0)
		buf_add(buf, len, &n, ", %lld events lost %s", t->lost, t->lost_window ? "in its window" : "so far");
	buf_add(buf, len, &n, "\n");
	if (t->nr_procs)
		buf_add(buf, len, &n, "%8s %-16s %10s %11s %9s%s\n", "PID", "COMM", "RSS", "CHANGE", "FAULTS/s",
			t->view == VIEW_LEAKS ? "       HEAP" : "");
	for (int i = 0; i < t->nr_procs; i++) {
		const struct top_proc *p = &t->procs[i];
		char d[40], r[24], h[32] = "-";

		fmt_bytes(p->rss > p->rss0 ? p->rss - p->rss0 : p->rss0 - p->rss, a, sizeof(a));
		snprintf(d, sizeof(d), "%s%s", p->rss == p->rss0 ? "" : p->rss > p->rss0 ? "+" : "-", a);
		if (p->faults_rate < 0)
			snprintf(r, sizeof(r), "-");
		else
			snprintf(r, sizeof(r), "%.0f", p->faults_rate);
		if (p->heap >= 0)
			fmt_bytes(p->heap, h, sizeof(h));
		buf_add(buf, len, &n, "%8d %-16s %10s %11s %9s", p->pid, p->comm, fmt_bytes(p->rss, b, sizeof(b)), d, r);
		if (t->view == VIEW_LEAKS)
			buf_add(buf, len, &n, " %10s", h);
		buf_add(buf, len, &n, "\n");
	}
	/* Process names come from the programs watched: cleaned as every
	 * other text bound for a terminal. */
	termsafe_clean(buf, n, TERMSAFE_NEWLINES);
}

static double ts_since(const struct timespec *then, const struct timespec *now);

/* Seconds to the next refresh: the interval asked, stretched so that top
 * and the reads it ran, all the CPU time they took since top started,
 * stay at most --max-cpu percent of the time gone by then. Counted from
 * the start, not read by read: a trace that grows makes each read dearer
 * than the one before. */
static double top_interval(const struct top *t)
{
	struct rusage self, children;
	struct timespec now;
	double least;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* A follower still running is in no rusage yet: what it said. */
	least = (rusage_secs(&self) + rusage_secs(&children) + (t->fw.pid ? t->fw.cpu : 0)) * 100 / t->max_cpu -
		ts_since(&t->start, &now);
	return least > t->delay ? least : t->delay;
}

static void top_header(const struct top *t, int live, char *buf, size_t len)
{
	char when[16], stretch[160] = "", only[300] = "", window[64] = "";
	time_t now = time(NULL);
	double every = t->every;

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	if (t->view != VIEW_LEAKS && t->last)
		snprintf(window, sizeof(window), " of the last %.3g s", t->last_secs);
	if (every >= t->delay + 0.05)
		snprintf(stretch, sizeof(stretch), "; stretched from %.1f s to keep under %llu%% of a CPU (a read takes %.2f s)",
			 t->delay, (unsigned long long)t->max_cpu, t->cost);
	if (t->pid || t->comm)
		snprintf(only, sizeof(only), "; only %s%s%s%s", t->pid ? "pid " : "", t->pid ? t->pid : "",
			 t->pid && t->comm ? ", " : "", t->comm ? t->comm : "");
	snprintf(buf, len, "memsight top %s: '%s' %s; every %.1f s, %s%s%s%s%s%s", when, t->path,
		 live ? "being recorded" : "(recording ended)", every, view_names[t->view],
		 t->view != VIEW_LEAKS ? "" : t->by_size ? " by size" : " by growth", window, only, stretch,
		 t->paused ? "; PAUSED" : "");
	/* The path is the one thing top prints that its child did not clean;
	 * it goes to a terminal as the rest does. */
	termsafe_clean(buf, strlen(buf), 0);
}

/* Row *row of the screen: at most cols columns of s, tabs to the next
 * multiple of 8, cleared to the line's end. No newline after the last
 * row, or the screen would scroll. */
static void term_row(int *row, const char *s, size_t len, int cols, int selected)
{
	int col = 0;

	if ((*row)++)
		fputs("\r\n", stdout);
	if (selected)
		fputs("\033[7m", stdout);
	for (size_t i = 0; i < len && col < cols; i++) {
		if (s[i] == '\t') {
			do
				putchar(' ');
			while (++col % 8 && col < cols);
		} else {
			putchar(s[i]);
			/* A UTF-8 continuation byte takes no column. */
			col += ((unsigned char)s[i] & 0xc0) != 0x80;
		}
	}
	if (selected)
		fputs("\033[27m", stdout);
	fputs("\033[K", stdout);
}

/* Rows of text from s, from its line skip on, while the screen has room;
 * its line sel (-1: none) in reverse video. */
static void term_rows(int *row, int rows, const char *s, int cols, int skip, int sel)
{
	for (int line = 0; s && *s && *row < rows; line++) {
		const char *nl = strchrnul(s, '\n');

		if (line >= skip)
			term_row(row, s, nl - s, cols, line == sel);
		s = *nl ? nl + 1 : nl;
	}
}

/* The view v shows next: the next the trace has events for. */
static int view_next(const struct top *t)
{
	for (int k = 1; k <= NR_VIEWS; k++)
		if ((t->views ? t->views : ~0) & 1 << (t->view + k) % NR_VIEWS)
			return (t->view + k) % NR_VIEWS;
	return t->view;
}

/* Columns of indentation at the start of a line, a tab to the next 8. */
static int line_indent(const char *l, const char *end)
{
	int col = 0;

	for (; l < end && (*l == ' ' || *l == '\t'); l++)
		col = *l == '\t' ? (col + 8) & ~7 : col + 1;
	return l < end ? col : INT_MAX;
}

/* What identifies a stack from one read to the next: the process its
 * first line names and its frames (the lines with an object in
 * brackets), not its figures, which change. */
static uint64_t stack_key(const char *head, const char *head_end, const char *body, const char *end)
{
	uint64_t h = 14695981039346656037ull;
	const char *pid = memmem(head, head_end - head, "(pid ", 5);

	for (const char *c = pid; c && c < head_end; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	for (const char *l = body; l < end;) {
		const char *nl = memchr(l, '\n', end - l);

		nl = nl ? nl : end;
		if (memmem(l, nl - l, " [", 2))
			for (const char *c = l; c < nl; c++)
				h = (h ^ (unsigned char)*c) * 1099511628211ull;
		l = nl + 1;
	}
	return h;
}

static int stack_toggled(const struct top *t, uint64_t key)
{
	for (int i = 0; i < t->nr_toggled; i++)
		if (t->toggled[i] == key)
			return i;
	return -1;
}

/* The view's text as the terminal shows it: each stack (a line naming a
 * process, "(pid N COMM)", over lines indented deeper: its frames, and
 * for leaks when it was made) whole or folded to its first lines. The
 * line of the selected stack goes in *sel_line (-1: none); its key in
 * *sel_key. NULL when out of memory. */
static char *top_fold(struct top *t, const char *out, int *sel_line, uint64_t *sel_key)
{
	/* A folded stack's "more" line, as far in as the line above it, in
	 * place of at least two lines: the text at most doubles, plus some
	 * bytes a stack (and each stack takes more than 16). */
	size_t len = 4 * strlen(out) + 64, n = 0;
	char *v = malloc(len);
	int line = 0, stack = 0;

	*sel_line = -1;
	if (!v)
		return NULL;
	for (const char *l = out; *l;) {
		const char *nl = strchrnul(l, '\n'), *body = *nl ? nl + 1 : nl, *b = body;
		int ind = line_indent(l, nl), lines = 0, bi;

		/* Its body: the lines after it indented deeper (a blank line,
		 * INT_MAX, ends it). */
		while (*b && (bi = line_indent(b, strchrnul(b, '\n'))) > ind && bi != INT_MAX) {
			b = strchrnul(b, '\n');
			b += *b != 0;
			lines++;
		}
		if (!lines || !memmem(l, nl - l, "(pid ", 5)) {
			memcpy(v + n, l, body - l);
			n += body - l;
			line++;
			l = body;
			continue;
		}
		uint64_t key = stack_key(l, nl, body, b);
		int folded = t->fold_all ^ (stack_toggled(t, key) >= 0), keep = lines;
		const char *last = body;

		if (stack == t->sel) {
			*sel_line = line;
			*sel_key = key;
		}
		stack++;
		memcpy(v + n, l, body - l);
		n += body - l;
		line++;
		/* Folded: its first lines, then how many more it has. */
		if (folded && lines > TOP_FOLD_LINES + 1)
			keep = TOP_FOLD_LINES;
		for (const char *c = body; keep--; line++) {
			const char *e = strchrnul(c, '\n');

			e += *e != 0;
			memcpy(v + n, c, e - c);
			n += e - c;
			last = c;
			c = e;
		}
		/* Under the last line kept, as far in. */
		if (folded && lines > TOP_FOLD_LINES + 1) {
			int w = snprintf(v + n, len - n, "%.*s... %d more\n", (int)strspn(last, " \t"), last,
					 lines - TOP_FOLD_LINES);

			n += w > 0 && (size_t)w < len - n ? (size_t)w : 0;
			line++;
		}
		l = b;
	}
	v[n] = 0;
	t->nr_stacks = stack;
	return v;
}

static void term_draw(struct top *t, const char *header, const char *panel, const char *out, const char *msg)
{
	struct winsize ws = { 0 };
	char keys[256], *shown;
	int row = 0, sel = -1, skip = 0;
	uint64_t key = 0;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || !ws.ws_row || !ws.ws_col)
		ws.ws_row = 24, ws.ws_col = 80;
	snprintf(keys, sizeof(keys),
		 "q quits, %s, v shows %s%s, f filters, + - more or fewer stacks, up down Enter fold one, e %s all",
		 t->paused ? "p resumes" : "p pauses", view_names[view_next(t)],
		 t->view != VIEW_LEAKS ? "" : t->by_size ? ", s sorts by growth" : ", s sorts by size",
		 t->fold_all ? "unfolds" : "folds");
	shown = top_fold(t, out, &sel, &key);
	if (t->sel >= t->nr_stacks && t->nr_stacks) {
		t->sel = t->nr_stacks - 1;
		free(shown);
		shown = top_fold(t, out, &sel, &key);
	}
	t->sel_key = key;
	fputs("\033[H", stdout);
	term_rows(&row, ws.ws_row, header, ws.ws_col, 0, -1);
	term_rows(&row, ws.ws_row, keys, ws.ws_col, 0, -1);
	term_rows(&row, ws.ws_row, panel, ws.ws_col, 0, -1);
	term_rows(&row, ws.ws_row, msg, ws.ws_col, 0, -1);
	/* The selected stack's first line stays on the screen, with a line
	 * under it. */
	if (sel >= 0 && row + sel + 2 > ws.ws_row)
		skip = row + sel + 2 - ws.ws_row;
	term_rows(&row, ws.ws_row, shown ? shown : out, ws.ws_col, skip, sel);
	free(shown);
	fputs("\033[J", stdout);
	fflush(stdout);
}

/* The first line of what the child said, when it failed. */
static const char *first_line(char *s)
{
	char *nl = s ? strchr(s, '\n') : NULL;

	if (nl)
		*nl = 0;
	return s ? s : "";
}

/* f: the pids or names to keep, typed on the keys' row (Enter keeps
 * them, an empty line keeps all, Esc leaves the filter as it was): pids
 * when all of it is digits and commas, names otherwise. 1 when the
 * filter changed. */
static int term_filter(struct top *t)
{
	char buf[sizeof(t->filter)] = "";
	size_t n = 0;
	char c;

	for (;;) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };

		printf("\033[2;1H\033[Kkeep pids or names, comma-separated (Enter: empty for all; Esc: as it was): %s\033[?25h",
		       buf);
		fflush(stdout);
		if (top_stopped)
			break;
		if (poll(&p, 1, -1) <= 0 || read(STDIN_FILENO, &c, 1) != 1)
			continue;
		if (c == '\r' || c == '\n') {
			fputs("\033[?25l", stdout);
			memcpy(t->filter, buf, n + 1);
			t->pid = n && strspn(buf, "0123456789,") == n ? t->filter : NULL;
			t->comm = n && !t->pid ? t->filter : NULL;
			return 1;
		}
		if (c == 27)
			break;
		if ((c == 127 || c == 8) && n)
			buf[--n] = 0;
		else if ((unsigned char)c >= 32 && c != 127 && n + 1 < sizeof(buf))
			buf[n++] = c, buf[n] = 0;
	}
	fputs("\033[?25l", stdout);
	return 0;
}

/* Waits up to ms for keys; 1 when one asks for the view read again (the
 * sort, the view, the filter or the stacks shown changed). */
static int term_keys(struct top *t, int ms)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	int again = 0;
	char c;

	if (poll(&p, 1, ms) <= 0)
		return 0;
	while (read(STDIN_FILENO, &c, 1) == 1) {
		if (c == 'q' || c == 'Q' || c == 3)
			top_stopped = 1;
		else if ((c == 's' || c == 'S') && t->view == VIEW_LEAKS)
			t->by_size = !t->by_size, again = 1;
		else if (c == 'v' || c == 'V')
			t->view = view_next(t), again = 1;
		else if (c == 'p' || c == 'P' || c == ' ')
			t->paused = !t->paused;
		else if (c == 'f' || c == 'F')
			again |= term_filter(t);
		else if (c == '+' && t->top < 1000)
			t->top++, again = 1;
		else if (c == '-' && t->top > 1)
			t->top--, again = 1;
		else if (c == 'j' || c == 'k' || c == 27) {
			char seq[2];

			/* The arrows: ESC [ A and ESC [ B. */
			if (c == 27 && (read(STDIN_FILENO, seq, 2) != 2 || seq[0] != '[' || (seq[1] != 'A' && seq[1] != 'B')))
				continue;
			if (c == 'j' || (c == 27 && seq[1] == 'B'))
				t->sel += t->sel + 1 < t->nr_stacks;
			else
				t->sel -= t->sel > 0;
			/* Drawn before the next key: Enter folds the stack
			 * the drawing names. */
			t->redraw = 1;
			break;
		} else if ((c == '\r' || c == '\n') && t->nr_stacks) {
			int i = stack_toggled(t, t->sel_key);

			if (i >= 0)
				t->toggled[i] = t->toggled[--t->nr_toggled];
			else if (t->nr_toggled < TOP_TOGGLED)
				t->toggled[t->nr_toggled++] = t->sel_key;
			t->redraw = 1;
		} else if (c == 'e' || c == 'E') {
			t->fold_all = !t->fold_all;
			t->nr_toggled = 0;
			t->redraw = 1;
		}
	}
	return again;
}

/* The wait for the next refresh (at next), a fifth of a second at a
 * time. 1 when the view is to be read: its time has come (unless
 * paused), a key asked for it (at a terminal), or the recording ended or
 * a new one began on the path, which the next refresh shows at once
 * rather than an interval later (a stretched interval can be long). 0
 * when the screen is only to be drawn again: pause pressed, the window
 * resized, the recording's state changed while paused. */
static int top_wait(struct top *t, int live, const struct timespec *next)
{
	struct winsize ws0 = { 0 }, ws = { 0 };

	if (t->tty)
		ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws0);
	while (!top_stopped) {
		int paused = t->paused;
		struct timespec now;
		double left;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = ts_since(&now, next);
		if (left <= 0 && !paused)
			return 1;
		if (left <= 0 || left > 0.2)
			left = 0.2;
		if (t->tty) {
			if (term_keys(t, (int)(left * 1000) + 1))
				return 1;
			ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
			if (t->paused != paused || t->redraw || ws.ws_row != ws0.ws_row || ws.ws_col != ws0.ws_col) {
				t->redraw = 0;
				return 0;
			}
		} else {
			nanosleep(&(struct timespec){ 0, (long)(left * 1e9) }, NULL);
		}
		if (replace_live(t->path) != live)
			return !t->paused;
	}
	return 0;
}

/* The panel above the view: while the recording goes on, what /proc says
 * now; under it, live or not, what the view's command warned of (events
 * lost, a ring's window moved on), but that the trace is live, which the
 * header says. */
static void top_look(struct top *t, int live, const char *out, const char *err, char *panel, size_t len)
{
	static const char speaker[] = "memsight top: ";
	struct stat st;
	size_t n = 0;

	panel[0] = 0;
	if (live && !stat(t->path, &st)) {
		top_recorder_update(t, &st);
		top_procs_update(t, out);
		top_panel(t, &st, panel, len);
		n = strlen(panel);
	}
	for (const char *l = err; l && *l;) {
		const char *nl = strchrnul(l, '\n');

		if (!strncmp(l, speaker, sizeof(speaker) - 1))
			l += sizeof(speaker) - 1;
		if (!memmem(l, nl - l, "is still being recorded", 23))
			buf_add(panel, len, &n, "%.*s\n", (int)(nl - l), l);
		l = *nl ? nl + 1 : nl;
	}
}

static int top_loop(struct top *t)
{
	char header[PATH_MAX + 128], panel[2048] = "", *out = NULL, *err = NULL;
	int status = 0, again = 1, ret = 0;
	struct timespec next;
	uint64_t runs = 0;

	clock_gettime(CLOCK_MONOTONIC, &t->start);
	while (!top_stopped) {
		int live = replace_live(t->path);

		if (again) {
			if (t->iterations && runs == t->iterations)
				break;
			free(out);
			free(err);
			top_views_pick(t);
			status = top_run(t, &out, &err);
			if (status < 0) {
				msg_error("cannot run %s on '%s': %s", view_names[t->view], t->path, strerror(errno));
				ret = 1;
				break;
			}
			top_look(t, live, status ? "" : out, err, panel, sizeof(panel));
			runs++;
			t->every = top_interval(t);
			clock_gettime(CLOCK_MONOTONIC, &next);
			next.tv_sec += (time_t)t->every;
			next.tv_nsec += (long)((t->every - (time_t)t->every) * 1e9);
			if (next.tv_nsec >= 1000000000)
				next.tv_sec++, next.tv_nsec -= 1000000000;
		}
		top_header(t, live, header, sizeof(header));
		if (t->tty) {
			char said[128];

			/* A trace not there yet is said, and looked for again. */
			snprintf(said, sizeof(said), "%s of the trace ended in error and said nothing", view_names[t->view]);
			term_draw(t, header, panel, status ? "" : out, !status ? "" : *first_line(err) ? err : said);
			again = top_wait(t, live, &next);
			continue;
		}
		if (status) {
			const char *why = first_line(err);

			if (!*why)
				msg_error("%s of '%s' ended with status %d and said nothing", view_names[t->view], t->path,
					  status);
			else
				msg_error("%s", strncmp(why, "memsight top: ", 14) ? why : why + 14);
			ret = status;
			break;
		}
		/* The last table is what the view's command prints of the
		 * finished trace, and what it says of it goes where it would. */
		if (!live) {
			printf("%s\n%s\n", header, out);
			fflush(stdout);
			fputs(err, stderr);
			break;
		}
		printf("%s\n%s%s%s\n", header, panel, *panel ? "\n" : "", out);
		fflush(stdout);
		/* The last table asked for: nothing is left to wait for. */
		if (t->iterations && runs == t->iterations)
			break;
		again = top_wait(t, live, &next);
	}
	free(out);
	free(err);
	return ret;
}

int cmd_top(int argc, char **argv, struct analyze_opts *a)
{
	struct top t = { .delay = 1, .top = 10, .max_cpu = 10, .last = "10s" };
	const struct opt options[] = {
		OPT_STRING('d', "delay", &t.delay_arg, "SECS", "seconds between refreshes (default 1; at least 0.1)"),
		OPT_U64('n', "iterations", &t.iterations, "N", "refreshes before leaving (default: until q, or the end of "
								"the\nrecording when not at a terminal)"),
		OPT_U64('T', "top", &t.top, "N", "stacks shown (default 10)"),
		OPT_U64(0, "max-cpu", &t.max_cpu, "PCT",
			"top, its reads of the trace included, takes at most PCT% of\none CPU: past that it waits longer (default 10; 100: never)"),
		OPT_STRING(0, "last", &t.last, "SECS",
			   "the faults, brk, reclaim and report views count the last SECS\nseconds (default 10s; 0: all of the recording)"),
		OPT_STRING(0, "view", &t.view_arg, "VIEW",
			   "leaks, faults, brk, reclaim or report (default: the first of\nthose the trace has events for)"),
		OPT_STRING(0, "pid", &t.pid, "PID", "only these processes (comma-separated)"),
		OPT_STRING(0, "comm", &t.comm, "NAME", "only the processes of these names (comma-separated)"),
		OPT_STRING('i', "input", &t.path, "FILE",
			   "the trace to read, as FILE (default: ./memsight.trace, the\nrecorder's default output)"),
		OPT_END(),
	};
	struct sigaction sa = { .sa_handler = top_signal };
	int r = opts_parse(argc, argv, options, usage_text, a), ret;

	if (r >= 0)
		return r;
	if (optind < argc)
		t.path = argv[optind++];
	if (optind < argc) {
		msg_error("give one trace file (see memsight top -h)");
		return 2;
	}
	if (!t.path)
		t.path = "memsight.trace";
	if (t.delay_arg) {
		char *end;

		t.delay = strtod(t.delay_arg, &end);
		if (*end || end == t.delay_arg || !(t.delay >= 0.1 && t.delay <= 3600)) {
			msg_error("invalid delay '%s' for -d: give seconds from 0.1 to 3600, e.g. -d 2", t.delay_arg);
			return 2;
		}
	}
	if (!t.top)
		t.top = 10;
	if (!t.max_cpu || t.max_cpu > 100) {
		msg_error("invalid --max-cpu %llu: give a percentage of one CPU from 1 to 100, e.g. --max-cpu 20",
			  (unsigned long long)t.max_cpu);
		return 2;
	}
	if (t.last) {
		if (opts_seconds(t.last, strlen(t.last), &t.last_secs) || !(t.last_secs >= 0))
			return msg_error("invalid --last '%s': give seconds, 0 for all of the recording, e.g. --last 30",
					 t.last), 2;
		if (t.last_secs == 0)
			t.last = NULL;
	}
	if (t.view_arg) {
		for (t.view = 0; t.view < NR_VIEWS && strcmp(view_names[t.view], t.view_arg); t.view++)
			;
		if (t.view == NR_VIEWS) {
			msg_error("unknown view '%s' for --view: give leaks, faults, brk, reclaim or report", t.view_arg);
			return 2;
		}
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	t.tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) && !term_raw(&t);
	ret = top_loop(&t);
	follower_end(&t);
	term_restore(&t);
	return ret;
}
