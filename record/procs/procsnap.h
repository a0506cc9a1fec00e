/*
 * record/procs/procsnap.h: what /proc says about processes that already run.
 *
 * Owns the TRACE_META_PROCESS text (pid, ppid, comm, threads, and every
 * mapping with the build-id of its file) and reading GNU build-ids from ELF
 * files with libelf. Processes started after recording begins are known from
 * the kernel's COMM/MMAP2/FORK records instead; this module covers the rest.
 */
#ifndef MEMSIGHT_RECORD_PROCSNAP_H
#define MEMSIGHT_RECORD_PROCSNAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procfile.h"

#define BUILD_ID_MAX 20

/* The build-id of the file pid maps at start..end, read as procfile.h
 * opens a process's files (with its rights c): through the mapping, else
 * by path as the process sees it, else as this recorder does, taken then
 * only when it is still the file dev:ino (ino 0: any). Returns its length
 * (1..BUILD_ID_MAX), or -1 when there is none or no such file. */
int procsnap_mapping_build_id(pid_t pid, const struct procfile_cred *c, uint64_t start, uint64_t end,
			      const char *path, dev_t dev, ino_t ino, unsigned char *id);
/* The same for an open file. */
int procsnap_build_id_fd(int fd, unsigned char *id);
/* The same for an ELF image in memory (the vDSO). */
int procsnap_build_id_mem(const void *image, size_t len, unsigned char *id);
/* Hex form of a build-id into out (2*len+1 bytes). */
void procsnap_build_id_hex(const unsigned char *id, int len, char *out);

/* Snapshot of one process as TRACE_META_PROCESS text (malloc'd).
 * Returns 0, or -errno when the process is gone or unreadable. */
int procsnap_process(pid_t pid, char **text, size_t *len);

/* One "map" line of a TRACE_META_PROCESS text, its strings pointing into
 * a copy of the line. */
struct procsnap_map {
	uint64_t start, end, pgoff;
	const char *perms;	/* "r-xp" */
	const char *bid_hex;	/* "-" for none */
	const char *path;	/* "" for anonymous memory */
};

/* Call fn for every mapping of the snapshot text, with the pid it belongs
 * to. Returns 0, or what fn returned when not 0 (which stops). */
int procsnap_maps_each(const char *text, size_t len, int (*fn)(void *arg, pid_t pid, const struct procsnap_map *m),
		       void *arg);

/* The pid of pid inside its own pid namespace (the innermost of the
 * NSpid line of /proc/PID/status); 0 when that is the recorder's own
 * namespace or it cannot be read. */
pid_t procsnap_nspid(pid_t pid);

/* Thread ids of a process, or every pid on the system when pid is 0.
 * Returns the count (malloc'd array in *out) or -errno. */
int procsnap_list(pid_t pid, pid_t **out);

/* The system around an OOM kill seen at `time`, as TRACE_META_OOM text
 * (malloc'd): load, meminfo, memory pressure, the victim's status while it
 * is still there, and the memory cgroup's figures. Returns 0 or -errno. */
int procsnap_oom_context(pid_t victim, pid_t trigger, uint64_t time, char **text, size_t *len);

#endif
