/*
 * samples/quiet_errors.c: one memory error per mode, each one that does
 * not crash under glibc's malloc: it reads or writes memory that is still
 * mapped. Only the guard mode (memsight record --guard) makes it fault.
 *
 * Usage: quiet_errors MODE [N]
 *
 *   uaf         reads 8 bytes, 24 bytes into a 32-byte block it freed
 *   overflow    writes one byte just past the end of a 100-byte block
 *   underflow   writes 8 bytes just before a 64-byte block (of two made
 *               in a row, the one that starts a page: under the guard,
 *               consecutive blocks lie against their slot's end and start
 *               by turns; else the first)
 *   thread      a 32-byte block allocated and freed by the main thread,
 *               read 8 bytes in by another thread
 *   realloc     grows a 48-byte block to 4000 bytes (it moves), then reads
 *               through the old pointer, 8 bytes in
 *   loop N      the uaf error N times over, each on a fresh block, then
 *               ends well
 *   serve       a service: allocates a 32-byte block at its start, says
 *               "quiet_errors: pid PID", then per line of standard input
 *               "uaf" makes the uaf error on a fresh block, and "early"
 *               frees the block of its start and reads it 8 bytes in; at
 *               the end of its input it ends well
 *
 * Prints, before the error, one line of "quiet_errors: KEY VALUE" per fact
 * a test checks: the kind, the access, the block's size, the offset into
 * it. Ends with "quiet_errors: done" and exit code 7, so that a test sees
 * the program ran to its end with its own code.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say_line(const char *key, const char *value)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "quiet_errors: %s %s\n", key, value);

	if (write(1, line, (size_t)n) != n)
		exit(1);
}

static void say(const char *key, long v)
{
	char value[32];

	snprintf(value, sizeof(value), "%ld", v);
	say_line(key, value);
}

/* Keeps the compiler from seeing through a pointer. */
__attribute__((noinline)) static void *opaque(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

__attribute__((noinline)) static char *make_block(size_t size)
{
	return opaque(malloc(size));
}

__attribute__((noinline)) static void drop_block(void *p)
{
	free(opaque(p));
}

__attribute__((noinline)) static long read_word(char *p)
{
	return *(volatile long *)opaque(p);
}

__attribute__((noinline)) static void write_byte(char *p)
{
	*(volatile char *)opaque(p) = 1;
}

__attribute__((noinline)) static void write_word(char *p)
{
	*(volatile long *)opaque(p) = 0x4242424242424242l;
}

static void truth(const char *kind, const char *access, long size, long offset)
{
	say_line("kind", kind);
	say_line("access", access);
	say("size", size);
	say("offset", offset);
}

static void use_after_free(void)
{
	char *p = make_block(32);

	drop_block(p);
	read_word(p + 24);
}

static void *reader(void *p)
{
	read_word((char *)p + 8);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	pthread_t t;

	if (!strcmp(mode, "uaf")) {
		truth("use-after-free", "read", 32, 24);
		use_after_free();
	} else if (!strcmp(mode, "overflow")) {
		char *p = make_block(100);

		truth("heap-overflow", "write", 100, 100);
		write_byte(p + 100);
		drop_block(p);
	} else if (!strcmp(mode, "underflow")) {
		char *a = make_block(64), *b = make_block(64), *p = (uintptr_t)b % 4096 == 0 ? b : a;

		truth("heap-underflow", "write", 64, -8);
		/* glibc keeps the block's size there: it is not freed. */
		write_word(p - 8);
		drop_block(p == a ? b : a);
	} else if (!strcmp(mode, "thread")) {
		char *p = make_block(32);

		truth("use-after-free", "read", 32, 8);
		drop_block(p);
		if (pthread_create(&t, NULL, reader, p) || pthread_join(t, NULL))
			return 1;
	} else if (!strcmp(mode, "realloc")) {
		char *p = make_block(48), *after = make_block(48), *old = opaque(p), *q;

		q = opaque(realloc(p, 4000));
		if (!q || q == old)
			return say_line("placement-failed", "realloc did not move the block"), 2;
		truth("use-after-free", "read", 48, 8);
		read_word(old + 8);
		drop_block(q);
		drop_block(after);
	} else if (!strcmp(mode, "loop") && argc > 2) {
		long n = atol(argv[2]);

		say("repeats", n);
		for (long i = 0; i < n; i++)
			use_after_free();
	} else if (!strcmp(mode, "serve")) {
		char *early = make_block(32), line[64];

		say("pid", (long)getpid());
		while (fgets(line, sizeof(line), stdin)) {
			if (!strcmp(line, "uaf\n")) {
				use_after_free();
			} else if (!strcmp(line, "early\n") && early) {
				drop_block(early);
				read_word(early + 8);
				early = NULL;
			}
			say_line("served", line[0] == 'u' ? "uaf" : "early");
		}
	} else {
		fprintf(stderr, "usage: quiet_errors uaf|overflow|underflow|thread|realloc|loop N|serve\n");
		return 2;
	}
	say_line("done", mode);
	return 7;
}
