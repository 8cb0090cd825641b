/* ops_resize.c - ONNX's Resize (opsets 10 to 19) and Upsample onto kiln's
 * mo.resize_nearest / mo.resize_linear / mo.resize_bicubic.
 *
 * The output size is known at import, `sizes` (integers, known data) or
 * `scales` (floats, an initializer or Constant) folded to the result dims
 * as ONNX computes them (floor(dim * scale); on a symbolic dim a whole scale
 * k gives dim * k and, on the last two axes, 1 / k gives dim floordiv k);
 * or `sizes` is run-time data (a graph input or computed from inputs),
 * which mo.resize_* takes as its sizes operand (ir/shape.h reads it before
 * the graph runs); or `scales` is run-time data, passed to mo.resize_* as a
 * third operand the kernel reads, with the sizes computed from it in the
 * graph (every axis is then resized). A scale that does not divide its dim still sets
 * the coordinates (kiln's scale_h / scale_w, which name the last two axes; on another axis such a
 * scale is reported unsupported). An axis of scale 1 is copied. tf_crop_and_resize goes to
 * resize_crop.c. `axes`, antialias and keep_aspect_ratio_policy other than "stretch" are
 * reported unsupported.
 * Resize-10 and Upsample use the asymmetric transform and round nearest down, as those opsets did.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ox.h"

/* Float scales of a known value (an initializer, or integers known). */
static bool scales_of(const ox_val *v, double *out, int max, int *n) {
  if (v->init && kiln_tensor_numel(v->init) <= max) {
    const void *p = kiln_tensor_data(v->init);
    int64_t k = kiln_tensor_numel(v->init);
    *n = (int)k;
    switch (kiln_tensor_dtype(v->init)) {
    case KILN_FLOAT32:
      for (int64_t i = 0; i < k; i++) out[i] = ((const float *)p)[i];
      return true;
    case KILN_FLOAT64:
      for (int64_t i = 0; i < k; i++) out[i] = ((const double *)p)[i];
      return true;
    default: break;
    }
  }
  int64_t iv[IR_MAX_RANK];
  if (ox_known_consts(v, iv, max, n)) {
    for (int i = 0; i < *n; i++) out[i] = (double)iv[i];
    return true;
  }
  return false;
}

static bool empty_tensor(const ox_val *v) {
  return v && ((v->init && kiln_tensor_numel(v->init) == 0) || (v->known && v->numel == 0));
}

/* The attribute text of kiln's op into buf. */
static void op_attrs(ox *x, const Onnx__NodeProto *n, bool cubic, const char *coord,
                     const char *round, const double scale[2], char *buf, size_t cap) {
  (void)x;
  size_t k = (size_t)snprintf(buf, cap, "{coordinate_transformation_mode = \"%s\"", coord);
  if (round && k < cap) k += (size_t)snprintf(buf + k, cap - k, ", nearest_mode = \"%s\"", round);
  if (cubic && k < cap)
    k += (size_t)snprintf(buf + k, cap - k, ", cubic_coeff_a = %.17g, exclude_outside = %s",
                          ox_attr_float(n, "cubic_coeff_a", -0.75),
                          ox_attr_int(n, "exclude_outside", 0) ? "true" : "false");
  if ((scale[0] > 0 || scale[1] > 0) && k < cap)
    k += (size_t)snprintf(buf + k, cap - k, ", scale_h = %.17g, scale_w = %.17g", scale[0],
                          scale[1]);
  if (k < cap) snprintf(buf + k, cap - k, "}");
}

/* The result dims from sizes (sz) or scales (sc); the scales of the
 * resized axes into scale[2] (0: none given). 0, -1 or 1 (unsupported). */
/* floor(d * s) for a symbolic dim d: d * k for a whole scale k, d floordiv k
 * for s = 1 / k where a scale attribute carries s (last: the axis is one of
 * the last two). 0, 1 for any other scale, -1 out of memory. */
static int symbolic_dim(ox *x, const ir_dim *d, double s, bool last, const ir_dim **out) {
  ir_arena *a = x->ir->arena;
  *out = NULL;
  if (s >= 1.0 && s <= 65536.0 && s == floor(s)) {
    *out = ir_dim_mul(a, d, ir_dim_const(a, (int64_t)s));
  } else if (last && s < 1.0 && 1.0 / s <= 65536.0 && 1.0 / s == floor(1.0 / s) &&
             1.0 / floor(1.0 / s) == s) {
    *out = ir_dim_floordiv(a, d, (int64_t)(1.0 / s), NULL);
  } else {
    return 1;
  }
  return *out ? 0 : ox_fail(x, KILN_ERR_OUT_OF_MEMORY, "out of memory");
}

static int out_dims(ox *x, const Onnx__NodeProto *n, const ir_type *t, const double *sc,
                    const int64_t *sz, const ir_dim **dims, double scale[2]) {
  int rank = t->rank;
  scale[0] = scale[1] = 0;
  for (int i = 0; i < rank; i++) {
    int64_t d;
    bool st = ir_dim_is_const(t->dims[i], &d);
    if (sz) {
      if (sz[i] < 0)
        return ox_fail(x, KILN_ERR_VERIFY, "sizes[%d] = %lld is negative", i, (long long)sz[i]);
      dims[i] = st && d == sz[i] ? t->dims[i] : ir_dim_const(x->ir->arena, sz[i]);
    } else {
      if (!(sc[i] > 0) || !isfinite(sc[i]))
        return ox_fail(x, KILN_ERR_VERIFY, "scales[%d] = %g must be > 0", i, sc[i]);
      if (sc[i] == 1.0) {
        dims[i] = t->dims[i];
      } else if (!st) {
        int rc = symbolic_dim(x, t->dims[i], sc[i], i >= rank - 2, &dims[i]);
        if (rc < 0) return -1;
        if (rc > 0)
          return ox_unsupported(x, n,
                                "scale %g on the symbolic axis %d (kiln folds integer scales "
                                "k and, on the last two axes, 1 / k there)",
                                sc[i], i);
        if (i >= rank - 2) scale[i - (rank - 2)] = sc[i];
      } else {
        int64_t m = (int64_t)floor((double)d * sc[i]);
        dims[i] = ir_dim_const(x->ir->arena, m);
        if (i >= rank - 2)
          scale[i - (rank - 2)] = sc[i];
        else if ((double)m / (double)d != sc[i])
          return ox_unsupported(x, n,
                                "scale %g of axis %d is not the ratio of its dims (kiln's "
                                "scale attributes name the last two axes)",
                                sc[i], i);
      }
    }
    if (!dims[i]) return ox_fail(x, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  return 0;
}

/* out = mo.`op` of operands ops[nops] (x, sizes[, scales]) with every
 * result dim a symbol of its own, bound from the sizes' data before the
 * graph runs (ir/shape.h). 0, -1 or 1. */
static int resize_op(ox *x, const Onnx__NodeProto *n, const char *op, kiln_value *const *ops,
                     int nops, bool nearest, bool linear, const char *coord, const char *round,
                     ox_val *out) {
  int nun0 = x->nunsup; /* for FAILED() */
  const ir_type *t = ox_type(ops[0]);
  const ir_dim *dims[IR_MAX_RANK];
  for (int i = 0; i < t->rank; i++)
    if (!(dims[i] = ox_symbol(x, NULL))) return -1;
  char ty[512], attrs[512];
  double scale[2] = {0, 0};
  ox_type_text(ty, sizeof ty, t->dtype, t->rank, dims);
  op_attrs(x, n, !nearest && !linear, coord, nearest ? round : NULL, scale, attrs, sizeof attrs);
  if (!(out->v = ox_op(x, op, ops, nops, ty, "%s", attrs))) return FAILED();
  return 0;
}

/* Resize to sizes that are run-time data (ox_run_time_data): the sizes
 * operand of mo.resize_*, each result dim a symbol of its own that kiln
 * reads from the data before the graph runs (ir/shape.h); every axis's
 * scale is then its dims' ratio. */
static int sizes_from_data(ox *x, const Onnx__NodeProto *n, const char *op, kiln_value *a,
                           const ox_val *sizes_v, bool nearest, bool linear, const char *coord,
                           const char *round, ox_val *out) {
  const ir_type *t = ox_type(a), *st = ox_type(sizes_v->v);
  int64_t len;
  if (st->rank != 1 || !ir_dim_is_const(st->dims[0], &len) || len != t->rank)
    return ox_fail(x, KILN_ERR_VERIFY, "sizes must be 1-D with %d entries (the rank)", t->rank);
  return resize_op(x, n, op, (kiln_value *[]){a, sizes_v->v}, 2, nearest, linear, coord, round,
                   out);
}

/* Resize by scales that are run-time data: the sizes floor(dim * scale)
 * computed in the graph in double (a scale not > 0 gives -1, which kiln
 * refuses when it reads the sizes before the run) and the scales passed on
 * as mo.resize_*'s third operand, which the kernel reads for the
 * coordinates; every axis is then resized (ops.def). */
static int scales_from_data(ox *x, const Onnx__NodeProto *n, const char *op, kiln_value *a,
                            const ox_val *scales_v, bool nearest, bool linear, const char *coord,
                            const char *round, ox_val *out) {
  int nun0 = x->nunsup; /* for FAILED() */
  const ir_type *t = ox_type(a), *st = ox_type(scales_v->v);
  int64_t len, taps = 1;
  if (st->rank != 1 || !ir_dim_is_const(st->dims[0], &len) || len != t->rank ||
      (st->dtype != IR_DT_F32 && st->dtype != IR_DT_F64))
    return ox_fail(x, KILN_ERR_VERIFY, "scales must be 1-D float with %d entries (the rank)",
                   t->rank);
  for (int i = 0; i < t->rank; i++) taps *= nearest ? 1 : linear ? 2 : 4;
  if (taps > 256)
    return ox_unsupported(x, n, "run-time scales resize every axis: %d axes take %lld taps "
                          "per element (kiln unrolls up to 256)", t->rank, (long long)taps);
  kiln_value *sc = scales_v->v, *d, *s64, *sizes, *ok, *m1;
  if (!(d = ox_op(x, "shape_to_tensor", &a, 1, NULL, NULL)) ||
      !(d = ox_op(x, "cast", &d, 1, NULL, "{dtype = f64}")) ||
      !(s64 = ox_op(x, "cast", &sc, 1, NULL, "{dtype = f64}")) ||
      !(sizes = OP2("mul", d, s64)) || !(sizes = OP1("floor", sizes)) ||
      !(sizes = ox_op(x, "cast", &sizes, 1, NULL, "{dtype = si64}")) ||
      !(ok = OP2("greater", s64, ox_scalar(x, IR_DT_F64, 0.0))) ||
      !(m1 = ox_scalar(x, IR_DT_SI64, -1)) ||
      !(sizes = ox_op(x, "where", (kiln_value *[]){ok, sizes, m1}, 3, NULL, NULL)))
    return FAILED();
  return resize_op(x, n, op, (kiln_value *[]){a, sizes, sc}, 3, nearest, linear, coord, round,
                   out);
}

/* out = a resized to the size scales_v or sizes_v (one NULL) says. */
static int resize(ox *x, const Onnx__NodeProto *n, kiln_value *a, const ox_val *scales_v,
                  const ox_val *sizes_v, const char *mode, const char *coord, const char *round,
                  ox_val *out) {
  int nun0 = x->nunsup, cnt = 0;
  const ir_type *t = ox_type(a);
  if (t->rank < 1) return ox_unsupported(x, n, "Resize of a rank-0 tensor");
  double sc[IR_MAX_RANK];
  int64_t sz[IR_MAX_RANK];
  bool nearest = strcmp(mode, "nearest") == 0, linear = strcmp(mode, "linear") == 0;
  if (!nearest && !linear && strcmp(mode, "cubic") != 0)
    return ox_unsupported(x, n, "Resize mode '%s'", mode);
  const char *op = nearest ? "resize_nearest" : linear ? "resize_linear" : "resize_bicubic";
  if (sizes_v && !ox_known_consts(sizes_v, sz, IR_MAX_RANK, &cnt) && ox_run_time_data(sizes_v))
    return sizes_from_data(x, n, op, a, sizes_v, nearest, linear, coord, round, out);
  if (sizes_v) {
    if (!ox_known_consts(sizes_v, sz, IR_MAX_RANK, &cnt))
      return ox_unsupported(x, n, "sizes must be known at import or computed from the "
                            "inputs");
  } else if (scales_v && !scales_of(scales_v, sc, IR_MAX_RANK, &cnt) &&
             ox_run_time_data(scales_v)) {
    return scales_from_data(x, n, op, a, scales_v, nearest, linear, coord, round, out);
  } else if (!scales_v || !scales_of(scales_v, sc, IR_MAX_RANK, &cnt)) {
    return ox_unsupported(x, n, "scales are neither known at import nor computed from the "
                          "inputs");
  }
  if (cnt != t->rank)
    return ox_fail(x, KILN_ERR_VERIFY, "%s has %d entries for rank %d",
                   sizes_v ? "sizes" : "scales", cnt, t->rank);
  const ir_dim *dims[IR_MAX_RANK];
  double scale[2];
  int rc = out_dims(x, n, t, sizes_v ? NULL : sc, sizes_v ? sz : NULL, dims, scale);
  if (rc != 0) return rc;
  char ty[512], attrs[512];
  ox_type_text(ty, sizeof ty, t->dtype, t->rank, dims);
  op_attrs(x, n, !nearest && !linear, coord, nearest ? round : NULL, scale, attrs, sizeof attrs);
  if (!(out->v = ox_op(x, op, &a, 1, ty, "%s", attrs))) return x->nunsup > nun0 ? 1 : -1;
  return 0;
}

int ox_op_Resize(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  (void)nout;
  kiln_value *a = IN(0);
  if (!a) return rc;
  char mb[32], cb[32], rb[32], kb[32];
  const char *mode = ox_attr_string(n, "mode", "nearest", mb, sizeof mb);
  if (x->opset < 11) {
    ox_val *s = nin > 1 ? in[1] : NULL;
    return resize(x, n, a, s, NULL, mode, "asymmetric", "floor", out[0]);
  }
  const char *coord =
      ox_attr_string(n, "coordinate_transformation_mode", "half_pixel", cb, sizeof cb);
  const char *round = ox_attr_string(n, "nearest_mode", "round_prefer_floor", rb, sizeof rb);
  if (ox_attr_int(n, "antialias", 0) != 0) return ox_unsupported(x, n, "antialias");
  if (ox_attr(n, "axes")) return ox_unsupported(x, n, "the axes attribute");
  const char *kp = ox_attr_string(n, "keep_aspect_ratio_policy", "stretch", kb, sizeof kb);
  if (strcmp(kp, "stretch") != 0) return ox_unsupported(x, n, "keep_aspect_ratio_policy '%s'", kp);
  ox_val *scales = nin > 2 ? in[2] : NULL, *sizes = nin > 3 ? in[3] : NULL;
  if (scales && (empty_tensor(scales) || (!scales->init && !scales->known && sizes))) scales = NULL;
  if (sizes && empty_tensor(sizes)) sizes = NULL;
  if (!sizes && !scales) return ox_fail(x, KILN_ERR_VERIFY, "Resize needs scales or sizes");
  if (strcmp(coord, "tf_crop_and_resize") == 0)
    return ox_resize_crop(x, n, a, nin > 1 ? in[1] : NULL, sizes ? NULL : scales, sizes, mode,
                          round, out[0]);
  return resize(x, n, a, sizes ? NULL : scales, sizes, mode, coord, round, out[0]);
}

int ox_op_Upsample(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  (void)nout;
  kiln_value *a = IN(0);
  if (!a) return rc;
  char mb[32];
  const char *mode = ox_attr_string(n, "mode", "nearest", mb, sizeof mb);
  if (nin < 2 || !in[1]) return ox_unsupported(x, n, "Upsample without a scales input (opset 7)");
  return resize(x, n, a, in[1], NULL, mode, "asymmetric", "floor", out[0]);
}
