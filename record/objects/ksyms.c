/*
 * record/objects/ksyms.c: kernel address set and kallsyms extraction.
 */
#include "ksyms.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../formats/cache.h"

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

/*
 * The cache entry of a boot's core kernel text symbols,
 * "memsight-kallsyms-BOOTID.ksyms": "MSKSYMS1", then u64 count, u64
 * length of the names, u64 _etext's address; the addresses (u64, sorted),
 * count + 1 u32 offsets into the names, and the names, each "TYPE NAME\n"
 * as kallsyms has it after the address.
 */
#define KSYMS_CACHE_MAGIC "MSKSYMS1"
#define KSYMS_CACHE_HEADER 32

static int core_cache_name(char *out, size_t len)
{
	char dir[PATH_MAX], id[64];
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC), n;
	ssize_t r;

	if (fd < 0)
		return -1;
	r = read(fd, id, sizeof(id) - 1);
	close(fd);
	if (r < 32)
		return -1;
	id[r] = 0;
	id[strspn(id, "0123456789abcdef-")] = 0;
	if (strlen(id) < 32 || cache_dir(dir, sizeof(dir)))
		return -1;
	n = snprintf(out, len, "%s/" CACHE_ENTRY_PREFIX "kallsyms-%s.ksyms", dir, id);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Whether kallsyms shows this reader the symbols' addresses now: with
 * kernel.kptr_restrict set against it, every address reads 0, and what the
 * cache kept from before is not to be shown either. Its first line alone
 * is made, not the whole file. */
static int addresses_shown(void)
{
	char line[64];
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	ssize_t r = fd < 0 ? -1 : read(fd, line, sizeof(line) - 1);

	if (fd >= 0)
		close(fd);
	if (r <= 0)
		return 0;
	line[r] = 0;
	return strtoull(line, NULL, 16) != 0;
}

/* The boot's entry, mapped; 0 when it is there and whole. */
static int core_load(struct ksyms_table *t)
{
	char name[PATH_MAX];
	uint64_t h[3];
	struct stat st;
	void *m;
	int fd;

	if (core_cache_name(name, sizeof(name)) || !addresses_shown())
		return -1;
	/* Only a regular file is an entry: never blocked on a FIFO. */
	fd = open(name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < KSYMS_CACHE_HEADER ||
	    (m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
		close(fd);
		return -1;
	}
	cache_touch(fd);
	close(fd);
	memcpy(h, (char *)m + 8, sizeof(h));
	if (memcmp(m, KSYMS_CACHE_MAGIC, 8) || !h[0] || h[0] > (uint64_t)st.st_size / 12 ||
	    (uint64_t)st.st_size != KSYMS_CACHE_HEADER + 12 * h[0] + 4 + h[1] || h[1] > UINT32_MAX) {
		munmap(m, st.st_size);
		return -1;
	}
	t->core = m;
	t->core_size = st.st_size;
	t->core_nr = h[0];
	t->core_names_len = h[1];
	t->core_end = h[2];
	t->core_addr = (const uint64_t *)((char *)m + KSYMS_CACHE_HEADER);
	t->core_off = (const uint32_t *)(t->core_addr + t->core_nr);
	t->core_names = (const char *)(t->core_off + t->core_nr + 1);
	return 0;
}

/* The core kernel's part of a table read whole, into the cache for the
 * next recordings of this boot. Its lines have no "\t[module]". */
static void core_store(const struct ksyms_table *t)
{
	char name[PATH_MAX];
	unsigned char *head = NULL;
	char *names = NULL;
	uint64_t *addr, n = 0, end = 0;
	uint32_t *off;
	size_t nlen = 0;

	if (!t->nr || core_cache_name(name, sizeof(name)))
		return;
	if (!(head = malloc(KSYMS_CACHE_HEADER + 12 * t->nr + 4)) || !(names = malloc(t->len)))
		goto out;
	addr = (uint64_t *)(head + KSYMS_CACHE_HEADER);
	off = (uint32_t *)(addr + t->nr);
	for (size_t i = 0; i < t->nr; i++) {
		const char *line = t->text + t->lines[i].off, *sp = memchr(line, ' ', t->lines[i].len);
		size_t l;

		if (!sp || memchr(line, '\t', t->lines[i].len))
			continue;
		l = t->lines[i].len - (size_t)(sp + 1 - line);
		if (l >= 8 && !memcmp(sp + 1 + 2, "_etext\n", 7))
			end = t->lines[i].addr;
		addr[n] = t->lines[i].addr;
		off[n++] = (uint32_t)nlen;
		memcpy(names + nlen, sp + 1, l);
		nlen += l;
	}
	/* Without _etext the core's end is not known: no entry. */
	if (!n || !end || nlen > UINT32_MAX)
		goto out;
	off[n] = (uint32_t)nlen;
	/* The offsets follow the addresses kept, not those of every line. */
	memmove(addr + n, off, 4 * (n + 1));
	memcpy(head, KSYMS_CACHE_MAGIC, 8);
	memcpy(head + 8, &n, 8);
	memcpy(head + 16, &(uint64_t){ nlen }, 8);
	memcpy(head + 24, &end, 8);
	cache_store(name, head, KSYMS_CACHE_HEADER + 12 * n + 4, names, nlen);
out:
	free(head);
	free(names);
}

static void core_clear(struct ksyms_table *t)
{
	if (t->core)
		munmap(t->core, t->core_size);
	t->core = NULL;
	t->core_size = t->core_nr = t->core_names_len = 0;
}

/* The cache's lines for the sorted addresses ips, all of the core
 * kernel's text: 0, or -1 when the entry does not hold them (the caller
 * reads kallsyms instead). */
static int core_extract(const struct ksyms_table *t, const uint64_t *ips, size_t ni, char **text, size_t *len)
{
	size_t *keep = malloc(2 * ni * sizeof(*keep)), nk = 0, out_len = 0;
	char *out;

	if (!keep)
		return -1;
	for (size_t i = 0; i < ni; i++) {
		size_t lo = 0, hi = t->core_nr;

		if (ips[i] < t->core_addr[0] || ips[i] >= t->core_end) {
			free(keep);
			return -1;
		}
		/* The last symbol at or below the address, and the next. */
		while (hi - lo > 1) {
			size_t mid = (lo + hi) / 2;

			if (t->core_addr[mid] <= ips[i])
				lo = mid;
			else
				hi = mid;
		}
		for (size_t k = lo; k <= lo + 1 && k < t->core_nr; k++) {
			if (nk && keep[nk - 1] >= k)
				continue;
			if (t->core_off[k] >= t->core_off[k + 1] || t->core_off[k + 1] > t->core_names_len) {
				free(keep);
				return -1;
			}
			keep[nk++] = k;
			out_len += 17 + t->core_off[k + 1] - t->core_off[k];
		}
	}
	if (!(out = malloc(out_len + 1))) {
		free(keep);
		return -1;
	}
	*len = 0;
	for (size_t i = 0; i < nk; i++) {
		uint32_t a = t->core_off[keep[i]], b = t->core_off[keep[i] + 1];

		*len += (size_t)sprintf(out + *len, "%016llx ", (unsigned long long)t->core_addr[keep[i]]);
		memcpy(out + *len, t->core_names + a, b - a);
		*len += b - a;
	}
	out[*len] = 0;
	*text = out;
	free(keep);
	return 0;
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
	core_store(arg);
	return NULL;
}

void ksyms_table_start(struct ksyms_table *t)
{
	sigset_t all, old;

	if (!core_load(t))
		return;

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
	core_clear(t);
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
	if (!(ips = malloc(s->nr * sizeof(*ips))))
		return -ENOMEM;
	for (size_t i = 0; i < s->alloc; i++)
		if (s->slots[i])
			ips[ni++] = s->slots[i];
	if (ni > 1)
		qsort(ips, ni, sizeof(*ips), u64_cmp);
	if (t->core && !t->text && !core_extract(t, ips, ni, text, len)) {
		free(ips);
		return 0;
	}
	/* A module loaded or unloaded since the read moved symbols (a
	 * kernel without modules has no /proc/modules at all). */
	mods = read_whole("/proc/modules", &mlen, &merr);
	if (!t->text || !mods != !t->modules || (mods && (mlen != t->modules_len || memcmp(mods, t->modules, mlen)))) {
		table_clear(t);
		table_load(t);
	}
	free(mods);
	if (t->err || !t->text) {
		free(ips);
		return t->err ? t->err : -ENOENT;
	}
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
