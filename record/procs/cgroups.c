/*
 * record/procs/cgroups.c: the cgroups of a system-wide recording, and
 * --cgroup; see cgroups.h.
 */
#include "cgroups.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
/* Directories below the hierarchy's root walked at most: a box with more
 * cgroups than this names the rest from PERF_RECORD_CGROUP alone. */
#define CGROUPS_MAX 65536

/* Whether the perf_event controller is bound to a v1 hierarchy:
 * /proc/cgroups gives its hierarchy number, 0 for v2's. */
static int perf_event_on_v1(void)
{
	FILE *f = fopen("/proc/cgroups", "re");
	char name[64];
	int hier = 0, on = 0;

	if (!f)
		return 0;
	while (fscanf(f, "%63s %d %*d %*d", name, &hier) == 2)
		if (!strcmp(name, "perf_event")) {
			on = hier != 0;
			break;
		}
	fclose(f);
	return on;
}

int cgroups_root(char *root, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t alloc = 0;
	int v1 = perf_event_on_v1(), found = -1;

	if (!f)
		return -1;
	/* "ID PARENT MAJ:MIN ROOT MOUNT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS" */
	while (found && getline(&line, &alloc, f) > 0) {
		char mnt[PATH_MAX], fstype[64], superopts[512];
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %*s %511s", fstype, superopts) != 2)
			continue;
		if ((!v1 && !strcmp(fstype, "cgroup2")) ||
		    (v1 && !strcmp(fstype, "cgroup") && strstr(superopts, "perf_event"))) {
			snprintf(root, len, "%s", mnt);
			found = 0;
		}
	}
	free(line);
	fclose(f);
	return found;
}

struct walk {
	char *text;
	size_t len, alloc;
	size_t nr;
	int err;
};

static void walk_add(struct walk *w, unsigned long long id, const char *rel)
{
	size_t need = strlen(rel) + 32;

	if (w->err)
		return;
	if (w->len + need > w->alloc) {
		size_t n = (w->alloc ? w->alloc * 2 : 4096) + need;
		char *t = realloc(w->text, n);

		if (!t) {
			w->err = -ENOMEM;
			return;
		}
		w->text = t;
		w->alloc = n;
	}
	w->len += snprintf(w->text + w->len, w->alloc - w->len, "%llu\t%s\n", id, rel);
}

/* dir (a path under the root, rel its part below it) and the cgroups
 * below it. */
static void walk_dir(struct walk *w, const char *dir, const char *rel)
{
	DIR *d;
	struct dirent *de;
	struct stat st;

	if (w->nr++ >= CGROUPS_MAX || stat(dir, &st))
		return;
	walk_add(w, (unsigned long long)st.st_ino, rel[0] ? rel : "/");
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char sub[PATH_MAX], subrel[PATH_MAX];

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= sizeof(sub) ||
		    (size_t)snprintf(subrel, sizeof(subrel), "%s/%s", rel, de->d_name) >= sizeof(subrel))
			continue;
		walk_dir(w, sub, subrel);
	}
	closedir(d);
}

int cgroups_table(const char *root, char **text, size_t *len)
{
	struct walk w = { 0 };

	walk_dir(&w, root, "");
	if (w.err) {
		free(w.text);
		return w.err;
	}
	*text = w.text;
	*len = w.len;
	return 0;
}

static size_t pid_slot(const struct cgroup_filter *f, pid_t pid)
{
	size_t i = ((uint32_t)pid * 2654435761u) & (f->alloc - 1);

	while (f->pids[i].pid && f->pids[i].pid != pid)
		i = (i + 1) & (f->alloc - 1);
	return i;
}

/* pid kept from now on, as a process that runs (ended 0). */
static void pid_add(struct cgroup_filter *f, pid_t pid)
{
	struct cgroup_pid *p;

	if (pid <= 0)
		return;
	if ((f->nr + 1) * 2 > f->alloc) {
		size_t n = f->alloc ? f->alloc * 2 : 256, oa = f->alloc;
		struct cgroup_pid *old = f->pids, *v = calloc(n, sizeof(*v));

		if (!v)
			return;
		f->pids = v;
		f->alloc = n;
		for (size_t i = 0; i < oa; i++)
			if (old[i].pid)
				f->pids[pid_slot(f, old[i].pid)] = old[i];
		free(old);
	}
	p = &f->pids[pid_slot(f, pid)];
	if (!p->pid) {
		p->pid = pid;
		f->nr++;
	}
	p->ended = 0;
}

/* The processes of dir and of the cgroups below it. */
static void pids_read(struct cgroup_filter *f, const char *dir, int depth)
{
	char path[PATH_MAX];
	FILE *p;
	DIR *d;
	struct dirent *de;
	long v;

	if (depth > 64 || (size_t)snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= sizeof(path))
		return;
	if ((p = fopen(path, "re"))) {
		while (fscanf(p, "%ld", &v) == 1)
			pid_add(f, (pid_t)v);
		fclose(p);
	}
	if (!(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		pids_read(f, path, depth + 1);
	}
	closedir(d);
}

int cgroup_filter_open(struct cgroup_filter *f, const char *path, char *err, size_t errlen)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
				     .disabled = 1 };
	struct statfs sfs;
	struct stat st;
	char real[PATH_MAX];
	int probe;

	f->fd = -1;
	if (!realpath(path, real) || stat(real, &st)) {
		snprintf(err, errlen, "--cgroup '%s': %s; give a cgroup's directory, e.g. /sys/fs/cgroup/system.slice/foo.service",
			 path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || statfs(real, &sfs) ||
	    ((unsigned long)sfs.f_type != CGROUP_SUPER_MAGIC && (unsigned long)sfs.f_type != CGROUP2_SUPER_MAGIC)) {
		snprintf(err, errlen, "--cgroup '%s' is not a cgroup's directory: give one under /sys/fs/cgroup", path);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s", real);
	f->fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->fd < 0) {
		snprintf(err, errlen, "cannot open --cgroup '%s': %s", path, strerror(errno));
		return -1;
	}
	/* The kernel filters by a cgroup only of the perf_event controller's
	 * hierarchy: another one (v1's memory, say) gives ENOENT. */
	probe = syscall(SYS_perf_event_open, &a, f->fd, 0, -1, PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
	if (probe >= 0) {
		close(probe);
		return 0;
	}
	if (errno != ENOENT) {
		snprintf(err, errlen, "cannot record by --cgroup '%s': %s", path, strerror(errno));
		close(f->fd);
		f->fd = -1;
		return -1;
	}
	close(f->fd);
	f->fd = -1;
	f->by_recorder = 1;
	pids_read(f, f->path, 0);
	return 0;
}

void cgroup_filter_refresh(struct cgroup_filter *f)
{
	if (f->by_recorder)
		pids_read(f, f->path, 0);
}

int cgroup_filter_has(const struct cgroup_filter *f, pid_t pid, uint64_t time)
{
	const struct cgroup_pid *p;

	if (!f->by_recorder)
		return 1;
	if (!f->alloc || (p = &f->pids[pid_slot(f, pid)])->pid != pid)
		return 0;
	return !p->ended || (time && time <= p->ended);
}

void cgroup_filter_fork(struct cgroup_filter *f, pid_t parent, pid_t child, uint64_t time)
{
	if (f->by_recorder && cgroup_filter_has(f, parent, time))
		pid_add(f, child);
}

void cgroup_filter_exit(struct cgroup_filter *f, pid_t pid, uint64_t time)
{
	struct cgroup_pid *p;

	/* Kept, as a mark: the process's own records up to its exit still
	 * come, from other CPUs' rings. */
	if (f->by_recorder && f->alloc && (p = &f->pids[pid_slot(f, pid)])->pid == pid && !p->ended)
		p->ended = time ? time : 1;
}

void cgroup_filter_release(struct cgroup_filter *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->pids);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}
