/*
 * record/procs/procfile.h: files opened on a recorded process's behalf.
 *
 * Owns the one way the recorder, which often runs as root beside users
 * and containers it does not trust, opens a file that a recorded process
 * names: its perf map, its jitdump, the objects it maps, the build-ids of
 * what it maps. Such a file is opened
 *   - with the process's rights: the thread's filesystem ids and groups
 *     become the process's for the open (setfsuid, setfsgid and setgroups
 *     act on the calling thread alone), so nothing the process could not
 *     read itself is read for it;
 *   - as the process sees it: beneath its root directory, through no
 *     symbolic link, and never across a mount at the file itself (a bind
 *     mount of another file over it); directories on the way may be
 *     mounts, as a private /tmp is;
 *   - only when it is a regular file, checked on an O_PATH descriptor
 *     before the open that reads it, which is made through that very
 *     descriptor: never a FIFO that would block, never a device whose open
 *     does something;
 *   - where asked, only when the process's own user owns it.
 * Knows nothing of what the files hold. Safe to call from any thread.
 */
#ifndef MEMSIGHT_RECORD_PROCFILE_H
#define MEMSIGHT_RECORD_PROCFILE_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define PROCFILE_GROUPS_MAX 64

/* Whose rights a process's files are opened with: its filesystem ids and
 * supplementary groups, as /proc/PID/status gives them. */
struct procfile_cred {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[PROCFILE_GROUPS_MAX];
};

/* The rights of pid into c: 0, or -errno when it cannot be read (the
 * process is gone); c is then nobody's (see procfile_cred_nobody). */
int procfile_cred_read(pid_t pid, struct procfile_cred *c);
/* The rights of a process no longer there to ask: those of nobody
 * (65534), which read what any user may. */
void procfile_cred_nobody(struct procfile_cred *c);

enum procfile_flags {
	/* Only a file owned by the process's user (its uid in c). */
	PROCFILE_OWNED = 1 << 0,
};

/* Open path (absolute, as the process names it) read-only beneath root,
 * an O_PATH descriptor of the process's root directory (-1: this
 * recorder's "/"), with the rights of c, filling *st. Returns the
 * descriptor, or -errno: -ELOOP for a symbolic link on the way, -EXDEV for
 * a mount at the file, -EINVAL for no regular file, -EPERM for another
 * user's file under PROCFILE_OWNED, -EACCES for a file the process could
 * not read, -ENOENT. */
int procfile_open(int root, const char *path, const struct procfile_cred *c, unsigned flags, struct stat *st);

/* Open the file a /proc link names (/proc/PID/map_files/START-END,
 * /proc/PID/exe: the very file, whatever its path is now), under the same
 * rules but for the path's (a mapping is what the process holds). */
int procfile_open_link(const char *link, const struct procfile_cred *c, unsigned flags, struct stat *st);

/* The same for the file of pid's mapping start..end. */
int procfile_open_mapped(pid_t pid, uint64_t start, uint64_t end, const struct procfile_cred *c, unsigned flags,
			 struct stat *st);

/* A file this recorder chose itself (a path on its command line, a
 * program it runs): links followed as given, with its own rights, but
 * opened only when it is a regular file. */
int procfile_open_own(const char *path, struct stat *st);

/* What an error of the functions above means, as the end of a sentence
 * ("cannot open '%s': %s"). */
const char *procfile_strerror(int err);

#endif
