/*
 * record/procs/procsnap.c: /proc snapshots and build-id reading.
 *
 * Mappings are opened through /proc/PID/map_files/ when possible: that is
 * the file the process really maps, even when it was deleted or lives in
 * another mount namespace (a container), not whatever sits at its path now.
 * Every file is opened by procfile's rules (procfile.h), with the rights
 * of the process that maps it.
 */
#include "procsnap.h"

#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* Build-ids already read, by device and inode: -a snapshots see libc once
 * per process. */
struct bid_cache {
	dev_t dev;
	ino_t ino;
	int len;
	unsigned char id[BUILD_ID_MAX];
};
static struct bid_cache *cache;
static size_t nr_cache, cache_alloc;

static int build_id_elf(Elf *elf, unsigned char *id)
{
	size_t nph;
	int ret = -1;

	if (!elf)
		return -1;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph))
		goto out;
	for (size_t i = 0; i < nph && ret < 0; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + noff, "GNU", 4) && nh.n_descsz > 0) {
				ret = nh.n_descsz > BUILD_ID_MAX ? BUILD_ID_MAX : (int)nh.n_descsz;
				memcpy(id, (char *)d->d_buf + doff, ret);
				break;
			}
		}
	}
out:
	elf_end(elf);
	return ret;
}

int procsnap_build_id_fd(int fd, unsigned char *id)
{
	elf_version(EV_CURRENT);
	return build_id_elf(elf_begin(fd, ELF_C_READ_MMAP, NULL), id);
}

int procsnap_build_id_mem(const void *image, size_t len, unsigned char *id)
{
	elf_version(EV_CURRENT);
	return build_id_elf(elf_memory((char *)image, len), id);
}

/* The build-id of the file open at fd (st its status), from the cache
 * when that file was read before. */
static int build_id_cached(int fd, const struct stat *st, unsigned char *id)
{
	int len;

	for (size_t i = 0; i < nr_cache; i++) {
		if (cache[i].dev == st->st_dev && cache[i].ino == st->st_ino) {
			memcpy(id, cache[i].id, cache[i].len > 0 ? cache[i].len : 0);
			return cache[i].len;
		}
	}
	len = procsnap_build_id_fd(fd, id);
	if (nr_cache == cache_alloc) {
		size_t n = cache_alloc ? cache_alloc * 2 : 64;
		struct bid_cache *p = realloc(cache, n * sizeof(*p));

		if (!p)
			return len;
		cache = p;
		cache_alloc = n;
	}
	cache[nr_cache].dev = st->st_dev;
	cache[nr_cache].ino = st->st_ino;
	cache[nr_cache].len = len;
	if (len > 0)
		memcpy(cache[nr_cache].id, id, len);
	nr_cache++;
	return len;
}

int procsnap_mapping_build_id(pid_t pid, const struct procfile_cred *c, uint64_t start, uint64_t end,
			      const char *path, dev_t dev, ino_t ino, unsigned char *id)
{
	struct stat st;
	char rootp[64];
	int fd, root, len;

	fd = procfile_open_mapped(pid, start, end, c, 0, &st);
	if (fd < 0 && path[0] == '/') {
		/* As the process sees the path, while it is there; then as
		 * this recorder does. */
		snprintf(rootp, sizeof(rootp), "/proc/%d/root", (int)pid);
		root = open(rootp, O_PATH | O_DIRECTORY | O_CLOEXEC);
		fd = procfile_open(root, path, c, 0, &st);
		if (root >= 0)
			close(root);
		if (fd >= 0 && ino && (st.st_dev != dev || st.st_ino != ino)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return -1;
	len = build_id_cached(fd, &st, id);
	close(fd);
	return len;
}

void procsnap_build_id_hex(const unsigned char *id, int len, char *out)
{
	for (int i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[len > 0 ? 2 * len : 0] = 0;
}

struct text {
	char *buf;
	size_t len, alloc;
	int err;
};

static void text_add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->alloc - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->err = -EINVAL;
			return;
		}
		if ((size_t)n < t->alloc - t->len)
			break;
		size_t a = t->alloc ? t->alloc * 2 : 4096;
		while (a - t->len <= (size_t)n)
			a *= 2;
		char *p = realloc(t->buf, a);
		if (!p) {
			t->err = -ENOMEM;
			return;
		}
		t->buf = p;
		t->alloc = a;
	}
	t->len += n;
}

static int read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return n;
}

int procsnap_list(pid_t pid, pid_t **out)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	pid_t *v = NULL;
	size_t n = 0, alloc = 0;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc");
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (n == alloc) {
			pid_t *p = realloc(v, (alloc = alloc ? alloc * 2 : 64) * sizeof(*p));

			if (!p) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = p;
		}
		v[n++] = atoi(de->d_name);
	}
	closedir(d);
	*out = v;
	return n;
}

pid_t procsnap_nspid(pid_t pid)
{
	char path[64], buf[2048], *l;
	long v = 0;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_small(path, buf, sizeof(buf)) <= 0 || !(l = strstr(buf, "\nNSpid:")))
		return 0;
	/* "NSpid:\t4242\t7": the host's pid first, the innermost last. */
	for (char *p = l + 8, *e; *p && *p != '\n'; p = e) {
		long x = strtol(p, &e, 10);

		if (e == p)
			break;
		v = x;
		n++;
	}
	return n > 1 ? (pid_t)v : 0;
}

int procsnap_process(pid_t pid, char **text, size_t *len)
{
	struct text t = { 0 };
	char path[128], buf[512], *line = NULL;
	size_t line_alloc = 0;
	pid_t *tids = NULL, nspid;
	struct procfile_cred cred;
	int nt, ppid = 0, have_cred = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return -ESRCH;
	/* comm may hold spaces and parentheses: ppid follows the last ')'. */
	char *rp = strrchr(buf, ')');
	if (rp)
		sscanf(rp + 1, " %*c %d", &ppid);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return -ESRCH;
	buf[strcspn(buf, "\n")] = 0;
	text_add(&t, "pid %d\nppid %d\ncomm %s\n", (int)pid, ppid, buf);
	if ((nspid = procsnap_nspid(pid)))
		text_add(&t, "nspid %d\n", (int)nspid);
	text_add(&t, "threads");
	nt = procsnap_list(pid, &tids);
	for (int i = 0; i < nt; i++)
		text_add(&t, " %d", (int)tids[i]);
	free(tids);
	text_add(&t, "\n");

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		free(t.buf);
		return -ESRCH;
	}
	while (getline(&line, &line_alloc, f) > 0) {
		unsigned long long start, end, pgoff, ino;
		char perms[8], dev[32], hex[2 * BUILD_ID_MAX + 1] = "-";
		int pathpos = 0;
		const char *file;

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %31s %llu %n", &start, &end, perms, &pgoff, dev, &ino,
			   &pathpos) < 6)
			continue;
		file = pathpos ? line + pathpos : "";
		if (file[0] == '/') {
			unsigned char id[BUILD_ID_MAX];
			int l;

			if (!have_cred++)
				procfile_cred_read(pid, &cred);
			l = procsnap_mapping_build_id(pid, &cred, start, end, file, 0, 0, id);
			if (l > 0)
				procsnap_build_id_hex(id, l, hex);
		}
		text_add(&t, "map\t%llx\t%llx\t%s\t%llx\t%s\t%llu\t%s\t%s\n", start, end, perms, pgoff, dev,
			 ino, hex, file);
	}
	free(line);
	fclose(f);
	if (t.err) {
		free(t.buf);
		return t.err;
	}
	*text = t.buf;
	*len = t.len;
	return 0;
}

/* A /proc or cgroup file as a "--- NAME" section; nothing when unreadable. */
static void section_add(struct text *t, const char *title, const char *path)
{
	char buf[8192];

	if (read_small(path, buf, sizeof(buf)) <= 0)
		return;
	text_add(t, "--- %s\n%s%s", title, buf, buf[strlen(buf) - 1] == '\n' ? "" : "\n");
}

/* The memory cgroup of pid: its directory under /sys/fs/cgroup (v2, or
 * v1's memory hierarchy). */
static int memcg_dir(pid_t pid, char *dir, size_t len, int *v2)
{
	char path[64], buf[4096], *line, *save = NULL;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = 0;
		if (!strcmp(c1 + 1, "memory") || strstr(c1 + 1, ",memory")) {
			snprintf(dir, len, "/sys/fs/cgroup/memory%s", c2 + 1);
			*v2 = 0;
			return 0;
		}
		if (!strcmp(line, "0") && !c1[1]) {
			snprintf(dir, len, "/sys/fs/cgroup%s", c2 + 1);
			*v2 = 1;
		}
	}
	return dir[0] ? 0 : -1;
}

int procsnap_oom_context(pid_t victim, pid_t trigger, uint64_t time, char **out, size_t *len)
{
	static const char *const v2_files[] = { "memory.current", "memory.max", "memory.high", "memory.events",
						"memory.stat", NULL };
	static const char *const v1_files[] = { "memory.usage_in_bytes", "memory.limit_in_bytes",
						"memory.max_usage_in_bytes", "memory.failcnt",
						"memory.oom_control", "memory.stat", NULL };
	struct text t = { 0 };
	char path[PATH_MAX], dir[PATH_MAX - 64] = "";
	int v2 = 0;

	text_add(&t, "time %llu\nvictim_pid %d\ntrigger_pid %d\n", (unsigned long long)time, (int)victim,
		 (int)trigger);
	section_add(&t, "loadavg", "/proc/loadavg");
	section_add(&t, "meminfo", "/proc/meminfo");
	section_add(&t, "pressure/memory", "/proc/pressure/memory");
	snprintf(path, sizeof(path), "/proc/%d/status", (int)victim);
	section_add(&t, "victim status", path);
	/* A memcg OOM kill names the cgroup at its limit: the victim's when
	 * it is still there to ask, else the task that hit the limit. */
	if (!memcg_dir(victim, dir, sizeof(dir), &v2) || !memcg_dir(trigger, dir, sizeof(dir), &v2)) {
		const char *const *files = v2 ? v2_files : v1_files;

		text_add(&t, "--- cgroup\n%s\n", dir);
		for (size_t i = 0; files[i]; i++) {
			snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
			section_add(&t, files[i], path);
		}
	}
	if (t.err) {
		free(t.buf);
		return t.err;
	}
	*out = t.buf;
	*len = t.len;
	return 0;
}

int procsnap_maps_each(const char *text, size_t len, int (*fn)(void *arg, pid_t pid, const struct procsnap_map *m),
		       void *arg)
{
	const char *p = text, *end = text + len;
	pid_t pid = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end;
		char line[PATH_MAX + 256], *f[9];
		size_t n = le - p;
		int nf = 0, r;

		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = 0;
			if (!strncmp(line, "pid ", 4))
				pid = atoi(line + 4);
			else if (!strncmp(line, "map\t", 4)) {
				/* The path may hold tabs: it is the rest of the line. */
				for (char *q = line; nf < 9; nf++) {
					f[nf] = q;
					if (nf == 8)
						break;
					q = strchr(q, '\t');
					if (!q)
						break;
					*q++ = 0;
				}
				if (nf == 8) {
					struct procsnap_map m = {
						.start = strtoull(f[1], NULL, 16),
						.end = strtoull(f[2], NULL, 16),
						.perms = f[3],
						.pgoff = strtoull(f[4], NULL, 16),
						.bid_hex = f[7],
						.path = f[8],
					};

					if ((r = fn(arg, pid, &m)))
						return r;
				}
			}
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}
