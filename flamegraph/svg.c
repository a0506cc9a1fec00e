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
#include <string.h>

#include "flame.h"

#define FRAME_H 16
#define FONT_SIZE 12
#define PAD_TOP 56
#define PAD_BOTTOM 36
#define PAD_SIDE 10

const char *const flame_palettes[] = { "mem", "hot", "io", "red", "green", "blue", "aqua", "yellow",
				       "purple", "orange", NULL };

static void xml_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* Control characters are not allowed in XML 1.0. */
			fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
		}
	}
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

/* Depth of the frames that will be drawn: narrower ones are left out, so
 * they must not make the image taller. */
static int depth_of(const struct flame_node *n, double scale, double minwidth)
{
	int d = 0;

	for (size_t i = 0; i < n->nr_kids; i++) {
		int k;

		if (n->kids[i]->value * scale < minwidth)
			continue;
		k = depth_of(n->kids[i], scale, minwidth);

		if (k > d)
			d = k;
	}
	return d + 1;
}

struct layout {
	FILE *f;
	const struct flame_opts *o;
	double scale;	  /* pixels per unit of value */
	double total;
	int height;
	unsigned long frames;
};

static void frame_out(struct layout *L, const struct flame_node *n, const char *label, double x_units,
		      int depth)
{
	double x = PAD_SIDE + x_units * L->scale, w = n->value * L->scale;
	int y = L->o->inverted ? PAD_TOP + depth * FRAME_H : L->height - PAD_BOTTOM - (depth + 1) * FRAME_H;
	int r, g, b;
	double pct = L->total > 0 ? 100.0 * n->value / L->total : 0;
	int chars = (int)((w - 6) / (FONT_SIZE * 0.59));

	if (depth == 0) {
		r = 200, g = 200, b = 200;
		if (!strcmp(L->o->palette, "mem"))
			r = 170, g = 210, b = 170;
	} else {
		colour(L->o->palette, label, &r, &g, &b);
	}
	fprintf(L->f, "<g class=\"f\" data-v=\"%.17g\" data-x=\"%.17g\" data-d=\"%d\"><title>", n->value, x_units, depth);
	xml_escape(L->f, label);
	fprintf(L->f, " (%.15g %s, %.2f%%)</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
		      "fill=\"rgb(%d,%d,%d)\" rx=\"2\"/><text x=\"%.2f\" y=\"%d\">",
		n->value, L->o->countname, pct, x, y, w, FRAME_H - 1, r, g, b, x + 3, y + FRAME_H - 4);
	if (chars >= 3) {
		size_t l = strlen(label);

		if ((size_t)chars >= l) {
			xml_escape(L->f, label);
		} else {
			char buf[1024];

			snprintf(buf, sizeof(buf), "%.*s..", chars - 2 < 1000 ? chars - 2 : 1000, label);
			xml_escape(L->f, buf);
		}
	}
	fputs("</text></g>\n", L->f);
	L->frames++;
}

static void walk(struct layout *L, const struct flame_node *n, double x_units, int depth)
{
	double x = x_units;

	if (n->value * L->scale < L->o->minwidth)
		return;
	frame_out(L, n, depth ? n->name : "all", x_units, depth);
	for (size_t i = 0; i < n->nr_kids; i++) {
		walk(L, n->kids[i], x, depth + 1);
		x += n->kids[i]->value;
	}
}

static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var svg = document.documentElement, frames = [], zoomed = null, matchRe = null;\n"
	"var W = +svg.getAttribute('data-width'), SIDE = +svg.getAttribute('data-side');\n"
	"var TOTAL = +svg.getAttribute('data-total'), UNIT = svg.getAttribute('data-unit');\n"
	"var details, matched, resetBtn, searchBtn;\n"
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
	"    f.g.addEventListener('click', function () { zoom(f); });\n"
	"    f.g.addEventListener('mouseover', function () { details.textContent = f.info; });\n"
	"    f.g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  });\n"
	"  resetBtn.addEventListener('click', function () { zoom(null); });\n"
	"  searchBtn.addEventListener('click', function () { search(); });\n"
	"  document.addEventListener('keydown', function (e) {\n"
	"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); search(); }\n"
	"    if (e.key === 'Escape') { zoom(null); clearSearch(); }\n"
	"  });\n"
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
	"function clearSearch() {\n"
	"  matchRe = null; frames.forEach(function (f) { f.r.style.fill = ''; });\n"
	"  matched.textContent = ' '; searchBtn.style.opacity = 0.6;\n"
	"}\n"
	"function search() {\n"
	"  var term = prompt('Search (regular expression)' + (matchRe ? ', empty to clear' : ''), '');\n"
	"  if (term === null) return;\n"
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
	struct layout L = { f, o, 0, root->value, 0, 0 };
	int mem = !strcmp(o->palette, "mem"), depth;

	L.scale = root->value > 0 ? (o->width - 2 * PAD_SIDE) / root->value : 0;
	depth = depth_of(root, L.scale, o->minwidth);
	L.height = PAD_TOP + depth * FRAME_H + PAD_BOTTOM;
	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n");
	fprintf(f, "<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" "
		   "xmlns=\"http://www.w3.org/2000/svg\" data-width=\"%.0f\" data-side=\"%d\" data-total=\"%.17g\" "
		   "data-unit=\"",
		o->width, L.height, o->width, L.height, o->width, PAD_SIDE, root->value);
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
	fprintf(f, "<text id=\"matched\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\"> </text>\n", o->width - PAD_SIDE,
		L.height - 12);
	fprintf(f, "<g id=\"frames\">\n");
	if (root->value > 0)
		walk(&L, root, 0, 0);
	fprintf(f, "</g>\n</svg>\n");
	fflush(f);
	return ferror(f) ? -1 : 0;
}
