/*
 * samples/mem_errors.c: one memory error per mode, each one that really
 * ends the process, with the truth printed before it happens.
 *
 * Usage: mem_errors MODE
 *
 *   uaf         reads 16 bytes into a 1 MiB block after freeing it (glibc
 *               unmaps a block that size on free, so the read faults)
 *   overflow    writes 8 bytes past the end of a block whose mapping ends
 *               where the block does, with no mapping after it
 *   recursion   recurses until the stack meets its guard gap
 *   null        reads through a NULL struct pointer, 24 bytes in
 *   doublefree  frees a 64-byte block twice: glibc aborts
 *   interior    frees a pointer 16 bytes into a live 256-byte block: glibc
 *               aborts
 *   topsize     writes 16 bytes past a 100-byte block, over the size of the
 *               heap's top chunk after it, and allocates again: glibc's
 *               malloc aborts ("malloc(): corrupted top size")
 *   nextsize    writes 16 bytes past a 2000-byte block, over the size of
 *               the chunk after it, and frees the block: glibc's free aborts
 *               ("free(): invalid next size (normal)")
 *   wild        writes through a pointer with garbage in its top bits (a
 *               non-canonical address: the kernel gives no address)
 *   abort       calls abort() itself
 *   handled     reads through a NULL pointer under a SIGSEGV handler of
 *               its own, which jumps back (as a JVM's null checks do);
 *               then allocates and frees, and ends well
 *   none        allocates and frees, and ends well
 *
 * Prints with write(2), before the error, one line of "mem_errors: KEY
 * VALUE" per fact a test checks: the kind, the block's address and size,
 * the faulting address, the offset or distance. The functions that
 * allocate, free and fault are named for their part.
 */
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void say_line(const char *key, const char *value)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "mem_errors: %s %s\n", key, value);

	if (write(1, line, (size_t)n) != n)
		exit(1);
}

static void say(const char *key, unsigned long v)
{
	char value[32];

	snprintf(value, sizeof(value), "%lu", v);
	say_line(key, value);
}

static void say_hex(const char *key, unsigned long v)
{
	char value[32];

	snprintf(value, sizeof(value), "0x%lx", v);
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

__attribute__((noinline)) static int read_at(volatile char *p)
{
	return *p;
}

__attribute__((noinline)) static void write_at(volatile char *p)
{
	*p = 1;
}

static void use_after_free(void)
{
	char *p = make_block(1 << 20);

	say_line("kind", "use-after-free");
	say_hex("block", (unsigned long)p);
	say("size", 1ul << 20);
	say("offset", 16);
	drop_block(p);
	read_at(p + 16);
}

static void heap_overflow(void)
{
	/* glibc maps a block this big on its own: 16 bytes of header before
	 * it and 8 of slack after it fill a mapping of 1 MiB + 4 KiB, so the
	 * 8th byte past its end is the mapping's end. The block's mapping
	 * goes where one as big was just unmapped, below a page kept of it,
	 * which is then unmapped too: a gap after the block. */
	size_t size = (1u << 20) + 4096 - 24, span = (1u << 20) + 4096;
	char *room = mmap(NULL, span + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *p;

	if (room == MAP_FAILED)
		exit(1);
	munmap(room, span);
	p = make_block(size);
	munmap(room + span, 4096);
	if (p + size + 8 != room + span) {
		say_hex("placement-failed", (unsigned long)p);
		exit(2);
	}
	say_line("kind", "heap-overflow");
	say_hex("block", (unsigned long)p);
	say("size", size);
	say("distance", 8);
	write_at(p + size + 8);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winfinite-recursion"
__attribute__((noinline)) static int recurse(volatile char *up, int n)
{
	volatile char pad[256];

	pad[0] = (char)n;
	pad[255] = up ? up[0] : 0;
	return recurse(pad, n + 1) + pad[1];
}
#pragma GCC diagnostic pop

struct record {
	long a, b, c;
	long value;
};

__attribute__((noinline)) static long read_value(struct record *r)
{
	return *(volatile long *)&r->value;
}

static void double_free(void)
{
	char *p = make_block(64);

	say_line("kind", "double-free");
	say_hex("block", (unsigned long)p);
	say("size", 64);
	drop_block(p);
	drop_block(p);
}

static void interior_free(void)
{
	char *p = make_block(256);

	say_line("kind", "invalid-free");
	say_hex("block", (unsigned long)p);
	say("size", 256);
	say("offset", 16);
	drop_block(p + 16);
}

__attribute__((noinline)) static void overrun(char *p, size_t n)
{
	memset(opaque(p), 0x41, n);
}

static void top_size(void)
{
	char *p = make_block(100);

	say_line("kind", "heap-corruption");
	say_hex("block", (unsigned long)p);
	say("size", 100);
	/* Past the block's 104 usable bytes: the top chunk's size field. */
	overrun(p, 116);
	make_block(200000);
}

static void next_size(void)
{
	/* Too big for glibc's tcache and fast bins: its free checks the
	 * next chunk's size, which follows the block's 2008 usable bytes. */
	char *p = make_block(2000), *after = make_block(2000);

	say_line("kind", "heap-corruption");
	say_hex("block", (unsigned long)p);
	say("size", 2000);
	overrun(p, 2016);
	drop_block(p);
	drop_block(after);
}

static sigjmp_buf back;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(back, 1);
}

static int handled_fault(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sigaction(SIGSEGV, &sa, NULL);
	say_line("kind", "handled");
	if (!sigsetjmp(back, 1))
		return (int)read_value(opaque(NULL));
	/* Going on: it allocates and frees again. */
	drop_block(make_block(4096));
	say_line("recovered", "yes");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "uaf")) {
		use_after_free();
	} else if (!strcmp(mode, "overflow")) {
		heap_overflow();
	} else if (!strcmp(mode, "recursion")) {
		say_line("kind", "stack-overflow");
		return recurse(NULL, 0);
	} else if (!strcmp(mode, "null")) {
		say_line("kind", "null-pointer");
		say_hex("address", (unsigned long)offsetof(struct record, value));
		return (int)read_value(opaque(NULL));
	} else if (!strcmp(mode, "doublefree")) {
		double_free();
	} else if (!strcmp(mode, "interior")) {
		interior_free();
	} else if (!strcmp(mode, "topsize")) {
		top_size();
	} else if (!strcmp(mode, "nextsize")) {
		next_size();
	} else if (!strcmp(mode, "wild")) {
		say_line("kind", "wild-pointer");
		write_at(opaque((void *)0x4141414141414141ul));
	} else if (!strcmp(mode, "abort")) {
		say_line("kind", "abort");
		abort();
	} else if (!strcmp(mode, "handled")) {
		return handled_fault();
	} else if (!strcmp(mode, "none")) {
		drop_block(make_block(4096));
		say_line("kind", "none");
		return 0;
	} else {
		fprintf(stderr, "usage: mem_errors uaf|overflow|recursion|null|doublefree|interior|topsize|nextsize|wild|abort|handled|\n"
				"none\n");
		return 2;
	}
	say_line("survived", mode);
	return 1;
}
