/* interp_resize.c - the reference interpreter's routine for the resizing
 * class (mo.resize, resize_nearest, resize_linear, resize_bicubic): a plain
 * loop over the result's elements, each the weighted sum of its taps on the
 * resized axes (resize.c's choice of axes, coordinates and weights; ops.def
 * documents the meaning); the other axes are copied. Run-time scales
 * (a third operand) are read as the kernels read them.
 *
 * Assumes a verified node; re-checks the run-time shapes (rank, copied axes
 * equal, no read of an empty axis) and refuses a mismatch, so no graph or
 * input makes it read or write out of bounds. Floats are summed in double
 * and rounded once, the taps in row-major order of the resized axes, each
 * weight the product of the axes' weights from the first; nearest copies
 * the element (exact, any dtype). */
#include "interp_impl.h"
#include "resize.h"

#include <string.h>

typedef struct taps {
  int n;          /* 1, 2 or 4; 0 for a copied axis */
  int64_t idx[4]; /* a copied axis: idx[0] is the coordinate */
  double w[4];
} taps;

int ir_ref_resize(const ir_node *n, const ir_tensor *x, const ir_tensor *scales, ir_tensor *y,
                  char *msg, size_t msglen) {
  ir_resize p;
  bool rs[IR_MAX_RANK];
  if (!ir_resize_read(n, &p) || x->rank < 1 || x->rank > IR_MAX_RANK)
    return ir_ref_fail(msg, msglen, "malformed resize attributes");
  int rank = x->rank, nres = ir_resize_axes(n, &p, rs);
  bool ok = y->rank == rank && y->dtype == x->dtype;
  for (int i = 0; ok && i < rank; i++)
    ok = rs[i] ? (x->shape[i] > 0 || y->shape[i] == 0) : y->shape[i] == x->shape[i];
  int64_t ntaps = 1;
  for (int i = 0; i < nres; i++) ntaps *= ir_resize_ntaps(&p);
  if (!ok || ntaps > IR_RESIZE_MAX_TAPS)
    return ir_ref_fail(msg, msglen,
                       "the result's shape does not fit the operand's (copied axes "
                       "equal, an empty axis resized to empty)");
  int64_t total = ir_tensor_numel(y), stride[IR_MAX_RANK];
  if (total == 0) return 0;
  double s[IR_MAX_RANK], len[IR_MAX_RANK];
  for (int i = rank - 1; i >= 0; i--) {
    stride[i] = i == rank - 1 ? 1 : stride[i + 1] * x->shape[i + 1];
    if (rs[i])
      ir_resize_axis(scales ? ir_ref_ld_f(scales, i) : ir_resize_scale_of(&p, i, rank),
                     x->shape[i], y->shape[i], &s[i], &len[i]);
  }
  size_t es = ir_dtype_size(x->dtype);
  for (int64_t e = 0; e < total; e++) {
    taps t[IR_MAX_RANK];
    int64_t rest = e;
    for (int i = rank - 1; i >= 0; i--) {
      int64_t o = rest % y->shape[i];
      rest /= y->shape[i];
      t[i].n = 0;
      t[i].idx[0] = o;
      if (!rs[i]) continue;
      double xc = ir_resize_coord_of(p.coord, (double)o, (double)x->shape[i], (double)y->shape[i],
                                     s[i], len[i]);
      t[i].n = ir_resize_taps(&p, xc, x->shape[i], t[i].idx, t[i].w);
    }
    if (p.interp == IR_RESIZE_NEAREST) {
      int64_t src = 0;
      for (int i = 0; i < rank; i++) src += t[i].idx[0] * stride[i];
      memcpy(ir_ref_elem(y, e), ir_ref_elem(x, src), es);
      continue;
    }
    /* an odometer over the resized axes' taps, the last axis fastest */
    int k[IR_MAX_RANK] = {0};
    double acc = 0.0;
    for (;;) {
      int64_t src = 0;
      double w = 1.0;
      bool first = true;
      for (int i = 0; i < rank; i++) {
        src += t[i].idx[t[i].n ? k[i] : 0] * stride[i];
        if (!t[i].n) continue;
        w = first ? t[i].w[k[i]] : w * t[i].w[k[i]];
        first = false;
      }
      acc += w * ir_ref_ld_f(x, src);
      int i = rank - 1;
      for (; i >= 0; i--) {
        if (!t[i].n) continue;
        if (++k[i] < t[i].n) break;
        k[i] = 0;
      }
      if (i < 0) break;
    }
    ir_ref_st_f(y, e, acc);
  }
  return 0;
}
