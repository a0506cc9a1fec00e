/*
 * formats/regular.c: opening a file someone else named (regular.h).
 */
#include "regular.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int regular_reopen(int pfd, struct stat *st)
{
	char self[64];
	struct stat now;
	int fd;

	if (fstat(pfd, st))
		return -errno;
	if (!S_ISREG(st->st_mode))
		return S_ISLNK(st->st_mode) ? -ELOOP : -EINVAL;
	/* Through the descriptor: the very file just looked at. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &now) || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int regular_open(const char *path, struct stat *st)
{
	int pfd = open(path, O_PATH | O_CLOEXEC), fd;

	if (pfd < 0)
		return -errno;
	fd = regular_reopen(pfd, st);
	close(pfd);
	return fd;
}
