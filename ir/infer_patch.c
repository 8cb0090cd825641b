/* infer_patch.c - the shape rules of the image-patch classes: mo.fold
 * (col2im) and mo.roi_align (ops.def documents their operands and
 * attributes).
 *
 * Assumes ir_infer_node has checked the operand count and the dtype set.
 * Checks the attribute values (counts, signs, at least one block per axis)
 * and the operand's dims: the channel dim must be C * kh * kw and the block
 * dim Lh * Lw, decided now when static, else run-time checks. The result's
 * spatial dims are the attribute's, or where it says -1 (or a second operand
 * gives them) the declared result's: then Lh (Lw) is an expression of that
 * dim, and that at least one block fits is a run-time check too. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infer_impl.h"
#include "patch.h"

typedef ir_infer_ctx ctx;

/* A pair attribute: 2 values, or (lists: 1 value for both, none for dflt);
 * each >= lo. */
static int pair(ctx *c, const char *name, bool exact, int64_t dflt, int64_t lo, int64_t out[2]) {
  int nv;
  const int64_t *v;
  if (ir_infer_attr_ints(c, name, &nv, &v) != 0)
    return -1;
  if (exact ? nv != 2 : nv > 2)
    return ir_infer_fail(c, "attribute '%s' of mo.%s has %d entries but takes %s", name, c->op, nv,
                         exact ? "2" : "0, 1 or 2");
  for (int i = 0; i < 2; i++) {
    out[i] = nv == 0 ? dflt : v[nv == 1 ? 0 : i];
    if (out[i] < lo)
      return ir_infer_fail(c,
                           "attribute '%s' of mo.%s has %" PRId64 " but needs values >= %" PRId64,
                           name, c->op, out[i], lo);
  }
  return 0;
}

static int fold_geometry(ctx *c, int64_t out[2], int64_t k[2], int64_t st[2], int64_t dil[2],
                         int64_t pad[2], int64_t blocks[2]) {
  if (pair(c, "output_size", true, 0, -1, out) != 0 || pair(c, "kernel_size", true, 1, 1, k) != 0 ||
      pair(c, "stride", false, 1, 1, st) != 0 || pair(c, "dilation", false, 1, 1, dil) != 0 ||
      pair(c, "padding", false, 0, 0, pad) != 0)
    return -1;
  for (int i = 0; i < 2; i++) {
    if (out[i] > INT32_MAX || k[i] > INT32_MAX || st[i] > INT32_MAX || dil[i] > INT32_MAX ||
        pad[i] > INT32_MAX)
      return ir_infer_fail(c, "mo.%s: the window attributes must be below 2^31", c->op);
    blocks[i] = -1;
    if (out[i] < 0) /* from the result type: fold_spatial */
      continue;
    int64_t span = out[i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1;
    if (span < 0)
      return ir_infer_fail(c,
                           "mo.%s: axis %d: the output size %" PRId64 " with padding %" PRId64
                           " is smaller than the dilated kernel (%" PRId64 "): no block fits",
                           c->op, i, out[i], pad[i], dil[i] * (k[i] - 1) + 1);
    blocks[i] = span / st[i] + 1;
  }
  int64_t L;
  if (blocks[0] >= 0 && blocks[1] >= 0 && __builtin_mul_overflow(blocks[0], blocks[1], &L))
    return ir_infer_fail(c, "mo.%s: %" PRId64 " x %" PRId64 " blocks do not fit in 64 bits", c->op,
                         blocks[0], blocks[1]);
  return 0;
}

/* The result's H and W (hw) and the block counts Lh, Lw as dims (lb): the
 * attribute's static sizes, else the declared result's dims, whose blocks
 * are expressions with a run-time check that one fits. */
static int fold_spatial(ctx *c, const int64_t out[2], const int64_t k[2], const int64_t st[2],
                        const int64_t dil[2], const int64_t pad[2], const int64_t blocks[2],
                        const ir_dim *hw[2], const ir_dim *lb[2]) {
  ir_arena *a = c->g->arena;
  const ir_type *t = NULL;
  if (c->n->nin == 2) {
    const ir_type *s = &c->n->in[1]->type;
    int64_t len;
    if (out[0] != -1 || out[1] != -1)
      return ir_infer_fail(c, "mo.fold: with an output_size operand the attribute output_size "
                           "must be [-1, -1]");
    if (s->rank != 1 || !ir_dim_is_const(s->dims[0], &len) || len != 2)
      return ir_infer_fail(c, "mo.fold: the output_size operand must be 1-D with 2 elements");
    if (ir_infer_data_operand(c, 1, "the output_size operand") != 0)
      return -1;
  }
  if (out[0] < 0 || out[1] < 0) {
    if (ir_infer_declared(c, &t) != 0)
      return -1;
    if (t->rank != 4)
      return ir_infer_fail(c, "mo.fold: the declared result has rank %d but needs rank 4 "
                           "(N, C, H, W)", t->rank);
  }
  for (int i = 0; i < 2; i++) {
    char s1[96], what[300];
    if (out[i] >= 0) {
      hw[i] = ir_dim_const(a, out[i]);
      lb[i] = ir_dim_const(a, blocks[i]);
      if (!hw[i] || !lb[i])
        return ir_infer_dim_fail(c);
      continue;
    }
    hw[i] = t->dims[2 + i];
    int64_t v, less = 2 * pad[i] - dil[i] * (k[i] - 1) - 1; /* span = H + less */
    if (ir_dim_is_const(hw[i], &v)) {
      if (v > INT32_MAX)
        return ir_infer_fail(c, "mo.%s: the window attributes must be below 2^31", c->op);
      if (v + less < 0)
        return ir_infer_fail(c,
                             "mo.%s: axis %d: the output size %" PRId64 " with padding %" PRId64
                             " is smaller than the dilated kernel (%" PRId64 "): no block fits",
                             c->op, i, v, pad[i], dil[i] * (k[i] - 1) + 1);
      if (!(lb[i] = ir_dim_const(a, (v + less) / st[i] + 1)))
        return ir_infer_dim_fail(c);
      continue;
    }
    ir_dim_err e;
    const ir_dim *span = ir_dim_add(a, hw[i], ir_dim_const(a, less));
    const ir_dim *q = span ? ir_dim_floordiv(a, span, st[i], &e) : NULL;
    if (!q || !(lb[i] = ir_dim_add(a, q, ir_dim_const(a, 1))))
      return ir_infer_dim_fail(c);
    snprintf(what, sizeof what,
             "mo.fold: axis %d: the output size %s with padding %" PRId64
             " must be at least the dilated kernel (%" PRId64 ")",
             i, ir_infer_dim_str(s1, sizeof s1, hw[i]), pad[i], dil[i] * (k[i] - 1) + 1);
    if (ir_infer_need(c, IR_CHECK_GE, span, ir_dim_const(a, 0), what) != 0)
      return -1;
  }
  return 0;
}

int ir_infer_fold(ctx *c, ir_type *r) {
  const ir_type *x = &c->n->in[0]->type;
  int64_t out[2], k[2], st[2], dil[2], pad[2], blocks[2];
  if (fold_geometry(c, out, k, st, dil, pad, blocks) != 0)
    return -1;
  if (x->rank != 3)
    return ir_infer_fail(c, "operand 0 of mo.fold has rank %d but needs rank 3 (N, C * kh * kw, L)",
                         x->rank);
  ir_arena *a = c->g->arena;
  int64_t kk = k[0] * k[1], cd;
  char s1[96], what[300];
  const ir_dim *C;
  if (ir_dim_is_const(x->dims[1], &cd)) {
    if (cd % kk != 0)
      return ir_infer_fail(c,
                           "mo.fold: dim 1 of operand 0 (%" PRId64 ") is not a multiple of "
                           "kh * kw = %" PRId64,
                           cd, kk);
    C = ir_dim_const(a, cd / kk);
  } else {
    ir_dim_err e;
    C = ir_dim_floordiv(a, x->dims[1], kk, &e);
    const ir_dim *back = C ? ir_dim_mul(a, C, ir_dim_const(a, kk)) : NULL;
    if (!back)
      return ir_infer_dim_fail(c);
    snprintf(what, sizeof what,
             "mo.fold: dim 1 of operand 0 (%s) must be a multiple of kh * kw = "
             "%" PRId64,
             ir_infer_dim_str(s1, sizeof s1, x->dims[1]), kk);
    if (ir_infer_need(c, IR_CHECK_EQ, x->dims[1], back, what) != 0)
      return -1;
  }
  if (!C)
    return ir_infer_dim_fail(c);
  const ir_dim *hw[2], *lb[2];
  if (fold_spatial(c, out, k, st, dil, pad, blocks, hw, lb) != 0)
    return -1;
  char s2[96], s3[96];
  bool p0 = !ir_dim_is_const(lb[0], NULL), p1 = !ir_dim_is_const(lb[1], NULL);
  snprintf(what, sizeof what,
           "mo.fold: dim 2 of operand 0 (%s) must be the number of blocks, %s%s%s x %s%s%s",
           ir_infer_dim_str(s1, sizeof s1, x->dims[2]), p0 ? "(" : "",
           ir_infer_dim_str(s2, sizeof s2, lb[0]), p0 ? ")" : "", p1 ? "(" : "",
           ir_infer_dim_str(s3, sizeof s3, lb[1]), p1 ? ")" : "");
  const ir_dim *L = ir_dim_mul(a, lb[0], lb[1]);
  if (!L)
    return ir_infer_dim_fail(c);
  if (ir_infer_need(c, IR_CHECK_EQ, x->dims[2], L, what) != 0)
    return -1;
  const ir_dim *d[4] = {x->dims[0], C, hw[0], hw[1]};
  return ir_infer_res_set(c, r, x->dtype, 4, d, x->device);
}

int ir_infer_roi_align(ctx *c, ir_type *r) {
  const ir_type *x = &c->n->in[0]->type, *rois = &c->n->in[1]->type;
  int64_t oh, ow, sr;
  double scale;
  bool aligned;
  const char *mode;
  if (ir_infer_attr_int(c, "output_height", &oh) != 0 ||
      ir_infer_attr_int(c, "output_width", &ow) != 0 ||
      ir_infer_attr_float(c, "spatial_scale", &scale) != 0 ||
      ir_infer_attr_int(c, "sampling_ratio", &sr) != 0 ||
      ir_infer_attr_bool(c, "aligned", &aligned) != 0 ||
      ir_infer_attr_string(c, "mode", &mode) != 0)
    return -1;
  if (oh < 1 || ow < 1 || oh > INT32_MAX || ow > INT32_MAX)
    return ir_infer_fail(c,
                         "mo.roi_align: output_height and output_width must be in [1, 2^31), "
                         "not %" PRId64 " and %" PRId64,
                         oh, ow);
  if (!(scale > 0) || isinf(scale))
    return ir_infer_fail(c,
                         "attribute 'spatial_scale' of mo.roi_align is %g but must be finite "
                         "and > 0",
                         scale);
  if (sr < 0 || sr > IR_ROI_MAX_GRID)
    return ir_infer_fail(c,
                         "attribute 'sampling_ratio' of mo.roi_align is %" PRId64 " but must be "
                         "in [0, %d] (0: ceil(bin size) samples)",
                         sr, IR_ROI_MAX_GRID);
  if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
    return ir_infer_fail(c,
                         "attribute 'mode' of mo.roi_align is \"%s\" but must be \"avg\" or "
                         "\"max\"",
                         mode);
  if (x->rank != 4)
    return ir_infer_fail(c, "operand 0 of mo.roi_align has rank %d but needs rank 4 (NHWC)",
                         x->rank);
  if (rois->rank != 2)
    return ir_infer_fail(c,
                         "operand 1 of mo.roi_align (rois) has rank %d but needs rank 2 "
                         "([K, 5])",
                         rois->rank);
  char s1[96], what[256];
  snprintf(what, sizeof what,
           "mo.roi_align: dim 1 of the rois (%s) must be 5 (batch index, x1, "
           "y1, x2, y2)",
           ir_infer_dim_str(s1, sizeof s1, rois->dims[1]));
  ir_arena *a = c->g->arena;
  const ir_dim *five = ir_dim_const(a, 5);
  if (!five)
    return ir_infer_dim_fail(c);
  if (ir_infer_need(c, IR_CHECK_EQ, rois->dims[1], five, what) != 0)
    return -1;
  const ir_dim *d[4] = {rois->dims[0], ir_dim_const(a, oh), ir_dim_const(a, ow), x->dims[3]};
  if (!d[1] || !d[2])
    return ir_infer_dim_fail(c);
  return ir_infer_res_set(c, r, x->dtype, 4, d, x->device);
}
