/*
 * analyze/cmd/cmd_rss.c: memsight rss, resident memory over time per process
 * from kmem:rss_stat (record -e rss): the kernel reports a counter (file,
 * anonymous, swap entries, shmem) of an mm each time it changes. Printed as
 * a table per process or drawn as an SVG line chart.
 *
 * rss_stat names an mm by a hashed id, and a change is often made by a task
 * that is not the mm's owner (reclaim, exit): an id is tied to a process
 * the first time its own task reports it (curr=1).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "../model/rssstat.h"
#include "../../formats/replace.h"

static const char usage_text[] =
	"usage: memsight rss [options] [FILE]\n"
	"\n"
	"Resident memory over time per process (record -e rss): file, anonymous and\n"
	"shmem pages and swap entries, as the kernel counts them.\n";

struct point {
	uint64_t time;
	int64_t v[RSS_NR];
};

/* An mm's points, kept in its struct rss_mm's user. */
struct series {
	struct rss_mm *mm;
	struct point *pts;
	size_t nr, alloc;
};

struct rss {
	long pid;
	struct rssstat st;
	struct series **all;	/* every mm's, in the order first seen */
	size_t nr_all;
	/* the options that say how it is shown */
	const char *svg;
	uint64_t top, points;
	int json;
};

static int on_sample(struct session *s, struct sample *smp, void *arg)
{
	struct rss *r = arg;
	struct rss_mm *mm;
	struct series *se;
	struct point *p;

	if (rssstat_sample(&r->st, s, smp, &mm))
		return -1;
	if (!mm)
		return 0;
	if (!mm->user) {
		struct series **v = realloc(r->all, (r->nr_all + 1) * sizeof(*v));

		if (!v)
			return -1;
		r->all = v;
		if (!(mm->user = calloc(1, sizeof(*se))))
			return -1;
		r->all[r->nr_all++] = mm->user;
		((struct series *)mm->user)->mm = mm;
	}
	se = mm->user;
	if (se->nr == se->alloc) {
		size_t n = se->alloc ? se->alloc * 2 : 64;
		struct point *v = realloc(se->pts, n * sizeof(*v));

		if (!v)
			return -1;
		se->pts = v;
		se->alloc = n;
	}
	p = &se->pts[se->nr++];
	p->time = smp->time;
	memcpy(p->v, mm->cur, sizeof(p->v));
	return 0;
}

static int series_cmp(const void *a, const void *b)
{
	const struct rss_mm *x = (*(struct series *const *)a)->mm, *y = (*(struct series *const *)b)->mm;

	return x->peak != y->peak ? (x->peak > y->peak ? -1 : 1) : (x->pid > y->pid) - (x->pid < y->pid);
}

/* The point in effect at time t: the last one at or before it. */
static const struct point *point_at(const struct series *se, uint64_t t)
{
	size_t lo = 0, hi = se->nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (se->pts[mid].time <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &se->pts[lo - 1] : NULL;
}

static const char *const palette[] = { "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd",
				       "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf" };

/* 0, -1 when it could not be written (errno), -2 when its file could
 * not be made (said). */
static int svg_write(const char *path, struct session *s, struct series **v, size_t n)
{
	const double W = 1000, H = 500, L = 80, R = 220, T = 40, B = 50;
	uint64_t t0 = s->first_time, t1 = s->last_time > t0 ? s->last_time : t0 + 1;
	int64_t ymax = 1;
	struct replace_out o;
	FILE *f;

	if (replace_open(&o, path)) {
		msg_error("cannot create '%s': %s", path, replace_strerror(&o));
		return -2;
	}
	f = o.f;
	for (size_t i = 0; i < n; i++)
		if (v[i]->mm->peak > ymax)
			ymax = v[i]->mm->peak;
	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		   "<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\" "
		   "font-family=\"Verdana\" font-size=\"12\">\n"
		   "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\"/>\n"
		   "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">Resident memory over time</text>\n",
		W, H, W, H, (W - R + L) / 2);
	/* Axes with five ticks each. */
	fprintf(f, "<g stroke=\"#888\" fill=\"none\"><path d=\"M%.0f %.0f V%.0f H%.0f\"/></g>\n", L, T, H - B, W - R);
	for (int i = 0; i <= 4; i++) {
		double y = H - B - (H - B - T) * i / 4, x = L + (W - R - L) * i / 4;

		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.1f MiB</text>\n", L - 6, y + 4,
			ymax * i / 4.0 / 1048576.0);
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.3f s</text>\n", x, H - B + 18,
			(t1 - t0) * i / 4.0 / 1e9);
		fprintf(f, "<path d=\"M%.0f %.1f H%.0f\" stroke=\"#e0e0e0\"/>\n", L, y, W - R);
	}
	for (size_t i = 0; i < n; i++) {
		const struct series *se = v[i];
		const char *col = palette[i % (sizeof(palette) / sizeof(palette[0]))];

		fprintf(f, "<g class=\"rss\" data-pid=\"%d\" data-last-bytes=\"%lld\">\n<title>pid %d ", se->mm->pid,
			(long long)rss_resident(se->mm->cur), se->mm->pid);
		cmd_markup_escape(f, se->mm->comm ? se->mm->comm : "?", SIZE_MAX);
		fprintf(f, ": peak %lld bytes, last %lld bytes</title>\n<polyline fill=\"none\" stroke=\"%s\" "
			   "stroke-width=\"1.5\" points=\"",
			(long long)se->mm->peak, (long long)rss_resident(se->mm->cur), col);
		for (size_t j = 0; j < se->nr; j++) {
			double x = L + (W - R - L) * (double)(se->pts[j].time - t0) / (double)(t1 - t0);
			double y = H - B - (H - B - T) * (double)rss_resident(se->pts[j].v) / (double)ymax;

			/* Steps: the value holds until the next change. */
			if (j)
				fprintf(f, " %.1f,%.1f", x,
					H - B - (H - B - T) * (double)rss_resident(se->pts[j - 1].v) / (double)ymax);
			fprintf(f, " %.1f,%.1f", x, y);
		}
		fprintf(f, "\"/>\n<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n"
			   "<text x=\"%.0f\" y=\"%.0f\">%d ",
			W - R + 15, T + 20.0 * i, col, W - R + 32, T + 20.0 * i + 11, se->mm->pid);
		cmd_markup_escape(f, se->mm->comm ? se->mm->comm : "?", SIZE_MAX);
		fprintf(f, "</text>\n</g>\n");
	}
	fprintf(f, "</svg>\n");
	return replace_finish(&o, 1);
}

static void print_json(const struct session *s, struct series **v, size_t n)
{
	struct json j;

	json_init(&j, stdout);
	json_begin(&j, NULL);
	json_str(&j, "trace", s->path);
	cmd_json_lost(&j, s);
	json_begin_array(&j, "processes");
	for (size_t i = 0; i < n; i++) {
		json_begin(&j, NULL);
		json_i64(&j, "pid", v[i]->mm->pid);
		json_str(&j, "comm", v[i]->mm->comm);
		json_i64(&j, "peak_bytes", v[i]->mm->peak);
		json_begin(&j, "last");
		for (int m = 0; m < RSS_NR; m++)
			json_i64(&j, rss_member_names[m], v[i]->mm->cur[m]);
		json_i64(&j, "resident", rss_resident(v[i]->mm->cur));
		json_end(&j);
		json_u64(&j, "changes", v[i]->nr);
		json_end(&j);
	}
	json_end(&j);
	json_end(&j);
}

static void print_text(const struct session *s, const struct rss *r, struct series **v, size_t n, uint64_t points)
{
	char b1[32];

	printf("# memsight rss of '%s': %zu processes%s\n", s->path, n,
	       r->st.unowned ? " (changes to memory of processes never seen themselves are left out)" : "");
	for (size_t i = 0; i < n; i++) {
		struct series *se = v[i];
		uint64_t t0 = se->pts[0].time, t1 = se->pts[se->nr - 1].time;

		printf("\npid %d %s: peak %s, last: resident %lld bytes (file %lld, anon %lld, shmem %lld), "
		       "swap entries %lld bytes\n",
		       se->mm->pid, se->mm->comm ? se->mm->comm : "?", fmt_bytes(se->mm->peak, b1, sizeof(b1)), (long long)rss_resident(se->mm->cur),
		       (long long)se->mm->cur[RSS_FILE], (long long)se->mm->cur[RSS_ANON], (long long)se->mm->cur[RSS_SHMEM],
		       (long long)se->mm->cur[RSS_SWAP]);
		printf("%12s %14s %14s %14s %14s\n", "TIME(s)", "RESIDENT", "FILE", "ANON", "SHMEM");
		for (uint64_t k = 0; k < points; k++) {
			uint64_t t = points > 1 ? t0 + (t1 - t0) * k / (points - 1) : t1;
			const struct point *p = point_at(se, t);

			if (!p || (k && points > 1 && t1 == t0))
				continue;
			printf("%12.6f %14lld %14lld %14lld %14lld\n", (t - s->first_time) / 1e9, (long long)rss_resident(p->v),
			       (long long)p->v[RSS_FILE], (long long)p->v[RSS_ANON], (long long)p->v[RSS_SHMEM]);
		}
	}
}

/* The processes to show: of --pid, largest peak first, at most top. */
static struct series **rss_select(struct rss *r, uint64_t top, size_t *n)
{
	struct series **v = malloc((r->nr_all ? r->nr_all : 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nr_all; i++)
		if (r->pid < 0 || r->all[i]->mm->pid == r->pid)
			v[(*n)++] = r->all[i];
	if (*n > 1)
		qsort(v, *n, sizeof(*v), series_cmp);
	if (*n > top)
		*n = top;
	return v;
}

static int rss_end(struct session *s, void *arg, int print)
{
	struct rss *r = arg;
	struct series **v = NULL;
	size_t n = 0;
	int ret = 1, w;

	if (!print) {
		/* the replay failed: said */
	} else if (!(v = rss_select(r, r->top, &n))) {
		msg_error("out of memory");
	} else if (r->svg && (w = svg_write(r->svg, s, v, n))) {
		/* Said by svg_write when the file could not be made. */
		if (w != -2)
			msg_error("cannot write '%s': %m", r->svg);
	} else {
		if (r->json)
			print_json(s, v, n);
		else
			print_text(s, r, v, n, r->points);
		ret = 0;
	}
	free(v);
	for (size_t i = 0; i < r->nr_all; i++) {
		free(r->all[i]->pts);
		free(r->all[i]);
	}
	free(r->all);
	rssstat_release(&r->st);
	free(r);
	return ret;
}

int rss_view(int argc, char **argv, struct analyze_opts *a, struct session *s, struct cmd_view *v)
{
	struct rss *r = calloc(1, sizeof(*r));
	const struct opt options[] = {
		OPT_U64('T', "top", &r->top, "N", "processes shown, largest peak first (default 10 in text, all in JSON)"),
		OPT_U64('n', "points", &r->points, "N", "rows per process in the text table (default 20)"),
		OPT_PID(&r->pid),
		OPT_STRING(0, "svg", &r->svg, "FILE", "draw the RSS of each process over time as an SVG line chart"),
		OPT_JSON(&r->json),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_END(),
	};
	int c;

	if (!r)
		return msg_error("out of memory"), 1;
	r->pid = -1;
	r->points = 20;
	c = cmd_parse(argc, argv, options, usage_text, a);
	if (c < 0) {
		r->top = cmd_top_count(r->top, r->json, 10);
		/* Before the replay: a file it must not replace fails now. */
		if (r->svg && replace_check(r->svg, REPLACE_SVG, "an SVG file")) {
			c = 1;
		} else if (!r->points) {
			msg_error("--points must be at least 1");
			c = 2;
		} else if (cmd_view_open(s, a) || cmd_need_group(s, "rss_stat", "rss", NULL)) {
			c = 1;
		}
	}
	if (c >= 0) {
		free(r);
		return c;
	}
	rssstat_init(&r->st);
	v->sample = on_sample;
	v->end = rss_end;
	v->arg = r;
	v->stackless = 1;
	v->says_all = 1;
	return -1;
}

int cmd_rss(int argc, char **argv, struct analyze_opts *a)
{
	return cmd_view_main(argc, argv, a, rss_view);
}
