/*
 * flamegraph/flame.h: the tree of folded stacks and its SVG rendering.
 *
 * flamegraph.c owns the command: options, reading folded text (or running
 * the analyzer on a trace) and building the tree. svg.c owns turning a tree
 * into one self-contained interactive SVG. Nothing here knows about traces.
 */
#ifndef MEMSIGHT_FLAME_H
#define MEMSIGHT_FLAME_H

#include <stddef.h>
#include <stdio.h>

struct flame_node {
	char *name;
	double value;		/* this frame and everything above it */
	struct flame_node **kids;
	size_t nr_kids, kids_alloc;
};

struct flame_opts {
	const char *title, *subtitle, *countname, *palette;
	double width, minwidth;
	int inverted;
};

/* Write the SVG for root to f. Returns 0, or -1 on a write error. */
int flame_svg_write(FILE *f, const struct flame_node *root, const struct flame_opts *o);
/* Palette names for -h and validation. */
extern const char *const flame_palettes[];

#endif
