/* qblock.h - ggml's block-quantized weight layouts (GGUF's Q4_0, Q8_0, Q4_K,
 * Q5_K, Q6_K): sizes and the decoding of one block to floats.
 *
 * Header-only and freestanding (stdint only, no libc). These scalar
 * decoders are the reference: the interpreter (ir/interp_quant.c) decodes
 * with them, and tests/test_gguf.c checks them against the `gguf` Python
 * package's dequantize on the files in tests/gguf/. The qmatmul kernel
 * template (kernels-templates/qmatmul.c, built without libc) takes the
 * sizes and qb_scale_min_k4 from here but decodes with vector code of its
 * own, checked against these by tests/test_ops_quant.c. A block is a fixed number of bytes holding a
 * fixed number of elements (QB_ELEMS / QB_BYTES per encoding); all multi-byte
 * fields are little-endian, read bytewise so blocks need no alignment.
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
 *         int8 scales, f16 d; x = d * scale[16-element group] * (q6 - 32). */
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

static inline void qb_decode_q6_k(const uint8_t *b, float *y) {
  const uint8_t *ql = b, *qh = b + 128;
  const int8_t *sc = (const int8_t *)(b + 192);
  float d = qb_f16(b + 208);
  for (int h = 0; h < 2; h++) {
    for (int l = 0; l < 32; l++) {
      int is = l / 16;
      int q1 = ((ql[l] & 0xf) | ((qh[l] & 3) << 4)) - 32;
      int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
      int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * (float)sc[is] * (float)q1;
      y[l + 32] = d * (float)sc[is + 2] * (float)q2;
      y[l + 64] = d * (float)sc[is + 4] * (float)q3;
      y[l + 96] = d * (float)sc[is + 6] * (float)q4;
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
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

#endif
