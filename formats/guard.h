/*
 * formats/guard.h: the guard pool's layout, as the wrapper lays it out
 * in a process and as the analyzer finds it in the process's mappings.
 *
 * The pool is 2 * GUARD_SLOTS + 1 pages. Its first page maps a memfd named
 * GUARD_NAME (the mapping's name in /proc/PID/maps and in the kernel's
 * mmap records: "/memfd:" GUARD_NAME " (deleted)"); it is the guard before
 * the first slot. Then page 2i + 1 is slot i and page 2i + 2 the guard
 * after it. A block in a slot lies against the slot's end or its start;
 * every guard page, and a slot not in use, is inaccessible.
 */
#ifndef MEMSIGHT_FORMATS_GUARD_H
#define MEMSIGHT_FORMATS_GUARD_H

#define GUARD_NAME "memsight-guard-pool"
#define GUARD_SLOTS 64
/* The environment a process reads the mode from: RATE or RATE,recover. */
#define GUARD_ENV "MEMSIGHT_GUARD"
/* One guarded allocation in this many, on average, when no rate is given. */
#define GUARD_RATE_DEFAULT 5000

#endif
