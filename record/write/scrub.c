/*
 * record/write/scrub.c: zeroing what unwinding never reads in stack dumps; see
 * scrub.h.
 */
#include "scrub.h"

#include <asm/perf_regs.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../formats/stackdump.h"

#include "../probes/events.h"
#include "../procs/execmap.h"

/* The lowest page is never mapped (mmap_min_addr is at least 4096). */
#define SCRUB_USER_BOTTOM 4096ull
/* The packed field's header: size, dyn_size, number of words. */
#define PACKED_HEAD 24

int scrub_mode_parse(const char *s)
{
	if (!strcmp(s, "unwind"))
		return SCRUB_UNWIND;
	if (!strcmp(s, "pointers"))
		return SCRUB_POINTERS;
	if (!strcmp(s, "raw"))
		return SCRUB_RAW;
	return -1;
}

const char *scrub_mode_name(enum scrub_mode m)
{
	return m == SCRUB_RAW ? "raw" : m == SCRUB_POINTERS ? "pointers" : "unwind";
}

int scrub_init(struct scrub *s, enum scrub_mode mode, struct execmap *map)
{
	FILE *f;
	char line[4096];

	memset(s, 0, sizeof(*s));
	s->mode = mode;
	s->map = map;
	s->user_top = 1ull << 47;
#if defined(__x86_64__) && defined(__GNUC__)
	s->avx2 = __builtin_cpu_supports("avx2");
#endif
	/* A record is at most 64 KiB (its size is a u16), and so is a dump. */
	s->pack = malloc(1u << 16);
	if (!s->pack)
		return -1;
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return 0;
	/* The kernel clears la57 from the flags when it does not run with
	 * five-level page tables, so the flag means user addresses may reach
	 * 56 bits. */
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5)) {
			if (strstr(line, " la57"))
				s->user_top = 1ull << 56;
			break;
		}
	fclose(f);
	return 0;
}

void scrub_free(struct scrub *s)
{
	free(s->pack);
	s->pack = NULL;
	free(s->asked);
	s->asked = NULL;
	s->asked_alloc = s->nr_asked = 0;
}

/* Whether pid is asked about for the first time (and now remembered). */
static int asked_first(struct scrub *s, int pid)
{
	size_t i;

	if (pid <= 0)
		return 0;
	if (2 * (s->nr_asked + 1) > s->asked_alloc) {
		size_t n = s->asked_alloc ? 2 * s->asked_alloc : 64;
		int *v = calloc(n, sizeof(*v));

		if (!v)
			return 0;
		for (size_t k = 0; k < s->asked_alloc; k++)
			if (s->asked[k]) {
				for (i = (size_t)s->asked[k] * 2654435761u & (n - 1); v[i]; i = (i + 1) & (n - 1))
					;
				v[i] = s->asked[k];
			}
		free(s->asked);
		s->asked = v;
		s->asked_alloc = n;
	}
	for (i = (size_t)pid * 2654435761u & (s->asked_alloc - 1); s->asked[i]; i = (i + 1) & (s->asked_alloc - 1))
		if (s->asked[i] == pid)
			return 0;
	s->asked[i] = pid;
	s->nr_asked++;
	return 1;
}

/* Zero the 8-byte words of p[0..n) that could not be user addresses, and
 * a last partial word, which no unwinder reads. */
static void scrub_words(const struct scrub *s, unsigned char *p, size_t n)
{
	const uint64_t span = s->user_top - SCRUB_USER_BOTTOM;
	size_t k;

	for (k = 0; k + 8 <= n; k += 8) {
		uint64_t v;

		memcpy(&v, p + k, 8);
		v = v - SCRUB_USER_BOTTOM < span ? v : 0;
		memcpy(p + k, &v, 8);
	}
	memset(p + k, 0, n - k);
}

/* The pointers rule for a 32-bit process: its 4-byte words below the
 * lowest page, which no address is, go. */
static void scrub_words32(unsigned char *p, size_t n)
{
	size_t k;

	for (k = 0; k + 4 <= n; k += 4) {
		uint32_t v;

		memcpy(&v, p + k, 4);
		if (v < SCRUB_USER_BOTTOM)
			memset(p + k, 0, 4);
	}
	memset(p + k, 0, n - k);
}

/* The object an address of p's code lies in, marked touched; -1 when it
 * lies in none. *last remembers the object marked last, the same one
 * nearly every time. */
static inline int64_t code_of(struct scrub *s, struct em_gen *p, uint64_t v, int64_t *last)
{
	int64_t o = execmap_find(p, v);

	if (o > 0 && o != *last) {
		execmap_touch(s->map, (uint32_t)o);
		*last = o;
	}
	return o;
}

/* What the unwind rule keeps: a word that points into the dump (a saved
 * frame pointer, a frame's address; up to one word past its end, where a
 * frame whose CFA is read at the frame pointer less 8 may point) or into
 * the process's code (a return address). */
static inline int keep_unwind(struct scrub *s, struct em_gen *p, uint64_t v, uint64_t sp, uint64_t dyn,
			      int64_t *last)
{
	if (v - sp <= dyn)
		return 1;
	if (v - SCRUB_USER_BOTTOM >= s->user_top - SCRUB_USER_BOTTOM || !execmap_maybe(p, v))
		return 0;
	return code_of(s, p, v, last) >= 0;
}

/* The unwind rule over the registers but ip and sp; the ip's object is
 * touched. */
static void unwind_regs(struct scrub *s, struct em_gen *p, uint64_t mask, unsigned char *regs, uint64_t sp,
			uint64_t dyn, int64_t *last, int abi32)
{
	size_t k = 0;

	/* By the mask's set bits alone: a loop over all 64 cost more than
	 * the registers' tests. */
	for (uint64_t m = mask; m; m &= m - 1, k++) {
		int r = __builtin_ctzll(m);
		uint64_t v;

		memcpy(&v, regs + 8 * k, 8);
		if (abi32)
			v &= 0xffffffffull;
		if (r == PERF_REG_X86_IP)
			code_of(s, p, v, last);
		else if (r != PERF_REG_X86_SP && v && !keep_unwind(s, p, v, sp, dyn, last))
			memset(regs + 8 * k, 0, 8);
	}
}

/* The unwind rule over a 32-bit process's dump, whose addresses are 4
 * bytes, in place. */
static void unwind_dump32(struct scrub *s, struct em_gen *p, unsigned char *d, uint64_t dyn, uint64_t sp,
			  int64_t *last)
{
	size_t k;

	for (k = 0; k + 4 <= dyn; k += 4) {
		uint32_t v;

		memcpy(&v, d + k, 4);
		if (v && !keep_unwind(s, p, v, sp, dyn, last))
			memset(d + k, 0, 4);
	}
	memset(d + k, 0, dyn - k);
}

/* The words of a block of up to 64 that point into the dump (returned)
 * and those that could be addresses elsewhere, in [lo, lo + span)
 * (*cand), as bit masks, without a branch on the data. */
static uint64_t block_masks(const unsigned char *restrict w, size_t lim, uint64_t sp, uint64_t dyn, uint64_t lo,
			    uint64_t span, uint64_t *cand)
{
	uint64_t keep = 0, c = 0;

	for (size_t j = 0; j < lim; j++) {
		uint64_t v, k;

		memcpy(&v, w + 8 * j, 8);
		k = v - sp <= dyn;
		keep |= k << j;
		c |= (uint64_t)((v - lo < span) & !k) << j;
	}
	*cand = c;
	return keep;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The same, four words at a time, for CPUs with AVX2 (chosen at run time):
 * unsigned compares by flipping the sign bits. */
__attribute__((target("avx2"))) static uint64_t block_masks_avx2(const unsigned char *restrict w, size_t lim,
								 uint64_t sp, uint64_t dyn, uint64_t lo,
								 uint64_t span, uint64_t *cand)
{
	const __m256i sign = _mm256_set1_epi64x((long long)0x8000000000000000ull);
	const __m256i vsp = _mm256_set1_epi64x((long long)sp);
	const __m256i vdyn = _mm256_set1_epi64x((long long)((dyn + 1) ^ 0x8000000000000000ull));
	const __m256i vlo = _mm256_set1_epi64x((long long)lo);
	const __m256i vspan = _mm256_set1_epi64x((long long)(span ^ 0x8000000000000000ull));
	uint64_t keep = 0, c = 0, kt, ct;
	size_t j;

	for (j = 0; j + 4 <= lim; j += 4) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(w + 8 * j));
		__m256i k = _mm256_cmpgt_epi64(vdyn, _mm256_xor_si256(_mm256_sub_epi64(v, vsp), sign));
		__m256i a = _mm256_cmpgt_epi64(vspan, _mm256_xor_si256(_mm256_sub_epi64(v, vlo), sign));

		keep |= (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(k)) << j;
		c |= (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_andnot_si256(k, a))) << j;
	}
	if (j < lim) {
		kt = block_masks(w + 8 * j, lim - j, sp, dyn, lo, span, &ct);
		keep |= kt << j;
		c |= ct << j;
	}
	*cand = c;
	return keep;
}
#endif

/*
 * One block of up to 64 words of a dump under the unwind rule: the kept
 * words appended at out (*n counts them), their bits returned. The words
 * are sorted into masks first, without a branch on the data; then only
 * the words that could be addresses outside the dump meet the process's
 * filter, only those it lets through are looked up among its mappings,
 * and only the kept are copied: each loop branches on its mask, mispredicted
 * once as it ends, instead of once every few words.
 */
static uint64_t block_unwind(struct scrub *s, struct em_gen *p, const unsigned char *restrict w, size_t lim,
			     uint64_t sp, uint64_t dyn, unsigned char *restrict out, size_t *n, int64_t *last)
{
	/* Code lies between the lowest mapping's start and the highest's
	 * end: words outside (most numbers) are no return address. */
	const uint64_t lo = p->nr ? p->r[0].start : 0, span = p->nr ? p->r[p->nr - 1].end - lo : 0;
	const uint64_t *restrict filter = p->filter;
	uint64_t keep, cand, maybe = 0, v;
	size_t k = *n;

#if defined(__x86_64__) && defined(__GNUC__)
	if (s->avx2)
		keep = block_masks_avx2(w, lim, sp, dyn, lo, span, &cand);
	else
#endif
		keep = block_masks(w, lim, sp, dyn, lo, span, &cand);
	if (p->all)
		maybe = cand;
	else
		for (uint64_t m = cand; m; m &= m - 1) {
			unsigned j = (unsigned)__builtin_ctzll(m), bit;

			memcpy(&v, w + 8 * j, 8);
			bit = execmap_filter_bit(v);
			maybe |= (filter[bit / 64] >> (bit % 64) & 1) << j;
		}
	for (uint64_t m = maybe; m; m &= m - 1) {
		unsigned j = (unsigned)__builtin_ctzll(m);

		memcpy(&v, w + 8 * j, 8);
		if (code_of(s, p, v, last) >= 0)
			keep |= 1ull << j;
	}
	for (uint64_t m = keep; m; m &= m - 1)
		memcpy(out + 8 * k++, w + 8 * __builtin_ctzll(m), 8);
	*n = k;
	return keep;
}

/* The same under the pointers rule. */
static uint64_t block_pointers(const struct scrub *s, const unsigned char *restrict w, size_t lim,
			       unsigned char *restrict out, size_t *n)
{
	const uint64_t span = s->user_top - SCRUB_USER_BOTTOM;
	uint64_t bits = 0;
	size_t k = *n;

	for (size_t j = 0; j < lim; j++) {
		uint64_t v, keep;

		memcpy(&v, w + 8 * j, 8);
		keep = v - SCRUB_USER_BOTTOM < span;
		memcpy(out + 8 * k, &v, 8);
		k += keep;
		bits |= keep << j;
	}
	*n = k;
	return bits;
}

/*
 * Pack the words of a 64-bit dump that its rule keeps into s->pack (the
 * packed field: size, dyn_size, nr_words, bitmap, words; FORMAT.md).
 * Returns the field's length. Each word is read once: it is the drain
 * loop's work for every dwarf sample.
 */
static size_t pack_words(struct scrub *s, struct em_gen *p, const unsigned char *d, uint64_t dump,
			 uint64_t dyn, uint64_t sp, int64_t *last)
{
	size_t words = dyn / 8, blocks = (words + 63) / 64, n = 0;
	unsigned char *bitmap = s->pack + PACKED_HEAD;
	unsigned char *out = bitmap + 8 * blocks;

	for (size_t b = 0; b < blocks; b++) {
		size_t lim = words - 64 * b < 64 ? words - 64 * b : 64;
		uint64_t bits = p ? block_unwind(s, p, d + 8 * 64 * b, lim, sp, dyn, out, &n, last)
				  : block_pointers(s, d + 8 * 64 * b, lim, out, &n);

		memcpy(bitmap + 8 * b, &bits, 8);
	}
	s->words_seen += words;
	s->words_kept += n;
	memcpy(s->pack, &dump, 8);
	memcpy(s->pack + 8, &dyn, 8);
	memcpy(s->pack + 16, &n, 8);
	return PACKED_HEAD + 8 * (blocks + n);
}

/* The packed field in s->pack, as the kernel's dense field at dst: the
 * words it kept, zeros elsewhere. */
static void unpack_dense(const struct scrub *s, unsigned char *dst, uint64_t dump, uint64_t dyn)
{
	size_t words = dyn / 8, blocks = (words + 63) / 64, n = 0;
	const unsigned char *bitmap = s->pack + PACKED_HEAD, *in = bitmap + 8 * blocks;

	memcpy(dst, &dump, 8);
	memset(dst + 8, 0, dump);
	for (size_t i = 0; i < words; i++) {
		uint64_t bits;

		memcpy(&bits, bitmap + 8 * (i / 64), 8);
		if (bits >> (i % 64) & 1)
			memcpy(dst + 8 + 8 * i, in + 8 * n++, 8);
	}
	memcpy(dst + 8 + dump, &dyn, 8);
}

/* Where a sample's registers and dump field lie. */
struct sample_at {
	size_t regs, nregs, field;
	uint64_t abi, sp;
};

/* Find them in a sample of this sample_type and sample_regs_user, of size
 * bytes; -1 for a layout this does not scrub. The registers alone where
 * the sample has no stack dump. */
static int sample_parse(uint64_t st, uint64_t regs_mask, const unsigned char *src, size_t size, struct sample_at *a,
			int regs_only)
{
	size_t off = events_fixed_end(st);
	uint64_t v;

	memset(a, 0, sizeof(*a));
	/* memsight never asks for READ or BRANCH_STACK, whose layouts depend
	 * on more than the sample type. */
	if (st & (PERF_SAMPLE_READ | PERF_SAMPLE_BRANCH_STACK))
		return -1;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > size)
			return -1;
		memcpy(&v, src + off, 8);
		if (v > (size - off) / 8)
			return -1;
		off += 8 + 8 * v;
	}
	if (st & PERF_SAMPLE_RAW) {
		uint32_t raw;

		if (off + 4 > size)
			return -1;
		memcpy(&raw, src + off, 4);
		off += 4 + (size_t)raw;
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		if (off + 8 > size)
			return -1;
		memcpy(&a->abi, src + off, 8);
		off += 8;
		if (a->abi != PERF_SAMPLE_REGS_ABI_NONE) {
			a->nregs = (size_t)__builtin_popcountll(regs_mask);
			if (off + 8 * a->nregs > size)
				return -1;
			a->regs = off;
			if (regs_mask & (1ull << PERF_REG_X86_SP))
				memcpy(&a->sp,
				       src + off + 8 * __builtin_popcountll(regs_mask & ((1ull << PERF_REG_X86_SP) - 1)), 8);
			off += 8 * a->nregs;
		}
	}
	if (!(st & PERF_SAMPLE_STACK_USER))
		return regs_only ? 0 : -1;
	if (off + 8 > size)
		return -1;
	a->field = off;
	return 0;
}

/* The code of the sample's process at its time, for the unwind rule; NULL
 * where that rule does not apply or the process is not known. */
static struct em_gen *sample_proc(struct scrub *s, const unsigned char *src, size_t size, int data)
{
	struct em_gen *p;
	uint64_t time;
	uint32_t pid;

	if (s->mode != SCRUB_UNWIND || !s->map || size < 40 || data)
		return NULL;
	/* IDENTIFIER, IP, TID (pid, tid), TIME: fixed for every sample. */
	memcpy(&pid, src + 24, 4);
	memcpy(&time, src + 32, 8);
	p = execmap_at(s->map, (pid_t)pid, time);
	/* Not seen starting (it began as recording did): what it maps now is
	 * read once. */
	if (!p && s->learn && asked_first(s, (int)pid) && !s->learn(s->learn_arg, (int)pid))
		p = execmap_at(s->map, (pid_t)pid, time);
	if (!p)
		s->dumps_unknown++;
	return p;
}

/* The user registers of which in the sample at to set from the same
 * places in from (a sample of size bytes, the one to was copied from),
 * or zeroed where from is NULL (to is then the sample, of size bytes). */
static void regs_set(uint64_t st, uint64_t regs_mask, uint64_t which, const unsigned char *from, unsigned char *to,
		     size_t size)
{
	struct sample_at a;
	size_t k = 0;

	if (sample_parse(st, regs_mask, from ? from : to, size, &a, 1) || a.abi == PERF_SAMPLE_REGS_ABI_NONE)
		return;
	for (int r = 0; r < 64; r++) {
		if (!(regs_mask >> r & 1))
			continue;
		if ((which >> r & 1) && from)
			memcpy(to + a.regs + 8 * k, from + a.regs + 8 * k, 8);
		else if (which >> r & 1)
			memset(to + a.regs + 8 * k, 0, 8);
		k++;
	}
}

void scrub_keep_regs(uint64_t st, uint64_t regs_mask, uint64_t keep, const unsigned char *src, size_t size,
		     unsigned char *dst)
{
	regs_set(st, regs_mask, keep, src, dst, size);
}

void scrub_clear_regs(uint64_t st, uint64_t regs_mask, uint64_t clear, unsigned char *rec, size_t size)
{
	regs_set(st, regs_mask, clear, NULL, rec, size);
}

size_t scrub_repack(struct scrub *s, uint64_t st, uint64_t regs_mask, const unsigned char *src, size_t size,
		    unsigned char *dst)
{
	struct sample_at a;
	struct stackdump d;
	struct em_gen *p;
	struct perf_event_header h;
	const uint64_t span = s->user_top - SCRUB_USER_BOTTOM;
	size_t taken, blocks, k = 0, n = 0, len;
	unsigned char *bitmap, *out;
	uint64_t dump;
	int64_t last = -1;

	if (sample_parse(st, regs_mask, src, size, &a, 0) || a.abi != PERF_SAMPLE_REGS_ABI_64 || s->mode == SCRUB_RAW ||
	    !(taken = stackdump_parse_packed(src + a.field, size - a.field, &d)))
		goto verbatim;
	memcpy(&dump, src + a.field, 8);
	memcpy(dst, src, a.field);
	p = sample_proc(s, src, size, 0);
	if (p)
		unwind_regs(s, p, regs_mask, dst + a.regs, a.sp, d.size, &last, 0);
	else
		scrub_words(s, dst + a.regs, 8 * a.nregs);
	blocks = (d.size / 8 + 63) / 64;
	bitmap = dst + a.field + PACKED_HEAD;
	out = bitmap + 8 * blocks;
	for (size_t b = 0; b < blocks; b++) {
		uint64_t bits, kept = 0, v;

		memcpy(&bits, d.bits + 8 * b, 8);
		for (uint64_t m = bits; m && k < d.nr_words; m &= m - 1, k++) {
			memcpy(&v, d.bytes + 8 * k, 8);
			if (p ? keep_unwind(s, p, v, a.sp, d.size, &last) : v - SCRUB_USER_BOTTOM < span) {
				memcpy(out + 8 * n++, &v, 8);
				kept |= m & -m;
			}
		}
		memcpy(bitmap + 8 * b, &kept, 8);
	}
	s->words_seen += d.size / 8;
	s->words_kept += n;
	memcpy(dst + a.field, &dump, 8);
	memcpy(dst + a.field + 8, &d.size, 8);
	memcpy(dst + a.field + 16, &n, 8);
	len = a.field + PACKED_HEAD + 8 * (blocks + n);
	memcpy(dst + len, src + a.field + taken, size - a.field - taken);
	len += size - a.field - taken;
	memcpy(&h, dst, sizeof(h));
	h.size = (uint16_t)len;
	memcpy(dst, &h, sizeof(h));
	return len;
verbatim:
	memcpy(dst, src, size);
	return size;
}

size_t scrub_copy(struct scrub *s, uint64_t st, uint64_t regs_mask, int data, const unsigned char *src,
		  size_t size, unsigned char *dst)
{
	size_t field, tail, len, nregs;
	uint64_t abi, sp, dump, dyn;
	unsigned char *regs;
	struct em_gen *p = NULL;
	struct perf_event_header h;
	struct sample_at at;
	int64_t last = -1;

	if (sample_parse(st, regs_mask, src, size, &at, 0))
		goto verbatim;
	field = at.field;
	abi = at.abi;
	sp = at.sp;
	nregs = at.nregs;
	regs = dst + at.regs;
	memcpy(&dump, src + field, 8);
	if (!dump || dump > size - field - 8 || size - field - 8 - dump < 8)
		goto verbatim;
	memcpy(&dyn, src + field + 8 + dump, 8);
	if (dyn > dump)
		goto verbatim;
	tail = field + 16 + dump;
	/* Everything before the dump as it is; the registers are scrubbed
	 * in the copy. */
	memcpy(dst, src, field);
	if (abi == PERF_SAMPLE_REGS_ABI_NONE || s->mode == SCRUB_RAW) {
		/* Past dyn_size the kernel skipped, not copied: what is there
		 * is an older record's bytes from the ring. */
		memcpy(dst + field, src + field, 8 + dyn);
		memset(dst + field + 8 + dyn, 0, dump - dyn);
		memcpy(dst + field + 8 + dump, src + field + 8 + dump, size - field - 8 - dump);
		return size;
	}
	p = sample_proc(s, src, size, data);
	if (abi != PERF_SAMPLE_REGS_ABI_64) {
		/* A 32-bit process: scrubbed in place by 4-byte words, not
		 * packed. */
		memcpy(dst + field, src + field, size - field);
		memset(dst + field + 8 + dyn, 0, dump - dyn);
		if (p) {
			unwind_regs(s, p, regs_mask, regs, sp & 0xffffffffull, dyn, &last, 1);
			unwind_dump32(s, p, dst + field + 8, dyn, sp & 0xffffffffull, &last);
		} else {
			scrub_words32(regs, 8 * nregs);
			scrub_words32(dst + field + 8, dyn);
		}
		return size;
	}
	if (p)
		unwind_regs(s, p, regs_mask, regs, sp, dyn, &last, 0);
	else
		scrub_words(s, regs, 8 * nregs);
	len = pack_words(s, p, src + field + 8, dump, dyn, sp, &last);
	if (len >= 16 + dump) {
		/* Kept so much that packing would not save: the kernel's
		 * layout, with what the rule dropped zeroed. */
		unpack_dense(s, dst + field, dump, dyn);
		memcpy(dst + tail, src + tail, size - tail);
		return size;
	}
	memcpy(dst + field, s->pack, len);
	memcpy(dst + field + len, src + tail, size - tail);
	memcpy(&h, dst, sizeof(h));
	h.type = STACKDUMP_PACKED_SAMPLE;
	h.size = (uint16_t)(field + len + size - tail);
	memcpy(dst, &h, sizeof(h));
	return h.size;
verbatim:
	memcpy(dst, src, size);
	return size;
}
