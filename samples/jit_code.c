/*
 * samples/jit_code.c: a program that compiles code at run time, as a JVM
 * or V8 does, and tells of it the way they do: a perf map
 * (/tmp/perf-PID.map) and a jitdump (jit-PID.dump, announced by mapping
 * it executable).
 *
 * Usage: jit_code perfmap|jitdump|bad|unwind|frameless [DIR [HOLD_MS]]
 *
 * Writes a stub into anonymous executable memory, names it jit_alpha and
 * runs it: the stub calls touch(), which faults in ALPHA_PAGES pages.
 * Then names a stub jit_beta, which touches BETA_PAGES. With jitdump, the
 * second stub is written over the first, at the same address, so only
 * the times of the jitdump's records tell the two apart; with perfmap it
 * goes at another address. bad writes a perf map with malformed lines
 * between the good ones, and a jitdump cut in the middle of a record.
 * unwind and frameless run one stub, jit_delta, that keeps no frame
 * pointer (as optimized JIT code): only an unwind table tells where its
 * caller's return address is. unwind writes that table into the jitdump
 * (an unwinding record: .eh_frame and .eh_frame_hdr, as CPython's -X
 * perf_jit does), frameless does not. The jitdump goes in DIR (default
 * /tmp). HOLD_MS keeps the process a while
 * before it exits, as a service would, for a recorder to see it alive.
 * Prints the truth: each function's pages, its address, and the files
 * written.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define ALPHA_PAGES 300
#define BETA_PAGES 500

/* push rbp; mov rbp,rsp; mov rax,rdi; mov rdi,rsi; call rax; pop rbp;
 * ret: stub(fn, arg) calls fn(arg) in a frame the frame pointer links. */
static const unsigned char stub_code[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48,
					   0x89, 0xf7, 0xff, 0xd0, 0x5d, 0xc3 };

/* sub rsp,0x28; mov rax,rdi; mov rdi,rsi; call rax; add rsp,0x28; ret:
 * the same call in a frame of 48 bytes with no frame pointer. */
static const unsigned char frameless_code[] = { 0x48, 0x83, 0xec, 0x28, 0x48, 0x89, 0xf8, 0x48, 0x89,
						0xf7, 0xff, 0xd0, 0x48, 0x83, 0xc4, 0x28, 0xc3 };

typedef void (*stub_fn)(void (*)(long), long);

__attribute__((noinline)) void touch(long pages)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)(pages * ps), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("jit_code: mmap");
		exit(1);
	}
	for (long i = 0; i < pages; i++)
		p[i * ps] = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static FILE *perfmap;
static int dump_fd = -1;
static uint64_t code_index;

static void put(const void *p, size_t n)
{
	if (write(dump_fd, p, n) != (ssize_t)n) {
		perror("jit_code: write jitdump");
		exit(1);
	}
}

/* The jitdump's header, and the file mapped executable: how perf and
 * memsight learn that it exists. */
static void jitdump_open(const char *dir)
{
	char path[4096];
	struct {
		uint32_t magic, version, total_size, elf_mach, pad1, pid;
		uint64_t timestamp, flags;
	} h = { 0x4A695444, 1, sizeof(h), 62 /* EM_X86_64 */, 0, (uint32_t)getpid(), now_ns(), 0 };

	snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, (int)getpid());
	dump_fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
	if (dump_fd < 0) {
		perror("jit_code: open jitdump");
		exit(1);
	}
	put(&h, sizeof(h));
	if (mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC, MAP_PRIVATE, dump_fd, 0) == MAP_FAILED) {
		perror("jit_code: mmap jitdump");
		exit(1);
	}
	printf("jit_code: jitdump %s\n", path);
}

/* A debug record for the code at addr: one line entry. */
static void jitdump_line(uint64_t addr, const char *file, int line)
{
	struct {
		uint32_t id, total_size;
		uint64_t timestamp, code_addr, nr_entry;
	} d = { 2, 0, now_ns(), addr, 1 };
	struct {
		uint64_t addr;
		int32_t line, discrim;
	} e = { addr, line, 0 };

	d.total_size = (uint32_t)(sizeof(d) + sizeof(e) + strlen(file) + 1);
	put(&d, sizeof(d));
	put(&e, sizeof(e));
	put(file, strlen(file) + 1);
}

static void jitdump_load(const char *name, uint64_t addr, size_t size, int cut)
{
	struct {
		uint32_t id, total_size;
		uint64_t timestamp;
		uint32_t pid, tid;
		uint64_t vma, code_addr, code_size, code_index;
	} r = { 0, 0, now_ns(), (uint32_t)getpid(), (uint32_t)getpid(), addr, addr, size, code_index++ };

	r.total_size = (uint32_t)(sizeof(r) + strlen(name) + 1 + size);
	put(&r, sizeof(r));
	if (cut)
		return; /* the rest of the record never comes */
	put(name, strlen(name) + 1);
	put((const void *)(uintptr_t)addr, size);
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* The unwinding record for frameless_code at addr: its .eh_frame, said to
 * lie 16-byte aligned after the code, then the .eh_frame_hdr after that,
 * whose table finds the one FDE. The CIE: code alignment 1, data
 * alignment -8, return address column 16, FDE addresses pc-relative
 * sdata4, CFA = rsp + 8 and the return address at CFA - 8 on entry. The
 * FDE: after the 4-byte sub the CFA is rsp + 48; after the add at 12, rsp
 * + 8 again. */
static void jitdump_unwind(uint64_t addr)
{
	static const unsigned char cie[24] = { 0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b,
					       0x0c, 0x07, 0x08, 0x90, 0x01, 0, 0 };
	unsigned char data[68 + 4] = { 0 }, *fde = data + 24, *hdr = data + 48;
	uint64_t eh = addr + ((sizeof(frameless_code) + 15) & ~15ul), h = eh + 48;
	struct {
		uint32_t id, total_size;
		uint64_t timestamp, unwinding_size, eh_frame_hdr_size, mapped_size;
	} r = { 4, (uint32_t)(40 + sizeof(data)), now_ns(), 68, 20, 80 };

	memcpy(data, cie, sizeof(cie));
	put32(fde, 20);
	put32(fde + 4, 28);					/* back to the CIE */
	put32(fde + 8, (uint32_t)(addr - (eh + 24 + 8)));	/* pc_begin, from itself */
	put32(fde + 12, sizeof(frameless_code));
	memcpy(fde + 16, "\0\x44\x0e\x30\x4c\x0e\x08\0", 8); /* no augmentation; the two steps */
	hdr[0] = 1, hdr[1] = 0x1b, hdr[2] = 0x03, hdr[3] = 0x3b;
	put32(hdr + 4, (uint32_t)(eh - (h + 4)));
	put32(hdr + 8, 1);
	put32(hdr + 12, (uint32_t)(addr - h));
	put32(hdr + 16, (uint32_t)(eh + 24 - h));
	put(&r, sizeof(r));
	put(data, sizeof(data));
}

/* Write the stub at code, tell of it, run it. */
static __attribute__((noinline)) void compile_and_run(unsigned char *code, const char *name, long pages, int how)
{
	const unsigned char *stub = how >= 3 ? frameless_code : stub_code;
	size_t size = how >= 3 ? sizeof(frameless_code) : sizeof(stub_code);

	memcpy(code, stub, size);
	__builtin___clear_cache((char *)code, (char *)code + size);
	if (perfmap) {
		if (how == 2)
			fprintf(perfmap, "not a map line\n%lx\n%lx zz bad_size\n", (unsigned long)(uintptr_t)code,
				(unsigned long)(uintptr_t)code);
		/* Newer JDKs write the 0x form. */
		fprintf(perfmap, pages == ALPHA_PAGES ? "%lx %zx %s\n" : "0x%lx 0x%zx %s\n", (unsigned long)(uintptr_t)code,
			size, name);
		fflush(perfmap);
	}
	if (dump_fd >= 0) {
		jitdump_line((uint64_t)(uintptr_t)code, pages == ALPHA_PAGES ? "alpha.js" : "beta.js",
			     pages == ALPHA_PAGES ? 7 : 9);
		if (how == 3)
			jitdump_unwind((uint64_t)(uintptr_t)code);
		jitdump_load(name, (uint64_t)(uintptr_t)code, size, 0);
	}
	((stub_fn)(uintptr_t)code)(touch, pages);
	printf("jit_code: %s at 0x%lx faulted %ld pages\n", name, (unsigned long)(uintptr_t)code, pages);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "jitdump";
	int bad = !strcmp(how, "bad"), unwind = !strcmp(how, "unwind"), frameless = !strcmp(how, "frameless");
	int reuse = !strcmp(how, "jitdump") || bad || unwind || frameless;
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char path[64];

	if (code == MAP_FAILED || (strcmp(how, "perfmap") && !reuse)) {
		fprintf(stderr, "usage: jit_code perfmap|jitdump|bad|unwind|frameless [DIR [HOLD_MS]]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(how, "perfmap") || bad) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
		/* Made anew, as its own user's: a file an earlier process of
		 * this pid left would keep that one's owner. */
		unlink(path);
		if (!(perfmap = fopen(path, "wx"))) {
			perror("jit_code: perf map");
			return 1;
		}
		printf("jit_code: perf map %s\n", path);
	}
	if (reuse)
		jitdump_open(argc > 2 ? argv[2] : "/tmp");
	if (unwind || frameless) {
		compile_and_run(code, "jit_delta", ALPHA_PAGES, unwind ? 3 : 4);
		if (argc > 3)
			usleep((useconds_t)atoi(argv[3]) * 1000);
		return 0;
	}
	compile_and_run(code, "jit_alpha", ALPHA_PAGES, bad ? 2 : 0);
	compile_and_run(reuse ? code : code + 256, "jit_beta", BETA_PAGES, bad ? 2 : 0);
	if (bad)
		jitdump_load("jit_gamma", (uint64_t)(uintptr_t)code, sizeof(stub_code), 1);
	if (perfmap)
		fclose(perfmap);
	if (argc > 3)
		usleep((useconds_t)atoi(argv[3]) * 1000);
	return 0;
}
