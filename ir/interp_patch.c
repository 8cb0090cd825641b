/* interp_patch.c - the reference interpreter's routine for the image-patch
 * class: mo.fold (col2im; ops.def documents it).
 *
 * Written as a gather over the result: element (n, c, h, w) sums, in the
 * order (i, j) ascending, the taps x[n, (c * kh + i) * kw + j, lh * Lw + lw]
 * whose block (lh, lw) covers it (h + ph - i * dh = lh * sh with lh in
 * [0, Lh), likewise w). f32 sums in float, f64 in double, ints wrap: the
 * kernels add in the same order and agree bit for bit.
 * Assumes a verified node; re-checks the run-time shapes it indexes with. */
#include "interp_impl.h"
#include "patch.h"

/* The block along one axis that tap t covers at position o, or -1. */
static int64_t block_of(const ir_fold_geom *g, int ax, int64_t o, int64_t t) {
  int64_t v = o + g->pad[ax] - t * g->dil[ax];
  if (v < 0 || v % g->st[ax] != 0) return -1;
  v /= g->st[ax];
  return v < g->blocks[ax] ? v : -1;
}

int ir_ref_fold(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen) {
  ir_fold_geom g;
  if (!ir_fold_geom_read(n, &g)) return ir_ref_fail(msg, msglen, "malformed attributes");
  int64_t kk = g.k[0] * g.k[1];
  if (x->rank != 3 || y->rank != 4 || y->dtype != x->dtype || y->shape[0] != x->shape[0] ||
      x->shape[1] != y->shape[1] * kk || x->shape[2] != g.blocks[0] * g.blocks[1] ||
      y->shape[2] != g.out[0] || y->shape[3] != g.out[1])
    return ir_ref_fail(msg, msglen, "the run-time shapes of the operand and result do not fit");
  int64_t C = y->shape[1], H = g.out[0], W = g.out[1], L = x->shape[2];
  int64_t total = ir_tensor_numel(y);
  bool f32 = x->dtype == IR_DT_F32, f64 = x->dtype == IR_DT_F64;
  if (!f32 && !f64 && !ir_ref_is_ic(x->dtype))
    return ir_ref_fail(msg, msglen, "dtype %s is not supported", ir_dtype_name(x->dtype));
  for (int64_t e = 0; e < total; e++) {
    int64_t w = e % W, h = e / W % H, c = e / (W * H) % C, b = e / (W * H * C);
    float sf = 0;
    double sd = 0;
    uint64_t si = 0;
    for (int64_t i = 0; i < g.k[0]; i++) {
      int64_t lh = block_of(&g, 0, h, i);
      if (lh < 0) continue;
      for (int64_t j = 0; j < g.k[1]; j++) {
        int64_t lw = block_of(&g, 1, w, j);
        if (lw < 0) continue;
        int64_t xi = (b * C * kk + (c * g.k[0] + i) * g.k[1] + j) * L + lh * g.blocks[1] + lw;
        if (f32)
          sf += ((const float *)x->data)[xi];
        else if (f64)
          sd += ((const double *)x->data)[xi];
        else
          si += (uint64_t)ir_ref_ld_i(x, xi);
      }
    }
    if (f32)
      ((float *)y->data)[e] = sf;
    else if (f64)
      ((double *)y->data)[e] = sd;
    else
      ir_ref_st_i(y, e, ir_ref_wrap_i(y->dtype, si));
  }
  return 0;
}
