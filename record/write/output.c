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
#include <sys/file.h>
#include <sys/stat.h>

#include "../recorder.h"
#include "../../formats/replace.h"

/* The output is replaced by a rename: whatever sits at its path goes. Only
 * a regular file may (not /dev/null, a FIFO, a directory, or a symlink,
 * whose target would stay as it was), and all is checked before anything
 * starts. */
/* Whether the trace can be made beside path, where no one else can
 * swap it (formats/replace.h): said when not. */
static int output_dir_check(const char *path)
{
	char base[NAME_MAX + 1];
	const char *why;
	int dfd = replace_dir_open(path, base, &why);

	if (dfd < 0)
		return msg_error("cannot create '%s': %s", path, why ? why : strerror(errno));
	close(dfd);
	return 0;
}

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
			return output_dir_check(path);
		return msg_error("cannot use '%s' as the output: %s", path, strerror(errno));
	}
	if (S_ISREG(st.st_mode) && output_dir_check(path))
		return -1;
	/* --force, as perf's: any regular file may go, but never a live
	 * trace, whose recorder would go on writing into a file gone. */
	if (S_ISREG(st.st_mode) && force && replace_live(path))
		return replace_check(path, REPLACE_TRACE, "a memsight trace");
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
static void remove_stale_temps(int dfd, const char *base)
{
	int d2 = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = d2 < 0 ? NULL : fdopendir(d2);
	struct dirent *de;
	size_t bl = strlen(base);

	if (!d && d2 >= 0)
		close(d2);
	while (d && (de = readdir(d))) {
		int fd;

		if (de->d_name[0] != '.' || strncmp(de->d_name + 1, base, bl) || de->d_name[1 + bl] != '.' ||
		    strlen(de->d_name + 2 + bl) != 6)
			continue;
		fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			char head[8];
			struct stat st;

			/* Only what a recorder writes: a trace's magic, in a
			 * file of this user's. */
			if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
			    pread(fd, head, 8, 0) == 8 && !memcmp(head, TRACE_MAGIC, 8))
				unlinkat(dfd, de->d_name, 0);
		}
		close(fd);
	}
	if (d)
		closedir(d);
}

int rec_output_create(struct recorder *rc)
{
	char base[NAME_MAX + 1], hidden[NAME_MAX + 1];
	struct trace_writer_opts o = { .codec = rc->codec, .level = rc->level, .ring_size = rc->fl.ring_size };
	const char *why;

	/* Made and renamed through the directory's descriptor, reached as
	 * formats/replace.h says: nothing swapped on the way after this
	 * moves the trace elsewhere. */
	rc->out_dfd = replace_dir_open(rc->output, base, &why);
	if (rc->out_dfd < 0)
		return msg_error("cannot create '%s': %s", rc->output, why ? why : strerror(errno));
	if (strlen(base) + 8 > NAME_MAX)
		return msg_error("cannot create '%s': its name is too long", rc->output);
	snprintf(rc->out_base, sizeof(rc->out_base), "%s", base);
	snprintf(hidden, sizeof(hidden), ".%s", base);
	remove_stale_temps(rc->out_dfd, base);
	/* 0600: a trace can hold secrets (paths, arguments). */
	rc->out_fd = replace_temp_at(rc->out_dfd, hidden, rc->tmp_path);
	if (rc->out_fd < 0)
		return msg_error("cannot create '%s': %s", rc->output, strerror(errno));
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
