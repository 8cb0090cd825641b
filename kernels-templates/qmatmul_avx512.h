/* qmatmul_avx512.h - mo.qmatmul's 512-bit entries for the qmatmul template
 * (qmatmul.c includes it once, after qmatmul_int.h, whose driver, lhs
 * buffer and helpers it uses): kiln_qmatmul_E_avx512 for x86-64 with
 * AVX512F / BW / VL, AVX512-VNNI (vpdpbusd, vpdpwssd), AVX512-VBMI
 * (vpermt2b), F16C and FMA.
 *
 * A decode step streams W once; these entries make the block math cheap
 * enough that the stream, not the arithmetic, sets the pace:
 *  - q4_0: four blocks (72 bytes) per step. Their 64 bytes of nibbles are
 *    gathered into one register by vpermt2b, the low and high nibbles
 *    dotted by two vpdpbusd against the lhs, which pack_q4_0_lanes
 *    (qmatmul_int.h) stores in that order. The int32 accumulator
 *    starts from a per-lane correction, -8 times the sum
 *    of the lane's 8 lhs values, so each lane ends as the exact sum of its
 *    8 products (q4 - 8) * qa, which is then scaled by its block's
 *    dw * da as the AVX2 entries scale theirs: a term within a rounding of
 *    qb_dot's (what test_qmatmul_template allows for q4_0 / q8_0).
 *  - q4_k, q5_k, q6_k: a block per step, two 64-byte registers of nibbles
 *    at a time; vpmaddubsw then vpdpwssd with each 16-element group's
 *    scale gives the block's isum as an exact int32 (and q4_k / q5_k's
 *    msum, q6_k's -32 correction, from the bsums), then qb_dot's f32
 *    operations in qb_dot's order: the same bits as the generic entries.
 *    q4_k / q5_k's lhs is stored with each 64-value chunk's sub-blocks
 *    interleaved (0 2 1 3 4 6 5 7) so one register of nibbles meets its
 *    lhs in one load.
 *  - q8_0: two blocks (64 quants) per step, |w| against the lhs with w's
 *    sign (vpdpbusd), each lane's exact int32 scaled by its block's
 *    dw * da, as q4_0.
 * Besides the one-row dot (dot_E) the driver gets, for every encoding, a
 * dot of two rows of W in one loop (dot2_E: a decode step keeps two
 * streams of W in flight, rows n and n + h of its part) and a dot of a
 * pass's 2 to 4 lhs rows that unpacks each block once (dots_E: a
 * prefill); all of them add each row's terms as the
 * one-row dot does, so a result does not depend on M or on the split.
 * No saturation: q4 / q5 / q6 values <= 63 against |qa| <= 127 keep each
 * s16 pair of vpmaddubsw below 2^14.
 *
 * Software prefetch runs PF_L2 bytes ahead of the step, every line of it
 * (prefetches never fault: past the end of W they are dropped). */
#if defined(__x86_64__)
#pragma clang fp contract(off) /* qb_dot's f32 operations, none fused */

#define X512_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,f16c,fma")))
#define X512_INLINE                                                                          \
  static inline __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,f16c," \
                                      "fma"),                                                \
                               always_inline))

#define LD512(p) _mm512_loadu_si512((const void *)(p))

/* PF_L2 (16 KB) ahead, into L2 (prefetcht2): on this project's Sapphire
 * Rapids host, under load, the GEMVs of 33 MB weights ran at 0.77-1.66x
 * the triad with it against 0.67-0.71x with prefetcht0 4 KB ahead (one
 * process, the two alternating); a prefetch to L1 holds one of the core's
 * few fill buffers until its line arrives, which caps one stream's rate */
X512_INLINE void prefetch_span(const uint8_t *x, int64_t bytes) {
  const char *p = (const char *)x + PF_L2;
  for (int64_t o = 0; o < bytes; o += 64) _mm_prefetch(p + o, _MM_HINT_T2);
  _mm_prefetch(p + bytes - 1, _MM_HINT_T2);
}

/* ---- q4_0 ---- */

/* byte 16 i + j of the gathered nibbles is byte 18 i + 2 + j of four
 * blocks: from the load at x (indices < 64) or the one at x + 8 (64 + the
 * byte less 8), so each of vpermt2b's two tables is one unaligned load */
static const uint8_t Q4_0_NIBBLES[64] __attribute__((aligned(64))) = {
    2,   3,   4,   5,   6,   7,   8,   9,   10,  11,  12,  13,  14,  15,  16,  17,
    20,  21,  22,  23,  24,  25,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,
    38,  39,  40,  41,  42,  43,  44,  45,  46,  47,  48,  49,  50,  51,  52,  53,
    56,  57,  58,  59,  60,  61,  62,  63,  120, 121, 122, 123, 124, 125, 126, 127};

/* word 4 i + l (l < 4) is block i's f16 scale, word 9 i of the load at x */
static const uint16_t Q4_0_SCALES[32] __attribute__((aligned(64))) = {
    0, 0, 0, 0, 9, 9, 9, 9, 18, 18, 18, 18, 27, 27, 27, 27,
    0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  0,  0,  0,  0};

/* four blocks at x (bytes of them past `avail` not read): their low and
 * high nibbles (each lane's 4 bytes one block's) and each lane's dw */
X512_INLINE void unpack_q4_0(const uint8_t *x, int64_t avail, __m512i *lo, __m512i *hi,
                             __m512 *dw) {
  __m512i l0, l1;
  if (avail >= 72) {
    l0 = LD512(x);
    l1 = LD512(x + 8);
  } else { /* a row's last, short group: masked loads touch nothing past it */
    l0 = _mm512_maskz_loadu_epi8((1ull << avail) - 1, x);
    l1 = _mm512_maskz_loadu_epi8((1ull << (avail - 8)) - 1, x + 8);
  }
  __m512i nib = _mm512_permutex2var_epi8(l0, _mm512_load_si512(Q4_0_NIBBLES), l1);
  const __m512i m4 = _mm512_set1_epi8(0xf);
  *lo = _mm512_and_si512(nib, m4);
  *hi = _mm512_and_si512(_mm512_srli_epi16(nib, 4), m4);
  __m512i dw16 = _mm512_permutexvar_epi16(_mm512_load_si512(Q4_0_SCALES), l0);
  *dw = _mm512_cvtph_ps(_mm512_castsi512_si256(dw16));
}

/* rows R (1 to MB) of the lhs against P rows of W (w[0], and w[1] when P
 * is 2: two streams of W in one loop, R then 1), four blocks per step,
 * each step's weights unpacked once for every lhs row: per pair of rows,
 * two f32 chains (groups alternating) of each lane's exact int32 times its
 * block's dw * da; sums into out[p * R + r] */
X512_INLINE void dots_q4_0(const uint8_t *const *w, int P, int64_t nb, const lhs_row *a, int R,
                           float *out) {
  __m512 acc[MB][2];
  for (int i = 0; i < P * R; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const int64_t groups = nb / 4, tail = 18 * (nb % 4);
  for (int64_t g = 0; g < groups + (tail > 0); g++) {
    for (int p = 0; p < P; p++) {
      const uint8_t *x = w[p] + 72 * g;
      __m512i lo, hi;
      __m512 dw;
      if (g < groups) prefetch_span(x, 72);
      unpack_q4_0(x, g < groups ? 72 : tail, &lo, &hi, &dw);
      for (int r = 0; r < R; r++) {
        __m512i s = _mm512_load_si512(a[r].corr + 16 * g);
        s = _mm512_dpbusd_epi32(s, lo, _mm512_load_si512(a[r].q + 128 * g));
        s = _mm512_dpbusd_epi32(s, hi, _mm512_load_si512(a[r].q + 128 * g + 64));
        __m512 dd = _mm512_mul_ps(dw, _mm512_load_ps(a[r].dl + 16 * g));
        __m512 *c = &acc[p * R + r][g & 1];
        *c = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), dd, *c);
      }
    }
  }
  for (int i = 0; i < P * R; i++)
    out[i] = _mm512_reduce_add_ps(_mm512_add_ps(acc[i][0], acc[i][1]));
}

/* ---- the K-quants ---- */

/* word j of the result is word idx(j) of v, for the scale vectors: j / 16
 * picks one of two sub-blocks (q4_k / q5_k), j / 8 one of four groups
 * (q6_k) */
#define REP8(v) v, v, v, v, v, v, v, v
#define REP16(v) REP8(v), REP8(v)
static const uint16_t K45_SCALE_IDX[4][32] __attribute__((aligned(64))) = {
    {REP16(0), REP16(2)}, {REP16(1), REP16(3)}, {REP16(4), REP16(6)}, {REP16(5), REP16(7)}};
static const uint16_t Q6_K_SCALE_IDX[4][32] __attribute__((aligned(64))) = {
    {REP8(0), REP8(1), REP8(2), REP8(3)},
    {REP8(4), REP8(5), REP8(6), REP8(7)},
    {REP8(8), REP8(9), REP8(10), REP8(11)},
    {REP8(12), REP8(13), REP8(14), REP8(15)}};

/* the scales of a register's words: v's words picked by row i of table t */
#define SCALES_OF(t, i, v) _mm512_permutexvar_epi16(_mm512_load_si512((const void *)(t)[i]), (v))


/* q4_k / q5_k's lhs: Q8_K blocks, each chunk of 64 values with its two
 * sub-blocks of 32 interleaved (0 2 1 3 4 6 5 7: the order of a register
 * of two chunks' low nibbles, then their high ones); d and bs as qblock.h */
static void pack_q8_k_x512(const lhs_buf *L, int64_t r, int64_t kc, const float *a, int64_t nb) {
  pack_plain(QB_Q4_K, L, r, kc, a, nb);
  int8_t *q = &L->q[r * kc];
  for (int64_t b = 0; b < nb; b++) {
    int8_t t[32];
    for (int h = 0; h < 2; h++) { /* swap sub-blocks 1 and 2, 5 and 6 */
      int8_t *s1 = q + 256 * b + 128 * h + 32, *s2 = s1 + 32;
      for (int l = 0; l < 32; l++) t[l] = s1[l];
      for (int l = 0; l < 32; l++) s1[l] = s2[l];
      for (int l = 0; l < 32; l++) s2[l] = t[l];
    }
  }
}

/* the sum of v's 16 int32 lanes and of u's 8, each exact */
X512_INLINE void hsum2_epi32(__m512i v, __m256i u, int32_t *sv, int32_t *su) {
  __m256i v8 = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  __m256i h = _mm256_hadd_epi32(v8, u); /* v 01 23 u 01 23 | v 45 67 u 45 67 */
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  s = _mm_hadd_epi32(s, s); /* v, u, v, u */
  *sv = _mm_cvtsi128_si32(s);
  *su = _mm_extract_epi32(s, 1);
}

/* a K-quant block's weights unpacked for its dot with any lhs row: values
 * (as u8) of registers of 64, the s16 scale of each of their words, and
 * the f16 scales; q4_k / q5_k's mins doubled up (m0 m0 m1 m1 ...) against
 * the bsums, q6_k's scales as words (sc16) */
typedef struct kblock {
  __m512i lo[2], hi[2], sc[4];
  __m256i mins2, sc16;
  float dw, dmin;
} kblock;

/* q4_k (five = 0) and q5_k */
X512_INLINE void unpack_k45(const uint8_t *x, int five, kblock *u) {
  const __m512i m4 = _mm512_set1_epi8(0xf), sixteen = _mm512_set1_epi8(16);
  const uint8_t *qs = x + (five ? 48 : 16);
  uint8_t sc[8], mn[8];
  scales_mins_k4(x + 4, sc, mn);
  __m512i sc8 = _mm512_zextsi128_si512(
      _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)sc)));
  __m128i mb = _mm_loadl_epi64((const __m128i *)(const void *)mn);
  u->mins2 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mb, mb));
  __m512i hb = five ? _mm512_broadcast_i64x4(LD256(x + 16)) : _mm512_setzero_si512();
  for (int p = 0; p < 2; p++) { /* chunks 2p and 2p + 1 */
    __m512i bits = LD512(qs + 64 * p);
    __m512i lo = _mm512_and_si512(bits, m4);
    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
    if (five) { /* bit 2c (low nibbles) and 2c + 1 (high) of qh tops chunk c's */
      __m512i blo = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (4 * p))),
                                       _mm256_set1_epi8((char)(1 << (4 * p + 2))), 1);
      __m512i bhi = _mm512_add_epi8(blo, blo);
      lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(hb, blo), lo, sixteen);
      hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(hb, bhi), hi, sixteen);
    }
    u->lo[p] = lo;
    u->hi[p] = hi;
    u->sc[2 * p] = SCALES_OF(K45_SCALE_IDX, 2 * p, sc8);
    u->sc[2 * p + 1] = SCALES_OF(K45_SCALE_IDX, 2 * p + 1, sc8);
  }
  u->dw = f16_x86(x);
  u->dmin = f16_x86(x + 2);
}

/* the sum of each 16-value group's scale times its values times qa: the
 * registers of u against 256 lhs values in u's order */
X512_INLINE __m512i scaled_sums(const kblock *u, const int8_t *qa) {
  __m512i acc = _mm512_setzero_si512();
  for (int p = 0; p < 2; p++) {
    __m512i plo = _mm512_maddubs_epi16(u->lo[p], LD512(qa + 128 * p));
    __m512i phi = _mm512_maddubs_epi16(u->hi[p], LD512(qa + 128 * p + 64));
    acc = _mm512_dpwssd_epi32(acc, plo, u->sc[2 * p]);
    acc = _mm512_dpwssd_epi32(acc, phi, u->sc[2 * p + 1]);
  }
  return acc;
}

/* q4_k / q5_k: qb_dot_k45's isum and msum, and its term */
X512_INLINE float term_k45(const kblock *u, const int8_t *qa, const int16_t *bsb, float da) {
  int32_t isum, msum;
  hsum2_epi32(scaled_sums(u, qa), _mm256_madd_epi16(LD256(bsb), u->mins2), &isum, &msum);
  float dd = u->dw * da, dm = u->dmin * da;
  float hi = dd * (float)isum, lo = dm * (float)msum;
  return hi - lo;
}

/* q6_k: values q6u = q6 + 32 in [0, 63] */
X512_INLINE void unpack_q6_k(const uint8_t *x, kblock *u) {
  const __m512i m4 = _mm512_set1_epi8(0xf), m30 = _mm512_set1_epi8(0x30);
  u->sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(x + 192)));
  __m512i sc = _mm512_zextsi256_si512(u->sc16);
  for (int h = 0; h < 2; h++) {
    __m512i l = LD512(x + 64 * h);
    __m256i qh = LD256(x + 128 + 32 * h);
    /* the high bits of values l and l + 32 (low nibbles), l + 64 and
     * l + 96 (high): bits 0-1 / 4-5 of qh, and of qh >> 2 */
    __m512i hb = _mm512_inserti64x4(_mm512_zextsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
    u->lo[h] = _mm512_or_si512(_mm512_and_si512(l, m4),
                               _mm512_and_si512(_mm512_slli_epi16(hb, 4), m30));
    u->hi[h] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                               _mm512_and_si512(hb, m30));
    u->sc[2 * h] = SCALES_OF(Q6_K_SCALE_IDX, 2 * h, sc);
    u->sc[2 * h + 1] = SCALES_OF(Q6_K_SCALE_IDX, 2 * h + 1, sc);
  }
  u->dw = f16_x86(x + 208);
}

/* q6_k: the sum of sc * q6u * qa less 32 times the sum of sc * bsum, one
 * int32 reduction: qb_dot_q6_k's isum, and its term */
X512_INLINE float term_q6_k(const kblock *u, const int8_t *qa, const int16_t *bsb, float da) {
  __m256i corr = _mm256_madd_epi16(u->sc16, LD256(bsb));
  __m512i acc = _mm512_sub_epi32(scaled_sums(u, qa),
                                 _mm512_zextsi256_si512(_mm256_slli_epi32(corr, 5)));
  int32_t isum = _mm512_reduce_add_epi32(acc);
  float dd = u->dw * da;
  return dd * (float)isum;
}

/* rows R (1 to MB) of the lhs against P rows of W (as dots_q4_0), a block
 * per step, its weights unpacked once for every lhs row; per pair of rows
 * one f32 chain of block terms, as the generic path */
X512_INLINE void dots_k(qb_encoding enc, const uint8_t *const *w, int P, int64_t nb,
                        const lhs_row *a, int R, float *out) {
  const int64_t BB = QB_BYTES(enc);
  float s[MB] = {0};
  for (int64_t b = 0; b < nb; b++) {
    for (int p = 0; p < P; p++) {
      const uint8_t *x = w[p] + BB * b;
      kblock u;
      prefetch_span(x, BB);
      if (enc == QB_Q6_K) unpack_q6_k(x, &u);
      else unpack_k45(x, enc == QB_Q5_K, &u);
      for (int r = 0; r < R; r++) {
        const int8_t *qa = a[r].q + 256 * b;
        const int16_t *bsb = a[r].bs + 16 * b;
        float da = a[r].d[b];
        s[p * R + r] += enc == QB_Q6_K ? term_q6_k(&u, qa, bsb, da) : term_k45(&u, qa, bsb, da);
      }
    }
  }
  for (int i = 0; i < P * R; i++) out[i] = s[i];
}

/* an encoding's dot of one row (dot_E, the driver's row_dot_fn), of 2 to
 * MB lhs rows (dots_E, its rows_dot_fn) and of two rows of W (dot2_E, its
 * pair_dot_fn), each with P and R constants */
#define X512_DOTS(name, call)                                                                \
  X512_FN static float dot_##name(const uint8_t *w, int64_t nb, const lhs_row *a) {          \
    float out;                                                                               \
    call(&w, 1, nb, a, 1, &out);                                                             \
    return out;                                                                              \
  }                                                                                          \
  X512_FN static void dots_##name(const uint8_t *w, int64_t nb, const lhs_row *a, int64_t R, \
                                  float *out) {                                              \
    if (R == 2) call(&w, 1, nb, a, 2, out);                                                  \
    else if (R == 3) call(&w, 1, nb, a, 3, out);                                             \
    else call(&w, 1, nb, a, 4, out);                                                         \
  }                                                                                          \
  X512_FN static void dot2_##name(const uint8_t *w0, const uint8_t *w1, int64_t nb,          \
                                  const lhs_row *a, float *out) {                            \
    const uint8_t *w[2] = {w0, w1};                                                          \
    call(w, 2, nb, a, 1, out);                                                               \
  }
#define DOTS_Q4_K(w, P, nb, a, R, out) dots_k(QB_Q4_K, w, P, nb, a, R, out)
#define DOTS_Q5_K(w, P, nb, a, R, out) dots_k(QB_Q5_K, w, P, nb, a, R, out)
#define DOTS_Q6_K(w, P, nb, a, R, out) dots_k(QB_Q6_K, w, P, nb, a, R, out)
_Static_assert(MB == 4, "dots_E's cases cover R = 2 to MB, and 2 x 1 fits acc[MB]");

/* q8_0: two blocks (68 bytes) per step, their 64 quants in one register
 * as |w| (u8; 128 for -128) against the lhs with w's sign (vpdpbusd, in
 * AVX512-VL's / F's encoding, which hosts with AVX512-VNNI but no AVX-VNNI
 * (Ice Lake) also run), lanes 0-7 block 2s's, 8-15 block 2s + 1's; each
 * lane's exact int32 scaled by its block's dw * da into two f32 chains
 * (steps alternating). Rows R (1 to MB) of the lhs against P rows of W
 * (dots_q4_0's contract): a decode step keeps two streams of W in flight,
 * prefetched into L2 as q4_0's (the one-stream dot with prefetcht0 3 KB
 * ahead ran at 0.61-0.71x the triad). A row's odd last block is a step
 * of its own whose high half is zero. */
/* lo in lanes 0-7, hi in lanes 8-15 */
X512_INLINE __m512 halves_ps(float lo, float hi) {
  return _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(lo), _mm512_set1_ps(hi));
}

X512_INLINE void unpack_q8_0(const uint8_t *x, int two, __m512i *wa, __mmask64 *neg,
                             __m512 *dw) {
  __m256i b0 = LD256(x + 2), b1 = two ? LD256(x + 36) : _mm256_setzero_si256();
  __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(b0), b1, 1);
  *wa = _mm512_abs_epi8(wv);
  *neg = _mm512_movepi8_mask(wv);
  *dw = halves_ps(f16_x86(x), two ? f16_x86(x + 34) : 0.0f);
}

X512_INLINE void dots_q8_0(const uint8_t *const *w, int P, int64_t nb, const lhs_row *a, int R,
                           float *out) {
  __m512 acc[MB][2];
  const __m512i zero = _mm512_setzero_si512();
  for (int i = 0; i < P * R; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const int64_t steps = nb / 2;
  for (int64_t s = 0; s < steps + (nb & 1); s++) {
    const int two = s < steps;
    for (int p = 0; p < P; p++) {
      const uint8_t *x = w[p] + 68 * s;
      __m512i wa;
      __mmask64 neg;
      __m512 dw;
      if (two) prefetch_span(x, 68);
      unpack_q8_0(x, two, &wa, &neg, &dw);
      for (int r = 0; r < R; r++) {
        __m512i qa = two ? LD512(a[r].q + 64 * s)
                         : _mm512_zextsi256_si512(LD256(a[r].q + 64 * s));
        __m512i sq = _mm512_mask_sub_epi8(qa, neg, zero, qa);
        __m512i dot = _mm512_dpbusd_epi32(zero, wa, sq);
        __m512 dd = _mm512_mul_ps(dw, halves_ps(a[r].d[2 * s], two ? a[r].d[2 * s + 1] : 0.0f));
        __m512 *c = &acc[p * R + r][s & 1];
        *c = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), dd, *c);
      }
    }
  }
  for (int i = 0; i < P * R; i++)
    out[i] = _mm512_reduce_add_ps(_mm512_add_ps(acc[i][0], acc[i][1]));
}

X512_DOTS(q4_0_avx512, dots_q4_0)
X512_DOTS(q8_0_avx512, dots_q8_0)
X512_DOTS(q4_k_avx512, DOTS_Q4_K)
X512_DOTS(q5_k_avx512, DOTS_Q5_K)
X512_DOTS(q6_k_avx512, DOTS_Q6_K)

#define X512_ENTRY(name, enc, pack)                                                          \
  QMATMUL_ROWS_ENTRY(name##_avx512, enc, pack, dot_##name##_avx512, dots_##name##_avx512,   \
                     dot2_##name##_avx512)
X512_ENTRY(q4_0, QB_Q4_0, pack_q4_0_lanes)
X512_ENTRY(q8_0, QB_Q8_0, pack_q8_0)
X512_ENTRY(q4_k, QB_Q4_K, pack_q8_k_x512)
X512_ENTRY(q5_k, QB_Q5_K, pack_q8_k_x512)
X512_ENTRY(q6_k, QB_Q6_K, pack_q8_k)
#pragma clang fp contract(on)
#endif
