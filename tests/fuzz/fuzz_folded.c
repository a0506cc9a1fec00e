/*
 * tests/fuzz/fuzz_folded.c: folded stacks into a flame graph.
 *
 * The input is folded text, whatever a tool made it of: each line goes to
 * the tree, and the tree into an SVG written to /dev/null.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../flamegraph/flame.h"

static FILE *out;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flame_opts o = { "fuzz", NULL, "samples", "mem", 1200, 0.1, size & 1 };
	struct flame_node *root = flame_tree_new();
	char *text = malloc(size + 1), *line, *save = NULL;

	if (!out)
		out = fopen("/dev/null", "w");
	if (!root || !text || !out)
		goto done;
	memcpy(text, data, size);
	text[size] = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (flame_tree_add(root, line) < 0)
			break;
	if (!flame_tree_sort(root))
		flame_svg_write(out, root, &o);
done:
	free(text);
	flame_tree_free(root);
	return 0;
}
