/* qmatmul.c - the block-quantized kernels template: mo.qmatmul and
 * mo.dequantize computed straight from GGUF blocks (ir/qblock.h), compiled
 * to LLVM bitcode at build time and linked into the kernel's module at JIT
 * time (jit/template.c, jit/quant.c), where it gets the host's target and
 * goes through O3 with the kernel.
 *
 * Entries, one per encoding E in q4_0 q8_0 q4_k q5_k q6_k:
 *   void kiln_qmatmul_E(int64_t M, int64_t N, int64_t K, const float *A,
 *                       const uint8_t *W, float *C, int64_t n_lo, int64_t n_hi)
 *     C[m * N + n] = sum_k A[m * K + k] * dequantize(W)[n, k] for every m and
 *     n_lo <= n < n_hi; W is N rows of K / elements blocks. Each row of W is
 *     read from memory once (a decode step, M small, is a single stream over
 *     the weights): its blocks are decoded one at a time into a 256-float
 *     buffer that stays in L1 and multiplied into MB rows of A at a time, in
 *     16 f32 lanes per row summed in a fixed order at the end of the row, so
 *     a result does not depend on how N is split. No dequantized copy of W
 *     is made. For M > MB the row's blocks are decoded again per MB rows
 *     (from cache: the row is a few KB).
 *   void kiln_dequantize_E(const uint8_t *X, float *Y, int64_t b_lo, int64_t b_hi)
 *     blocks b_lo <= b < b_hi of X decoded into Y.
 *
 * Assumes: K a multiple of the block's elements (the shape rule checks it);
 * buffers do not overlap. Freestanding: no libc, no static mutable state. */
#include <stdint.h>

#include "../ir/qblock.h"

typedef float v16f __attribute__((ext_vector_type(16), aligned(4)));

enum { MB = 4 }; /* rows of A per pass over a row of W */

static inline __attribute__((always_inline)) void
qmatmul(qb_encoding enc, int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W,
        float *C, int64_t n_lo, int64_t n_hi) {
  const int64_t E = QB_ELEMS(enc), BB = QB_BYTES(enc);
  const int64_t nb = K / E, rowbytes = nb * BB;
  float y[256] __attribute__((aligned(64)));
  for (int64_t n = n_lo; n < n_hi; n++) {
    const uint8_t *w = W + n * rowbytes;
    for (int64_t m0 = 0; m0 < M; m0 += MB) {
      int64_t mb = M - m0 < MB ? M - m0 : MB;
      v16f acc[MB];
      for (int r = 0; r < MB; r++) acc[r] = (v16f)0.0f;
      for (int64_t b = 0; b < nb; b++) {
        qb_decode(enc, w + b * BB, y);
        if (mb == MB) { /* the common full pass: the row count a constant */
          for (int r = 0; r < MB; r++) {
            const float *a = A + (m0 + r) * K + b * E;
            for (int64_t i = 0; i < E; i += 16)
              acc[r] += *(const v16f *)(y + i) * *(const v16f *)(a + i);
          }
        } else {
          for (int64_t r = 0; r < mb; r++) {
            const float *a = A + (m0 + r) * K + b * E;
            for (int64_t i = 0; i < E; i += 16)
              acc[r] += *(const v16f *)(y + i) * *(const v16f *)(a + i);
          }
        }
      }
      for (int64_t r = 0; r < mb; r++) {
        float s = 0;
        for (int l = 0; l < 16; l++) s += acc[r][l];
        C[(m0 + r) * N + n] = s;
      }
    }
  }
}

static inline __attribute__((always_inline)) void
dequantize(qb_encoding enc, const uint8_t *X, float *Y, int64_t b_lo, int64_t b_hi) {
  for (int64_t b = b_lo; b < b_hi; b++)
    qb_decode(enc, X + b * QB_BYTES(enc), Y + b * QB_ELEMS(enc));
}

#define ENTRIES(name, enc)                                                                  \
  void kiln_qmatmul_##name(int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W, \
                           float *C, int64_t n_lo, int64_t n_hi);                          \
  void kiln_qmatmul_##name(int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W, \
                           float *C, int64_t n_lo, int64_t n_hi) {                         \
    qmatmul(enc, M, N, K, A, W, C, n_lo, n_hi);                                            \
  }                                                                                         \
  void kiln_dequantize_##name(const uint8_t *X, float *Y, int64_t b_lo, int64_t b_hi);       \
  void kiln_dequantize_##name(const uint8_t *X, float *Y, int64_t b_lo, int64_t b_hi) {      \
    dequantize(enc, X, Y, b_lo, b_hi);                                                      \
  }

ENTRIES(q4_0, QB_Q4_0)
ENTRIES(q8_0, QB_Q8_0)
ENTRIES(q4_k, QB_Q4_K)
ENTRIES(q5_k, QB_Q5_K)
ENTRIES(q6_k, QB_Q6_K)
