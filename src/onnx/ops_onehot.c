/* ops_onehot.c - ONNX ops that compare positions: OneHot (an index against
 * the positions along a new axis) and EyeLike (column minus row against k),
 * each an equal of iotas, then a cast or a where. */
#include <math.h>
#include <stdio.h>

#include "ox.h"

/* EyeLike: a 2-D value of the input's shape, 1 where column - row == k. */
int ox_op_EyeLike(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                  int nout) {
  BEGIN;
  kiln_value *a = IN(0), *rows, *cols, *d, *k;
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  if (t->rank != 2) return ox_fail(x, KILN_ERR_VERIFY, "the input must be 2-D, not of rank %d",
                                   t->rank);
  ir_dtype dt = t->dtype;
  if (ox_attr(n, "dtype") && !ox_dtype((int32_t)ox_attr_int(n, "dtype", 1), &dt))
    return ox_unsupported(x, n, "dtype %lld", (long long)ox_attr_int(n, "dtype", 1));
  if (!(rows = ox_iota_along(x, t->dims[0], 0, 2)) ||
      !(cols = ox_iota_along(x, t->dims[1], 1, 2)) ||
      !(d = OP2("sub", cols, rows)) ||
      !(k = ox_scalar(x, IR_DT_SI64, (double)ox_attr_int(n, "k", 0))) ||
      !(d = OP2("equal", d, k)) ||
      !(out[0]->v = ox_op(x, "cast", &d, 1, NULL, "{dtype = %s}", ir_dtype_name(dt))))
    return FAILED();
  return 0;
}

/* The depth: a known integer, or a one-element float initializer. */
static bool depth_of(const ox_val *v, int64_t *depth) {
  int cnt;
  if (v->known && ox_known_consts(v, depth, 1, &cnt) && cnt == 1) return true;
  if (!v->init || kiln_tensor_numel(v->init) != 1) return false;
  const void *p = kiln_tensor_data(v->init);
  double d;
  switch (kiln_tensor_dtype(v->init)) {
  case KILN_FLOAT32: d = *(const float *)p; break;
  case KILN_FLOAT64: d = *(const double *)p; break;
  default: return false;
  }
  if (!(fabs(d) < 9e15)) return false;
  *depth = (int64_t)d;
  return true;
}

/* A run-time depth (a graph input or computed from inputs, any numeric
 * dtype, one element; floats truncated as ONNX casts them): *dk the depth
 * as rank-0 si64, *len a symbol bound from it by mo.range (0 .. depth - 1
 * into *pos); a depth < 1 makes the range's step 0, a data error. */
static int depth_from_data(ox *x, ox_val *v, kiln_value **dk, kiln_value **pos,
                           const ir_dim **len) {
  int nun0 = x->nunsup; /* for FAILED() */
  kiln_value *d = v->v, *z, *one, *bad, *step;
  const ir_type *t = ox_type(d);
  int64_t cnt = 1;
  for (int i = 0; i < t->rank; i++)
    if (!ir_dim_is_const(t->dims[i], &cnt) || cnt != 1) cnt = -1;
  if (cnt != 1) return ox_unsupported(x, x->node, "input '%s' (depth) must hold one element",
                                      v->name);
  if (t->rank && !(d = ox_reshape(x, d, 0, NULL))) return FAILED();
  if (t->dtype != IR_DT_SI64 && !(d = ox_op(x, "cast", &d, 1, NULL, "{dtype = si64}")))
    return FAILED();
  if (!(*len = ox_symbol(x, NULL))) return -1;
  char ty[256];
  ox_type_text(ty, sizeof ty, IR_DT_SI64, 1, len);
  if (!(z = ox_scalar(x, IR_DT_SI64, 0)) || !(one = ox_scalar(x, IR_DT_SI64, 1)) ||
      !(bad = OP2("greater", one, d)) ||
      !(step = ox_op(x, "where", (kiln_value *[]){bad, z, one}, 3, NULL, NULL)) ||
      !(*pos = ox_op(x, "range", (kiln_value *[]){z, d, step}, 3, ty, NULL)))
    return FAILED();
  *dk = d;
  return 0;
}

/* OneHot(indices, depth, values = [off, on]): a new axis of `depth`
 * positions at `axis`, on where the position is the index (a negative index
 * counts from depth), off elsewhere. The depth is known at import, or
 * run-time data whose value sizes the new axis (read before the run). */
int ox_op_OneHot(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                 int nout) {
  if (nin < 3 || !in[1] || !in[2]) return ox_fail(x, KILN_ERR_VERIFY, "OneHot takes 3 inputs");
  int64_t depth = 0;
  kiln_value *dk = NULL, *iota = NULL;
  const ir_dim *dd = NULL;
  if (!depth_of(in[1], &depth)) {
    if (!ox_run_time_data(in[1]))
      return ox_unsupported(x, n, "a depth neither known at import nor computed from the inputs");
    int r = depth_from_data(x, in[1], &dk, &iota, &dd);
    if (r) return r;
  } else if (depth <= 0) {
    return ox_fail(x, KILN_ERR_VERIFY, "depth must be positive, not %lld", (long long)depth);
  }
  BEGIN;
  kiln_value *idx = IN(0), *vals = idx ? IN(2) : NULL, *on, *off, *neg, *z, *hit, *pos;
  if (!vals) return rc;
  const ir_type *t = ox_type(idx);
  int rank = t->rank + 1, axis;
  if (!ox_axis(ox_attr_int(n, "axis", -1), rank, &axis))
    return ox_fail(x, KILN_ERR_VERIFY, "axis out of range for rank %d", rank);
  if (ox_type(vals)->rank != 1) return ox_fail(x, KILN_ERR_VERIFY, "values must be [off, on]");
  const ir_dim *dims[IR_MAX_RANK], *pd[IR_MAX_RANK];
  if (!dd) dd = ir_dim_const(x->ir->arena, depth);
  for (int d = 0, j = 0; d < rank; d++) {
    dims[d] = d == axis ? ir_dim_const(x->ir->arena, 1) : t->dims[j++];
    pd[d] = d == axis ? dd : ir_dim_const(x->ir->arena, 1);
  }
  kiln_value *k0 = ox_scalar(x, IR_DT_SI64, 0), *k1 = ox_scalar(x, IR_DT_SI64, 1);
  if (!k0 || !k1 ||
      !(off = ox_op(x, "gather", (kiln_value *[]){vals, k0}, 2, NULL, "{axis = 0}")) ||
      !(on = ox_op(x, "gather", (kiln_value *[]){vals, k1}, 2, NULL, "{axis = 0}")))
    return FAILED();
  /* indices to si64 (float ones truncated, as ONNX casts them), negative + depth */
  if (t->dtype != IR_DT_SI64 && !(idx = ox_op(x, "cast", &idx, 1, NULL, "{dtype = si64}")))
    return FAILED();
  if (!dk && !(dk = ox_scalar(x, IR_DT_SI64, (double)depth))) return FAILED();
  if (!(z = ox_scalar(x, IR_DT_SI64, 0)) || !(neg = OP2("greater", z, idx)) ||
      !(dk = OP2("add", idx, dk)) ||
      !(idx = ox_op(x, "where", (kiln_value *[]){neg, dk, idx}, 3, NULL, NULL)) ||
      !(idx = ox_reshape(x, idx, rank, dims)) ||
      !(pos = iota ? ox_reshape(x, iota, rank, pd) : ox_iota_along(x, dd, axis, rank)) ||
      !(hit = OP2("equal", idx, pos)) ||
      !(out[0]->v = ox_op(x, "where", (kiln_value *[]){hit, on, off}, 3, NULL, NULL)))
    return FAILED();
  return 0;
}
