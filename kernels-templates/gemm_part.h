/* gemm_part.h - how the half and int8 GEMM templates (gemm_half.c,
 * gemm_int8.c) cut C [M, N] between the parts of a split kernel: part
 * `part` of nparts gets rows [*i0, *i1) x columns [*j0, *j1). Near-equal
 * row ranges when every part gets split_rows rows or N has fewer than two
 * panels (of `panel` columns) per part; else near-equal ranges of whole
 * panels (the last one partial), as the f32 GEMM splits a small M
 * (gemm.c). An empty range for a part out of [0, nparts). How an element
 * is summed never depends on the cut. */
#ifndef KILN_GEMM_PART_H
#define KILN_GEMM_PART_H

#include <stdint.h>

static inline __attribute__((always_inline, unused)) void
gemm_part_cut(int64_t M, int64_t N, int64_t part, int64_t nparts, int64_t panel,
              int64_t split_rows, int64_t *i0, int64_t *i1, int64_t *j0, int64_t *j1) {
  *i0 = 0, *i1 = M, *j0 = 0, *j1 = N;
  if (nparts <= 1 && part == 0) return;
  if (nparts < 1 || part < 0 || part >= nparts) {
    *i1 = 0;
    return;
  }
  int64_t np = (N + panel - 1) / panel;
  if (M >= split_rows * nparts || np < 2 * nparts) {
    *i0 = M * part / nparts, *i1 = M * (part + 1) / nparts;
    return;
  }
  int64_t q = np / nparts, r = np % nparts;
  int64_t p0 = q * part + (part < r ? part : r);
  int64_t p1 = q * (part + 1) + (part + 1 < r ? part + 1 : r);
  *j0 = p0 * panel < N ? p0 * panel : N;
  *j1 = p1 * panel < N ? p1 * panel : N;
}

#endif
