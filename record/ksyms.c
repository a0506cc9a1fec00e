/*
 * record/ksyms.c: kernel address set and kallsyms extraction.
 */
#include "ksyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t ip, size_t alloc)
{
	/* Fibonacci hashing: kernel text addresses share their high bits. */
	return (size_t)((ip * 0x9e3779b97f4a7c15ull) >> 20) & (alloc - 1);
}

static int set_grow(struct ksyms_set *s)
{
	size_t n = s->alloc ? s->alloc * 2 : 1024;
	uint64_t *p = calloc(n, sizeof(*p));

	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < s->alloc; i++) {
		uint64_t v = s->slots[i];
		size_t j;

		if (!v)
			continue;
		for (j = slot_of(v, n); p[j]; j = (j + 1) & (n - 1))
			;
		p[j] = v;
	}
	free(s->slots);
	s->slots = p;
	s->alloc = n;
	return 0;
}

int ksyms_set_add(struct ksyms_set *s, uint64_t ip)
{
	size_t j;

	if (!ip)
		return 0;
	if ((s->nr + 1) * 2 > s->alloc && set_grow(s))
		return -ENOMEM;
	for (j = slot_of(ip, s->alloc); s->slots[j]; j = (j + 1) & (s->alloc - 1))
		if (s->slots[j] == ip)
			return 0;
	s->slots[j] = ip;
	s->nr++;
	return 0;
}

void ksyms_set_release(struct ksyms_set *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

struct ksym_line {
	uint64_t addr;
	char *line;
	int keep;
};

static int line_cmp(const void *a, const void *b)
{
	const struct ksym_line *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int ksyms_extract(const struct ksyms_set *s, char **text, size_t *len)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	struct ksym_line *v = NULL;
	size_t n = 0, alloc = 0, ni = 0, out_len = 0;
	uint64_t *ips = NULL;
	char *line = NULL, *out = NULL;
	size_t line_alloc = 0;
	int ret = -ENOMEM;

	*text = NULL;
	*len = 0;
	if (!s->nr) {
		if (f)
			fclose(f);
		return 0;
	}
	if (!f)
		return -errno;
	while (getline(&line, &line_alloc, f) > 0) {
		char type;
		unsigned long long addr;

		if (sscanf(line, "%llx %c", &addr, &type) != 2 || !addr)
			continue;
		/* Text symbols only: callchains never point into data. */
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (n == alloc) {
			struct ksym_line *p = realloc(v, (alloc = alloc ? alloc * 2 : 65536) * sizeof(*p));

			if (!p)
				goto out;
			v = p;
		}
		v[n].addr = addr;
		v[n].keep = 0;
		if (!(v[n].line = strdup(line)))
			goto out;
		n++;
	}
	qsort(v, n, sizeof(*v), line_cmp);
	ips = malloc(s->nr * sizeof(*ips));
	if (!ips)
		goto out;
	for (size_t i = 0; i < s->alloc; i++)
		if (s->slots[i])
			ips[ni++] = s->slots[i];
	qsort(ips, ni, sizeof(*ips), u64_cmp);
	/* Both lists are sorted: walk them together. */
	for (size_t i = 0, k = 0; i < ni; i++) {
		while (k + 1 < n && v[k + 1].addr <= ips[i])
			k++;
		if (k < n && v[k].addr <= ips[i]) {
			v[k].keep = 1;
			if (k + 1 < n)
				v[k + 1].keep = 1;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].keep)
			out_len += strlen(v[i].line);
	out = malloc(out_len + 1);
	if (!out)
		goto out;
	out_len = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i].keep) {
			size_t l = strlen(v[i].line);

			memcpy(out + out_len, v[i].line, l);
			out_len += l;
		}
	}
	out[out_len] = 0;
	*text = out;
	*len = out_len;
	ret = 0;
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].line);
	free(v);
	free(ips);
	free(line);
	fclose(f);
	return ret;
}
