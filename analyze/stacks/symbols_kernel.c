/*
 * analyze/stacks/symbols_kernel.c: kernel symbols, from the kallsyms lines the trace carries.
 */
#include "symbols_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int symbols_ksyms_load(struct symbols *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	size_t alloc = s->nr_ksyms;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *le = nl ? nl : end;
		char line[512], name[256], mod[128] = "", type;
		unsigned long long addr;
		size_t n = le - p < (long)sizeof(line) - 1 ? (size_t)(le - p) : sizeof(line) - 1;

		memcpy(line, p, n);
		line[n] = 0;
		p = le + 1;
		if (sscanf(line, "%llx %c %255s [%127[^]]]", &addr, &type, name, mod) < 3)
			continue;
		if (s->nr_ksyms == alloc) {
			struct ksym *k = realloc(s->ksyms, (alloc = alloc ? alloc * 2 : 256) * sizeof(*k));

			if (!k)
				return -ENOMEM;
			s->ksyms = k;
		}
		s->ksyms[s->nr_ksyms].addr = addr;
		s->ksyms[s->nr_ksyms].name = strdup(name);
		s->ksyms[s->nr_ksyms].module = mod[0] ? strdup(mod) : NULL;
		if (!s->ksyms[s->nr_ksyms].name || (mod[0] && !s->ksyms[s->nr_ksyms].module)) {
			free(s->ksyms[s->nr_ksyms].name);
			free(s->ksyms[s->nr_ksyms].module);
			return -ENOMEM;
		}
		s->nr_ksyms++;
	}
	if (s->nr_ksyms > 1)
		qsort(s->ksyms, s->nr_ksyms, sizeof(*s->ksyms), ksym_cmp);
	/* A ring restates every symbol so far at each segment, which a
	 * reader following it takes in again: one copy of each is kept. */
	size_t n = 0;

	for (size_t i = 0; i < s->nr_ksyms; i++) {
		size_t j = n;

		while (j > 0 && s->ksyms[j - 1].addr == s->ksyms[i].addr && strcmp(s->ksyms[j - 1].name, s->ksyms[i].name))
			j--;
		if (j > 0 && s->ksyms[j - 1].addr == s->ksyms[i].addr) {
			free(s->ksyms[i].name);
			free(s->ksyms[i].module);
			continue;
		}
		s->ksyms[n++] = s->ksyms[i];
	}
	s->nr_ksyms = n;
	return 0;
}

const char *symbols_ksym(const struct symbols *s, uint64_t addr, uint64_t *symoff)
{
	size_t lo = 0, hi = s->nr_ksyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	*symoff = addr - s->ksyms[lo - 1].addr;
	return s->ksyms[lo - 1].name;
}

