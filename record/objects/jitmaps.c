/*
 * record/objects/jitmaps.c: perf maps and jitdumps of recorded processes,
 * copied into the trace (see jitmaps.h).
 */
#include "jitmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../procs/procfile.h"
#include "../procs/procsnap.h"

enum { JM_PERFMAP, JM_JITDUMP, JM_KINDS };

static const char *const kind_names[JM_KINDS] = { "perf-map", "jitdump" };

struct jm_proc {
	pid_t pid;
	pid_t nspid;		/* its pid in its own pid namespace, which names its perf map */
	struct procfile_cred cred; /* whose rights its files are read with, and whose they must be */
	int gone;		/* exited: copied once more by jitmaps_pump, then forgotten */
	int root;		/* its root directory (O_PATH), when its mount namespace is not ours; -1 */
	int mntns;		/* that mount namespace, held: its mounts (a private /tmp) outlive the
				 * process until its files are copied; -1 */
	int dump;		/* the jitdump it mapped; -1 */
	char dump_path[PATH_MAX];
	struct jm_copied {
		off_t size;	/* of the file at the last copy, -1 for none */
		size_t kept;	/* bytes that copy carried */
		struct timespec mtime;
	} copied[JM_KINDS];
};

/* Bytes copied for one user's processes. */
struct jm_user {
	uid_t uid;
	uint64_t bytes;
};

static uint64_t ns_inode(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (uint64_t)st.st_ino;
}

void jitmaps_init(struct jitmaps *j)
{
	memset(j, 0, sizeof(*j));
	j->own_mntns = ns_inode("/proc/self/ns/mnt");
}

static void proc_free(struct jitmaps *j, struct jm_proc *p)
{
	if (p->root >= 0) {
		close(p->root);
		j->roots--;
	}
	if (p->mntns >= 0)
		close(p->mntns);
	if (p->dump >= 0)
		close(p->dump);
	free(p);
}

void jitmaps_release(struct jitmaps *j)
{
	for (size_t i = 0; i < j->alloc; i++)
		if (j->slots[i])
			proc_free(j, j->slots[i]);
	free(j->slots);
	free(j->users);
	free(j->due);
	memset(j, 0, sizeof(*j));
}

static size_t slot_of(const struct jitmaps *j, pid_t pid)
{
	size_t i = ((uint32_t)pid * 2654435761u) & (j->alloc - 1);

	while (j->slots[i] && j->slots[i]->pid != pid)
		i = (i + 1) & (j->alloc - 1);
	return i;
}

static int grow(struct jitmaps *j)
{
	struct jitmaps n = *j;

	n.alloc = j->alloc ? j->alloc * 2 : 64;
	if (!(n.slots = calloc(n.alloc, sizeof(*n.slots))))
		return -ENOMEM;
	for (size_t i = 0; i < j->alloc; i++)
		if (j->slots[i])
			n.slots[slot_of(&n, j->slots[i]->pid)] = j->slots[i];
	free(j->slots);
	*j = n;
	return 0;
}

/* Remove by backward shifting, so that lookups need no tombstones. */
static void forget(struct jitmaps *j, size_t i)
{
	proc_free(j, j->slots[i]);
	j->slots[i] = NULL;
	j->nr--;
	for (size_t k = (i + 1) & (j->alloc - 1); j->slots[k]; k = (k + 1) & (j->alloc - 1)) {
		struct jm_proc *p = j->slots[k];

		j->slots[k] = NULL;
		j->slots[slot_of(j, p->pid)] = p;
	}
}

static struct jm_proc *proc_note(struct jitmaps *j, pid_t pid)
{
	char path[64];
	struct jm_proc *p;
	size_t i;

	/* A pid whose last process is gone but not copied yet is taken up
	 * again once that one is forgotten. */
	if (j->alloc && (p = j->slots[slot_of(j, pid)]))
		return p->gone ? NULL : p;
	if ((j->nr + 1) * 2 > j->alloc && grow(j))
		return NULL;
	if (!(p = calloc(1, sizeof(*p))))
		return NULL;
	p->pid = pid;
	p->root = p->dump = p->mntns = -1;
	for (int k = 0; k < JM_KINDS; k++)
		p->copied[k].size = -1;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	/* Read now, while the process is there: its files are copied as it
	 * exits, or after. */
	procfile_cred_read(pid, &p->cred);
	p->nspid = procsnap_nspid(pid);
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	/* Held open so that a container's files can be read after its
	 * process exits; past the bound, read through /proc while it lives. */
	if (ns_inode(path) != j->own_mntns && j->roots < JITMAPS_ROOTS_MAX) {
		snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
		p->root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		j->roots += p->root >= 0;
		/* A namespace dies with its last process, and its mounts are
		 * detached then, before the exit is seen here. */
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
		if (p->root >= 0)
			p->mntns = open(path, O_RDONLY | O_CLOEXEC);
	}
	i = slot_of(j, pid);
	j->slots[i] = p;
	j->nr++;
	return p;
}

static int is_jitdump(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	return !strncmp(base, "jit-", 4) && n > 9 && !strcmp(base + n - 5, ".dump");
}

void jitmaps_seen(struct jitmaps *j, pid_t pid, uint64_t start, uint64_t end, const char *path)
{
	struct jm_proc *p = proc_note(j, pid);
	struct stat st;
	int fd;

	if (!p || !path || !is_jitdump(path) || p->dump >= 0 || strlen(path) >= sizeof(p->dump_path))
		return;
	snprintf(p->dump_path, sizeof(p->dump_path), "%s", path);
	/* The very file mapped, while the process lives; after, its path
	 * (see collect_proc). */
	fd = procfile_open_mapped(pid, start, end, &p->cred, PROCFILE_OWNED, &st);
	if (fd == -EPERM || fd == -EINVAL)
		j->refused++;
	p->dump = fd < 0 ? -1 : fd;
}

/* A file of the process by the path it sees, by procfile's rules and only
 * its own user's: under its root when that is not ours; -1 when there is
 * none or it is refused (counted). */
static int proc_open(struct jitmaps *j, const struct jm_proc *p, const char *path)
{
	struct stat st;
	int fd = procfile_open(p->root, path, &p->cred, PROCFILE_OWNED, &st), root;

	/* In our mount namespace but another pid namespace: its root may
	 * still be another directory (a chroot). */
	if (fd == -ENOENT && p->root < 0 && p->nspid) {
		char alt[64];

		snprintf(alt, sizeof(alt), "/proc/%d/root", (int)p->pid);
		if ((root = open(alt, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0) {
			fd = procfile_open(root, path, &p->cred, PROCFILE_OWNED, &st);
			close(root);
		}
	}
	if (fd == -EPERM || fd == -EINVAL || fd == -EXDEV || fd == -ELOOP)
		j->refused++;
	return fd < 0 ? -1 : fd;
}


/* The part of a file to carry: all of it up to the bound, cut after the
 * last whole line of a perf map. A jitdump cut anywhere is read up to its
 * last whole record. */
static size_t keep_len(int kind, const char *data, size_t n, size_t size)
{
	if (n < size && kind == JM_PERFMAP) {
		while (n > 0 && data[n - 1] != '\n')
			n--;
	}
	return n;
}

/* The budget of uid's processes; NULL when no room is left for one. */
static struct jm_user *user_of(struct jitmaps *j, uid_t uid)
{
	struct jm_user *v;

	for (size_t i = 0; i < j->nr_users; i++)
		if (j->users[i].uid == uid)
			return &j->users[i];
	if (!(v = realloc(j->users, (j->nr_users + 1) * sizeof(*v))))
		return NULL;
	j->users = v;
	v[j->nr_users] = (struct jm_user){ uid, 0 };
	return &v[j->nr_users++];
}

static int copy_one(struct jitmaps *j, struct jm_proc *p, int kind, int fd, const char *path, jitmaps_emit emit,
		    void *arg)
{
	struct stat st;
	char head[PATH_MAX + 128];
	size_t hl, want, got = 0, charge;
	struct jm_user *u;
	char *buf;
	int r;

	/* procfile checked it; a jitdump held open is looked at again. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != p->cred.uid) {
		j->refused++;
		return 0;
	}
	if (p->copied[kind].size == st.st_size && p->copied[kind].mtime.tv_sec == st.st_mtim.tv_sec &&
	    p->copied[kind].mtime.tv_nsec == st.st_mtim.tv_nsec)
		return 0;
	if (!st.st_size)
		return 0;
	want = (uint64_t)st.st_size < JITMAPS_FILE_MAX ? (size_t)st.st_size : JITMAPS_FILE_MAX;
	/* A copy replaces the process's last one: only what it adds is
	 * charged, to its user and to the recording. */
	charge = want > p->copied[kind].kept ? want - p->copied[kind].kept : 0;
	if (!(u = user_of(j, p->cred.uid)) || u->bytes + charge > JITMAPS_USER_MAX ||
	    j->copied + charge > JITMAPS_TOTAL_MAX) {
		j->refused++;
		j->over_budget++;
		return 0;
	}
	hl = (size_t)snprintf(head, sizeof(head), "%d\t%d\t%s\t%lld\t%s\n", (int)p->pid, (int)p->nspid, kind_names[kind],
			      (long long)st.st_size, path);
	if (hl >= sizeof(head) || !(buf = malloc(hl + want)))
		return 0;
	memcpy(buf, head, hl);
	while (got < want) {
		ssize_t n = pread(fd, buf + hl + got, want - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	got = keep_len(kind, buf + hl, got, (size_t)st.st_size);
	p->copied[kind].size = st.st_size;
	p->copied[kind].mtime = st.st_mtim;
	r = got ? emit(arg, buf, hl + got) : 0;
	if (got) {
		charge = got > p->copied[kind].kept ? got - p->copied[kind].kept : 0;
		u->bytes += charge;
		j->copied += charge;
		j->read += got;
		p->copied[kind].kept = got;
		j->files++;
	}
	free(buf);
	return r;
}

static int collect_proc(struct jitmaps *j, struct jm_proc *p, jitmaps_emit emit, void *arg)
{
	char path[64];
	int fd, r = 0;

	/* Named by the pid the process knows itself by. */
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)(p->nspid ? p->nspid : p->pid));
	if ((fd = proc_open(j, p, path)) >= 0) {
		r = copy_one(j, p, JM_PERFMAP, fd, path, emit, arg);
		close(fd);
	}
	/* A process may exit before its mapping of the jitdump is seen. */
	if (p->dump < 0 && p->dump_path[0])
		p->dump = proc_open(j, p, p->dump_path);
	if (!r && p->dump >= 0)
		r = copy_one(j, p, JM_JITDUMP, p->dump, p->dump_path, emit, arg);
	return r;
}

int jitmaps_collect(struct jitmaps *j, pid_t pid, int gone, jitmaps_emit emit, void *arg)
{
	int r = 0;

	if (!j->alloc)
		return 0;
	if (pid > 0) {
		size_t i = slot_of(j, pid);
		pid_t *v;

		if (!j->slots[i])
			return 0;
		if (!gone)
			return collect_proc(j, j->slots[i], emit, arg);
		if (j->slots[i]->gone)
			return 0;
		/* Copied by the next pump: the drain loop is not held up by
		 * a big file as the record of the exit goes by. */
		if (j->nr_due == j->alloc_due) {
			size_t n = j->alloc_due ? j->alloc_due * 2 : 64;

			if (!(v = realloc(j->due, n * sizeof(*v)))) {
				r = collect_proc(j, j->slots[i], emit, arg);
				forget(j, i);
				return r;
			}
			j->due = v;
			j->alloc_due = n;
		}
		j->slots[i]->gone = 1;
		j->due[j->nr_due++] = pid;
		return 0;
	}
	for (size_t i = 0; i < j->alloc && !r; i++)
		if (j->slots[i])
			r = collect_proc(j, j->slots[i], emit, arg);
	return r;
}

int jitmaps_pump(struct jitmaps *j, uint64_t budget, jitmaps_emit emit, void *arg)
{
	uint64_t start = j->read;
	size_t done = 0;
	int r = 0;

	while (done < j->nr_due && !r && j->read - start < budget) {
		size_t i = slot_of(j, j->due[done++]);

		if (!j->slots[i])
			continue;
		r = collect_proc(j, j->slots[i], emit, arg);
		forget(j, i);
	}
	if (done) {
		memmove(j->due, j->due + done, (j->nr_due - done) * sizeof(*j->due));
		j->nr_due -= done;
	}
	return r;
}
