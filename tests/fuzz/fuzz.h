/*
 * tests/fuzz/fuzz.h: what the fuzz targets share: an environment that
 * keeps the analyzer off the network and out of any cache, the input as a
 * file, and running one analyzer command on it.
 */
#ifndef MEMSIGHT_FUZZ_H
#define MEMSIGHT_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "../../analyze/cmd/cmd.h"

/* No debuginfod, no cache directory: what the analyzer reads is the
 * input (fuzz_command runs the commands hermetic, never reading this
 * machine's objects). */
void fuzz_env(void);
/* The bytes as a memfd, its path in path; the fd, or -1. */
int fuzz_memfd(const void *data, size_t size, char *path, size_t len);
/* Run fn as `memsight args... path`; args end at the first NULL. */
int fuzz_command(int (*fn)(int argc, char **argv, struct analyze_opts *a), const char *const *args, const char *path);

#endif
