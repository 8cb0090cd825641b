/* qmatmul.c - the block-quantized kernels template: mo.qmatmul and
 * mo.dequantize computed straight from GGUF blocks (ir/qblock.h), compiled
 * to LLVM bitcode at build time and linked into the kernel's module at JIT
 * time (jit/template.c, jit/quant.c), where it gets the host's target and
 * goes through O3 with the kernel.
 *
 * Entries, one per encoding E in q4_0 q8_0 q4_k q5_k q6_k:
 *   void kiln_qmatmul_E(int64_t M, int64_t N, int64_t K, const float *A,
 *                       const uint8_t *W, float *C, int64_t n_lo, int64_t n_hi)
 *     C[m * N + n] = qmatmul(A, W)[m, n] (ir/qblock.h's meaning: A quantized
 *     per block to Q8_0 / Q8_K, exact integer block dots, scaled in f32) for
 *     every m and n_lo <= n < n_hi; W is N rows of K / elements blocks.
 *     Rows and columns of A are quantized a pass at a time into a buffer on
 *     the stack (QBUF and PBUF below; each part quantizes the rows it needs
 *     itself: A is small next to W), then every row of W in [n_lo, n_hi) is
 *     streamed through them: a decode step (M = 1, K <= QBUF) reads W
 *     once, in order, with software prefetch ahead (qmatmul_int.h). The
 *     block terms of a row are summed in f32, in an order fixed by K and
 *     by whether M is 1, so a result does not depend on how N is split.
 *     The generic entries use qblock.h's scalar qb_dot (the interpreter's
 *     terms, bit for bit); the _avx2 entries use vpmaddubsw / vpmaddwd,
 *     with the same int32 sums (no saturation: q4 <= 15 (q4_0's - 8 added
 *     back per lane from the lhs's sums) or |q8| <= 128 (as u8, via
 *     psign) or q4 / q5 / q6 + 32 <= 63 against |qa| <= 127 keeps each s16
 *     pair below 2^15); q4_k / q5_k / q6_k's terms are exactly qb_dot's,
 *     q4_0 / q8_0's scaled per int32 lane (each lane an exact sum of a
 *     block's products; within a rounding of qb_dot's).
 *   void kiln_dequantize_E(const uint8_t *X, float *Y, int64_t b_lo, int64_t b_hi)
 *     blocks b_lo <= b < b_hi of X decoded into Y.
 *   kiln_dequantize_E_f16c: the same, converting the f16 scales with F16C's
 *     instruction, for targets that have it.
 *   kiln_qmatmul_E_avx2: for targets with AVX2 and F16C (x86-64 only);
 *   kiln_qmatmul_E_avxvnni: with FMA and AVX-VNNI as well;
 *   kiln_qmatmul_E_avx512: with FMA, AVX512F / BW / VL, AVX512-VNNI and
 *     AVX512-VBMI (qmatmul_avx512.h).
 *
 * Assumes: K a multiple of the block's elements (the shape rule checks it);
 * buffers do not overlap. Freestanding: no libc, no static mutable state. */
#include <stdint.h>

#include "../ir/qblock.h"

typedef float v16f __attribute__((ext_vector_type(16)));
typedef float v16fu __attribute__((ext_vector_type(16), aligned(4)));
typedef uint8_t v16b __attribute__((ext_vector_type(16)));
typedef uint8_t v16bu __attribute__((ext_vector_type(16), aligned(1)));
typedef int8_t v16s __attribute__((ext_vector_type(16)));
typedef int8_t v16su __attribute__((ext_vector_type(16), aligned(1)));
typedef int32_t v16i __attribute__((ext_vector_type(16)));

/* A decode step (M = 1) quantizes its row QBUF columns at a time into a
 * buffer on the stack of about 37 KB and reads each row of W once, whole,
 * when K <= QBUF. A prefill (M > 1) quantizes a group of rows of A, up to
 * PBUF elements (about 290 KB on the stack): all of K for as many rows as
 * fit (at least MB), else MB rows of PBUF / MB columns a pass; W is read
 * once per group and pass, in blocks of about WBLK bytes that stay in L2
 * while every MB-row tile of the group meets them. The block terms of a
 * result are summed in chunks of QBUF / rows columns (rows = 1 or MB), each chunk
 * from zero, the chunks added in order: that order depends on K and on
 * whether M is 1, never on the buffer, the group or the split of N. All
 * sizes multiples of 256: whole blocks of every encoding. */
enum { QBUF = 16384, MB = 4, PBUF = 131072, WBLK = 256 << 10 };

/* The block decoders, in 16-float vectors (qblock.h's scalar loops do not
 * vectorize: byte loads feeding two interleaved float stores). Each value
 * is computed by the same operations in the same order as qblock.h's, and
 * contraction is off, so dequantize gives the interpreter's bits. */
#pragma clang fp contract(off)

/* f16 to f32 without branches (qb_f16 normalizes subnormals in a loop):
 * the exponent and mantissa moved into place and scaled by 2^112, exact for
 * normals and subnormals alike; inf / NaN keep an all-ones exponent. */
static inline float f16_bits(const uint8_t *p) {
  uint32_t h = (uint32_t)p[0] | (uint32_t)p[1] << 8, o = (h & 0x7fff) << 13;
  union {
    uint32_t u;
    float f;
  } v = {.u = o}, big = {.u = o | 0x7f800000u};
  float mag = (h & 0x7c00) == 0x7c00 ? big.f : v.f * 0x1p112f;
  union {
    float f;
    uint32_t u;
  } r = {.f = mag};
  r.u |= (h & 0x8000) << 16;
  return r.f;
}

/* With F16C (the JIT calls the _f16c entries only where the target has it)
 * the conversion is one instruction; without it LLVM would call a runtime
 * function, so the other entries convert with the bits. */
static inline float f16_hw(const uint8_t *p) {
  _Float16 h;
  __builtin_memcpy(&h, p, 2);
  return (float)h;
}

#define f16(p) (hw ? f16_hw(p) : f16_bits(p))

/* conversions as macros: a function passing 512-bit vectors by value would
 * have an ABI that depends on avx512f (-Wpsabi) */
#define ld_b(p) (*(const v16bu *)(p))
#define to_f(x) __builtin_convertvector((x), v16f)
#define to_fi(x) __builtin_convertvector((x), v16f)
#define to_i(x) __builtin_convertvector((x), v16i)

static inline void dec_q4_0(const uint8_t *b, v16f *y, int hw) {
  float d = f16(b);
  v16b q = ld_b(b + 2);
  y[0] = to_fi(to_i(q & 15) - 8) * d;
  y[1] = to_fi(to_i(q >> 4) - 8) * d;
}

static inline void dec_q8_0(const uint8_t *b, v16f *y, int hw) {
  float d = f16(b);
  y[0] = __builtin_convertvector(*(const v16su *)(b + 2), v16f) * d;
  y[1] = __builtin_convertvector(*(const v16su *)(b + 18), v16f) * d;
}

/* q4_k (qh NULL) and q5_k. */
static inline void dec_k45(const uint8_t *b, const uint8_t *qh, const uint8_t *qs, v16f *y,
                           int hw) {
  float d = f16(b), dmin = f16(b + 2);
  for (int c = 0; c < 4; c++) {
    int sc0, m0, sc1, m1;
    qb_scale_min_k4(2 * c, b + 4, &sc0, &m0);
    qb_scale_min_k4(2 * c + 1, b + 4, &sc1, &m1);
    float d0 = d * (float)sc0, mm0 = dmin * (float)m0;
    float d1 = d * (float)sc1, mm1 = dmin * (float)m1;
    for (int h = 0; h < 2; h++) {
      v16b x = ld_b(qs + 32 * c + 16 * h), lo = x & 15, hi = x >> 4;
      if (qh) {
        v16b hb = ld_b(qh + 16 * h);
        lo += ((hb >> (2 * c)) & 1) << 4;
        hi += ((hb >> (2 * c + 1)) & 1) << 4;
      }
      y[4 * c + h] = d0 * to_f(lo) - mm0;
      y[4 * c + 2 + h] = d1 * to_f(hi) - mm1;
    }
  }
}

static inline void dec_q6_k(const uint8_t *b, v16f *y, int hw) {
  const uint8_t *ql = b, *qh = b + 128;
  const int8_t *sc = (const int8_t *)(b + 192);
  float d = f16(b + 208);
  for (int h = 0; h < 2; h++) {
    for (int l = 0; l < 2; l++) {
      v16b a = ld_b(ql + 16 * l), c = ld_b(ql + 32 + 16 * l), e = ld_b(qh + 16 * l);
      v16i q1 = to_i((a & 15) | ((e & 3) << 4)) - 32;
      v16i q2 = to_i((c & 15) | (((e >> 2) & 3) << 4)) - 32;
      v16i q3 = to_i((a >> 4) | (((e >> 4) & 3) << 4)) - 32;
      v16i q4 = to_i((c >> 4) | (((e >> 6) & 3) << 4)) - 32;
      y[8 * h + l] = d * (float)sc[l] * to_fi(q1);
      y[8 * h + l + 2] = d * (float)sc[l + 2] * to_fi(q2);
      y[8 * h + l + 4] = d * (float)sc[l + 4] * to_fi(q3);
      y[8 * h + l + 6] = d * (float)sc[l + 6] * to_fi(q4);
    }
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

static inline __attribute__((always_inline)) void decode(qb_encoding enc, const uint8_t *b,
                                                         v16f *y, int hw) {
  switch (enc) {
  case QB_Q4_0: dec_q4_0(b, y, hw); break;
  case QB_Q8_0: dec_q8_0(b, y, hw); break;
  case QB_Q4_K: dec_k45(b, 0, b + 16, y, hw); break;
  case QB_Q5_K: dec_k45(b, b + 16, b + 48, y, hw); break;
  default: dec_q6_k(b, y, hw); break;
  }
}

#pragma clang fp contract(on)

static inline __attribute__((always_inline)) void
dequantize(qb_encoding enc, int hw, const uint8_t *X, float *Y, int64_t b_lo, int64_t b_hi) {
  v16f y[16];
  for (int64_t b = b_lo; b < b_hi; b++) {
    decode(enc, X + b * QB_BYTES(enc), y, hw);
    for (int i = 0; i < QB_ELEMS(enc) / 16; i++) *(v16fu *)(Y + b * QB_ELEMS(enc) + 16 * i) = y[i];
  }
}

#define DEQUANTIZE_ENTRY(name, enc, hw)                                                     \
  void kiln_dequantize_##name(const uint8_t *X, float *Y, int64_t b_lo, int64_t b_hi);       \
  void kiln_dequantize_##name(const uint8_t *X, float *Y, int64_t b_lo, int64_t b_hi) {      \
    dequantize(enc, hw, X, Y, b_lo, b_hi);                                                  \
  }

DEQUANTIZE_ENTRY(q4_0, QB_Q4_0, 0)
DEQUANTIZE_ENTRY(q8_0, QB_Q8_0, 0)
DEQUANTIZE_ENTRY(q4_k, QB_Q4_K, 0)
DEQUANTIZE_ENTRY(q5_k, QB_Q5_K, 0)
DEQUANTIZE_ENTRY(q6_k, QB_Q6_K, 0)
DEQUANTIZE_ENTRY(q4_0_f16c, QB_Q4_0, 1)
DEQUANTIZE_ENTRY(q8_0_f16c, QB_Q8_0, 1)
DEQUANTIZE_ENTRY(q4_k_f16c, QB_Q4_K, 1)
DEQUANTIZE_ENTRY(q5_k_f16c, QB_Q5_K, 1)
DEQUANTIZE_ENTRY(q6_k_f16c, QB_Q6_K, 1)

#include "qmatmul_int.h"
#include "qmatmul_avx512.h"
