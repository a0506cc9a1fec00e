/*
 * record/procs/procfile.c: files opened on a recorded process's behalf
 * (procfile.h).
 */
#include "procfile.h"
#include "../../formats/regular.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOBODY 65534

void procfile_cred_nobody(struct procfile_cred *c)
{
	c->uid = NOBODY;
	c->gid = NOBODY;
	c->ngroups = 0;
}

int procfile_cred_read(pid_t pid, struct procfile_cred *c)
{
	char path[64], line[1024];
	unsigned long r, e, s, fs;
	int have = 0;
	FILE *f;

	procfile_cred_nobody(c);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* The filesystem ids are the ones files are opened with. */
		if (sscanf(line, "Uid: %lu %lu %lu %lu", &r, &e, &s, &fs) == 4) {
			c->uid = (uid_t)fs;
			have |= 1;
		} else if (sscanf(line, "Gid: %lu %lu %lu %lu", &r, &e, &s, &fs) == 4) {
			c->gid = (gid_t)fs;
			have |= 2;
		} else if (!strncmp(line, "Groups:", 7)) {
			char *p = line + 7, *end;

			c->ngroups = 0;
			/* More than fit: the first ones, which only ever
			 * grants less. */
			while (c->ngroups < PROCFILE_GROUPS_MAX && (r = strtoul(p, &end, 10), end != p)) {
				c->groups[c->ngroups++] = (gid_t)r;
				p = end;
			}
			have |= 4;
		}
	}
	fclose(f);
	if (have != 7) {
		procfile_cred_nobody(c);
		return -ESRCH;
	}
	return 0;
}

/* The calling thread's filesystem ids and groups, while it acts for a
 * process. The raw system calls act on this thread alone, where glibc's
 * setgroups would change every thread of the recorder. */
struct fsids {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[PROCFILE_GROUPS_MAX];
	int switched;
};

static void cred_leave(struct fsids *old)
{
	if (!old->switched)
		return;
	/* The filesystem uid first: going back to 0 gives back the
	 * capabilities that setting the others needs. */
	syscall(SYS_setfsuid, old->uid);
	syscall(SYS_setfsgid, old->gid);
	syscall(SYS_setgroups, old->ngroups, old->groups);
	old->switched = 0;
}

static int cred_enter(const struct procfile_cred *c, struct fsids *old)
{
	old->switched = 0;
	/* Not root: this recorder has no more rights than its user, and
	 * cannot take another's. A root process has all of root's. */
	if (geteuid() != 0 || c->uid == 0)
		return 0;
	old->ngroups = (int)syscall(SYS_getgroups, PROCFILE_GROUPS_MAX, old->groups);
	if (old->ngroups < 0)
		return -errno;
	old->gid = (gid_t)syscall(SYS_setfsgid, (gid_t)-1);
	old->uid = (uid_t)syscall(SYS_setfsuid, (uid_t)-1);
	old->switched = 1;
	if (syscall(SYS_setgroups, c->ngroups, c->groups)) {
		int e = errno;

		cred_leave(old);
		return -e;
	}
	syscall(SYS_setfsgid, c->gid);
	syscall(SYS_setfsuid, c->uid);
	/* setfsuid says nothing of a failure but by the id it then has. */
	if ((uid_t)syscall(SYS_setfsuid, (uid_t)-1) != c->uid || (gid_t)syscall(SYS_setfsgid, (gid_t)-1) != c->gid) {
		cred_leave(old);
		return -EPERM;
	}
	return 0;
}

/* The file an O_PATH descriptor holds, checked, then opened for reading
 * through that descriptor (formats/regular.h), with the thread's rights
 * of the moment. */
static int reopen(int pfd, const struct procfile_cred *c, unsigned flags, struct stat *st)
{
	int fd = regular_reopen(pfd, st);

	if (fd >= 0 && (flags & PROCFILE_OWNED) && st->st_uid != c->uid) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int sys_openat2(int dfd, const char *path, uint64_t flags, uint64_t resolve)
{
	struct open_how how = { .flags = flags, .resolve = resolve };
	int fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

static int slash_fd(void)
{
	static int fd = -1;
	int f, none = -1;

	if ((f = __atomic_load_n(&fd, __ATOMIC_ACQUIRE)) >= 0)
		return f;
	if ((f = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	if (!__atomic_compare_exchange_n(&fd, &none, f, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		close(f);
		return none;
	}
	return f;
}

int procfile_open(int root, const char *path, const struct procfile_cred *c, unsigned flags, struct stat *st)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct fsids old;
	int dfd, pfd, fd;
	size_t dl;

	if (path[0] != '/' || !slash[1])
		return -EINVAL;
	dl = (size_t)(slash - path);
	if (dl >= sizeof(dir))
		return -ENAMETOOLONG;
	if (dl > 1) {
		memcpy(dir, path + 1, dl - 1);
		dir[dl - 1] = 0;
	} else {
		strcpy(dir, ".");
	}
	if (root < 0 && (root = slash_fd()) < 0)
		return root;
	if ((fd = cred_enter(c, &old)))
		return fd;
	/* Directories as the process would walk them: beneath its root, no
	 * link followed; a mount on the way is its own (a private /tmp). */
	dfd = sys_openat2(root, dir, O_PATH | O_DIRECTORY | O_CLOEXEC,
			  RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (dfd < 0) {
		fd = dfd;
		goto out;
	}
	/* The file itself: a mount on it is another file put in its place
	 * (a bind mount of /etc/shadow over the process's own file). */
	pfd = sys_openat2(dfd, slash + 1, O_PATH | O_NOFOLLOW | O_CLOEXEC,
			  RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	close(dfd);
	if (pfd < 0) {
		fd = pfd;
		goto out;
	}
	fd = reopen(pfd, c, flags, st);
	close(pfd);
out:
	cred_leave(&old);
	return fd;
}

const char *procfile_strerror(int err)
{
	switch (err) {
	case ELOOP:
		return "it is reached through a symbolic link";
	case EXDEV:
		return "another file is mounted over it";
	case EINVAL:
		return "it is no regular file (a FIFO, a device, a directory)";
	case EPERM:
		return "it belongs to another user";
	default:
		return strerror(err);
	}
}

int procfile_open_own(const char *path, struct stat *st)
{
	return regular_open(path, st);
}

int procfile_open_link(const char *link, const struct procfile_cred *c, unsigned flags, struct stat *st)
{
	struct fsids old = { .switched = 0 };
	int pfd, fd;

	/* Taken with the recorder's rights: a process's /proc directory
	 * may be root's (one that changed its ids), and an O_PATH open
	 * neither reads the file nor runs a device's open. */
	pfd = open(link, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (!c || (fd = cred_enter(c, &old)) == 0) {
		fd = reopen(pfd, c, c ? flags : 0, st);
		cred_leave(&old);
	}
	close(pfd);
	return fd;
}

int procfile_open_mapped(pid_t pid, uint64_t start, uint64_t end, const struct procfile_cred *c, unsigned flags,
			 struct stat *st)
{
	char link[96];

	snprintf(link, sizeof(link), "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)start,
		 (unsigned long long)end);
	return procfile_open_link(link, c, flags, st);
}
