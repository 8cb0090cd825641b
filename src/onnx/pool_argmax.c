/* pool_argmax.c - ONNX MaxPool's Indices output (2-D): where in the input
 * each window's maximum is, as a flat index: (n C + c) H W + h W + w, or
 * with storage_order 1 (column-major planes) (n C + c) H W + w H + h.
 *
 * mo.max_pool2d gives no position, so the window is walked by its taps:
 * for each (i, j) of the kernel, a strided slice of the padded input (and
 * of an iota of flat indices, padded with -1 to mark the padding) gives
 * that tap of every window, [N, C, Ho, Wo]. A running best keeps the first
 * valid tap in window (row-major) order that is greater than the best so
 * far, as ONNX's reference does; padding never wins (the mask, not a -inf
 * fill: an input of -inf still gets its own index). The padded extent
 * covers the last window of ceil_mode. Ho and Wo are max_pool2d's (the
 * values output), so both outputs agree on the window grid. */
#include <stdio.h>

#include "ox.h"

typedef struct taps {
  ox *x;
  int64_t k[2], st[2], dil[2], pad[4], out[2];
} taps;

/* tap (i, j) of every window of p ([N, C, Hp, Wp], padded) */
static kiln_value *tap(const taps *t, kiln_value *p, int64_t i, int64_t j) {
  ox *x = t->x;
  int64_t h0 = i * t->dil[0], w0 = j * t->dil[1];
  return ox_op(x, "slice_tensor", &p, 1, NULL,
               "{start = [0, 0, %lld, %lld], step = [1, 1, %lld, %lld], "
               "stop = [%lld, %lld, %lld, %lld]}",
               (long long)h0, (long long)w0, (long long)t->st[0], (long long)t->st[1],
               (long long)INT64_MAX, (long long)INT64_MAX,
               (long long)(h0 + (t->out[0] - 1) * t->st[0] + 1),
               (long long)(w0 + (t->out[1] - 1) * t->st[1] + 1));
}

/* v padded by t's pads (the end ones grown to hold every window) with fill */
static kiln_value *pad(const taps *t, kiln_value *v, int64_t h, int64_t w, double fill) {
  int64_t need_h = (t->out[0] - 1) * t->st[0] + t->dil[0] * (t->k[0] - 1) + 1;
  int64_t need_w = (t->out[1] - 1) * t->st[1] + t->dil[1] * (t->k[1] - 1) + 1;
  int64_t bottom = need_h - h - t->pad[0], right = need_w - w - t->pad[2];
  if (bottom < t->pad[1]) bottom = t->pad[1];
  if (right < t->pad[3]) right = t->pad[3];
  return ox_op(t->x, "pad", &v, 1, NULL,
               "{mode = \"constant\", paddings = [0, 0, 0, 0, %lld, %lld, %lld, %lld], "
               "value = %.17g}",
               (long long)t->pad[0], (long long)bottom, (long long)t->pad[2], (long long)right,
               fill);
}

int ox_pool_indices(ox *x, kiln_value *a, const int64_t k[2], const int64_t st[2],
                    const int64_t dil[2], const int64_t pads[4], bool column_major,
                    const kiln_value *y, kiln_value **res) {
  taps t = {.x = x};
  for (int i = 0; i < 2; i++) {
    t.k[i] = k[i], t.st[i] = st[i], t.dil[i] = dil[i];
    t.pad[2 * i] = pads[2 * i], t.pad[2 * i + 1] = pads[2 * i + 1];
  }
  int64_t dims[4];
  const ir_type *at = ox_type(a);
  for (int i = 0; i < 4; i++)
    if (!ir_dim_is_const(at->dims[i], &dims[i])) return 1; /* the caller names it */
  if (!ir_dim_is_const(ox_dim(y, 2), &t.out[0]) || !ir_dim_is_const(ox_dim(y, 3), &t.out[1]))
    return 1;
  int64_t h = dims[2], w = dims[3], numel = dims[0] * dims[1] * h * w;
  /* flat indices shaped as the input, padded with -1: a tap is valid when >= 0 */
  const ir_dim *nd = ir_dim_const(x->ir->arena, numel);
  const ir_dim *wh[4] = {at->dims[0], at->dims[1], at->dims[3], at->dims[2]};
  kiln_value *e = ox_scalar(x, IR_DT_SI64, (double)numel), *m1 = ox_scalar(x, IR_DT_SI64, -1);
  kiln_value *idx;
  if (!e || !m1 || !(idx = ox_range_to(x, e, nd)) ||
      !(idx = ox_reshape(x, idx, 4, column_major ? wh : at->dims)) ||
      (column_major && !(idx = ox_op(x, "permute", &idx, 1, NULL, "{dims = [0, 1, 3, 2]}"))) ||
      !(idx = pad(&t, idx, h, w, -1)) ||
      !(a = pad(&t, a, h, w, 0)))
    return -1;
  kiln_value *best_v = NULL, *best_i = NULL, *best_ok = NULL;
  for (int64_t i = 0; i < t.k[0]; i++)
    for (int64_t j = 0; j < t.k[1]; j++) {
      kiln_value *v = tap(&t, a, i, j), *ix = v ? tap(&t, idx, i, j) : NULL, *ok, *gt, *take;
      kiln_value *no;
      if (!ix || !(ok = OP2("greater", ix, m1))) return -1;
      if (!best_v) {
        best_v = v, best_i = ix, best_ok = ok;
        continue;
      }
      /* take the tap when it is valid and (nothing valid yet or greater) */
      if (!(gt = OP2("greater", v, best_v)) || !(no = OP1("logical_not", best_ok)) ||
          !(gt = OP2("logical_or", gt, no)) || !(take = OP2("logical_and", ok, gt)) ||
          !(best_v = ox_op(x, "where", (kiln_value *[]){take, v, best_v}, 3, NULL, NULL)) ||
          !(best_i = ox_op(x, "where", (kiln_value *[]){take, ix, best_i}, 3, NULL, NULL)) ||
          !(best_ok = OP2("logical_or", best_ok, ok)))
        return -1;
    }
  *res = best_i;
  return 0;
}
