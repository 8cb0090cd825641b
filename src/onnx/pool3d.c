/* pool3d.c - ONNX's 3-D MaxPool / AveragePool (N, C, D, H, W) as two 2-D
 * pools: kiln has mo.max_pool2d and mo.avg_pool2d only.
 *
 * A pooling window is a box, so both pools split by axis: the max (or the
 * mean) over a (d, h, w) box is the max (mean) over d of the max (mean)
 * over each (h, w) slice. The mean splits because the cells counted (the
 * valid ones, or the padded ones with count_include_pad) are a box too: a
 * product of per-axis counts. So (N, C*D, H, W) is pooled over (H, W), the
 * result seen as (N, C, D, H'*W') is pooled over (D, 1), and reshaped to
 * (N, C, D', H', W'). Strides, dilations, pads, auto_pad and ceil_mode act
 * per axis and carry over; only the rounding of a mean differs (a mean of
 * means). */
#include <stdio.h>
#include <string.h>

#include "ox.h"

typedef struct axis_win {
  int64_t k, st, dil, pb, pe; /* kernel, stride, dilation, pad before / after */
} axis_win;

/* The window of n over the three spatial axes of a (dims 2..4). */
static int windows(ox *x, const Onnx__NodeProto *n, const kiln_value *a, axis_win w[3]) {
  int64_t k[3], st[3], dil[3];
  int cnt;
  const int64_t *ks = ox_attr_ints(n, "kernel_shape", &cnt);
  if (!ks || cnt != 3) return ox_fail(x, KILN_ERR_VERIFY, "kernel_shape needs 3 entries");
  memcpy(k, ks, sizeof k);
  if (ox_attr_ints3(x, n, "strides", 1, st) != 0 || ox_attr_ints3(x, n, "dilations", 1, dil) != 0)
    return -1;
  const int64_t *p = ox_attr_ints(n, "pads", &cnt);
  if (p && cnt != 6)
    return ox_fail(x, KILN_ERR_VERIFY, "pads has %d entries for 3 spatial axes", cnt);
  char abuf[32];
  const char *ap = ox_attr_string(n, "auto_pad", "NOTSET", abuf, sizeof abuf);
  bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
  if (!upper && !lower && strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0)
    return ox_unsupported(x, n, "auto_pad '%s'", ap);
  for (int i = 0; i < 3; i++) {
    if (k[i] < 1 || st[i] < 1 || dil[i] < 1)
      return ox_fail(x, KILN_ERR_VERIFY, "kernel_shape, strides and dilations must be >= 1");
    w[i] = (axis_win){k[i], st[i], dil[i], p ? p[i] : 0, p ? p[3 + i] : 0};
    if (strcmp(ap, "VALID") == 0) w[i].pb = w[i].pe = 0;
    if (upper || lower) {
      int64_t len;
      if (!ir_dim_is_const(ox_dim(a, 2 + i), &len))
        return ox_unsupported(x, n, "auto_pad %s on a symbolic spatial dim", ap);
      int64_t eff = dil[i] * (k[i] - 1) + 1, outl = (len + st[i] - 1) / st[i];
      int64_t total = (outl - 1) * st[i] + eff - len;
      if (total < 0) total = 0;
      int64_t small = total / 2, big = total - small;
      w[i].pb = upper ? small : big;
      w[i].pe = upper ? big : small;
    }
  }
  return 0;
}

/* a (NCHW) pooled over its last two axes with windows h and w. */
static kiln_value *pool2d(ox *x, kiln_value *a, const axis_win *h, const axis_win *w, bool avg,
                          bool ceil, bool count_pad) {
  if (!(a = ox_op(x, "permute", &a, 1, NULL, "{dims = [0, 2, 3, 1]}"))) return NULL;
  char win[320];
  snprintf(win, sizeof win,
           "kernel_size = [%lld, %lld], stride = [%lld, %lld], dilation = [%lld, %lld], "
           "padding = [%lld, %lld, %lld, %lld], ceil_mode = %s",
           (long long)h->k, (long long)w->k, (long long)h->st, (long long)w->st,
           (long long)h->dil, (long long)w->dil, (long long)h->pb, (long long)h->pe,
           (long long)w->pb, (long long)w->pe, ceil ? "true" : "false");
  kiln_value *r = avg ? ox_op(x, "avg_pool2d", &a, 1, NULL, "{%s, count_boundary = %s}", win,
                              count_pad ? "true" : "false")
                      : ox_op(x, "max_pool2d", &a, 1, NULL, "{%s}", win);
  return r ? ox_op(x, "permute", &r, 1, NULL, "{dims = [0, 3, 1, 2]}") : NULL;
}

int ox_pool3d(ox *x, const Onnx__NodeProto *n, kiln_value *a, bool avg, kiln_value **res) {
  int nun0 = x->nunsup, rc;
  axis_win w[3];
  if ((rc = windows(x, n, a, w)) != 0) return rc;
  bool ceil = ox_attr_int(n, "ceil_mode", 0) != 0;
  bool count_pad = ox_attr_int(n, "count_include_pad", 0) != 0;
  ir_arena *ar = x->ir->arena;
  const ir_dim *N = ox_dim(a, 0), *C = ox_dim(a, 1), *D = ox_dim(a, 2);
  const ir_dim *s4[4] = {N, ir_dim_mul(ar, C, D), ox_dim(a, 3), ox_dim(a, 4)};
  kiln_value *r;
  if (!(r = ox_reshape(x, a, 4, s4)) || !(r = pool2d(x, r, &w[1], &w[2], avg, ceil, count_pad)))
    return FAILED();
  const ir_dim *Ho = ox_dim(r, 2), *Wo = ox_dim(r, 3);
  const ir_dim *t4[4] = {N, C, D, ir_dim_mul(ar, Ho, Wo)};
  axis_win one = {1, 1, 1, 0, 0};
  if (!(r = ox_reshape(x, r, 4, t4)) || !(r = pool2d(x, r, &w[0], &one, avg, ceil, count_pad)))
    return FAILED();
  const ir_dim *o5[5] = {N, C, ox_dim(r, 2), Ho, Wo};
  if (!(r = ox_reshape(x, r, 5, o5))) return FAILED();
  *res = r;
  return 0;
}
