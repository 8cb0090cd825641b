/* interp_resize.c - the reference interpreter's routine for the resizing
 * class (mo.resize, resize_nearest, resize_linear, resize_bicubic): a plain
 * loop over the result's elements, each the weighted sum of its taps on the
 * last two axes (resize.c's coordinates and weights; ops.def documents the
 * meaning).
 *
 * Assumes a verified node; re-checks the run-time shapes (rank, leading
 * axes, no read of an empty axis) and refuses a mismatch, so no graph or
 * input makes it read or write out of bounds. Floats are summed in double
 * and rounded once; nearest copies the element (exact, any dtype). */
#include "interp_impl.h"
#include "resize.h"

#include <string.h>

int ir_ref_resize(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen) {
  ir_resize p;
  if (!ir_resize_read(n, &p)) return ir_ref_fail(msg, msglen, "malformed resize attributes");
  int rank = x->rank, lead = rank > 2 ? rank - 2 : 0;
  bool ok = rank >= 1 && y->rank == rank && y->dtype == x->dtype;
  for (int i = 0; ok && i < rank; i++)
    ok = i < lead ? y->shape[i] == x->shape[i] : (x->shape[i] > 0 || y->shape[i] == 0);
  if (!ok)
    return ir_ref_fail(msg, msglen,
                       "the result's shape does not fit the operand's (leading axes "
                       "equal, an empty axis resized to empty)");
  int64_t total = ir_tensor_numel(y);
  if (total == 0) return 0;
  /* the resized axes: 1 (W) or 2 (H, W); ax[k] is their axis */
  int ns = rank - lead, ax[2] = {lead, lead + 1};
  double s[2], len[2];
  for (int k = 0; k < ns; k++)
    ir_resize_axis(p.scale[2 - ns + k], x->shape[ax[k]], y->shape[ax[k]], &s[k], &len[k]);
  size_t es = ir_dtype_size(x->dtype);
  int64_t inner_in = 1;
  for (int k = 0; k < ns; k++) inner_in *= x->shape[ax[k]];
  for (int64_t e = 0; e < total; e++) {
    int64_t rest = e, co[2] = {0, 0};
    for (int k = ns - 1; k >= 0; k--) {
      co[k] = rest % y->shape[ax[k]];
      rest /= y->shape[ax[k]];
    }
    int64_t base = rest * inner_in; /* rest: the leading axes' flat index, the same in x */
    int64_t idx[2][4] = {{0}, {0}};
    double w[2][4] = {{1.0}, {1.0}};
    int nt[2] = {1, 1};
    for (int k = 0; k < ns; k++) {
      double nn = (double)x->shape[ax[k]], mm = (double)y->shape[ax[k]];
      double xc = ir_resize_coord_of(p.coord, (double)co[k], nn, mm, s[k], len[k]);
      nt[k] = ir_resize_taps(&p, xc, x->shape[ax[k]], idx[k], w[k]);
    }
    int64_t wn = ns == 2 ? x->shape[ax[1]] : 1;
    if (p.interp == IR_RESIZE_NEAREST) {
      int64_t src = ns == 2 ? base + idx[0][0] * wn + idx[1][0] : base + idx[0][0];
      memcpy(ir_ref_elem(y, e), ir_ref_elem(x, src), es);
      continue;
    }
    double acc = 0.0;
    if (ns == 1) {
      for (int t = 0; t < nt[0]; t++) acc += w[0][t] * ir_ref_ld_f(x, base + idx[0][t]);
    } else {
      for (int th = 0; th < nt[0]; th++)
        for (int tw = 0; tw < nt[1]; tw++)
          acc += w[0][th] * w[1][tw] * ir_ref_ld_f(x, base + idx[0][th] * wn + idx[1][tw]);
    }
    ir_ref_st_f(y, e, acc);
  }
  return 0;
}
