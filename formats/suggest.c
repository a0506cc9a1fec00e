/*
 * formats/suggest.c: the closest known word to a mistyped one; see
 * suggest.h.
 */
#include "suggest.h"

#include <string.h>

#define SUGGEST_MAX 64

/* Optimal string alignment distance, rows of at most SUGGEST_MAX + 1. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d[3][SUGGEST_MAX + 1];

	if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *cur = d[i % 3], *prev = d[(i - 1) % 3], *prev2 = d[(i + 1) % 3];

		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1], v = prev[j] + 1;

			if (cur[j - 1] + 1 < v)
				v = cur[j - 1] + 1;
			if (prev[j - 1] + cost < v)
				v = prev[j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < v)
				v = prev2[j - 2] + 1;
			cur[j] = v;
		}
	}
	return d[la % 3][lb];
}

const char *suggest_closest(const char *word, const char *const *words, size_t n)
{
	const char *best = NULL;
	size_t best_d = (size_t)-1, len = strlen(word);

	if (!len)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t d;

		if (!words[i])
			continue;
		/* A word given short, as getopt would not take it. */
		if (len >= 3 && !strncmp(words[i], word, len))
			d = 1;
		else
			d = distance(word, words[i]);
		if (d < best_d) {
			best_d = d;
			best = words[i];
		}
	}
	return best && best_d <= (len + 2) / 3 && best_d < len ? best : NULL;
}
