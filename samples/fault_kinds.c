/*
 * samples/fault_kinds.c: page faults of each kind, each kind in a function
 * of its own, with what it did printed as ground truth:
 *   first_touch()  N first writes to fresh anonymous pages (no huge pages)
 *   cow_writer()   in a forked child, a write to each of those N pages,
 *                  which the parent wrote first: N copy-on-write faults
 *   read_zero()    one read() from /dev/zero into N fresh pages: the kernel
 *                  takes the N faults, copying to the user buffer
 *   call_fresh()   a call into a freshly mapped executable page: an
 *                  instruction fetch fault
 *   untouched_frame()  a write to one fresh page while the stack pointer
 *                  lies 1 MiB below the stack's pages, as in a frame
 *                  reserved and not yet written: the kernel can copy no
 *                  stack for that fault (x86-64 only)
 *
 * usage: fault_kinds [N]   (default 64)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static long page;

/* Fresh anonymous pages, never backed by a huge page: each first touch is
 * one fault. */
static char *fresh_pages(long n)
{
	char *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, n * page, MADV_NOHUGEPAGE);
	return p;
}

static void first_touch(char *p, long n)
{
	for (long i = 0; i < n; i++)
		((volatile char *)p)[i * page] = 1;
}

static void cow_writer(char *p, long n)
{
	for (long i = 0; i < n; i++)
		((volatile char *)p)[i * page] = 2;
}

static void read_zero(char *p, long n)
{
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0 || read(fd, p, n * page) != n * page) {
		perror("read /dev/zero");
		exit(1);
	}
	close(fd);
}

/* Lazy binding of open, read and close inside read_zero() would run the
 * dynamic linker there; after the fork its deep stack lands on pages the
 * parent has not written since, so read_zero() would show copy-on-write
 * faults that are not its own. Bind them, and write the stack over, first. */
static void bind_io_calls(void)
{
	volatile char stack[4096];
	int fd = open("/dev/null", O_RDONLY);

	if (fd < 0 || read(fd, (char *)stack, 0) < 0) {
		perror("open /dev/null");
		exit(1);
	}
	close(fd);
	for (size_t i = 0; i < sizeof(stack); i += 64)
		stack[i] = 0;
}

static void call_fresh(void)
{
	static const unsigned char ret = 0xc3;
	int fd = memfd_create("fault_kinds-code", MFD_CLOEXEC);
	void (*fn)(void);
	void *code;

	if (fd < 0 || write(fd, &ret, 1) != 1) {
		perror("memfd");
		exit(1);
	}
	code = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (code == MAP_FAILED) {
		perror("mmap code");
		exit(1);
	}
	fn = (void (*)(void))code;
	fn();
	munmap(code, page);
	close(fd);
}

/* The stack pointer moved below every stack page, then a fault elsewhere:
 * what the dynamic loader does when its large first frame crosses into a
 * page it has not written yet. Nothing runs on the moved stack; a signal
 * delivered there grows the stack, which is within its limit. */
static __attribute__((noinline)) int untouched_frame(char *p)
{
#if defined(__x86_64__)
	__asm__ volatile("mov %%rsp, %%r12\n\t"
			 "sub $0x100000, %%rsp\n\t"
			 "movb $4, (%0)\n\t"
			 "mov %%r12, %%rsp\n\t"
			 : : "r"(p) : "r12", "memory");
	return 1;
#else
	(void)p;
	return 0;
#endif
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 64;
	char *touched, *zeroed;
	pid_t child;
	int status;

	page = sysconf(_SC_PAGESIZE);
	if (n <= 0) {
		fprintf(stderr, "usage: fault_kinds [N]\n");
		return 2;
	}
	touched = fresh_pages(n);
	first_touch(touched, n);
	printf("fault_kinds: first_touch %ld pages at %p\n", n, (void *)touched);
	fflush(stdout);

	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		cow_writer(touched, n);
		_exit(0);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "fault_kinds: the child failed\n");
		return 1;
	}
	printf("fault_kinds: cow_writer %ld pages in pid %d\n", n, (int)child);

	zeroed = fresh_pages(n);
	bind_io_calls();
	read_zero(zeroed, n);
	printf("fault_kinds: read_zero %ld pages at %p\n", n, (void *)zeroed);

	call_fresh();
	printf("fault_kinds: call_fresh 1 page\n");

	if (untouched_frame(fresh_pages(1)))
		printf("fault_kinds: untouched_frame 1 page\n");
	return 0;
}
