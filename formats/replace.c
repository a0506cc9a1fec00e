/*
 * formats/replace.c: whether an output may replace the file at its path
 * (replace.h).
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msg.h"
#include "replace.h"

int replace_refused(const char *path, const char *sig)
{
	size_t n = strlen(sig);
	char head[32];
	struct stat st;
	int fd;
	ssize_t got;

	/* Never following a link, never waiting on a FIFO. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return 0;
	}
	got = read(fd, head, n < sizeof(head) ? n : sizeof(head));
	close(fd);
	return got != (ssize_t)n || memcmp(head, sig, n);
}

int replace_check(const char *path, const char *sig, const char *what)
{
	if (!replace_refused(path, sig))
		return 0;
	return msg_error("'%s' exists and is not %s, which this output would replace: remove it first, or give "
			 "another name",
			 path, what);
}
