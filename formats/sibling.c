/*
 * formats/sibling.c: memsight's programs beside one another; see sibling.h.
 */
#include "sibling.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int sibling_path(const char *name, int mode, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	snprintf(out, len, "the running program's directory");
	if (n <= 0)
		return -1;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = 0;
	if ((size_t)snprintf(out, len, "%s/%s", self, name) < len && !access(out, mode))
		return 0;
	if ((size_t)snprintf(out, len, "%s/" SIBLING_LIBEXEC "/%s", self, name) < len && !access(out, mode))
		return 0;
	snprintf(out, len, "%s (and %s/" SIBLING_LIBEXEC ")", self, self);
	return -1;
}
