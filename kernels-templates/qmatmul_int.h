/* qmatmul_int.h - mo.qmatmul's kernels for the qmatmul template
 * (qmatmul.c includes it once, at its end): the lhs quantized per block as
 * ir/qblock.h defines (Q8_0 / Q8_K), integer dot products per block, then
 * the f32 scaling. kiln_qmatmul_E (generic: qblock.h's qb_dot, the
 * interpreter's terms bit for bit) and kiln_qmatmul_E_avx2 (x86-64 with AVX2
 * and F16C: vpmaddubsw / vpmaddwd) for each encoding E; qmatmul.c's header
 * says what they compute and how the work is split.
 *
 * Assumes qmatmul.c's QBUF and MB and that K is whole blocks. Freestanding
 * (<immintrin.h> is the compiler's). No fma contraction here: the terms are
 * qblock.h's operations in qblock.h's order. */
#pragma clang fp contract(off)

/* QBUF elements of A, quantized: q, each block's scale and bsums; a pass's
 * row r of kc columns at r * kc, r * kc / 32 and r * kc / 16 */
typedef struct lhs_buf {
  int8_t q[QBUF] __attribute__((aligned(32)));
  float d[QBUF / 32];
  int16_t bs[QBUF / 16];
} lhs_buf;

/* the sum over nb blocks of row w of W of the block terms against the
 * quantized lhs q, d, bs */
typedef float (*row_dot_fn)(const uint8_t *w, int64_t nb, const int8_t *q, const float *d,
                            const int16_t *bs);

static inline __attribute__((always_inline)) float
row_dot_generic(qb_encoding enc, const uint8_t *w, int64_t nb, const int8_t *q, const float *d,
                const int16_t *bs) {
  const int64_t E = QB_ELEMS(enc), BB = QB_BYTES(enc);
  float s = 0;
  for (int64_t b = 0; b < nb; b++) s += qb_dot(enc, w + b * BB, q + b * E, bs + b * E / 16, d[b]);
  return s;
}

#define GENERIC_DOT(name, enc)                                                               \
  static float dot_##name(const uint8_t *w, int64_t nb, const int8_t *q, const float *d,   \
                          const int16_t *bs) {                                               \
    return row_dot_generic(enc, w, nb, q, d, bs);                                            \
  }
GENERIC_DOT(q4_0, QB_Q4_0)
GENERIC_DOT(q8_0, QB_Q8_0)
GENERIC_DOT(q4_k, QB_Q4_K)
GENERIC_DOT(q5_k, QB_Q5_K)
GENERIC_DOT(q6_k, QB_Q6_K)

static inline __attribute__((always_inline)) void
qmatmul_int(qb_encoding enc, row_dot_fn dot, int64_t M, int64_t N, int64_t K, const float *A,
            const uint8_t *W, float *C, int64_t n_lo, int64_t n_hi) {
  const int64_t E = QB_ELEMS(enc), BB = QB_BYTES(enc), rowbytes = K / E * BB;
  if (K == 0) {
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = n_lo; n < n_hi; n++) C[m * N + n] = 0;
    return;
  }
  lhs_buf L;
  const int64_t rows = M == 1 ? 1 : MB, kc = QBUF / rows; /* per pass */
  for (int64_t m0 = 0; m0 < M; m0 += rows) {
    int64_t mb = M - m0 < rows ? M - m0 : rows;
    for (int64_t k0 = 0; k0 < K; k0 += kc) {
      int64_t nb = (K - k0 < kc ? K - k0 : kc) / E;
      for (int64_t r = 0; r < mb; r++)
        for (int64_t b = 0; b < nb; b++) {
          const float *a = A + (m0 + r) * K + k0 + b * E;
          int64_t at = r * kc + b * E;
          L.d[r * kc / 32 + b] = qb_quantize_lhs(enc, a, &L.q[at], &L.bs[at / 16]);
        }
      for (int64_t n = n_lo; n < n_hi; n++) {
        const uint8_t *w = W + n * rowbytes + k0 / E * BB;
        for (int64_t r = 0; r < mb; r++) {
          float s = dot(w, nb, &L.q[r * kc], &L.d[r * kc / 32], &L.bs[r * kc / 16]);
          float *c = &C[(m0 + r) * N + n];
          *c = k0 ? *c + s : s;
        }
      }
    }
  }
}

#define QMATMUL_ENTRY(name, enc, dot)                                                          \
  void kiln_qmatmul_##name(int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W, \
                           float *C, int64_t n_lo, int64_t n_hi);                          \
  void kiln_qmatmul_##name(int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W, \
                           float *C, int64_t n_lo, int64_t n_hi) {                         \
    qmatmul_int(enc, dot, M, N, K, A, W, C, n_lo, n_hi);                                   \
  }
QMATMUL_ENTRY(q4_0, QB_Q4_0, dot_q4_0)
QMATMUL_ENTRY(q8_0, QB_Q8_0, dot_q8_0)
QMATMUL_ENTRY(q4_k, QB_Q4_K, dot_q4_k)
QMATMUL_ENTRY(q5_k, QB_Q5_K, dot_q5_k)
QMATMUL_ENTRY(q6_k, QB_Q6_K, dot_q6_k)

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX2_FN __attribute__((target("avx2,f16c")))
#define AVX2_INLINE static inline __attribute__((target("avx2,f16c"), always_inline))

AVX2_INLINE float f16_x86(const uint8_t *p) {
  return _cvtsh_ss((unsigned short)(p[0] | p[1] << 8));
}

AVX2_INLINE float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

AVX2_INLINE int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

#define LD256(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))

/* signed w (|w| <= 128 as u8 after psign) times signed a (|a| <= 127):
 * 8 int32 sums of 4 products; s16 pairs stay below 2 * 128 * 127 */
AVX2_INLINE __m256i dot_s8(__m256i w, __m256i a) {
  __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
  return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

AVX2_INLINE __m256i q4_0_weights(const uint8_t *x) {
  __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(x + 2));
  __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw),
                                 _mm256_set1_epi8(0xf));
  return _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
}

/* q4_0 and q8_0 blocks: acc plus the 8 lanes' partial int32 sums times
 * dw * da */
AVX2_INLINE __m256 block_q4_0(const uint8_t *x, const int8_t *qa, float da, __m256 acc) {
  __m256i s = dot_s8(q4_0_weights(x), LD256(qa));
  return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(f16_x86(x) * da)));
}

AVX2_INLINE __m256 block_q8_0(const uint8_t *x, const int8_t *qa, float da, __m256 acc) {
  __m256i s = dot_s8(LD256(x + 2), LD256(qa));
  return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(f16_x86(x) * da)));
}

/* The same with AVX-VNNI's vpdpbusd (u8 x s8, four products summed into
 * int32, no saturation) and FMA: q4_0 as unsigned nibbles times a, less
 * 8 times a (two vpdpbusd for the sub and two psign); q8_0 as |w| times a
 * with w's sign. */
#define VNNI_INLINE static inline __attribute__((target("avx2,f16c,fma,avxvnni"), always_inline))
#define VNNI_FN __attribute__((target("avx2,f16c,fma,avxvnni")))

VNNI_INLINE __m256 block_q4_0_vnni(const uint8_t *x, const int8_t *qa, float da, __m256 acc) {
  __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(x + 2));
  __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw),
                                 _mm256_set1_epi8(0xf));
  __m256i a = LD256(qa), zero = _mm256_setzero_si256();
  __m256i s = _mm256_sub_epi32(_mm256_dpbusd_avx_epi32(zero, nib, a),
                               _mm256_dpbusd_avx_epi32(zero, _mm256_set1_epi8(8), a));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(f16_x86(x) * da), acc);
}

VNNI_INLINE __m256 block_q8_0_vnni(const uint8_t *x, const int8_t *qa, float da, __m256 acc) {
  __m256i w = LD256(x + 2);
  __m256i s = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(w, w),
                                      _mm256_sign_epi8(LD256(qa), w));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(f16_x86(x) * da), acc);
}

/* q4_k / q5_k's 12 bytes of 6-bit scales and mins, 4 bytes at a time:
 * qb_scale_min_k4's bytes (sub-blocks 0-3 the low 6 bits of bytes 0-3 and
 * 4-7; 4-7 a nibble of bytes 8-11 below the top 2 bits of bytes 0-3 / 4-7) */
AVX2_INLINE void scales_mins_k4(const uint8_t *p, uint8_t sc[8], uint8_t mn[8]) {
  uint32_t u0, u1, u2;
  __builtin_memcpy(&u0, p, 4);
  __builtin_memcpy(&u1, p + 4, 4);
  __builtin_memcpy(&u2, p + 8, 4);
  uint32_t s03 = u0 & 0x3f3f3f3fu, m03 = u1 & 0x3f3f3f3fu;
  uint32_t s47 = (u2 & 0x0f0f0f0fu) | ((u0 >> 6) & 0x03030303u) << 4;
  uint32_t m47 = ((u2 >> 4) & 0x0f0f0f0fu) | ((u1 >> 6) & 0x03030303u) << 4;
  __builtin_memcpy(sc, &s03, 4);
  __builtin_memcpy(sc + 4, &s47, 4);
  __builtin_memcpy(mn, &m03, 4);
  __builtin_memcpy(mn + 4, &m47, 4);
}

/* q4_k (qh NULL) and q5_k: isum and msum as qb_dot_k45 (u8 weights <= 31
 * against |a| <= 127, s16 pairs below 2^13; msum as sub-block min times
 * each of its two bsums, |bsum| <= 2032), the term exactly qb_dot's */
AVX2_INLINE float block_k45(const uint8_t *x, const int8_t *qa, const int16_t *bsb, float da,
                            int five) {
  const __m256i m4 = _mm256_set1_epi8(0xf), sixteen = _mm256_set1_epi8(16);
  const uint8_t *qs = x + (five ? 48 : 16);
  uint8_t sc[8], mn[8];
  scales_mins_k4(x + 4, sc, mn);
  __m128i mb = _mm_loadl_epi64((const __m128i *)(const void *)mn);
  __m256i mins2 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mb, mb)); /* m0 m0 m1 m1 ... */
  int32_t msum = hsum_epi32(_mm256_madd_epi16(LD256(bsb), mins2));
  __m256i acc = _mm256_setzero_si256(), hb = five ? LD256(x + 16) : _mm256_setzero_si256();
  for (int c = 0; c < 4; c++) {
    __m256i bits = LD256(qs + 32 * c);
    __m256i lo = _mm256_and_si256(bits, m4);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
    if (five) {
      __m256i b0 = _mm256_set1_epi8((char)(1 << (2 * c)));
      __m256i b1 = _mm256_set1_epi8((char)(2 << (2 * c)));
      __m256i h0 = _mm256_cmpeq_epi8(_mm256_and_si256(hb, b0), b0);
      __m256i h1 = _mm256_cmpeq_epi8(_mm256_and_si256(hb, b1), b1);
      lo = _mm256_or_si256(lo, _mm256_and_si256(h0, sixteen));
      hi = _mm256_or_si256(hi, _mm256_and_si256(h1, sixteen));
    }
    __m256i plo = _mm256_maddubs_epi16(lo, LD256(qa + 64 * c));
    __m256i phi = _mm256_maddubs_epi16(hi, LD256(qa + 64 * c + 32));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * c])));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * c + 1])));
  }
  int32_t isum = hsum_epi32(acc);
  float dd = f16_x86(x) * da, dm = f16_x86(x + 2) * da;
  float hi = dd * (float)isum, lo = dm * (float)msum;
  return hi - lo;
}

/* q6_k: sum of sc * q6u * a over the block (q6u = q6 + 32 in [0, 63], s16
 * pairs below 2 * 63 * 127), less 32 * sum of sc * bsum: qb_dot_q6_k's isum */
AVX2_INLINE float block_q6_k(const uint8_t *x, const int8_t *qa, const int16_t *bsb, float da) {
  const __m256i m4 = _mm256_set1_epi8(0xf), m3 = _mm256_set1_epi8(3),
                m30 = _mm256_set1_epi8(0x30);
  const int8_t *sc = (const int8_t *)(x + 192);
  int32_t corr = 0;
  for (int g = 0; g < 16; g++) corr += sc[g] * bsb[g];
  __m256i acc = _mm256_setzero_si256();
  for (int h = 0; h < 2; h++) {
    __m256i l0 = LD256(x + 64 * h), l1 = LD256(x + 64 * h + 32), hb = LD256(x + 128 + 32 * h);
    __m256i qv[4] = {
        _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m3), 4)),
        _mm256_or_si256(_mm256_and_si256(l1, m4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m3), 4)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hb, m30)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                        _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30)),
    };
    for (int j = 0; j < 4; j++) {
      __m256i p = _mm256_maddubs_epi16(qv[j], LD256(qa + 128 * h + 32 * j));
      __m256i scv = _mm256_set_m128i(_mm_set1_epi16(sc[8 * h + 2 * j + 1]),
                                     _mm_set1_epi16(sc[8 * h + 2 * j]));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, scv));
    }
  }
  int32_t isum = hsum_epi32(acc) - 32 * corr;
  float dd = f16_x86(x + 208) * da;
  return dd * (float)isum;
}

/* Software prefetch PF bytes ahead in W: the hardware's prefetchers alone
 * keep too few lines in flight for one stream while the block math runs (a
 * decode step then takes the memory time plus the compute time). One
 * prefetch per line of W (the rows of a part follow each other in memory,
 * so the stream runs on into the next row). */
enum { PF = 3072 };
AVX2_INLINE void prefetch_block(const uint8_t *x, int64_t bb) {
  const char *p = (const char *)x + PF;
  if (bb < 64) {
    if (((uintptr_t)p & 63) < (uintptr_t)bb) _mm_prefetch(p, _MM_HINT_T0);
  } else {
    for (int64_t o = 0; o < bb; o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
  }
}

/* q4_0 and q8_0: two chains of 8 f32 lanes (blocks alternating) */
#define LANES_DOT(name, fn_attr, BB, block)                                                   \
  fn_attr static float dot_##name(const uint8_t *w, int64_t nb, const int8_t *q,             \
                                  const float *d, const int16_t *bs) {                       \
    (void)bs;                                                                                \
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};                              \
    for (int64_t b = 0; b < nb; b++) {                                                       \
      prefetch_block(w + (BB) * b, BB);                                                      \
      acc[b & 1] = block(w + (BB) * b, q + 32 * b, d[b], acc[b & 1]);                         \
    }                                                                                        \
    return hsum_ps(_mm256_add_ps(acc[0], acc[1]));                                           \
  }

/* the K-quants: one f32 chain of block terms, as the generic path */
#define AVX2_TERMS(name, BB, block_call)                                                     \
  AVX2_FN static float dot_##name(const uint8_t *w, int64_t nb, const int8_t *q,             \
                                  const float *d, const int16_t *bs) {                       \
    float s = 0;                                                                             \
    for (int64_t b = 0; b < nb; b++) {                                                       \
      const uint8_t *x = w + (BB) * b;                                                       \
      const int8_t *qa = q + 256 * b;                                                        \
      const int16_t *bsb = bs + 16 * b;                                                      \
      prefetch_block(x, BB);                                                                 \
      s += block_call;                                                                       \
    }                                                                                        \
    return s;                                                                                \
  }

LANES_DOT(q4_0_avx2, AVX2_FN, 18, block_q4_0)
LANES_DOT(q8_0_avx2, AVX2_FN, 34, block_q8_0)
LANES_DOT(q4_0_avxvnni, VNNI_FN, 18, block_q4_0_vnni)
LANES_DOT(q8_0_avxvnni, VNNI_FN, 34, block_q8_0_vnni)
AVX2_TERMS(q4_k_avx2, 144, block_k45(x, qa, bsb, d[b], 0))
AVX2_TERMS(q5_k_avx2, 176, block_k45(x, qa, bsb, d[b], 1))
AVX2_TERMS(q6_k_avx2, 210, block_q6_k(x, qa, bsb, d[b]))

QMATMUL_ENTRY(q4_0_avx2, QB_Q4_0, dot_q4_0_avx2)
QMATMUL_ENTRY(q8_0_avx2, QB_Q8_0, dot_q8_0_avx2)
QMATMUL_ENTRY(q4_k_avx2, QB_Q4_K, dot_q4_k_avx2)
QMATMUL_ENTRY(q5_k_avx2, QB_Q5_K, dot_q5_k_avx2)
QMATMUL_ENTRY(q6_k_avx2, QB_Q6_K, dot_q6_k_avx2)
QMATMUL_ENTRY(q4_0_avxvnni, QB_Q4_0, dot_q4_0_avxvnni)
QMATMUL_ENTRY(q8_0_avxvnni, QB_Q8_0, dot_q8_0_avxvnni)
QMATMUL_ENTRY(q4_k_avxvnni, QB_Q4_K, dot_q4_k_avx2)
QMATMUL_ENTRY(q5_k_avxvnni, QB_Q5_K, dot_q5_k_avx2)
QMATMUL_ENTRY(q6_k_avxvnni, QB_Q6_K, dot_q6_k_avx2)
#endif

#pragma clang fp contract(on)
