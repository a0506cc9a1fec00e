/*
 * flamegraph/flame.h: the tree of folded stacks and its SVG rendering.
 *
 * flamegraph.c owns the command: options, reading folded text (or running
 * the analyzer on a trace). folded.c owns the tree the lines build. svg.c
 * owns turning a tree into one self-contained interactive SVG. Nothing
 * here knows about traces.
 */
#ifndef MEMSIGHT_FLAME_H
#define MEMSIGHT_FLAME_H

#include <stddef.h>
#include <stdio.h>

struct flame_node {
	char *name;
	double value;		/* this frame and everything above it */
	double base;		/* with flame_tree_diff: the same frame's value in the base */
	struct flame_node **kids;
	size_t nr_kids, kids_alloc;
};

struct flame_opts {
	const char *title, *subtitle, *countname, *palette;
	double width, minwidth;
	int inverted;
	int diff;		/* colour by each frame's change from its base (flame_tree_diff) */
};

/* The tree of folded stacks (folded.c): a root named "all", a line at a
 * time. flame_tree_add returns 1 when the line was added, 0 when it is no
 * folded stack (skipped), -1 when out of memory, -2 for a count that is no
 * finite non-negative number or that makes the total overflow. Sorting
 * puts children in name order; it and the tree's release take any depth. */
struct flame_node *flame_tree_new(void);
int flame_tree_add(struct flame_node *root, char *line);
int flame_tree_sort(struct flame_node *root);
void flame_tree_free(struct flame_node *root);
/* Give each frame of root (sorted) the value of the frame at the same path
 * in base (sorted), 0 where base has none. Returns 0, or -1 when out of
 * memory. */
int flame_tree_diff(struct flame_node *root, const struct flame_node *base);

/* Write the SVG for root to f. Returns 0, or -1 on a write error. */
int flame_svg_write(FILE *f, const struct flame_node *root, const struct flame_opts *o);
/* Palette names for -h and validation. */
extern const char *const flame_palettes[];

#endif
