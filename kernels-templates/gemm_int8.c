/* gemm_int8.c - the 8-bit integer GEMM template of mo.matmul.integer (ONNX
 * MatMulInteger), compiled to LLVM bitcode at build time and linked into the
 * kernel's module at JIT time (jit/template.c, jit/matmul_integer.c), where it
 * gets the host's target and goes through O3 with the kernel.
 *
 * Entries, one per operand pair AB in u8u8 u8s8 s8u8 s8s8 (a's, then b's
 * signedness):
 *   void kiln_mmi_AB(int64_t M, int64_t N, int64_t K, const void *A,
 *                    const void *B, int32_t *C, const void *ZA, int64_t nza,
 *                    const void *ZB, int64_t nzb, int64_t part, int64_t nparts)
 *     C[i * N + j] = sum over k of (A[i * K + k] - za_i) * (B[k * N + j] - zb_j)
 *     wrapped to 32 bits, for the (i, j) of part `part` of C cut in nparts
 *     pieces (mmi_part: row ranges, or, for few rows, ranges of 64-column
 *     panels, so a decode step's B is split between the parts). ZA holds
 *     nza zero points of A's type (0: none, 1: one for every row, M: one per
 *     row), ZB nzb of B's (0, 1 or N: one per column).
 *
 * How: sum (a - za)(b - zb) = sum (a - za) b - zb * sum (a - za), so a row of
 * C accumulates (a - za) times rows of B and then takes zb_j times the row's
 * sum off. Every step is in uint32 arithmetic (wrapping, no undefined
 * overflow), which gives the exact sum modulo 2^32: the interpreter's
 * result. The j loop is contiguous in B and C, so O3 vectorizes it.
 *
 * kiln_mmi_AB_avx512vnni (x86-64, gemm_int8_vnni.h): the same results with
 * vpdpbusd, for targets with AVX512-VNNI (jit/matmul_integer.c picks it).
 *
 * Assumes: buffers do not overlap; nza / nzb as the shape rule allows.
 * Freestanding: no libc, no static mutable state. */
#include <stdint.h>

#include "gemm_part.h"

/* Element i of an 8-bit buffer as int32 (sign- or zero-extended). */
static inline __attribute__((always_inline)) int32_t ld8(const void *p, int64_t i, int sgn) {
  return sgn ? (int32_t)((const int8_t *)p)[i] : (int32_t)((const uint8_t *)p)[i];
}

/* Zero point i of n (0: none, 1: one for all). */
static inline __attribute__((always_inline)) uint32_t zp(const void *z, int64_t n, int64_t i,
                                                         int sgn) {
  return n == 0 ? 0 : (uint32_t)ld8(z, n == 1 ? 0 : i, sgn);
}

enum { MMI_PANEL = 64, MMI_SPLIT_ROWS = 12 };

/* Part `part` of nparts of C [M, N] (gemm_part.h): rows when every part
 * gets MMI_SPLIT_ROWS (two of the x86 kernels' tiles), else panels. */
static inline __attribute__((always_inline)) void
mmi_part(int64_t M, int64_t N, int64_t part, int64_t nparts, int64_t *i0, int64_t *i1,
         int64_t *j0, int64_t *j1) {
  gemm_part_cut(M, N, part, nparts, MMI_PANEL, MMI_SPLIT_ROWS, i0, i1, j0, j1);
}

/* The generic kernel over rows [lo, hi) x columns [jlo, jhi); sa / sb (a's,
 * b's signedness) are constants in each entry, so the loads fold to one
 * extension after inlining. */
static inline __attribute__((always_inline)) void
mmi_generic(int64_t N, int64_t K, const void *A, const void *B, int32_t *C, const void *ZA,
            int64_t nza, const void *ZB, int64_t nzb, int64_t lo, int64_t hi, int64_t jlo,
            int64_t jhi, int sa, int sb) {
  for (int64_t i = lo; i < hi; i++) {
    uint32_t *c = (uint32_t *)C + i * N;
    for (int64_t j = jlo; j < jhi; j++) c[j] = 0;
    uint32_t za = zp(ZA, nza, i, sa), rowsum = 0;
    for (int64_t k = 0; k < K; k++) {
      uint32_t a = (uint32_t)ld8(A, i * K + k, sa) - za;
      rowsum += a;
      const int64_t row = k * N;
      for (int64_t j = jlo; j < jhi; j++) c[j] += a * (uint32_t)ld8(B, row + j, sb);
    }
    for (int64_t j = jlo; nzb && j < jhi; j++) c[j] -= rowsum * zp(ZB, nzb, j, sb);
  }
}

#define ARGS                                                                                 \
  int64_t M, int64_t N, int64_t K, const void *A, const void *B, int32_t *C, const void *ZA, \
      int64_t nza, const void *ZB, int64_t nzb, int64_t part, int64_t nparts

#define GENERIC_ENTRY(name, sa, sb)                                                          \
  void kiln_mmi_##name(ARGS) {                                                               \
    int64_t lo, hi, jlo, jhi;                                                                \
    mmi_part(M, N, part, nparts, &lo, &hi, &jlo, &jhi);                                      \
    mmi_generic(N, K, A, B, C, ZA, nza, ZB, nzb, lo, hi, jlo, jhi, sa, sb);                  \
  }
GENERIC_ENTRY(u8u8, 0, 0)
GENERIC_ENTRY(u8s8, 0, 1)
GENERIC_ENTRY(s8u8, 1, 0)
GENERIC_ENTRY(s8s8, 1, 1)

#if defined(__x86_64__)
#include "gemm_int8_vnni.h"
#endif
