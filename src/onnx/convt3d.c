/* convt3d.c - ONNX's 3-D ConvTranspose of X (N, C, D, H, W) by W (C, M, KD,
 * KH, KW) as two mo.conv2d_transpose: kiln has no 3-D transposed
 * convolution.
 *
 * A transposed convolution scatters each input cell times the kernel into
 * the output, so it splits by axis: the (H, W) scatter of every depth slice
 * d by all KD kernel planes at once (stage 1: the slices as a batch of
 * N * D images, the KD planes as M * KD output channels), then the depth
 * scatter (stage 2): output depth od gets stage 1's plane kd of input slice
 * d where od = d * stride + kd * dilation - pad_begin, which is a transposed
 * convolution over (D, Ho * Wo) of a fixed 0 / 1 filter (KD, 1) taking
 * channel (m, kd) to channel m at tap kd. Strides, dilations, pads and
 * output_padding act per axis, so each stage takes its axes' own; the bias
 * is added by stage 2. output_shape and auto_pad SAME_* become paddings as
 * for 2-D (ox_convt_fit). Stage 2 costs M * KD multiply-adds per output
 * cell and channel on top of the scatter itself; group must be 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox.h"

bool ox_convt_fit(int64_t len, int64_t k, int64_t st, int64_t dil, int64_t want, bool upper,
                  int64_t *pb, int64_t *pe, int64_t *op) {
  int64_t total = st * (len - 1) + *op + (k - 1) * dil + 1 - want;
  int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2); /* floor, as ONNX's // */
  *pb = upper ? half : total - half;
  *pe = total - *pb;
  /* a negative end padding lengthens the output: in the gather form that is
   * output padding (only the start padding shifts the taps) */
  if (*pe < 0) {
    *op -= *pe;
    *pe = 0;
  }
  return *pb >= 0;
}

typedef struct axis3 {
  int64_t k, st, dil, pb, pe, op; /* kernel, stride, dilation, pads, output padding */
} axis3;

/* Each spatial axis's window from n's attributes and the kernel's dims
 * (w's 2..4). 0, -1 or 1. */
static int axes3(ox *x, const Onnx__NodeProto *n, const kiln_value *a, const kiln_value *w,
                 axis3 ax[3]) {
  int64_t st[3], dil[3], op[3], want[3];
  if (ox_attr_ints3(x, n, "strides", 1, st) || ox_attr_ints3(x, n, "dilations", 1, dil) ||
      ox_attr_ints3(x, n, "output_padding", 0, op))
    return -1;
  int cnt;
  const int64_t *p = ox_attr_ints(n, "pads", &cnt);
  if (p && cnt != 6)
    return ox_fail(x, KILN_ERR_VERIFY, "pads has %d entries for 3 spatial axes", cnt);
  const int64_t *os = ox_attr_ints(n, "output_shape", &cnt);
  if (os && cnt != 3)
    return ox_fail(x, KILN_ERR_VERIFY, "output_shape has %d entries for 3 spatial axes", cnt);
  char abuf[32];
  const char *ap = ox_attr_string(n, "auto_pad", "NOTSET", abuf, sizeof abuf);
  bool upper = strcmp(ap, "SAME_UPPER") == 0, same = upper || strcmp(ap, "SAME_LOWER") == 0;
  bool valid = strcmp(ap, "VALID") == 0;
  if (!same && !valid && strcmp(ap, "NOTSET") != 0)
    return ox_unsupported(x, n, "auto_pad '%s'", ap);
  for (int i = 0; i < 3; i++) {
    axis3 *o = &ax[i];
    if (!ir_dim_is_const(ox_dim(w, 2 + i), &o->k))
      return ox_unsupported(x, n, "ConvTranspose weights with a symbolic kernel shape");
    *o = (axis3){o->k, st[i], dil[i], p && !valid ? p[i] : 0, p && !valid ? p[3 + i] : 0, op[i]};
    if (o->st < 1 || o->dil < 1 || o->op < 0)
      return ox_fail(x, KILN_ERR_VERIFY, "strides and dilations must be >= 1, output_padding "
                     ">= 0");
    if (!os && !same) continue;
    int64_t len;
    if (!ir_dim_is_const(ox_dim(a, 2 + i), &len))
      return ox_unsupported(x, n, "output_shape or auto_pad on a symbolic spatial dim");
    want[i] = os ? os[i] : len * o->st;
    if (!ox_convt_fit(len, o->k, o->st, o->dil, want[i], upper, &o->pb, &o->pe, &o->op))
      return ox_unsupported(x, n, "output_shape that needs a negative start padding");
  }
  return 0;
}

/* a (NHWC) transposed-convolved by w (RSFC) over its H and W axes with
 * the windows h and w, plus bias b (NULL: none). */
static kiln_value *convt2d(ox *x, kiln_value *a, kiln_value *w, kiln_value *b, const axis3 *h,
                           const axis3 *ww) {
  kiln_value *ops[3] = {a, w, b};
  return ox_op(x, "conv2d_transpose", ops, b ? 3 : 2, NULL,
               "{stride = [%lld, %lld], dilation = [%lld, %lld], padding = [%lld, %lld, %lld, "
               "%lld], output_paddings = [%lld, %lld]}",
               (long long)h->st, (long long)ww->st, (long long)h->dil, (long long)ww->dil,
               (long long)h->pb, (long long)h->pe, (long long)ww->pb, (long long)ww->pe,
               (long long)h->op, (long long)ww->op);
}

/* The 0 / 1 filter (kd, 1, M, M * kd) taking channel (m, t) to channel m
 * at tap t, of dtype dt. */
static kiln_value *depth_scatter_filter(ox *x, ir_dtype dt, int64_t m, int64_t kd) {
  int64_t shape[4] = {kd, 1, m, m * kd}, numel = kd * m * m * kd;
  size_t es = dt == IR_DT_F64 ? sizeof(double) : sizeof(float);
  char *buf = calloc((size_t)numel, es);
  if (!buf) {
    ox_fail(x, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  for (int64_t t = 0; t < kd; t++)
    for (int64_t c = 0; c < m; c++) {
      int64_t at = (t * m + c) * m * kd + c * kd + t;
      if (dt == IR_DT_F64) ((double *)buf)[at] = 1;
      else ((float *)buf)[at] = 1;
    }
  kiln_value *f = kiln_graph_add_constant(x->g, (kiln_dtype)dt, 4, shape, buf, x->st);
  free(buf);
  return f;
}

int ox_convt3d(ox *x, const Onnx__NodeProto *n, kiln_value *a, kiln_value *w, kiln_value *b,
               kiln_value **res) {
  int nun0 = x->nunsup, rc;
  axis3 ax[3];
  if ((rc = axes3(x, n, a, w, ax)) != 0) return rc;
  int64_t m;
  if (!ir_dim_is_const(ox_dim(w, 1), &m))
    return ox_unsupported(x, n, "ConvTranspose weights with a symbolic output channel count");
  ir_arena *ar = x->ir->arena;
  ir_dtype dt = ox_type(a)->dtype;
  const ir_dim *N = ox_dim(a, 0), *D = ox_dim(a, 2), *kd = ox_dim(w, 2);
  const ir_dim *M = ox_dim(w, 1), *MK = ir_dim_mul(ar, M, kd);
  /* stage 1: (N * D, H, W, C) by (KH, KW, M * KD, C) over (H, W) */
  const ir_dim *s1[4] = {ir_dim_mul(ar, N, D), ox_dim(a, 3), ox_dim(a, 4), ox_dim(a, 1)};
  const ir_dim *f1[4] = {ox_dim(w, 3), ox_dim(w, 4), MK, ox_dim(w, 0)};
  kiln_value *r, *f;
  if (!(r = ox_op(x, "permute", &a, 1, NULL, "{dims = [0, 2, 3, 4, 1]}")) ||
      !(r = ox_reshape(x, r, 4, s1)) ||
      !(f = ox_op(x, "permute", &w, 1, NULL, "{dims = [3, 4, 1, 2, 0]}")) ||
      !(f = ox_reshape(x, f, 4, f1)) || !(r = convt2d(x, r, f, NULL, &ax[1], &ax[2])))
    return FAILED();
  /* stage 2: (N, D, Ho * Wo, M * KD) scattered over D into (N, Do, Ho * Wo, M) */
  const ir_dim *Ho = ox_dim(r, 1), *Wo = ox_dim(r, 2);
  const ir_dim *s2[4] = {N, D, ir_dim_mul(ar, Ho, Wo), MK};
  axis3 flat = {1, 1, 1, 0, 0, 0};
  if (!(r = ox_reshape(x, r, 4, s2)) || !(f = depth_scatter_filter(x, dt, m, ax[0].k)) ||
      !(r = convt2d(x, r, f, b, &ax[0], &flat)))
    return FAILED();
  const ir_dim *o5[5] = {N, ox_dim(r, 1), Ho, Wo, M};
  if (!(r = ox_reshape(x, r, 5, o5)) ||
      !(r = ox_op(x, "permute", &r, 1, NULL, "{dims = [0, 4, 1, 2, 3]}")))
    return FAILED();
  *res = r;
  return 0;
}
