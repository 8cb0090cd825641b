/* gemm_half_avx512.h - the AVX-512 entries of the half GEMM template
 * (gemm_half.c includes it once, at its end, on x86-64):
 * kiln_hgemm_{bf16,f16}_{ex,tex,pex}_avx512 and
 * kiln_hgemm_bf16_{ex,tex,pex}_avx512dp, with the generic entries'
 * arguments and contract. Two kernels: vdpbf16ps on bf16 pairs (here) for
 * few rows, and widening to f32 for an FMA tile (gemm_half_fma.h) for the
 * rest and for f16; the _avx512 entries at the end choose, the _avx512dp
 * ones (for hosts whose vdpbf16ps outruns the FMA) take vdpbf16ps always.
 *
 * vdpbf16ps (AVX512-BF16) adds a.k * b.k + a.k+1 * b.k+1 into each f32
 * lane, the products exact, so B is read as pairs of k interleaved per
 * column (the prepacked layout, or packed so per block) and A as 32-bit
 * pairs broadcast from its rows in place.
 * Blocking (as gemm_int8_vnni.h): rows of the part in chunks of HG_MC; per
 * chunk, N in chunks whose f32 C rows fit ~512 KB (64 to 8192 columns); per
 * N chunk, K in blocks of HG_KC = 256 (a 32 KB panel block: L1); per K
 * block, the chunk's panels of HG_NR = 64 columns (four vectors of 16 f32
 * lanes): the panel's block packed on the stack (or read in place when B is
 * prepacked: a K block of a panel is a contiguous slice, the next panel's
 * prefetched while it runs), then HG_MR = 6
 * rows of A at a time against it (24 accumulators; a last 1 to 5 rows take
 * a tile of their own height). Partial panels go through a tile on the
 * stack. C holds the partial sums between K blocks; the epilogue runs on a
 * chunk's rows and columns once its last K block is added. */
#include <immintrin.h>

enum { HG_MR = 6, HG_MC = 1024, HG_NCMAX = 8192, HG_KC = HG_KB };
/* Prefetch (overridable with -D only for experiments): the slice of the
 * panel HG_PF_PANELS ahead, into L2 (locality 1: measured 10.7 against 10.0
 * GFLOP/s into L1 and 8.6 without, 1 x 4096 x 4096 from DRAM; 37.3, 34.3
 * and 27.2 at M = 4) */
#ifndef HG_PREFETCH
#define HG_PREFETCH 1
#endif
#ifndef HG_PF_LOCALITY
#define HG_PF_LOCALITY 1
#endif
#ifndef HG_PF_PANELS
#define HG_PF_PANELS 1
#endif
#ifndef HG_DP_MAX_M
#define HG_DP_MAX_M 16 /* overridable with -D only for experiments */
#endif
#define HG_CHUNK_BYTES (512 * 1024)

#define AVX_TARGET "avx512f,avx512bw,avx512vl,avx512bf16,f16c,fma"
#define AVX_FN __attribute__((target(AVX_TARGET)))
#define AVX_INLINE static inline __attribute__((target(AVX_TARGET), always_inline))

/* The bf16 panel block: B[k0 .. k0 + kc) x [j0, j0 + 64) as pairs
 * [g][c][2] (zero past K and N); B row-major (trans 0, row stride N) or
 * transposed (trans 1: N x K, row stride K). */
AVX_INLINE void pack_bf16(const uint16_t *B, int64_t N, int64_t K, int64_t k0, int64_t kc,
                          int64_t j0, uint16_t *bp, int trans) {
  int64_t groups = (kc + 1) / 2;
  if (!trans && j0 + HG_NR <= N) {
    int64_t whole = kc / 2;
    for (int64_t g = 0; g < whole; g++) {
      const uint16_t *r0 = B + (k0 + 2 * g) * N + j0, *r1 = r0 + N;
      uint16_t *o = bp + g * HG_NR * 2;
      for (int c = 0; c < HG_NR; c++) {
        o[2 * c] = r0[c];
        o[2 * c + 1] = r1[c];
      }
    }
    if (groups > whole) { /* K's last odd k: its pair's second half is zero */
      const uint16_t *r0 = B + (k0 + 2 * whole) * N + j0;
      uint16_t *o = bp + whole * HG_NR * 2;
      for (int c = 0; c < HG_NR; c++) {
        o[2 * c] = r0[c];
        o[2 * c + 1] = 0;
      }
    }
    return;
  }
  for (int64_t c = 0; c < HG_NR; c++) {
    int64_t j = j0 + c;
    for (int64_t t = 0; t < 2 * groups; t++) {
      int64_t k = k0 + t;
      uint16_t v = 0;
      if (t < kc && j < N) v = trans ? B[j * K + k] : B[k * N + j];
      bp[(t / 2) * HG_NR * 2 + 2 * c + t % 2] = v;
    }
  }
}

/* a pair of bf16 of row a at k (the second zero past kc) */
AVX_INLINE uint32_t a_pair(const uint16_t *a, int64_t k, int64_t kc) {
  uint32_t v = a[k];
  if (k + 1 < kc) __builtin_memcpy(&v, a + k, 4);
  return v;
}

/* rows [i, i + MR) of the panel block bp over kc: acc (+)= a . bp, into
 * tile (row stride ldt), adding to what it holds unless first. */
AVX_INLINE void micro_bf16(const uint16_t *A, int64_t K, int64_t i, int64_t k0, int64_t kc,
                           const uint16_t *bp, float *tile, int64_t ldt, int first,
                           const uint16_t *pf, const int MR) {
  __m512 acc[HG_MR][4];
  const uint16_t *rows[HG_MR];
  for (int r = 0; r < MR; r++) {
    rows[r] = A + (i + r) * K + k0;
    for (int h = 0; h < 4; h++)
      acc[r][h] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(tile + r * ldt + 16 * h);
  }
  int64_t full = kc / 2;
  for (int64_t g = 0; g < full; g++) {
    const uint16_t *bg = bp + g * HG_NR * 2;
    __m512bh b[4];
    for (int h = 0; h < 4; h++) b[h] = (__m512bh)_mm512_loadu_si512((const void *)(bg + 32 * h));
    if (HG_PREFETCH && pf)
      for (int h = 0; h < 4; h++) __builtin_prefetch(pf + g * HG_NR * 2 + 32 * h, 0, HG_PF_LOCALITY);
    for (int r = 0; r < MR; r++) {
      uint32_t pair;
      __builtin_memcpy(&pair, rows[r] + 2 * g, 4);
      __m512bh av = (__m512bh)_mm512_set1_epi32((int)pair);
      for (int h = 0; h < 4; h++) acc[r][h] = _mm512_dpbf16_ps(acc[r][h], av, b[h]);
    }
  }
  if (kc > 2 * full) { /* K's last odd k */
    const uint16_t *bg = bp + full * HG_NR * 2;
    __m512bh b[4];
    for (int h = 0; h < 4; h++) b[h] = (__m512bh)_mm512_loadu_si512((const void *)(bg + 32 * h));
    for (int r = 0; r < MR; r++) {
      __m512bh av = (__m512bh)_mm512_set1_epi32((int)a_pair(rows[r], 2 * full, kc));
      for (int h = 0; h < 4; h++) acc[r][h] = _mm512_dpbf16_ps(acc[r][h], av, b[h]);
    }
  }
  for (int r = 0; r < MR; r++)
    for (int h = 0; h < 4; h++) _mm512_storeu_ps(tile + r * ldt + 16 * h, acc[r][h]);
}

/* A tile of m rows at c (row stride N) with nr < HG_NR columns goes
 * through edge (HG_MR x HG_NR): its sums so far in (unless first), the
 * kernel's whole panel width computed there, its nr columns out. */
AVX_INLINE void edge_in(const float *c, int64_t N, int64_t m, int64_t nr, int first,
                        float *edge) {
  for (int64_t r = 0; !first && r < m; r++)
    for (int64_t x = 0; x < nr; x++) edge[r * HG_NR + x] = c[r * N + x];
}
AVX_INLINE void edge_out(float *c, int64_t N, int64_t m, int64_t nr, const float *edge) {
  for (int64_t r = 0; r < m; r++)
    for (int64_t x = 0; x < nr; x++) c[r * N + x] = edge[r * HG_NR + x];
}

/* rows [i, i + m) (1 <= m <= HG_MR) of the panel at c (row stride N, nr
 * columns: a partial panel through an edge tile) */
AVX_INLINE void panel_rows(const uint16_t *A, int64_t K, int64_t i, int64_t m, int64_t k0,
                           int64_t kc, const uint16_t *bp, float *c, int64_t N, int64_t nr,
                           int first, const uint16_t *pf) {
  float edge[HG_MR * HG_NR];
  float *t = c;
  int64_t ldt = N;
  if (nr < HG_NR) {
    t = edge, ldt = HG_NR;
    edge_in(c, N, m, nr, first, edge);
  }
  switch (m) {
  case 1: micro_bf16(A, K, i, k0, kc, bp, t, ldt, first, pf, 1); break;
  case 2: micro_bf16(A, K, i, k0, kc, bp, t, ldt, first, pf, 2); break;
  case 3: micro_bf16(A, K, i, k0, kc, bp, t, ldt, first, pf, 3); break;
  case 4: micro_bf16(A, K, i, k0, kc, bp, t, ldt, first, pf, 4); break;
  case 5: micro_bf16(A, K, i, k0, kc, bp, t, ldt, first, pf, 5); break;
  default: micro_bf16(A, K, i, k0, kc, bp, t, ldt, first, pf, HG_MR); break;
  }
  if (nr < HG_NR) edge_out(c, N, m, nr, edge);
}

/* The vdpbf16ps kernel (bf16 only). layout: 0 row-major B, 1 transposed,
 * 2 prepacked (gemm_half.c's top) */
AVX_INLINE void hgemm_dp(int64_t N, int64_t K, const void *A_, const void *B_, float *C,
                         int64_t lo, int64_t hi, int64_t jlo, int64_t jhi, kiln_hgemm_epi epi,
                         void *epi_ctx, int layout) {
  const uint16_t *A = A_, *B = B_;
  uint16_t stack_panel[HG_KC * HG_NR] __attribute__((aligned(64)));
  for (int64_t i0 = lo; i0 < hi; i0 += HG_MC) {
    int64_t mc = hi - i0 < HG_MC ? hi - i0 : HG_MC;
    /* N in chunks of panels whose C rows stay in L2 across the K blocks */
    int64_t nc = (HG_CHUNK_BYTES / 4 / mc) / HG_NR * HG_NR;
    nc = nc < HG_NR ? HG_NR : nc > HG_NCMAX ? HG_NCMAX : nc;
    for (int64_t jc = jlo; jc < jhi; jc += nc) {
      int64_t jend = jhi - jc < nc ? jhi : jc + nc;
      for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += HG_KC) {
        int64_t kc = K - k0 < HG_KC ? K - k0 : HG_KC;
        int first = k0 == 0;
        for (int64_t j0 = jc; j0 < jend; j0 += HG_NR) {
          int64_t nr = jend - j0 < HG_NR ? jend - j0 : HG_NR;
          const uint16_t *panel = stack_panel;
          if (layout == 2)
            panel = B + bf16_slice(N, K, k0, j0 / HG_NR);
          else
            pack_bf16(B, N, K, k0, kc, j0, stack_panel, layout);
          /* prepacked: the next panel's slice fetched while this one runs */
          const uint16_t *next = layout == 2 && j0 + HG_PF_PANELS * HG_NR < jend
                                     ? panel + HG_PF_PANELS * ((kc + 1) / 2 * 2 * HG_NR)
                                     : (const uint16_t *)0;
          for (int64_t r = 0; r < mc; r += HG_MR) {
            int64_t m = mc - r < HG_MR ? mc - r : HG_MR;
            panel_rows(A, K, i0 + r, m, k0, kc, panel, C + (i0 + r) * N + j0, N, nr, first,
                       r == 0 ? next : (const uint16_t *)0);
          }
        }
      }
      if (epi) epi(epi_ctx, i0, jc, mc, jend - jc, C + i0 * N + jc, N);
    }
  }
}

#include "gemm_half_fma.h"

/* bf16: the vdpbf16ps kernel for fewer than HG_DP_MAX_M rows in all (a
 * decode step: memory bound, B read as it is stored, half the bytes of
 * f32), the converting one otherwise (gemm_half_fma.h says why); decided
 * from M, so every part of one call sums alike. f16: the converting one.
 * The part's rows and columns: hg_part (gemm_half.c). */
#define AVX_ENTRY(T, V, f16, layout)                                                          \
  AVX_FN void kiln_hgemm_##T##_##V##_avx512(ARGS) {                                           \
    int64_t lo, hi, jlo, jhi;                                                                 \
    hg_part(M, N, part, nparts, &lo, &hi, &jlo, &jhi);                                        \
    if (!f16 && M < HG_DP_MAX_M)                                                              \
      hgemm_dp(N, K, A, B, C, lo, hi, jlo, jhi, epi, epi_ctx, layout);                        \
    else                                                                                      \
      hgemm_fma(N, K, A, B, C, lo, hi, jlo, jhi, epi, epi_ctx, f16, layout);                  \
  }
AVX_ENTRY(bf16, ex, 0, 0)
AVX_ENTRY(bf16, tex, 0, 1)
AVX_ENTRY(bf16, pex, 0, 2)
AVX_ENTRY(f16, ex, 1, 0)
AVX_ENTRY(f16, tex, 1, 1)
AVX_ENTRY(f16, pex, 1, 2)

/* bf16 on a host whose vdpbf16ps retires at twice the f32 FMA's FLOP rate
 * (jit/matmul_half.c picks these there): the vdpbf16ps kernel for every M.
 * Measured on an AMD Zen 4 (1 thread, GFLOP/s, _avx512 against these):
 * 1024^3 106 against 209, 128 x 768 x 768 105 / 206 (ex), 111 / 227
 * (pex), 17 x 4096 x 4096 prepacked 71 / 206. */
#define AVX_DP_ENTRY(V, layout)                                                               \
  AVX_FN void kiln_hgemm_bf16_##V##_avx512dp(ARGS) {                                          \
    int64_t lo, hi, jlo, jhi;                                                                 \
    hg_part(M, N, part, nparts, &lo, &hi, &jlo, &jhi);                                        \
    hgemm_dp(N, K, A, B, C, lo, hi, jlo, jhi, epi, epi_ctx, layout);                          \
  }
AVX_DP_ENTRY(ex, 0)
AVX_DP_ENTRY(tex, 1)
AVX_DP_ENTRY(pex, 2)
