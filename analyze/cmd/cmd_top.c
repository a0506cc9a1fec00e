/*
 * analyze/cmd/cmd_top.c: memsight top, the leak table of a trace while it
 * is recorded, read again every interval.
 *
 * A refresh runs this program's own leaks command in a child, on the
 * trace as far as its recorder has written it (a live trace reads so:
 * formats/trace.h), with the child's output and messages in memory files,
 * and shows them: at a terminal redrawn in place on the alternate screen,
 * with keys; elsewhere one table a refresh, as vmstat prints, until the
 * recording has ended. So what top shows is what leaks prints of the same
 * bytes. The child reads the whole trace each time: a refresh costs what
 * leaks costs on the trace so far, and grows with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "../../formats/msg.h"
#include "../../formats/replace.h"
#include "../../formats/termsafe.h"

static const char usage_text[] =
	"usage: memsight top [options] [FILE]\n"
	"\n"
	"The leak table of a trace while it is recorded (record -e malloc), read\n"
	"again every interval as far as the recorder has written it, the stacks\n"
	"whose outstanding bytes grow fastest first. At a terminal it redraws in\n"
	"place: q quits, s sorts by growth or by size, p pauses. Elsewhere it\n"
	"prints one table per interval until the recording ends.\n";

struct top {
	const char *path, *pid, *comm, *delay_arg;
	double delay;
	uint64_t top, iterations;
	int by_size, paused, tty, raw;
	struct termios saved;
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

/* leaks of the trace in a child, its output in *out and its messages in
 * *err; the child's exit status, or -1 when it could not run. */
static int top_run(const struct top *t, char **out, char **err)
{
	FILE *fo = memfile("memsight-top-out"), *fe = memfile("memsight-top-err");
	const char *argv[16];
	size_t len;
	char n[32];
	int ac = 0, status = -1;
	pid_t pid;

	*out = *err = NULL;
	if (!fo || !fe)
		goto done;
	snprintf(n, sizeof(n), "%llu", (unsigned long long)t->top);
	argv[ac++] = "memsight-analyze";
	argv[ac++] = "leaks";
	argv[ac++] = "--sort";
	argv[ac++] = t->by_size ? "size" : "growth";
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
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null < 0 || dup2(null, 0) < 0 || dup2(fileno(fo), 1) < 0 || dup2(fileno(fe), 2) < 0)
			_exit(127);
		setenv("MEMSIGHT_SPEAKER", "memsight top", 1);
		execv("/proc/self/exe", (char **)argv);
		_exit(127);
	}
	if (pid < 0)
		goto done;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	*out = cmd_slurp(fo, &len);
	*err = cmd_slurp(fe, &len);
done:
	if (fo)
		fclose(fo);
	if (fe)
		fclose(fe);
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

static void top_header(const struct top *t, int live, char *buf, size_t len)
{
	char when[16];
	time_t now = time(NULL);

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	snprintf(buf, len, "memsight top %s: '%s' %s; every %.1f s, by %s%s", when, t->path,
		 live ? "being recorded" : "(recording ended)", t->delay, t->by_size ? "size" : "growth",
		 t->paused ? "; PAUSED" : "");
	/* The path is the one thing top prints that its leaks child did not
	 * clean; it goes to a terminal as the rest does. */
	termsafe_clean(buf, strlen(buf), 0);
}

/* Row *row of the screen: at most cols columns of s, tabs to the next
 * multiple of 8, cleared to the line's end. No newline after the last
 * row, or the screen would scroll. */
static void term_row(int *row, const char *s, size_t len, int cols)
{
	int col = 0;

	if ((*row)++)
		fputs("\r\n", stdout);
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
	fputs("\033[K", stdout);
}

/* Rows of text from s, while the screen has room. */
static void term_rows(int *row, int rows, const char *s, int cols)
{
	while (s && *s && *row < rows) {
		const char *nl = strchrnul(s, '\n');

		term_row(row, s, nl - s, cols);
		s = *nl ? nl + 1 : nl;
	}
}

static void term_draw(const struct top *t, const char *header, const char *out, const char *msg)
{
	struct winsize ws = { 0 };
	int row = 0;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || !ws.ws_row || !ws.ws_col)
		ws.ws_row = 24, ws.ws_col = 80;
	fputs("\033[H", stdout);
	term_rows(&row, ws.ws_row, header, ws.ws_col);
	term_rows(&row, ws.ws_row,
		  t->paused ? "p resumes, s sorts by growth or size, q quits" : "p pauses, s sorts by growth or size, q quits",
		  ws.ws_col);
	term_rows(&row, ws.ws_row, msg, ws.ws_col);
	term_rows(&row, ws.ws_row, out, ws.ws_col);
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

/* Waits up to ms for keys; 1 when one asks for a table read again (the
 * sort changed). */
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
		else if (c == 's' || c == 'S')
			t->by_size = !t->by_size, again = 1;
		else if (c == 'p' || c == 'P' || c == ' ')
			t->paused = !t->paused;
	}
	return again;
}

static int top_loop(struct top *t)
{
	char header[PATH_MAX + 128], *out = NULL, *err = NULL;
	int status = 0, again = 1, ret = 0;
	uint64_t runs = 0;

	while (!top_stopped) {
		int live = replace_live(t->path);

		if (again || !t->paused) {
			if (t->iterations && runs == t->iterations)
				break;
			free(out);
			free(err);
			status = top_run(t, &out, &err);
			if (status < 0) {
				msg_error("cannot run leaks on '%s': %s", t->path, strerror(errno));
				ret = 1;
				break;
			}
			runs++;
		}
		top_header(t, live, header, sizeof(header));
		if (t->tty) {
			/* A trace not there yet is said, and looked for again. */
			term_draw(t, header, status ? "" : out,
				  !status ? "" : *first_line(err) ? err : "leaks of the trace ended in error and said nothing");
			again = term_keys(t, (int)(t->delay * 1000));
			continue;
		}
		if (status) {
			const char *why = first_line(err);

			if (!*why)
				msg_error("leaks of '%s' ended with status %d and said nothing", t->path, status);
			else
				msg_error("%s", strncmp(why, "memsight top: ", 14) ? why : why + 14);
			ret = status;
			break;
		}
		printf("%s\n%s\n", header, out);
		fflush(stdout);
		if (!live)
			break;
		for (double left = t->delay; left > 0 && !top_stopped; left -= 0.1)
			nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
		again = 0;
	}
	free(out);
	free(err);
	return ret;
}

int cmd_top(int argc, char **argv, struct analyze_opts *a)
{
	struct top t = { .delay = 1, .top = 10 };
	const struct opt options[] = {
		OPT_STRING('d', "delay", &t.delay_arg, "SECS", "seconds between refreshes (default 1; at least 0.1)"),
		OPT_U64('n', "iterations", &t.iterations, "N", "refreshes before leaving (default: until q, or the end of "
								"the\nrecording when not at a terminal)"),
		OPT_U64('T', "top", &t.top, "N", "stacks shown (default 10)"),
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
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	t.tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) && !term_raw(&t);
	ret = top_loop(&t);
	term_restore(&t);
	return ret;
}
