/* interp_vision.c - the reference interpreter's routines for the vision
 * classes: mo.pad (constant, reflect, edge), mo.max_pool2d / mo.avg_pool2d
 * and mo.conv2d / mo.conv2d_transpose / mo.conv3d (NHWC / NDHWC images,
 * RSCF / QRSCF filters). Plain loops over the result's
 * elements, the meaning the JIT and SIMT kernels must match (ops.def
 * documents the attributes).
 *
 * Assumes a verified node; re-derives every size it indexes with from the
 * run-time shapes and the attributes and refuses a mismatch, so no graph or
 * input makes it read or write out of bounds.
 * Floats are summed in double and rounded once (pools, conv2d); pad and
 * max_pool2d copy elements, so they are exact. */
#include "interp_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int64_t ir_pad_int_value(ir_dtype dt, double v) {
  int64_t i = isnan(v) ? 0 : v >= 9223372036854775807.0 ? INT64_MAX : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
  return ir_ref_wrap_i(dt, (uint64_t)i);
}

/* Where coordinate o of a padded axis reads in an axis of n elements
 * (before: the padding before it); -1 for the padding value. */
static int64_t pad_source(int64_t o, int64_t before, int64_t n, int mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  if (mode == 0 || n == 0) return -1;
  if (mode == 2) return i < 0 ? 0 : n - 1; /* edge */
  if (n == 1) return 0;                    /* reflect: period 2 (n - 1) */
  int64_t p = 2 * (n - 1), m = ((i % p) + p) % p;
  return m < n ? m : p - m;
}

int ir_ref_pad(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen) {
  const ir_attr *pa = ir_node_attr(n, "paddings");
  const ir_attr *ma = ir_node_attr_or_default(n, "mode");
  if (!pa || pa->kind != IR_ATTR_INTS || pa->u.ints.n != 2 * x->rank || !ma || ma->kind != IR_ATTR_STRING)
    return ir_ref_fail(msg, msglen, "paddings must have 2 entries per axis");
  const char *ms = ma->u.s ? ma->u.s : "constant";
  int mode = strcmp(ms, "reflect") == 0 ? 1 : strcmp(ms, "edge") == 0 ? 2 : 0;
  double value = ir_node_attr_float(n, "value", 0.0);
  bool same = x->rank == y->rank && x->dtype == y->dtype;
  const int64_t *p = pa->u.ints.v;
  for (int i = 0; same && i < x->rank; i++) same = y->shape[i] == x->shape[i] + p[2 * i] + p[2 * i + 1];
  if (!same) return ir_ref_fail(msg, msglen, "the result's shape does not match the paddings");
  bool fl = ir_dtype_is_float(x->dtype);
  size_t es = ir_dtype_size(x->dtype);
  int64_t total = ir_tensor_numel(y);
  for (int64_t e = 0; e < total; e++) {
    int64_t rest = e, src = 0, stride = 1;
    bool outside = false;
    for (int a = x->rank - 1; a >= 0; a--) {
      int64_t o = rest % y->shape[a];
      rest /= y->shape[a];
      int64_t i = pad_source(o, p[2 * a], x->shape[a], mode);
      if (i < 0) outside = true;
      src += i * stride;
      stride *= x->shape[a];
    }
    if (!outside)
      memcpy(ir_ref_elem(y, e), ir_ref_elem(x, src), es);
    else if (fl)
      ir_ref_st_f(y, e, value);
    else if (x->dtype == IR_DT_BOOL)
      ir_ref_st_i(y, e, value != 0.0);
    else
      ir_ref_st_i(y, e, ir_pad_int_value(x->dtype, value));
  }
  return 0;
}

/* The window geometry of a pool or conv2d node: [h, w] pairs and padding
 * [top, bottom, left, right], with the defaults of an empty list. */
typedef struct win {
  int64_t k[2], st[2], dil[2], pad[4];
} win;

static bool pair_attr(const ir_node *n, const char *name, int64_t dflt, int64_t out[2]) {
  const ir_attr *a = ir_node_attr_or_default(n, name);
  if (!a || a->kind != IR_ATTR_INTS || a->u.ints.n > 2) return false;
  out[0] = out[1] = dflt;
  if (a->u.ints.n > 0) {
    out[0] = a->u.ints.v[0];
    out[1] = a->u.ints.v[a->u.ints.n - 1];
  }
  return out[0] >= 1 && out[1] >= 1;
}

static bool win_read(const ir_node *n, win *w) {
  const ir_attr *pa = ir_node_attr_or_default(n, "padding");
  if (!pair_attr(n, "stride", 1, w->st) || !pair_attr(n, "dilation", 1, w->dil) || !pa ||
      pa->kind != IR_ATTR_INTS)
    return false;
  const int64_t *v = pa->u.ints.v;
  switch (pa->u.ints.n) {
  case 0: w->pad[0] = w->pad[1] = w->pad[2] = w->pad[3] = 0; break;
  case 1: case 2: w->pad[0] = w->pad[1] = v[0]; w->pad[2] = w->pad[3] = v[pa->u.ints.n - 1]; break;
  case 4: for (int i = 0; i < 4; i++) w->pad[i] = v[i]; break;
  default: return false;
  }
  return true;
}

int ir_ref_pool(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen) {
  win w;
  const ir_attr *ka = ir_node_attr(n, "kernel_size");
  if (!ka || ka->kind != IR_ATTR_INTS || ka->u.ints.n != 2 || !win_read(n, &w))
    return ir_ref_fail(msg, msglen, "malformed window attributes");
  w.k[0] = ka->u.ints.v[0];
  w.k[1] = ka->u.ints.v[1];
  if (x->rank != 4 || y->rank != 4 || x->dtype != y->dtype || y->shape[0] != x->shape[0] ||
      y->shape[3] != x->shape[3])
    return ir_ref_fail(msg, msglen, "the operand and result must be NHWC of one batch, channels and dtype");
  bool avg = n->op == IR_OP_AVG_POOL2D, fl = ir_ref_is_fc(x->dtype);
  bool cb = ir_node_attr_bool(n, "count_boundary", true);
  int64_t H = x->shape[1], W = x->shape[2], C = x->shape[3], Ho = y->shape[1], Wo = y->shape[2];
  for (int64_t b = 0; b < x->shape[0]; b++)
    for (int64_t oh = 0; oh < Ho; oh++)
      for (int64_t ow = 0; ow < Wo; ow++)
        for (int64_t c = 0; c < C; c++) {
          double fs = avg ? 0.0 : -INFINITY;
          int64_t is = ir_ref_int_min(x->dtype), cnt = 0, bound = 0;
          for (int64_t r = 0; r < w.k[0]; r++)
            for (int64_t s = 0; s < w.k[1]; s++) {
              int64_t ih = oh * w.st[0] - w.pad[0] + r * w.dil[0];
              int64_t iw = ow * w.st[1] - w.pad[2] + s * w.dil[1];
              if (ih < H + w.pad[1] && iw < W + w.pad[3]) bound++; /* inside the padded input */
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              int64_t e = ((b * H + ih) * W + iw) * C + c;
              cnt++;
              if (avg)
                fs += ir_ref_ld_f(x, e);
              else if (fl)
                fs = ir_ref_max_f(fs, ir_ref_ld_f(x, e));
              else if (ir_ref_ld_i(x, e) > is)
                is = ir_ref_ld_i(x, e);
            }
          int64_t o = ((b * Ho + oh) * Wo + ow) * C + c;
          if (avg)
            ir_ref_st_f(y, o, fs / (double)(cb ? bound : cnt));
          else if (fl)
            ir_ref_st_f(y, o, fs);
          else
            ir_ref_st_i(y, o, is);
        }
  return 0;
}

/* conv2d_transpose: each result element gathers the taps whose input
 * pixel lands on it (oh + top - r * dh = ih * sh). */
static int conv_t(const ir_node *n, const ir_tensor *x, const ir_tensor *f, const ir_tensor *bias,
                  ir_tensor *y, char *msg, size_t msglen) {
  win w;
  if (!win_read(n, &w)) return ir_ref_fail(msg, msglen, "malformed window attributes");
  if (x->rank != 4 || f->rank != 4 || y->rank != 4 || y->shape[0] != x->shape[0] ||
      f->shape[3] != x->shape[3] || f->shape[2] != y->shape[3] ||
      (bias && (bias->rank != 1 || bias->shape[0] != f->shape[2])))
    return ir_ref_fail(msg, msglen, "the operands' shapes do not fit NHWC and RSFC");
  int64_t H = x->shape[1], W = x->shape[2], C = x->shape[3], R = f->shape[0], S = f->shape[1];
  int64_t F = f->shape[2], Ho = y->shape[1], Wo = y->shape[2];
  for (int64_t b = 0; b < x->shape[0]; b++)
    for (int64_t oh = 0; oh < Ho; oh++)
      for (int64_t ow = 0; ow < Wo; ow++)
        for (int64_t o = 0; o < F; o++) {
          double sum = bias ? ir_ref_ld_f(bias, o) : 0.0;
          for (int64_t r = 0; r < R; r++)
            for (int64_t s = 0; s < S; s++) {
              int64_t th = oh + w.pad[0] - r * w.dil[0], tw = ow + w.pad[2] - s * w.dil[1];
              if (th < 0 || tw < 0 || th % w.st[0] || tw % w.st[1]) continue;
              int64_t ih = th / w.st[0], iw = tw / w.st[1];
              if (ih >= H || iw >= W) continue;
              for (int64_t c = 0; c < C; c++)
                sum += ir_ref_ld_f(x, ((b * H + ih) * W + iw) * C + c) *
                       ir_ref_ld_f(f, ((r * S + s) * F + o) * C + c);
            }
          ir_ref_st_f(y, ((b * Ho + oh) * Wo + ow) * F + o, sum);
        }
  return 0;
}

/* A list attribute of 3 values (one value: all; empty: dflt). */
static bool triple(const ir_node *n, const char *name, int64_t dflt, int64_t out[3]) {
  const ir_attr *a = ir_node_attr_or_default(n, name);
  if (!a || a->kind != IR_ATTR_INTS || (a->u.ints.n != 0 && a->u.ints.n != 1 && a->u.ints.n != 3))
    return false;
  for (int i = 0; i < 3; i++) out[i] = a->u.ints.n ? a->u.ints.v[a->u.ints.n == 1 ? 0 : i] : dflt;
  return true;
}

static int conv3d(const ir_node *n, const ir_tensor *x, const ir_tensor *f, const ir_tensor *bias,
                  ir_tensor *y, char *msg, size_t msglen) {
  int64_t st[3], dil[3], pad[6] = {0}, groups = ir_node_attr_int(n, "groups", 1);
  const ir_attr *pa = ir_node_attr_or_default(n, "padding");
  if (!triple(n, "stride", 1, st) || !triple(n, "dilation", 1, dil) || !pa ||
      pa->kind != IR_ATTR_INTS || (pa->u.ints.n != 0 && pa->u.ints.n != 6) || groups < 1)
    return ir_ref_fail(msg, msglen, "malformed window attributes");
  for (int i = 0; i < pa->u.ints.n; i++) pad[i] = pa->u.ints.v[i];
  if (x->rank != 5 || f->rank != 5 || y->rank != 5 || y->shape[0] != x->shape[0] ||
      f->shape[3] * groups != x->shape[4] || f->shape[4] != y->shape[4] || f->shape[4] % groups != 0 ||
      (bias && (bias->rank != 1 || bias->shape[0] != f->shape[4])))
    return ir_ref_fail(msg, msglen, "the operands' shapes do not fit NDHWC, QRSCF and groups");
  const int64_t *xs = x->shape, *fs = f->shape, *ys = y->shape;
  int64_t Cg = fs[3], F = fs[4], Fg = F / groups;
  int64_t total = ir_tensor_numel(y);
  for (int64_t e = 0; e < total; e++) {
    int64_t o = e % F, ow = e / F % ys[3], oh = e / F / ys[3] % ys[2], od = e / F / ys[3] / ys[2] % ys[1];
    int64_t b = e / F / ys[3] / ys[2] / ys[1], g = o / Fg;
    double sum = bias ? ir_ref_ld_f(bias, o) : 0.0;
    for (int64_t q = 0; q < fs[0]; q++)
      for (int64_t r = 0; r < fs[1]; r++)
        for (int64_t s = 0; s < fs[2]; s++) {
          int64_t id = od * st[0] - pad[0] + q * dil[0], ih = oh * st[1] - pad[2] + r * dil[1];
          int64_t iw = ow * st[2] - pad[4] + s * dil[2];
          if (id < 0 || id >= xs[1] || ih < 0 || ih >= xs[2] || iw < 0 || iw >= xs[3]) continue;
          for (int64_t c = 0; c < Cg; c++)
            sum += ir_ref_ld_f(x, (((b * xs[1] + id) * xs[2] + ih) * xs[3] + iw) * xs[4] + g * Cg + c) *
                   ir_ref_ld_f(f, (((q * fs[1] + r) * fs[2] + s) * Cg + c) * F + o);
        }
    ir_ref_st_f(y, e, sum);
  }
  return 0;
}

int ir_ref_conv(const ir_node *n, const ir_tensor *x, const ir_tensor *f, const ir_tensor *bias,
                ir_tensor *y, char *msg, size_t msglen) {
  if (n->op == IR_OP_CONV2D_TRANSPOSE) return conv_t(n, x, f, bias, y, msg, msglen);
  if (n->op == IR_OP_CONV3D) return conv3d(n, x, f, bias, y, msg, msglen);
  win w;
  int64_t groups = ir_node_attr_int(n, "groups", 1);
  if (!win_read(n, &w) || groups < 1) return ir_ref_fail(msg, msglen, "malformed window attributes");
  if (x->rank != 4 || f->rank != 4 || y->rank != 4 || y->shape[0] != x->shape[0] ||
      f->shape[2] * groups != x->shape[3] || f->shape[3] != y->shape[3] || f->shape[3] % groups != 0 ||
      (bias && (bias->rank != 1 || bias->shape[0] != f->shape[3])))
    return ir_ref_fail(msg, msglen, "the operands' shapes do not fit NHWC, RSCF and groups");
  int64_t H = x->shape[1], W = x->shape[2], C = x->shape[3], R = f->shape[0], S = f->shape[1];
  int64_t Cg = f->shape[2], F = f->shape[3], Fg = F / groups, Ho = y->shape[1], Wo = y->shape[2];
  for (int64_t b = 0; b < x->shape[0]; b++)
    for (int64_t oh = 0; oh < Ho; oh++)
      for (int64_t ow = 0; ow < Wo; ow++)
        for (int64_t o = 0; o < F; o++) {
          int64_t g = o / Fg;
          double sum = bias ? ir_ref_ld_f(bias, o) : 0.0;
          for (int64_t r = 0; r < R; r++)
            for (int64_t s = 0; s < S; s++) {
              int64_t ih = oh * w.st[0] - w.pad[0] + r * w.dil[0];
              int64_t iw = ow * w.st[1] - w.pad[2] + s * w.dil[1];
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              for (int64_t c = 0; c < Cg; c++)
                sum += ir_ref_ld_f(x, ((b * H + ih) * W + iw) * C + g * Cg + c) *
                       ir_ref_ld_f(f, ((r * S + s) * Cg + c) * F + o);
            }
          ir_ref_st_f(y, ((b * Ho + oh) * Wo + ow) * F + o, sum);
        }
  return 0;
}
