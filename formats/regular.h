/*
 * formats/regular.h: opening a file that someone else named.
 *
 * A trace names the objects its stacks ran in, and a process names the
 * files it maps; on the machine that reads them, what lies at such a path
 * may be a FIFO (whose open waits for a writer) or a device (whose open
 * may do something: a watchdog is armed by it). Owns the one way both
 * programs open such a path: looked at first through an O_PATH descriptor
 * (which neither reads the file nor runs a driver's open), and opened for
 * reading through that descriptor, so the file looked at is the one
 * opened, only when it is a regular file. Links are followed as given.
 */
#ifndef MEMSIGHT_FORMATS_REGULAR_H
#define MEMSIGHT_FORMATS_REGULAR_H

#include <sys/stat.h>

/* The regular file at path, read-only (O_NONBLOCK, O_CLOEXEC), its status
 * into st: a descriptor, or -errno (-EINVAL for anything but a regular
 * file). */
int regular_open(const char *path, struct stat *st);

/* The same for an O_PATH descriptor already taken. */
int regular_reopen(int pfd, struct stat *st);

#endif
