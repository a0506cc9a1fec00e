/*
 * flamegraph/svg.c: an interactive flame graph as one SVG file.
 *
 * Layout is computed from the tree in one depth-first pass: a frame's x is
 * its parent's x plus the values of the siblings before it. Frames narrower
 * than minwidth are left out (their value still counts in the parent), which
 * bounds the file whatever the input size. Colours are a hash of the name,
 * so a function keeps its colour across graphs. The script (zoom, search,
 * tooltips) is ours and embedded, so the file works offline.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../formats/msg.h"
#include "flame.h"

#define FRAME_H 16
#define FONT_SIZE 12
#define PAD_TOP 56
#define PAD_BOTTOM 36
#define PAD_SIDE 10
/* Frames drawn above the root at most: 4096 levels are an image 65536
 * pixels tall already, and a crafted line of a million frames would make
 * a file of hundreds of megabytes. */
#define MAX_DEPTH 4096

const char *const flame_palettes[] = { "mem", "hot", "io", "red", "green", "blue", "aqua", "yellow",
				       "purple", "orange", NULL };

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 when it is
 * not one: a stray byte, an overlong or surrogate form, a code point XML
 * does not allow (U+FFFE, U+FFFF). */
static int utf8_len(const unsigned char *s)
{
	unsigned c = s[0], cp;
	int n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff) ||
	    cp == 0xfffe || cp == 0xffff)
		return 0;
	return n;
}

/* Text as XML character data: the five specials escaped, what XML 1.0
 * cannot hold (control characters, bytes that are not UTF-8) shown as
 * U+FFFD, at most max characters of it (-1: all). */
static void xml_escape_n(FILE *f, const char *text, long max)
{
	const unsigned char *s = (const unsigned char *)text;

	for (; *s && max; max--) {
		int n = utf8_len(s);

		switch (n ? *s : 0) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if (!n || (*s < 0x20 && *s != '\t'))
				fputs("\xef\xbf\xbd", f);
			else
				fwrite(s, 1, n, f);
		}
		s += n ? n : 1;
	}
}

static void xml_escape(FILE *f, const char *s)
{
	xml_escape_n(f, s, -1);
}

/* Characters (not bytes) of s, as the label's width counts them. */
static size_t utf8_chars(const char *text)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t n = 0;

	for (; *s; n++) {
		int l = utf8_len(s);

		s += l ? l : 1;
	}
	return n;
}

static uint32_t name_hash(const char *s, int which)
{
	uint32_t h = 2166136261u ^ (uint32_t)which * 0x9e3779b9u;

	/* Module prefixes ("libc.so.6`") should not decide the colour. */
	const char *tick = strchr(s, '`');
	if (tick)
		s = tick + 1;
	for (; *s && *s != '('; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return h;
}

static void colour(const char *palette, const char *name, int *r, int *g, int *b)
{
	double v1 = (name_hash(name, 1) % 1000) / 1000.0;
	double v2 = (name_hash(name, 2) % 1000) / 1000.0;
	double v3 = (name_hash(name, 3) % 1000) / 1000.0;
	size_t l = strlen(name);
	int kernel = l > 4 && !strcmp(name + l - 4, "_[k]");

	if (!strcmp(palette, "mem")) {
		/* Greens to teals; kernel frames lean to teal. */
		*r = (int)(20 * v3);
		*g = (int)(160 + 70 * v1);
		*b = (int)((kernel ? 150 : 40) + 90 * v2);
	} else if (!strcmp(palette, "hot")) {
		*r = 205 + (int)(50 * v3);
		*g = (int)(230 * v1);
		*b = (int)(55 * v2);
		if (kernel) {
			*g = 150 + (int)(60 * v1);
			*b = 40;
		}
	} else if (!strcmp(palette, "io")) {
		*r = 80 + (int)(60 * v1);
		*g = *r;
		*b = 190 + (int)(55 * v2);
	} else if (!strcmp(palette, "red")) {
		*r = 200 + (int)(55 * v1);
		*g = *b = 50 + (int)(80 * v1);
	} else if (!strcmp(palette, "green")) {
		*g = 200 + (int)(55 * v1);
		*r = *b = 50 + (int)(60 * v1);
	} else if (!strcmp(palette, "blue")) {
		*b = 205 + (int)(50 * v1);
		*r = *g = 80 + (int)(60 * v1);
	} else if (!strcmp(palette, "aqua")) {
		*r = 50 + (int)(60 * v1);
		*g = 165 + (int)(55 * v1);
		*b = 165 + (int)(55 * v1);
	} else if (!strcmp(palette, "yellow")) {
		*r = 175 + (int)(55 * v1);
		*g = 175 + (int)(55 * v1);
		*b = 50 + (int)(20 * v1);
	} else if (!strcmp(palette, "purple")) {
		*r = 190 + (int)(65 * v1);
		*g = 80 + (int)(60 * v1);
		*b = 190 + (int)(65 * v1);
	} else { /* orange */
		*r = 190 + (int)(65 * v1);
		*g = 90 + (int)(65 * v1);
		*b = 0;
	}
}

/* The tree is walked with a stack of its own, not the C stack: a folded
 * line can be a million frames deep. */
struct visit {
	const struct flame_node *n;
	double x;
	int depth;
};

struct visits {
	struct visit *v;
	size_t nr, alloc;
};

static int visit_push(struct visits *st, const struct flame_node *n, double x, int depth)
{
	if (st->nr == st->alloc) {
		size_t a = st->alloc ? st->alloc * 2 : 256;
		struct visit *v = realloc(st->v, a * sizeof(*v));

		if (!v)
			return -1;
		st->v = v;
		st->alloc = a;
	}
	st->v[st->nr++] = (struct visit){ n, x, depth };
	return 0;
}

/* Depth of the frames that will be drawn: narrower ones are left out, so
 * they must not make the image taller. -1 when out of memory. */
static int depth_of(const struct flame_node *root, double scale, double minwidth)
{
	struct visits st = { 0 };
	int d = 0;

	if (visit_push(&st, root, 0, 1))
		return -1;
	while (st.nr) {
		struct visit v = st.v[--st.nr];

		if (v.depth > d)
			d = v.depth;
		if (v.depth > MAX_DEPTH)
			continue;
		for (size_t i = 0; i < v.n->nr_kids; i++)
			if (v.n->kids[i]->value * scale >= minwidth && visit_push(&st, v.n->kids[i], 0, v.depth + 1)) {
				free(st.v);
				return -1;
			}
	}
	free(st.v);
	return d;
}

struct layout {
	FILE *f;
	const struct flame_opts *o;
	double scale;	  /* pixels per unit of value */
	double total;
	int height;
	unsigned long frames;
	unsigned long cut;	/* frames at MAX_DEPTH whose callees were left out */
	unsigned long narrow;	/* frames left out for minwidth, with everything above them */
};

/* A frame and every frame above it. */
static unsigned long subtree_frames(const struct flame_node *n)
{
	unsigned long c = 1;

	for (size_t i = 0; i < n->nr_kids; i++)
		c += subtree_frames(n->kids[i]);
	return c;
}

static void frame_out(struct layout *L, const struct flame_node *n, const char *label, double x_units,
		      int depth)
{
	double x = PAD_SIDE + x_units * L->scale, w = n->value * L->scale;
	int y = L->o->inverted ? PAD_TOP + depth * FRAME_H : L->height - PAD_BOTTOM - (depth + 1) * FRAME_H;
	int r, g, b;
	double pct = L->total > 0 ? 100.0 * n->value / L->total : 0;
	int chars = (int)((w - 6) / (FONT_SIZE * 0.59));

	if (L->o->diff) {
		/* Red where the frame grew since the base, blue where it
		 * shrank, deeper the larger the change against its size. */
		double d = n->value - n->base, m = n->value > n->base ? n->value : n->base;
		int shade = m > 0 ? (int)(210 * fabs(d) / m) : 0;

		r = g = b = 245 - shade / 4;
		if (d > 0)
			r = 255, g = b = 235 - shade;
		else if (d < 0)
			b = 255, r = g = 235 - shade;
	} else if (depth == 0) {
		r = 200, g = 200, b = 200;
		if (!strcmp(L->o->palette, "mem"))
			r = 170, g = 210, b = 170;
	} else {
		colour(L->o->palette, label, &r, &g, &b);
	}
	fprintf(L->f, "<g class=\"f\" data-v=\"%.17g\" data-x=\"%.17g\" data-d=\"%d\"><title>", n->value, x_units, depth);
	xml_escape(L->f, label);
	fprintf(L->f, " (%.15g %s, %.2f%%", n->value, L->o->countname, pct);
	if (L->o->diff)
		fprintf(L->f, ", %+.15g since the base", n->value - n->base);
	fprintf(L->f, ")</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
		      "fill=\"rgb(%d,%d,%d)\" rx=\"2\"/><text x=\"%.2f\" y=\"%d\">",
		x, y, w, FRAME_H - 1, r, g, b, x + 3, y + FRAME_H - 4);
	if (chars >= 3) {
		/* Cut between characters, never inside one. */
		if ((size_t)chars >= utf8_chars(label)) {
			xml_escape(L->f, label);
		} else {
			xml_escape_n(L->f, label, chars - 2);
			fputs("..", L->f);
		}
	}
	fputs("</text></g>\n", L->f);
	L->frames++;
}

/* Every drawable frame, parents before children, siblings in order. */
static int walk(struct layout *L, const struct flame_node *root)
{
	struct visits st = { 0 };

	if (visit_push(&st, root, 0, 0))
		return -1;
	while (st.nr) {
		struct visit v = st.v[--st.nr];
		double x = v.x;

		if (v.n->value * L->scale < L->o->minwidth) {
			L->narrow += subtree_frames(v.n);
			continue;
		}
		frame_out(L, v.n, v.depth ? v.n->name : "all", v.x, v.depth);
		if (v.depth == MAX_DEPTH) {
			L->cut += v.n->nr_kids > 0;
			continue;
		}
		for (size_t i = 0; i < v.n->nr_kids; i++)
			x += v.n->kids[i]->value;
		/* Pushed last first, so the first is drawn first. */
		for (size_t i = v.n->nr_kids; i-- > 0;) {
			x -= v.n->kids[i]->value;
			if (visit_push(&st, v.n->kids[i], x, v.depth + 1)) {
				free(st.v);
				return -1;
			}
		}
	}
	free(st.v);
	return 0;
}

#define STR_(x) #x
#define STR(x) STR_(x)

static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var svg = document.documentElement, frames = [], zoomed = null, matchRe = null;\n"
	"var W = +svg.getAttribute('data-width'), SIDE = +svg.getAttribute('data-side');\n"
	"var TOTAL = +svg.getAttribute('data-total'), UNIT = svg.getAttribute('data-unit');\n"
	"var H = +svg.getAttribute('data-height'), INV = svg.getAttribute('data-inverted') === '1';\n"
	"var details, matched, resetBtn, searchBtn, flipBtn;\n"
	"function init() {\n"
	"  details = document.getElementById('details'); matched = document.getElementById('matched');\n"
	"  resetBtn = document.getElementById('reset'); searchBtn = document.getElementById('search');\n"
	"  var gs = document.getElementsByClassName('f');\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], t = g.querySelector('title').textContent;\n"
	"    frames.push({g: g, r: g.querySelector('rect'), t: g.querySelector('text'),\n"
	"      name: t.replace(/ \\([^()]*\\)$/, ''), info: t, v: +g.getAttribute('data-v'),\n"
	"      x: +g.getAttribute('data-x'), d: +g.getAttribute('data-d')});\n"
	"  }\n"
	"  frames.forEach(function (f) {\n"
	"    f.g.addEventListener('click', function () { zoom(f); tell(f); });\n"
	"    f.g.addEventListener('mouseover', function () { details.textContent = f.info; });\n"
	"    f.g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  });\n"
	"  resetBtn.addEventListener('click', function () { zoom(null); });\n"
	"  flipBtn = document.getElementById('flip');\n"
	"  flipBtn.addEventListener('click', flip);\n"
	"  searchBtn.addEventListener('click', function () { search(); });\n"
	"  document.addEventListener('keydown', function (e) {\n"
	"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); search(); }\n"
	"    if (e.key === 'Escape') { zoom(null); clearSearch(); }\n"
	"  });\n"
	"  /* A search in the address (graph.svg?s=REGEX), as a link can carry it. */\n"
	"  var q = /[?#&]s=([^&#]*)/.exec(location.href);\n"
	"  if (q) searchFor(decodeURIComponent(q[1]));\n"
	"  /* And the other way up (graph.svg#flip). */\n"
	"  if (/[?#&]flip(&|$)/.test(location.href)) flip();\n"
	"}\n"
	"/* In a page (report --html), a frame clicked is told to the page by its\n"
	" * name: the graph is a document of its own, and the page offers the\n"
	" * function's callers. */\n"
	"function tell(f) {\n"
	"  if (window.parent !== window) window.parent.postMessage({ memsightFrame: f.name }, '*');\n"
	"}\n"
	"function fit(f, w) {\n"
	"  var n = Math.floor((w - 6) / (" "12" " * 0.59));\n"
	"  f.t.textContent = n < 3 ? '' : (f.name.length <= n ? f.name : f.name.slice(0, n - 2) + '..');\n"
	"}\n"
	"function zoom(z) {\n"
	"  zoomed = z; var x0 = z ? z.x : 0, span = z ? z.v : TOTAL, k = (W - 2 * SIDE) / span;\n"
	"  frames.forEach(function (f) {\n"
	"    var inside = !z || (f.x >= x0 - 1e-9 && f.x + f.v <= x0 + span + 1e-9 && f.d >= z.d);\n"
	"    var above = z && f.d < z.d && f.x <= x0 + 1e-9 && f.x + f.v >= x0 + span - 1e-9;\n"
	"    if (!inside && !above) { f.g.style.display = 'none'; return; }\n"
	"    f.g.style.display = '';\n"
	"    var x = above ? SIDE : SIDE + (f.x - x0) * k, w = above ? W - 2 * SIDE : f.v * k;\n"
	"    f.r.setAttribute('x', x.toFixed(2)); f.r.setAttribute('width', w.toFixed(2));\n"
	"    f.t.setAttribute('x', (x + 3).toFixed(2)); f.g.style.opacity = above ? 0.5 : 1; fit(f, w);\n"
	"  });\n"
	"  resetBtn.style.opacity = z ? 1 : 0;\n"
	"}\n"
	"/* Roots at the bottom (a flame graph) or at the top (an icicle graph). */\n"
	"function flip() {\n"
	"  INV = !INV;\n"
	"  frames.forEach(function (f) {\n"
	"    var y = INV ? " STR(PAD_TOP) " + f.d * " STR(FRAME_H) " : H - " STR(PAD_BOTTOM) " - (f.d + 1) * " STR(FRAME_H) ";\n"
	"    f.r.setAttribute('y', y); f.t.setAttribute('y', y + " STR(FRAME_H) " - 4);\n"
	"  });\n"
	"  flipBtn.textContent = INV ? 'Flame graph' : 'Icicle';\n"
	"}\n"
	"function clearSearch() {\n"
	"  matchRe = null; frames.forEach(function (f) { f.r.style.fill = ''; });\n"
	"  matched.textContent = ' '; searchBtn.style.opacity = 0.6;\n"
	"}\n"
	"function search() {\n"
	"  var term = prompt('Search (regular expression)' + (matchRe ? ', empty to clear' : ''), '');\n"
	"  if (term !== null) searchFor(term);\n"
	"}\n"
	"function searchFor(term) {\n"
	"  if (term === '') { clearSearch(); return; }\n"
	"  try { matchRe = new RegExp(term); } catch (e) { alert('not a regular expression: ' + e.message); return; }\n"
	"  var spans = [];\n"
	"  frames.forEach(function (f) {\n"
	"    var hit = f.d > 0 && matchRe.test(f.name); f.r.style.fill = hit ? 'rgb(230,0,230)' : '';\n"
	"    if (hit) spans.push([f.x, f.x + f.v]);\n"
	"  });\n"
	"  /* Nested matches count once: merge the covered ranges. */\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  var sum = 0, end = -Infinity;\n"
	"  spans.forEach(function (s) {\n"
	"    if (s[0] >= end) { sum += s[1] - s[0]; end = s[1]; }\n"
	"    else if (s[1] > end) { sum += s[1] - end; end = s[1]; }\n"
	"  });\n"
	"  matched.textContent = 'Matched: ' + (TOTAL ? (100 * sum / TOTAL).toFixed(2) : '0') + '% (' + sum + ' ' + UNIT + ')';\n"
	"  searchBtn.style.opacity = 1;\n"
	"}\n"
	"window.addEventListener('load', init);\n"
	"]]></script>\n";

int flame_svg_write(FILE *f, const struct flame_node *root, const struct flame_opts *o)
{
	struct layout L = { f, o, 0, root->value, 0, 0, 0, 0 };
	int mem = !strcmp(o->palette, "mem"), depth;

	L.scale = root->value > 0 ? (o->width - 2 * PAD_SIDE) / root->value : 0;
	/* A total so small (3e-313) that the width over it is past every
	 * double draws nothing, rather than frames of infinite width. */
	if (!isfinite(L.scale))
		L.scale = 0;
	depth = depth_of(root, L.scale, o->minwidth);
	if (depth < 0)
		return -1;
	if (depth > MAX_DEPTH + 1)
		depth = MAX_DEPTH + 1;
	L.height = PAD_TOP + depth * FRAME_H + PAD_BOTTOM;
	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n");
	fprintf(f, "<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" "
		   "xmlns=\"http://www.w3.org/2000/svg\" data-width=\"%.0f\" data-side=\"%d\" data-total=\"%.17g\" "
		   "data-height=\"%d\" data-inverted=\"%d\" data-unit=\"",
		o->width, L.height, o->width, L.height, o->width, PAD_SIDE, root->value, L.height, o->inverted ? 1 : 0);
	xml_escape(f, o->countname);
	fprintf(f, "\">\n");
	fprintf(f, "<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
		   "<stop stop-color=\"%s\" offset=\"5%%\"/><stop stop-color=\"%s\" offset=\"95%%\"/>"
		   "</linearGradient></defs>\n",
		mem ? "#eef2ee" : "#eeeeee", mem ? "#e0ffe0" : "#eeeeb0");
	fprintf(f, "<style type=\"text/css\">text { font-family: Verdana, sans-serif; font-size: %dpx; fill: #000; }"
		   " .f text { pointer-events: none; } .f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }"
		   " #title { font-size: 17px; } .btn { cursor: pointer; }</style>\n",
		FONT_SIZE);
	fputs(script, f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"url(#bg)\"/>\n");
	fprintf(f, "<text id=\"title\" x=\"%.0f\" y=\"24\" text-anchor=\"middle\">", o->width / 2);
	xml_escape(f, o->title);
	fprintf(f, "</text>\n");
	if (o->subtitle && o->subtitle[0]) {
		fprintf(f, "<text id=\"subtitle\" x=\"%.0f\" y=\"42\" text-anchor=\"middle\" fill=\"#555\">", o->width / 2);
		xml_escape(f, o->subtitle);
		fprintf(f, "</text>\n");
	}
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD_SIDE, L.height - 12);
	fprintf(f, "<text id=\"reset\" class=\"btn\" x=\"%d\" y=\"24\" style=\"opacity:0\">Reset Zoom</text>\n",
		PAD_SIDE);
	fprintf(f, "<text id=\"search\" class=\"btn\" x=\"%.0f\" y=\"24\" text-anchor=\"end\" style=\"opacity:0.6\">"
		   "Search</text>\n",
		o->width - PAD_SIDE);
	fprintf(f, "<text id=\"flip\" class=\"btn\" x=\"%.0f\" y=\"24\" text-anchor=\"end\" style=\"opacity:0.6\">%s</text>\n",
		o->width - PAD_SIDE - 70, o->inverted ? "Flame graph" : "Icicle");
	fprintf(f, "<text id=\"matched\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\"> </text>\n", o->width - PAD_SIDE,
		L.height - 12);
	fprintf(f, "<g id=\"frames\">\n");
	if (root->value > 0 && walk(&L, root))
		return -1;
	fprintf(f, "</g>\n");
	/* What minwidth merged away, said where the reader looks. */
	if (L.narrow)
		fprintf(f, "<text id=\"narrow\" x=\"%d\" y=\"42\" font-size=\"11\" fill=\"#777\">%lu frame%s narrower "
			   "than %g px merged into %s callers</text>\n",
			PAD_SIDE, L.narrow, L.narrow == 1 ? "" : "s", o->minwidth, L.narrow == 1 ? "its" : "their");
	fprintf(f, "</svg>\n");
	if (L.cut)
		msg_note("stacks deeper than %d frames are drawn to that depth; their "
				"deeper frames are left out",
			MAX_DEPTH);
	fflush(f);
	return ferror(f) ? -1 : 0;
}
