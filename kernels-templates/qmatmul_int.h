/* qmatmul_int.h - mo.qmatmul's kernels for the qmatmul template
 * (qmatmul.c includes it once, at its end): the lhs quantized per block as
 * ir/qblock.h defines (Q8_0 / Q8_K), integer dot products per block, then
 * the f32 scaling. kiln_qmatmul_E (generic: qblock.h's qb_dot, the
 * interpreter's terms bit for bit) and kiln_qmatmul_E_avx2 (x86-64 with AVX2
 * and F16C: vpmaddubsw / vpmaddwd) for each encoding E; qmatmul.c's header
 * says what they compute and how the work is split. The x86 q4_0 / q8_0
 * entries read two rows of W at once in a decode step (dot2_E).
 *
 * Assumes qmatmul.c's QBUF, MB, PBUF and WBLK and that K is whole
 * blocks. Freestanding (<immintrin.h> is the compiler's). No fma
 * contraction here: the terms are qblock.h's operations in qblock.h's
 * order. */
#pragma clang fp contract(off)

/* Where a pass's quantized lhs lies: q, each block's scale and bsums; row
 * r of a pass, `stride` columns apart, at r * stride, r * stride / 32 and
 * r * stride / 16. The 512-bit q4_0 entries (qmatmul_avx512.h) also keep
 * per-lane integer corrections and scales, 16 lanes per 128 elements, at
 * r * stride / 8. stride is a multiple of 256 (64-byte aligned rows). */
typedef struct lhs_buf {
  int8_t *q;
  float *d;
  int16_t *bs;
  int32_t *corr;
  float *dl;
} lhs_buf;

/* storage for CAP quantized elements of A, and its lhs_buf */
#define LHS_STORE(name, CAP)                                                                 \
  typedef struct name {                                                                      \
    int8_t q[CAP] __attribute__((aligned(64)));                                              \
    float d[(CAP) / 32];                                                                     \
    int16_t bs[(CAP) / 16];                                                                  \
    int32_t corr[(CAP) / 8] __attribute__((aligned(64)));                                    \
    float dl[(CAP) / 8] __attribute__((aligned(64)));                                        \
  } name;
LHS_STORE(lhs_store_decode, QBUF)
LHS_STORE(lhs_store_prefill, PBUF)
#define LHS_VIEW(S) ((lhs_buf){(S).q, (S).d, (S).bs, (S).corr, (S).dl})

/* one row of a pass of the quantized lhs, as its dot function reads it */
typedef struct lhs_row {
  const int8_t *q;
  const float *d;
  const int16_t *bs;
  const int32_t *corr;
  const float *dl;
} lhs_row;

/* the sum over nb blocks of row w of W of the block terms against a */
typedef float (*row_dot_fn)(const uint8_t *w, int64_t nb, const lhs_row *a);

/* the same for rows 2 <= R <= MB of the lhs at once (row r's sum into
 * out[r], each as row_dot_fn's), W's row read once for all of them */
typedef void (*rows_dot_fn)(const uint8_t *w, int64_t nb, const lhs_row *a, int64_t R,
                            float *out);

/* row_dot_fn for two rows of W (w0, w1) at once, their sums into out[0],
 * out[1]: one lhs row meets two streams of W in one loop */
typedef void (*pair_dot_fn)(const uint8_t *w0, const uint8_t *w1, int64_t nb, const lhs_row *a,
                            float *out);

/* quantizes nb blocks of a (one row of A, from a pass's first column) into
 * row r of L, rows of the pass kc columns apart */
typedef void (*lhs_pack_fn)(const lhs_buf *L, int64_t r, int64_t kc, const float *a, int64_t nb);

/* qblock.h's layout: blocks in order, as qb_dot reads them */
static inline __attribute__((always_inline)) void
pack_plain(qb_encoding enc, const lhs_buf *L, int64_t r, int64_t kc, const float *a, int64_t nb) {
  const int64_t E = QB_ELEMS(enc);
  for (int64_t b = 0; b < nb; b++) {
    int64_t at = r * kc + b * E;
    L->d[r * kc / 32 + b] = qb_quantize_lhs(enc, a + b * E, &L->q[at], &L->bs[at / 16]);
  }
}

static void pack_q8_0(const lhs_buf *L, int64_t r, int64_t kc, const float *a, int64_t nb) {
  pack_plain(QB_Q4_0, L, r, kc, a, nb);
}

static void pack_q8_k(const lhs_buf *L, int64_t r, int64_t kc, const float *a, int64_t nb) {
  pack_plain(QB_Q4_K, L, r, kc, a, nb);
}

static inline __attribute__((always_inline)) float
row_dot_generic(qb_encoding enc, const uint8_t *w, int64_t nb, const lhs_row *a) {
  const int64_t E = QB_ELEMS(enc), BB = QB_BYTES(enc);
  float s = 0;
  for (int64_t b = 0; b < nb; b++)
    s += qb_dot(enc, w + b * BB, a->q + b * E, a->bs + b * E / 16, a->d[b]);
  return s;
}

#define GENERIC_DOT(name, enc)                                                               \
  static float dot_##name(const uint8_t *w, int64_t nb, const lhs_row *a) {                 \
    return row_dot_generic(enc, w, nb, a);                                                   \
  }
GENERIC_DOT(q4_0, QB_Q4_0)
GENERIC_DOT(q8_0, QB_Q8_0)
GENERIC_DOT(q4_k, QB_Q4_K)
GENERIC_DOT(q5_k, QB_Q5_K)
GENERIC_DOT(q6_k, QB_Q6_K)

/* row r of a pass (rows stride columns apart), from column k0 of it: d
 * holds one scale per block of E elements, from r * stride / 32 */
static inline __attribute__((always_inline)) lhs_row lhs_row_at(const lhs_buf *L, int64_t E,
                                                                  int64_t r, int64_t stride,
                                                                  int64_t k0) {
  const int64_t at = r * stride + k0;
  return (lhs_row){&L->q[at], &L->d[r * stride / 32 + k0 / E], &L->bs[at / 16],
                   &L->corr[at / 8], &L->dl[at / 8]};
}

/* a decode step: the lhs row QBUF columns a pass, W's rows in pairs when
 * the entry has a pair dot */
static inline __attribute__((always_inline)) void
qmatmul_decode(qb_encoding enc, lhs_pack_fn pack, row_dot_fn dot, pair_dot_fn dot2, int64_t K,
               const float *A, const uint8_t *W, float *C, int64_t n_lo,
               int64_t n_hi) {
  const int64_t E = QB_ELEMS(enc), BB = QB_BYTES(enc), rowbytes = K / E * BB, kc = QBUF;
  lhs_store_decode S;
  const lhs_buf L = LHS_VIEW(S);
  for (int64_t k0 = 0; k0 < K; k0 += kc) {
    int64_t nb = (K - k0 < kc ? K - k0 : kc) / E;
    pack(&L, 0, kc, A + k0, nb);
    const lhs_row a = lhs_row_at(&L, E, 0, kc, 0);
    int64_t n_first = n_lo;
    if (dot2) { /* rows n and n + h of W in one loop, the last odd one after */
      const int64_t h = (n_hi - n_lo) / 2;
      for (int64_t i = 0; i < h; i++) {
        const int64_t n0 = n_lo + i, n1 = n_lo + h + i;
        float s[2];
        dot2(W + n0 * rowbytes + k0 / E * BB, W + n1 * rowbytes + k0 / E * BB, nb, &a, s);
        C[n0] = k0 ? C[n0] + s[0] : s[0];
        C[n1] = k0 ? C[n1] + s[1] : s[1];
      }
      n_first = n_lo + 2 * h;
    }
    for (int64_t n = n_first; n < n_hi; n++) {
      float s = dot(W + n * rowbytes + k0 / E * BB, nb, &a);
      C[n] = k0 ? C[n] + s : s;
    }
  }
}

/* a prefill (M > 1): groups of rows of A quantized once per pass of up to
 * PBUF elements (qmatmul.c). W's pass is read a block of about WBLK bytes
 * at a time, from memory once per group: the block (in L2) meets each
 * MB-row tile of the group, a chunk of QBUF / MB columns at a time (the
 * tile's chunk, about 32 KB, in L1 for the whole block) */
static inline __attribute__((always_inline)) void
qmatmul_prefill(qb_encoding enc, lhs_pack_fn pack, row_dot_fn dot, rows_dot_fn dots, int64_t M,
                int64_t N, int64_t K, const float *A, const uint8_t *W, float *C, int64_t n_lo,
                int64_t n_hi) {
  const int64_t E = QB_ELEMS(enc), BB = QB_BYTES(enc), rowbytes = K / E * BB, kc = QBUF / MB;
  const int64_t whole = (K + 255) / 256 * 256; /* all of K, rounded to whole 256s */
  const int64_t stride = whole * MB <= PBUF ? whole : PBUF / MB / kc * kc;
  const int64_t fit = PBUF / stride / MB * MB, mtiles = (M + MB - 1) / MB * MB;
  const int64_t group = fit < mtiles ? fit : mtiles; /* rows of A per group */
  lhs_store_prefill S;
  const lhs_buf L = LHS_VIEW(S);
  for (int64_t g0 = 0; g0 < M; g0 += group) {
    const int64_t gm = M - g0 < group ? M - g0 : group;
    for (int64_t k1 = 0; k1 < K; k1 += stride) {
      const int64_t kw = K - k1 < stride ? K - k1 : stride;
      for (int64_t r = 0; r < gm; r++) pack(&L, r, stride, A + (g0 + r) * K + k1, kw / E);
      const int64_t passbytes = kw / E * BB, nblk = WBLK / passbytes ? WBLK / passbytes : 1;
      for (int64_t n0 = n_lo; n0 < n_hi; n0 += nblk) { /* a block of W, from L2 after a tile */
        const int64_t n1 = n_hi - n0 < nblk ? n_hi : n0 + nblk;
        for (int64_t m0 = 0; m0 < gm; m0 += MB) {
          const int64_t mb = gm - m0 < MB ? gm - m0 : MB;
          for (int64_t k0 = 0; k0 < kw; k0 += kc) { /* a tile's chunk, from L1 */
            const int64_t nb = (kw - k0 < kc ? kw - k0 : kc) / E;
            lhs_row rows_of[MB];
            for (int64_t r = 0; r < mb; r++) rows_of[r] = lhs_row_at(&L, E, m0 + r, stride, k0);
            for (int64_t n = n0; n < n1; n++) {
              const uint8_t *w = W + n * rowbytes + (k1 + k0) / E * BB;
              float s[MB];
              if (dots && mb > 1) {
                dots(w, nb, rows_of, mb, s);
              } else {
                for (int64_t r = 0; r < mb; r++) s[r] = dot(w, nb, &rows_of[r]);
              }
              for (int64_t r = 0; r < mb; r++) {
                float *c = &C[(g0 + m0 + r) * N + n];
                *c = k1 + k0 ? *c + s[r] : s[r];
              }
            }
          }
        }
      }
    }
  }
}

static inline __attribute__((always_inline)) void
qmatmul_int(qb_encoding enc, lhs_pack_fn pack, row_dot_fn dot, rows_dot_fn dots, pair_dot_fn dot2,
            int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W, float *C,
            int64_t n_lo, int64_t n_hi) {
  if (K == 0) {
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = n_lo; n < n_hi; n++) C[m * N + n] = 0;
  } else if (M == 1) {
    qmatmul_decode(enc, pack, dot, dot2, K, A, W, C, n_lo, n_hi);
  } else if (M > 1) {
    qmatmul_prefill(enc, pack, dot, dots, M, N, K, A, W, C, n_lo, n_hi);
  }
}

/* an entry with qblock.h's lhs layout (pack_plain); with the lhs packed
 * by `pack`; with a dot of several lhs rows at once as well */
#define QMATMUL_ENTRY(name, enc, dot) QMATMUL_PACKED_ENTRY(name, enc, PLAIN_PACK(enc), dot)
#define PLAIN_PACK(enc) (QB_LHS_IS_K(enc) ? pack_q8_k : pack_q8_0)
#define QMATMUL_PACKED_ENTRY(name, enc, pack, dot) QMATMUL_ROWS_ENTRY(name, enc, pack, dot, 0, 0)
#define QMATMUL_ROWS_ENTRY(name, enc, pack, dot, dots, dot2)                                   \
  void kiln_qmatmul_##name(int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W, \
                           float *C, int64_t n_lo, int64_t n_hi);                          \
  void kiln_qmatmul_##name(int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W, \
                           float *C, int64_t n_lo, int64_t n_hi) {                         \
    qmatmul_int(enc, pack, dot, dots, dot2, M, N, K, A, W, C, n_lo, n_hi);                 \
  }
QMATMUL_ENTRY(q4_0, QB_Q4_0, dot_q4_0)
QMATMUL_ENTRY(q8_0, QB_Q8_0, dot_q8_0)
QMATMUL_ENTRY(q4_k, QB_Q4_K, dot_q4_k)
QMATMUL_ENTRY(q5_k, QB_Q5_K, dot_q5_k)
QMATMUL_ENTRY(q6_k, QB_Q6_K, dot_q6_k)

#if defined(__x86_64__)
#include <immintrin.h>

/* q4_0's lhs for the x86 entries, a group of four blocks (128 values) at a
 * time: q as the four blocks' first 16 values then their last 16 (the
 * order of the blocks' low, then high, nibbles gathered in one register);
 * lane j of block i (bytes 4 j to 4 j + 3 of its first and of its last 16)
 * has corr = -8 times the sum of those 8 values, so an int32 lane of
 * nibble x value products started from corr ends as the exact sum of the
 * lane's (q4 - 8) * qa, and dl = the block's da. The 256-bit entries read
 * a group as two halves of two blocks. A group short of four blocks is
 * padded with zeros, whose lanes contribute 0. */
static void pack_q4_0_lanes(const lhs_buf *L, int64_t r, int64_t kc, const float *a, int64_t nb) {
  int8_t *q = &L->q[r * kc];
  int32_t *corr = &L->corr[r * kc / 8];
  float *dl = &L->dl[r * kc / 8];
  for (int64_t g = 0; g < (nb + 3) / 4; g++) {
    for (int i = 0; i < 4; i++) {
      int8_t blk[32];
      float da = 0;
      if (4 * g + i < nb) {
        da = qb_quantize_q8_0(a + 32 * (4 * g + i), blk);
      } else {
        for (int l = 0; l < 32; l++) blk[l] = 0;
      }
      for (int l = 0; l < 16; l++) {
        q[128 * g + 16 * i + l] = blk[l];
        q[128 * g + 64 + 16 * i + l] = blk[16 + l];
      }
      for (int j = 0; j < 4; j++) {
        int32_t sum = 0;
        for (int l = 0; l < 4; l++) sum += blk[4 * j + l] + blk[16 + 4 * j + l];
        corr[16 * g + 4 * i + j] = -8 * sum;
        dl[16 * g + 4 * i + j] = da;
      }
    }
  }
}

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

/* q8_0 blocks: acc plus the 8 lanes' partial int32 sums times dw * da */
AVX2_INLINE __m256 block_q8_0(const uint8_t *x, const int8_t *qa, float da, __m256 acc) {
  __m256i s = dot_s8(LD256(x + 2), LD256(qa));
  return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(f16_x86(x) * da)));
}

/* The same with AVX-VNNI's vpdpbusd (u8 x s8, four products summed into
 * int32, no saturation) and FMA: q8_0 as |w| times a with w's sign. */
#define VNNI_INLINE static inline __attribute__((target("avx2,f16c,fma,avxvnni"), always_inline))
#define VNNI_FN __attribute__((target("avx2,f16c,fma,avxvnni")))

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

/* q4_0 against pack_q4_0_lanes' lhs, two blocks (36 bytes: half p & 1 of
 * group p >> 1) per step (only the first when two is 0: a row's last,
 * odd block): their nibbles in one register, the low ones dotted with the
 * group's first 64 values, the high ones with the last 64; each lane's
 * exact int32 (from its corr) scaled by its block's dw * da. */
AVX2_INLINE __m256i q4_0_pair_nibbles(const uint8_t *x, int two) {
  __m128i n0 = _mm_loadu_si128((const __m128i *)(const void *)(x + 2));
  __m128i n1 = two ? _mm_loadu_si128((const __m128i *)(const void *)(x + 20)) : _mm_setzero_si128();
  return _mm256_set_m128i(n1, n0);
}

/* [dw0 x 4, dw1 x 4] (dw1 = 0 without a second block) times the lanes' da */
AVX2_INLINE __m256 q4_0_pair_scales(const uint8_t *x, int two, const float *dl) {
  uint32_t h = (uint32_t)x[0] | (uint32_t)x[1] << 8;
  if (two) h |= ((uint32_t)x[18] | (uint32_t)x[19] << 8) << 16;
  __m128i v = _mm_cvtsi32_si128((int)h);
  v = _mm_unpacklo_epi16(v, v);
  v = _mm_unpacklo_epi32(v, v);
  return _mm256_mul_ps(_mm256_cvtph_ps(v), _mm256_load_ps(dl));
}

/* pair p's nibbles (low and high, as u8), its lhs values and its lanes'
 * offset in corr / dl */
AVX2_INLINE const int8_t *q4_0_pair(const uint8_t *x, int two, const lhs_row *a, int64_t p,
                                    __m256i *lo, __m256i *hi, int64_t *lane) {
  const __m256i m4 = _mm256_set1_epi8(0xf);
  __m256i nib = q4_0_pair_nibbles(x, two);
  *lo = _mm256_and_si256(nib, m4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(nib, 4), m4);
  *lane = 16 * (p >> 1) + 8 * (p & 1);
  return a->q + 128 * (p >> 1) + 32 * (p & 1);
}

/* vpmaddubsw's s16 pairs of nibble x value stay below 2 * 15 * 127, two
 * of them summed below 2^13 */
AVX2_INLINE __m256 step_q4_0_avx2(const uint8_t *x, int two, const lhs_row *a, int64_t p,
                                  __m256 acc) {
  __m256i lo, hi;
  int64_t lane;
  const int8_t *q = q4_0_pair(x, two, a, p, &lo, &hi, &lane);
  __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, LD256(q)),
                                 _mm256_maddubs_epi16(hi, LD256(q + 64)));
  __m256i s = _mm256_add_epi32(_mm256_madd_epi16(s16, _mm256_set1_epi16(1)),
                               _mm256_load_si256((const __m256i *)(const void *)(a->corr + lane)));
  return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(s),
                                          q4_0_pair_scales(x, two, a->dl + lane)));
}

VNNI_INLINE __m256 step_q4_0_vnni(const uint8_t *x, int two, const lhs_row *a, int64_t p,
                                  __m256 acc) {
  __m256i lo, hi;
  int64_t lane;
  const int8_t *q = q4_0_pair(x, two, a, p, &lo, &hi, &lane);
  __m256i s = _mm256_load_si256((const __m256i *)(const void *)(a->corr + lane));
  s = _mm256_dpbusd_avx_epi32(s, lo, LD256(q));
  s = _mm256_dpbusd_avx_epi32(s, hi, LD256(q + 64));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), q4_0_pair_scales(x, two, a->dl + lane), acc);
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

/* A decode step's two streams of W (the driver's pair_dot_fn: rows n and
 * n + h of a part) are prefetched PF_L2 bytes ahead into L2, as the 512-bit
 * entries do (qmatmul_avx512.h): with one stream and prefetcht0 3 KB ahead
 * q4_0 / q8_0 ran well below the triad on AVX-512 hosts. One prefetch per
 * line: only a block in which a line of the far stream begins issues one. */
enum { PF_L2 = 16384 };
AVX2_INLINE void prefetch_l2_block(const uint8_t *x, int64_t bb) {
  const char *p = (const char *)x + PF_L2;
  if (((uintptr_t)p & 63) < (uintptr_t)bb) _mm_prefetch(p, _MM_HINT_T2);
}

/* q4_0 (P rows of W: one, or a decode step's two streams): per row two
 * chains of 8 f32 lanes (pairs of blocks alternating) */
#define PAIRS_DOT(name, fn_attr, inline_attr, step)                                           \
  inline_attr void rows_##name(const uint8_t *const *w, int P, int64_t nb, const lhs_row *a, \
                               float *out) {                                                 \
    __m256 acc[2][2];                                                                        \
    for (int r = 0; r < P; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();                 \
    int64_t p = 0;                                                                           \
    for (; 2 * p + 2 <= nb; p++)                                                             \
      for (int r = 0; r < P; r++) {                                                          \
        if (P == 1) prefetch_block(w[r] + 36 * p, 36);                                       \
        else prefetch_l2_block(w[r] + 36 * p, 36);                                           \
        acc[r][p & 1] = step(w[r] + 36 * p, 1, a, p, acc[r][p & 1]);                         \
      }                                                                                      \
    for (int r = 0; (nb & 1) && r < P; r++)                                                  \
      acc[r][p & 1] = step(w[r] + 36 * p, 0, a, p, acc[r][p & 1]);                           \
    for (int r = 0; r < P; r++) out[r] = hsum_ps(_mm256_add_ps(acc[r][0], acc[r][1]));       \
  }                                                                                          \
  ROWS_DOTS(name, fn_attr)

/* q8_0 (P rows of W as above): per row two chains of 8 f32 lanes (blocks
 * alternating) */
#define LANES_DOT(name, fn_attr, inline_attr, BB, block)                                      \
  inline_attr void rows_##name(const uint8_t *const *w, int P, int64_t nb, const lhs_row *a, \
                               float *out) {                                                 \
    const int8_t *q = a->q;                                                                  \
    const float *d = a->d;                                                                   \
    __m256 acc[2][2];                                                                        \
    for (int r = 0; r < P; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();                 \
    for (int64_t b = 0; b < nb; b++)                                                         \
      for (int r = 0; r < P; r++) {                                                          \
        if (P == 1) prefetch_block(w[r] + (BB) * b, BB);                                     \
        else prefetch_l2_block(w[r] + (BB) * b, BB);                                         \
        acc[r][b & 1] = block(w[r] + (BB) * b, q + 32 * b, d[b], acc[r][b & 1]);              \
      }                                                                                      \
    for (int r = 0; r < P; r++) out[r] = hsum_ps(_mm256_add_ps(acc[r][0], acc[r][1]));       \
  }                                                                                          \
  ROWS_DOTS(name, fn_attr)

/* dot_NAME (one row of W) and dot2_NAME (two) over rows_NAME, P constant in
 * each: every row's terms added in the same order either way */
#define ROWS_DOTS(name, fn_attr)                                                             \
  fn_attr static float dot_##name(const uint8_t *w, int64_t nb, const lhs_row *a) {          \
    float out;                                                                               \
    rows_##name(&w, 1, nb, a, &out);                                                         \
    return out;                                                                              \
  }                                                                                          \
  fn_attr static void dot2_##name(const uint8_t *w0, const uint8_t *w1, int64_t nb,          \
                                  const lhs_row *a, float *out) {                            \
    const uint8_t *w[2] = {w0, w1};                                                          \
    rows_##name(w, 2, nb, a, out);                                                           \
  }

/* the K-quants: one f32 chain of block terms, as the generic path */
#define AVX2_TERMS(name, BB, block_call)                                                     \
  AVX2_FN static float dot_##name(const uint8_t *w, int64_t nb, const lhs_row *a) {          \
    const int8_t *q = a->q;                                                                  \
    const float *d = a->d;                                                                   \
    const int16_t *bs = a->bs;                                                               \
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

PAIRS_DOT(q4_0_avx2, AVX2_FN, AVX2_INLINE, step_q4_0_avx2)
LANES_DOT(q8_0_avx2, AVX2_FN, AVX2_INLINE, 34, block_q8_0)
PAIRS_DOT(q4_0_avxvnni, VNNI_FN, VNNI_INLINE, step_q4_0_vnni)
LANES_DOT(q8_0_avxvnni, VNNI_FN, VNNI_INLINE, 34, block_q8_0_vnni)
AVX2_TERMS(q4_k_avx2, 144, block_k45(x, qa, bsb, d[b], 0))
AVX2_TERMS(q5_k_avx2, 176, block_k45(x, qa, bsb, d[b], 1))
AVX2_TERMS(q6_k_avx2, 210, block_q6_k(x, qa, bsb, d[b]))

QMATMUL_ROWS_ENTRY(q4_0_avx2, QB_Q4_0, pack_q4_0_lanes, dot_q4_0_avx2, 0, dot2_q4_0_avx2)
QMATMUL_ROWS_ENTRY(q8_0_avx2, QB_Q8_0, pack_q8_0, dot_q8_0_avx2, 0, dot2_q8_0_avx2)
QMATMUL_ENTRY(q4_k_avx2, QB_Q4_K, dot_q4_k_avx2)
QMATMUL_ENTRY(q5_k_avx2, QB_Q5_K, dot_q5_k_avx2)
QMATMUL_ENTRY(q6_k_avx2, QB_Q6_K, dot_q6_k_avx2)
QMATMUL_ROWS_ENTRY(q4_0_avxvnni, QB_Q4_0, pack_q4_0_lanes, dot_q4_0_avxvnni, 0,
                   dot2_q4_0_avxvnni)
QMATMUL_ROWS_ENTRY(q8_0_avxvnni, QB_Q8_0, pack_q8_0, dot_q8_0_avxvnni, 0, dot2_q8_0_avxvnni)
QMATMUL_ENTRY(q4_k_avxvnni, QB_Q4_K, dot_q4_k_avx2)
QMATMUL_ENTRY(q5_k_avxvnni, QB_Q5_K, dot_q5_k_avx2)
QMATMUL_ENTRY(q6_k_avxvnni, QB_Q6_K, dot_q6_k_avx2)
#endif

#pragma clang fp contract(on)
