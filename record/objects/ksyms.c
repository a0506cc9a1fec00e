/*
 * record/objects/ksyms.c: kernel address set and kallsyms extraction.
 */
#include "ksyms.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	size_t off, len;	/* of the line, newline included, in the table's text */
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

static char *read_whole(const char *path, size_t *len, int *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0, alloc = 0;
	char *buf = NULL;

	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (alloc - n < 65536) {
			char *p = realloc(buf, alloc = alloc ? alloc * 2 : 1 << 20);

			if (!p) {
				*err = -ENOMEM;
				free(buf);
				close(fd);
				return NULL;
			}
			buf = p;
		}
		r = read(fd, buf + n, alloc - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*err = -errno;
			free(buf);
			close(fd);
			return NULL;
		}
		if (!r)
			break;
		n += r;
	}
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
}

static int hexdigit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Read and index kallsyms: text symbols only, as callchains never point
 * into data. Lines are "ADDR TYPE NAME[\t[MODULE]]". */
static void table_load(struct ksyms_table *t)
{
	size_t alloc = 0;
	int sorted = 1;

	t->err = 0;
	t->modules = read_whole("/proc/modules", &t->modules_len, &t->err);
	t->err = 0;
	t->text = read_whole("/proc/kallsyms", &t->len, &t->err);
	for (size_t off = 0; t->text && off < t->len;) {
		const char *line = t->text + off, *nl = memchr(line, '\n', t->len - off), *p = line;
		size_t l = nl ? (size_t)(nl - line) + 1 : t->len - off;
		uint64_t addr = 0;
		int d;

		off += l;
		/* Every line ends with a newline; a read cut short does not. */
		if (!nl)
			break;
		while ((d = hexdigit(*p)) >= 0)
			addr = addr << 4 | d, p++;
		if (*p != ' ' || !addr || !strchr("tTwW", p[1]) || !p[1])
			continue;
		if (t->nr == alloc) {
			struct ksym_line *v = realloc(t->lines, (alloc = alloc ? alloc * 2 : 65536) * sizeof(*v));

			if (!v) {
				t->err = -ENOMEM;
				return;
			}
			t->lines = v;
		}
		sorted &= !t->nr || t->lines[t->nr - 1].addr <= addr;
		t->lines[t->nr++] = (struct ksym_line){ addr, (size_t)(line - t->text), l, 0 };
	}
	if (!sorted && t->nr > 1)
		qsort(t->lines, t->nr, sizeof(*t->lines), line_cmp);
}

static void table_clear(struct ksyms_table *t)
{
	free(t->text);
	free(t->lines);
	free(t->modules);
	t->text = t->modules = NULL;
	t->lines = NULL;
	t->len = t->nr = t->modules_len = 0;
}

static void *table_run(void *arg)
{
	table_load(arg);
	return NULL;
}

void ksyms_table_start(struct ksyms_table *t)
{
	sigset_t all, old;

	/* The recorder takes its signals (SIGCHLD above all) through a
	 * signalfd: a thread that did not block them could take one and
	 * lose it. It inherits this mask. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	t->loading = !pthread_create(&t->thread, NULL, table_run, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void table_join(struct ksyms_table *t)
{
	if (t->loading)
		pthread_join(t->thread, NULL);
	t->loading = 0;
}

void ksyms_table_release(struct ksyms_table *t)
{
	table_join(t);
	table_clear(t);
}

int ksyms_extract(const struct ksyms_set *s, struct ksyms_table *t, char **text, size_t *len)
{
	uint64_t *ips = NULL;
	size_t ni = 0, out_len = 0, mlen = 0;
	char *out = NULL, *mods;
	int merr = 0;

	*text = NULL;
	*len = 0;
	table_join(t);
	if (!s->nr)
		return 0;
	/* A module loaded or unloaded since the read moved symbols (a
	 * kernel without modules has no /proc/modules at all). */
	mods = read_whole("/proc/modules", &mlen, &merr);
	if (!t->text || !mods != !t->modules || (mods && (mlen != t->modules_len || memcmp(mods, t->modules, mlen)))) {
		table_clear(t);
		table_load(t);
	}
	free(mods);
	if (t->err || !t->text)
		return t->err ? t->err : -ENOENT;
	ips = malloc(s->nr * sizeof(*ips));
	if (!ips)
		return -ENOMEM;
	for (size_t i = 0; i < s->alloc; i++)
		if (s->slots[i])
			ips[ni++] = s->slots[i];
	if (ni > 1)
		qsort(ips, ni, sizeof(*ips), u64_cmp);
	/* Both lists are sorted: walk them together. */
	for (size_t i = 0, k = 0; i < ni; i++) {
		while (k + 1 < t->nr && t->lines[k + 1].addr <= ips[i])
			k++;
		if (k < t->nr && t->lines[k].addr <= ips[i]) {
			t->lines[k].keep = 1;
			if (k + 1 < t->nr)
				t->lines[k + 1].keep = 1;
		}
	}
	for (size_t i = 0; i < t->nr; i++)
		if (t->lines[i].keep)
			out_len += t->lines[i].len;
	out = malloc(out_len + 1);
	if (!out) {
		free(ips);
		return -ENOMEM;
	}
	out_len = 0;
	for (size_t i = 0; i < t->nr; i++) {
		if (t->lines[i].keep) {
			memcpy(out + out_len, t->text + t->lines[i].off, t->lines[i].len);
			out_len += t->lines[i].len;
		}
	}
	out[out_len] = 0;
	*text = out;
	*len = out_len;
	free(ips);
	return 0;
}
