/* gemm_half_fma.h - the converting kernel of the half GEMM's AVX-512 entries
 * (gemm_half_avx512.h includes it): halves widened to f32 once per block,
 * then an f32 FMA register tile. The product of two halves is exact in f32,
 * so each FMA adds the exact product, as the generic entries and vdpbf16ps
 * do.
 *
 * Why convert: on the Xeon this was measured on, vdpbf16ps retires at about
 * half the f32 FMA's FLOP rate (a register-only loop of 12 independent
 * chains each: 25.8 against 48.7 GFLOP/s on a loaded core), so an FMA tile
 * on widened values outruns it wherever the conversion is amortized over
 * enough rows; f16 has no dot instruction into f32 at all (AVX512-FP16 sums
 * in f16, outside the interpreter's tolerance). On AMD's Zen 4 it is the
 * other way round (vdpbf16ps at twice the FMA's rate): there bf16 takes the
 * _avx512dp entries, which never come here (jit/matmul_half.c).
 *
 * Blocking (BLIS-like): N in blocks of HC_NC columns, K in blocks of HC_KC;
 * per (N block, K block) the B block is widened once into f32 panels of
 * HG_NR = 64 columns ([panel][k][64], zero past N, 256 KB on the stack: L2)
 * (f16 prepacked B is f32 panels already and is read in place); then every
 * HG_MR = 6 rows of the part have their kc values of A widened into a small
 * f32 block (6 KB) and run against each panel: 24 accumulators, one
 * broadcast from memory per row and four vector loads of B per k. C holds
 * the partial sums between K blocks; the epilogue runs on the part's rows
 * of an N block once its last K block is added. */

enum { HC_KC = HG_KB, HC_NC = 256 }; /* K blocks: the bf16 prepacked ones */

/* The B block [k0, k0 + kc) x [jc, jc + nc) widened into f32 panels bb
 * ([p][k][64], row stride 64, zero past N). layout 0 row-major (row stride
 * N), 1 transposed (N x K), 2 bf16 prepacked (k pairs, gemm_half.c). */
AVX_INLINE void widen_b_block(const uint16_t *B, int64_t N, int64_t K, int64_t k0, int64_t kc,
                              int64_t jc, int64_t nc, float *bb, int f16, int layout) {
  const __m512i hi_half = _mm512_set1_epi32((int)0xffff0000u);
  for (int64_t p = 0; p * HG_NR < nc; p++) {
    int64_t j0 = jc + p * HG_NR;
    float *dst = bb + p * HC_KC * HG_NR;
    if (layout == 2) { /* bf16 pairs: the even k in the low half, the odd in the high */
      const uint16_t *src = B + bf16_slice(N, K, k0, j0 / HG_NR);
      for (int64_t g = 0; 2 * g < kc; g++)
        for (int h = 0; h < 4; h++) {
          __m512i v = _mm512_loadu_si512((const void *)(src + g * HG_NR * 2 + 32 * h));
          _mm512_storeu_ps(dst + 2 * g * HG_NR + 16 * h,
                           _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
          if (2 * g + 1 < kc)
            _mm512_storeu_ps(dst + (2 * g + 1) * HG_NR + 16 * h,
                             _mm512_castsi512_ps(_mm512_and_si512(v, hi_half)));
        }
      continue;
    }
    if (layout == 0 && j0 + HG_NR <= N) {
      for (int64_t k = 0; k < kc; k++) {
        const uint16_t *r = B + (k0 + k) * N + j0;
        for (int h = 0; h < 4; h++) {
          __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(r + 16 * h));
          __m512 w = f16 ? _mm512_cvtph_ps(v)
                         : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
          _mm512_storeu_ps(dst + k * HG_NR + 16 * h, w);
        }
      }
      continue;
    }
    for (int64_t k = 0; k < kc; k++) /* a transposed B, or a last partial panel */
      for (int64_t c = 0; c < HG_NR; c++) {
        int64_t j = j0 + c;
        dst[k * HG_NR + c] =
            j < N ? widen(B, layout == 1 ? j * K + k0 + k : (k0 + k) * N + j, f16) : 0.0f;
      }
  }
}

/* m rows of A from row i, k0 .. k0 + kc, widened into ab (row stride HC_KC) */
AVX_INLINE void widen_a_rows(const uint16_t *A, int64_t K, int64_t i, int64_t m, int64_t k0,
                             int64_t kc, float *ab, int f16) {
  for (int64_t r = 0; r < m; r++) {
    const uint16_t *a = A + (i + r) * K + k0;
    int64_t k = 0;
    for (; k + 16 <= kc; k += 16) {
      __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(a + k));
      __m512 w = f16 ? _mm512_cvtph_ps(v)
                     : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
      _mm512_storeu_ps(ab + r * HC_KC + k, w);
    }
    for (; k < kc; k++) ab[r * HC_KC + k] = widen(a, k, f16);
  }
}

/* MR rows of ab against one f32 panel bp (row stride ldb) over kc, into
 * tile (row stride ldt), adding to what it holds unless first */
AVX_INLINE void micro_fma(const float *ab, const float *bp, int64_t ldb, int64_t kc, float *tile,
                          int64_t ldt, int first, const int MR) {
  __m512 acc[HG_MR][4];
  for (int r = 0; r < MR; r++)
    for (int h = 0; h < 4; h++)
      acc[r][h] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(tile + r * ldt + 16 * h);
  for (int64_t k = 0; k < kc; k++) {
    __m512 b[4];
    for (int h = 0; h < 4; h++) b[h] = _mm512_loadu_ps(bp + k * ldb + 16 * h);
    for (int r = 0; r < MR; r++) {
      __m512 av = _mm512_set1_ps(ab[r * HC_KC + k]);
      for (int h = 0; h < 4; h++) acc[r][h] = _mm512_fmadd_ps(av, b[h], acc[r][h]);
    }
  }
  for (int r = 0; r < MR; r++)
    for (int h = 0; h < 4; h++) _mm512_storeu_ps(tile + r * ldt + 16 * h, acc[r][h]);
}

/* m rows (1 .. HG_MR) of one panel into c (row stride N, nr columns: a
 * partial panel through an edge tile) */
AVX_INLINE void fma_rows(const float *ab, int64_t m, const float *bp, int64_t ldb, int64_t kc,
                         float *c, int64_t N, int64_t nr, int first) {
  float edge[HG_MR * HG_NR];
  float *t = c;
  int64_t ldt = N;
  if (nr < HG_NR) {
    t = edge, ldt = HG_NR;
    edge_in(c, N, m, nr, first, edge);
  }
  switch (m) {
  case 1: micro_fma(ab, bp, ldb, kc, t, ldt, first, 1); break;
  case 2: micro_fma(ab, bp, ldb, kc, t, ldt, first, 2); break;
  case 3: micro_fma(ab, bp, ldb, kc, t, ldt, first, 3); break;
  case 4: micro_fma(ab, bp, ldb, kc, t, ldt, first, 4); break;
  case 5: micro_fma(ab, bp, ldb, kc, t, ldt, first, 5); break;
  default: micro_fma(ab, bp, ldb, kc, t, ldt, first, HG_MR); break;
  }
  if (nr < HG_NR) edge_out(c, N, m, nr, edge);
}

/* layout: 0 row-major B, 1 transposed, 2 prepacked (gemm_half.c's top) */
AVX_INLINE void hgemm_fma(int64_t N, int64_t K, const void *A_, const void *B_, float *C,
                          int64_t lo, int64_t hi, int64_t jlo, int64_t jhi, kiln_hgemm_epi epi,
                          void *epi_ctx, int f16, int layout) {
  const uint16_t *A = A_, *B = B_;
  float bb[HC_KC * HC_NC] __attribute__((aligned(64)));
  float ab[HG_MR * HC_KC] __attribute__((aligned(64)));
  if (hi <= lo) return; /* an empty part: no B to widen */
  for (int64_t jc = jlo; jc < jhi; jc += HC_NC) {
    int64_t nc = jhi - jc < HC_NC ? jhi - jc : HC_NC;
    for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += HC_KC) {
      int64_t kc = K - k0 < HC_KC ? K - k0 : HC_KC;
      int first = k0 == 0;
      /* f16 prepacked: f32 panels [k][64] read in place */
      int in_place = f16 && layout == 2;
      if (!in_place) widen_b_block(B, N, K, k0, kc, jc, nc, bb, f16, layout);
      for (int64_t i = lo; i < hi; i += HG_MR) {
        int64_t m = hi - i < HG_MR ? hi - i : HG_MR;
        widen_a_rows(A, K, i, m, k0, kc, ab, f16);
        for (int64_t j0 = jc; j0 < jc + nc; j0 += HG_NR) {
          int64_t nr = jc + nc - j0 < HG_NR ? jc + nc - j0 : HG_NR;
          const float *bp = in_place ? (const float *)B_ + (j0 / HG_NR) * K * HG_NR + k0 * HG_NR
                                     : bb + (j0 - jc) / HG_NR * HC_KC * HG_NR;
          fma_rows(ab, m, bp, HG_NR, kc, C + i * N + j0, N, nr, first);
        }
      }
    }
    if (epi && hi > lo) epi(epi_ctx, lo, jc, hi - lo, nc, C + lo * N + jc, N);
  }
}
