/*
 * tests/helper/test-record.c: unit tests of the recorder's internals, run
 * without root, perf or a recording. Prints TAP lines ("ok N - what" or
 * "not ok N - what: why"); the shell test counts them.
 *
 *   test-record scrub   the stack-dump scrub on samples made here: a
 *                       process whose code is known, one it learns, one
 *                       it cannot; 64- and 32-bit. A secret planted in the
 *                       registers and the dump must not come out, the
 *                       words unwinding reads must.
 *   test-record pack    the wrapper's packing of stack dumps by a code
 *                       filter (record/sampler/pack.h): the word-at-a-time
 *                       one keeps exactly the words its rule names; the
 *                       AVX2 and AVX-512 ones, where the CPU has them,
 *                       give its bytes on dumps of every length.
 *   test-record reach   the --leak-check scan of this process: a region
 *                       laid out as a finished thread's stack (writable,
 *                       over a guard page) holds no root, on a 64 MiB
 *                       boundary too; one that starts with a glibc arena
 *                       heap's heap_info is scanned.
 *   test-record procs   what a ring restates of processes, from records
 *                       handed over a CPU's ring at a time: an exec, a
 *                       fork or a loader's mapping read after what came
 *                       later on another CPU.
 */
#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../formats/catalog.h"
#include "../../formats/meta.h"
#include "../../record/leakcheck/reach.h"
#include "../../record/procs/execmap.h"
#include "../../record/procs/proctrack.h"
#include "../../record/sampler/pack.h"
#include "../../record/write/scrub.h"

static int tap_n, tap_failed;

static void tap(int ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++tap_n, what);
	tap_failed += !ok;
}

#define PID 4242
#define DUMP 512
/* Where the stack and the code are: a 64-bit process's, or a 32-bit one's. */
#define SP (wide ? 0x7ffc00001000ull : 0xffd01000ull)
#define CODE (wide ? 0x555500001000ull : 0x56601000ull)
#define REGS_MASK 0xff01ffull /* ax bx cx dx si di bp sp ip r8-r15 */

/* A secret a 64-bit word holds (below 2^47, so the pointers rule keeps
 * it), a 32-bit one, a return address into CODE, and a saved frame
 * pointer into the dump. */
static const uint64_t secret64 = 0x0000743372633373ull; /* "s3cr3t" */
static const uint32_t secret32 = 0x32317770u;		/* "pw12" */
/* A syscall's first argument in rdi (munmap's length, say): no address,
 * so the unwind rule drops it unless told to keep it. */
#define SYSCALL_LEN 0x4001000ull

/* A sample of IDENTIFIER, IP, TID, TIME, REGS_USER and STACK_USER, as the
 * kernel writes it; returns its size. */
static size_t sample_make(unsigned char *rec, uint64_t abi, int wide)
{
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, 0 };
	uint64_t v, regs[19];
	size_t off = sizeof(h), k = 0;
	unsigned char dump[DUMP];

	memset(dump, 0, sizeof(dump));
	v = 1; /* identifier */
	memcpy(rec + off, &v, 8), off += 8;
	v = CODE + 0x10; /* ip */
	memcpy(rec + off, &v, 8), off += 8;
	v = (uint64_t)PID << 32 | PID;
	memcpy(rec + off, &v, 8), off += 8;
	v = 1000; /* time */
	memcpy(rec + off, &v, 8), off += 8;
	memcpy(rec + off, &abi, 8), off += 8;
	for (int r = 0; r < 24; r++) {
		if (!(REGS_MASK & (1ull << r)))
			continue;
		regs[k++] = r == PERF_REG_X86_IP ? CODE + 0x10
			  : r == PERF_REG_X86_SP ? SP
			  : r == PERF_REG_X86_BP ? SP + 64
			  : r == PERF_REG_X86_AX ? (wide ? secret64 : secret32)
			  : r == PERF_REG_X86_SI ? (wide ? secret64 : secret32)
			  : r == PERF_REG_X86_DI ? SYSCALL_LEN
						 : 0;
	}
	memcpy(rec + off, regs, 8 * k), off += 8 * k;
	v = DUMP;
	memcpy(rec + off, &v, 8), off += 8;
	if (wide) {
		uint64_t w[4] = { secret64, SP + 128, CODE + 0x20, secret64 };

		memcpy(dump + 64, w, sizeof(w));
	} else {
		uint32_t w[4] = { secret32, (uint32_t)(SP + 128), (uint32_t)(CODE + 0x20), secret32 };

		memcpy(dump + 64, w, sizeof(w));
	}
	memcpy(rec + off, dump, DUMP), off += DUMP;
	memcpy(rec + off, &v, 8), off += 8; /* dyn_size: all of it */
	h.size = (uint16_t)off;
	memcpy(rec, &h, sizeof(h));
	return off;
}

static int has(const unsigned char *p, size_t n, const void *w, size_t wl)
{
	return memmem(p, n, w, wl) != NULL;
}

static int learned;

static int learn_none(void *arg, int pid)
{
	(void)arg;
	(void)pid;
	learned++;
	return -1;
}

static int learn_wide;

static int learn_code(void *arg, int pid)
{
	int wide = learn_wide;

	learned++;
	execmap_apply(arg, &(struct execmap_entry){ .op = EXECMAP_MAP, .pid = pid, .start = CODE,
						    .end = CODE + 0x1000, .obj = 1 });
	return 0;
}

enum known { KNOWN, LEARNED, UNKNOWN };

/* What sample_make's samples hold. */
#define DUMP_SAMPLE_TYPE                                                                                  \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | \
	 PERF_SAMPLE_STACK_USER)

/* A scrub of mode over an empty map, where process PID's code is mapped
 * at CODE when known; -1 (said) when it cannot start. */
static int scrub_start(struct scrub *s, struct execmap *em, enum scrub_mode mode, enum known known, int wide)
{
	execmap_init(em);
	if (scrub_init(s, mode, em)) {
		tap(0, "scrub_init");
		execmap_release(em);
		return -1;
	}
	if (known == KNOWN)
		execmap_apply(em, &(struct execmap_entry){ .op = EXECMAP_MAP, .pid = PID, .start = CODE,
							   .end = CODE + 0x1000, .obj = 1 });
	return 0;
}

static void scrub_case(enum scrub_mode mode, enum known known, int wide)
{
	static unsigned char rec[4096], out[4096];
	struct execmap em;
	struct scrub s;
	uint64_t abi = wide ? PERF_SAMPLE_REGS_ABI_64 : PERF_SAMPLE_REGS_ABI_32;
	uint64_t st = DUMP_SAMPLE_TYPE;
	uint64_t fp = SP + 128, ret = CODE + 0x20;
	uint32_t fp32 = (uint32_t)fp, ret32 = (uint32_t)ret;
	size_t size = sample_make(rec, abi, wide), n = 0;
	char what[192];
	const char *kn = known == KNOWN ? "known" : known == LEARNED ? "learned from /proc" : "unknown";

	if (scrub_start(&s, &em, mode, known, wide))
		return;
	s.learn = known == LEARNED ? learn_code : learn_none;
	s.learn_arg = &em;
	learned = 0;
	learn_wide = wide;
	/* The same process three times: learn is asked once. */
	for (int i = 0; i < 3; i++)
		n = scrub_copy(&s, st, REGS_MASK, 0, rec, size, out);
	if (mode == SCRUB_POINTERS) {
		snprintf(what, sizeof(what), "pointers rule, %s process, %d-bit: the secret stays, as documented", kn,
			 wide ? 64 : 32);
		tap(wide ? has(out, n, &secret64, 8) : has(out, n, &secret32, 4), what);
		goto out;
	}
	snprintf(what, sizeof(what), "unwind rule, %s process, %d-bit: the secret is %s", kn, wide ? 64 : 32,
		 known == UNKNOWN ? "kept (the pointers rule: it could be an address)" : "gone from registers and dump");
	tap((wide ? has(out, n, &secret64, 8) : has(out, n, &secret32, 4)) == (known == UNKNOWN), what);
	snprintf(what, sizeof(what), "unwind rule, %s process, %d-bit: the frame pointer into the dump is kept", kn,
		 wide ? 64 : 32);
	tap(wide ? has(out, n, &fp, 8) : has(out, n, &fp32, 4), what);
	snprintf(what, sizeof(what), "unwind rule, %s process, %d-bit: the return address is kept", kn, wide ? 64 : 32);
	tap(wide ? has(out, n, &ret, 8) : has(out, n, &ret32, 4), what);
	snprintf(what, sizeof(what), "unwind rule, %s process, %d-bit: /proc is asked %s", kn, wide ? 64 : 32,
		 known == KNOWN ? "never" : "once");
	tap(learned == (known == KNOWN ? 0 : 1), what);
	snprintf(what, sizeof(what), "unwind rule, %s process, %d-bit: counted as unknown %s", kn, wide ? 64 : 32,
		 known == UNKNOWN ? "each time" : "never");
	tap(s.dumps_unknown == (known == UNKNOWN ? 3u : 0u), what);
out:
	scrub_free(&s);
	execmap_release(&em);
}

/* A syscall's exit keeps the registers of its arguments as they are, and
 * only those: the others hold what the program left there. */
static void scrub_keep_case(void)
{
	static unsigned char rec[4096], out[4096];
	struct execmap em;
	struct scrub s;
	int wide = 1;
	uint64_t st = DUMP_SAMPLE_TYPE;
	uint64_t len = SYSCALL_LEN;
	size_t size = sample_make(rec, PERF_SAMPLE_REGS_ABI_64, wide), n;

	if (scrub_start(&s, &em, SCRUB_UNWIND, KNOWN, wide))
		return;
	n = scrub_copy(&s, st, REGS_MASK, 0, rec, size, out);
	tap(!has(out, n, &len, 8), "unwind rule: a register that holds no address is dropped");
	scrub_keep_regs(st, REGS_MASK, catalog_syscall_args_mask(1), rec, size, out);
	tap(has(out, n, &len, 8), "a syscall's exit: the register of its one argument is kept as it was");
	tap(!has(out, n, &secret64, 8), "a syscall's exit: the registers past its arguments are still scrubbed");
	scrub_free(&s);
	execmap_release(&em);
	(void)wide;
}

/* The scrub's vector path (AVX2) and its plain one keep the same words
 * of a dump that mixes pointers into it, code addresses, heap
 * pointers, numbers and noise, 61 words long so that every path's tail
 * is taken. */
static void scrub_paths_case(void)
{
	static unsigned char rec[4096], out[2][4096];
	struct execmap em;
	struct scrub s;
	int wide = 1, same = 1, paths = 0;
	uint64_t st = DUMP_SAMPLE_TYPE;
	size_t size = sample_make(rec, PERF_SAMPLE_REGS_ABI_64, wide), n[2] = { 0 };
	size_t dump_at = 8 + 4 * 8 + 8 + 8 * (size_t)__builtin_popcountll(REGS_MASK) + 8;
	uint64_t dyn = 61 * 8, x = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < DUMP / 8; i++) {
		uint64_t v;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		switch (x % 6) {
		case 0: v = SP + (x >> 8) % DUMP; break;		/* into the dump */
		case 1: v = CODE + (x >> 8) % 0x1000; break;		/* code */
		case 2: v = CODE + 0x100000 + (x >> 8) % 0x10000; break; /* the heap */
		case 3: v = (x >> 8) % 100000; break;			/* a number */
		case 4: v = CODE - 0x1000 + (x >> 8) % 0x3000; break;	/* about the code's edges */
		default: v = x; break;					/* noise */
		}
		memcpy(rec + dump_at + 8 * i, &v, 8);
	}
	/* And the edges: the dump's last word and past it, the code's first
	 * byte, its end and below it. */
	{
		uint64_t edge[] = { SP + dyn, SP + dyn + 1, CODE, CODE + 0x1000, CODE - 1, CODE + 0xfff };

		memcpy(rec + dump_at + 8 * 3, edge, sizeof(edge));
	}
	memcpy(rec + dump_at + DUMP, &dyn, 8);
	if (scrub_start(&s, &em, SCRUB_UNWIND, KNOWN, wide))
		return;
	for (int k = 0, cpu2 = s.avx2; k < 2; k++) {
		if (k == 0 && !cpu2)
			continue;
		s.avx2 = k == 0;
		n[k] = scrub_copy(&s, st, REGS_MASK, 0, rec, size, out[k]);
		paths++;
	}
	if (n[0])
		same = n[0] == n[1] && !memcmp(out[0], out[1], n[1]);
	printf("# %d paths of this CPU compared\n", paths);
	tap(same && n[1], "the scrub's AVX2 and plain paths keep the same words");
	scrub_free(&s);
	execmap_release(&em);
}

/* The registers of a 64-bit sample, one by one, under the rule a dump's
 * words meet: sp and ip stay whatever they hold (here an ip in code the
 * map does not know, a JIT's); a register into the dump or its last word's
 * end, or into code, stays; the heap, a number, the word past the dump's
 * end and the code's edges outside it go; on both paths of this CPU. */
static void scrub_regs_case(void)
{
	static unsigned char rec[4096], out[4096];
	struct execmap em;
	struct scrub s;
	int wide = 1, paths = 0, bad = 0;
	uint64_t st = DUMP_SAMPLE_TYPE;
	size_t size = sample_make(rec, PERF_SAMPLE_REGS_ABI_64, wide), regs_at = 8 + 4 * 8 + 8;
	const uint64_t dyn = DUMP, jit = 0x7f0000001000ull;
	/* By the mask's order: the value, and whether it stays. */
	const struct { int r; uint64_t v; int stays; } want[] = {
		{ PERF_REG_X86_AX, secret64, 0 },	       { PERF_REG_X86_BX, CODE + 0x40, 1 },
		{ PERF_REG_X86_CX, CODE + 0x100000, 0 },     { PERF_REG_X86_DX, SP + dyn + 8, 0 },
		{ PERF_REG_X86_SI, SP + dyn, 1 },	       { PERF_REG_X86_DI, SYSCALL_LEN, 0 },
		{ PERF_REG_X86_BP, SP + 64, 1 },	       { PERF_REG_X86_SP, SP, 1 },
		{ PERF_REG_X86_IP, jit, 1 },		       { PERF_REG_X86_R8, CODE + 0x1000, 0 },
		{ PERF_REG_X86_R9, CODE - 8, 0 },	       { PERF_REG_X86_R10, CODE, 1 },
		{ PERF_REG_X86_R11, CODE + 0xfff, 1 },       { PERF_REG_X86_R12, 0, 1 },
		{ PERF_REG_X86_R13, 7, 0 },		       { PERF_REG_X86_R14, SP - 8, 0 },
		{ PERF_REG_X86_R15, ~0ull, 0 },
	};

	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		memcpy(rec + regs_at + 8 * k, &want[k].v, 8);
	if (scrub_start(&s, &em, SCRUB_UNWIND, KNOWN, wide))
		return;
	for (int k = 0, cpu2 = s.avx2; k < 2; k++) {
		if (k == 0 && !cpu2)
			continue;
		s.avx2 = k == 0;
		scrub_copy(&s, st, REGS_MASK, 0, rec, size, out);
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			uint64_t v;

			memcpy(&v, out + regs_at + 8 * i, 8);
			if (v != (want[i].stays ? want[i].v : 0)) {
				printf("# path %d, register %d: 0x%llx\n", k, want[i].r, (unsigned long long)v);
				bad++;
			}
		}
		paths++;
	}
	printf("# %d paths of this CPU compared\n", paths);
	tap(!bad && paths, "the scrub keeps a register by the rule a dump's word meets, sp and ip whatever they hold");
	scrub_free(&s);
	execmap_release(&em);
}

/* A dump that holds a result (posix_memalign's pointer, returned through
 * memory) keeps the pointers rule, whatever the process: the word it
 * reads stays. */
static void scrub_data_case(void)
{
	static unsigned char rec[4096], out[4096];
	struct execmap em;
	struct scrub s;
	int wide = 1;
	uint64_t st = DUMP_SAMPLE_TYPE;
	size_t size = sample_make(rec, PERF_SAMPLE_REGS_ABI_64, wide), n;

	if (scrub_start(&s, &em, SCRUB_UNWIND, UNKNOWN, wide))
		return;
	s.learn = learn_none;
	s.learn_arg = &em;
	n = scrub_copy(&s, st, REGS_MASK, 1, rec, size, out);
	tap(has(out, n, &secret64, 8), "a dump that holds a result keeps the words that could be pointers");
	scrub_free(&s);
	execmap_release(&em);
	(void)wide;
}

/* Whether the scan's payloads hold a word found in [lo, hi) that points
 * at what. */
struct reach_find {
	uint64_t lo, hi, what;
	int found, parts;
};

static int reach_find_emit(void *arg, const void *payload, size_t len)
{
	struct reach_find *f = arg;
	struct reach_part p;

	if (reach_part_decode(payload, len, &p))
		return -1;
	f->parts++;
	for (uint64_t i = 0; i < p.nr_pairs; i++) {
		uint64_t where, what;

		memcpy(&where, p.pairs + i * REACH_PAIR_SIZE, 8);
		memcpy(&what, p.pairs + i * REACH_PAIR_SIZE + 8, 8);
		f->found |= where >= f->lo && where < f->hi && what == f->what;
	}
	return 0;
}

/* Lay out [at - 4096, at) PROT_NONE and [at, at + 64K) writable within a
 * PROT_NONE reservation, plant a pointer to block in it, with a heap_info
 * before it or not, and say whether the scan reports the pointer. */
static int reach_planted(uint64_t at, void *block, int heap_info)
{
	uint64_t *w = (uint64_t *)(uintptr_t)at;
	struct reach_thread self = { getpid(), (uint64_t)(uintptr_t)&w, { 0 }, 0, 1 };
	struct reach_find f = { at, at + (64 << 10), (uint64_t)(uintptr_t)block, 0, 0 };

	if (mprotect(w, 64 << 10, PROT_READ | PROT_WRITE))
		return -1;
	memset(w, 0, 64 << 10);
	if (heap_info) {
		/* arena, previous heap, size in use, size writable, page size */
		w[0] = at + 48;
		w[2] = 32 << 10;
		w[3] = 64 << 10;
		w[4] = 4096;
	}
	w[100] = (uint64_t)(uintptr_t)block;
	if (reach_scan(getpid(), &self, 1, reach_find_emit, &f) || !f.parts)
		f.found = -1;
	mprotect(w, 64 << 10, PROT_NONE);
	return f.found;
}

static void reach_case(void)
{
	/* 192 MiB reserved: room for a 64 MiB boundary with a page below it. */
	size_t span = 192u << 20;
	unsigned char *res = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	void *volatile block = malloc(777);
	uint64_t aligned;

	if (res == MAP_FAILED || !block) {
		tap(0, "reserving the address space");
		return;
	}
	aligned = ((uint64_t)(uintptr_t)res + (64u << 20)) & ~((64ull << 20) - 1);
	tap(reach_planted(aligned + (1u << 20), block, 0) == 0,
	    "a finished thread's stack (writable over a guard page) holds no root");
	tap(reach_planted(aligned, block, 0) == 0, "nor does one on a 64 MiB boundary");
	tap(reach_planted(aligned, block, 1) == 1, "a glibc arena heap there, with its heap_info, is scanned");
	munmap(res, span);
	free(block);
}

static uint64_t pack_rng = 0x2545f4914f6cdd1dull;

static uint64_t pack_rand(void)
{
	pack_rng ^= pack_rng << 13;
	pack_rng ^= pack_rng >> 7;
	pack_rng ^= pack_rng << 17;
	return pack_rng;
}

/* A word of the kinds a stack holds: zeros and small numbers, pointers
 * into the dump and just past it, addresses anywhere in user space (in a
 * granule the filter marks or not), below the first page, above 2^56. */
static uint64_t pack_word(uint64_t sp, uint64_t len)
{
	switch (pack_rand() % 8) {
	case 0:
		return 0;
	case 1:
		return pack_rand() % 4096;
	case 2:
		return sp + (pack_rand() % (len / 8 + 2)) * 8;
	case 3:
		return sp + len + pack_rand() % 16;
	case 4:
		return sp - 8 * (pack_rand() % 4);
	case 5:
		return (1ull << 56) + pack_rand() % 4096;
	default:
		return 4096 + pack_rand() % ((1ull << 47) - 4096);
	}
}

#define PACK_MAX_WORDS 1100

static void pack_case(void)
{
	static const size_t lens[] = { 0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 31, 63, 64, 65, 66, 127, 128, 200, 511, 1024, 1099 };
	static uint64_t w[PACK_MAX_WORDS], code[(EXECMAP_FILTER_BITS / 64)];
	static uint64_t bits[2][PACK_MAX_WORDS / 64 + 1], out[2][PACK_MAX_WORDS + 8];
	struct {
		const char *what;
		dump_pack_fn fn;
		int have;
	} impl[2] = { { "AVX2", NULL, 0 }, { "AVX-512", NULL, 0 } };
	int rule_ok = 1, same[2] = { 1, 1 }, dumps = 0;
	char what[160];

#ifdef PACK_VECTORS
	__builtin_cpu_init();
	impl[0].fn = dump_pack_avx2;
	impl[0].have = __builtin_cpu_supports("avx2");
	impl[1].fn = dump_pack_avx512;
	impl[1].have = __builtin_cpu_supports("avx512f");
#endif
	for (int round = 0; round < 40; round++) {
		/* Filters from nearly empty to nearly full. */
		for (size_t i = 0; i < (EXECMAP_FILTER_BITS / 64); i++)
			code[i] = pack_rand() & pack_rand() & (round % 4 ? pack_rand() : ~0ull);
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			size_t words = lens[l], n;
			uint64_t sp = (uint64_t)(uintptr_t)w, len = 8 * words;

			for (size_t i = 0; i < words; i++)
				w[i] = pack_word(sp, len);
			memset(bits, 0xa5, sizeof(bits));
			n = dump_pack(w, words, sp, len, code, bits[0], out[0]);
			dumps++;
			/* The rule, word by word, against what was kept. */
			for (size_t i = 0, k = 0; i < words; i++) {
				uint64_t v = w[i];
				unsigned bit = execmap_filter_bit(v);
				int keep = v - sp <= len || (v >= 4096 && v < (1ull << 56) && (code[bit / 64] >> (bit % 64) & 1));

				if (keep != (int)(bits[0][i / 64] >> (i % 64) & 1) || (keep && (k >= n || out[0][k++] != v)))
					rule_ok = 0;
			}
			for (int m = 0; m < 2; m++) {
				size_t got;

				if (!impl[m].have)
					continue;
				got = impl[m].fn(w, words, sp, len, code, bits[1], out[1]);
				if (got != n || memcmp(bits[0], bits[1], 8 * ((words + 63) / 64)) ||
				    memcmp(out[0], out[1], 8 * n))
					same[m] = 0;
			}
		}
	}
	snprintf(what, sizeof(what), "the word-at-a-time packing keeps exactly the words in the dump or a marked granule (%d dumps)",
		 dumps);
	tap(rule_ok, what);
	for (int m = 0; m < 2; m++) {
		if (impl[m].have)
			snprintf(what, sizeof(what), "the %s packing gives the same bits and words (%d dumps)", impl[m].what,
				 dumps);
		else
			snprintf(what, sizeof(what), "the %s packing # skip: this CPU has no %s", impl[m].what,
				 impl[m].what);
		tap(same[m], what);
	}
}

/* A kernel record as the recorder's rings hold it: the body, then the
 * sample_id trailer TID, TIME, CPU, IDENTIFIER. */
static size_t pt_record(unsigned char *buf, uint32_t type, uint16_t misc, const void *body, size_t len, uint64_t time)
{
	size_t n = 8 + ((len + 7) & ~(size_t)7) + 32;
	struct perf_event_header h = { type, misc, (uint16_t)n };

	memset(buf, 0, n);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + 8, body, len);
	memcpy(buf + n - 24, &time, 8);
	return n;
}

static void pt_mmap2(struct proctrack *t, uint32_t pid, uint64_t start, uint64_t end, uint64_t pgoff, uint32_t prot,
		     const char *path, uint64_t time)
{
	unsigned char body[64 + 256] = { 0 }, buf[512];
	uint32_t flags = MAP_PRIVATE;
	uint64_t len = end - start;

	memcpy(body, &pid, 4);
	memcpy(body + 4, &pid, 4);
	memcpy(body + 8, &start, 8);
	memcpy(body + 16, &len, 8);
	memcpy(body + 24, &pgoff, 8);
	memcpy(body + 56, &prot, 4);
	memcpy(body + 60, &flags, 4);
	strcpy((char *)body + 64, path);
	proctrack_record(t, buf, pt_record(buf, PERF_RECORD_MMAP2, 0, body, 64 + strlen(path) + 1, time));
}

static void pt_exec(struct proctrack *t, uint32_t pid, const char *comm, uint64_t time)
{
	unsigned char body[32] = { 0 }, buf[128];

	memcpy(body, &pid, 4);
	memcpy(body + 4, &pid, 4);
	strcpy((char *)body + 8, comm);
	proctrack_record(t, buf, pt_record(buf, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, body, 24, time));
}

/* A FORK or EXIT of process pid. */
static void pt_task(struct proctrack *t, uint32_t type, uint32_t pid, uint32_t ppid, uint64_t time)
{
	uint32_t body[6] = { pid, ppid, pid, ppid };
	unsigned char buf[128];

	memcpy(body + 4, &time, 8);
	proctrack_record(t, buf, pt_record(buf, type, 0, body, sizeof(body), time));
}

struct pt_text {
	char text[8192];
	size_t len;
};

static int pt_keep(void *arg, const char *text, size_t len)
{
	struct pt_text *o = arg;

	if (o->len + len < sizeof(o->text)) {
		memcpy(o->text + o->len, text, len);
		o->len += len;
		o->text[o->len] = 0;
	}
	return 0;
}

static int pt_by_start(const void *a, const void *b)
{
	unsigned long long x = strtoull(*(char *const *)a, NULL, 16), y = strtoull(*(char *const *)b, NULL, 16);

	return x < y ? -1 : x > y;
}

/* The map lines of pid in a restatement, "start-end perms pgoff path"
 * each, by start, joined by "; ". */
static void pt_maps_of(const char *text, int pid, char *out, size_t size)
{
	char head[32], item[16][320], *items[16];
	const char *s = text;
	size_t n = 0, nr = 0;

	out[0] = 0;
	snprintf(head, sizeof(head), "pid %d\n", pid);
	while ((s = strstr(s, head)) && s != text && s[-1] != '\n')
		s++;
	if (!s)
		return;
	for (s = strchr(s, '\n') + 1; *s && strncmp(s, "pid ", 4); s = strchr(s, '\n') + 1) {
		unsigned long long a, b, off;
		char perms[8], dev[16], ino[24], bid[48], path[256] = "//anon";
		int at = 0;

		/* An anonymous mapping's path is empty: the analyzer's "//anon". */
		if (nr < 16 &&
		    sscanf(s, "map\t%llx\t%llx\t%7s\t%llx\t%15s\t%23s\t%47s%n", &a, &b, perms, &off, dev, ino, bid, &at) == 7 &&
		    at) {
			size_t pl = s[at] == '\t' ? strcspn(s + at + 1, "\n") : 0;

			if (pl && pl < sizeof(path))
				snprintf(path, sizeof(path), "%.*s", (int)pl, s + at + 1);
			snprintf(item[nr], sizeof(item[nr]), "%llx-%llx %s %llx %s", a, b, perms, off, path);
			items[nr] = item[nr];
			nr++;
		}
		if (!strchr(s, '\n'))
			break;
	}
	qsort(items, nr, sizeof(*items), pt_by_start);
	for (size_t i = 0; i < nr; i++)
		n += snprintf(out + n, size - n, "%s%s", i ? "; " : "", items[i]);
}

/* One TAP line: pid's maps in text are want, and also holds. */
static void pt_expect(const char *text, int pid, const char *want, int also, const char *what)
{
	char got[2048];

	pt_maps_of(text, pid, got, sizeof(got));
	if (strcmp(got, want) || !also)
		printf("# pid %d: %s\n# wanted: %s\n%s", pid, got, want, text);
	tap(!strcmp(got, want) && also, what);
}

struct pt_count {
	size_t maps;
	unsigned long long lowest;
	int stack;
};

/* Counts the map lines of a restatement, and of those not the stack's
 * the lowest start. */
static int pt_count_maps(void *arg, const char *text, size_t len)
{
	struct pt_count *c = arg;
	const char *s = text, *end = text + len;

	while (s < end) {
		const char *nl = memchr(s, '\n', end - s);
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		unsigned long long a;

		if (sscanf(s, "map\t%llx\t", &a) == 1) {
			c->maps++;
			if (n >= 8 && !memcmp(s + n - 8, "\t[stack]", 8))
				c->stack = 1;
			else if (!c->lowest || a < c->lowest)
				c->lowest = a;
		}
		s += n + 1;
	}
	return 0;
}

/* A restatement within a budget: pid 40 with its code, its data and
 * twenty anonymous mappings, pid 41 with its code and one anonymous
 * mapping; each budget smaller than the one before. The process that
 * maps the most is cut back first. */
static void proctrack_budget_case(void)
{
	static const char *const big =
		"1000-2000 r-xp 0 /lib/a.so; 2000-3000 rw-p 1000 /lib/a.so; 100000-101000 rw-p 0 //anon";
	static const char *const small = "1000-2000 r-xp 0 /bin/small; 200000-201000 rw-p 0 //anon";
	static const struct {
		size_t budget;
		const char *maps40, *maps41; /* NULL: left out */
		uint64_t cut, dropped;
	} step[] = {
		{ 100000, NULL, NULL, 0, 0 },
		{ 1296, "1000-2000 r-xp 0 /lib/a.so; 2000-3000 rw-p 1000 /lib/a.so", NULL, 1, 0 },
		{ 546, "1000-2000 r-xp 0 /lib/a.so", NULL, 2, 0 },
		{ 256, "", "", 3, 0 },
		{ 200, "", "", 4, 1 },
	};
	struct proctrack t = { 0 };
	int ok = 1;

	pt_exec(&t, 40, "big", 10);
	pt_mmap2(&t, 40, 0x1000, 0x2000, 0, PROT_READ | PROT_EXEC, "/lib/a.so", 20);
	pt_mmap2(&t, 40, 0x2000, 0x3000, 0x1000, PROT_READ | PROT_WRITE, "/lib/a.so", 30);
	for (uint64_t i = 0; i < 20; i++)
		pt_mmap2(&t, 40, 0x100000 + i * 0x2000, 0x101000 + i * 0x2000, 0, PROT_READ | PROT_WRITE, "//anon",
			 40 + i);
	pt_exec(&t, 41, "small", 10);
	pt_mmap2(&t, 41, 0x1000, 0x2000, 0, PROT_READ | PROT_EXEC, "/bin/small", 20);
	pt_mmap2(&t, 41, 0x200000, 0x201000, 0, PROT_READ | PROT_WRITE, "//anon", 30);
	for (size_t s = 0; s < sizeof(step) / sizeof(step[0]); s++) {
		struct pt_text o = { .len = 0 };
		char got40[2048], got41[2048];
		int has40, has41, good;

		proctrack_emit(&t, step[s].budget, pt_keep, &o);
		has40 = strstr(o.text, "pid 40\n") != NULL;
		has41 = strstr(o.text, "pid 41\n") != NULL;
		pt_maps_of(o.text, 40, got40, sizeof(got40));
		pt_maps_of(o.text, 41, got41, sizeof(got41));
		/* The first of the twenty stands for them. */
		if (strstr(got40, "; 102000-"))
			*strstr(got40, "; 102000-") = 0;
		good = t.cut == step[s].cut && t.dropped == step[s].dropped;
		if (step[s].dropped)
			/* Only one of the two fits, with no mapping. */
			good = good && has40 + has41 == 1 && !got40[0] && !got41[0];
		else
			good = good && has40 && has41 && !strcmp(got40, step[s].maps40 ? step[s].maps40 : big) &&
			       !strcmp(got41, step[s].maps41 ? step[s].maps41 : small);
		if (!good) {
			printf("# budget %zu: pid 40 %s: %s; pid 41 %s: %s (cut %llu, dropped %llu)\n", step[s].budget,
			       has40 ? "in" : "out", got40, has41 ? "in" : "out", got41, (unsigned long long)t.cut,
			       (unsigned long long)t.dropped);
			ok = 0;
		}
	}
	tap(ok, "a restatement over its budget cuts back the process that maps the most: its anonymous mappings, "
		"then those of no code, then all; then processes are left out");
	proctrack_release(&t);
}

/* A process that maps anonymous memory without end: only the newest
 * PROCTRACK_ANON_MAX are restated, and its stack stays. */
static void proctrack_anon_case(void)
{
	struct proctrack t = { 0 };
	struct pt_count c = { 0 };

	pt_exec(&t, 30, "many", 10);
	pt_mmap2(&t, 30, 0x7ff000, 0x800000, 0, PROT_READ | PROT_WRITE, "[stack]", 20);
	for (uint64_t i = 0; i < PROCTRACK_ANON_MAX + 3; i++)
		pt_mmap2(&t, 30, 0x1000000 + i * 0x2000, 0x1001000 + i * 0x2000, 0, PROT_READ | PROT_WRITE, "//anon", 100 + i);
	proctrack_emit(&t, SIZE_MAX, pt_count_maps, &c);
	if (c.maps != PROCTRACK_ANON_MAX + 1 || c.lowest != 0x1006000 || !c.stack)
		printf("# %zu maps, the lowest at %llx, the stack %s\n", c.maps, c.lowest, c.stack ? "kept" : "gone");
	tap(c.maps == PROCTRACK_ANON_MAX + 1 && c.lowest == 0x1006000 && c.stack,
	    "of anonymous memory without end, the newest mappings are restated, and the stack");
	proctrack_release(&t);
}

static void proctrack_case(void)
{
	struct proctrack t = { 0 };
	struct pt_text o = { .len = 0 };
	char first[sizeof(o.text)];

	/* pid 10 runs "phases" (exec at 100). The loader's mappings, made
	 * on another CPU, come first: libc whole at 150, its text over it
	 * at 160, read the other way round; then the exec and the
	 * executable's mapping. A mapping made before the exec, read last,
	 * is of the old program. */
	pt_mmap2(&t, 10, 0x7000, 0x8000, 0x1000, PROT_READ | PROT_EXEC, "/lib/libc.so.6", 160);
	pt_mmap2(&t, 10, 0x6000, 0x9000, 0, PROT_READ, "/lib/libc.so.6", 150);
	pt_exec(&t, 10, "phases", 100);
	pt_mmap2(&t, 10, 0x1000, 0x2000, 0, PROT_READ | PROT_EXEC, "/bin/phases", 110);
	pt_mmap2(&t, 10, 0x3000, 0x4000, 0, PROT_READ | PROT_EXEC, "/bin/old", 90);
	/* pid 11 forked from 10 at 300: its own mapping at 310 read first;
	 * the parent's at 290 read after the fork, and one at 320 (the
	 * parent's alone). pid 12 forked at 400 and exec'd "other" at 410,
	 * the exec read before the fork. pid 13 forked at 500 and exited
	 * at 510, the exit read first. */
	pt_mmap2(&t, 11, 0xa000, 0xb000, 0, PROT_READ | PROT_EXEC, "/lib/child.so", 310);
	pt_task(&t, PERF_RECORD_FORK, 11, 10, 300);
	pt_mmap2(&t, 10, 0xc000, 0xd000, 0, PROT_READ | PROT_EXEC, "/lib/late.so", 290);
	pt_mmap2(&t, 10, 0xe000, 0xf000, 0, PROT_READ | PROT_EXEC, "/lib/after.so", 320);
	pt_exec(&t, 12, "other", 410);
	pt_mmap2(&t, 12, 0x1000, 0x2000, 0, PROT_READ | PROT_EXEC, "/bin/other", 420);
	pt_task(&t, PERF_RECORD_FORK, 12, 10, 400);
	pt_task(&t, PERF_RECORD_EXIT, 13, 10, 510);
	pt_task(&t, PERF_RECORD_FORK, 13, 10, 500);
	pt_task(&t, PERF_RECORD_EXIT, 14, 10, 520);
	/* pid 20 loads libbig.so whole at 600, zero-fills its .bss over the
	 * tail at 610 and takes anonymous memory over nothing at 620; pid 21
	 * the same, the .bss read before the library. */
	pt_exec(&t, 20, "big", 590);
	pt_mmap2(&t, 20, 0x10000, 0x14000, 0, PROT_READ, "/lib/libbig.so", 600);
	pt_mmap2(&t, 20, 0x12000, 0x14000, 0, PROT_READ | PROT_WRITE, "//anon", 610);
	pt_mmap2(&t, 20, 0x100000, 0x101000, 0, PROT_READ | PROT_WRITE, "//anon", 620);
	pt_exec(&t, 21, "big", 590);
	pt_mmap2(&t, 21, 0x12000, 0x14000, 0, PROT_READ | PROT_WRITE, "//anon", 610);
	pt_mmap2(&t, 21, 0x10000, 0x14000, 0, PROT_READ, "/lib/libbig.so", 600);
	proctrack_emit(&t, SIZE_MAX, pt_keep, &o);

	pt_expect(o.text, 10,
		  "1000-2000 r-xp 0 /bin/phases; 6000-7000 r--p 0 /lib/libc.so.6; 7000-8000 r-xp 1000 /lib/libc.so.6; "
		  "8000-9000 r--p 2000 /lib/libc.so.6; c000-d000 r-xp 0 /lib/late.so; e000-f000 r-xp 0 /lib/after.so", 1,
		  "an exec read after the loader's mappings on another CPU keeps them; one made before it does not count; a library's text read before the library keeps its place");
	pt_expect(o.text, 11,
		  "1000-2000 r-xp 0 /bin/phases; 6000-7000 r--p 0 /lib/libc.so.6; 7000-8000 r-xp 1000 /lib/libc.so.6; "
		  "8000-9000 r--p 2000 /lib/libc.so.6; a000-b000 r-xp 0 /lib/child.so; c000-d000 r-xp 0 /lib/late.so", 1,
		  "a fork read after the child's own mapping keeps it, takes what the parent had then, and what the parent mapped before it, read late");
	pt_expect(o.text, 12, "1000-2000 r-xp 0 /bin/other", strstr(o.text, "pid 12\nppid 10\ncomm other\n") != NULL,
		  "a fork read after the child's exec leaves the exec'd program alone");
	pt_expect(o.text, 20,
		  "10000-12000 r--p 0 /lib/libbig.so; 12000-14000 rw-p 0 //anon; 100000-101000 rw-p 0 //anon", 1,
		  "anonymous memory is restated, over a library's tail as elsewhere");
	pt_expect(o.text, 21, "10000-12000 r--p 0 /lib/libbig.so; 12000-14000 rw-p 0 //anon", 1,
		  "a library read after the anonymous memory over its tail leaves it there");
	/* A process that exited is restated until two segments later. */
	snprintf(first, sizeof(first), "%s", o.text);
	proctrack_emit(&t, SIZE_MAX, pt_keep, &(struct pt_text){ .len = 0 });
	o.len = 0;
	o.text[0] = 0;
	proctrack_emit(&t, SIZE_MAX, pt_keep, &o);
	tap(strstr(o.text, "pid 12\n") && !strstr(o.text, "pid 13\n"), "an exit read before its fork still ends the process");
	tap(!strstr(first, "pid 14\n"), "a process known by its exit alone is not restated");
	proctrack_release(&t);
	proctrack_anon_case();
	proctrack_budget_case();
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "procs")) {
		proctrack_case();
		printf("1..%d\n", tap_n);
		return tap_failed != 0;
	}
	if (argc == 2 && !strcmp(argv[1], "pack")) {
		pack_case();
		printf("1..%d\n", tap_n);
		return tap_failed != 0;
	}
	if (argc == 2 && !strcmp(argv[1], "reach")) {
		reach_case();
		printf("1..%d\n", tap_n);
		return tap_failed != 0;
	}
	if (argc != 2 || strcmp(argv[1], "scrub")) {
		fprintf(stderr, "usage: test-record scrub|pack|reach|procs\n");
		return 2;
	}
	for (int wide = 1; wide >= 0; wide--) {
		scrub_case(SCRUB_UNWIND, KNOWN, wide);
		scrub_case(SCRUB_UNWIND, LEARNED, wide);
		scrub_case(SCRUB_UNWIND, UNKNOWN, wide);
		scrub_case(SCRUB_POINTERS, UNKNOWN, wide);
	}
	scrub_data_case();
	scrub_keep_case();
	scrub_paths_case();
	scrub_regs_case();
	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}
