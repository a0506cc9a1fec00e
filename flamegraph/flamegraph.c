/*
 * flamegraph/flamegraph.c: memsight-flamegraph, folded stacks in, SVG out.
 *
 * Owns the command: its options, reading Brendan Gregg's folded format
 * from a file or standard input (folded.c builds the tree), so it draws
 * what perf, bpftrace or stackcount produced as well as memsight's own.
 * Given a memsight trace instead, it runs `memsight-analyze folded` on it
 * (this program links nothing but libc) and reads that.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../formats/msg.h"
#include "../formats/opts.h"
#include "../formats/sibling.h"
#include "../formats/trace.h"
#include "flame.h"
#include "../formats/replace.h"

static const char usage_text[] =
	"usage: memsight flamegraph [options] [FILE]\n"
	"   or: memsight flamegraph --diff [options] BASE NEW\n"
	"\n"
	"FILE is a memsight trace or folded stacks (comm;outer;...;inner COUNT),\n"
	"or '-' for standard input. Without FILE, as perf report: standard input\n"
	"when it is a pipe or a file, else ./" TRACE_DEFAULT_PATH ". The SVG goes to\n"
	"standard output.\n"
	"The options of stacks and symbols are handed to the analyzer with a trace.\n";

/* The analyzer's arguments: program, folded, -e, -w, forwarded options
 * (two words each at most), the trace. */
#define MAX_FORWARD 64

struct flamegraph {
	struct flame_opts o;
	const char *event, *weight, *output; /* -e and -w as given, NULL for the analyzer's choice */
	char folded_event[16], folded_weight[16]; /* what the analyzer folded (its header line) */
	int folded_estimate;			   /* and whether its weights are estimates */
	int folded_header;			   /* that line was read */
	const char *forward[MAX_FORWARD];
	int nr_forward;
};

/* An option for the analyzer (of stacks and symbols, or --fault-type), as given. */
static int opt_forward(const struct opt *o, const char *arg, void *ctx)
{
	struct flamegraph *fg = ctx;
	char *word;

	if (fg->nr_forward + 1 >= MAX_FORWARD)
		return msg_error("too many options for the analyzer");
	if (asprintf(&word, "--%s%s%s", o->long_name, arg ? "=" : "", arg ? arg : "") < 0)
		return msg_error("out of memory");
	fg->forward[fg->nr_forward++] = word;
	return 0;
}

static int opt_width(const struct opt *o, const char *arg, void *ctx)
{
	char *end;
	double v = strtod(arg, &end);

	(void)ctx;
	if (*end || v < 100 || v > 100000)
		return msg_error("invalid --width '%s': give pixels between 100 and 100000", arg);
	*(double *)o->value = v;
	return 0;
}

static int opt_minwidth(const struct opt *o, const char *arg, void *ctx)
{
	char *end;
	double v = strtod(arg, &end);

	(void)ctx;
	if (*end || v < 0)
		return msg_error("invalid --minwidth '%s': give pixels, e.g. 0.1", arg);
	*(double *)o->value = v;
	return 0;
}

static int opt_color(const struct opt *o, const char *arg, void *ctx)
{
	(void)ctx;
	for (int i = 0; flame_palettes[i]; i++) {
		if (!strcmp(arg, flame_palettes[i])) {
			*(const char **)o->value = flame_palettes[i];
			return 0;
		}
	}
	return msg_error("unknown palette '%s': use mem, hot, io, red, green, blue, aqua, yellow, purple or orange", arg);
}

/* Run the analyzer on a trace and hand back its standard output. */
static FILE *open_trace(const char *path, const struct flamegraph *fg, pid_t *child)
{
	char prog[PATH_MAX + 32];
	int fd[2];

	if (sibling_path("memsight-analyze", X_OK, prog, sizeof(prog)))
		snprintf(prog, sizeof(prog), "memsight-analyze");
	if (pipe(fd))
		return NULL;
	*child = fork();
	if (*child < 0)
		return NULL;
	if (!*child) {
		char *argv[MAX_FORWARD + 10] = { prog, "folded", "--header" };
		int nargs = 3;

		/* What to fold is the analyzer's to choose, as for memsight
		 * folded, unless given; its header line says what it chose. */
		if (fg->event) {
			argv[nargs++] = "--event";
			argv[nargs++] = (char *)fg->event;
		}
		if (fg->weight) {
			argv[nargs++] = "--weight";
			argv[nargs++] = (char *)fg->weight;
		}
		for (int i = 0; i < fg->nr_forward; i++)
			argv[nargs++] = (char *)fg->forward[i];
		argv[nargs++] = (char *)path;
		argv[nargs] = NULL;
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		/* Its notes are this command's, under its name. */
		setenv("MEMSIGHT_SPEAKER", msg_who(), 1);
		execvp(prog, argv);
		msg_error("cannot run '%s': %s", prog, strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	return fdopen(fd[0], "r");
}

static int is_trace(const char *path)
{
	char magic[8];
	FILE *f = fopen(path, "rb");
	int yes;

	if (!f)
		return 0;
	yes = fread(magic, 1, 8, f) == 8 && !memcmp(magic, "MEMSIGHT", 8);
	fclose(f);
	return yes;
}

/* A trace's title and unit, from what the analyzer folded, unless given. */
static void trace_titles(struct flamegraph *fg)
{
	const char *event = fg->folded_event, *weight = fg->folded_weight;
	const char *what = !strcmp(event, "brk")    ? "Heap Expansion (brk)"
			   : !strcmp(event, "mmap") ? "Memory Mappings (mmap)"
			   : !strcmp(event, "malloc")
				   ? (!strcmp(weight, "leaked")	 ? "Outstanding Allocations (leaks)"
				      : !strcmp(weight, "lost") ? "Lost Allocations (definitely and possibly lost)"
				      : !strcmp(weight, "peak") ? "Heap at its Peak"
								 : "Allocations (malloc family)")
			   : !strcmp(event, "kmem") ? (!strcmp(weight, "leaked") ? "Outstanding Kernel Memory"
										 : "Kernel Allocations (kmem)")
			   : !strcmp(event, "reclaim") ? "Direct and Memcg Reclaim"
			   : !strcmp(event, "swap")    ? "Swap-ins (major faults on anonymous memory)"
						       : "Page Faults";

	if (!fg->o.title)
		fg->o.title = what;
	if (!fg->o.subtitle && fg->folded_estimate)
		fg->o.subtitle = "ESTIMATE: a sampled recording; each sample counts for what it stands for";
	if (!fg->o.countname)
		fg->o.countname = !strcmp(weight, "bytes") || !strcmp(weight, "leaked") || !strcmp(weight, "peak") ||
						  !strcmp(weight, "lost")
					  ? "bytes"
				  : !strcmp(weight, "pages")					    ? "pages"
				  : !strcmp(weight, "latency")					    ? "us"
				  : !strcmp(event, "swap")					    ? "swap-ins"
				  : !strcmp(event, "faults")					    ? "faults"
				  : !strcmp(event, "malloc")					    ? "allocations"
												    : "calls";
}

/* Every line into the tree; lines that are not folded stacks are counted
 * and skipped (a header, a blank), a count no graph can draw is an error.
 * Returns the stacks added, or -1 after reporting. */
static long read_folded(FILE *in, struct flame_node *root, struct flamegraph *fg)
{
	unsigned long added = 0, skipped = 0, first_bad = 0, lineno = 0;
	char *line = NULL;
	size_t alloc = 0;
	long ret = -1;

	while (getline(&line, &alloc, in) > 0) {
		int r;

		char estimate[8] = "";

		/* memsight folded's first line: what it folded (a trace's
		 * analyzer, or folded into a pipe). */
		if (!lineno && sscanf(line, "# event %15s weight %15s estimate %7s", fg->folded_event, fg->folded_weight,
				      estimate) >= 2) {
			fg->folded_estimate = !strcmp(estimate, "yes") || !strcmp(estimate, "1");
			fg->folded_header = 1;
			lineno++;
			continue;
		}
		r = flame_tree_add(root, line);

		lineno++;
		if (r == -2) {
			msg_error("line %lu: '%s' is not a count a flame graph can draw: give finite, non-negative numbers "
				  "whose sum a double holds",
				  lineno, strrchr(line, ' ') ? strrchr(line, ' ') + 1 : line);
			goto out;
		}
		if (r < 0) {
			msg_error("out of memory");
			goto out;
		}
		if (r)
			added++;
		else if (line[0] && line[0] != '#' && line[strspn(line, " \t\r\n")] && !skipped++)
			first_bad = lineno;
	}
	if (skipped)
		msg_note("ignored %lu lines that are not folded stacks (the first is line %lu)", skipped, first_bad);
	ret = (long)added;
out:
	free(line);
	return ret;
}

/* A tree from path: a trace (through the analyzer), folded text, or
 * standard input for "-". Returns it, or NULL after reporting. */
static struct flame_node *load(struct flamegraph *fg, const char *path)
{
	struct flame_node *root;
	pid_t child = 0;
	FILE *in;
	long added;

	if (!strcmp(path, "-")) {
		in = stdin;
	} else if (is_trace(path)) {
		in = open_trace(path, fg, &child);
		if (!in)
			return msg_error("cannot run the analyzer on '%s': %s", path, strerror(errno)), NULL;
	} else if (!(in = fopen(path, "r"))) {
		return msg_error("cannot open '%s': %s", path, strerror(errno)), NULL;
	}
	root = flame_tree_new();
	if (!root) {
		msg_error("out of memory");
		added = -1;
	} else {
		added = read_folded(in, root, fg);
	}
	if (in != stdin)
		fclose(in);
	if (child) {
		/* The analyzer's failure is its own to tell. */
		int st;

		waitpid(child, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			added = -1;
	}
	if (!added && child)
		msg_error("'%s' holds no stacks of %s%s: pick other events with -e", path,
			  fg->folded_event[0] ? fg->folded_event : "what was asked for",
			  !strcmp(fg->folded_weight, "leaked") ? " still held at the end" : "");
	else if (!added)
		msg_error("no stacks in %s: expected lines like 'comm;outer;inner 42'",
			  !strcmp(path, "-") ? "standard input" : path);
	if (added > 0 && fg->folded_header)
		trace_titles(fg);
	if (added <= 0) {
		flame_tree_free(root);
		return NULL;
	}
	if (flame_tree_sort(root)) {
		msg_error("out of memory");
		flame_tree_free(root);
		return NULL;
	}
	return root;
}

static int write_svg(const struct flamegraph *fg, struct flame_node *root)
{
	struct replace_out o = { 0 };
	FILE *out = stdout;

	/* 0600, as the trace it is drawn from: it holds commands and paths. */
	if (fg->output) {
		if (replace_open(&o, fg->output))
			return msg_error("cannot create '%s': %s", fg->output, replace_strerror(&o));
		out = o.f;
	}
	if (flame_svg_write(out, root, &fg->o)) {
		int err = errno ? errno : EIO;

		if (fg->output)
			replace_finish(&o, 0);
		return msg_error("cannot write '%s': %s", fg->output ? fg->output : "the SVG", strerror(err));
	}
	/* Written whole, or the file that was there stays. */
	if (fg->output && replace_finish(&o, 1))
		return msg_error("cannot write '%s': %s", fg->output, strerror(errno));
	return 0;
}

/* No FILE: what is piped in, as perf report reads a pipe; at a terminal
 * (or /dev/null), the trace memsight record writes by default, as every
 * analyzer command reads it. */
static const char *default_input(void)
{
	struct stat st;

	if (!fstat(0, &st) && (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)))
		return "-";
	return TRACE_DEFAULT_PATH;
}

int main(int argc, char **argv)
{
	struct flamegraph fg = { .o = { NULL, NULL, NULL, "mem", 1200, 0.1, 0 } };
#define FORWARD(id, name, argh, optional, help) , { 0, name, OPT_CALLBACK_, NULL, argh, help, opt_forward, 0, optional }
	const struct opt options[] = {
		OPT_STRING('e', "event", &fg.event, "EVENT",
			   "for a trace: brk, mmap, faults (default when recorded),\n"
			   "malloc (default otherwise), kmem, reclaim or swap"),
		OPT_STRING('w', "weight", &fg.weight, "WEIGHT",
			   "for a trace: count (default), bytes or pages; for malloc and\n"
			   "kmem also leaked (bytes still outstanding when recording\n"
			   "ended; malloc's default), for malloc peak (bytes held when\n"
			   "the heap was largest) and lost (with --leak-check: definitely\n"
			   "and possibly lost); for reclaim latency (microseconds)"),
		{ 0, "fault-type", OPT_CALLBACK_, NULL, "KIND",
		  "for a trace's faults: only these kinds (repeatable): read, write,\n"
		  "exec, cow, kernel", opt_forward, 0, 0 },
		OPT_STRING('o', "output", &fg.output, "FILE", "write the SVG to FILE"),
		OPT_STRING(0, "title", &fg.o.title, "TEXT", "title (default: Flame Graph, or one for the trace's event)"),
		OPT_STRING(0, "subtitle", &fg.o.subtitle, "TEXT", "second line under the title"),
		OPT_STRING(0, "countname", &fg.o.countname, "NAME",
			   "what the counts are (default: samples, or the trace's weight)"),
		OPT_CALLBACK(0, "width", &fg.o.width, "PIXELS", "image width (default: 1200)", opt_width),
		OPT_CALLBACK(0, "minwidth", &fg.o.minwidth, "PIXELS", "leave out frames narrower than this (default: 0.1)",
			     opt_minwidth),
		OPT_CALLBACK(0, "color", &fg.o.palette, "PALETTE",
			     "mem (default), hot, io, red, green, blue, aqua, yellow, purple, orange", opt_color),
		OPT_CALLBACK(0, "colors", &fg.o.palette, "PALETTE", NULL, opt_color),
		OPT_BOOL(0, "inverted", &fg.o.inverted, "icicle graph: roots at the top, stacks grow down"),
		OPT_BOOL(0, "diff", &fg.o.diff,
			 "a differential graph of two inputs, BASE NEW: widths from NEW,\n"
			 "red where a stack grew since BASE, blue where it shrank, the\n"
			 "change in each tooltip"),
		OPT_GROUP(OPTS_STACK_TITLE) OPTS_STACK_LIST(FORWARD),
		OPT_END(),
	};
	struct flame_node *root = NULL, *base = NULL;
	const char *path;
	int ret = 1, r;

	msg_init("memsight flamegraph");
	r = opts_parse(argc, argv, options, usage_text, &fg);
	if (r >= 0)
		return r;
	if (fg.o.diff ? optind != argc - 2 : optind < argc - 1) {
		msg_error(fg.o.diff ? "--diff takes two inputs, BASE and NEW (see memsight flamegraph -h)"
				    : "give at most one input file (see memsight flamegraph -h)");
		return 2;
	}
	/* Before the input is read: a file it must not replace fails now. */
	if (fg.output && replace_check(fg.output, REPLACE_SVG, "an SVG file"))
		return 1;
	path = optind < argc ? argv[optind] : default_input();
	if (optind >= argc && path != (const char *)"-" && access(path, F_OK)) {
		msg_error("no input: no FILE given, nothing piped in, and no ./%s here (give FILE, or pipe folded "
			  "stacks in)", TRACE_DEFAULT_PATH);
		return 1;
	}
	if (fg.o.diff && !(base = load(&fg, path)))
		goto out;
	if (fg.o.diff)
		path = argv[optind + 1];
	if (!(root = load(&fg, path)))
		goto out;
	if (!fg.o.title)
		fg.o.title = "Flame Graph";
	if (!fg.o.countname)
		fg.o.countname = "samples";
	if (fg.o.diff && !fg.o.subtitle)
		fg.o.subtitle = "widths from NEW; red grew since BASE, blue shrank";
	if (base && flame_tree_diff(root, base))
		msg_error("out of memory");
	else
		ret = write_svg(&fg, root) ? 1 : 0;
out:
	flame_tree_free(root);
	flame_tree_free(base);
	for (int i = 0; i < fg.nr_forward; i++)
		free((char *)fg.forward[i]);
	return ret;
}
