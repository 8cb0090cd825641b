/* ops_vision.c - ONNX's Pad, MaxPool, AveragePool, Conv (and ConvInteger,
 * computed in f64 and cast to si32, and QLinearConv), ConvTranspose and
 * the global pools onto kiln's mo.pad, mo.max_pool2d, mo.avg_pool2d,
 * mo.conv2d, mo.conv2d_transpose and reductions.
 *
 * Layout: ONNX images are NCHW and Conv weights OIHW, kiln's ops are MAX's
 * NHWC with RSCF filters. The mappers permute around the op (input to NHWC,
 * weights to RSCF, the result back to NCHW) instead of giving the ops a
 * layout attribute: kiln keeps one meaning and one kernel per op to make
 * fast, and a permute is a streaming copy next to the op's work. 1-D pools
 * and transposed convolutions (N, C, L) run as 2-D ones over (N, C, 1, L).
 * A 3-D Conv (NCDHW, OIDHW) maps to mo.conv3d the same way; 3-D pools are
 * two 2-D ones (pool3d.c).
 * ConvTranspose: group 1; output_shape and auto_pad SAME_* become paddings
 * as ONNX computes them (a negative end padding becomes output padding);
 * 3-D ones are two 2-D ones (convt3d.c).
 * Window attributes (kernel_shape, strides, dilations, pads as [begin...,
 * end...], auto_pad) become kiln's [h, w] lists and [top, bottom, left,
 * right] padding; SAME_UPPER / SAME_LOWER need static spatial dims.
 * GlobalAveragePool / GlobalMaxPool are mo.mean / mo.max over each spatial
 * axis (kept with size 1), any layout.
 * Pad's pads and constant_value known at import become mo.pad's
 * attributes; run-time ones (graph inputs or computed from them) go to
 * pad_data.c. The axes must be known at import. */
#include <stdio.h>
#include <string.h>

#include "ox.h"

/* a permuted with dims "0, 2, 3, 1" */
static kiln_value *permute(ox *x, kiln_value *a, const char *dims) {
  return ox_op(x, "permute", &a, 1, NULL, "{dims = [%s]}", dims);
}

/* ---- Pad ---- */

/* The constant of a known or initializer value (one element). */
static bool scalar_of(const ox_val *v, double *out) {
  int64_t k;
  int n;
  if (v->init && kiln_tensor_numel(v->init) == 1) {
    const void *p = kiln_tensor_data(v->init);
    switch (kiln_tensor_dtype(v->init)) {
    case KILN_FLOAT32: *out = *(const float *)p; return true;
    case KILN_FLOAT64: *out = *(const double *)p; return true;
    default: break;
    }
  }
  if (ox_known_consts(v, &k, 1, &n) && n == 1) {
    *out = (double)k;
    return true;
  }
  return false;
}

int ox_op_Pad(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  (void)nout;
  kiln_value *a = IN(0);
  if (!a) return rc;
  int rank = ox_type(a)->rank, np = 0, na = 0;
  int64_t pads[2 * IR_MAX_RANK], axes[IR_MAX_RANK];
  double value = 0.0;
  if (x->opset < 11) {
    const int64_t *p = ox_attr_ints(n, "pads", &np);
    if (np > 2 * IR_MAX_RANK) return ox_fail(x, KILN_ERR_VERIFY, "pads has %d entries", np);
    if (p) memcpy(pads, p, (size_t)np * sizeof *pads);
    value = ox_attr_float(n, "value", 0.0);
  }
  if (nin > 3 && in[3]) {
    if (!ox_known_consts(in[3], axes, IR_MAX_RANK, &na))
      return ox_unsupported(x, n, "axes must be known at import");
  } else {
    na = rank;
    for (int i = 0; i < rank; i++) axes[i] = i;
  }
  char mbuf[32];
  const char *mode = ox_attr_string(n, "mode", "constant", mbuf, sizeof mbuf);
  if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0)
    return ox_unsupported(x, n, "Pad mode '%s'", mode);
  if (x->opset >= 11) {
    if (nin < 2 || !in[1]) return ox_fail(x, KILN_ERR_VERIFY, "Pad needs its pads input");
    bool run_time = !ox_known_consts(in[1], pads, 2 * IR_MAX_RANK, &np);
    ox_val *cval = NULL;
    if (nin > 2 && in[2] && !scalar_of(in[2], &value)) {
      if (!ox_run_time_data(in[2]))
        return ox_unsupported(x, n, "constant_value is neither known at import nor computed "
                              "from the inputs");
      cval = in[2];
      run_time = true;
    }
    if (run_time && !ox_run_time_data(in[1]) && !in[1]->known)
      return ox_unsupported(x, n, "pads are neither known at import nor computed from the "
                            "inputs");
    if (run_time && !in[1]->known)
      return ox_pad_data(x, n, a, in[1], cval, value, axes, na, mode, out[0]);
    if (run_time)
      return ox_unsupported(x, n, "a run-time constant_value with pads known at import");
  }
  if (np != 2 * na)
    return ox_fail(x, KILN_ERR_VERIFY, "pads has %d entries for %d axes", np, na);
  int64_t kp[2 * IR_MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    int ax;
    if (!ox_axis(axes[i], rank, &ax)) return ox_fail(x, KILN_ERR_VERIFY, "axis %lld out of range", (long long)axes[i]);
    kp[2 * ax] = pads[i];
    kp[2 * ax + 1] = pads[na + i];
  }
  char list[2 * IR_MAX_RANK * 24] = "";
  size_t k = 0;
  for (int i = 0; i < 2 * rank; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%lld", i ? ", " : "", (long long)kp[i]);
  if (!(out[0]->v = ox_op(x, "pad", &a, 1, NULL, "{mode = \"%s\", paddings = [%s], value = %.17g}",
                          mode, list, value)))
    return FAILED();
  return 0;
}

/* ---- windows ---- */

typedef struct owin {
  int64_t k[2], st[2], dil[2], pad[4]; /* pad: top, bottom, left, right */
} owin;

/* A 2-entry list attribute (1 entry for a 1-D op: [1, v]); dflt when absent. */
static int pair(ox *x, const Onnx__NodeProto *n, const char *name, int sp, int64_t dflt,
                int64_t out[2]) {
  int cnt;
  const int64_t *v = ox_attr_ints(n, name, &cnt);
  out[0] = out[1] = dflt;
  if (!v) return 0;
  if (cnt != sp) return ox_fail(x, KILN_ERR_VERIFY, "%s has %d entries for %d spatial axes", name, cnt, sp);
  out[0] = sp == 2 ? v[0] : 1;
  out[1] = v[sp - 1];
  return 0;
}

/* The window of node n over spatial dims (h, w) (NCHW axes 2, 3; sp = 1
 * for a 1-D op: h is 1); k holds the kernel. 0, -1 or 1 (unsupported). */
static int window(ox *x, const Onnx__NodeProto *n, int sp, const ir_dim *h, const ir_dim *w,
                  owin *o) {
  if (pair(x, n, "strides", sp, 1, o->st) != 0 || pair(x, n, "dilations", sp, 1, o->dil) != 0)
    return -1;
  int cnt;
  const int64_t *p = ox_attr_ints(n, "pads", &cnt);
  memset(o->pad, 0, sizeof o->pad);
  if (p) {
    if (cnt != 2 * sp) return ox_fail(x, KILN_ERR_VERIFY, "pads has %d entries for %d spatial axes", cnt, sp);
    if (sp == 2) {
      o->pad[0] = p[0], o->pad[1] = p[2], o->pad[2] = p[1], o->pad[3] = p[3];
    } else {
      o->pad[2] = p[0], o->pad[3] = p[1];
    }
  }
  char abuf[32];
  const char *ap = ox_attr_string(n, "auto_pad", "NOTSET", abuf, sizeof abuf);
  if (strcmp(ap, "VALID") == 0) memset(o->pad, 0, sizeof o->pad);
  bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
  if (upper || lower) {
    const ir_dim *d[2] = {h, w};
    for (int i = 0; i < 2; i++) {
      int64_t len;
      if (!ir_dim_is_const(d[i], &len))
        return ox_unsupported(x, n, "auto_pad %s on a symbolic spatial dim", ap);
      int64_t eff = o->dil[i] * (o->k[i] - 1) + 1, outl = (len + o->st[i] - 1) / o->st[i];
      int64_t total = (outl - 1) * o->st[i] + eff - len;
      if (total < 0) total = 0;
      int64_t small = total / 2, big = total - small;
      o->pad[2 * i] = upper ? small : big;
      o->pad[2 * i + 1] = upper ? big : small;
    }
  } else if (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0) {
    return ox_unsupported(x, n, "auto_pad '%s'", ap);
  }
  return 0;
}

/* "stride = [..], dilation = [..], padding = [..]" */
static const char *window_text(char *buf, size_t cap, const owin *o) {
  snprintf(buf, cap,
           "stride = [%lld, %lld], dilation = [%lld, %lld], padding = [%lld, %lld, %lld, %lld]",
           (long long)o->st[0], (long long)o->st[1], (long long)o->dil[0], (long long)o->dil[1],
           (long long)o->pad[0], (long long)o->pad[1], (long long)o->pad[2], (long long)o->pad[3]);
  return buf;
}

/* a (N, C, L) as (N, C, 1, L), or back from (N, C, 1, Lo) */
static kiln_value *to_2d(ox *x, kiln_value *a) {
  const ir_dim *d[4] = {ox_dim(a, 0), ox_dim(a, 1), ir_dim_const(x->ir->arena, 1), ox_dim(a, 2)};
  return ox_reshape(x, a, 4, d);
}
static kiln_value *from_2d(ox *x, kiln_value *a) {
  const ir_dim *d[3] = {ox_dim(a, 0), ox_dim(a, 1), ox_dim(a, 3)};
  return ox_reshape(x, a, 3, d);
}

static int pool_2d(ox *x, const Onnx__NodeProto *n, kiln_value *a, bool avg, kiln_value **res,
                   owin *win);

static int pool(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout,
                bool avg) {
  BEGIN;
  kiln_value *a = IN(0), *r;
  if (!a) return rc;
  bool indices = !avg && nout > 1 && out[1];
  int rank = ox_type(a)->rank;
  if (indices && rank != 4)
    return ox_unsupported(x, n, "the Indices output of a %d-D MaxPool", rank - 2);
  if (rank != 3 && rank != 4 && rank != 5) return ox_unsupported(x, n, "%d-D pooling", rank - 2);
  /* storage_order orders the Indices output only */
  bool column_major = ox_attr_int(n, "storage_order", 0) != 0;
  ir_dtype dt = ox_type(a)->dtype, run = dt;
  if (dt == IR_DT_UI32 || dt == IR_DT_UI64 || dt == IR_DT_BOOL)
    return ox_unsupported(x, n, "%s pooling", ir_dtype_name(dt));
  /* dtypes the op lacks run as the nearest it has: floats as f32, ints as si32 / si64 */
  if (avg ? !(dt == IR_DT_F32 || dt == IR_DT_F64)
          : !(dt == IR_DT_F32 || dt == IR_DT_F64 || dt == IR_DT_SI32 || dt == IR_DT_SI64))
    run = ir_dtype_is_float(dt) || avg ? IR_DT_F32
          : ir_dtype_size(dt) < 4      ? IR_DT_SI32
                                       : IR_DT_SI64;
  if (run != dt && !(a = ox_op(x, "cast", &a, 1, NULL, "{dtype = %s}", ir_dtype_name(run))))
    return FAILED();
  owin o;
  if (rank == 5) {
    if ((rc = ox_pool3d(x, n, a, avg, &r)) != 0) return rc;
  } else if ((rc = pool_2d(x, n, a, avg, &r, &o)) != 0) {
    return rc;
  }
  if (indices) {
    kiln_value *ix;
    if ((rc = ox_pool_indices(x, a, o.k, o.st, o.dil, o.pad, column_major, r, &ix)) < 0)
      return FAILED();
    if (rc > 0) return ox_unsupported(x, n, "the Indices output with a symbolic dim");
    out[1]->v = ix;
  }
  if (run != dt && !(r = ox_op(x, "cast", &r, 1, NULL, "{dtype = %s}", ir_dtype_name(dt))))
    return FAILED();
  out[0]->v = r;
  return 0;
}

/* a (N, C, L) or (N, C, H, W), pooled by mo.max_pool2d / mo.avg_pool2d */
static int pool_2d(ox *x, const Onnx__NodeProto *n, kiln_value *a, bool avg, kiln_value **res,
                   owin *win) {
  int nun0 = x->nunsup, rc, rank = ox_type(a)->rank, sp = rank - 2, cnt;
  kiln_value *r;
  owin o;
  const int64_t *ks = ox_attr_ints(n, "kernel_shape", &cnt);
  if (!ks || cnt != sp) return ox_fail(x, KILN_ERR_VERIFY, "kernel_shape needs %d entries", sp);
  o.k[0] = sp == 2 ? ks[0] : 1;
  o.k[1] = ks[sp - 1];
  const ir_dim *h = sp == 2 ? ox_dim(a, 2) : ir_dim_const(x->ir->arena, 1), *w = ox_dim(a, rank - 1);
  if ((rc = window(x, n, sp, h, w, &o)) != 0) return rc;
  if (sp == 1 && !(a = to_2d(x, a))) return FAILED();
  char wt[256];
  if (!(a = permute(x, a, "0, 2, 3, 1"))) return FAILED();
  if (avg)
    r = ox_op(x, "avg_pool2d", &a, 1, NULL, "{kernel_size = [%lld, %lld], %s, ceil_mode = %s, count_boundary = %s}",
              (long long)o.k[0], (long long)o.k[1], window_text(wt, sizeof wt, &o),
              ox_attr_int(n, "ceil_mode", 0) ? "true" : "false",
              ox_attr_int(n, "count_include_pad", 0) ? "true" : "false");
  else
    r = ox_op(x, "max_pool2d", &a, 1, NULL, "{kernel_size = [%lld, %lld], %s, ceil_mode = %s}",
              (long long)o.k[0], (long long)o.k[1], window_text(wt, sizeof wt, &o),
              ox_attr_int(n, "ceil_mode", 0) ? "true" : "false");
  if (!r || !(r = permute(x, r, "0, 3, 1, 2"))) return FAILED();
  if (sp == 1 && !(r = from_2d(x, r))) return FAILED();
  *res = r;
  *win = o;
  return 0;
}

int ox_op_MaxPool(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return pool(x, n, in, nin, out, nout, false);
}

int ox_op_AveragePool(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                      int nout) {
  return pool(x, n, in, nin, out, nout, true);
}

/* ---- Conv ---- */

/* 3-D Conv: NCDHW around mo.conv3d, weights OIDHW -> QRSCF; auto_pad NOTSET
 * or VALID. */
static int conv3d(ox *x, const Onnx__NodeProto *n, kiln_value *a, kiln_value *w, kiln_value *b,
                  ox_val **out, int nun0) {
  int nv;
  int64_t st[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, p[6] = {0};
  const char *names[2] = {"strides", "dilations"};
  int64_t *dst[2] = {st, dil};
  for (int k = 0; k < 2; k++) {
    const int64_t *v = ox_attr_ints(n, names[k], &nv);
    if (v && nv != 3) return ox_fail(x, KILN_ERR_VERIFY, "%s has %d entries for 3 spatial axes", names[k], nv);
    for (int i = 0; v && i < 3; i++) dst[k][i] = v[i];
  }
  const int64_t *pv = ox_attr_ints(n, "pads", &nv);
  if (pv && nv != 6) return ox_fail(x, KILN_ERR_VERIFY, "pads has %d entries for 3 spatial axes", nv);
  for (int i = 0; pv && i < 3; i++) p[2 * i] = pv[i], p[2 * i + 1] = pv[3 + i];
  char abuf[32];
  const char *ap = ox_attr_string(n, "auto_pad", "NOTSET", abuf, sizeof abuf);
  if (strcmp(ap, "VALID") == 0) memset(p, 0, sizeof p);
  else if (strcmp(ap, "NOTSET") != 0) return ox_unsupported(x, n, "3-D Conv with auto_pad '%s'", ap);
  kiln_value *r;
  if (!(a = permute(x, a, "0, 2, 3, 4, 1")) || !(w = permute(x, w, "2, 3, 4, 1, 0"))) return FAILED();
  kiln_value *ops[3] = {a, w, b};
  if (!(r = ox_op(x, "conv3d", ops, b ? 3 : 2, NULL,
                  "{stride = [%lld, %lld, %lld], dilation = [%lld, %lld, %lld], padding = [%lld, "
                  "%lld, %lld, %lld, %lld, %lld], groups = %lld}",
                  (long long)st[0], (long long)st[1], (long long)st[2], (long long)dil[0],
                  (long long)dil[1], (long long)dil[2], (long long)p[0], (long long)p[1],
                  (long long)p[2], (long long)p[3], (long long)p[4], (long long)p[5],
                  (long long)ox_attr_int(n, "group", 1))) ||
      !(r = permute(x, r, "0, 4, 1, 2, 3")))
    return FAILED();
  out[0]->v = r;
  return 0;
}

/* Conv of values a, w and an optional bias b: out[0] set. */
static int conv_of(ox *x, const Onnx__NodeProto *n, kiln_value *a, kiln_value *w, kiln_value *b,
                   ox_val **out, int nun0) {
  kiln_value *r;
  const ir_type *ta = ox_type(a), *tw = ox_type(w);
  if (ta->dtype != IR_DT_F32 && ta->dtype != IR_DT_F64)
    return ox_unsupported(x, n, "%s Conv", ir_dtype_name(ta->dtype));
  if (ta->rank == 5 && tw->rank == 5) return conv3d(x, n, a, w, b, out, nun0);
  if (ta->rank != 4 || tw->rank != 4) return ox_unsupported(x, n, "%d-D Conv", ta->rank - 2);
  owin o;
  if (!ir_dim_is_const(tw->dims[2], &o.k[0]) || !ir_dim_is_const(tw->dims[3], &o.k[1]))
    return ox_unsupported(x, n, "Conv weights with a symbolic kernel shape");
  int rc2 = window(x, n, 2, ta->dims[2], ta->dims[3], &o);
  if (rc2 != 0) return rc2;
  char wt[256];
  if (!(a = permute(x, a, "0, 2, 3, 1")) || !(w = permute(x, w, "2, 3, 1, 0"))) return FAILED();
  kiln_value *ops[3] = {a, w, b};
  if (!(r = ox_op(x, "conv2d", ops, b ? 3 : 2, NULL, "{%s, groups = %lld}",
                  window_text(wt, sizeof wt, &o), (long long)ox_attr_int(n, "group", 1))) ||
      !(r = permute(x, r, "0, 3, 1, 2")))
    return FAILED();
  out[0]->v = r;
  return 0;
}

int ox_op_Conv(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  (void)nout;
  kiln_value *a = IN(0), *w = a ? IN(1) : NULL, *b = NULL;
  if (!w) return rc;
  if (nin > 2 && in[2] && !(b = IN(2))) return rc;
  return conv_of(x, n, a, w, b, out, nun0);
}

/* (x - x_zero_point) conv (w - w_zero_point) [+ bias] in f64 into out[0]:
 * v = {x, w, x_zp or NULL, w_zp or NULL}, bias NULL or f64 [M]; w's zero
 * point per tensor or per output channel ([M] -> [M, 1, ...]). Every sum of
 * 8-bit products (and an int32 bias) below 2^53 is exact in f64. */
static int conv_integer(ox *x, const Onnx__NodeProto *n, kiln_value **v, kiln_value *bias,
                        ox_val **out, const char *what) {
  int nun0 = x->nunsup;
  for (int i = 0; i < 2; i++) {
    ir_dtype dt = ox_type(v[i])->dtype;
    if (dt != IR_DT_UI8 && dt != IR_DT_SI8)
      return ox_unsupported(x, n, "%s %s (ONNX and kiln: ui8, si8)", ir_dtype_name(dt), what);
  }
  for (int i = 0; i < 2; i++) {
    if (!(v[i] = ox_op(x, "cast", &v[i], 1, NULL, "{dtype = f64}"))) return FAILED();
    kiln_value *z = v[2 + i];
    if (!z) continue;
    const ir_type *tz = ox_type(z);
    int64_t c;
    if (tz->rank > 1 || (i == 0 && tz->rank == 1 && !(ir_dim_is_const(tz->dims[0], &c) && c == 1)))
      return ox_unsupported(x, n, "a %s zero point of shape rank %d (per tensor%s)",
                            i ? "w" : "x", tz->rank, i ? " or per output channel" : "");
    if (!(z = ox_op(x, "cast", &z, 1, NULL, "{dtype = f64}"))) return FAILED();
    if (i == 1 && tz->rank == 1) { /* [M] against w [M, C, kH, kW] */
      const ir_dim *one = ir_dim_const(x->ir->arena, 1), *d[IR_MAX_RANK] = {tz->dims[0]};
      int rank = ox_type(v[1])->rank;
      if (!one) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
      for (int k = 1; k < rank; k++) d[k] = one;
      if (!(z = ox_reshape(x, z, rank, d))) return FAILED();
    }
    if (!(v[i] = OP2("sub", v[i], z))) return FAILED();
  }
  return conv_of(x, n, v[0], v[1], bias, out, nun0);
}

/* ConvInteger: the exact integer convolution, cast to si32 (ONNX's int32). */
int ox_op_ConvInteger(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                      int nout) {
  BEGIN;
  (void)nout;
  kiln_value *v[4] = {NULL, NULL, NULL, NULL};
  for (int i = 0; i < 4; i++) /* x and w required (IN says so), zero points optional */
    if ((i < 2 || (i < nin && in[i])) && !(v[i] = IN(i))) return rc;
  if ((rc = conv_integer(x, n, v, NULL, out, "ConvInteger")) != 0) return rc;
  kiln_value *y = out[0]->v;
  if (!(out[0]->v = ox_op(x, "cast", &y, 1, NULL, "{dtype = si32}"))) return FAILED();
  return 0;
}

/* QLinearConv: the exact integer convolution plus the int32 bias, times
 * x_scale * w_scale / y_scale (formed in f32, w_scale per tensor or per
 * output channel, applied in f64 as ONNX's reference does), rounded half to
 * even, plus y_zero_point, saturated to y's dtype by the cast. */
int ox_op_QLinearConv(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                      int nout) {
  BEGIN;
  (void)nout;
  kiln_value *q[9] = {NULL};
  for (int i = 0; i < 9; i++) /* x, scales, w required; zero points and B optional */
    if ((i == 0 || i == 1 || i == 3 || i == 4 || i == 6 || (i < nin && in[i])) &&
        !(q[i] = IN(i)))
      return rc;
  ir_dtype dt = q[7] ? ox_type(q[7])->dtype : IR_DT_UI8;
  if (dt != IR_DT_UI8 && dt != IR_DT_SI8)
    return ox_unsupported(x, n, "a %s result (ONNX and kiln: ui8, si8)", ir_dtype_name(dt));
  kiln_value *v[4] = {q[0], q[3], q[2], q[5]}, *bias = q[8], *k, *ws = q[4], *f;
  if (bias && !(bias = ox_op(x, "cast", &bias, 1, NULL, "{dtype = f64}"))) return FAILED();
  if ((rc = conv_integer(x, n, v, bias, out, "QLinearConv")) != 0) return rc;
  f = out[0]->v;
  int r = ox_type(f)->rank;
  if (ox_type(ws)->rank == 1) { /* per output channel: [M] -> [M, 1, ...] against [N, M, ...] */
    const ir_dim *one = ir_dim_const(x->ir->arena, 1), *d[IR_MAX_RANK];
    for (int i = 0; i + 1 < r; i++) d[i] = one;
    d[0] = ox_type(ws)->dims[0];
    if (!(ws = ox_reshape(x, ws, r - 1, d))) return FAILED();
  }
  if (!(k = OP2("mul", q[1], ws)) || !(k = OP2("div", k, q[6])) ||
      !(k = ox_op(x, "cast", &k, 1, NULL, "{dtype = f64}")) || !(f = OP2("mul", f, k)) ||
      !(f = OP1("round", f)))
    return FAILED();
  if (q[7] && (!(k = ox_op(x, "cast", &q[7], 1, NULL, "{dtype = f64}")) || !(f = OP2("add", f, k))))
    return FAILED();
  if (!(out[0]->v = ox_op(x, "cast", &f, 1, NULL, "{dtype = %s}", ir_dtype_name(dt))))
    return FAILED();
  return 0;
}

/* ---- GlobalAveragePool, GlobalMaxPool: mean / max over every spatial axis ---- */

static int global_pool(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                       const char *op) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  int rank = ox_type(a)->rank;
  if (rank < 3) return ox_fail(x, KILN_ERR_VERIFY, "needs rank >= 3 (N, C, spatial...), not %d", rank);
  for (int i = 2; i < rank; i++)
    if (!(a = ox_op(x, op, &a, 1, NULL, "{axis = %d}", i))) return FAILED();
  out[0]->v = a;
  return 0;
}

int ox_op_GlobalAveragePool(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                            int nout) {
  (void)nout;
  return global_pool(x, n, in, nin, out, "mean");
}

int ox_op_GlobalMaxPool(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                        int nout) {
  (void)nout;
  return global_pool(x, n, in, nin, out, "max");
}

/* ---- ConvTranspose: W [C, M, kh, kw] is permuted to kiln's [kh, kw, M, C] ---- */

int ox_op_ConvTranspose(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                        int nout) {
  BEGIN;
  (void)nout;
  kiln_value *a = IN(0), *w = a ? IN(1) : NULL, *b = NULL, *r;
  if (!w) return rc;
  if (nin > 2 && in[2] && !(b = IN(2))) return rc;
  const ir_type *ta = ox_type(a), *tw = ox_type(w);
  int sp = ta->rank - 2, cnt;
  if (sp < 1 || sp > 3 || tw->rank != ta->rank)
    return ox_unsupported(x, n, "%d-D ConvTranspose", sp);
  if (ta->dtype != IR_DT_F32 && ta->dtype != IR_DT_F64)
    return ox_unsupported(x, n, "%s ConvTranspose", ir_dtype_name(ta->dtype));
  if (ox_attr_int(n, "group", 1) != 1) return ox_unsupported(x, n, "ConvTranspose with group > 1");
  if (sp == 3) {
    if ((rc = ox_convt3d(x, n, a, w, b, &r)) != 0) return rc;
    out[0]->v = r;
    return 0;
  }
  owin o;
  o.k[0] = 1;
  if ((sp == 2 && !ir_dim_is_const(tw->dims[2], &o.k[0])) || !ir_dim_is_const(tw->dims[ta->rank - 1], &o.k[1]))
    return ox_unsupported(x, n, "ConvTranspose weights with a symbolic kernel shape");
  const ir_dim *one = ir_dim_const(x->ir->arena, 1);
  const ir_dim *sd[2] = {sp == 2 ? ta->dims[2] : one, ta->dims[ta->rank - 1]};
  /* auto_pad SAME_* is resolved below from output_shape; read the rest as Conv's */
  char abuf[32];
  const char *ap = ox_attr_string(n, "auto_pad", "NOTSET", abuf, sizeof abuf);
  bool same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0;
  if (pair(x, n, "strides", sp, 1, o.st) != 0 || pair(x, n, "dilations", sp, 1, o.dil) != 0)
    return -1;
  if (!same && (rc = window(x, n, sp, sd[0], sd[1], &o)) != 0) return rc;
  int64_t op[2];
  if (pair(x, n, "output_padding", sp, 0, op) != 0) return -1;
  if (sp == 1) op[0] = 0;
  const int64_t *os = ox_attr_ints(n, "output_shape", &cnt);
  if (os || same) { /* the paddings that give output_shape (SAME: input * stride) */
    if (os && cnt != sp) return ox_fail(x, KILN_ERR_VERIFY, "output_shape has %d entries", cnt);
    for (int i = 0; i < 2; i++) {
      int64_t len;
      if (!ir_dim_is_const(sd[i], &len))
        return ox_unsupported(x, n, "output_shape or auto_pad on a symbolic spatial dim");
      int64_t want = os ? (sp == 1 && i == 0 ? 1 : os[i - (2 - sp)]) : len * o.st[i];
      if (!ox_convt_fit(len, o.k[i], o.st[i], o.dil[i], want, strcmp(ap, "SAME_UPPER") == 0,
                        &o.pad[2 * i], &o.pad[2 * i + 1], &op[i]))
        return ox_unsupported(x, n, "output_shape that needs a negative start padding");
    }
  }
  if (sp == 1 && (!(a = to_2d(x, a)) || !(w = to_2d(x, w)))) return FAILED();
  char wt[256];
  if (!(a = permute(x, a, "0, 2, 3, 1")) || !(w = permute(x, w, "2, 3, 1, 0"))) return FAILED();
  kiln_value *ops[3] = {a, w, b};
  if (!(r = ox_op(x, "conv2d_transpose", ops, b ? 3 : 2, NULL, "{%s, output_paddings = [%lld, %lld]}",
                  window_text(wt, sizeof wt, &o), (long long)op[0], (long long)op[1])) ||
      !(r = permute(x, r, "0, 3, 1, 2")))
    return FAILED();
  if (sp == 1 && !(r = from_2d(x, r))) return FAILED();
  out[0]->v = r;
  return 0;
}
