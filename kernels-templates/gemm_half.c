/* gemm_half.c - the half-precision GEMM template: C (f32) = A * B for bf16
 * or f16 operands, products of the values widened exactly and summed in
 * f32. Compiled to LLVM bitcode at build time and linked into the kernel's
 * module at JIT time (jit/template.c, jit/matmul_half.c), where it gets the
 * host's target and goes through O3 with the kernel.
 *
 * Entries, T in bf16 f16, V in ex (B row-major K x N), tex (B given
 * transposed, N x K: a matmul with kiln.transpose_b), pex (B prepacked):
 *   void kiln_hgemm_T_V(int64_t M, int64_t N, int64_t K, const void *A,
 *                       const void *B, float *C, int64_t part, int64_t nparts,
 *                       kiln_hgemm_epi epi, void *epi_ctx)
 *     C[i * N + j] = sum over k of wide(A[i * K + k]) * wide(B[k, j]) for
 *     the (i, j) of part `part` of C cut in nparts pieces (hg_part: row
 *     ranges, or, for few rows, ranges of 64-column panels, so a decode
 *     step's B is split between the parts), zeros when K = 0; then, when
 *     epi is not NULL, epi(epi_ctx, i0, j0, m, n, &C[i0 * N + j0], N) once
 *     for each finished block of C (the blocks cover the part's piece once:
 *     a fused GEMM epilogue, jit/fused.c). How each element is summed does
 *     not depend on the parts.
 * Products of two halves are exact in f32 (8 + 8 or 11 + 11 significant
 * bits), so every entry sums the same exact products in f32; only the order
 * of the additions differs between entries (and vdpbf16ps flushes f32
 * subnormals to zero), so results agree to f32 rounding.
 *
 * Prepacked B (src/prepack.c writes it once for a constant or weight B,
 * kiln.packed_b = 64; the layout does not depend on the host):
 *   bf16: K in blocks of HG_KB = 256 rows (the last one rounded up to an
 *     even count, kb2), each block all of N in panels of HG_NR = 64 columns
 *     (N rounded up to np = ceil(N / 64) * 64), each panel's kb2 rows as
 *     pairs of k interleaved: element (k, j) at
 *     k0 * np + (j / 64) * kb2 * 64 + (k - k0) / 2 * 128 + (j % 64) * 2 + k % 2
 *     (uint16), k0 = k rounded down to a block; zeros past K and N. A K block
 *     of every panel is one contiguous stream (a decode step reads B once,
 *     in order), and vdpbf16ps reads one pair of k for 16 columns per vector.
 *   f16: converted to f32 once (exact), [p][k][j % 64] (float), each panel
 *     K * 64 floats, zeros past N.
 *
 * kiln_hgemm_T_V_avx512 (x86-64, gemm_half_avx512.h): the same contract,
 * register-blocked, for targets with AVX512-BF16 (bf16: vdpbf16ps) or
 * AVX-512 with F16C (f16: converted, vfmadd231ps); jit/matmul_half.c picks
 * them by the kernel's target features.
 *
 * The generic entries here are plain loops: a row of C at a time,
 * c[j] += a_ik * b[k, j] over contiguous j (transposed B: a dot product per
 * element). They define the results on any target and serve tests
 * (KILN_HALF_GEMM=generic); hosts without the AVX-512 entries keep the
 * casts and the f32 GEMM instead (src/pipeline.c), which are faster.
 * Assumes: buffers do not overlap; C has row stride N. Freestanding: no
 * libc, no static mutable state. */
#include <stdint.h>

#include "gemm_part.h"

#include "../ir/qblock.h"

typedef void (*kiln_hgemm_epi)(void *ctx, int64_t i0, int64_t j0, int64_t m, int64_t n, float *C,
                               int64_t ldc);

enum { HG_NR = 64, HG_KB = 256, HG_SPLIT_ROWS = 12 };

#define HG_INLINE static inline __attribute__((always_inline))

/* Part `part` of nparts of C [M, N] (gemm_part.h): rows when every part
 * gets HG_SPLIT_ROWS (two of the AVX-512 tiles' heights), else panels. */
HG_INLINE void hg_part(int64_t M, int64_t N, int64_t part, int64_t nparts, int64_t *i0,
                       int64_t *i1, int64_t *j0, int64_t *j1) {
  gemm_part_cut(M, N, part, nparts, HG_NR, HG_SPLIT_ROWS, i0, i1, j0, j1);
}

/* element i of a half buffer, widened exactly (ir/qblock.h) */
HG_INLINE float widen(const uint16_t *p, int64_t i, int f16) {
  const uint8_t *b = (const uint8_t *)(p + i);
  return f16 ? qb_f16(b) : qb_bf16(b);
}

/* Where a bf16 prepacked B's K block starting at k0 (a multiple of HG_KB)
 * has panel p (see the top) */
HG_INLINE int64_t bf16_slice(int64_t N, int64_t K, int64_t k0, int64_t p) {
  int64_t np = (N + HG_NR - 1) / HG_NR * HG_NR, kb = K - k0 < HG_KB ? K - k0 : HG_KB;
  return k0 * np + p * ((kb + 1) / 2 * 2) * HG_NR;
}

/* element (k, j) of a prepacked B (see the top) */
HG_INLINE float packed_at(const void *B, int64_t N, int64_t K, int64_t k, int64_t j, int f16) {
  int64_t p = j / HG_NR, c = j % HG_NR;
  if (f16) return ((const float *)B)[(p * K + k) * HG_NR + c];
  int64_t k0 = k / HG_KB * HG_KB;
  return widen((const uint16_t *)B,
               bf16_slice(N, K, k0, p) + (k - k0) / 2 * HG_NR * 2 + c * 2 + k % 2, 0);
}

/* layout: 0 row-major B, 1 transposed (N x K), 2 prepacked; rows
 * [lo, hi) x columns [jlo, jhi) */
HG_INLINE void hgemm_generic(int64_t N, int64_t K, const void *A_, const void *B_, float *C,
                             int64_t lo, int64_t hi, int64_t jlo, int64_t jhi,
                             kiln_hgemm_epi epi, void *epi_ctx, int f16, int layout) {
  const uint16_t *A = A_, *B = B_;
  for (int64_t i = lo; i < hi; i++) {
    float *c = C + i * N;
    if (layout == 1) {
      for (int64_t j = jlo; j < jhi; j++) {
        float s = 0;
        for (int64_t k = 0; k < K; k++) s += widen(A, i * K + k, f16) * widen(B, j * K + k, f16);
        c[j] = s;
      }
      continue;
    }
    for (int64_t j = jlo; j < jhi; j++) c[j] = 0;
    for (int64_t k = 0; k < K; k++) {
      float a = widen(A, i * K + k, f16);
      if (layout == 0) {
        for (int64_t j = jlo; j < jhi; j++) c[j] += a * widen(B, k * N + j, f16);
      } else {
        for (int64_t j = jlo; j < jhi; j++) c[j] += a * packed_at(B_, N, K, k, j, f16);
      }
    }
  }
  if (epi && hi > lo && jhi > jlo)
    epi(epi_ctx, lo, jlo, hi - lo, jhi - jlo, C + lo * N + jlo, N);
}

#define ARGS                                                                                  \
  int64_t M, int64_t N, int64_t K, const void *A, const void *B, float *C, int64_t part,     \
      int64_t nparts, kiln_hgemm_epi epi, void *epi_ctx

#define GENERIC_ENTRY(T, V, f16, layout)                                                      \
  void kiln_hgemm_##T##_##V(ARGS) {                                                           \
    int64_t lo, hi, jlo, jhi;                                                                 \
    hg_part(M, N, part, nparts, &lo, &hi, &jlo, &jhi);                                        \
    hgemm_generic(N, K, A, B, C, lo, hi, jlo, jhi, epi, epi_ctx, f16, layout);                \
  }
GENERIC_ENTRY(bf16, ex, 0, 0)
GENERIC_ENTRY(bf16, tex, 0, 1)
GENERIC_ENTRY(bf16, pex, 0, 2)
GENERIC_ENTRY(f16, ex, 1, 0)
GENERIC_ENTRY(f16, tex, 1, 1)
GENERIC_ENTRY(f16, pex, 1, 2)

#if defined(__x86_64__)
#include "gemm_half_avx512.h"
#endif
