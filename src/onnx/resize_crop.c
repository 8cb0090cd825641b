/* resize_crop.c - ONNX Resize with coordinate_transformation_mode
 * "tf_crop_and_resize": the region of interest `roi` (starts, then ends,
 * as fractions of each axis; run-time data or known) is resized to the
 * output size, and output cells whose source coordinate falls outside the
 * input on any axis get extrapolation_value.
 *
 * kiln's mo.resize_* have no roi operand, so each axis becomes gathers (the
 * modes kiln composes, "nearest" and "linear", are separable): output
 * position p of an axis of input length L and output length O reads source
 * coordinate s (L - 1) + p (e - s) (L - 1) / (O - 1) (O > 1; else
 * (s + e) (L - 1) / 2), computed in f64; "linear" takes the two cells
 * around it (clamped into the axis, as ONNX's reference pads by the edge)
 * weighted (1 - w, w), "nearest" the cell its nearest_mode rounds to. The
 * coordinates outside [0, L - 1] of every axis make one mask, applied last.
 * Output lengths come from `sizes` (known, or run-time data: a symbol per
 * axis read before the graph runs) or from known `scales` on static dims
 * (floor(L * scale)). An axis of static length 1 resized to 1 is left as
 * it is (its coordinate is 0 whatever roi says). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ox.h"

#define OP3(name, a, b, c) ox_op(x, name, (kiln_value *[]){a, b, c}, 3, NULL, NULL)
#define F64(v) ox_scalar(x, IR_DT_F64, (v))

/* One axis's output: its length as a dim, and the positions 0 .. O - 1
 * (si64) and O (rank-0 f64). */
typedef struct out_axis {
  const ir_dim *len;
  kiln_value *pos, *o;
} out_axis;

/* Output axis i from sizes (known sz, or the run-time value szv) or from
 * the known scale sc on the static input length; NULL members on failure. */
static int output_axis(ox *x, const Onnx__NodeProto *n, kiln_value *a, int i, const int64_t *sz,
                       kiln_value *szv, const double *sc, out_axis *o) {
  int64_t len;
  if (szv) {
    kiln_value *e;
    if (!(o->len = ox_symbol(x, NULL)) || !(e = ox_entry(x, szv, i)) ||
        !(o->pos = ox_range_to(x, e, o->len)) ||
        !(o->o = ox_op(x, "cast", &e, 1, NULL, "{dtype = f64}")))
      return -1;
    return 0;
  }
  if (sz) {
    len = sz[i];
  } else {
    int64_t l;
    if (!ir_dim_is_const(ox_dim(a, i), &l))
      return ox_unsupported(x, n, "tf_crop_and_resize by scales on the symbolic axis %d", i);
    if (!(sc[i] > 0) || !isfinite(sc[i]))
      return ox_fail(x, KILN_ERR_VERIFY, "scales[%d] = %g must be > 0", i, sc[i]);
    len = (int64_t)floor((double)l * sc[i]);
  }
  if (len < 0)
    return ox_fail(x, KILN_ERR_VERIFY, "sizes[%d] = %lld is negative", i, (long long)len);
  if (!(o->len = ir_dim_const(x->ir->arena, len)) || !(o->pos = ox_iota(x, o->len)) ||
      !(o->o = F64((double)len)))
    return -1;
  return 0;
}

/* The source index (si64, clamped into [0, hi]) of the f64 coordinate c. */
static kiln_value *index_at(ox *x, kiln_value *c, kiln_value *hi) {
  kiln_value *z = F64(0);
  if (!z || !(c = OP2("max", c, z)) || !(c = OP2("min", c, hi))) return NULL;
  return ox_op(x, "cast", &c, 1, NULL, "{dtype = si64}");
}

/* The nearest cell's coordinate (f64) of c by ONNX's nearest_mode. */
static kiln_value *nearest(ox *x, const Onnx__NodeProto *n, kiln_value *c, const char *round) {
  kiln_value *h = F64(0.5);
  if (!h) return NULL;
  if (strcmp(round, "round_prefer_floor") == 0) /* x.5 down, the rest to nearest */
    return (c = OP2("sub", c, h)) ? OP1("ceil", c) : NULL;
  if (strcmp(round, "round_prefer_ceil") == 0)
    return (c = OP2("add", c, h)) ? OP1("floor", c) : NULL;
  if (strcmp(round, "floor") == 0) return OP1("floor", c);
  if (strcmp(round, "ceil") == 0) return OP1("ceil", c);
  ox_unsupported(x, n, "nearest_mode '%s'", round);
  return NULL;
}

/* v (rank-1 over an axis of length len) reshaped along axis `axis` of rank. */
static kiln_value *along(ox *x, kiln_value *v, const ir_dim *len, int axis, int rank) {
  const ir_dim *d[IR_MAX_RANK];
  for (int k = 0; k < rank; k++) d[k] = k == axis ? len : ir_dim_const(x->ir->arena, 1);
  return ox_reshape(x, v, rank, d);
}

/* a resized along axis i to o by roi's start s and end e (rank-0 f64);
 * *valid gets the bool mask of in-range coordinates along that axis. */
static kiln_value *crop_axis(ox *x, const Onnx__NodeProto *n, kiln_value *a, int i,
                             const out_axis *o, kiln_value *s, kiln_value *e, bool linear,
                             const char *round, kiln_value **valid) {
  int rank = ox_type(a)->rank;
  ir_dtype dt = ox_type(a)->dtype;
  kiln_value *shp, *l, *one = F64(1), *half = F64(0.5), *z = F64(0), *hi, *p, *c, *mid, *ok;
  if (!one || !half || !z || !(shp = ox_op(x, "shape_to_tensor", &a, 1, NULL, NULL)) ||
      !(l = ox_entry(x, shp, i)) || !(l = ox_op(x, "cast", &l, 1, NULL, "{dtype = f64}")) ||
      !(hi = OP2("sub", l, one)))
    return NULL;
  /* c = s hi + p (e - s) hi / (O - 1) for O > 1, (s + e) hi / 2 for O = 1 */
  kiln_value *span, *step, *many;
  if (!(p = ox_op(x, "cast", (kiln_value *[]){o->pos}, 1, NULL, "{dtype = f64}")) ||
      !(span = OP2("sub", e, s)) || !(span = OP2("mul", span, hi)) ||
      !(step = OP2("sub", o->o, one)) || !(c = OP2("mul", p, span)) ||
      !(c = OP2("div", c, step)) || !(mid = OP2("mul", s, hi)) || !(c = OP2("add", mid, c)) ||
      !(mid = OP2("add", s, e)) || !(mid = OP2("mul", mid, hi)) ||
      !(mid = OP2("mul", mid, half)) || !(many = OP2("greater", o->o, one)) ||
      !(c = OP3("where", many, c, mid)))
    return NULL;
  kiln_value *lo_ok, *hi_ok;
  if (!(lo_ok = OP2("greater_equal", c, z)) || !(hi_ok = OP2("greater_equal", hi, c)) ||
      !(ok = OP2("logical_and", lo_ok, hi_ok)) || !(*valid = along(x, ok, o->len, i, rank)))
    return NULL;
  if (!linear) {
    kiln_value *r = nearest(x, n, c, round), *idx;
    if (!r || !(idx = index_at(x, r, hi))) return NULL;
    return ox_op(x, "gather", (kiln_value *[]){a, idx}, 2, NULL, "{axis = %d}", i);
  }
  /* (1 - w) a[x0] + w a[x0 + 1], x0 = floor(c), w = c - x0 */
  kiln_value *x0, *w, *i0, *i1, *g0, *g1, *w1;
  if (!(x0 = OP1("floor", c)) || !(w = OP2("sub", c, x0)) || !(i0 = index_at(x, x0, hi)) ||
      !(x0 = OP2("add", x0, one)) || !(i1 = index_at(x, x0, hi)) ||
      !(g0 = ox_op(x, "gather", (kiln_value *[]){a, i0}, 2, NULL, "{axis = %d}", i)) ||
      !(g1 = ox_op(x, "gather", (kiln_value *[]){a, i1}, 2, NULL, "{axis = %d}", i)) ||
      !(w1 = OP2("sub", one, w)) || !(w = ox_op(x, "cast", &w, 1, NULL, "{dtype = %s}",
                                              ir_dtype_name(dt))) ||
      !(w1 = ox_op(x, "cast", &w1, 1, NULL, "{dtype = %s}", ir_dtype_name(dt))) ||
      !(w = along(x, w, o->len, i, rank)) || !(w1 = along(x, w1, o->len, i, rank)) ||
      !(g0 = OP2("mul", w1, g0)) || !(g1 = OP2("mul", w, g1)))
    return NULL;
  return OP2("add", g0, g1);
}

int ox_resize_crop(ox *x, const Onnx__NodeProto *n, kiln_value *a, ox_val *roi_v,
                   const ox_val *scales_v, const ox_val *sizes_v, const char *mode,
                   const char *round, ox_val *out) {
  int nun0 = x->nunsup, rc = 0, rank = ox_type(a)->rank, cnt = 0;
  bool linear = strcmp(mode, "linear") == 0;
  if (!linear && strcmp(mode, "nearest") != 0)
    return ox_unsupported(x, n, "mode '%s' with tf_crop_and_resize", mode);
  if (!ir_dtype_is_float(ox_type(a)->dtype))
    return ox_unsupported(x, n, "tf_crop_and_resize of %s", ir_dtype_name(ox_type(a)->dtype));
  if (!roi_v) return ox_fail(x, KILN_ERR_VERIFY, "tf_crop_and_resize needs the roi input");
  int64_t sz[IR_MAX_RANK];
  double sc[IR_MAX_RANK];
  kiln_value *szv = NULL;
  if (sizes_v && !ox_known_consts(sizes_v, sz, IR_MAX_RANK, &cnt)) {
    if (!ox_run_time_data(sizes_v))
      return ox_unsupported(x, n, "sizes must be known at import or computed from the inputs");
    if (!(szv = ox_in(x, (ox_val *[]){(ox_val *)sizes_v}, 1, 0, &rc))) return rc;
    int64_t len;
    if (ox_type(szv)->rank != 1 || !ir_dim_is_const(ox_dim(szv, 0), &len))
      return ox_fail(x, KILN_ERR_VERIFY, "sizes must be 1-D with %d entries (the rank)", rank);
    cnt = (int)len;
  } else if (!sizes_v) {
    if (!scales_v || !scales_v->init || kiln_tensor_numel(scales_v->init) > IR_MAX_RANK ||
        !ir_dtype_is_float((ir_dtype)kiln_tensor_dtype(scales_v->init)))
      return ox_unsupported(x, n, "tf_crop_and_resize by scales not known at import");
    cnt = (int)kiln_tensor_numel(scales_v->init);
    const void *p = kiln_tensor_data(scales_v->init);
    for (int i = 0; i < cnt; i++)
      sc[i] = kiln_tensor_dtype(scales_v->init) == KILN_FLOAT64 ? ((const double *)p)[i]
              : kiln_tensor_dtype(scales_v->init) == KILN_FLOAT32 ? ((const float *)p)[i] : 0;
  }
  if (cnt != rank)
    return ox_fail(x, KILN_ERR_VERIFY, "%s has %d entries for rank %d",
                   sizes_v ? "sizes" : "scales", cnt, rank);
  kiln_value *roi = ox_in(x, &roi_v, 1, 0, &rc), *mask = NULL, *r = a;
  int64_t rl;
  if (!roi) return rc;
  if (ox_type(roi)->rank != 1 || !ir_dim_is_const(ox_dim(roi, 0), &rl) || rl != 2 * rank ||
      !ir_dtype_is_float(ox_type(roi)->dtype))
    return ox_fail(x, KILN_ERR_VERIFY, "roi must be 1-D float with %d entries (starts, then "
                   "ends, of each axis)", 2 * rank);
  if (!(roi = ox_op(x, "cast", &roi, 1, NULL, "{dtype = f64}"))) return FAILED();
  for (int i = 0; i < rank; i++) {
    out_axis o = {0};
    int64_t l;
    if ((rc = output_axis(x, n, a, i, sizes_v && !szv ? sz : NULL, szv, sc, &o)) != 0)
      return rc < 0 ? FAILED() : rc;
    int64_t ol;
    if (ir_dim_is_const(ox_dim(a, i), &l) && l == 1 && ir_dim_is_const(o.len, &ol) && ol == 1)
      continue;
    kiln_value *s, *e, *valid;
    if (!(s = ox_entry(x, roi, i)) || !(e = ox_entry(x, roi, rank + i)) ||
        !(r = crop_axis(x, n, r, i, &o, s, e, linear, round, &valid)) ||
        (mask && !(valid = OP2("logical_and", mask, valid))))
      return FAILED();
    mask = valid;
  }
  kiln_value *ev = ox_scalar(x, ox_type(a)->dtype, ox_attr_float(n, "extrapolation_value", 0));
  if (mask && (!ev || !(r = OP3("where", mask, r, ev)))) return FAILED();
  out->v = r;
  return 0;
}
