/*
 * samples/inline_alloc.c: allocation helpers that the compiler always
 * inlines, the case where only debug information knows the functions: the
 * machine code of new_node(), inlined in push_front(), itself inlined in
 * build_list(), all lives inside build_list, so a stack shows new_node and
 * push_front only when the analyzer expands every level of inlined frames.
 *
 * usage: inline_alloc [N]     (default 100)
 * Prints: N allocations of 48 bytes from new_node inlined in push_front
 * inlined in build_list, all leaked.
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

static inline __attribute__((always_inline)) struct node *push_front(struct node *head, long v)
{
	return new_node(head, v);
}

/* Not inlined itself, so the stack has build_list under both helpers. */
__attribute__((noinline)) struct node *build_list(int count)
{
	struct node *head = NULL;

	for (int i = 0; i < count; i++)
		head = push_front(head, i);
	return head;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	struct node *head = build_list(n);

	/* The list is dropped, not freed: every node leaks. */
	printf("inline_alloc: %d allocations of %zu bytes from new_node inlined in push_front inlined in build_list, "
	       "%zu bytes leaked\n",
	       n, sizeof(*head), n * sizeof(*head));
	return head ? 0 : 1;
}
