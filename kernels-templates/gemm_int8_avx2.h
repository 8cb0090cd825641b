/* gemm_int8_avx2.h - the 256-bit entries of the 8-bit GEMM template
 * (gemm_int8_vnni.h includes it once, at its end): kiln_mmi_AB_avxvnni and
 * kiln_mmi_AB_avx2 (and their _pex forms), with the generic entries'
 * arguments and results bit for bit, for hosts without AVX512-VNNI (AVX2
 * hosts such as AMD Zen 3; AVX-VNNI ones such as Alder Lake).
 *
 * Both run gemm_int8_driver.h (the AVX512-VNNI entries' blocking, packing,
 * prepacked layout and corrections) with a micro-kernel of 256-bit vectors
 * that computes the same R = sum a' b' (a' u8, b' s8) of a 64-column panel:
 *
 * avxvnni: vpdpbusd (VEX) adds four u8 x s8 products into each int32 lane
 *   exactly; the panel in four slices of 16 columns (two vectors), MMI_MR = 6
 *   rows at a time (12 accumulators; fewer rows take more slices per pass,
 *   MMI_SLICES), a row's 4-byte group broadcast.
 * avx2: vpmaddubsw would saturate (two products of 255 x -128 exceed int16),
 *   so both sides are widened to int16 and multiplied with vpmaddwd, whose
 *   pair sums (at most 2 x 255 x 128) are exact in int32. A vector holds 16
 *   int16: a group of 4 k for 4 columns (vpmovsxbw of 16 panel bytes); the
 *   row's group of a' (zero-extended to int16 once per call into aw) is
 *   broadcast as 64 bits. vpmaddwd leaves two partial sums per column (k0 + k1,
 *   k2 + k3), kept apart in the accumulators and added pairwise (vphaddd and
 *   a lane permute) when the slice is stored. The panel goes in eight slices
 *   of 8 columns (two vectors), 6 rows at a time (12 accumulators), fewer
 *   rows with more slices per pass as above; a single row (a decode step)
 *   takes the whole panel in one pass (micro_avx2_row).
 * With B prepacked and few rows, both prefetch the panel's stream into L2
 * (gemm_int8_vnni.h's prefetch_group). */

#define AVX2_INLINE static inline __attribute__((target("avx2"), always_inline))
#define AVXVNNI_INLINE static inline __attribute__((target("avx2,avxvnni"), always_inline))

/* one group of 4 k of a 16-column slice for MR rows: acc += a'[r] . bg;
 * a partial last group (tail: k past kc) reads its bytes one by one */
AVXVNNI_INLINE void group_avxvnni(__m256i acc[][2], const uint8_t *const *rows, int64_t k,
                                  int64_t kc, const uint8_t *bg, int sa, int tail,
                                  const int MR) {
  __m256i b0 = _mm256_loadu_si256((const void *)bg);
  __m256i b1 = _mm256_loadu_si256((const void *)(bg + 32));
  for (int r = 0; r < MR; r++) {
    uint32_t a = tail ? a_group(rows[r], k, kc, sa) : sa ? ld_s(rows[r], k) : ld_u(rows[r], k);
    __m256i av = _mm256_set1_epi32((int)a);
    acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], av, b0);
    acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], av, b1);
  }
}

/* Slices of the panel one pass over its groups computes, as many as 12
 * accumulators allow (two per row and slice): one for 4 to 6 rows, two for
 * 2 or 3, four for a single row (a decode step), so a pass over few rows
 * reads a group's bytes of B contiguously (the whole group row for avxvnni
 * with one row, half of it for avx2) rather than one slice a group row
 * apart. */
#define MMI_SLICES(MR) ((MR) == 1 ? 4 : (MR) <= 3 ? 2 : 1)

/* the AVX-VNNI micro-kernel (gemm_int8_driver.h's MMI_MICRO contract) */
AVXVNNI_INLINE void micro_avxvnni(const uint8_t *A, int64_t K, int64_t i, int64_t k0,
                                  int64_t kc, const uint8_t *bp, uint32_t *tile, int64_t ldt,
                                  int first, int sa, int pf, const int MR) {
  const int QS = MMI_SLICES(MR);
  const uint8_t *rows[MMI_MR];
  for (int r = 0; r < MR; r++) rows[r] = A + (i + r) * K + k0;
  int64_t full = kc / 4, groups = (kc + 3) / 4;
  for (int q0 = 0; q0 < MMI_NR / 16; q0 += QS) {
    __m256i acc[4][MMI_MR][2];
    for (int q = 0; q < QS; q++)
      for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++) {
          const uint32_t *t = tile + r * ldt + 16 * (q0 + q) + 8 * h;
          acc[q][r][h] = first ? _mm256_setzero_si256() : _mm256_loadu_si256((const void *)t);
        }
    for (int64_t g = 0; g < full; g++) {
      if (pf && q0 == 0) prefetch_group(bp + g * MMI_NR * 4);
      for (int q = 0; q < QS; q++)
        group_avxvnni(acc[q], rows, 4 * g, kc, bp + g * MMI_NR * 4 + 64 * (q0 + q), sa, 0, MR);
    }
    for (int q = 0; groups > full && q < QS; q++) /* K's last 1 to 3 bytes */
      group_avxvnni(acc[q], rows, 4 * full, kc, bp + full * MMI_NR * 4 + 64 * (q0 + q), sa, 1,
                    MR);
    for (int q = 0; q < QS; q++)
      for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++)
          _mm256_storeu_si256((void *)(tile + r * ldt + 16 * (q0 + q) + 8 * h), acc[q][r][h]);
  }
}

/* 16 panel bytes at p as int16 */
#define WIDEN16(p) _mm256_cvtepi8_epi16(_mm_loadu_si128((const void *)(p)))

/* The AVX2 micro-kernel for one row (a decode step): the whole panel in
 * one pass, so a prepacked panel streams from memory once. Two groups of 4
 * k per step: each 4-column vector's two partial sums (vpmaddwd's) of both
 * groups added, then vphaddd of two such vectors completes 8 columns
 * (in the order 0 1 4 5 | 2 3 6 7, put right at the store), so the 64
 * columns take 8 accumulators. aw: the row's a' as int16, zero past kc up
 * to a whole pair of groups. */
AVX2_INLINE void micro_avx2_row(const int16_t *aw, int64_t kc, const uint8_t *bp, uint32_t *tile,
                                int first, int pf) {
  __m256i acc[MMI_NR / 8];
  for (int q = 0; q < MMI_NR / 8; q++) acc[q] = _mm256_setzero_si256();
  int64_t steps = (kc + 7) / 8;
  for (int64_t s = 0; s < steps; s++) {
    const uint8_t *g0 = bp + 2 * s * MMI_NR * 4, *g1 = g0 + MMI_NR * 4;
    int last_odd = 2 * s + 1 >= (kc + 3) / 4; /* no second group: K ends in the first */
    if (pf) prefetch_group(g0), prefetch_group(g1);
    int64_t a0, a1;
    __builtin_memcpy(&a0, aw + 8 * s, 8);
    __builtin_memcpy(&a1, aw + 8 * s + 4, 8);
    __m256i av0 = _mm256_set1_epi64x(a0), av1 = _mm256_set1_epi64x(a1);
    for (int q = 0; q < MMI_NR / 8; q++) {
      __m256i h[2];
      for (int v = 0; v < 2; v++) {
        const uint8_t *c0 = g0 + 32 * q + 16 * v, *c1 = g1 + 32 * q + 16 * v;
        h[v] = _mm256_madd_epi16(av0, WIDEN16(c0));
        if (!last_odd) h[v] = _mm256_add_epi32(h[v], _mm256_madd_epi16(av1, WIDEN16(c1)));
      }
      acc[q] = _mm256_add_epi32(acc[q], _mm256_hadd_epi32(h[0], h[1]));
    }
  }
  for (int q = 0; q < MMI_NR / 8; q++) {
    __m256i s = _mm256_permute4x64_epi64(acc[q], 0xD8);
    uint32_t *t = tile + 8 * q;
    if (!first) s = _mm256_add_epi32(s, _mm256_loadu_si256((const void *)t));
    _mm256_storeu_si256((void *)t, s);
  }
}

/* the AVX2 micro-kernel (gemm_int8_driver.h's MMI_MICRO contract) */
AVX2_INLINE void micro_avx2(const uint8_t *A, int64_t K, int64_t i, int64_t k0, int64_t kc,
                            const uint8_t *bp, uint32_t *tile, int64_t ldt, int first, int sa,
                            int pf, const int MR) {
  const int QS = MMI_SLICES(MR);
  int64_t groups = (kc + 3) / 4;
  /* the rows' a' as int16, zero past kc up to a whole group */
  int16_t aw[MMI_MR][MMI_KC] __attribute__((aligned(32)));
  uint8_t flip = sa ? 0x80 : 0;
  for (int r = 0; r < MR; r++) {
    const uint8_t *a = A + (i + r) * K + k0;
    for (int64_t t = 0; t < kc; t++) aw[r][t] = (int16_t)(uint8_t)(a[t] ^ flip);
    for (int64_t t = kc; t < 8 * ((kc + 7) / 8); t++) aw[r][t] = 0;
  }
  if (MR == 1) {
    micro_avx2_row(aw[0], kc, bp, tile, first, pf);
    return;
  }
  for (int q0 = 0; q0 < MMI_NR / 8; q0 += QS) {
    __m256i acc[4][MMI_MR][2];
    for (int q = 0; q < QS; q++)
      for (int r = 0; r < MR; r++) acc[q][r][0] = acc[q][r][1] = _mm256_setzero_si256();
    for (int64_t g = 0; g < groups; g++) {
      if (pf && q0 == 0) prefetch_group(bp + g * MMI_NR * 4);
      for (int q = 0; q < QS; q++) {
        const uint8_t *bg = bp + g * MMI_NR * 4 + 32 * (q0 + q);
        __m256i b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const void *)bg));
        __m256i b1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const void *)(bg + 16)));
        for (int r = 0; r < MR; r++) {
          int64_t a4;
          __builtin_memcpy(&a4, aw[r] + 4 * g, 8);
          __m256i av = _mm256_set1_epi64x(a4);
          acc[q][r][0] = _mm256_add_epi32(acc[q][r][0], _mm256_madd_epi16(av, b0));
          acc[q][r][1] = _mm256_add_epi32(acc[q][r][1], _mm256_madd_epi16(av, b1));
        }
      }
    }
    for (int q = 0; q < QS; q++)
      for (int r = 0; r < MR; r++) {
        /* columns 0-3 in acc[q][r][0], 4-7 in acc[q][r][1], two partial sums
         * each: vphaddd gives 0 1 4 5 | 2 3 6 7, the permute 0 1 2 3 4 5 6 7 */
        __m256i s = _mm256_hadd_epi32(acc[q][r][0], acc[q][r][1]);
        s = _mm256_permute4x64_epi64(s, 0xD8);
        uint32_t *t = tile + r * ldt + 8 * (q0 + q);
        if (!first) s = _mm256_add_epi32(s, _mm256_loadu_si256((const void *)t));
        _mm256_storeu_si256((void *)t, s);
      }
  }
}

#define MMI_ISA avxvnni
#define MMI_TARGET "avx2,avxvnni"
#define MMI_MICRO micro_avxvnni
#include "gemm_int8_driver.h"

#define MMI_ISA avx2
#define MMI_TARGET "avx2"
#define MMI_MICRO micro_avx2
#include "gemm_int8_driver.h"
