/*
 * record/objects/archive.h: `memsight archive`, which embeds into a finished trace
 * the objects its stacks need, on the machine it was recorded on. Part of
 * the recorder's binary: it needs libelf and the recording box, not the
 * analyzer.
 */
#ifndef MEMSIGHT_ARCHIVE_H
#define MEMSIGHT_ARCHIVE_H

/* argv[0] is "archive"; returns the exit status. */
int archive_main(int argc, char **argv);

#endif
