/*
 * analyze/cmd/report_html.c: memsight report --html, one self-contained
 * page to open in a browser and attach to a ticket.
 *
 * Owns putting the other commands' results on one page: a summary, the
 * recording over time, a table by function, top-down and bottom-up trees
 * and the callers and callees of a function (drawn by the page's script
 * from the commands' --json, carried as data), the memory errors, the
 * report's tables, the leak table with a link to each stack, a flame graph
 * for every event and weight the trace recorded (an icicle by its own
 * button), and the RSS chart.
 * Those commands' views (folded, functions, leaks, errors, info, rss) are
 * set up on the report's session before its replay, so that the one replay
 * feeds them all: the trace is read, unwound and named once. Their output
 * is captured, and memsight-flamegraph beside this program draws the SVGs,
 * which go into the page as data: URIs, so the page needs no network and
 * no other file, and each graph's own script (zoom, search) runs in its own
 * document.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "../../formats/sibling.h"
#include "../model/allocs.h"

/* Frames narrower than this many pixels are merged into their callers
 * (flamegraph.pl's minwidth): a large trace stays a page a browser opens. */
#define HTML_MINWIDTH "0.5"

struct graph {
	const char *group, *event, *weight, *title, *unit;
};

/* Every graph the page may hold, drawn when its group was recorded and it
 * has stacks. */
static const struct graph graphs[] = {
	{ "faults", "faults", "count", "Page faults by stack", "faults" },
	{ "brk", "brk", "bytes", "Heap growth (brk) by stack", "bytes" },
	{ "mmap", "mmap", "bytes", "Bytes mapped (mmap) by stack", "bytes" },
	{ "malloc", "malloc", "leaked", "Leaked bytes by stack (outstanding at the end)", "bytes" },
	{ "malloc", "malloc", "peak", "Bytes held when the heap was largest", "bytes" },
	{ "malloc", "malloc", "bytes", "Bytes allocated by stack", "bytes" },
	{ "malloc", "malloc", "count", "Allocations by stack", "allocations" },
	{ "kmem", "kmem", "bytes", "Kernel allocations (bytes) by stack", "bytes" },
	{ "kmem", "kmem", "leaked", "Kernel memory still allocated at the end", "bytes" },
	{ "reclaim", "reclaim", "latency", "Reclaim stalls by stack (microseconds)", "microseconds" },
};
#define NR_GRAPHS (sizeof(graphs) / sizeof(graphs[0]))

static void base64_out(FILE *out, const unsigned char *p, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);

		fputc(tab[v >> 18 & 63], out);
		fputc(tab[v >> 12 & 63], out);
		fputc(i + 1 < n ? tab[v >> 6 & 63] : '=', out);
		fputc(i + 2 < n ? tab[v & 63] : '=', out);
	}
}

/* Where memsight-flamegraph is: beside this program (a build tree, or
 * where make install put both), else on PATH. */
static void flamegraph_prog(char *prog, size_t len)
{
	if (sibling_path("memsight-flamegraph", X_OK, prog, len))
		snprintf(prog, len, "memsight-flamegraph");
}

/* Start memsight-flamegraph on folded (a differential graph from base to
 * it, where base is not NULL) into svg: its pid into *pid. */
static int flamegraph_start(FILE *base, FILE *folded, FILE *svg, const struct graph *g, pid_t *pid)
{
	char prog[4096], in[64], out[64], count[64], old[64];
	char *argv[16];
	int argc = 0;

	flamegraph_prog(prog, sizeof(prog));
	fflush(folded);
	fflush(svg);
	snprintf(in, sizeof(in), "/proc/self/fd/%d", fileno(folded));
	snprintf(out, sizeof(out), "/proc/self/fd/%d", fileno(svg));
	snprintf(count, sizeof(count), "%s", g->unit);
	argv[argc++] = prog;
	argv[argc++] = "--title";
	argv[argc++] = (char *)g->title;
	argv[argc++] = "--countname";
	argv[argc++] = count;
	argv[argc++] = "--minwidth";
	argv[argc++] = HTML_MINWIDTH;
	argv[argc++] = "-o";
	argv[argc++] = out;
	if (base) {
		fflush(base);
		snprintf(old, sizeof(old), "/proc/self/fd/%d", fileno(base));
		argv[argc++] = "--diff";
		argv[argc++] = old;
	}
	argv[argc++] = in;
	argv[argc] = NULL;
	*pid = fork();
	if (*pid < 0)
		return msg_error("cannot start %s: %s", prog, strerror(errno));
	if (!*pid) {
		/* Each file from its start, in the child's own offsets. */
		lseek(fileno(folded), 0, SEEK_SET);
		if (base)
			lseek(fileno(base), 0, SEEK_SET);
		execvp(prog, argv);
		_exit(127);
	}
	return 0;
}

/* The end of the memsight-flamegraph pid that drew g. */
static int flamegraph_wait(pid_t pid, const struct graph *g)
{
	char prog[4096];
	int st;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return 0;
	flamegraph_prog(prog, sizeof(prog));
	return msg_error("%s failed for '%s'%s", prog, g->title,
			 WIFEXITED(st) && WEXITSTATUS(st) == 127 ? ": is memsight installed completely?" : "");
}

static int flamegraph_run(FILE *base, FILE *folded, FILE *svg, const struct graph *g)
{
	pid_t pid;

	return flamegraph_start(base, folded, svg, g, &pid) || flamegraph_wait(pid, g) ? -1 : 0;
}

/* A graph, loaded by the page's script when it comes near the window
 * (data-src): each is a document of its own, and a page of many large ones
 * would otherwise wait for them all before it answers. */
static void svg_object(FILE *out, FILE *svg, const char *id, const char *style)
{
	size_t n = 0;
	char *p = cmd_slurp(svg, &n);

	fprintf(out, "<object id=\"%s\" type=\"image/svg+xml\" style=\"%s\" data-src=\"data:image/svg+xml;base64,", id, style);
	if (p)
		base64_out(out, (const unsigned char *)p, n);
	fputs("\"></object>\n", out);
	free(p);
}

/* The views on the page, each a command's, all fed by the report's
 * replay. */
enum page_view {
	PV_REPORT,		/* the report's own (set by cmd_report) */
	PV_INFO,
	PV_LEAKS_JSON,
	PV_FUNCTIONS,
	PV_ERRORS_JSON,
	PV_ERRORS,
	PV_LEAKS,
	PV_MALLOC_GRAPHS,
	PV_GRAPH,		/* then one per entry of graphs[] */
	PV_RSS = PV_GRAPH + NR_GRAPHS,
	PV_DIFF_NEW,		/* with BASE: the trace folded as diff folds it */
	PV_NR
};

struct page {
	struct cmd_view v[PV_NR];
	int ended[PV_NR];
	FILE *malloc_outs[NR_GRAPHS]; /* the malloc graphs' folded stacks, by graphs[] */
	FILE *malloc_folded[NR_GRAPHS]; /* the same in the order folded_malloc_view writes them */
	char rss_svg[32];	      /* the RSS chart's file, "" for none */
	const char *base, *trace;
	/* With BASE: what diff compares, and both sides folded so. */
	const char *diff_event, *diff_weight;
	FILE *diff_folded[2];
};

/* Set up one view of the page, by its command's argv. */
static int page_view(struct page *pg, enum page_view i, cmd_view_fn fn, char **argv, struct session *s,
		     const struct analyze_opts *a)
{
	struct analyze_opts copy = *a;
	int argc = 0, r;

	while (argv[argc])
		argc++;
	r = fn(argc, argv, &copy, s, &pg->v[i]);
	return r < 0 ? 0 : -1;
}

struct page *report_html_views(struct session *s, const char *base, const char *trace, const struct analyze_opts *a,
			       const struct cmd_view *report, struct cmd_view **views, size_t *n)
{
	struct page *pg = calloc(1, sizeof(*pg));
	char *t = (char *)trace;
	int malloc_rec = allocs_recorded(s), signals = session_group_recorded(s, "signals");

	if (!pg)
		return msg_error("out of memory"), NULL;
	pg->base = base;
	pg->trace = trace;
	pg->v[PV_REPORT] = *report;
	/* Each view runs a command on the same trace: its notes once. */
	msg_once(1);
	{
		char *argv[] = { "info", "--json", t, NULL };

		page_view(pg, PV_INFO, info_view, argv, s, a);
	}
	if (malloc_rec) {
		char *json[] = { "leaks", "--json", "--no-lines", "--top", "3", t, NULL };
		char *text[] = { "leaks", "--top", "50", t, NULL };

		page_view(pg, PV_LEAKS_JSON, leaks_view, json, s, a);
		page_view(pg, PV_LEAKS, leaks_view, text, s, a);
	}
	{
		/* By function, what leaked where allocations were recorded
		 * (the offenders), else what the trace holds by default. */
		char *argv[] = { "functions", "--json", "--top", "200", t, NULL, NULL, NULL, NULL, NULL };

		if (malloc_rec) {
			argv[4] = "-e";
			argv[5] = "malloc";
			argv[6] = "-w";
			argv[7] = "leaked";
			argv[8] = t;
		}
		page_view(pg, PV_FUNCTIONS, functions_view, argv, s, a);
	}
	if (signals) {
		char *json[] = { "errors", "--json", "--no-lines", t, NULL };
		char *text[] = { "errors", "--fail", t, NULL };

		page_view(pg, PV_ERRORS_JSON, errors_view, json, s, a);
		page_view(pg, PV_ERRORS, errors_view, text, s, a);
	}
	/* The malloc graphs, every weight folded from one view. */
	{
		const char *weights[NR_GRAPHS];
		FILE *outs[NR_GRAPHS];
		int k = 0;

		for (size_t i = 0; i < NR_GRAPHS; i++)
			if (!strcmp(graphs[i].event, "malloc") && session_group_recorded(s, graphs[i].group)) {
				if (!(pg->malloc_outs[i] = tmpfile())) {
					msg_error("cannot make a temporary file: %s", strerror(errno));
					report_html_free(s, pg);
					return NULL;
				}
				weights[k] = graphs[i].weight;
				outs[k++] = pg->malloc_outs[i];
			}
		if (k) {
			memcpy(pg->malloc_folded, outs, k * sizeof(*outs));
			folded_malloc_view(s, weights, pg->malloc_folded, k, &pg->v[PV_MALLOC_GRAPHS]);
		}
	}
	for (size_t i = 0; i < NR_GRAPHS; i++) {
		const struct graph *g = &graphs[i];
		char *argv[] = { "folded", "-e", (char *)g->event, "-w", (char *)g->weight, t, NULL };

		if (strcmp(g->event, "malloc") && session_group_recorded(s, g->group))
			page_view(pg, PV_GRAPH + i, folded_view, argv, s, a);
	}
	if (base) {
		char *argv[] = { "folded", "--header", "-e", NULL, NULL, NULL, NULL, NULL };

		if (diff_defaults(base, trace, (struct analyze_opts *)a, &pg->diff_event, &pg->diff_weight)) {
			report_html_free(s, pg);
			return NULL;
		}
		argv[3] = (char *)pg->diff_event;
		argv[4] = pg->diff_weight ? "-w" : t;
		argv[5] = pg->diff_weight ? (char *)pg->diff_weight : NULL;
		argv[6] = pg->diff_weight ? t : NULL;
		page_view(pg, PV_DIFF_NEW, folded_view, argv, s, a);
	}
	if (session_group_recorded(s, "rss")) {
		int fd;

		snprintf(pg->rss_svg, sizeof(pg->rss_svg), "/tmp/memsight-rss-XXXXXX");
		if ((fd = mkstemp(pg->rss_svg)) < 0) {
			pg->rss_svg[0] = 0;
		} else {
			char *argv[] = { "rss", "--svg", pg->rss_svg, t, NULL };

			close(fd);
			page_view(pg, PV_RSS, rss_view, argv, s, a);
		}
	}
	*views = pg->v;
	*n = PV_NR;
	return pg;
}

void report_html_free(struct session *s, struct page *pg)
{
	if (!pg)
		return;
	for (int i = PV_REPORT + 1; i < PV_NR; i++)
		if (pg->v[i].end && !pg->ended[i])
			pg->v[i].end(s, pg->v[i].arg, 0);
	for (size_t i = 0; i < NR_GRAPHS; i++)
		if (pg->malloc_outs[i])
			fclose(pg->malloc_outs[i]);
	for (int i = 0; i < 2; i++)
		if (pg->diff_folded[i])
			fclose(pg->diff_folded[i]);
	if (pg->rss_svg[0])
		unlink(pg->rss_svg);
	free(pg);
}

/* What view i prints, in a fresh temporary file; NULL when it was not set
 * up (*ret 1) or no file could be made. *ret is its exit status. */
static FILE *page_output(struct page *pg, enum page_view i, struct session *s, int *ret)
{
	FILE *f;

	*ret = 1;
	if (!pg->v[i].end || pg->ended[i])
		return NULL;
	pg->ended[i] = 1;
	if (!(f = tmpfile())) {
		msg_error("cannot make a temporary file: %s", strerror(errno));
		pg->v[i].end(s, pg->v[i].arg, 0);
		return NULL;
	}
	*ret = cmd_view_end(s, &pg->v[i], f);
	return f;
}

/* A value of the page's data: JSON has '<' only in strings (a path, a
 * command line, from whoever made the trace): written \u003c, the same
 * string to JSON, it can neither end the script nor open a comment. */
static void data_put(FILE *out, const char *key, const char *t, size_t n, int first)
{
	fprintf(out, "%s\"%s\":", first ? "" : ",", key);
	while (n && (t[n - 1] == '\n' || t[n - 1] == ' '))
		n--;
	if (!n)
		fputs("null", out);
	for (size_t i = 0; i < n; i++) {
		if (t[i] == '<')
			fputs("\\u003c", out);
		else
			fputc(t[i], out);
	}
}

/* A view's --json, as the value of "key" in the page's data (null when
 * it fails: the trace lacks its events). */
static void data_json(FILE *out, const char *key, struct page *pg, enum page_view i, struct session *s, int first)
{
	int r;
	FILE *f = page_output(pg, i, s, &r);
	size_t n = 0;
	char *t = f && !r ? cmd_slurp(f, &n) : NULL;

	data_put(out, key, t ? t : "", n, first);
	free(t);
	if (f)
		fclose(f);
}

/* diff's JSON of the two foldings diff_section made, as "diff". */
static void data_diff(FILE *out, struct page *pg)
{
	FILE *f = tmpfile();
	int saved = f ? cmd_stdout_to(f) : -1, r = 1;
	size_t n = 0;
	char *t = NULL;

	if (saved >= 0) {
		r = diff_json_folded(pg->diff_folded[0], pg->diff_folded[1], pg->base, pg->trace, pg->diff_event,
				     pg->diff_weight, 50);
		cmd_stdout_restore(saved);
	}
	if (!r)
		t = cmd_slurp(f, &n);
	data_put(out, "diff", t ? t : "", n, 0);
	free(t);
	if (f)
		fclose(f);
}

/* The page's data: what its summary, its tables, trees and windows are
 * drawn from: the report's JSON, given, and the other views' own. */
static void page_data(FILE *out, struct page *pg, const char *report, size_t report_len, struct session *s)
{
	fputs("<script type=\"application/json\" id=\"data\">{", out);
	data_json(out, "info", pg, PV_INFO, s, 1);
	data_put(out, "report", report, report_len, 0);
	data_json(out, "leaks", pg, PV_LEAKS_JSON, s, 0);
	data_json(out, "functions", pg, PV_FUNCTIONS, s, 0);
	data_json(out, "errors", pg, PV_ERRORS_JSON, s, 0);
	if (pg->base && pg->diff_folded[0] && pg->diff_folded[1])
		data_diff(out, pg);
	else
		fputs(",\"diff\":null", out);
	fputs("}</script>\n", out);
}

/* Draws the summary and the table by function from the page's data. */
/* Run one command with its standard output into a fresh temporary file. */
static FILE *captured(int (*fn)(int, char **, struct analyze_opts *), char **argv, struct analyze_opts *a, int *ret)
{
	FILE *f = tmpfile();
	int argc = 0;

	while (argv[argc])
		argc++;
	if (!f) {
		*ret = msg_error("cannot make a temporary file: %s", strerror(errno));
		return NULL;
	}
	*ret = cmd_capture(f, fn, argc, argv, a);
	return f;
}

/* Whether folded text holds a stack line (not only its header). */
static int folded_has_stacks(FILE *f)
{
	char line[256];
	int found = 0;

	rewind(f);
	while (!found && fgets(line, sizeof(line), f))
		found = line[0] != '#' && line[0] != '\n';
	fseek(f, 0, SEEK_END);
	return found;
}

/* Two traces: what changed from base, as memsight diff weighs it (its
 * table drawn by the page's script from diff's JSON), and the
 * differential flame graph of the same folding: the trace's from its view,
 * base's folded here, both kept for the JSON. */
static int diff_section(FILE *out, struct page *pg, struct session *s, struct analyze_opts *a)
{
	const char *event = pg->diff_event, *weight = pg->diff_weight;
	struct graph g = { NULL, NULL, NULL, "What changed: widths from the new trace, red where a stack grew, blue "
					     "where it shrank", NULL };
	char *argv[] = { "folded", "--header", "-e", (char *)event, weight ? "-w" : NULL, (char *)weight, NULL, NULL };
	FILE *svg = NULL;
	int r = 0, ret = 1;

	g.unit = !weight ? "events" : strcmp(weight, "count") ? "bytes" : !strcmp(event, "malloc") ? "allocations" : event;
	fputs("<h2 id=\"diff-head\">What changed from ", out);
	cmd_markup_escape(out, pg->base, strlen(pg->base));
	fputs("</h2>\n<section id=\"diff\"></section>\n", out);
	argv[weight ? 6 : 4] = (char *)pg->base;
	if (!(pg->diff_folded[0] = captured(cmd_folded, argv, a, &r)) || r)
		goto out;
	if (!(pg->diff_folded[1] = page_output(pg, PV_DIFF_NEW, s, &r)) || r)
		goto out;
	/* Widths come from the new trace: with no stack there, no graph (the
	 * table says what went). */
	if (!folded_has_stacks(pg->diff_folded[1])) {
		fputs("<p>No stacks in the new trace to draw.</p>\n", out);
		return 0;
	}
	svg = tmpfile();
	if (!svg || flamegraph_run(pg->diff_folded[0], pg->diff_folded[1], svg, &g))
		goto out;
	svg_object(out, svg, "diff-flame", "display:block");
	ret = 0;
out:
	if (svg)
		fclose(svg);
	if (ret && !r)
		msg_error("cannot draw the differential flame graph of '%s' and '%s'", pg->base, pg->trace);
	return ret;
}

/* The page's script (report.js), made a C string at build time. */
static const char page_script[] =
#include "report_js.inc"
	;

/* The leaks text with an anchor at each stack, and a table of them first. */
static void leaks_section(FILE *out, const char *text)
{
	const char *p = text;
	int k = 0;

	fputs("<table class=\"leaks\"><tr><th>bytes</th><th>allocations</th><th>process</th><th>allocated in</th></tr>\n",
	      out);
	while ((p = strstr(p, " allocations from stack (pid "))) {
		const char *ls = p, *le, *fr, *fe;
		char bytes[32] = "", allocs[32] = "";

		while (ls > text && ls[-1] != '\n')
			ls--;
		le = strchr(p, '\n');
		if (!le)
			break;
		sscanf(ls, "%31s bytes in %31s", bytes, allocs);
		/* The first frames under the allocator: the second and third
		 * tab-indented lines of the stack. */
		fr = le + 1;
		for (int skip = 0; skip < 2 && *fr; skip++) {
			while (*fr && strncmp(fr, "\t\t", 2))
				fr = strchr(fr, '\n') ? strchr(fr, '\n') + 1 : fr + strlen(fr);
			if (skip == 0 && *fr)
				fr = strchr(fr, '\n') ? strchr(fr, '\n') + 1 : fr + strlen(fr);
		}
		fe = *fr ? strchr(fr, '\n') : NULL;
		fprintf(out, "<tr><td><a href=\"#leak-%d\">%s</a></td><td>%s</td><td>", k, bytes, allocs);
		cmd_markup_escape(out, p + 25, (size_t)(strchr(p, ')') ? strchr(p, ')') - (p + 25) : 0));
		fputs("</td><td>", out);
		if (fe)
			cmd_markup_escape(out, fr + 2, (size_t)(fe - fr - 2));
		fputs("</td></tr>\n", out);
		k++;
		p = le;
	}
	fputs("</table>\n<pre>", out);
	k = 0;
	for (p = text; *p;) {
		const char *le = strchr(p, '\n');
		size_t n = le ? (size_t)(le - p + 1) : strlen(p);

		if (memmem(p, n, " allocations from stack (pid ", 29))
			fprintf(out, "<span id=\"leak-%d\"></span>", k++);
		cmd_markup_escape(out, p, n);
		p += n;
	}
	fputs("</pre>\n", out);
}


int report_html(FILE *out, const char *path, struct page *pg, const char *text, size_t text_len, const char *data,
		size_t data_len, struct session *s, struct analyze_opts *a)
{
	const char *base = pg->base, *trace = pg->trace;
	int ret = 0, r, shown = 0;
	char buf[256];
	FILE *errors = NULL;
	int had_errors = 0;

	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>memsight report: ", out);
	cmd_markup_escape(out, trace, strlen(trace));
	fputs("</title>\n<style>\n"
	      "body { font-family: sans-serif; margin: 1em 2em; color: #222; }\n"
	      "pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 12px; }\n"
	      "nav a { margin-right: 1em; }\n"
	      "table.leaks { border-collapse: collapse; font-size: 13px; }\n"
	      "table.leaks td, table.leaks th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; }\n"
	      "object { width: 100%; display: block; }\n"
	      "object[data-src]:not([data]) { height: 400px; }\n"
	      "button { margin: 0.3em 0; }\n"
	      "table.summary th { text-align: left; padding-right: 1em; vertical-align: top; }\n"
	      "div.bar { background: #c33; height: 0.8em; }\n"
	      "td.na { color: #888; }\n"
	      "table.tree { border-collapse: collapse; font-size: 13px; width: 100%; table-layout: fixed; }\n"
	      "table.tree th { text-align: right; cursor: pointer; padding: 2px 6px; border-bottom: 1px solid #ccc;"
	      " white-space: nowrap; width: 9em; }\n"
	      "table.tree th:first-child { text-align: left; width: auto; cursor: default; }\n"
	      "table.tree th.sorted { text-decoration: underline; }\n"
	      "table.tree td { text-align: right; padding: 1px 6px; white-space: nowrap; overflow: hidden;"
	      " font-variant-numeric: tabular-nums; }\n"
	      "table.tree td.fncell { text-align: left; text-overflow: ellipsis; }\n"
	      "table.tree tr.totals td { font-weight: bold; border-bottom: 1px solid #ccc; }\n"
	      "table.tree span.guide { display: inline-block; height: 1.3em; vertical-align: middle;"
	      " background: repeating-linear-gradient(to right, transparent 0 7px, #c8c8c8 7px 8px, transparent 8px 16px); }\n"
	      "table.tree span.tog { display: inline-block; width: 1.2em; cursor: pointer; color: #555; }\n"
	      "table.tree span.pct { color: #888; font-size: 11px; display: inline-block; width: 3.6em; }\n"
	      "table.tree tbody tr:hover { background: #f0f4fa; }\n"
	      "table.tree tbody tr:focus { outline: 2px solid #4a78b0; background: #e6eefa; }\n"
	      "span.hint { color: #666; font-size: 12px; }\n"
	      "p.readout { font-size: 12px; min-height: 1.3em; margin: 0.2em 0; }\n"
	      "span.key { font-weight: bold; }\n"
	      "</style>\n"
	      "</head>\n<body>\n<h1>memsight report of ",
	      out);
	cmd_markup_escape(out, trace, strlen(trace));
	fputs("</h1>\n<p>", out);
	if (cmd_window(s, buf, sizeof(buf))[0]) {
		fputs("This file is ", out);
		cmd_markup_escape(out, buf, strlen(buf));
		fputs(". ", out);
	}
	/* Memory errors first, when the recording holds any: they are why
	 * a process ended. */
	errors = page_output(pg, PV_ERRORS, s, &r);
	if (r != 3 && errors) {
		fclose(errors);
		errors = NULL;
	}
	fputs("Each flame graph zooms on a click and searches with its Search button (or Ctrl-F); its Icicle "
	      "button turns it into an icicle graph (roots on top). Frames narrower than " HTML_MINWIDTH
	      " pixel are merged into their callers; each graph says how many.</p>\n<nav>",
	      out);
	if (errors)
		fputs("<a href=\"#errors\">memory errors</a>", out);
	if (base)
		fputs("<a href=\"#diff-head\">changes</a>", out);
	fputs("<a href=\"#summary-head\">summary</a><a href=\"#timeline-head\">over time</a>"
	      "<a href=\"#functions-head\">functions</a><a href=\"#topdown-head\">top-down</a>"
	      "<a href=\"#wflame-head\">flame graph</a><a href=\"#bottomup-head\">bottom-up</a><a href=\"#callers-head\">callers</a>", out);
	if (allocs_recorded(s))
		fputs("<a href=\"#sizes-head\">sizes</a>", out);
	fputs("<a href=\"#report\">report</a>", out);
	if (allocs_recorded(s))
		fputs("<a href=\"#leaks\">leaks</a>", out);
	for (size_t i = 0; i < sizeof(graphs) / sizeof(graphs[0]); i++)
		if (session_group_recorded(s, graphs[i].group))
			fprintf(out, "<a href=\"#g%zu\">%s %s</a>", i, graphs[i].event, graphs[i].weight);
	if (session_group_recorded(s, "rss"))
		fputs("<a href=\"#rss\">RSS</a>", out);
	fputs("</nav>\n<h2 id=\"summary-head\">Summary</h2>\n<section id=\"summary\"></section>\n", out);
	if (errors) {
		size_t n = 0;
		char *t = cmd_slurp(errors, &n);

		fputs("<h2 id=\"errors\">Memory errors</h2>\n<section id=\"errors-table-sec\"></section>\n<pre>", out);
		if (t)
			cmd_markup_escape(out, t, n);
		fputs("</pre>\n", out);
		free(t);
		fclose(errors);
		had_errors = 1;
	}
	if (base && diff_section(out, pg, s, a)) {
		report_html_free(s, pg);
		return 1;
	}
	fputs("<h2 id=\"timeline-head\">Over time</h2>\n<section id=\"timeline\"></section>\n"
	      "<section id=\"filters\"></section>\n",
	      out);
	fputs("<h2 id=\"functions-head\">By function</h2>\n<section id=\"functions\"></section>\n", out);
	fputs("<h2 id=\"topdown-head\">Top-down</h2>\n<section id=\"topdown\"></section>\n"
	      "<h2 id=\"wflame-head\">Flame graph of the window</h2>\n<section id=\"wflame\"></section>\n"
	      "<h2 id=\"bottomup-head\">Bottom-up</h2>\n<section id=\"bottomup\"></section>\n"
	      "<h2 id=\"callers-head\">Callers and callees</h2>\n<section id=\"callers\"><p>Click a function anywhere on "
	      "the page.</p></section>\n",
	      out);
	if (allocs_recorded(s))
		fputs("<h2 id=\"sizes-head\">Allocation sizes</h2>\n<section id=\"sizes\"></section>\n", out);
	/* The views the script draws come first, and the script right after
	 * them: they answer while the text and the graphs below are read. */
	page_data(out, pg, data, data_len, s);
	fputs("<script>\n", out);
	fputs(page_script, out);
	fputs("</script>\n", out);
	fputs("<h2 id=\"report\">Report</h2>\n<pre>", out);
	cmd_markup_escape(out, text, text_len);
	fputs("</pre>\n", out);

	if (allocs_recorded(s)) {
		FILE *f = page_output(pg, PV_LEAKS, s, &r);
		size_t n = 0;
		char *t = f ? cmd_slurp(f, &n) : NULL;

		fputs("<h2 id=\"leaks\">Leaks</h2>\n", out);
		if (t)
			leaks_section(out, t);
		free(t);
		if (f)
			fclose(f);
		ret |= r > 1;
	}
	/* The malloc graphs, every weight folded by one view. */
	{
		int malloc_ret = 1;

		if (pg->v[PV_MALLOC_GRAPHS].end) {
			pg->ended[PV_MALLOC_GRAPHS] = 1;
			malloc_ret = cmd_view_end(s, &pg->v[PV_MALLOC_GRAPHS], NULL);
		}
		/* Each graph's memsight-flamegraph started first, all of them,
		 * then the page written in order as each ends: they draw side by
		 * side on the CPUs there are. */
		struct {
			FILE *folded, *svg;
			pid_t pid;
			enum { G_SKIP, G_NONE, G_EMPTY, G_DRAWN, G_FAILED } state;
		} gs[NR_GRAPHS] = { { 0 } };

		for (size_t i = 0; i < NR_GRAPHS; i++) {
			const struct graph *g = &graphs[i];

			if (!session_group_recorded(s, g->group))
				continue;
			if (pg->malloc_outs[i]) {
				gs[i].folded = pg->malloc_outs[i];
				pg->malloc_outs[i] = NULL;
				r = malloc_ret;
			} else {
				gs[i].folded = page_output(pg, PV_GRAPH + i, s, &r);
			}
			if (!gs[i].folded) {
				/* r: the view could not be set up (said): no stacks. */
				gs[i].state = r ? G_NONE : G_FAILED;
				continue;
			}
			fflush(gs[i].folded);
			if (r || ftell(gs[i].folded) == 0) {
				gs[i].state = G_EMPTY;
				continue;
			}
			gs[i].svg = tmpfile();
			gs[i].state = gs[i].svg && !flamegraph_start(NULL, gs[i].folded, gs[i].svg, g, &gs[i].pid) ? G_DRAWN
													    : G_FAILED;
		}
		for (size_t i = 0; i < NR_GRAPHS; i++) {
			const struct graph *g = &graphs[i];
			char id[32];

			if (gs[i].state == G_DRAWN && flamegraph_wait(gs[i].pid, g))
				gs[i].state = G_FAILED;
			if (gs[i].state == G_FAILED)
				ret = 1;
			if (ret || gs[i].state == G_SKIP)
				continue;
			fprintf(out, "<h2 id=\"g%zu\">", i);
			cmd_markup_escape(out, g->title, strlen(g->title));
			fputs("</h2>\n", out);
			if (gs[i].state != G_DRAWN) {
				fputs("<p>No stacks.</p>\n", out);
				continue;
			}
			/* One graph: its own Icicle button turns it the other way up. */
			snprintf(id, sizeof(id), "g%zu-flame", i);
			svg_object(out, gs[i].svg, id, "display:block");
			shown++;
		}
		for (size_t i = 0; i < NR_GRAPHS; i++) {
			if (gs[i].svg)
				fclose(gs[i].svg);
			if (gs[i].folded)
				fclose(gs[i].folded);
		}
	}
	if (ret) {
		report_html_free(s, pg);
		return 1;
	}
	if (session_group_recorded(s, "rss")) {
		FILE *f = page_output(pg, PV_RSS, s, &r), *svg = !r && pg->rss_svg[0] ? fopen(pg->rss_svg, "re") : NULL;

		fputs("<h2 id=\"rss\">RSS over time</h2>\n", out);
		if (svg)
			svg_object(out, svg, "rss-chart", "display:block");
		else
			fputs("<p>No RSS samples.</p>\n", out);
		if (svg)
			fclose(svg);
		if (f)
			fclose(f);
	}
	report_html_free(s, pg);
	fputs("</body>\n</html>\n", out);
	if (fflush(out) || ferror(out))
		return msg_error("cannot write '%s': %s", path, strerror(errno));
	msg_note("wrote '%s': %s%sthe report%s and %d flame graph%s", path, base ? "what changed, " : "",
		 had_errors ? "the memory errors, " : "", allocs_recorded(s) ? ", the leaks" : "", shown, cmd_s(shown));
	return ret;
}
