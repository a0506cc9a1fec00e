/*
 * flamegraph/folded.c: folded stacks into a tree; see flame.h.
 *
 * A line is "frame;frame;...;frame COUNT", outermost first; the count is
 * the last blank-separated word. Each frame is a child of the one before
 * it, siblings merged by name, values summed up the tree. Trees are walked
 * with stacks of their own, never the C stack: a line may be a million
 * frames deep.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"

static struct flame_node *node_new(const char *name, size_t len)
{
	struct flame_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->name = malloc(len + 1);
	if (!n->name) {
		free(n);
		return NULL;
	}
	memcpy(n->name, name, len);
	n->name[len] = 0;
	return n;
}

/* The tree is walked with a stack of its own, not the C stack: a folded
 * line can be a million frames deep. Returns the stack grown to hold one
 * more, or NULL when out of memory. */
static struct flame_node **stack_room(struct flame_node **st, size_t nr, size_t *alloc)
{
	struct flame_node **v;

	if (nr < *alloc)
		return st;
	v = realloc(st, (*alloc = *alloc ? *alloc * 2 : 256) * sizeof(*v));
	if (!v)
		free(st);
	return v;
}

void flame_tree_free(struct flame_node *root)
{
	struct flame_node **st = NULL;
	size_t nr = 0, alloc = 0;

	if (!root || !(st = stack_room(st, nr, &alloc)))
		return;
	st[nr++] = root;
	while (nr) {
		struct flame_node *n = st[--nr];

		for (size_t i = 0; i < n->nr_kids; i++) {
			if (!(st = stack_room(st, nr, &alloc)))
				return; /* out of memory: the rest stays allocated */
			st[nr++] = n->kids[i];
		}
		free(n->kids);
		free(n->name);
		free(n);
	}
	free(st);
}

static struct flame_node *node_child(struct flame_node *p, const char *name, size_t len)
{
	struct flame_node *c;

	/* The last child is the likeliest: sorted folded input comes in runs. */
	for (size_t i = p->nr_kids; i-- > 0;) {
		c = p->kids[i];
		if (!strncmp(c->name, name, len) && !c->name[len])
			return c;
	}
	if (p->nr_kids == p->kids_alloc) {
		size_t n = p->kids_alloc ? p->kids_alloc * 2 : 4;
		struct flame_node **v = realloc(p->kids, n * sizeof(*v));

		if (!v)
			return NULL;
		p->kids = v;
		p->kids_alloc = n;
	}
	c = node_new(name, len);
	if (c)
		p->kids[p->nr_kids++] = c;
	return c;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp((*(struct flame_node *const *)a)->name, (*(struct flame_node *const *)b)->name);
}

/* Children in name order, as FlameGraph does: the x axis is not time. */
int flame_tree_sort(struct flame_node *root)
{
	struct flame_node **st = NULL;
	size_t nr = 0, alloc = 0;

	if (!(st = stack_room(st, nr, &alloc)))
		return -1;
	st[nr++] = root;
	while (nr) {
		struct flame_node *n = st[--nr];

		if (n->nr_kids > 1)
			qsort(n->kids, n->nr_kids, sizeof(*n->kids), cmp_name);
		for (size_t i = 0; i < n->nr_kids; i++) {
			if (!(st = stack_room(st, nr, &alloc)))
				return -1;
			st[nr++] = n->kids[i];
		}
	}
	free(st);
	return 0;
}

int flame_tree_diff(struct flame_node *root, const struct flame_node *base)
{
	struct pair { struct flame_node *n; const struct flame_node *b; } *st = NULL, *v;
	size_t nr = 0, alloc = 0;

	root->base = base->value;
	st = malloc((alloc = 256) * sizeof(*st));
	if (!st)
		return -1;
	st[nr++] = (struct pair){ root, base };
	while (nr) {
		struct pair p = st[--nr];
		size_t j = 0;

		/* Both sorted by name: a merge, kid by kid. */
		for (size_t i = 0; i < p.n->nr_kids; i++) {
			struct flame_node *k = p.n->kids[i];
			int c = 1;

			while (p.b && j < p.b->nr_kids && (c = strcmp(p.b->kids[j]->name, k->name)) < 0)
				j++;
			k->base = p.b && j < p.b->nr_kids && !c ? p.b->kids[j]->value : 0;
			if (nr == alloc) {
				v = realloc(st, (alloc *= 2) * sizeof(*st));
				if (!v) {
					free(st);
					return -1;
				}
				st = v;
			}
			st[nr++] = (struct pair){ k, p.b && j < p.b->nr_kids && !c ? p.b->kids[j] : NULL };
		}
	}
	free(st);
	return 0;
}

int flame_tree_add(struct flame_node *root, char *line)
{
	size_t len = strcspn(line, "\r\n");
	char *sp, *end, *p;
	double v;
	struct flame_node *n = root;

	line[len] = 0;
	while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
		line[--len] = 0;
	if (!len || line[0] == '#')
		return 0;
	sp = strrchr(line, ' ');
	if (!sp)
		sp = strrchr(line, '\t');
	if (!sp || sp == line)
		return 0;
	v = strtod(sp + 1, &end);
	if (*end || end == sp + 1)
		return 0;
	/* "nan", "inf" and a sum past the largest double would make every
	 * width in the SVG nan. */
	if (!isfinite(v) || v < 0 || !isfinite(root->value + v))
		return -2;
	*sp = 0;
	root->value += v;
	for (p = line; *p;) {
		size_t l = strcspn(p, ";");

		if (l) {
			n = node_child(n, p, l);
			if (!n)
				return -1;
			n->value += v;
		}
		p += l;
		if (*p == ';')
			p++;
	}
	return 1;
}


struct flame_node *flame_tree_new(void)
{
	return node_new("all", 3);
}
