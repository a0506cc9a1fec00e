/*
 * record/sampler/pack.h: how the wrapper packs a stack dump by the
 * recorder's code filter (stream.h, STREAM_PACKED): the words that point
 * into the dump, or whose 2 MiB granule the filter marks as holding code,
 * marked in a bitmap and copied in order. Three implementations that must
 * give the same bytes: one word at a time, four with AVX2 and eight with
 * AVX-512, the fastest the CPU has chosen at the library's start. Header
 * only, static: the preloaded library and the recorder's unit tests
 * (tests/helper/test-record.c, which holds the three to agreeing) compile
 * the same code.
 */
#ifndef MEMSIGHT_SAMPLER_PACK_H
#define MEMSIGHT_SAMPLER_PACK_H

#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PACK_VECTORS 1
#endif

#include "../procs/execmap.h"

/* No user address lies below the first page or at 2^56 and above (the
 * recorder knows whether this machine's limit is 2^47). */
#define USER_BOTTOM 4096ull
#define USER_SPAN ((1ull << 56) - USER_BOTTOM)

/* stack words as the compiler may read them, whatever wrote them */
typedef uint64_t __attribute__((may_alias)) stack_word;

typedef size_t (*dump_pack_fn)(const stack_word *w, size_t words, uint64_t sp, uint64_t len, const uint64_t *code,
			       uint64_t *bits, uint64_t *out);

/* The words of the dump w[0..words) that point into it (up to one word
 * past its end, as the recorder's rule has it) or that the code filter
 * lets through: their bits into bits, the words into out. Returns how
 * many. The test is without a branch on the data: stacks are mostly
 * data. */
static inline uint64_t word_passes(uint64_t v, uint64_t sp, uint64_t len, const uint64_t *code)
{
	unsigned bit = execmap_filter_bit(v);

	return ((v - sp <= len) | ((v - USER_BOTTOM < USER_SPAN) & (code[bit / 64] >> (bit % 64)))) & 1;
}

static inline size_t dump_pack(const stack_word *w, size_t words, uint64_t sp, uint64_t len, const uint64_t *code,
			uint64_t *bits, uint64_t *out)
{
	size_t n = 0;

	for (size_t b = 0; 64 * b < words; b++) {
		size_t lim = words - 64 * b < 64 ? words - 64 * b : 64;
		uint64_t m = 0;

		for (size_t j = 0; j < lim; j++) {
			uint64_t v = w[64 * b + j], keep = word_passes(v, sp, len, code);

			out[n] = v;
			n += keep;
			m |= keep << j;
		}
		bits[b] = m;
	}
	return n;
}

#ifdef PACK_VECTORS
/* The same, four words at a time, on CPUs with AVX2 (chosen at start):
 * the filter's hash in 32-bit products, unsigned compares by flipping the
 * sign bits. The filter's words are gathered only for the words that
 * could be code addresses, and not at all for four that cannot (zeros,
 * small numbers, frame links): node's deep stacks ran 3-5% faster. */
__attribute__((target("avx2"))) static inline size_t dump_pack_avx2(const stack_word *w, size_t words, uint64_t sp,
							    uint64_t len, const uint64_t *code, uint64_t *bits,
							    uint64_t *out)
{
	const __m256i sign = _mm256_set1_epi64x((long long)0x8000000000000000ull);
	const __m256i vsp = _mm256_set1_epi64x((long long)sp);
	const __m256i vlen = _mm256_set1_epi64x((long long)((len + 1) ^ 0x8000000000000000ull));
	const __m256i vbottom = _mm256_set1_epi64x((long long)USER_BOTTOM);
	const __m256i vspan = _mm256_set1_epi64x((long long)(USER_SPAN ^ 0x8000000000000000ull));
	const __m256i mul = _mm256_set1_epi64x(EXECMAP_FILTER_MUL);
	const __m256i low32 = _mm256_set1_epi64x(0xffffffffll);
	const __m256i m63 = _mm256_set1_epi64x(63), one = _mm256_set1_epi64x(1);
	size_t n = 0;

	for (size_t b = 0; 64 * b < words; b++) {
		const stack_word *bw = w + 64 * b;
		size_t lim = words - 64 * b < 64 ? words - 64 * b : 64, j;
		uint64_t m = 0;

		for (j = 0; j + 4 <= lim; j += 4) {
			__m256i v = _mm256_loadu_si256((const __m256i *)(bw + j));
			__m256i in = _mm256_cmpgt_epi64(vlen, _mm256_xor_si256(_mm256_sub_epi64(v, vsp), sign));
			__m256i user = _mm256_cmpgt_epi64(vspan, _mm256_xor_si256(_mm256_sub_epi64(v, vbottom), sign));
			__m256i cand = _mm256_andnot_si256(in, user), keep = in;

			if (!_mm256_testz_si256(cand, cand)) {
				__m256i bit = _mm256_srli_epi64(
					_mm256_and_si256(_mm256_mul_epu32(_mm256_srli_epi64(v, EXECMAP_GRANULE_SHIFT), mul),
							 low32),
					EXECMAP_FILTER_SHIFT);
				__m256i word = _mm256_mask_i64gather_epi64(_mm256_setzero_si256(), (const long long *)code,
									   _mm256_srli_epi64(bit, 6), cand, 8);
				__m256i set = _mm256_cmpeq_epi64(
					_mm256_and_si256(_mm256_srlv_epi64(word, _mm256_and_si256(bit, m63)), one), one);

				keep = _mm256_or_si256(in, _mm256_and_si256(cand, set));
			}

			m |= (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(keep)) << j;
		}
		for (; j < lim; j++)
			m |= word_passes(bw[j], sp, len, code) << j;
		for (uint64_t k = m; k; k &= k - 1)
			out[n++] = bw[__builtin_ctzll(k)];
		bits[b] = m;
	}
	return n;
}

/* The same, eight words at a time, on CPUs with AVX-512: unsigned
 * compares into masks, and the kept words compressed in a register and
 * stored whole (a store of eight words at out + n stays within the dump's
 * room, n being at most the words read so far); not the compressing
 * store, microcoded on some CPUs. */
__attribute__((target("avx512f"))) static inline size_t dump_pack_avx512(const stack_word *w, size_t words, uint64_t sp,
								 uint64_t len, const uint64_t *code, uint64_t *bits,
								 uint64_t *out)
{
	const __m512i vsp = _mm512_set1_epi64((long long)sp), vlen = _mm512_set1_epi64((long long)len);
	const __m512i vbottom = _mm512_set1_epi64((long long)USER_BOTTOM);
	const __m512i vspan = _mm512_set1_epi64((long long)USER_SPAN);
	const __m512i mul = _mm512_set1_epi64(EXECMAP_FILTER_MUL);
	const __m512i low32 = _mm512_set1_epi64(0xffffffffll);
	const __m512i m63 = _mm512_set1_epi64(63), one = _mm512_set1_epi64(1);
	size_t n = 0;

	for (size_t b = 0; 64 * b < words; b++) {
		const stack_word *bw = w + 64 * b;
		size_t lim = words - 64 * b < 64 ? words - 64 * b : 64, j;
		uint64_t m = 0;

		for (j = 0; j + 8 <= lim; j += 8) {
			__m512i v = _mm512_loadu_si512((const void *)(bw + j));
			__mmask8 in = _mm512_cmple_epu64_mask(_mm512_sub_epi64(v, vsp), vlen);
			__mmask8 cand = _mm512_cmplt_epu64_mask(_mm512_sub_epi64(v, vbottom), vspan) & (__mmask8)~in;
			__mmask8 keep = in;

			if (cand) {
				__m512i bit = _mm512_srli_epi64(
					_mm512_and_si512(_mm512_mul_epu32(_mm512_srli_epi64(v, EXECMAP_GRANULE_SHIFT), mul),
							 low32),
					EXECMAP_FILTER_SHIFT);
				__m512i word = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), cand,
									   _mm512_srli_epi64(bit, 6), code, 8);

				keep |= _mm512_mask_test_epi64_mask(
					cand, _mm512_srlv_epi64(word, _mm512_and_si512(bit, m63)), one);
			}
			_mm512_storeu_si512((void *)(out + n), _mm512_maskz_compress_epi64(keep, v));
			n += (size_t)__builtin_popcount(keep);
			m |= (uint64_t)keep << j;
		}
		for (; j < lim; j++) {
			uint64_t v = bw[j], keep = word_passes(v, sp, len, code);

			out[n] = v;
			n += keep;
			m |= keep << j;
		}
		bits[b] = m;
	}
	return n;
}
#endif

/* The fastest this CPU runs. */
static inline dump_pack_fn dump_pack_choose(void)
{
#ifdef PACK_VECTORS
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		return dump_pack_avx512;
	if (__builtin_cpu_supports("avx2"))
		return dump_pack_avx2;
#endif
	return dump_pack;
}

#endif
