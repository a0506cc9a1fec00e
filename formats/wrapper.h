/*
 * formats/wrapper.h: what the wrapper (libmemsight-sample.so) maps in a
 * process for itself, as the analyzer knows it from the process's
 * mappings.
 *
 * Each thread's ring of reports is a memfd named WRAPPER_STREAM_NAME:
 * /proc/PID/maps and the kernel's mmap records name the mapping
 * "/memfd:" WRAPPER_STREAM_NAME " (deleted)". The wrapper's writes to it
 * are the recorder's cost, not the program's memory.
 */
#ifndef MEMSIGHT_FORMATS_WRAPPER_H
#define MEMSIGHT_FORMATS_WRAPPER_H

#define WRAPPER_STREAM_NAME "memsight-stream"
/* The start of the rings' mapping name. */
#define WRAPPER_STREAM_MAP "/memfd:" WRAPPER_STREAM_NAME

#endif
