/*
 * samples/inline_alloc.c: an allocation helper that the compiler always
 * inlines, the case where only debug information knows the function: the
 * machine code of new_node() lives inside build_list(), so a stack shows
 * new_node only when the analyzer expands inlined frames.
 *
 * usage: inline_alloc [N]     (default 100)
 * Prints: N allocations of 48 bytes from new_node inlined in build_list,
 * all leaked.
 */
#include <stdio.h>
#include <stdlib.h>

struct node {
	struct node *next;
	long payload[5];
};

static inline __attribute__((always_inline)) struct node *new_node(struct node *next, long v)
{
	struct node *n = malloc(sizeof(*n));

	if (!n)
		exit(1);
	n->next = next;
	n->payload[0] = v;
	return n;
}

/* Not inlined itself, so the stack has build_list under new_node. */
__attribute__((noinline)) struct node *build_list(int count)
{
	struct node *head = NULL;

	for (int i = 0; i < count; i++)
		head = new_node(head, i);
	return head;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	struct node *head = build_list(n);

	/* The list is dropped, not freed: every node leaks. */
	printf("inline_alloc: %d allocations of %zu bytes from new_node inlined in build_list, %zu bytes leaked\n",
	       n, sizeof(*head), n * sizeof(*head));
	return head ? 0 : 1;
}
