/*
 * record/objects/jitmaps.h: the symbol files managed runtimes write for the
 * code they compile at run time, carried inside a trace.
 *
 * Owns finding and copying, per recorded process, the two files perf reads
 * for JIT-compiled code: the perf map (/tmp/perf-PID.map, a line per
 * function: start, size, name; the JVM, Node and Python write one on
 * request) and the jitdump (jit-PID.dump, code load and move records with
 * their times, announced by the runtime mapping the file executable).
 * Both are read as the process sees them: the perf map under its own root
 * (a container's /tmp, its mount namespace held open so that its mounts
 * outlive the process) and by its pid inside its pid namespace; the
 * jitdump through /proc/PID/map_files, the very file it mapped. Both are
 * opened by procfile's rules (record/procs/procfile.h): with the
 * process's rights, never through a link or a mount at the file, only a
 * regular file of the process's own user, so a process cannot make the
 * recorder copy another user's file (a process gone before the recorder
 * could read whose it was gets nobody's rights: its files are not taken).
 * Budgets per user and per recording bound what the copies take.
 * Each copy is a TRACE_META_JITMAP payload (formats/FORMAT.md): a header
 * line, then the file's bytes up to JITMAPS_FILE_MAX, cut at a line or
 * record boundary; a file that has not changed since its last copy is
 * not copied again. Runs on the drain loop's thread. Knows nothing of perf
 * records or of how the payloads are written.
 */
#ifndef MEMSIGHT_RECORD_JITMAPS_H
#define MEMSIGHT_RECORD_JITMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bytes of one file a trace carries at most: a JVM's map of 20,000
 * compiled methods is about 2 MiB. */
#define JITMAPS_FILE_MAX (32u << 20)
/* Root directories of processes in other mount namespaces held open at
 * once at most. */
#define JITMAPS_ROOTS_MAX 256
/* Bytes copied over the whole recording at most, and for the processes
 * of one user: one user's runtimes cannot take the room of another's. A
 * copy of a file copied before is charged only what it adds. */
#define JITMAPS_TOTAL_MAX (256ull << 20)
#define JITMAPS_USER_MAX (64ull << 20)
/* Bytes a pump reads at most (beyond the file it is in): what one pass of
 * the drain loop spends on the files of processes that exited. */
#define JITMAPS_PASS_MAX (4u << 20)

struct jm_proc;
struct jm_user;

struct jitmaps {
	struct jm_proc **slots; /* open addressing by pid */
	size_t alloc, nr;
	uint64_t copied;	/* bytes charged to the budgets */
	uint64_t read;		/* bytes read, copies of copies included */
	uint64_t files;		/* copies handed out */
	uint64_t refused;	/* files found but not taken (owner, type, a mount, a link, a budget) */
	uint64_t over_budget;	/* of those, refused by a budget */
	uint64_t own_mntns;	/* the recorder's mount namespace, by inode */
	unsigned roots;		/* root directories held open */
	struct jm_user *users;	/* what each user's processes were charged */
	size_t nr_users;
	pid_t *due;		/* processes gone, in the order they went, not copied yet */
	size_t nr_due, alloc_due;
};

typedef int (*jitmaps_emit)(void *arg, const void *payload, size_t len);

void jitmaps_init(struct jitmaps *j);
void jitmaps_release(struct jitmaps *j);
/* A process mapped code: note it (once), and when path is a jitdump
 * (".../jit-N.dump"), keep the file it mapped at start..end open. */
void jitmaps_seen(struct jitmaps *j, pid_t pid, uint64_t start, uint64_t end, const char *path);
/* Copy the files of one process (pid > 0), or of every process noted
 * (pid 0), that are new or have grown since their last copy, handing
 * each payload to emit. gone: the process has exited; its files are
 * copied by a later jitmaps_pump (or jitmaps_collect of every process),
 * and it is forgotten then. Returns 0 or what emit returned. */
int jitmaps_collect(struct jitmaps *j, pid_t pid, int gone, jitmaps_emit emit, void *arg);
/* Copy the files of processes gone, in the order they went, until about
 * budget bytes were read; each is forgotten after. 0 or what emit
 * returned. */
int jitmaps_pump(struct jitmaps *j, uint64_t budget, jitmaps_emit emit, void *arg);

#endif
