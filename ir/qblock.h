/* qblock.h - ggml's block-quantized weight layouts (GGUF's Q4_0, Q8_0, Q4_K,
 * Q5_K, Q6_K): sizes, the decoding of one block to floats, and qmatmul's
 * quantized lhs blocks and block dot products.
 *
 * Header-only and freestanding (stdint only, no libc). These scalar
 * decoders are the reference: the interpreter (ir/interp_quant.c) decodes
 * with them, and tests/test_gguf.c checks them against the `gguf` Python
 * package's dequantize on the files in tests/gguf/. Likewise qmatmul's lhs
 * quantization and block dot products below are the reference meaning of
 * mo.qmatmul, checked against a numpy oracle (tools/qmatmul_oracle.py). The
 * kernel template (kernels-templates/qmatmul.c, built without libc) uses
 * them as its generic path and has vector code of its own where the target
 * allows, checked against these by tests/test_ops_quant.c. A block is a
 * fixed number of bytes holding a fixed number of elements (QB_ELEMS /
 * QB_BYTES per encoding); all multi-byte fields are little-endian, read
 * bytewise so blocks need no alignment.
 *
 * Layouts (ggml's, elements in row order):
 *   q4_0  32 el, 18 B: f16 d; 16 B of nibbles. x[i] = (lo(q[i]) - 8) * d,
 *         x[i + 16] = (hi(q[i]) - 8) * d for i < 16.
 *   q8_0  32 el, 34 B: f16 d; 32 x int8 q. x[i] = q[i] * d.
 *   q4_k  256 el, 144 B: f16 d, f16 dmin, 12 B of 6-bit (scale, min) pairs
 *         for 8 sub-blocks of 32, 128 B of nibbles; sub-block s holds
 *         d * sc[s] * q - dmin * m[s]; the 64 elements of nibble chunk c are
 *         the low nibbles (sub-block 2c) then the high ones (2c + 1).
 *   q5_k  256 el, 176 B: q4_k's fields with 32 B of fifth bits (qh) before
 *         the nibbles: bit 2c of qh[l] tops low nibble l of chunk c, bit
 *         2c + 1 the high one.
 *   q6_k  256 el, 210 B: 128 B low nibbles ql, 64 B two-bit highs qh, 16 x
 *         int8 scales, f16 d; x = d * scale[16-element group] * (q6 - 32).
 *
 * qmatmul's lhs (MAX: dequantize(quantize(lhs) @ transpose(rhs)); llama.cpp's
 * vec_dot types) is quantized per block of the weight's element count:
 *   Q8_0 (for q4_0, q8_0 weights), 32 el: amax = max |x|, d = amax / 127 in f32,
 *         q = round(x * (d ? 1 / d : 0)); the block's scale da is d rounded to
 *         f16 (as GGUF stores a Q8_0 d), q computed with the unrounded d.
 *   Q8_K (for q4_k, q5_k, q6_k), 256 el: x_max = the first element of the
 *         largest |x|; iscale = -127 / x_max, q = round(iscale * x), scale
 *         da = 1 / iscale in f32 (0 and q = 0 for an all-zero block); bsums
 *         = the sums of each 16 q's.
 * round = to nearest, ties to even; q is clamped to [-127, 127] (it never
 * leaves it: |x * id| <= 127 up to one rounding). A block with a NaN or an
 * infinity gets q = 0 and da = NaN, so every result it reaches is NaN.
 * One weight block times one lhs block is an exact int32 sum of products
 * (qb_dot), then scaled in f32 in this order (dw, dmin: the block's f16s):
 *   q4_0, q8_0:  (float)isum * (dw * da)     isum = sum (q4 - 8 | q8) * q
 *   q4_k, q5_k:  (dw * da) * (float)isum - (dmin * da) * (float)msum,
 *                isum = sum over sub-blocks of sc * sum(q * qa),
 *                msum = sum over sub-blocks of m * (their two bsums)
 *   q6_k:        (dw * da) * (float)isum     isum = sum of sc * (q6 - 32) * q
 * with no contraction to fma. |isum| < 2^28 for every encoding. */
#ifndef KILN_IR_QBLOCK_H
#define KILN_IR_QBLOCK_H

#include <stdint.h>

typedef enum qb_encoding { QB_Q4_0, QB_Q8_0, QB_Q4_K, QB_Q5_K, QB_Q6_K, QB_COUNT } qb_encoding;

#define QB_ELEMS(e) ((e) == QB_Q4_0 || (e) == QB_Q8_0 ? 32 : 256)
#define QB_BYTES(e)                                                                  \
  ((e) == QB_Q4_0 ? 18 : (e) == QB_Q8_0 ? 34 : (e) == QB_Q4_K ? 144 : (e) == QB_Q5_K ? 176 \
                                                                                       : 210)

/* The encoding's name ("q4_0", "q8_0", "q4_k", "q5_k", "q6_k"). */
static inline const char *qb_name(qb_encoding e) {
  static const char *const names[QB_COUNT] = {"q4_0", "q8_0", "q4_k", "q5_k", "q6_k"};
  return (unsigned)e < QB_COUNT ? names[e] : "?";
}

/* The encoding named s (case-insensitive: MAX spells them Q4_K), or -1. */
static inline int qb_from_name(const char *s) {
  for (int e = 0; e < QB_COUNT; e++) {
    const char *n = qb_name((qb_encoding)e);
    int i = 0;
    while (n[i] && (s[i] == n[i] || (s[i] >= 'A' && s[i] <= 'Z' && s[i] + 32 == n[i]))) i++;
    if (!n[i] && !s[i]) return e;
  }
  return -1;
}

/* IEEE binary16 (little-endian bytes) to float, exact (subnormals, inf, NaN). */
static inline float qb_f16(const uint8_t *p) {
  uint32_t h = (uint32_t)p[0] | (uint32_t)p[1] << 8;
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | man << 13;
  } else if (exp != 0) {
    bits = sign | (exp + 112) << 23 | man << 13;
  } else if (man == 0) {
    bits = sign;
  } else { /* subnormal: normalize */
    int e = 113;
    while (!(man & 0x400)) {
      man <<= 1;
      e--;
    }
    bits = sign | (uint32_t)e << 23 | (man & 0x3ff) << 13;
  }
  union {
    uint32_t u;
    float f;
  } v = {.u = bits};
  return v.f;
}

/* bfloat16 (little-endian bytes) to float, exact. */
static inline float qb_bf16(const uint8_t *p) {
  union {
    uint32_t u;
    float f;
  } v = {.u = ((uint32_t)p[0] | (uint32_t)p[1] << 8) << 16};
  return v.f;
}

/* Sub-block j's 6-bit scale and min from q4_k / q5_k's 12 packed bytes. */
static inline void qb_scale_min_k4(int j, const uint8_t *q, int *sc, int *m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

static inline void qb_decode_q4_0(const uint8_t *b, float *y) {
  float d = qb_f16(b);
  for (int i = 0; i < 16; i++) {
    y[i] = (float)((b[2 + i] & 0xf) - 8) * d;
    y[i + 16] = (float)((b[2 + i] >> 4) - 8) * d;
  }
}

static inline void qb_decode_q8_0(const uint8_t *b, float *y) {
  float d = qb_f16(b);
  for (int i = 0; i < 32; i++) y[i] = (float)(int8_t)b[2 + i] * d;
}

/* q4_k and q5_k (qh NULL for q4_k). */
static inline void qb_decode_k45(const uint8_t *b, const uint8_t *qh, const uint8_t *qs,
                                 float *y) {
  float d = qb_f16(b), dmin = qb_f16(b + 2);
  const uint8_t *scales = b + 4;
  for (int c = 0; c < 4; c++) {
    int sc0, m0, sc1, m1;
    qb_scale_min_k4(2 * c, scales, &sc0, &m0);
    qb_scale_min_k4(2 * c + 1, scales, &sc1, &m1);
    float d0 = d * (float)sc0, mm0 = dmin * (float)m0;
    float d1 = d * (float)sc1, mm1 = dmin * (float)m1;
    const uint8_t *q = qs + 32 * c;
    for (int l = 0; l < 32; l++) {
      int lo = q[l] & 0xf, hi = q[l] >> 4;
      if (qh) {
        lo += ((qh[l] >> (2 * c)) & 1) << 4;
        hi += ((qh[l] >> (2 * c + 1)) & 1) << 4;
      }
      y[64 * c + l] = d0 * (float)lo - mm0;
      y[64 * c + 32 + l] = d1 * (float)hi - mm1;
    }
  }
}

/* q6_k's 256 values q6 - 32 in [-32, 31], in element order; element e's
 * scale is the int8 at b + 192 + e / 16. */
static inline void qb_q6_k_values(const uint8_t *b, int8_t *v) {
  const uint8_t *ql = b, *qh = b + 128;
  for (int h = 0; h < 2; h++) {
    for (int l = 0; l < 32; l++) {
      v[l] = (int8_t)(((ql[l] & 0xf) | ((qh[l] & 3) << 4)) - 32);
      v[l + 32] = (int8_t)(((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32);
      v[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      v[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
    v += 128;
    ql += 64;
    qh += 32;
  }
}

static inline void qb_decode_q6_k(const uint8_t *b, float *y) {
  const int8_t *sc = (const int8_t *)(b + 192);
  float d = qb_f16(b + 208);
  int8_t v[256];
  qb_q6_k_values(b, v);
  for (int e = 0; e < 256; e++) y[e] = d * (float)sc[e / 16] * (float)v[e];
}

/* Decode one block of encoding e at b into QB_ELEMS(e) floats at y. */
static inline void qb_decode(qb_encoding e, const uint8_t *b, float *y) {
  switch (e) {
  case QB_Q4_0: qb_decode_q4_0(b, y); break;
  case QB_Q8_0: qb_decode_q8_0(b, y); break;
  case QB_Q4_K: qb_decode_k45(b, 0, b + 16, y); break;
  case QB_Q5_K: qb_decode_k45(b, b + 16, b + 48, y); break;
  default: qb_decode_q6_k(b, y); break;
  }
}

/* ---- qmatmul's quantized lhs and block dot products (see the top) ---- */

/* The lhs blocks of weight encoding e are Q8_K (with bsums) for the K-quants. */
#define QB_LHS_IS_K(e) ((e) >= QB_Q4_K)

typedef union qb_bits {
  float f;
  uint32_t u;
} qb_bits;

static inline int qb_is_finite(float f) {
  qb_bits v = {.f = f};
  return (v.u & 0x7f800000u) != 0x7f800000u;
}

static inline float qb_nan(void) {
  qb_bits v = {.u = 0x7fc00000u};
  return v.f;
}

/* f to IEEE binary16 bits, rounded to nearest even (overflow to inf). */
static inline uint16_t qb_f32_to_f16(float f) {
  qb_bits v = {.f = f};
  uint32_t sign = (v.u >> 16) & 0x8000u, a = v.u & 0x7fffffffu;
  if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
  if (a < 0x38800000u) {                                    /* f16 subnormal or zero */
    if (a < 0x33000000u) return (uint16_t)sign;             /* below half the least */
    uint32_t man = (a & 0x7fffffu) | 0x800000u, shift = 126 - (a >> 23);
    uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((a >> 13) - (112u << 10)), rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* may carry into the exponent */
  return (uint16_t)(sign | h);
}

/* v (|v| < 2^22) rounded to the nearest integer, ties to even, clamped to
 * [-127, 127]: adding and taking away 1.5 * 2^23 rounds in the FPU's mode. */
static inline int8_t qb_round_q8(float v) {
  float r = (v + 12582912.0f) - 12582912.0f;
  return (int8_t)(r > 127.0f ? 127 : r < -127.0f ? -127 : (int)r);
}

/* Quantize 32 floats of lhs to Q8_0: q, and the returned scale da. */
static inline float qb_quantize_q8_0(const float *x, int8_t *q) {
  float amax = 0;
  int finite = 1;
  for (int i = 0; i < 32; i++) {
    float a = x[i] < 0 ? -x[i] : x[i];
    finite &= qb_is_finite(x[i]);
    if (a > amax) amax = a;
  }
  if (!finite) {
    for (int i = 0; i < 32; i++) q[i] = 0;
    return qb_nan();
  }
  float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
  for (int i = 0; i < 32; i++) q[i] = qb_round_q8(x[i] * id);
  uint16_t h = qb_f32_to_f16(d);
  uint8_t hb[2] = {(uint8_t)h, (uint8_t)(h >> 8)};
  return qb_f16(hb);
}

/* Quantize 256 floats of lhs to Q8_K: q, 16 bsums, and the returned da. */
static inline float qb_quantize_q8_k(const float *x, int8_t *q, int16_t *bsums) {
  float amax = 0, xmax = 0;
  int finite = 1;
  for (int i = 0; i < 256; i++) {
    float a = x[i] < 0 ? -x[i] : x[i];
    finite &= qb_is_finite(x[i]);
    if (a > amax) {
      amax = a;
      xmax = x[i];
    }
  }
  float d = 0;
  if (!finite || amax == 0) {
    for (int i = 0; i < 256; i++) q[i] = 0;
    d = finite ? 0.0f : qb_nan();
  } else {
    float iscale = -127.0f / xmax;
    for (int i = 0; i < 256; i++) q[i] = qb_round_q8(iscale * x[i]);
    d = 1.0f / iscale;
  }
  for (int j = 0; j < 16; j++) {
    int s = 0;
    for (int i = 0; i < 16; i++) s += q[16 * j + i];
    bsums[j] = (int16_t)s;
  }
  return d;
}

/* Quantize one lhs block for weight encoding e (bsums only for the K-quants). */
static inline float qb_quantize_lhs(qb_encoding e, const float *x, int8_t *q, int16_t *bsums) {
  return QB_LHS_IS_K(e) ? qb_quantize_q8_k(x, q, bsums) : qb_quantize_q8_0(x, q);
}

static inline float qb_dot_q4_0(const uint8_t *b, const int8_t *q, float da) {
  int32_t s = 0;
  for (int i = 0; i < 16; i++)
    s += ((b[2 + i] & 0xf) - 8) * q[i] + ((b[2 + i] >> 4) - 8) * q[i + 16];
  float dd = qb_f16(b) * da;
  return (float)s * dd;
}

static inline float qb_dot_q8_0(const uint8_t *b, const int8_t *q, float da) {
  int32_t s = 0;
  for (int i = 0; i < 32; i++) s += (int8_t)b[2 + i] * q[i];
  float dd = qb_f16(b) * da;
  return (float)s * dd;
}

/* q4_k and q5_k (qh NULL for q4_k). */
static inline float qb_dot_k45(const uint8_t *b, const uint8_t *qh, const uint8_t *qs,
                               const int8_t *q, const int16_t *bsums, float da) {
  int32_t isum = 0, msum = 0;
  for (int c = 0; c < 4; c++) {
    int sc0, m0, sc1, m1;
    qb_scale_min_k4(2 * c, b + 4, &sc0, &m0);
    qb_scale_min_k4(2 * c + 1, b + 4, &sc1, &m1);
    int32_t s0 = 0, s1 = 0;
    for (int l = 0; l < 32; l++) {
      int lo = qs[32 * c + l] & 0xf, hi = qs[32 * c + l] >> 4;
      if (qh) {
        lo += ((qh[l] >> (2 * c)) & 1) << 4;
        hi += ((qh[l] >> (2 * c + 1)) & 1) << 4;
      }
      s0 += lo * q[64 * c + l];
      s1 += hi * q[64 * c + 32 + l];
    }
    isum += sc0 * s0 + sc1 * s1;
    msum += m0 * (bsums[4 * c] + bsums[4 * c + 1]) + m1 * (bsums[4 * c + 2] + bsums[4 * c + 3]);
  }
  float dd = qb_f16(b) * da, dm = qb_f16(b + 2) * da;
  float hi = dd * (float)isum, lo = dm * (float)msum;
  return hi - lo;
}

static inline float qb_dot_q6_k(const uint8_t *b, const int8_t *q, float da) {
  const int8_t *sc = (const int8_t *)(b + 192);
  int8_t v[256];
  qb_q6_k_values(b, v);
  int32_t isum = 0;
  for (int e = 0; e < 256; e++) isum += sc[e / 16] * v[e] * q[e];
  float dd = qb_f16(b + 208) * da;
  return dd * (float)isum;
}

/* One weight block of encoding e at b times one lhs block (q, bsums, da):
 * the term the top of this file defines. */
static inline float qb_dot(qb_encoding e, const uint8_t *b, const int8_t *q,
                           const int16_t *bsums, float da) {
  switch (e) {
  case QB_Q4_0: return qb_dot_q4_0(b, q, da);
  case QB_Q8_0: return qb_dot_q8_0(b, q, da);
  case QB_Q4_K: return qb_dot_k45(b, 0, b + 16, q, bsums, da);
  case QB_Q5_K: return qb_dot_k45(b, b + 16, b + 48, q, bsums, da);
  default: return qb_dot_q6_k(b, q, da);
  }
}

#endif
