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
#include <stdarg.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../formats/msg.h"
#include "flame.h"

static const char usage_text[] =
	"usage: memsight flamegraph [options] [FILE]\n"
	"\n"
	"FILE is a memsight trace or folded stacks (comm;outer;...;inner COUNT);\n"
	"standard input when it is absent or '-'. The SVG goes to standard output.\n"
	"\n"
	"  -e, --event EVENT      for a trace: brk, mmap, faults (default), malloc, kmem, reclaim\n"
	"                         or swap\n"
	"  -w, --weight WEIGHT    for a trace: count (default), bytes or pages; for malloc and\n"
	"                         kmem also leaked (bytes still outstanding when recording\n"
	"                         ended), for malloc peak (bytes held when the heap was\n"
	"                         largest); for reclaim latency (microseconds)\n"
	"      --debug-dir DIR    for a trace: find objects by build-id in DIR/.build-id/ too\n"
	"  -o, --output FILE      write the SVG to FILE\n"
	"      --title TEXT       title (default: Flame Graph, or one for the trace's event)\n"
	"      --subtitle TEXT    second line under the title\n"
	"      --countname NAME   what the counts are (default: samples, or the trace's weight)\n"
	"      --width PIXELS     image width (default: 1200)\n"
	"      --minwidth PIXELS  leave out frames narrower than this (default: 0.1)\n"
	"      --color PALETTE    mem (default), hot, io, red, green, blue, aqua, yellow, purple, orange\n"
	"      --inverted         icicle graph: roots at the top, stacks grow down\n"
	"  -h, --help             show this help\n";

#define MAX_DEBUG_DIRS 16
static const char *debug_dirs[MAX_DEBUG_DIRS];
static int nr_dirs;

/* Run the analyzer on a trace and hand back its standard output. */
static FILE *open_trace(const char *path, const char *event, const char *weight, pid_t *child)
{
	char self[PATH_MAX], prog[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int fd[2];

	snprintf(prog, sizeof(prog), "memsight-analyze");
	if (n > 0) {
		self[n] = 0;
		if (strrchr(self, '/')) {
			*strrchr(self, '/') = 0;
			snprintf(prog, sizeof(prog), "%s/memsight-analyze", self);
			if (access(prog, X_OK))
				snprintf(prog, sizeof(prog), "memsight-analyze");
		}
	}
	if (pipe(fd))
		return NULL;
	*child = fork();
	if (*child < 0)
		return NULL;
	if (!*child) {
		char *argv[8 + 2 * MAX_DEBUG_DIRS] = { prog, "folded", "--event", (char *)event, "--weight", (char *)weight };
		int nargs = 6;

		for (int i = 0; i < nr_dirs; i++) {
			argv[nargs++] = "--debug-dir";
			argv[nargs++] = (char *)debug_dirs[i];
		}
		argv[nargs++] = (char *)path;
		argv[nargs] = NULL;

		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execvp(prog, argv);
		msg_note("cannot run '%s': %s", prog, strerror(errno));
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

int main(int argc, char **argv)
{
	enum { OPT_DEBUG_DIR = 255, OPT_TITLE = 256, OPT_SUBTITLE, OPT_COUNTNAME, OPT_WIDTH, OPT_MINWIDTH, OPT_COLOR, OPT_INVERTED };
	static const struct option longopts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "weight", required_argument, NULL, 'w' },
		{ "output", required_argument, NULL, 'o' },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ "subtitle", required_argument, NULL, OPT_SUBTITLE },
		{ "countname", required_argument, NULL, OPT_COUNTNAME },
		{ "width", required_argument, NULL, OPT_WIDTH },
		{ "minwidth", required_argument, NULL, OPT_MINWIDTH },
		{ "color", required_argument, NULL, OPT_COLOR },
		{ "colors", required_argument, NULL, OPT_COLOR },
		{ "inverted", no_argument, NULL, OPT_INVERTED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct flame_opts o = { NULL, NULL, NULL, "mem", 1200, 0.1, 0 };
	const char *event = "faults", *weight = "count", *output = NULL, *path = NULL;
	struct flame_node *root;
	FILE *in, *out = stdout;
	pid_t child = 0;
	char *line = NULL, *end;
	size_t alloc = 0;
	unsigned long added = 0, skipped = 0, first_bad = 0, lineno = 0;
	int c, ret = 1, known = 0;

	msg_init("memsight flamegraph");
	while ((c = getopt_long(argc, argv, "e:w:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'e': event = optarg; break;
		case 'w': weight = optarg; break;
		case 'o': output = optarg; break;
		case OPT_DEBUG_DIR:
			if (nr_dirs == MAX_DEBUG_DIRS) {
				msg_error("at most %d --debug-dir options", MAX_DEBUG_DIRS);
				return 2;
			}
			debug_dirs[nr_dirs++] = optarg;
			break;
		case OPT_TITLE: o.title = optarg; break;
		case OPT_SUBTITLE: o.subtitle = optarg; break;
		case OPT_COUNTNAME: o.countname = optarg; break;
		case OPT_WIDTH:
			o.width = strtod(optarg, &end);
			if (*end || o.width < 100 || o.width > 100000) {
				msg_error("invalid --width '%s': give pixels between 100 and 100000", optarg);
				return 2;
			}
			break;
		case OPT_MINWIDTH:
			o.minwidth = strtod(optarg, &end);
			if (*end || o.minwidth < 0) {
				msg_error("invalid --minwidth '%s': give pixels, e.g. 0.1", optarg);
				return 2;
			}
			break;
		case OPT_COLOR:
			known = 0;
			for (int i = 0; flame_palettes[i]; i++)
				known |= !strcmp(optarg, flame_palettes[i]);
			if (!known) {
				msg_error("unknown palette '%s': use mem, hot, io, red, green, blue, aqua, yellow, purple or orange",
				      optarg);
				return 2;
			}
			o.palette = optarg;
			break;
		case OPT_INVERTED: o.inverted = 1; break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fputs(usage_text, stderr);
			return 2;
		}
	}
	if (optind < argc - 1) {
		msg_error("give at most one input file (see memsight flamegraph -h)");
		return 2;
	}
	path = optind < argc ? argv[optind] : "-";
	if (!strcmp(path, "-")) {
		in = stdin;
	} else if (is_trace(path)) {
		const char *what = !strcmp(event, "brk") ? "Heap Expansion (brk)"
				   : !strcmp(event, "mmap") ? "Memory Mappings (mmap)"
				   : !strcmp(event, "malloc") ? (!strcmp(weight, "leaked") ? "Outstanding Allocations (leaks)"
								 : !strcmp(weight, "peak") ? "Heap at its Peak"
											    : "Allocations (malloc family)")
				   : !strcmp(event, "kmem") ? (!strcmp(weight, "leaked") ? "Outstanding Kernel Memory"
											  : "Kernel Allocations (kmem)")
				   : !strcmp(event, "reclaim") ? "Direct and Memcg Reclaim"
				   : !strcmp(event, "swap") ? "Swap-ins (major faults on anonymous memory)"
				   : "Page Faults";

		if (!o.title)
			o.title = what;
		if (!o.countname)
			o.countname = !strcmp(weight, "bytes") || !strcmp(weight, "leaked") || !strcmp(weight, "peak") ? "bytes"
				      : !strcmp(weight, "pages") ? "pages"
				      : !strcmp(weight, "latency") ? "us"
				      : !strcmp(event, "swap") ? "swap-ins"
				      : !strcmp(event, "faults") ? "faults"
				      : !strcmp(event, "malloc") ? "allocations" : "calls";
		in = open_trace(path, event, weight, &child);
		if (!in) {
			msg_error("cannot run the analyzer on '%s': %s", path, strerror(errno));
			return 1;
		}
	} else {
		in = fopen(path, "r");
		if (!in) {
			msg_error("cannot open '%s': %s", path, strerror(errno));
			return 1;
		}
	}
	if (!o.title)
		o.title = "Flame Graph";
	if (!o.countname)
		o.countname = "samples";
	root = flame_tree_new();
	if (!root)
		return msg_error("out of memory"), 1;
	while (getline(&line, &alloc, in) > 0) {
		int r = flame_tree_add(root, line);

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
		else if (line[0] && line[0] != '#' && line[strspn(line, " \t\r\n")]) {
			if (!skipped++)
				first_bad = lineno;
		}
	}
	if (in != stdin)
		fclose(in);
	in = NULL;
	if (child) {
		int st;

		waitpid(child, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			/* The analyzer said what went wrong. */
			goto out;
		}
	}
	if (skipped)
		msg_note("ignored %lu lines that are not folded stacks (the first is line %lu)",
			skipped, first_bad);
	if (!added) {
		msg_error("no stacks in %s: expected lines like 'comm;outer;inner 42'",
		      !strcmp(path, "-") ? "standard input" : path);
		goto out;
	}
	if (flame_tree_sort(root)) {
		msg_error("out of memory");
		goto out;
	}
	if (output && !(out = fopen(output, "w"))) {
		msg_error("cannot create '%s': %s", output, strerror(errno));
		goto out;
	}
	if (flame_svg_write(out, root, &o) || (out != stdout && fclose(out))) {
		msg_error("cannot write the SVG: %s", strerror(errno));
		if (output)
			unlink(output);
		goto out;
	}
	ret = 0;
out:
	free(line);
	flame_tree_free(root);
	return ret;
}
