/*
 * record/objects/objset.h: the files recorded processes run code from, each
 * once, held open while the process that maps it lives.
 *
 * Owns the object ids the rest of the recorder uses (procs/execmap.h marks
 * them touched) and reading each object as the process sees it: through
 * /proc/PID/map_files/START-END, which opens the very file mapped, whatever
 * its path means here: a container's own libc in another mount namespace,
 * a file deleted or replaced since, a memfd. Where that cannot be opened
 * (a recorder without the capability it needs, a process already gone),
 * /proc/PID/root/PATH and then PATH are tried, and taken only when their
 * build-id is the one the kernel reported for the mapping. Every one is
 * opened by procfile's rules (procs/procfile.h): with the process's
 * rights, never through a link or a mount at the file, never a FIFO or a
 * device. Objects are one per build-id; a mapping whose
 * record carries none is read once per file (device and inode) to learn
 * it. The fds are held until the trace is closed, so the objects can be
 * packed at the end (objects/embed.h) even when their processes are gone.
 * Runs on the thread that sees the records first (the drain loop, or the
 * main thread before the recording starts). Knows nothing of perf records.
 */
#ifndef MEMSIGHT_RECORD_OBJSET_H
#define MEMSIGHT_RECORD_OBJSET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../procs/procfile.h"

#define OBJSET_BUILD_ID_MAX 20

/* Why an object could not be read: formats/FORMAT.md's `objects` entry
 * spells these in words. */
enum objset_why {
	OBJSET_OK,
	OBJSET_GONE,		/* its process was gone and no file here has its build-id */
	OBJSET_NO_BUILD_ID,	/* the file has no build-id: nothing could check a copy */
	OBJSET_NOT_ELF,		/* not an ELF file (code written into a memfd by a JIT) */
	OBJSET_UNREADABLE,	/* the file could not be read */
};

struct objset_obj {
	uint32_t id;
	unsigned char bid[OBJSET_BUILD_ID_MAX];
	int bid_len;		/* 0 while not known */
	char *path;		/* as the process named it */
	int fd;			/* the file, or -1 */
	int vdso;		/* the kernel's vDSO image */
	dev_t dev;
	ino_t ino;
	enum objset_why why;
	int listed;		/* handed to a ring's head already (embed_list_touched) */
};

struct objset {
	struct objset_obj *objs; /* by id - 1 */
	size_t nr, alloc;
	uint32_t *by_bid;	/* open addressing: ids, 0 = empty */
	size_t alloc_bid;
	uint32_t vdso_id;
	int map_files;		/* 1: /proc/PID/map_files can be opened; -1: it cannot (said once) */
	pid_t cred_pid;		/* whose rights cred holds, 0 for none yet */
	struct procfile_cred cred;
};

/* The object of an executable file mapping pid has at [start, end), named
 * path (NUL-terminated), with the build-id the kernel gave (bid_len 0 for
 * none): its id, 0 when it cannot be kept (out of memory). */
uint32_t objset_add(struct objset *s, pid_t pid, uint64_t start, uint64_t end, const char *path,
		    const unsigned char *bid, int bid_len);
/* The vDSO's object id. */
uint32_t objset_vdso(struct objset *s);
/* The object of id, or NULL. */
const struct objset_obj *objset_get(const struct objset *s, uint32_t id);
void objset_release(struct objset *s);

#endif
