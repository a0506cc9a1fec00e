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
 * It runs those commands in this process with their output captured
 * (folded, leaks, rss) and memsight-flamegraph beside this program for the
 * SVGs, which go into the page as data: URIs, so the page needs no network
 * and no other file, and each graph's own script (zoom, search) runs in its
 * own document.
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

/* All of f, from its start, into a malloc'd buffer (*len bytes). */
static char *slurp(FILE *f, size_t *len)
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

/* The SVG of folded stacks in `folded`, into `svg`. */
static int flamegraph_run(FILE *folded, FILE *svg, const struct graph *g)
{
	char prog[4096], in[64], out[64], count[64];
	char *argv[16];
	int argc = 0, st;
	pid_t pid;

	/* Beside this program (a build tree, or where make install put
	 * both), else on PATH. */
	if (sibling_path("memsight-flamegraph", X_OK, prog, sizeof(prog)))
		snprintf(prog, sizeof(prog), "memsight-flamegraph");
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
	argv[argc++] = in;
	argv[argc] = NULL;
	pid = fork();
	if (pid < 0)
		return msg_error("cannot start %s: %s", prog, strerror(errno));
	if (!pid) {
		/* Each file from its start, in the child's own offsets. */
		lseek(fileno(folded), 0, SEEK_SET);
		execvp(prog, argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return msg_error("%s failed for '%s'%s", prog, g->title,
				 WIFEXITED(st) && WEXITSTATUS(st) == 127 ? ": is memsight installed completely?" : "");
	return 0;
}

static void svg_object(FILE *out, FILE *svg, const char *id, const char *style)
{
	size_t n = 0;
	char *p = slurp(svg, &n);

	fprintf(out, "<object id=\"%s\" type=\"image/svg+xml\" style=\"%s\" data=\"data:image/svg+xml;base64,", id, style);
	if (p)
		base64_out(out, (const unsigned char *)p, n);
	fputs("\"></object>\n", out);
	free(p);
}

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

/* The heaviest stacks the page's trees and caller/callee view are made of:
 * enough for what a person reads, and a page of a few MB at most. */
#define TREE_STACKS "500"

/* A command's --json, as the value of "key" in the page's data (null when
 * it fails: the trace lacks its events). JSON has '<' only in strings (a
 * path, a command line, from whoever made the trace): written \u003c, the
 * same string to JSON, it can neither end the script nor open a comment. */
static void data_json(FILE *out, const char *key, int (*fn)(int, char **, struct analyze_opts *), char **argv,
		      struct analyze_opts *a, int first)
{
	int r;
	FILE *f = captured(fn, argv, a, &r);
	size_t n = 0;
	char *t = f && !r ? slurp(f, &n) : NULL;

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
	free(t);
	if (f)
		fclose(f);
}

/* The page's data: what its summary and its tables are drawn from, the
 * commands' own JSON. */
static void page_data(FILE *out, const char *trace, struct session *s, struct analyze_opts *a)
{
	char *info[] = { "info", "--json", (char *)trace, NULL };
	char *report[] = { "report", "--json", "--no-lines", (char *)trace, NULL };
	char *leaks[] = { "leaks", "--json", "--no-lines", "--top", "3", (char *)trace, NULL };
	/* By function, what leaked where allocations were recorded (the
	 * offenders), else what the trace holds by default. */
	char *functions[] = { "functions", "--json", "--top", "200", (char *)trace, NULL, NULL, NULL, NULL, NULL };
	char *errors[] = { "errors", "--json", "--no-lines", (char *)trace, NULL };
	/* The stacks the trees are made of: what leaked, else the faults. */
	char *leak_stacks[] = { "leaks", "--json", "--no-lines", "--top", TREE_STACKS, (char *)trace, NULL };
	char *fault_stacks[] = { "faults", "--json", "--no-lines", "--top", TREE_STACKS, (char *)trace, NULL };

	fputs("<script type=\"application/json\" id=\"data\">{", out);
	data_json(out, "info", cmd_info, info, a, 1);
	data_json(out, "report", cmd_report, report, a, 0);
	if (allocs_recorded(s))
		data_json(out, "leaks", cmd_leaks, leaks, a, 0);
	else
		fputs(",\"leaks\":null", out);
	if (allocs_recorded(s)) {
		functions[4] = "-e";
		functions[5] = "malloc";
		functions[6] = "-w";
		functions[7] = "leaked";
		functions[8] = (char *)trace;
	}
	data_json(out, "functions", cmd_functions, functions, a, 0);
	if (allocs_recorded(s))
		data_json(out, "stacks", cmd_leaks, leak_stacks, a, 0);
	else if (session_group_recorded(s, "faults"))
		data_json(out, "stacks", cmd_faults, fault_stacks, a, 0);
	else
		fputs(",\"stacks\":null", out);
	if (session_group_recorded(s, "signals"))
		data_json(out, "errors", cmd_errors, errors, a, 0);
	else
		fputs(",\"errors\":null", out);
	fputs("}</script>\n", out);
}

/* Draws the summary and the table by function from the page's data. */
static const char page_script[] =
	"<script>\n"
	"(function () {\n"
	"  var d = JSON.parse(document.getElementById('data').textContent);\n"
	"  function bytes(v) {\n"
	"    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;\n"
	"    while (v >= 1024 && i < 4) { v /= 1024; i++; }\n"
	"    return i ? v.toFixed(1) + ' ' + u[i] : v + ' B';\n"
	"  }\n"
	"  function secs(t) { return t < 1 ? (t * 1000).toFixed(1) + ' ms' : t < 120 ? t.toFixed(1) + ' s' : (t / 60).toFixed(1) + ' min'; }\n"
	"  function count(n, what) { return n.toLocaleString('en') + ' ' + what + (n === 1 ? '' : 's'); }\n"
	"  function add(parent, tag, text, cls) {\n"
	"    var e = document.createElement(tag);\n"
	"    if (text !== undefined) e.textContent = text;\n"
	"    if (cls) e.className = cls;\n"
	"    parent.appendChild(e);\n"
	"    return e;\n"
	"  }\n"
	"  /* The first frame past the allocation functions: where a block was asked for. */\n"
	"  var alloc = /^(malloc|calloc|realloc|reallocarray|free|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|operator new.*|operator delete.*)$/;\n"
	"  function site(frames) {\n"
	"    for (var i = 0; i < frames.length; i++)\n"
	"      if (frames[i].function && !alloc.test(frames[i].function)) return frames[i].function;\n"
	"    return frames.length ? frames[0].function || '?' : '(no stack)';\n"
	"  }\n"
	"  var sum = document.getElementById('summary'), t = add(sum, 'table', undefined, 'summary');\n"
	"  function row(key, value, id) {\n"
	"    var r = add(t, 'tr');\n"
	"    add(r, 'th', key);\n"
	"    var c = add(r, 'td', value);\n"
	"    if (id) c.id = id;\n"
	"    return c;\n"
	"  }\n"
	"  var i = d.info;\n"
	"  if (i) {\n"
	"    row('Recorded', i.recorded_by || i.target || '');\n"
	"    row('For', secs(i.duration_s || 0) + ', ' + count(i.samples || 0, 'event') + ' kept');\n"
	"    row('Lost', i.lost ? count(i.lost, 'event') + ' lost: every figure counts only those kept' : 'nothing', 'sum-lost');\n"
	"    if (i.flight) row('Window', 'This file is ' + i.flight, 'sum-window');\n"
	"  }\n"
	"  var e = d.errors;\n"
	"  if (e && e.errors.length) {\n"
	"    var kinds = {};\n"
	"    e.errors.forEach(function (x) { kinds[x.kind] = (kinds[x.kind] || 0) + 1; });\n"
	"    row('Memory errors', Object.keys(kinds).map(function (k) { return kinds[k] + ' ' + k; }).join(', '), 'sum-errors');\n"
	"  }\n"
	"  var l = d.leaks;\n"
	"  if (l) {\n"
	"    var c = row('Leaked', bytes(l.leaked_bytes) + ' in ' + count(l.leaked_allocations, 'allocation') +\n"
	"                (l.estimate ? ' (estimated)' : ''), 'sum-leaked');\n"
	"    c.setAttribute('data-bytes', l.leaked_bytes);\n"
	"    l.stacks.slice(0, 3).forEach(function (s, k) {\n"
	"      row(k ? '' : 'Top stacks', bytes(s.bytes) + ' in ' + count(s.allocations, 'allocation') + ' from ' + site(s.frames) +\n"
	"          ' (pid ' + s.pid + ' ' + s.comm + ')');\n"
	"    });\n"
	"  }\n"
	"  var m = d.report && d.report.malloc;\n"
	"  if (m && m.peak && m.peak.bytes)\n"
	"    row('Peak heap', bytes(m.peak.bytes) + ' at +' + secs(m.peak.time_s || 0), 'sum-peak');\n"
	"  if (m) {\n"
	"    var calls = 0, temp = 0;\n"
	"    m.processes.forEach(function (p) { calls += p.calls; temp += p.temporary; });\n"
	"    row('Temporary', count(temp, 'allocation') + ' of ' + calls.toLocaleString('en') +\n"
	"        ' freed before the thread allocated again', 'sum-temporary');\n"
	"    /* Allocations by size: a bar for each power of two. */\n"
	"    var st = add(document.getElementById('sizes'), 'table', undefined, 'leaks'), most = 1;\n"
	"    st.id = 'sizes-table';\n"
	"    m.sizes.forEach(function (c) { if (c.allocations > most) most = c.allocations; });\n"
	"    var hr = add(st, 'tr');\n"
	"    ['size', 'allocations', 'bytes', ''].forEach(function (h) { add(hr, 'th', h); });\n"
	"    m.sizes.forEach(function (c) {\n"
	"      var r = add(st, 'tr');\n"
	"      add(r, 'td', c.up_to === null ? 'larger' : 'up to ' + bytes(c.up_to));\n"
	"      add(r, 'td', c.allocations.toLocaleString('en'));\n"
	"      add(r, 'td', bytes(c.bytes));\n"
	"      var bar = add(add(r, 'td'), 'div', undefined, 'bar');\n"
	"      bar.style.width = Math.max(1, Math.round(300 * c.allocations / most)) + 'px';\n"
	"    });\n"
	"  }\n"
	"  /* Over time: faults as bars, the heap as a line, brk growth summed; a drag selects a window. */\n"
	"  var tl = d.report && d.report.timeline;\n"
	"  if (tl && tl.faults.length) {\n"
	"    var ns = 'http://www.w3.org/2000/svg', W = 1000, H = 160, n = tl.faults.length, bw = W / n;\n"
	"    var tsec = document.getElementById('timeline');\n"
	"    function mk(tag, attrs, parent) {\n"
	"      var e = document.createElementNS(ns, tag);\n"
	"      for (var k in attrs) e.setAttribute(k, attrs[k]);\n"
	"      parent.appendChild(e);\n"
	"      return e;\n"
	"    }\n"
	"    var svg = mk('svg', { id: 'timeline-chart', viewBox: '0 0 ' + W + ' ' + (H + 24), width: '100%' }, tsec);\n"
	"    var most = function (a) { var m = 1; a.forEach(function (v) { if (v > m) m = v; }); return m; };\n"
	"    var fm = most(tl.faults);\n"
	"    tl.faults.forEach(function (v, i) {\n"
	"      if (v) mk('rect', { x: i * bw, y: H - H * v / fm, width: Math.max(bw - 0.5, 0.5), height: H * v / fm, fill: '#8ab0dc' }, svg);\n"
	"    });\n"
	"    var line = function (vals, color, id) {\n"
	"      var m = most(vals), pts = vals.map(function (v, i) { return (i * bw + bw / 2).toFixed(1) + ',' + (H - H * v / m).toFixed(1); });\n"
	"      mk('polyline', { id: id, points: pts.join(' '), fill: 'none', stroke: color, 'stroke-width': 2 }, svg);\n"
	"      return m;\n"
	"    };\n"
	"    var legend = ['page faults: bars, up to ' + fm.toLocaleString('en') + ' a bucket'];\n"
	"    if (tl.heap_bytes) legend.push('malloc heap in use: red, up to ' + bytes(line(tl.heap_bytes, '#c33', 'timeline-heap')));\n"
	"    var sum = 0, grown = tl.brk_bytes.map(function (v) { return sum += v; });\n"
	"    if (sum) legend.push('brk growth so far: green, ' + bytes(line(grown, '#393', 'timeline-brk')));\n"
	"    var end = tl.start_s + n * tl.bucket_s;\n"
	"    mk('text', { x: 0, y: H + 18, 'font-size': 12 }, svg).textContent = '+' + secs(tl.start_s);\n"
	"    mk('text', { x: W, y: H + 18, 'font-size': 12, 'text-anchor': 'end' }, svg).textContent = '+' + secs(end);\n"
	"    add(tsec, 'p', legend.join('; ') + '. Drag across the chart to select a window.');\n"
	"    var out = add(tsec, 'p'), sel = mk('rect', { y: 0, height: H, fill: 'rgba(0,0,0,0.12)', width: 0 }, svg), from = null;\n"
	"    out.id = 'timeline-range';\n"
	"    var at = function (ev) {\n"
	"      var b = svg.getBoundingClientRect();\n"
	"      return Math.min(W, Math.max(0, (ev.clientX - b.left) * W / b.width));\n"
	"    };\n"
	"    svg.onmousedown = function (ev) { from = at(ev); sel.setAttribute('x', from); sel.setAttribute('width', 0); ev.preventDefault(); };\n"
	"    svg.onmousemove = function (ev) {\n"
	"      if (from === null) return;\n"
	"      var x = at(ev);\n"
	"      sel.setAttribute('x', Math.min(from, x));\n"
	"      sel.setAttribute('width', Math.abs(x - from));\n"
	"    };\n"
	"    svg.onmouseup = function (ev) {\n"
	"      if (from === null) return;\n"
	"      var x = at(ev), i = Math.floor(Math.min(from, x) / bw), j = Math.min(n, Math.ceil(Math.max(from, x) / bw));\n"
	"      from = null;\n"
	"      if (j <= i) j = i + 1;\n"
	"      var a = tl.start_s + i * tl.bucket_s, z = tl.start_s + j * tl.bucket_s, f = 0;\n"
	"      for (var k = i; k < j; k++) f += tl.faults[k];\n"
	"      out.textContent = 'From +' + a.toFixed(3) + ' s to +' + z.toFixed(3) + ' s: ' + count(f, 'page fault') +\n"
	"        (tl.heap_bytes ? ', the heap up to ' + bytes(most(tl.heap_bytes.slice(i, j))) : '') +\n"
	"        '. The leaks of that window: memsight leaks --time ' + a.toFixed(3) + ',' + z.toFixed(3) + ' ' + (d.info ? d.info.trace : '');\n"
	"    };\n"
	"  }\n"
	"  /* Top-down and bottom-up trees of the heaviest stacks, and the callers\n"
	"   * and callees of a function clicked anywhere on the page. */\n"
	"  var st = d.stacks, paths = [];\n"
	"  if (st && st.stacks) {\n"
	"    st.stacks.forEach(function (x) {\n"
	"      var fr = x.frames.filter(function (f) { return !f.kernel || st.faults !== undefined; })\n"
	"                       .map(function (f) { return f.function || ('[' + (f.object || 'unknown') + ']'); });\n"
	"      /* a leak is its asker's: the allocation functions above it left out */\n"
	"      while (x.bytes !== undefined && fr.length > 1 && alloc.test(fr[0])) fr.shift();\n"
	"      paths.push({ w: x.bytes !== undefined ? x.bytes : x.faults, n: x.allocations !== undefined ? x.allocations : x.faults, f: fr });\n"
	"    });\n"
	"  }\n"
	"  var unit = st && st.leaked_bytes !== undefined ? 'bytes' : 'faults';\n"
	"  var fmt = function (v) { return unit === 'bytes' ? bytes(v) : v.toLocaleString('en') + ' faults'; };\n"
	"  var total = 0;\n"
	"  paths.forEach(function (p) { total += p.w; });\n"
	"  function tree(root, order) {\n"
	"    var top = { kids: {}, w: 0, n: 0 };\n"
	"    paths.forEach(function (p) {\n"
	"      var node = top, fr = order === 'down' ? p.f.slice().reverse() : p.f;\n"
	"      top.w += p.w; top.n += p.n;\n"
	"      fr.forEach(function (name) {\n"
	"        node = node.kids[name] || (node.kids[name] = { name: name, kids: {}, w: 0, n: 0 });\n"
	"        node.w += p.w; node.n += p.n;\n"
	"      });\n"
	"    });\n"
	"    function draw(parent, node, depth) {\n"
	"      Object.keys(node.kids).map(function (k) { return node.kids[k]; })\n"
	"        .sort(function (a, b) { return b.w - a.w; }).forEach(function (k) {\n"
	"          var det = add(parent, 'details'), sm = add(det, 'summary');\n"
	"          add(sm, 'span', fmt(k.w) + ' (' + (total ? (100 * k.w / total).toFixed(1) : '0') + '%), ' + k.n.toLocaleString('en') + ' ' + (unit === 'bytes' ? 'allocations' : 'faults') + ' ');\n"
	"          var fn = add(sm, 'a', k.name, 'fn');\n"
	"          fn.href = '#callers-head';\n"
	"          if (depth < 1) det.open = true;\n"
	"          var filled = false;\n"
	"          det.ontoggle = function () { if (det.open && !filled) { filled = true; draw(det, k, depth + 1); } };\n"
	"          if (det.open) { filled = true; draw(det, k, depth + 1); }\n"
	"        });\n"
	"    }\n"
	"    draw(root, top, 0);\n"
	"  }\n"
	"  if (paths.length) {\n"
	"    var lead = (unit === 'bytes' ? 'What leaked' : 'The page faults') + ', ' + fmt(total) + ', from ' +\n"
	"      (paths.length === 1 ? 'its one stack' : 'the ' + paths.length + ' heaviest stacks');\n"
	"    add(document.getElementById('topdown'), 'p', lead + ', from the outermost callers in:');\n"
	"    tree(document.getElementById('topdown'), 'down');\n"
	"    add(document.getElementById('bottomup'), 'p', lead + ', from the functions that asked out:');\n"
	"    tree(document.getElementById('bottomup'), 'up');\n"
	"  }\n"
	"  /* Callers and callees: the frames next to each place the function is in. */\n"
	"  function callers(name) {\n"
	"    var sec = document.getElementById('callers'), up = {}, down = {}, self = 0, all = 0;\n"
	"    paths.forEach(function (p) {\n"
	"      var seen = false;\n"
	"      p.f.forEach(function (f, i) {\n"
	"        if (f !== name) return;\n"
	"        if (!seen) { all += p.w; seen = true; }\n"
	"        if (i === 0) self += p.w;\n"
	"        if (i + 1 < p.f.length) up[p.f[i + 1]] = (up[p.f[i + 1]] || 0) + p.w;\n"
	"        if (i > 0) down[p.f[i - 1]] = (down[p.f[i - 1]] || 0) + p.w;\n"
	"      });\n"
	"    });\n"
	"    sec.textContent = '';\n"
	"    add(sec, 'p', name + ': ' + fmt(all) + ' in all, ' + fmt(self) + ' in it itself.', 'callers-of');\n"
	"    [['Callers', up, 'callers-list'], ['Callees', down, 'callees-list']].forEach(function (c) {\n"
	"      add(sec, 'h3', c[0]);\n"
	"      var ul = add(sec, 'ul');\n"
	"      ul.id = c[2];\n"
	"      Object.keys(c[1]).sort(function (a, b) { return c[1][b] - c[1][a]; }).forEach(function (k) {\n"
	"        var li = add(ul, 'li', fmt(c[1][k]) + ' ');\n"
	"        var a = add(li, 'a', k, 'fn');\n"
	"        a.href = '#callers-head';\n"
	"      });\n"
	"      if (!ul.firstChild) add(ul, 'li', '(none)');\n"
	"    });\n"
	"  }\n"
	"  /* A function clicked: its callers and callees, and the URL says so (a\n"
	"   * permalink: #callers=NAME opens on them). */\n"
	"  document.addEventListener('click', function (ev) {\n"
	"    var t = ev.target;\n"
	"    if (t && t.classList && t.classList.contains('fn') && paths.length) {\n"
	"      callers(t.textContent);\n"
	"      history.replaceState(null, '', '#callers=' + encodeURIComponent(t.textContent));\n"
	"      ev.preventDefault();\n"
	"      document.getElementById('callers-head').scrollIntoView();\n"
	"    }\n"
	"  });\n"
	"  if (location.hash.indexOf('#callers=') === 0 && paths.length)\n"
	"    callers(decodeURIComponent(location.hash.slice(9)));\n"
	"  var f = d.functions;\n"
	"  if (f && f.functions.length) {\n"
	"    f.functions.filter(function (x) { return x.self > 0; }).slice(0, 3).forEach(function (x, k) {\n"
	"      var w = function (v) { return f.weight === 'count' ? v.toLocaleString('en') : bytes(v); };\n"
	"      row(k ? '' : 'Top functions', x.function + ': ' + w(x.self) + ' self, ' + w(x.total) + ' total (' + f.event +\n"
	"          ', ' + f.weight + ')');\n"
	"    });\n"
	"    /* The flat table, sorted by a click on a column's head. */\n"
	"    var sec = document.getElementById('functions');\n"
	"    var q = add(sec, 'input');\n"
	"    q.id = 'function-search';\n"
	"    q.placeholder = 'search functions (press /)';\n"
	"    q.oninput = function () {\n"
	"      var s = q.value.toLowerCase();\n"
	"      Array.prototype.forEach.call(body.rows, function (r) {\n"
	"        r.style.display = r.cells[0].textContent.toLowerCase().indexOf(s) < 0 ? 'none' : '';\n"
	"      });\n"
	"    };\n"
	"    document.addEventListener('keydown', function (ev) {\n"
	"      if (ev.key === '/' && document.activeElement !== q) { ev.preventDefault(); q.focus(); }\n"
	"    });\n"
	"    var tb = add(sec, 'table', undefined, 'leaks');\n"
	"    tb.id = 'functions-table';\n"
	"    var head = add(tb, 'tr'), cols = ['function', 'object', 'self', 'total'], body = add(tb, 'tbody');\n"
	"    function fill(rows) {\n"
	"      body.textContent = '';\n"
	"      rows.forEach(function (x) {\n"
	"        var r = add(body, 'tr');\n"
	"        cols.forEach(function (k) {\n"
	"          var c = add(r, 'td', k === 'function' ? undefined : x[k] === null ? '' : String(x[k]));\n"
	"          if (k === 'function') { var a = add(c, 'a', x[k], 'fn'); a.href = '#callers-head'; }\n"
	"        });\n"
	"      });\n"
	"    }\n"
	"    cols.forEach(function (k) {\n"
	"      var h = add(head, 'th', k);\n"
	"      h.style.cursor = 'pointer';\n"
	"      h.onclick = function () {\n"
	"        var num = k === 'self' || k === 'total';\n"
	"        fill(f.functions.slice().sort(function (a, b) {\n"
	"          return num ? b[k] - a[k] : String(a[k]).localeCompare(String(b[k]));\n"
	"        }));\n"
	"      };\n"
	"    });\n"
	"    add(sec, 'p', 'By ' + f.event + ', weighted by ' + f.weight + (f.estimate ? ' (estimates)' : '') + '; ' +\n"
	"        f.functions_shown + ' of ' + f.functions_total + ' functions.');\n"
	"    fill(f.functions);\n"
	"  }\n"
	"})();\n"
	"</script>\n";

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


int report_html(FILE *out, const char *path, const char *trace, const char *text, size_t text_len, struct session *s,
		struct analyze_opts *a)
{
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
	      "button { margin: 0.3em 0; }\n"
	      "table.summary th { text-align: left; padding-right: 1em; vertical-align: top; }\n"
	      "div.bar { background: #c33; height: 0.8em; }\n"
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
	if (session_group_recorded(s, "signals")) {
		char *argv[] = { "errors", "--fail", (char *)trace, NULL };

		errors = captured(cmd_errors, argv, a, &r);
		if (r != 3 && errors) {
			fclose(errors);
			errors = NULL;
		}
	}
	fputs("Each flame graph zooms on a click and searches with its Search button (or Ctrl-F); its Icicle "
	      "button turns it into an icicle graph (roots on top). Frames narrower than " HTML_MINWIDTH
	      " pixel are merged into their callers; each graph says how many.</p>\n<nav>",
	      out);
	if (errors)
		fputs("<a href=\"#errors\">memory errors</a>", out);
	fputs("<a href=\"#summary-head\">summary</a><a href=\"#timeline-head\">over time</a>"
	      "<a href=\"#functions-head\">functions</a><a href=\"#topdown-head\">top-down</a>"
	      "<a href=\"#bottomup-head\">bottom-up</a><a href=\"#callers-head\">callers</a>", out);
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
		char *t = slurp(errors, &n);

		fputs("<h2 id=\"errors\">Memory errors</h2>\n<pre>", out);
		if (t)
			cmd_markup_escape(out, t, n);
		fputs("</pre>\n", out);
		free(t);
		fclose(errors);
		had_errors = 1;
	}
	fputs("<h2 id=\"timeline-head\">Over time</h2>\n<section id=\"timeline\"></section>\n", out);
	fputs("<h2 id=\"functions-head\">By function</h2>\n<section id=\"functions\"></section>\n", out);
	fputs("<h2 id=\"topdown-head\">Top-down</h2>\n<section id=\"topdown\"></section>\n"
	      "<h2 id=\"bottomup-head\">Bottom-up</h2>\n<section id=\"bottomup\"></section>\n"
	      "<h2 id=\"callers-head\">Callers and callees</h2>\n<section id=\"callers\"><p>Click a function anywhere on "
	      "the page.</p></section>\n",
	      out);
	if (allocs_recorded(s))
		fputs("<h2 id=\"sizes-head\">Allocation sizes</h2>\n<section id=\"sizes\"></section>\n", out);
	fputs("<h2 id=\"report\">Report</h2>\n<pre>", out);
	cmd_markup_escape(out, text, text_len);
	fputs("</pre>\n", out);

	if (allocs_recorded(s)) {
		char *argv[] = { "leaks", "--top", "50", (char *)trace, NULL };
		FILE *f = captured(cmd_leaks, argv, a, &r);
		size_t n = 0;
		char *t = f ? slurp(f, &n) : NULL;

		fputs("<h2 id=\"leaks\">Leaks</h2>\n", out);
		if (t)
			leaks_section(out, t);
		free(t);
		if (f)
			fclose(f);
		ret |= r > 1;
	}
	for (size_t i = 0; i < sizeof(graphs) / sizeof(graphs[0]); i++) {
		const struct graph *g = &graphs[i];
		char *argv[] = { "folded", "-e", (char *)g->event, "-w", (char *)g->weight, (char *)trace, NULL };
		FILE *folded, *svg = NULL;
		char id[32];

		if (!session_group_recorded(s, g->group))
			continue;
		folded = captured(cmd_folded, argv, a, &r);
		if (!folded)
			return 1;
		fprintf(out, "<h2 id=\"g%zu\">", i);
		cmd_markup_escape(out, g->title, strlen(g->title));
		fputs("</h2>\n", out);
		fflush(folded);
		if (r || ftell(folded) == 0) {
			fputs("<p>No stacks.</p>\n", out);
			fclose(folded);
			continue;
		}
		/* One graph: its own Icicle button turns it the other way up. */
		snprintf(id, sizeof(id), "g%zu-flame", i);
		svg = tmpfile();
		if (!svg || flamegraph_run(folded, svg, g)) {
			if (svg)
				fclose(svg);
			fclose(folded);
			return 1;
		}
		svg_object(out, svg, id, "display:block");
		fclose(svg);
		fclose(folded);
		shown++;
	}
	if (session_group_recorded(s, "rss")) {
		char tmp[] = "/tmp/memsight-rss-XXXXXX";
		int fd = mkstemp(tmp);

		fputs("<h2 id=\"rss\">RSS over time</h2>\n", out);
		if (fd >= 0) {
			char *argv[] = { "rss", "--svg", tmp, (char *)trace, NULL };
			FILE *f = captured(cmd_rss, argv, a, &r), *svg = fdopen(fd, "r");

			if (!r && svg)
				svg_object(out, svg, "rss-chart", "display:block");
			else
				fputs("<p>No RSS samples.</p>\n", out);
			if (svg)
				fclose(svg);
			else
				close(fd);
			if (f)
				fclose(f);
			unlink(tmp);
		}
	}
	page_data(out, trace, s, a);
	fputs(page_script, out);
	fputs("</body>\n</html>\n", out);
	if (fflush(out) || ferror(out))
		return msg_error("cannot write '%s': %s", path, strerror(errno));
	msg_note("wrote '%s': %sthe report%s and %d flame graph%s", path, had_errors ? "the memory errors, " : "",
		 allocs_recorded(s) ? ", the leaks" : "", shown, cmd_s(shown));
	return ret;
}
