/*
 * record/write/output.c: the trace file's name: what may sit at it, the temporary
 * name the trace is written under until it starts, and the stale ones a
 * killed recorder left.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <libgen.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "../recorder.h"
#include "../../formats/replace.h"

/* The output is replaced by a rename: whatever sits at its path goes. Only
 * a regular file may (not /dev/null, a FIFO, a directory, or a symlink,
 * whose target would stay as it was), and all is checked before anything
 * starts. */
int rec_output_check(const char *path, int force)
{
	struct stat st;
	const char *what;

	if (!path[0])
		return msg_error("the output path is empty: give a file name with -o");
	if (!strcmp(path, "-"))
		return msg_error("-o -: the recorder writes a file, not standard output; give a file name");
	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		return msg_error("cannot use '%s' as the output: %s", path, strerror(errno));
	}
	/* --force, as perf's: any regular file may go. */
	if (S_ISREG(st.st_mode))
		return force ? 0 : replace_check(path, REPLACE_TRACE, "a memsight trace");
	what = S_ISDIR(st.st_mode)   ? "a directory"
	       : S_ISLNK(st.st_mode) ? "a symbolic link"
	       : S_ISFIFO(st.st_mode) ? "a FIFO"
	       : S_ISSOCK(st.st_mode) ? "a socket"
				     : "a device";
	return msg_error("'%s' is %s, which a trace would replace: give the path of a regular file, or of a new one",
		     path, what);
}

/* A recorder killed before its rename leaves .NAME.XXXXXX behind; a live
 * one holds a lock on its own. Those nobody holds go. */
static void remove_stale_temps(const char *dir, const char *base)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t bl = strlen(base);

	while (d && (de = readdir(d))) {
		char path[PATH_MAX];
		int fd;

		if (de->d_name[0] != '.' || strncmp(de->d_name + 1, base, bl) || de->d_name[1 + bl] != '.' ||
		    strlen(de->d_name + 2 + bl) != 6)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			char head[8];

			/* Only what a recorder writes: a trace's magic. */
			if (pread(fd, head, 8, 0) == 8 && !memcmp(head, TRACE_MAGIC, 8))
				unlink(path);
		}
		close(fd);
	}
	if (d)
		closedir(d);
}

int rec_output_create(struct recorder *rc)
{
	char dir[PATH_MAX], base[PATH_MAX];
	struct trace_writer_opts o = { .codec = rc->codec, .level = rc->level, .ring_size = rc->fl.ring_size };
	const char *dn, *bn;

	if (strlen(rc->output) >= sizeof(dir) - 16)
		return msg_error("the output path is too long: at most %zu bytes", sizeof(dir) - 17);
	snprintf(dir, sizeof(dir), "%s", rc->output);
	snprintf(base, sizeof(base), "%s", rc->output);
	dn = dirname(dir);
	bn = basename(base);
	snprintf(rc->tmp_path, sizeof(rc->tmp_path), "%s/.%s.XXXXXX", dn, bn);
	remove_stale_temps(dn, bn);
	/* mkstemp makes it 0600: a trace can hold secrets (paths, arguments). */
	rc->out_fd = mkstemp(rc->tmp_path);
	if (rc->out_fd < 0)
		return msg_error("cannot create '%s': %s", rc->output, strerror(errno));
	fcntl(rc->out_fd, F_SETFD, FD_CLOEXEC);
	/* Held until the recorder exits: the file is live (see above). */
	flock(rc->out_fd, LOCK_EX | LOCK_NB);
	if (trace_writer_init_fd(&rc->w, rc->out_fd, &o))
		return msg_error("cannot write '%s': %s", rc->output, trace_writer_strerror(&rc->w));
	/* A ring takes all its room at once instead (trace_writer_ring_begin). */
	if (!rc->fl.ring_size)
		trace_writer_reserve(&rc->w, WRITE_RESERVE);
	if (rc->w.full)
		return msg_error("no room for '%s': the disk is full", rc->output);
	return 0;
}

/* A trace the new one replaces is kept as NAME.old, as perf keeps
 * perf.data.old, unless NAME.old is something other than a trace (or
 * what is replaced is no trace: --force). A ring keeps its own
 * (ring/flight.c). */
void rec_output_keep_old(struct recorder *rc)
{
	char old[PATH_MAX + 8], head[8];
	struct stat st;

	if (rc->fl.ring_size || rc->old_fd < 0 || pread(rc->old_fd, head, 8, 0) != 8 ||
	    memcmp(head, TRACE_MAGIC, 8))
		return;
	if ((size_t)snprintf(old, sizeof(old), "%s.old", rc->output) >= sizeof(old))
		return;
	if (!lstat(old, &st) && (!S_ISREG(st.st_mode) || replace_refused(old, REPLACE_TRACE))) {
		msg_note("'%s' is not a trace: the trace '%s' held is replaced without a copy kept", old, rc->output);
		return;
	}
	if (rename(rc->output, old))
		msg_warn("cannot keep the old trace as '%s': %s", old, strerror(errno));
}

/* --pidfile: the recorder's pid, for the signals that end it or ask a ring
 * for a snapshot, written once recording starts and removed at its end. */
int rec_pidfile_write(struct recorder *rc)
{
	char line[32];
	int fd, n;

	if (!rc->pidfile)
		return 0;
	/* Only an empty file or an earlier pid file is replaced. */
	fd = open(rc->pidfile, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		char c;

		n = (int)read(fd, &c, 1);
		close(fd);
		if (n == 1 && (c < '0' || c > '9'))
			return msg_error("'%s' is not a pid file, which --pidfile would replace: remove it first, or give "
					 "another name",
					 rc->pidfile);
	}
	fd = open(rc->pidfile, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0)
		return msg_error("cannot write the pid file '%s': %s", rc->pidfile, strerror(errno));
	n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
	if (write(fd, line, n) != n) {
		close(fd);
		return msg_error("cannot write the pid file '%s': %s", rc->pidfile, strerror(errno));
	}
	close(fd);
	rc->pidfile_written = 1;
	return 0;
}

void rec_pidfile_remove(struct recorder *rc)
{
	if (rc->pidfile_written)
		unlink(rc->pidfile);
	rc->pidfile_written = 0;
}
