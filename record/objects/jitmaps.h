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
 * jitdump through /proc/PID/map_files, the very file it mapped. A file is
 * taken only when it is a regular file owned by the process's user or by
 * root, so a process cannot make the recorder copy another user's file.
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
/* Bytes copied over the whole recording at most. */
#define JITMAPS_TOTAL_MAX (256ull << 20)

struct jm_proc;

struct jitmaps {
	struct jm_proc **slots; /* open addressing by pid */
	size_t alloc, nr;
	uint64_t copied;	/* payload bytes handed out */
	uint64_t files;		/* copies handed out */
	uint64_t refused;	/* files found but not taken (owner, type, the bound) */
	uint64_t own_mntns;	/* the recorder's mount namespace, by inode */
	unsigned roots;		/* root directories held open */
};

typedef int (*jitmaps_emit)(void *arg, const void *payload, size_t len);

void jitmaps_init(struct jitmaps *j);
void jitmaps_release(struct jitmaps *j);
/* A process mapped code: note it (once), and when path is a jitdump
 * (".../jit-N.dump"), keep the file it mapped at start..end open. */
void jitmaps_seen(struct jitmaps *j, pid_t pid, uint64_t start, uint64_t end, const char *path);
/* Copy the files of one process (pid > 0), or of every process noted
 * (pid 0), that are new or have grown since their last copy, handing
 * each payload to emit; gone: the process has exited, and is forgotten
 * after. Returns 0 or what emit returned. */
int jitmaps_collect(struct jitmaps *j, pid_t pid, int gone, jitmaps_emit emit, void *arg);

#endif
