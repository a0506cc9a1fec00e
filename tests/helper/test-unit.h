/*
 * tests/helper/test-unit.h: the unit tests' entry, for test-tool's main.
 */
#ifndef MEMSIGHT_TEST_UNIT_H
#define MEMSIGHT_TEST_UNIT_H

/* Runs the unit named by argv[1]: 0 when every check passed, 1 when one
 * failed, -1 when argv names no unit. */
int unit_main(int argc, char **argv);

#endif
