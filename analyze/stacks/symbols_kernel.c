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

/* Whether the first n symbols, in address order, hold name at addr. */
static int ksym_held(const struct symbols *s, size_t n, uint64_t addr, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->ksyms[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && s->ksyms[lo].addr == addr; lo++)
		if (!strcmp(s->ksyms[lo].name, name))
			return 1;
	return 0;
}

int symbols_ksyms_load(struct symbols *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	size_t alloc = s->nr_ksyms, old = s->nr_ksyms;

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
		/* A ring restates every symbol so far at each segment, which a
		 * reader following it takes in again: those it has are kept as
		 * they are, since the frames named already point at them. */
		if (ksym_held(s, old, addr, name))
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

