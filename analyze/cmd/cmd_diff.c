/*
 * analyze/cmd/cmd_diff.c: memsight diff, what changed between two
 * recordings, by stack: each side folded as `memsight folded` folds it (a
 * trace) or read as folded stacks (any other file), then the per-stack
 * deltas, largest growth first, stacks that are new or gone marked, and a
 * gate for CI.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "json.h"
#include "../hashmap.h"

static const char usage_text[] =
	"usage: memsight diff [options] BASE NEW\n"
	"\n"
	"Per-stack differences between two recordings of the same program: BASE and\n"
	"NEW are traces (folded here as memsight folded folds them, with -e and -w)\n"
	"or folded stacks (comm;outer;...;inner WEIGHT). Largest growth first; a\n"
	"stack only NEW has is new, one only BASE has is gone.\n";

struct diff_stack {
	const char *stack;	/* the map's key */
	long double base, new;
};

struct diff {
	const char *event, *weight;
	uint64_t top;
	int json;
	struct hashmap stacks;	/* folded stack -> struct diff_stack * */
	long double base_total, new_total;
	char forward[16][256];	/* the stack and symbol options, for folded */
	int nr_forward;
	int estimate[2];	/* a side's weights are estimates (a sampled recording) */
};

/* Is path a memsight trace (its magic), rather than folded text? */
static int is_trace(const char *path)
{
	char magic[8];
	struct stat st;
	/* Only a regular file: a FIFO's open would wait for a writer. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	int yes = fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && read(fd, magic, sizeof(magic)) == sizeof(magic) &&
		  !memcmp(magic, "MEMSIGHT", 8);

	if (fd >= 0)
		close(fd);
	return yes;
}

/* One folded line into the side's column: "stack WEIGHT". */
static int add_line(struct diff *d, char *line, int side, const char *path, long n)
{
	char *sp = strrchr(line, ' '), *end;
	long double w;
	struct hm_slot *slot;
	struct diff_stack *ds;

	line[strcspn(line, "\r\n")] = 0;
	/* folded --header's line says whether the weights are estimates. */
	if (!strncmp(line, "# event ", 8)) {
		const char *e = strstr(line, " estimate ");

		d->estimate[side] |= e && (!strncmp(e + 10, "yes", 3) || atoi(e + 10) == 1);
		return 0;
	}
	if (!*line)
		return 0;
	sp = strrchr(line, ' ');
	if (!sp || sp == line)
		return msg_error("%s:%ld: expected 'comm;frames WEIGHT', got '%.60s'", path, n, line);
	errno = 0;
	w = strtold(sp + 1, &end);
	if (*end || errno || w != w || w < 0 || w > 1e30L)
		return msg_error("%s:%ld: the weight '%s' is not a number", path, n, sp + 1);
	*sp = 0;
	slot = hashmap_str(&d->stacks, line, NULL);
	if (!slot || (!slot->ptr && !(slot->ptr = calloc(1, sizeof(*ds)))))
		return msg_error("out of memory");
	ds = slot->ptr;
	ds->stack = slot->skey;
	if (side)
		ds->new += w, d->new_total += w;
	else
		ds->base += w, d->base_total += w;
	return 0;
}

static int read_folded(struct diff *d, FILE *f, int side, const char *path)
{
	char *line = NULL;
	size_t alloc = 0;
	long n = 0;
	int ret = 0;

	while (!ret && getline(&line, &alloc, f) > 0)
		ret = add_line(d, line, side, path, ++n);
	if (!ret && ferror(f))
		ret = msg_error("cannot read '%s': %s", path, strerror(errno));
	free(line);
	return ret;
}

/* A trace folded by memsight folded, into a temporary file, as that
 * command prints it; returns its exit status. */
static int fold_trace(struct diff *d, const char *path, struct analyze_opts *a, FILE *tmp)
{
	char *argv[32] = { "folded", "--header" };
	int argc = 2;

	if (d->event) {
		argv[argc++] = "--event";
		argv[argc++] = (char *)d->event;
	}
	if (d->weight) {
		argv[argc++] = "--weight";
		argv[argc++] = (char *)d->weight;
	}
	for (int i = 0; i < d->nr_forward; i++)
		argv[argc++] = d->forward[i];
	argv[argc++] = (char *)path;
	argv[argc] = NULL;
	return cmd_capture(tmp, cmd_folded, argc, argv, a);
}

static int read_side(struct diff *d, const char *path, int side, struct analyze_opts *a)
{
	struct stat st;
	FILE *f;
	int r;

	/* A FIFO would block, a device never end, a directory read as
	 * nothing: only a file is a recording. */
	if (stat(path, &st))
		return msg_error("cannot open '%s': %s", path, strerror(errno)), 1;
	if (!S_ISREG(st.st_mode))
		return msg_error("'%s' is not a regular file: give a trace or a file of folded stacks", path), 1;
	if (!is_trace(path)) {
		f = fopen(path, "r");
		if (!f)
			return msg_error("cannot open '%s': %s", path, strerror(errno)), 1;
		r = read_folded(d, f, side, path) ? 1 : 0;
		fclose(f);
		return r;
	}
	f = tmpfile();
	if (!f)
		return msg_error("cannot make a temporary file: %s", strerror(errno)), 1;
	r = fold_trace(d, path, a, f);
	if (!r) {
		rewind(f);
		r = read_folded(d, f, side, path) ? 1 : 0;
	}
	fclose(f);
	return r;
}

static int delta_cmp(const void *a, const void *b)
{
	const struct diff_stack *x = *(struct diff_stack *const *)a, *y = *(struct diff_stack *const *)b;
	long double dx = x->new - x->base, dy = y->new - y->base;

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->stack, y->stack);
}

static const char *status_of(const struct diff_stack *s)
{
	return !s->base ? "new" : !s->new ? "gone" : s->new > s->base ? "grew" : s->new < s->base ? "shrank" : "same";
}

static void print_text(const struct diff *d, struct diff_stack **v, size_t n, const char *base, const char *new)
{
	printf("# memsight diff of '%s' and '%s'%s%s%s%s: %.0Lf then %.0Lf, %+.0Lf\n", base, new,
	       d->event ? ", " : "", d->event ? d->event : "", d->weight ? " by " : "", d->weight ? d->weight : "",
	       d->base_total, d->new_total, d->new_total - d->base_total);
	if (d->estimate[0] || d->estimate[1])
		printf("# ESTIMATE: %s a sampled recording; its figures are estimates\n",
		       d->estimate[0] && d->estimate[1] ? "both are" : d->estimate[0] ? "BASE is" : "NEW is");
	printf("\n%12s %12s %12s  %-6s %s\n", "DELTA", "BASE", "NEW", "", "STACK");
	for (size_t i = 0; i < n && i < d->top; i++) {
		if (v[i]->new == v[i]->base)
			continue;
		printf("%+12.0Lf %12.0Lf %12.0Lf  %-6s %s\n", v[i]->new - v[i]->base, v[i]->base, v[i]->new,
		       status_of(v[i]), v[i]->stack);
	}
}

/* A folded stack as the other commands' JSON gives a stack: its comm, then
 * its frames innermost first, in the shared frame schema. Folded text
 * holds names only: a frame's object, offset and whether it was inlined
 * are null. */
static void json_folded_frames(struct json *j, const char *stack)
{
	const char *semi = strchr(stack, ';'), *end;
	char name[1024];

	snprintf(name, sizeof(name), "%.*s", semi ? (int)(semi - stack) : (int)strlen(stack), stack);
	json_str(j, "comm", name);
	json_begin_array(j, "frames");
	for (end = stack + strlen(stack); semi && end > semi;) {
		const char *start = end;
		size_t len;
		int kernel;

		while (start > semi + 1 && start[-1] != ';')
			start--;
		len = (size_t)(end - start);
		kernel = len >= 4 && !memcmp(end - 4, "_[k]", 4);
		json_begin(j, NULL);
		snprintf(name, sizeof(name), "%.*s", (int)(kernel ? len - 4 : len), start);
		json_str(j, "function", name);
		json_null(j, "offset");
		json_null(j, "object");
		json_bool(j, "kernel", kernel);
		json_null(j, "inlined");
		json_end(j);
		end = start - 1;
	}
	json_end(j);
}

static void print_json(const struct diff *d, struct diff_stack **v, size_t n, const char *base, const char *new)
{
	struct json j;

	json_init(&j, stdout);
	json_begin(&j, NULL);
	json_str(&j, "base", base);
	json_str(&j, "new", new);
	if (d->event)
		json_str(&j, "event", d->event);
	if (d->weight)
		json_str(&j, "weight", d->weight);
	json_bool(&j, "base_estimate", d->estimate[0]);
	json_bool(&j, "new_estimate", d->estimate[1]);
	json_double(&j, "base_total", "%.0f", (double)d->base_total);
	json_double(&j, "new_total", "%.0f", (double)d->new_total);
	json_double(&j, "delta", "%.0f", (double)(d->new_total - d->base_total));
	{
		uint64_t changed = 0, shown = 0;

		for (size_t i = 0; i < n; i++)
			if (v[i]->new != v[i]->base) {
				changed++;
				shown += i < d->top;
			}
		cmd_json_truncated(&j, shown, changed);
	}
	json_begin_array(&j, "stacks");
	for (size_t i = 0; i < n && i < d->top; i++) {
		if (v[i]->new == v[i]->base)
			continue;
		json_begin(&j, NULL);
		json_str(&j, "stack", v[i]->stack);
		json_folded_frames(&j, v[i]->stack);
		json_double(&j, "base", "%.0f", (double)v[i]->base);
		json_double(&j, "new", "%.0f", (double)v[i]->new);
		json_double(&j, "delta", "%.0f", (double)(v[i]->new - v[i]->base));
		json_str(&j, "status", status_of(v[i]));
		json_end(&j);
	}
	json_end(&j);
	json_end(&j);
}

/* Both sides read: the stacks by change, printed. 0, or -1 (said). */
static int diff_print(const struct diff *d, const char *base, const char *new)
{
	struct diff_stack **v = malloc((d->stacks.nr ? d->stacks.nr : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return msg_error("out of memory");
	hashmap_for_each(&d->stacks, slot) v[n++] = slot->ptr;
	if (n > 1)
		qsort(v, n, sizeof(*v), delta_cmp);
	(d->json ? print_json : print_text)(d, v, n, base, new);
	free(v);
	return 0;
}

/* The stack and symbol options go on to folded as they were given. */
static int opt_forward(const struct opt *o, const char *arg, void *ctx)
{
	struct diff *d = o->value;

	(void)ctx;
	if (d->nr_forward == (int)(sizeof(d->forward) / sizeof(d->forward[0])))
		return msg_error("too many options for the traces' folding");
	snprintf(d->forward[d->nr_forward++], sizeof(d->forward[0]), "--%s%s%s", o->long_name, arg ? "=" : "",
		 arg ? arg : "");
	return 0;
}

int diff_defaults(const char *base, const char *new, struct analyze_opts *a, const char **event, const char **weight)
{
	if (!*event && is_trace(base) && is_trace(new)) {
		/* What memsight diff is mostly for: leak growth. */
		const char *paths[2] = { base, new };
		struct session s;
		int malloc_both = 0;

		for (int i = 0; i < 2; i++) {
			if (cmd_open(&s, paths[i], a))
				return -1;
			malloc_both += session_group_recorded(&s, "malloc");
			cmd_close(&s, 0);
		}
		*event = malloc_both == 2 ? "malloc" : "faults";
	}
	if (*event && !*weight && !strcmp(*event, "malloc"))
		*weight = "leaked";
	else if (*event && !*weight && (!strcmp(*event, "brk") || !strcmp(*event, "mmap")))
		*weight = "bytes";
	return 0;
}

/* A trace that never recorded the event's group compares as nothing at
 * all: refused, as the views refuse it, rather than a diff of zeros.
 * Each event folded takes is its group's name, but page-faults. Returns 0
 * when it may be folded (an unknown event is folded's to refuse). */
static int side_recorded(const char *path, const char *event, struct analyze_opts *a)
{
	static const char *const groups[] = { "brk", "mmap", "faults", "malloc", "kmem", "reclaim", "swap" };
	const char *group = !strcmp(event, "page-faults") ? "faults" : NULL;
	struct session s;
	int r;

	for (size_t i = 0; !group && i < sizeof(groups) / sizeof(groups[0]); i++)
		if (!strcmp(event, groups[i]))
			group = groups[i];
	if (!group || !is_trace(path))
		return 0;
	if (cmd_open(&s, path, a))
		return -1;
	r = cmd_need_group(&s, event, group, NULL);
	cmd_close(&s, 0);
	return r;
}

int cmd_diff(int argc, char **argv, struct analyze_opts *a)
{
	struct diff d = { .top = 0 };
	uint64_t limit = UINT64_MAX;
#define DIFF_FORWARD(id, name, argh, optional, help) \
	, { 0, name, OPT_CALLBACK_, &d, argh, help, opt_forward, 0, optional }
	const struct opt options[] = {
		OPT_STRING('e', "event", &d.event, "EVENT",
			   "for traces: the event, as folded takes it (default: malloc where\n"
			   "both recorded it, else faults)"),
		OPT_STRING('w', "weight", &d.weight, "WEIGHT",
			   "for traces: the weight, as folded takes it (default: leaked for\n"
			   "malloc, count for faults, bytes for brk and mmap)"),
		OPT_U64('T', "top", &d.top, "N", "stacks shown (default 20 in text, all in JSON)"),
		OPT_U64(0, "fail-over", &limit, "N",
			"exit with status 3 when the total grew by more than N (in the\n"
			"weight's unit: bytes, faults, pages)"),
		OPT_JSON(&d.json),
		OPT_GROUP(OPTS_STACK_TITLE) OPTS_STACK_LIST(DIFF_FORWARD),
		OPT_END(),
	};
#undef DIFF_FORWARD
	int r = opts_parse(argc, argv, options, usage_text, a), ret = 1;
	const char *base, *new;

	if (r >= 0)
		return r;
	if (optind != argc - 2) {
		msg_error("give two files, BASE and NEW (see memsight diff -h)");
		return 2;
	}
	base = argv[optind];
	new = argv[optind + 1];
	d.top = cmd_top_count(d.top, d.json, 20);
	if (diff_defaults(base, new, a, &d.event, &d.weight))
		return 1;
	if (d.event && (side_recorded(base, d.event, a) || side_recorded(new, d.event, a)))
		return 1;
	hashmap_init(&d.stacks, 1);
	if (!read_side(&d, base, 0, a) && !read_side(&d, new, 1, a) && !diff_print(&d, base, new))
		ret = limit != UINT64_MAX && d.new_total - d.base_total > (long double)limit ? 3 : 0;
	hashmap_for_each(&d.stacks, slot) free(slot->ptr);
	hashmap_release(&d.stacks);
	return ret;
}

int diff_json_folded(FILE *base, FILE *new, const char *base_path, const char *new_path, const char *event,
		     const char *weight, uint64_t top)
{
	struct diff d = { .event = event, .weight = weight, .top = top, .json = 1 };
	int ret = 1;

	hashmap_init(&d.stacks, 1);
	rewind(base);
	rewind(new);
	if (!read_folded(&d, base, 0, base_path) && !read_folded(&d, new, 1, new_path) &&
	    !diff_print(&d, base_path, new_path))
		ret = 0;
	hashmap_for_each(&d.stacks, slot) free(slot->ptr);
	hashmap_release(&d.stacks);
	return ret;
}
